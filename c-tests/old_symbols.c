/* Programs linked long ago call the older symbol versions that glibc still exports:
 * pthread_mutex_trylock/timedlock@GLIBC_2.2.5, pthread_mutex_clocklock@GLIBC_2.30,
 * the __pthread_mutex_* aliases, and mtx_*@GLIBC_2.28. This program binds to exactly
 * those versions and checks behaviour through them (exact counts, EBUSY, EDEADLK,
 * ETIMEDOUT, thrd_busy); the test also checks with LD_DEBUG=bindings that each of
 * them was bound to the preloaded library. */
#include "check.h"

#include <threads.h>

#define OLD(name, ver, ret, ...)                                 \
    extern ret old_##name(__VA_ARGS__);                          \
    __asm__(".symver old_" #name ", " #name "@" #ver)

OLD(pthread_mutex_trylock, GLIBC_2.2.5, int, pthread_mutex_t *);
OLD(pthread_mutex_timedlock, GLIBC_2.2.5, int, pthread_mutex_t *, const struct timespec *);
OLD(pthread_mutex_clocklock, GLIBC_2.30, int, pthread_mutex_t *, clockid_t, const struct timespec *);
OLD(__pthread_mutex_lock, GLIBC_2.2.5, int, pthread_mutex_t *);
OLD(__pthread_mutex_trylock, GLIBC_2.2.5, int, pthread_mutex_t *);
OLD(__pthread_mutex_unlock, GLIBC_2.2.5, int, pthread_mutex_t *);
OLD(__pthread_mutex_init, GLIBC_2.2.5, int, pthread_mutex_t *, const pthread_mutexattr_t *);
OLD(__pthread_mutex_destroy, GLIBC_2.2.5, int, pthread_mutex_t *);
OLD(mtx_init, GLIBC_2.28, int, mtx_t *, int);
OLD(mtx_lock, GLIBC_2.28, int, mtx_t *);
OLD(mtx_trylock, GLIBC_2.28, int, mtx_t *);
OLD(mtx_timedlock, GLIBC_2.28, int, mtx_t *, const struct timespec *);
OLD(mtx_unlock, GLIBC_2.28, int, mtx_t *);
OLD(mtx_destroy, GLIBC_2.28, void, mtx_t *);

#define THREADS 3
#define ITERS 20000

static pthread_mutex_t m;
static mtx_t c11;
static volatile long counter, counter11;

static void *worker(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        if ((i + id) % 4 == 0) {
            int rc;
            while ((rc = old_pthread_mutex_trylock(&m)) == EBUSY) sched_yield();
            if (rc != 0) fail("old trylock returned %s", err_name(rc));
        } else if ((i + id) % 4 == 1) {
            struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000LL);
            OK(old_pthread_mutex_timedlock(&m, &ts));
        } else if ((i + id) % 4 == 2) {
            struct timespec ts = deadline_in(CLOCK_MONOTONIC, 10000000000LL);
            OK(old_pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts));
        } else {
            OK(old___pthread_mutex_lock(&m));
        }
        long v = counter;
        if ((i & 127) == 0) sched_yield();
        counter = v + 1;
        OK(old___pthread_mutex_unlock(&m));

        if (old_mtx_lock(&c11) != thrd_success) fail("old mtx_lock failed");
        counter11++;
        if (old_mtx_unlock(&c11) != thrd_success) fail("old mtx_unlock failed");
    }
    return NULL;
}

int main(void) {
    test_begin("old_symbols", 30);
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
    OK(old___pthread_mutex_init(&m, &a));
    OK(pthread_mutexattr_destroy(&a));
    if (old_mtx_init(&c11, mtx_timed) != thrd_success) fail("old mtx_init failed");

    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) t[i] = start_thread(worker, (void *)i);
    for (int i = 0; i < THREADS; i++) join_thread(t[i]);
    if (counter != (long)THREADS * ITERS) fail("counter %ld, expected %ld", counter, (long)THREADS * ITERS);
    if (counter11 != (long)THREADS * ITERS) fail("mtx counter %ld, expected %ld", counter11, (long)THREADS * ITERS);

    /* Error codes through the old names. */
    OK(old___pthread_mutex_lock(&m));
    EXPECT_RC(old___pthread_mutex_lock(&m), EDEADLK);
    EXPECT_RC(old___pthread_mutex_trylock(&m), EBUSY);
    struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000LL);
    EXPECT_RC(old_pthread_mutex_timedlock(&m, &ts), EDEADLK);
    OK(old___pthread_mutex_unlock(&m));
    EXPECT_RC(old___pthread_mutex_unlock(&m), EPERM);
    struct holder h;
    holder_start(&h, &m, 0);
    EXPECT_RC(old_pthread_mutex_trylock(&m), EBUSY);
    ts = deadline_in(CLOCK_REALTIME, 20000000LL);
    EXPECT_RC(old_pthread_mutex_timedlock(&m, &ts), ETIMEDOUT);
    ts = deadline_in(CLOCK_MONOTONIC, 20000000LL);
    EXPECT_RC(old_pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
    EXPECT_RC(old_pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
    holder_release(&h);
    EXPECT_RC(old___pthread_mutex_destroy(&m), 0);

    if (old_mtx_trylock(&c11) != thrd_success) fail("old mtx_trylock of a free mutex failed");
    if (old_mtx_trylock(&c11) != thrd_busy) fail("old mtx_trylock of own plain mutex did not give thrd_busy");
    ts = deadline_in(CLOCK_REALTIME, 1000000LL);
    if (old_mtx_unlock(&c11) != thrd_success) fail("old mtx_unlock failed");
    if (old_mtx_timedlock(&c11, &ts) != thrd_success) fail("old mtx_timedlock of a free mutex failed");
    if (old_mtx_unlock(&c11) != thrd_success) fail("old mtx_unlock failed");
    old_mtx_destroy(&c11);
    return 0;
}
