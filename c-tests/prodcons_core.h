/* A condition-variable producer/consumer pair (not a test itself: included by
 * tsan_condvar.c and cond_small.c). One producer, one consumer, a four-slot buffer:
 * nearly every item makes a thread wait, so a wait and a signal that reach different
 * condition-variable implementations hang it at once. */
#include "check.h"

#define SLOTS 4

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static int count, done;
static long sum, items;

static void *producer(void *arg) {
    for (long i = 1; i <= items; i++) {
        OK(pthread_mutex_lock(&m));
        while (count == SLOTS) OK(pthread_cond_wait(&not_full, &m));
        count++;
        sum += i;
        OK(pthread_cond_signal(&not_empty));
        OK(pthread_mutex_unlock(&m));
    }
    OK(pthread_mutex_lock(&m));
    done = 1;
    OK(pthread_cond_broadcast(&not_empty));
    OK(pthread_mutex_unlock(&m));
    return arg;
}

static void *consumer(void *arg) {
    long taken = 0;
    for (;;) {
        OK(pthread_mutex_lock(&m));
        while (count == 0 && !done) OK(pthread_cond_wait(&not_empty, &m));
        if (count == 0) {
            OK(pthread_mutex_unlock(&m));
            break;
        }
        count--;
        taken++;
        OK(pthread_cond_signal(&not_full));
        OK(pthread_mutex_unlock(&m));
    }
    return (void *)taken;
}

/* `name` for messages; items to pass; seconds before the watchdog calls it a hang. */
static int prodcons_main(const char *name, long n, unsigned watchdog) {
    test_begin(name, watchdog);
    items = n;
    pthread_t p = start_thread(producer, NULL), c = start_thread(consumer, NULL);
    join_thread(p);
    void *taken;
    OK(pthread_join(c, &taken));
    if ((long)taken != items) fail("consumed %ld of %ld items", (long)taken, items);
    return 0;
}
