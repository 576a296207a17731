/* A hot mutex, locked by hot_worker() from several threads, and a cold one locked
 * once per thread; optionally forks a child that contends too (argument "fork"), and
 * optionally uses many distinct mutexes (argument "many") to fill a small side table.
 * Prints a deterministic summary on stdout.
 *
 * Contention is forced, not hoped for: contend() holds the hot mutex while it starts
 * the workers and releases it only once one of them sleeps on it (the lock word reads
 * 2, which glibc and every strategy of the library write before sleeping), so each run
 * has contended acquisitions, sleeps and wakes in hot_worker() however busy the
 * machine is. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 20000

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cold = PTHREAD_MUTEX_INITIALIZER;
static long counter;

__attribute__((noinline)) static void *hot_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&hot);
        for (volatile int spin = 0; spin < 50; spin++) {
        }
        counter++;
        pthread_mutex_unlock(&hot);
    }
    pthread_mutex_lock(&cold);
    pthread_mutex_unlock(&cold);
    return NULL;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits (at most 30 s) until a thread sleeps on `m`, which the caller holds. */
static void wait_for_a_sleeper(pthread_mutex_t *m) {
    for (int i = 0; i < 30000 && __atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) != 2; i++)
        sleep_ms(1);
    sleep_ms(2); /* from writing 2 to the futex wait itself */
}

static long contend(void) {
    pthread_t t[THREADS];
    counter = 0;
    pthread_mutex_lock(&hot);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, hot_worker, NULL);
    wait_for_a_sleeper(&hot);
    pthread_mutex_unlock(&hot);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    return counter;
}

static void many_mutexes(void) {
    enum { N = 64 };
    static pthread_mutex_t ms[N];
    for (int i = 0; i < N; i++) {
        pthread_mutex_init(&ms[i], NULL);
        pthread_mutex_lock(&ms[i]);
        pthread_mutex_unlock(&ms[i]);
    }
}

int main(int argc, char **argv) {
    int fork_child = argc > 1 && strcmp(argv[1], "fork") == 0;
    int many = argc > 1 && strcmp(argv[1], "many") == 0;
    if (many)
        many_mutexes();
    long total = contend();
    if (total != (long)THREADS * ROUNDS) {
        fprintf(stderr, "lost updates: %ld\n", total);
        return 1;
    }
    if (fork_child) {
        pid_t pid = fork();
        if (pid == 0) {
            long child_total = contend();
            _exit(child_total == (long)THREADS * ROUNDS ? 0 : 1);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "child failed\n");
            return 1;
        }
    }
    printf("total %ld\n", total);
    return 0;
}
