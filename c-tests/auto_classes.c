/* Two lock classes of opposite needs, for `auto` to tell apart:
 *
 *   io     mutexes made by one call site (io_new), each held across a 300 us sleep while
 *          two threads contend for it: a spin never outlasts such a hold, so the class
 *          must learn to sleep at once;
 *   fast   a mutex made by another call site (fast_new), held for a few instructions
 *          by two threads in a tight loop.
 *
 * The io threads move to the next io mutex every PHASE rounds, so that the class's
 * later mutexes start from what the earlier ones taught it. Exits 1 on a lost update.
 *
 * usage: auto_classes [ms]   (default 1500) */
#include "check.h"

#define PHASE 100
#define IO_LOCKS 64

struct counted {
    pthread_mutex_t lock;
    unsigned long count;
};

static struct counted io[IO_LOCKS], fast;
static volatile int stop;
static unsigned long io_done[2], fast_done[2];

static __attribute__((noinline)) void io_new(struct counted *c) {
    OK(pthread_mutex_init(&c->lock, NULL));
}

static __attribute__((noinline)) void fast_new(struct counted *c) {
    OK(pthread_mutex_init(&c->lock, NULL));
}

static void *io_main(void *arg) {
    long i = (long)arg;
    unsigned long rounds = 0;
    while (!stop) {
        struct counted *c = &io[(rounds / PHASE) % IO_LOCKS];
        OK(pthread_mutex_lock(&c->lock));
        c->count++;
        usleep(300);
        OK(pthread_mutex_unlock(&c->lock));
        rounds++;
    }
    io_done[i] = rounds;
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
    for (int k = 0; k < IO_LOCKS; k++) io_new(&io[k]);
    fast_new(&fast);
    pthread_t t[4];
    for (long i = 0; i < 2; i++) {
        OK(pthread_create(&t[i], NULL, io_main, (void *)i));
        OK(pthread_create(&t[2 + i], NULL, fast_main, (void *)i));
    }
    struct timespec nap = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&nap, NULL);
    stop = 1;
    for (int i = 0; i < 4; i++) OK(pthread_join(t[i], NULL));
    unsigned long io_total = 0;
    for (int k = 0; k < IO_LOCKS; k++) {
        io_total += io[k].count;
        OK(pthread_mutex_destroy(&io[k].lock));
    }
    if (io_total != io_done[0] + io_done[1])
        fail("lost update on the io locks: %lu, expected %lu", io_total, io_done[0] + io_done[1]);
    if (fast.count != fast_done[0] + fast_done[1])
        fail("lost update on the fast lock: %lu, expected %lu", fast.count, fast_done[0] + fast_done[1]);
    OK(pthread_mutex_destroy(&fast.lock));
    return 0;
}
