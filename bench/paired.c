/* The uncontended cost of a lock + unlock pair under a preload against glibc's own
 * functions, measured in ONE process with the two arms' rounds alternating:
 *
 *   LD_PRELOAD=libspinmutex.so paired PAIRS ROUNDS mutex|read|write
 *
 * Separate processes on a VM do not see the same machine: the CPU, its frequency and
 * the host's other work change between them, and on the 2-vCPU development VM the same
 * build's median moved by a third between sets of runs. Here both arms share all of
 * that, round by round, so their ratio is steady even when the times are not.
 *
 * The "preload" arm calls the functions the program binds to (the preload's, if any);
 * the "glibc" arm calls libc.so.6's own. Both go through function pointers, each on its
 * own lock in its own cache line, with a second thread alive (so no single-threaded
 * shortcut applies); the arm that runs first alternates. Prints the median of the
 * per-round ratios preload / glibc with their quartiles, and each arm's median ns per
 * pair. Without a preload both arms are glibc's, and the ratio shows the method's bias.
 * bench/uncontended.sh runs it under each strategy.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*lock_fn)(void *);

struct arm {
    lock_fn lock, unlock;
    union {
        pthread_mutex_t mutex;
        pthread_rwlock_t rwlock;
    } __attribute__((aligned(64))) object;
    double *ns; /* per round */
};

static void *sleeper(void *arg) {
    pause();
    return arg;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static double round_ns(struct arm *a, long pairs) {
    double start = now_ns();
    for (long i = 0; i < pairs; i++) {
        a->lock(&a->object);
        a->unlock(&a->object);
    }
    return (now_ns() - start) / pairs;
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static lock_fn must(void *f, const char *name) {
    if (!f) {
        fprintf(stderr, "paired: cannot find %s\n", name);
        exit(1);
    }
    return (lock_fn)f;
}

int main(int argc, char **argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 0;
    const char *mode = argc > 3 ? argv[3] : "";
    const char *lock_name = strcmp(mode, "mutex") == 0  ? "pthread_mutex_lock"
                            : strcmp(mode, "read") == 0  ? "pthread_rwlock_rdlock"
                            : strcmp(mode, "write") == 0 ? "pthread_rwlock_wrlock"
                                                         : NULL;
    if (pairs <= 0 || rounds < 4 || !lock_name) {
        fprintf(stderr, "usage: %s PAIRS ROUNDS(>=4) mutex|read|write\n", argv[0]);
        return 2;
    }
    const char *unlock_name = lock_name[8] == 'm' ? "pthread_mutex_unlock" : "pthread_rwlock_unlock";
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (!libc) {
        fprintf(stderr, "paired: libc.so.6 is not loaded\n");
        return 1;
    }
    static struct arm arms[2]; /* 0: what the program binds to; 1: glibc's own */
    arms[0].lock = must(dlsym(RTLD_DEFAULT, lock_name), lock_name);
    arms[0].unlock = must(dlsym(RTLD_DEFAULT, unlock_name), unlock_name);
    arms[1].lock = must(dlsym(libc, lock_name), lock_name);
    arms[1].unlock = must(dlsym(libc, unlock_name), unlock_name);
    for (int a = 0; a < 2; a++) {
        if (lock_name[8] == 'm')
            pthread_mutex_init(&arms[a].object.mutex, NULL);
        else
            pthread_rwlock_init(&arms[a].object.rwlock, NULL);
        arms[a].ns = calloc(rounds, sizeof(double));
    }
    double *ratio = calloc(rounds, sizeof(double));
    pthread_t other;
    if (!ratio || !arms[0].ns || !arms[1].ns || pthread_create(&other, NULL, sleeper, NULL) != 0) {
        fprintf(stderr, "paired: out of resources\n");
        return 1;
    }
    round_ns(&arms[0], pairs); /* warm both up */
    round_ns(&arms[1], pairs);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            int a = (r & 1) ^ k;
            arms[a].ns[r] = round_ns(&arms[a], pairs);
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
