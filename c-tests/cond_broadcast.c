/* pthread_cond_broadcast wakes every waiter: 16 threads wait (some in pthread_cond_wait,
 * some in pthread_cond_timedwait, some in pthread_cond_clockwait with far deadlines),
 * the main thread broadcasts only once all of them are waiting, and every waiter must
 * see every generation, for a fixed number of rounds. Exact counts. */
#include "check.h"

#define WAITERS 16
#define ROUNDS 1000

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t all_waiting = PTHREAD_COND_INITIALIZER;
static int waiting, generation;
static long woken_total;
static int seen[WAITERS];

static void *waiter(void *arg) {
    long id = (long)arg;
    OK(pthread_mutex_lock(&mutex));
    int my_gen = generation;
    for (int r = 0; r < ROUNDS; r++) {
        if (++waiting == WAITERS) OK(pthread_cond_signal(&all_waiting));
        while (generation == my_gen) {
            if (id % 3 == 0) {
                OK(pthread_cond_wait(&cv, &mutex));
            } else if (id % 3 == 1) {
                struct timespec ts = deadline_in(CLOCK_REALTIME, 20000000000LL);
                OK(pthread_cond_timedwait(&cv, &mutex, &ts));
            } else {
                struct timespec ts = deadline_in(CLOCK_MONOTONIC, 20000000000LL);
                OK(pthread_cond_clockwait(&cv, &mutex, CLOCK_MONOTONIC, &ts));
            }
        }
        if (generation != my_gen + 1) fail("waiter %ld missed a generation: saw %d after %d", id, generation, my_gen);
        my_gen = generation;
        seen[id]++;
        woken_total++;
    }
    OK(pthread_mutex_unlock(&mutex));
    return NULL;
}

int main(void) {
    test_begin("cond_broadcast", 30);
    pthread_t t[WAITERS];
    for (long i = 0; i < WAITERS; i++) t[i] = start_thread(waiter, (void *)i);
    for (int r = 0; r < ROUNDS; r++) {
        OK(pthread_mutex_lock(&mutex));
        while (waiting < WAITERS) OK(pthread_cond_wait(&all_waiting, &mutex));
        if (waiting != WAITERS) fail("round %d: %d waiting", r, waiting);
        if (woken_total != (long)r * WAITERS) fail("round %d: %ld wake-ups so far, expected %ld", r, woken_total, (long)r * WAITERS);
        waiting = 0;
        generation++;
        OK(pthread_cond_broadcast(&cv));
        OK(pthread_mutex_unlock(&mutex));
    }
    for (int i = 0; i < WAITERS; i++) join_thread(t[i]);
    if (woken_total != (long)ROUNDS * WAITERS) fail("%ld wake-ups, expected %ld", woken_total, (long)ROUNDS * WAITERS);
    for (int i = 0; i < WAITERS; i++)
        if (seen[i] != ROUNDS) fail("waiter %d saw %d generations, expected %d", i, seen[i], ROUNDS);
    OK(pthread_mutex_destroy(&mutex));
    OK(pthread_cond_destroy(&cv));
    OK(pthread_cond_destroy(&all_waiting));
    return 0;
}
