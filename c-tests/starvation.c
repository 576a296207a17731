/* Starvation / hand-off: HAMMERS threads take one mutex in a tight loop with short
 * critical sections for about DURATION_MS, while one "polite" thread sleeps 100 us
 * between acquisitions. The polite thread must still get at least MIN_POLITE
 * acquisitions in that time, and every thread's count must add up exactly.
 * usage: starvation [hammers] [duration_ms] [min_polite] */
#include "check.h"

#include <stdatomic.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;
static atomic_int stop;
static long hammer_ops[64];
static long polite_ops;

static void *hammer(void *arg) {
    long id = (long)arg;
    long n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        OK(pthread_mutex_lock(&m));
        counter++;
        for (int i = 0; i < 20; i++) __asm__ volatile("" ::: "memory");
        OK(pthread_mutex_unlock(&m));
        n++;
    }
    hammer_ops[id] = n;
    return NULL;
}

static void *polite(void *arg) {
    (void)arg;
    long n = 0;
    while (!atomic_load(&stop)) {
        OK(pthread_mutex_lock(&m));
        counter++;
        OK(pthread_mutex_unlock(&m));
        n++;
        usleep(100);
    }
    polite_ops = n;
    return NULL;
}

int main(int argc, char **argv) {
    test_begin("starvation", 30);
    int hammers = argc > 1 ? atoi(argv[1]) : 4;
    int duration_ms = argc > 2 ? atoi(argv[2]) : 1000;
    long min_polite = argc > 3 ? atol(argv[3]) : 50;
    if (hammers < 1 || hammers > 64) fail("hammers must be 1..64");
    pthread_t h[64], p;
    for (long i = 0; i < hammers; i++) h[i] = start_thread(hammer, (void *)i);
    p = start_thread(polite, NULL);
    sleep_ms(duration_ms);
    atomic_store(&stop, 1);
    for (int i = 0; i < hammers; i++) join_thread(h[i]);
    join_thread(p);
    long total = polite_ops;
    for (int i = 0; i < hammers; i++) total += hammer_ops[i];
    if (counter != total) fail("counter %ld, but the threads counted %ld acquisitions", counter, total);
    fprintf(stderr, "starvation: polite thread %ld acquisitions, hammers %ld in total, in %d ms\n", polite_ops,
            total - polite_ops, duration_ms);
    if (polite_ops < min_polite)
        fail("the sleeping thread got only %ld acquisitions in %d ms (need >= %ld): starved", polite_ops, duration_ms,
             min_polite);
    return 0;
}
