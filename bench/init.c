/* The cost of making a mutex: pthread_mutex_init + pthread_mutex_destroy pairs in a loop,
 * either at one call site, or through a function of the program's own that two places
 * call in turn (a wrapper: `auto` looks for the wrapper's caller by unwinding the stack,
 * src/auto/wrapper.rs).
 *
 *   init PAIRS [site|wrapper] [ROUNDS]
 *
 * Prints the fastest of ROUNDS (default 5) rounds in ns per pair: the fastest, because
 * interruptions only ever add time. For example, under each strategy and without the
 * library:
 *
 *   cc -O2 -pthread bench/init.c -o /tmp/init
 *   for s in glibc spin auto; do
 *       SPINMUTEX_STRATEGY=$s LD_PRELOAD=target/release/libspinmutex.so /tmp/init 2000000 wrapper
 *   done; /tmp/init 2000000 wrapper
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mutexes[64];
static volatile unsigned long made;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* The wrapper, and its two callers (the stores after the calls keep the three apart and
 * each caller's frame on the stack). */
__attribute__((noinline)) static void make(pthread_mutex_t *m) {
    if (pthread_mutex_init(m, NULL) != 0) abort();
    made++;
}

__attribute__((noinline)) static void make_here(pthread_mutex_t *m) {
    make(m);
    made += 2;
}

__attribute__((noinline)) static void make_there(pthread_mutex_t *m) {
    make(m);
    made += 3;
}

int main(int argc, char **argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 0;
    int wrapper = argc > 2 && strcmp(argv[2], "wrapper") == 0;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (pairs <= 0 || rounds <= 0 || (argc > 2 && !wrapper && strcmp(argv[2], "site") != 0)) {
        fprintf(stderr, "usage: init PAIRS [site|wrapper] [ROUNDS]\n");
        return 2;
    }
    double best = 0;
    for (int r = 0; r < rounds; r++) {
        double start = now_ns();
        for (long i = 0; i < pairs; i++) {
            pthread_mutex_t *m = &mutexes[i & 63];
            if (!wrapper) {
                if (pthread_mutex_init(m, NULL) != 0) abort();
            } else if (i & 1) {
                make_here(m);
            } else {
                make_there(m);
            }
            pthread_mutex_destroy(m);
        }
        double per = (now_ns() - start) / (double)pairs;
        if (r == 0 || per < best) best = per;
    }
    printf("%s %.1f ns per init + destroy\n", wrapper ? "wrapper" : "site", best);
    return 0;
}
