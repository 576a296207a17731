/* Thousands of short-lived threads: 3000 threads, created and joined in batches of 50,
 * each locking a shared normal mutex and a shared adaptive mutex a few times (one of
 * them by trylock-retry, one by timedlock) and a mutex of its own; exact counts. */
#include "check.h"

#define TOTAL 3000
#define BATCH 50
#define PER_THREAD 10

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static volatile long count_shared, count_adaptive;

static void *worker(void *arg) {
    (void)arg;
    pthread_mutex_t own;
    init_typed(&own, PTHREAD_MUTEX_ERRORCHECK);
    for (int i = 0; i < PER_THREAD; i++) {
        if (i == 3) {
            int rc;
            while ((rc = pthread_mutex_trylock(&shared)) == EBUSY) sched_yield();
            if (rc != 0) fail("trylock returned %s", err_name(rc));
        } else if (i == 5) {
            struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000LL);
            OK(pthread_mutex_timedlock(&shared, &ts));
        } else {
            OK(pthread_mutex_lock(&shared));
        }
        long v = count_shared;
        count_shared = v + 1;
        OK(pthread_mutex_unlock(&shared));
        OK(pthread_mutex_lock(&adaptive));
        count_adaptive++;
        OK(pthread_mutex_unlock(&adaptive));
        OK(pthread_mutex_lock(&own));
        EXPECT_RC(pthread_mutex_lock(&own), EDEADLK);
        OK(pthread_mutex_unlock(&own));
    }
    OK(pthread_mutex_destroy(&own));
    return NULL;
}

int main(void) {
    test_begin("many_threads", 30);
    pthread_t t[BATCH];
    for (int done = 0; done < TOTAL; done += BATCH) {
        for (int i = 0; i < BATCH; i++) t[i] = start_thread(worker, NULL);
        for (int i = 0; i < BATCH; i++) join_thread(t[i]);
    }
    if (count_shared != (long)TOTAL * PER_THREAD) fail("count %ld, expected %ld", count_shared, (long)TOTAL * PER_THREAD);
    if (count_adaptive != (long)TOTAL * PER_THREAD) fail("adaptive count %ld, expected %ld", count_adaptive, (long)TOTAL * PER_THREAD);
    return 0;
}
