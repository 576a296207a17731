/* Lock classes with known call sites, for `spinmutex report` to name after the process
 * has exited: a mutex made by pthread_mutex_init in make_hot_lock() and contended by
 * four threads (the hot class, origin "init"), and a statically initialised mutex first
 * locked in touch_table() (origin "first lock"). The lines marked SITE are the calls
 * the report must name, with this file and their line numbers.
 *
 * The command's build script compiles it as a position-independent executable with
 * debug info; its tests copy it, strip it and move its debug info to a separate file
 * (objcopy --only-keep-debug, strip, objcopy --add-gnu-debuglink).
 *
 * Contention is forced, as in observe_hot.c: main holds the hot mutex while it starts
 * the workers and releases it only once one of them sleeps on it (the lock word reads
 * 2). Prints "total N" on stdout. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define THREADS 4
#define ROUNDS 20000

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t hot_lock;
static long counter;
static long table;

__attribute__((noinline)) static pthread_mutex_t *make_hot_lock(void) {
    pthread_mutex_init(&hot_lock, NULL); /* SITE make_hot_lock */
    return &hot_lock;
}

__attribute__((noinline)) static void touch_table(void) {
    pthread_mutex_lock(&table_lock); /* SITE touch_table */
    table++;
    pthread_mutex_unlock(&table_lock);
}

static void *worker(void *arg) {
    pthread_mutex_t *m = arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(m);
        for (volatile int spin = 0; spin < 50; spin++) {
        }
        counter++;
        pthread_mutex_unlock(m);
    }
    touch_table();
    return NULL;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void) {
    pthread_t t[THREADS];
    pthread_mutex_t *m = make_hot_lock();
    pthread_mutex_lock(m);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, m);
    for (int i = 0; i < 30000 && __atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) != 2; i++)
        sleep_ms(1);
    sleep_ms(2);
    pthread_mutex_unlock(m);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("total %ld\n", counter + table);
    return 0;
}
