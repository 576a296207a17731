/*
 * A tiny program for the `spinmutex ab` integration test: two threads increment a
 * counter under one pthread mutex, then it prints "ops/s=N" and exits with status 0,
 * or with the status given as the second argument.
 *
 * usage: ab_tiny [ITERATIONS_PER_THREAD [EXIT_STATUS]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static long iterations = 100000;

static void *worker(void *arg)
{
    (void)arg;
    for (long i = 0; i < iterations; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iterations = atol(argv[1]);
    int status = argc > 2 ? atoi(argv[2]) : 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t a, b;
    pthread_create(&a, NULL, worker, NULL);
    pthread_create(&b, NULL, worker, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (counter != 2 * iterations) {
        fprintf(stderr, "ab_tiny: lost update: %ld != %ld\n", counter, 2 * iterations);
        return 1;
    }
    printf("counter=%ld ops/s=%.0f\n", counter, s > 0 ? (double)counter / s : 0.0);
    return status;
}
