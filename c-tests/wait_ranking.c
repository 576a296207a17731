/* Lock classes that the ranking tells apart, for `spinmutex run --stats` and the
 * library's own report:
 * - busy_lock (made in make_busy_lock): two threads, started together, take it 200,000
 *   times each for a few instructions: many contended acquisitions, little time waited
 *   (one waiter at a time: at most the few milliseconds the two threads run);
 * - io_lock (made in make_io_lock): main holds it for 500 ms, as around slow I/O, while
 *   two threads wait for it: two contended acquisitions, about 1 s waited;
 * - queue_lock, made by queue_new(), which is always inlined into main: its class's
 *   caller is main, not the function that called main;
 * - an rwlock made by pthread_rwlock_init in make_rwlock, read-locked once.
 * The lines marked SITE are the calls the report must name. Prints "total N". */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define ROUNDS 200000
#define HOLD_MS 500

static pthread_mutex_t busy_lock, io_lock, queue_lock;
static pthread_rwlock_t table_lock;
static long counter;
static pthread_barrier_t start;

__attribute__((noinline)) static void make_busy_lock(void) {
    pthread_mutex_init(&busy_lock, NULL); /* SITE make_busy_lock */
    __asm__ volatile(""); /* not a tail call: the function keeps its frame */
}

__attribute__((noinline)) static void make_io_lock(void) {
    pthread_mutex_init(&io_lock, NULL); /* SITE make_io_lock */
    __asm__ volatile(""); /* not a tail call: the function keeps its frame */
}

__attribute__((noinline)) static void make_rwlock(void) {
    pthread_rwlock_init(&table_lock, NULL); /* SITE make_rwlock */
    __asm__ volatile(""); /* not a tail call: the function keeps its frame */
}

static inline __attribute__((always_inline)) void queue_new(void) {
    pthread_mutex_init(&queue_lock, NULL); /* SITE queue_new */
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *busy(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&busy_lock);
        counter++;
        pthread_mutex_unlock(&busy_lock);
    }
    return NULL;
}

static void *waiter(void *arg) {
    (void)arg;
    pthread_mutex_lock(&io_lock);
    counter++;
    pthread_mutex_unlock(&io_lock);
    return NULL;
}

int main(void) {
    pthread_t t[4];
    make_busy_lock();
    make_io_lock();
    make_rwlock();
    queue_new(); /* SITE main */
    pthread_mutex_lock(&queue_lock);
    pthread_mutex_unlock(&queue_lock);
    pthread_rwlock_rdlock(&table_lock);
    pthread_rwlock_unlock(&table_lock);

    pthread_barrier_init(&start, NULL, 2);
    pthread_mutex_lock(&io_lock);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, waiter, NULL);
    for (int i = 2; i < 4; i++)
        pthread_create(&t[i], NULL, busy, NULL);
    sleep_ms(HOLD_MS);
    pthread_mutex_unlock(&io_lock);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("total %ld\n", counter);
    return 0;
}
