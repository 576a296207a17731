/* Programs linked before glibc 2.34 call pthread_rwlock_*@GLIBC_2.2.5, the clock
 * variants @GLIBC_2.30 and the __pthread_rwlock_*@GLIBC_2.2.5 aliases. This program binds
 * to exactly those versions and checks behaviour through them: exclusion with an exact
 * count, EBUSY, EDEADLK, ETIMEDOUT. The test also checks with LD_DEBUG=bindings that
 * each was bound to the preloaded library (one unversioned definition satisfies all). */
#include "rwlock_check.h"

#define OLD(name, ver, ...)                         \
    extern int old_##name(__VA_ARGS__);             \
    __asm__(".symver old_" #name ", " #name "@" #ver)

OLD(pthread_rwlock_init, GLIBC_2.2.5, pthread_rwlock_t *, const pthread_rwlockattr_t *);
OLD(pthread_rwlock_destroy, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(pthread_rwlock_rdlock, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(pthread_rwlock_tryrdlock, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(pthread_rwlock_timedrdlock, GLIBC_2.2.5, pthread_rwlock_t *, const struct timespec *);
OLD(pthread_rwlock_wrlock, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(pthread_rwlock_trywrlock, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(pthread_rwlock_timedwrlock, GLIBC_2.2.5, pthread_rwlock_t *, const struct timespec *);
OLD(pthread_rwlock_unlock, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(pthread_rwlock_clockrdlock, GLIBC_2.30, pthread_rwlock_t *, clockid_t, const struct timespec *);
OLD(pthread_rwlock_clockwrlock, GLIBC_2.30, pthread_rwlock_t *, clockid_t, const struct timespec *);
OLD(__pthread_rwlock_init, GLIBC_2.2.5, pthread_rwlock_t *, const pthread_rwlockattr_t *);
OLD(__pthread_rwlock_destroy, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(__pthread_rwlock_rdlock, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(__pthread_rwlock_tryrdlock, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(__pthread_rwlock_wrlock, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(__pthread_rwlock_trywrlock, GLIBC_2.2.5, pthread_rwlock_t *);
OLD(__pthread_rwlock_unlock, GLIBC_2.2.5, pthread_rwlock_t *);

#define THREADS 3
#define ITERS 20000

static pthread_rwlock_t l1, l2;
static long counter;

static void *worker(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        struct timespec rt = deadline_in(CLOCK_REALTIME, 10000000000LL), mono = deadline_in(CLOCK_MONOTONIC, 10000000000LL);
        int rc;
        switch ((i + id) % 8) {
        case 0: OK(old_pthread_rwlock_wrlock(&l1)); break;
        case 1: OK(old___pthread_rwlock_wrlock(&l1)); break;
        case 2: OK(old_pthread_rwlock_timedwrlock(&l1, &rt)); break;
        case 3: OK(old_pthread_rwlock_clockwrlock(&l1, CLOCK_MONOTONIC, &mono)); break;
        case 4:
            while ((rc = old_pthread_rwlock_trywrlock(&l1)) == EBUSY) sched_yield();
            OK(rc);
            break;
        case 5:
            while ((rc = old___pthread_rwlock_trywrlock(&l1)) == EBUSY) sched_yield();
            OK(rc);
            break;
        default:
            /* A read section on the other lock, then a write section with wrlock. */
            if (i % 2) OK(old_pthread_rwlock_rdlock(&l2)); else OK(old___pthread_rwlock_rdlock(&l2));
            OK(old___pthread_rwlock_unlock(&l2));
            OK(old_pthread_rwlock_wrlock(&l1));
            break;
        }
        counter++;
        if ((i & 1) == 0) OK(old_pthread_rwlock_unlock(&l1)); else OK(old___pthread_rwlock_unlock(&l1));
    }
    return NULL;
}

int main(void) {
    test_begin("rwlock_old_symbols", 30);
    OK(old_pthread_rwlock_init(&l1, NULL));
    OK(old___pthread_rwlock_init(&l2, NULL));
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) t[i] = start_thread(worker, (void *)i);
    for (int i = 0; i < THREADS; i++) join_thread(t[i]);
    if (counter != (long)THREADS * ITERS) fail("counter %ld, expected %ld", counter, (long)THREADS * ITERS);

    struct timespec rt = deadline_in(CLOCK_REALTIME, 20000000), mono = deadline_in(CLOCK_MONOTONIC, 20000000);
    OK(old_pthread_rwlock_wrlock(&l1));
    EXPECT_RC(old_pthread_rwlock_rdlock(&l1), EDEADLK);
    EXPECT_RC(old___pthread_rwlock_rdlock(&l1), EDEADLK);
    EXPECT_RC(old_pthread_rwlock_clockrdlock(&l1, CLOCK_MONOTONIC, &mono), EDEADLK);
    EXPECT_RC(old_pthread_rwlock_tryrdlock(&l1), EBUSY);
    EXPECT_RC(old___pthread_rwlock_tryrdlock(&l1), EBUSY);
    OK(old_pthread_rwlock_unlock(&l1));
    struct rw_holder h;
    rw_holder_start(&h, &l1, 1);
    EXPECT_RC(old_pthread_rwlock_timedrdlock(&l1, &rt), ETIMEDOUT);
    EXPECT_RC(old_pthread_rwlock_clockrdlock(&l1, CLOCK_MONOTONIC, &mono), ETIMEDOUT);
    rw_holder_release(&h);
    OK(old___pthread_rwlock_tryrdlock(&l1));
    OK(old_pthread_rwlock_tryrdlock(&l1));
    EXPECT_RC(old___pthread_rwlock_trywrlock(&l1), EBUSY);
    OK(old_pthread_rwlock_unlock(&l1));
    OK(old___pthread_rwlock_unlock(&l1));
    OK(old_pthread_rwlock_destroy(&l1));
    OK(old___pthread_rwlock_destroy(&l2));
    return 0;
}
