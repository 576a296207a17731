/* The uncontended cost of a lock + unlock pair, as a program with a second thread
 * sees it (so no library may take a single-threaded shortcut).
 *
 *   uncontended PAIRS [ROUNDS [mutex|read|write]]
 *
 * Runs ROUNDS (default 5) rounds of PAIRS pairs on one default mutex
 * (pthread_mutex_lock/unlock, the default) or one default rwlock (rdlock/unlock or
 * wrlock/unlock) and prints the fastest round's nanoseconds per pair: the fastest,
 * because interruptions only ever add time. bench/uncontended.sh runs it under each
 * strategy, interleaved.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;

static void *sleeper(void *arg) {
    pause();
    return arg;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    const char *mode = argc > 3 ? argv[3] : "mutex";
    int read = strcmp(mode, "read") == 0, write = strcmp(mode, "write") == 0;
    if (pairs <= 0 || rounds <= 0 || (!read && !write && strcmp(mode, "mutex") != 0)) {
        fprintf(stderr, "usage: %s PAIRS [ROUNDS [mutex|read|write]]\n", argv[0]);
        return 2;
    }
    pthread_t other;
    if (pthread_create(&other, NULL, sleeper, NULL) != 0) {
        fprintf(stderr, "%s: cannot start the second thread\n", argv[0]);
        return 1;
    }
    double best = 1e300;
    for (int r = 0; r < rounds; r++) {
        double start = now_ns();
        if (read) {
            for (long i = 0; i < pairs; i++) {
                pthread_rwlock_rdlock(&rwlock);
                pthread_rwlock_unlock(&rwlock);
            }
        } else if (write) {
            for (long i = 0; i < pairs; i++) {
                pthread_rwlock_wrlock(&rwlock);
                pthread_rwlock_unlock(&rwlock);
            }
        } else {
            for (long i = 0; i < pairs; i++) {
                pthread_mutex_lock(&mutex);
                pthread_mutex_unlock(&mutex);
            }
        }
        double per_pair = (now_ns() - start) / pairs;
        if (per_pair < best)
            best = per_pair;
    }
    printf("%.2f\n", best);
    return 0;
}
