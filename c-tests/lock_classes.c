/* Lock classes: every mutex made at one place belongs to one class, and the class keeps
 * the counts of its destroyed mutexes.
 *
 *   churn    makes and destroys 10,000 mutexes at one call site, in batches of 8 that
 *            4 threads lock and unlock at random (contended); prints the exact number
 *            of acquisitions on stdout;
 *   condvar  a thread holds a mutex for a moment, then waits 200 ms on a condition
 *            variable with it, then releases it: the time in the wait is not hold time;
 *   wrapper  three mutexes made by make() (one init call) for two callers, one of them
 *            called from two places: three classes of the statistics, two of `auto`'s.
 *
 * usage: lock_classes churn|condvar|wrapper */
#include "check.h"

#define BATCH 8
#define BATCHES 1250
#define THREADS 4
#define ROUNDS 250

struct object {
    pthread_mutex_t lock;
    long count;
};

static struct object *batch;
static pthread_barrier_t start, done;

/* The one call site every object's mutex is made at. */
__attribute__((noinline)) static void make(struct object *o) {
    OK(pthread_mutex_init(&o->lock, NULL));
    o->count = 0;
}

static void *worker(void *arg) {
    unsigned seed = (unsigned)(long)arg;
    for (int b = 0; b < BATCHES; b++) {
        pthread_barrier_wait(&start);
        for (int r = 0; r < ROUNDS; r++) {
            struct object *o = &batch[rand_r(&seed) % BATCH];
            OK(pthread_mutex_lock(&o->lock));
            o->count++;
            OK(pthread_mutex_unlock(&o->lock));
        }
        pthread_barrier_wait(&done);
    }
    return NULL;
}

static void churn(void) {
    batch = calloc(BATCH, sizeof *batch);
    if (!batch) fail("calloc");
    OK(pthread_barrier_init(&start, NULL, THREADS + 1));
    OK(pthread_barrier_init(&done, NULL, THREADS + 1));
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) t[i] = start_thread(worker, (void *)(i + 1));
    long total = 0;
    for (int b = 0; b < BATCHES; b++) {
        for (int i = 0; i < BATCH; i++) make(&batch[i]);
        pthread_barrier_wait(&start);
        pthread_barrier_wait(&done);
        for (int i = 0; i < BATCH; i++) {
            total += batch[i].count;
            OK(pthread_mutex_destroy(&batch[i].lock));
        }
    }
    for (int i = 0; i < THREADS; i++) join_thread(t[i]);
    if (total != (long)THREADS * ROUNDS * BATCHES) fail("counted %ld acquisitions", total);
    printf("%ld\n", total);
}

static void condvar(void) {
    pthread_mutex_t m;
    pthread_cond_t cv;
    OK(pthread_mutex_init(&m, NULL));
    OK(pthread_cond_init(&cv, NULL));
    OK(pthread_mutex_lock(&m));
    struct timespec at = deadline_in(CLOCK_REALTIME, 200000000);
    EXPECT_RC(pthread_cond_timedwait(&cv, &m, &at), ETIMEDOUT);
    OK(pthread_mutex_unlock(&m));
    OK(pthread_cond_destroy(&cv));
}

static struct object here_a, here_b, there;

/* make() is a wrapper: make_here() and make_there() call it. make_here() is called
 * from two places, so its two mutexes are two classes of the statistics (four frames)
 * and one of `auto`'s (the call of the wrapper). The stores after each call keep its
 * frame on the stack (no tail calls). */
__attribute__((noinline)) static void make_here(struct object *o) {
    make(o);
    o->count = 1; /* unlike make_there: the two are not folded into one function */
}

__attribute__((noinline)) static void make_there(struct object *o) {
    make(o);
    o->count = 2;
}

__attribute__((noinline)) static void make_here_a(void) {
    make_here(&here_a);
    here_a.count++;
}

__attribute__((noinline)) static void make_here_b(void) {
    make_here(&here_b);
    here_b.count += 2;
}

/* Each mutex is locked a different number of times (1, 2, 3), by which the test tells
 * their classes apart. */
static void wrapper(void) {
    make_there(&there);
    make_here_a();
    make_here_b();
    struct object *each[] = {&here_a, &here_b, &here_b, &there, &there, &there};
    for (size_t i = 0; i < sizeof each / sizeof each[0]; i++) {
        OK(pthread_mutex_lock(&each[i]->lock));
        OK(pthread_mutex_unlock(&each[i]->lock));
    }
}

int main(int argc, char **argv) {
    test_begin("lock_classes", 60);
    if (argc < 2) fail("usage: lock_classes churn|condvar|wrapper");
    if (strcmp(argv[1], "churn") == 0) churn();
    else if (strcmp(argv[1], "condvar") == 0) condvar();
    else if (strcmp(argv[1], "wrapper") == 0) wrapper();
    else fail("unknown mode %s", argv[1]);
    return 0;
}
