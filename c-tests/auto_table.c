/* `auto`'s class table in a long-running program: mutexes that were never initialised by
 * a call (zeroed memory, PTHREAD_MUTEX_INITIALIZER, every C++ std::mutex) are each a
 * class of their own, keyed by their address. Such a program makes and frees them all
 * the time; a class table of fixed size must not fill up with the dead ones, or a
 * lock class made later finds no room and never learns its own policy.
 *
 *   churn  DEAD heap mutexes from calloc, used one after another, each contended by
 *          two threads for a few rounds, then freed;
 *   late   then a mutex made by an init call site (late_new), contended by the same two
 *          threads: its class must find room in the table (the test reads its policy
 *          from the statistics).
 *
 * Exits 1 on a lost update.
 *
 * usage: auto_table [ms]   (default 300: how long the late class runs after the churn) */
#include "check.h"

#define DEAD 1000
#define ROUNDS 64

struct counted {
    pthread_mutex_t lock;
    unsigned long count;
};

static pthread_barrier_t both;
static struct counted *dead[DEAD];
static struct counted late;
static volatile int stop, churned;
static unsigned long late_done[2];

static __attribute__((noinline)) void late_new(struct counted *c) {
    OK(pthread_mutex_init(&c->lock, NULL));
}

/* Both threads take each dead mutex ROUNDS times, holding it for a few microseconds,
 * so that most of them are contended; thread 0 frees each after use. */
static void churn(long i) {
    for (int n = 0; n < DEAD; n++) {
        pthread_barrier_wait(&both);
        struct counted *c = dead[n];
        for (int r = 0; r < ROUNDS; r++) {
            OK(pthread_mutex_lock(&c->lock));
            c->count++;
            compute_for_us(2);
            OK(pthread_mutex_unlock(&c->lock));
        }
        pthread_barrier_wait(&both);
        if (i == 0) {
            if (c->count != 2 * ROUNDS)
                fail("lost update on dead mutex %d: %lu, expected %d", n, c->count, 2 * ROUNDS);
            OK(pthread_mutex_destroy(&c->lock));
            free(c);
        }
    }
}

static void *worker(void *arg) {
    long i = (long)arg;
    churn(i);
    if (i == 0) {
        late_new(&late); /* after the churn: the class is claimed when made */
        churned = 1;
    }
    pthread_barrier_wait(&both);
    unsigned long rounds = 0;
    while (!stop) {
        OK(pthread_mutex_lock(&late.lock));
        late.count++;
        compute_for_us(2);
        OK(pthread_mutex_unlock(&late.lock));
        compute_for_us(2);
        rounds++;
    }
    late_done[i] = rounds;
    return NULL;
}

int main(int argc, char **argv) {
    test_name = "auto_table";
    long ms = argc > 1 ? atol(argv[1]) : 300;
    /* Made all at once, so that each has an address of its own (one freed before the
     * next is made would come back at the same address). */
    for (int n = 0; n < DEAD; n++)
        if ((dead[n] = calloc(1, sizeof *dead[n])) == NULL) /* zeroed: never initialised */
            fail("out of memory");
    OK(pthread_barrier_init(&both, NULL, 2));
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        OK(pthread_create(&t[i], NULL, worker, (void *)i));
    struct timespec tick = {0, 1000000L};
    while (!churned)
        nanosleep(&tick, NULL);
    struct timespec nap = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&nap, NULL);
    stop = 1;
    for (int i = 0; i < 2; i++)
        OK(pthread_join(t[i], NULL));
    if (late.count != late_done[0] + late_done[1])
        fail("lost update on the late lock: %lu, expected %lu", late.count, late_done[0] + late_done[1]);
    OK(pthread_mutex_destroy(&late.lock));
    return 0;
}
