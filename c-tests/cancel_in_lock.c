/* pthread_mutex_lock and unlock are not cancellation points, whatever the library does
 * inside them (tracing, statistics): a deferred cancellation request must wait for the
 * thread's next real cancellation point.
 *
 *   pending    a thread with a cancel already pending locks a contended mutex and
 *              unlocks it, then reaches pthread_testcancel; it must get past the lock
 *              and the unlock, and be cancelled only at testcancel, with the mutex free;
 *   cleanup    the POSIX idiom pthread_cleanup_push(unlock); lock; ...; testcancel;
 *              pthread_cleanup_pop under constant cancellation of contending threads:
 *              the cleanup handler must only ever release a lock its thread holds, so
 *              no two threads are ever inside the critical section together.
 *
 * usage: cancel_in_lock [pending|cleanup]... (default: both) */
#include "check.h"

#include <stdatomic.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static atomic_int inside;
static atomic_long overlaps, entries;
static atomic_int past_lock, past_unlock;

static void *pending_main(void *arg) {
    (void)arg;
    OK(pthread_cancel(pthread_self())); /* deferred: pending until a cancellation point */
    OK(pthread_mutex_lock(&m));         /* contended: the holder lets go after 20 ms */
    atomic_store(&past_lock, 1);
    OK(pthread_mutex_unlock(&m));
    atomic_store(&past_unlock, 1);
    pthread_testcancel();
    fail("pending: the thread was not cancelled at pthread_testcancel");
}

static void pending(void) {
    for (int round = 0; round < 20; round++) {
        atomic_store(&past_lock, 0);
        atomic_store(&past_unlock, 0);
        struct holder h;
        holder_start(&h, &m, 20);
        pthread_t t = start_thread(pending_main, NULL);
        void *result;
        OK(pthread_join(t, &result));
        holder_release(&h);
        if (result != PTHREAD_CANCELED) fail("pending: the thread was not cancelled");
        if (!atomic_load(&past_lock)) fail("pending: cancelled inside pthread_mutex_lock");
        if (!atomic_load(&past_unlock)) fail("pending: cancelled inside pthread_mutex_unlock");
        int rc = pthread_mutex_trylock(&m);
        if (rc != 0) fail("pending: the mutex is left locked after the cancellation (%s)", err_name(rc));
        OK(pthread_mutex_unlock(&m));
    }
}

static void unlock_m(void *arg) { OK(pthread_mutex_unlock((pthread_mutex_t *)arg)); }

static void *cleanup_main(void *arg) {
    (void)arg;
    for (;;) {
        pthread_cleanup_push(unlock_m, &m);
        OK(pthread_mutex_lock(&m));
        if (atomic_fetch_add(&inside, 1) != 0) atomic_fetch_add(&overlaps, 1);
        atomic_fetch_add(&entries, 1);
        for (volatile int i = 0; i < 200; i++) {
        }
        atomic_fetch_sub(&inside, 1);
        pthread_testcancel(); /* the only cancellation point: the lock is held here */
        pthread_cleanup_pop(1);
    }
    return NULL;
}

static void cleanup(void) {
    enum { THREADS = 4 };
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) t[i] = start_thread(cleanup_main, NULL);
    int64_t end = now_ns(CLOCK_MONOTONIC) + 800000000LL;
    for (int k = 0; now_ns(CLOCK_MONOTONIC) < end; k++) {
        int i = k % THREADS;
        OK(pthread_cancel(t[i]));
        void *result;
        OK(pthread_join(t[i], &result));
        if (result != PTHREAD_CANCELED) fail("cleanup: a worker was not cancelled");
        t[i] = start_thread(cleanup_main, NULL);
        usleep(200);
    }
    for (int i = 0; i < THREADS; i++) {
        OK(pthread_cancel(t[i]));
        join_thread(t[i]);
    }
    if (atomic_load(&overlaps) != 0)
        fail("cleanup: %ld of %ld entries found another thread inside the critical section",
             atomic_load(&overlaps), atomic_load(&entries));
    int rc = pthread_mutex_trylock(&m);
    if (rc != 0) fail("cleanup: the mutex is left locked (%s)", err_name(rc));
    OK(pthread_mutex_unlock(&m));
}

int main(int argc, char **argv) {
    test_begin("cancel_in_lock", 60);
    int all = argc < 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "pending") == 0) pending();
        else if (strcmp(argv[i], "cleanup") == 0) cleanup();
        else fail("unknown case %s", argv[i]);
    }
    if (all) {
        pending();
        cleanup();
    }
    return 0;
}
