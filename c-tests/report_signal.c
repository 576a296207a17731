/* The statistics report signal (SIGUSR2 by default) arriving again and again while
 * threads contend, sleep, time out in condvar waits and take an errorcheck mutex: the
 * library's handler prints a report each time, and nothing may deadlock, crash or
 * lose a count. Without SPINMUTEX_STATS in the environment (the baseline, or a
 * strategy with statistics off) SIGUSR2 would end the process, so the program then
 * ignores it itself and the run only checks the counts. */
#include "check.h"

#include <stdatomic.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile long counter;
static atomic_int stop;
static long done[4];

static void *worker(void *arg) {
    long id = (long)arg;
    while (!atomic_load(&stop)) {
        OK(pthread_mutex_lock(&m));
        counter++;
        if ((done[id] & 31) == 0) {
            struct timespec ts = deadline_in(CLOCK_REALTIME, 100000);
            int rc = pthread_cond_timedwait(&cv, &m, &ts);
            if (rc != 0 && rc != ETIMEDOUT) fail("pthread_cond_timedwait returned %s", err_name(rc));
        }
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_lock(&e));
        EXPECT_RC(pthread_mutex_lock(&e), EDEADLK);
        OK(pthread_mutex_unlock(&e));
        done[id]++;
    }
    return NULL;
}

int main(void) {
    test_begin("report_signal", 30);
    if (getenv("SPINMUTEX_STATS") == NULL) signal(SIGUSR2, SIG_IGN);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) t[i] = start_thread(worker, (void *)i);
    int64_t end = now_ns(CLOCK_MONOTONIC) + 300000000LL;
    for (int k = 0; now_ns(CLOCK_MONOTONIC) < end; k++) {
        pthread_kill(t[k % 4], SIGUSR2);
        if (k % 4 == 0) pthread_kill(pthread_self(), SIGUSR2);
        usleep(1000);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++) join_thread(t[i]);
    long sum = done[0] + done[1] + done[2] + done[3];
    if (counter != sum) fail("counter %ld, threads counted %ld", counter, sum);
    return 0;
}
