/* A thread blocked in wrlock (or rdlock) leaves the wait from a signal handler with
 * siglongjmp: undefined behaviour, which glibc 2.36 does not survive for rwlocks (the
 * writer it registered is handed the lock and never comes back). This library hands
 * nothing to a blocked thread, so the lock must stay usable: after the holder lets go,
 * other threads take it for writing and reading, and under the writer-preferring kind a
 * reader is held back at most briefly by the writer that is gone. A writer's try and a
 * timed writer whose deadline has passed get the free lock at once.
 * The test runs this program under the library's own strategies only. */
#include "rwlock_check.h"

#include <setjmp.h>

static pthread_rwlock_t lock;
static sigjmp_buf escape;
static volatile int escaped, blocking;
static int write_mode;

static void on_signal(int sig) {
    (void)sig;
    siglongjmp(escape, 1);
}

static void *jumper(void *arg) {
    (void)arg;
    if (sigsetjmp(escape, 1) == 0) {
        __atomic_store_n(&blocking, 1, __ATOMIC_SEQ_CST);
        int rc = write_mode ? pthread_rwlock_wrlock(&lock) : pthread_rwlock_rdlock(&lock);
        fail("the lock call returned %s instead of blocking", err_name(rc));
    }
    __atomic_store_n(&escaped, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void round_trip(int kind, int write) {
    rw_init(&lock, kind, PTHREAD_PROCESS_PRIVATE);
    write_mode = write;
    escaped = blocking = 0;
    /* The holder keeps the jumper waiting: a reader keeps a writer out, a writer a reader. */
    if (write) OK(pthread_rwlock_rdlock(&lock)); else OK(pthread_rwlock_wrlock(&lock));
    pthread_t t = start_thread(jumper, NULL);
    while (!__atomic_load_n(&blocking, __ATOMIC_SEQ_CST)) usleep(100);
    sleep_ms(30);
    pthread_kill(t, SIGUSR1);
    join_thread(t);
    if (!escaped) fail("the jumper did not escape");
    OK(pthread_rwlock_unlock(&lock));
    const char *what = rw_kind_names[kind];
    /* Free for a writer's try, and for a timed writer whose deadline has passed: the
     * thread that left may have left a mark, but nobody holds the lock. */
    int rc = pthread_rwlock_trywrlock(&lock);
    if (rc != 0) fail("%s (%s jumped): trywrlock on the free lock returned %s", what, write ? "writer" : "reader", err_name(rc));
    OK(pthread_rwlock_unlock(&lock));
    struct timespec past = deadline_in(CLOCK_MONOTONIC, -1000000000LL);
    rc = pthread_rwlock_clockwrlock(&lock, CLOCK_MONOTONIC, &past);
    if (rc != 0) fail("%s (%s jumped): clockwrlock (past deadline) on the free lock returned %s", what, write ? "writer" : "reader", err_name(rc));
    OK(pthread_rwlock_unlock(&lock));
    /* Usable for writing and reading, from this thread and from others. */
    int64_t t0 = now_ns(CLOCK_MONOTONIC);
    struct timespec ts = deadline_in(CLOCK_MONOTONIC, 5000000000LL);
    rc = pthread_rwlock_clockwrlock(&lock, CLOCK_MONOTONIC, &ts);
    if (rc != 0) fail("%s (%s jumped): wrlock after the escape returned %s", what, write ? "writer" : "reader", err_name(rc));
    OK(pthread_rwlock_unlock(&lock));
    ts = deadline_in(CLOCK_MONOTONIC, 5000000000LL);
    rc = pthread_rwlock_clockrdlock(&lock, CLOCK_MONOTONIC, &ts);
    if (rc != 0) fail("%s (%s jumped): rdlock after the escape returned %s", what, write ? "writer" : "reader", err_name(rc));
    OK(pthread_rwlock_unlock(&lock));
    struct rw_holder h;
    rw_holder_start(&h, &lock, 0);
    rw_holder_release(&h);
    rw_holder_start(&h, &lock, 1);
    rw_holder_release(&h);
    int64_t took = now_ns(CLOCK_MONOTONIC) - t0;
    if (took > 2000000000LL) fail("%s: the lock was held back %lld ms by the thread that left", what, (long long)(took / 1000000));
}

int main(void) {
    test_begin("rwlock_longjmp", 60);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    for (int k = 0; k < 3; k++) {
        round_trip(rw_kinds[k], 1);
        round_trip(rw_kinds[k], 0);
    }
    return 0;
}
