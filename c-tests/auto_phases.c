/* A lock whose use changes: two threads take one mutex (made by one init call) with
 * a few pauses inside and outside for SHORT_MS, then hold it for thousands of pauses
 * for LONG_MS. `auto`'s class of it must be measured again soon after the change,
 * not at its next scheduled experiment, seconds later. Prints the CLOCK_MONOTONIC
 * time of the change on stderr as `switch_ns=N`, for the trace's `ts_ns` to be read
 * against. Exits 1 on a lost update.
 * usage: auto_phases [short_ms] [long_ms]   (defaults 4000 and 2000) */
#include "check.h"

#include <stdatomic.h>

static pthread_mutex_t m;
static unsigned long counter;
static atomic_uint pauses = 3;
static atomic_int stop;
static unsigned long done[2];

static void spin(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        __asm__ volatile("" ::: "memory");
#endif
    }
}

static void *worker(void *arg) {
    long id = (long)arg;
    unsigned long n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        unsigned p = atomic_load_explicit(&pauses, memory_order_relaxed);
        OK(pthread_mutex_lock(&m));
        counter++;
        spin(p);
        OK(pthread_mutex_unlock(&m));
        spin(p);
        n++;
    }
    done[id] = n;
    return NULL;
}

int main(int argc, char **argv) {
    test_begin("auto_phases", 60);
    int short_ms = argc > 1 ? atoi(argv[1]) : 4000;
    int long_ms = argc > 2 ? atoi(argv[2]) : 2000;
    OK(pthread_mutex_init(&m, NULL));
    pthread_t t[2];
    for (long i = 0; i < 2; i++) t[i] = start_thread(worker, (void *)i);
    sleep_ms(short_ms);
    fprintf(stderr, "switch_ns=%lld\n", (long long)now_ns(CLOCK_MONOTONIC));
    atomic_store(&pauses, 5000);
    sleep_ms(long_ms);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) join_thread(t[i]);
    if (counter != done[0] + done[1]) fail("counter %lu, but the threads counted %lu", counter, done[0] + done[1]);
    OK(pthread_mutex_destroy(&m));
    return 0;
}
