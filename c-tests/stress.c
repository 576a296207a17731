/* Stress: THREADS threads for about DURATION_MS pick one of four mutexes (normal,
 * adaptive, errorcheck, recursive) at random and take it by lock, trylock, timedlock
 * or clocklock with short timeouts (0 to 200 us by default, sometimes already expired). Every
 * success increments that mutex's counter (non-atomically) and the thread's own tally;
 * at the end each counter must equal the sum of the tallies. Trylock may only fail
 * with EBUSY, timed locks only with ETIMEDOUT; nobody may be inside twice.
 * usage: stress [threads] [duration_ms] [max_timeout_us] */
#include "check.h"

#include <stdatomic.h>

#define NM 4
#define MAXT 32

static pthread_mutex_t mx[NM];
static volatile long counter[NM];
static atomic_int inside[NM];
static long tally[MAXT][NM];
static long fails[MAXT];
static atomic_int stop;
static int max_timeout_us = 200;

static void *worker(void *arg) {
    long id = (long)arg;
    unsigned seed = (unsigned)(id * 7919 + 17);
    long ops = 0;
    while (!(ops++ % 64 == 0 && atomic_load(&stop))) {
        int k = rand_r(&seed) % NM;
        int how = rand_r(&seed) % 4;
        int rc;
        if (how == 0) {
            rc = pthread_mutex_lock(&mx[k]);
            if (rc != 0) fail("lock returned %s", err_name(rc));
        } else if (how == 1) {
            rc = pthread_mutex_trylock(&mx[k]);
            if (rc != 0 && rc != EBUSY) fail("trylock returned %s", err_name(rc));
        } else {
            int64_t wait_ns = (rand_r(&seed) % 5 == 0) ? -1000 : (int64_t)(rand_r(&seed) % max_timeout_us) * 1000;
            clockid_t c = how == 2 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
            struct timespec ts = deadline_in(c, wait_ns);
            rc = how == 2 ? pthread_mutex_timedlock(&mx[k], &ts) : pthread_mutex_clocklock(&mx[k], CLOCK_MONOTONIC, &ts);
            if (rc != 0 && rc != ETIMEDOUT) fail("%s returned %s", how == 2 ? "timedlock" : "clocklock", err_name(rc));
            if (rc == ETIMEDOUT && now_ns(c) < ts_ns(&ts) - 1000000) fail("timed lock returned ETIMEDOUT >1 ms early");
        }
        if (rc != 0) {
            fails[id]++;
            continue;
        }
        if (k == 3) OK(pthread_mutex_lock(&mx[k])); /* recursive */
        if (atomic_fetch_add(&inside[k], 1) != 0) fail("mutex %d: two threads inside", k);
        if (mx[k].__data.__owner != gettid()) fail("mutex %d: __owner %d is not the holder %d", k, mx[k].__data.__owner, gettid());
        long v = counter[k];
        if ((ops & 255) == 0) sched_yield();
        counter[k] = v + 1;
        atomic_fetch_sub(&inside[k], 1);
        if (k == 3) OK(pthread_mutex_unlock(&mx[k]));
        OK(pthread_mutex_unlock(&mx[k]));
        tally[id][k]++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    test_begin("stress", 30);
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    int duration_ms = argc > 2 ? atoi(argv[2]) : 1000;
    if (argc > 3) max_timeout_us = atoi(argv[3]);
    if (threads < 1 || threads > MAXT) fail("threads must be 1..%d", MAXT);
    if (max_timeout_us < 1) fail("max_timeout_us must be >= 1");
    OK(pthread_mutex_init(&mx[0], NULL));
    init_typed(&mx[1], PTHREAD_MUTEX_ADAPTIVE_NP);
    init_typed(&mx[2], PTHREAD_MUTEX_ERRORCHECK);
    init_typed(&mx[3], PTHREAD_MUTEX_RECURSIVE);
    pthread_t t[MAXT];
    for (long i = 0; i < threads; i++) t[i] = start_thread(worker, (void *)i);
    sleep_ms(duration_ms);
    atomic_store(&stop, 1);
    for (int i = 0; i < threads; i++) join_thread(t[i]);
    long total = 0, total_fails = 0;
    for (int k = 0; k < NM; k++) {
        long sum = 0;
        for (int i = 0; i < threads; i++) sum += tally[i][k];
        if (counter[k] != sum) fail("mutex %d: counter %ld, but threads counted %ld successes", k, counter[k], sum);
        if (sum == 0) fail("mutex %d: no successful acquisition at all", k);
        total += sum;
        if (mx[k].__data.__lock != 0 || mx[k].__data.__owner != 0 || mx[k].__data.__nusers != 0)
            fail("mutex %d not clean at the end: __lock %d __owner %d __nusers %u", k, mx[k].__data.__lock,
                 mx[k].__data.__owner, mx[k].__data.__nusers);
        OK(pthread_mutex_destroy(&mx[k]));
    }
    for (int i = 0; i < threads; i++) total_fails += fails[i];
    fprintf(stderr, "stress: %ld successful acquisitions, %ld busy/timed out\n", total, total_fails);
    return 0;
}
