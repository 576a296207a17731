/* Two lock classes of opposite needs, for `auto` to tell apart:
 *
 *   slow   mutexes made by one call site (slow_new), each held across 1 ms of
 *          computation while two threads contend for it: the owner keeps running and
 *          a spin never outlasts the hold, so spins are lost and the class must learn
 *          to sleep at once (a hold across a sleep would not show it: a spinner stops
 *          as soon as it sees the owner off the CPU, so such spins cost little);
 *   fast   a mutex made by another call site (fast_new), held for a few instructions
 *          by two threads in a tight loop;
 *   idle   a mutex made by a third call site (idle_new) and locked only by main, never
 *          contended: nothing judges its class, and the report must say so.
 *
 * The slow threads move to the next slow mutex every PHASE rounds, so that the class's
 * later mutexes start from what the earlier ones taught it. Exits 1 on a lost update.
 *
 * usage: auto_classes [ms]   (default 1500) */
#include "check.h"

#define PHASE 100
#define SLOW_LOCKS 64

struct counted {
    pthread_mutex_t lock;
    unsigned long count;
};

static struct counted slow[SLOW_LOCKS], fast, idle;
static volatile int stop;
static unsigned long slow_done[2], fast_done[2];

static __attribute__((noinline)) void slow_new(struct counted *c) {
    OK(pthread_mutex_init(&c->lock, NULL));
}

static __attribute__((noinline)) void fast_new(struct counted *c) {
    OK(pthread_mutex_init(&c->lock, NULL));
}

static __attribute__((noinline)) void idle_new(struct counted *c) {
    OK(pthread_mutex_init(&c->lock, NULL));
}

static void *slow_main(void *arg) {
    long i = (long)arg;
    unsigned long rounds = 0;
    while (!stop) {
        struct counted *c = &slow[(rounds / PHASE) % SLOW_LOCKS];
        OK(pthread_mutex_lock(&c->lock));
        c->count++;
        compute_for_us(1000);
        OK(pthread_mutex_unlock(&c->lock));
        rounds++;
    }
    slow_done[i] = rounds;
    return NULL;
}

static void *fast_main(void *arg) {
    long i = (long)arg;
    unsigned long n = 0;
    while (!stop) {
        OK(pthread_mutex_lock(&fast.lock));
        fast.count++;
        OK(pthread_mutex_unlock(&fast.lock));
        n++;
    }
    fast_done[i] = n;
    return NULL;
}

int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 1500;
    for (int k = 0; k < SLOW_LOCKS; k++) slow_new(&slow[k]);
    fast_new(&fast);
    idle_new(&idle);
    OK(pthread_mutex_lock(&idle.lock));
    idle.count++;
    OK(pthread_mutex_unlock(&idle.lock));
    pthread_t t[4];
    for (long i = 0; i < 2; i++) {
        OK(pthread_create(&t[i], NULL, slow_main, (void *)i));
        OK(pthread_create(&t[2 + i], NULL, fast_main, (void *)i));
    }
    struct timespec nap = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&nap, NULL);
    stop = 1;
    for (int i = 0; i < 4; i++) OK(pthread_join(t[i], NULL));
    unsigned long slow_total = 0;
    for (int k = 0; k < SLOW_LOCKS; k++) {
        slow_total += slow[k].count;
        OK(pthread_mutex_destroy(&slow[k].lock));
    }
    if (slow_total != slow_done[0] + slow_done[1])
        fail("lost update on the slow locks: %lu, expected %lu", slow_total, slow_done[0] + slow_done[1]);
    if (fast.count != fast_done[0] + fast_done[1])
        fail("lost update on the fast lock: %lu, expected %lu", fast.count, fast_done[0] + fast_done[1]);
    OK(pthread_mutex_destroy(&fast.lock));
    OK(pthread_mutex_destroy(&idle.lock));
    return 0;
}
