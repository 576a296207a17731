/* Cancellation and rwlocks.
 *  - A thread blocked in rdlock, wrlock, timedrdlock or clockwrlock is cancelled
 *    (deferred): these are not cancellation points, so it must keep waiting, get the
 *    lock when it is released, and only then be cancelled at pthread_testcancel, its
 *    cleanup handler running once.
 *  - A thread that holds a read lock is cancelled inside a cancellation point
 *    (nanosleep); its cleanup handler unlocks, after which a writer that was waiting
 *    gets in, and the lock is idle again. */
#include "rwlock_check.h"

static pthread_rwlock_t lock;
static volatile int acquired, cleanups, ready;

enum call { RDLOCK, WRLOCK, TIMEDRDLOCK, CLOCKWRLOCK };
static const char *call_names[] = {"rdlock", "wrlock", "timedrdlock", "clockwrlock"};

static void count_cleanup(void *arg) {
    (void)arg;
    __atomic_add_fetch(&cleanups, 1, __ATOMIC_SEQ_CST);
}

static void *blocked_locker(void *arg) {
    enum call call = (enum call)(long)arg;
    pthread_cleanup_push(count_cleanup, NULL);
    __atomic_store_n(&ready, 1, __ATOMIC_SEQ_CST);
    struct timespec rt = deadline_in(CLOCK_REALTIME, 30000000000LL), mono = deadline_in(CLOCK_MONOTONIC, 30000000000LL);
    int rc;
    switch (call) {
    case RDLOCK: rc = pthread_rwlock_rdlock(&lock); break;
    case WRLOCK: rc = pthread_rwlock_wrlock(&lock); break;
    case TIMEDRDLOCK: rc = pthread_rwlock_timedrdlock(&lock, &rt); break;
    default: rc = pthread_rwlock_clockwrlock(&lock, CLOCK_MONOTONIC, &mono); break;
    }
    if (rc != 0) fail("%s returned %s in a thread with a cancel pending", call_names[call], err_name(rc));
    __atomic_store_n(&acquired, 1, __ATOMIC_SEQ_CST);
    OK(pthread_rwlock_unlock(&lock));
    pthread_testcancel();
    fail("pthread_testcancel returned with a cancel pending");
    pthread_cleanup_pop(0);
    return NULL;
}

static void cancel_while_blocked(enum call call, int kind) {
    rw_init(&lock, kind, PTHREAD_PROCESS_PRIVATE);
    acquired = cleanups = ready = 0;
    int writer = call == WRLOCK || call == CLOCKWRLOCK;
    /* A reader keeps a writer out; a writer keeps a reader out. */
    if (writer) OK(pthread_rwlock_rdlock(&lock)); else OK(pthread_rwlock_wrlock(&lock));
    pthread_t t = start_thread(blocked_locker, (void *)(long)call);
    while (!__atomic_load_n(&ready, __ATOMIC_SEQ_CST)) usleep(100);
    sleep_ms(30);
    OK(pthread_cancel(t));
    sleep_ms(60);
    if (__atomic_load_n(&cleanups, __ATOMIC_SEQ_CST) != 0) fail("%s: cancelled while blocked (not a cancellation point)", call_names[call]);
    if (__atomic_load_n(&acquired, __ATOMIC_SEQ_CST) != 0) fail("%s: got the lock while it was held", call_names[call]);
    OK(pthread_rwlock_unlock(&lock));
    void *res;
    OK(pthread_join(t, &res));
    if (res != PTHREAD_CANCELED) fail("%s: the thread was not cancelled after the lock", call_names[call]);
    if (!acquired) fail("%s: cancelled before it got the lock", call_names[call]);
    if (cleanups != 1) fail("%s: cleanup handler ran %d times", call_names[call], cleanups);
    OK(pthread_rwlock_trywrlock(&lock));
    OK(pthread_rwlock_unlock(&lock));
    OK(pthread_rwlock_destroy(&lock));
}

static void unlock_cleanup(void *arg) {
    OK(pthread_rwlock_unlock((pthread_rwlock_t *)arg));
    __atomic_add_fetch(&cleanups, 1, __ATOMIC_SEQ_CST);
}

static void *reader_in_cancellation_point(void *arg) {
    (void)arg;
    OK(pthread_rwlock_rdlock(&lock));
    pthread_cleanup_push(unlock_cleanup, &lock);
    __atomic_store_n(&ready, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        struct timespec ts = {10, 0};
        nanosleep(&ts, NULL);
    }
    pthread_cleanup_pop(1);
    return NULL;
}

static void cancel_holding_reader(int kind) {
    rw_init(&lock, kind, PTHREAD_PROCESS_PRIVATE);
    cleanups = ready = 0;
    pthread_t t = start_thread(reader_in_cancellation_point, NULL);
    while (!__atomic_load_n(&ready, __ATOMIC_SEQ_CST)) usleep(100);
    struct rw_waiter w;
    rw_waiter_start(&w, &lock, 1, 0);
    sleep_ms(30);
    if (rw_waiter_done(&w)) fail("a writer got in while a reader held the lock");
    OK(pthread_cancel(t));
    void *res;
    OK(pthread_join(t, &res));
    if (res != PTHREAD_CANCELED) fail("the reader was not cancelled");
    if (cleanups != 1) fail("the reader's cleanup handler ran %d times", cleanups);
    if (!rw_waiter_wait_done(&w, 5000)) fail("the writer did not get in after the cancelled reader's cleanup");
    join_thread(w.thread);
    OK(w.rc);
    OK(pthread_rwlock_trywrlock(&lock));
    OK(pthread_rwlock_unlock(&lock));
    OK(pthread_rwlock_destroy(&lock));
}

int main(void) {
    test_begin("rwlock_cancel", 60);
    for (int k = 0; k < 3; k++) {
        for (int c = 0; c < 4; c++) cancel_while_blocked((enum call)c, rw_kinds[k]);
        cancel_holding_reader(rw_kinds[k]);
    }
    return 0;
}
