/* The uncontended cost of a lock + unlock pair, as a program with a second thread
 * sees it (so no library may take a single-threaded shortcut).
 *
 *   uncontended PAIRS [ROUNDS [mutex|read|write [paired]]]
 *
 * Runs ROUNDS (default 5) rounds of PAIRS pairs on one default mutex
 * (pthread_mutex_lock/unlock, the default) or one default rwlock (rdlock/unlock or
 * wrlock/unlock) and prints the fastest round's nanoseconds per pair: the fastest,
 * because interruptions only ever add time.
 *
 * `paired` compares instead, in this one process, the functions the program binds to
 * (a preload's, if any) with libc.so.6's own. Separate processes on a VM do not see
 * the same machine: the CPU, its frequency and the host's other work change between
 * them (on the 2-vCPU development VM the same build's median moved by a third between
 * sets of runs). Here both arms share all of that, round by round: ROUNDS (at least 4)
 * rounds of each, alternating which goes first, both through function pointers, each on
 * its own lock in its own cache line. Prints the median of the per-round ratios
 * (preload / glibc), its first and third quartiles, and each arm's median ns per pair.
 * Without a preload both arms are glibc's, and the ratio is the method's own bias.
 *
 * bench/uncontended.sh runs it under each strategy, interleaved.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
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

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* One arm of the paired comparison. */
typedef int (*lock_fn)(void *);
struct arm {
    lock_fn lock, unlock;
    union {
        pthread_mutex_t mutex;
        pthread_rwlock_t rwlock;
    } __attribute__((aligned(64))) object;
    double *ns; /* per round */
};

static double arm_round(struct arm *a, long pairs) {
    double start = now_ns();
    for (long i = 0; i < pairs; i++) {
        a->lock(&a->object);
        a->unlock(&a->object);
    }
    return (now_ns() - start) / pairs;
}

static lock_fn must(void *f, const char *name) {
    if (!f) {
        fprintf(stderr, "uncontended: cannot find %s\n", name);
        exit(1);
    }
    return (lock_fn)f;
}

static int paired(long pairs, int rounds, const char *mode) {
    int is_mutex = strcmp(mode, "mutex") == 0;
    const char *lock_name = is_mutex                    ? "pthread_mutex_lock"
                            : strcmp(mode, "read") == 0 ? "pthread_rwlock_rdlock"
                                                        : "pthread_rwlock_wrlock";
    const char *unlock_name = is_mutex ? "pthread_mutex_unlock" : "pthread_rwlock_unlock";
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (!libc) {
        fprintf(stderr, "uncontended: libc.so.6 is not loaded\n");
        return 1;
    }
    static struct arm arms[2]; /* 0: what the program binds to; 1: glibc's own */
    arms[0].lock = must(dlsym(RTLD_DEFAULT, lock_name), lock_name);
    arms[0].unlock = must(dlsym(RTLD_DEFAULT, unlock_name), unlock_name);
    arms[1].lock = must(dlsym(libc, lock_name), lock_name);
    arms[1].unlock = must(dlsym(libc, unlock_name), unlock_name);
    double *ratio = calloc(rounds, sizeof(double));
    for (int a = 0; a < 2; a++) {
        if (is_mutex)
            pthread_mutex_init(&arms[a].object.mutex, NULL);
        else
            pthread_rwlock_init(&arms[a].object.rwlock, NULL);
        arms[a].ns = calloc(rounds, sizeof(double));
        if (!arms[a].ns || !ratio) {
            fprintf(stderr, "uncontended: out of memory\n");
            return 1;
        }
        arm_round(&arms[a], pairs); /* warm up */
    }
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            int a = (r & 1) ^ k;
            arms[a].ns[r] = arm_round(&arms[a], pairs);
        }
        ratio[r] = arms[0].ns[r] / arms[1].ns[r];
    }
    qsort(ratio, rounds, sizeof(double), by_value);
    qsort(arms[0].ns, rounds, sizeof(double), by_value);
    qsort(arms[1].ns, rounds, sizeof(double), by_value);
    printf("%.3f %.3f %.3f %.2f %.2f\n", ratio[rounds / 2], ratio[rounds / 4], ratio[3 * rounds / 4],
           arms[0].ns[rounds / 2], arms[1].ns[rounds / 2]);
    return 0;
}

int main(int argc, char **argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    const char *mode = argc > 3 ? argv[3] : "mutex";
    int compare = argc > 4 && strcmp(argv[4], "paired") == 0;
    int read = strcmp(mode, "read") == 0, write = strcmp(mode, "write") == 0;
    if (pairs <= 0 || rounds <= 0 || (!read && !write && strcmp(mode, "mutex") != 0) ||
        (argc > 4 && !compare) || (compare && rounds < 4)) {
        fprintf(stderr, "usage: %s PAIRS [ROUNDS [mutex|read|write [paired]]] (paired: ROUNDS >= 4)\n",
                argv[0]);
        return 2;
    }
    pthread_t other;
    if (pthread_create(&other, NULL, sleeper, NULL) != 0) {
        fprintf(stderr, "%s: cannot start the second thread\n", argv[0]);
        return 1;
    }
    if (compare)
        return paired(pairs, rounds, mode);
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
