/* Statistics of reader-writer locks, for tests/observe.rs.
 *
 *   churn    makes and destroys 2,000 rwlocks at one call site, in batches of 8 that
 *            4 threads take at random, mostly for reading (rdlock, and clockrdlock with
 *            a far deadline) and one time in 4 for writing (wrlock, clockwrlock);
 *            prints "reads=R writes=W" (the exact numbers of acquisitions) on stdout;
 *   hold     4 readers hold one rwlock together for 60 ms each, then a writer holds it
 *            for 40 ms; prints "readers=4 read_hold_ms=60 write_hold_ms=40";
 *   static   a statically initialised rwlock, read-locked 3 times and write-locked
 *            twice from one place; plus a mutex, locked once: the report lists both;
 *   timeout  a writer holds the lock while a reader and a writer time out on it.
 *
 * usage: rwlock_classes churn|hold|static|timeout */
#include "rwlock_check.h"

#define BATCH 8
#define BATCHES 250
#define THREADS 4
#define ROUNDS 400

struct object {
    pthread_rwlock_t lock;
    long value;
};

static struct object *batch;
static pthread_barrier_t start, done;
static long reads[THREADS], writes[THREADS];

/* The one call site every object's rwlock is made at. */
__attribute__((noinline)) static void make(struct object *o) {
    OK(pthread_rwlock_init(&o->lock, NULL));
    o->value = 0;
}

static void *worker(void *arg) {
    long me = (long)arg;
    unsigned seed = (unsigned)me + 1;
    for (int b = 0; b < BATCHES; b++) {
        pthread_barrier_wait(&start);
        for (int r = 0; r < ROUNDS; r++) {
            struct object *o = &batch[rand_r(&seed) % BATCH];
            unsigned pick = (unsigned)rand_r(&seed);
            struct timespec far = deadline_in(CLOCK_MONOTONIC, 10000000000LL);
            if (pick % 4 == 0) {
                if (pick % 8 == 0) OK(pthread_rwlock_wrlock(&o->lock));
                else OK(pthread_rwlock_clockwrlock(&o->lock, CLOCK_MONOTONIC, &far));
                o->value++;
                writes[me]++;
            } else {
                if (pick % 8 == 1) OK(pthread_rwlock_rdlock(&o->lock));
                else OK(pthread_rwlock_clockrdlock(&o->lock, CLOCK_MONOTONIC, &far));
                if (o->value < 0) fail("torn value");
                reads[me]++;
            }
            OK(pthread_rwlock_unlock(&o->lock));
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
    for (long i = 0; i < THREADS; i++) t[i] = start_thread(worker, (void *)i);
    for (int b = 0; b < BATCHES; b++) {
        for (int i = 0; i < BATCH; i++) make(&batch[i]);
        pthread_barrier_wait(&start);
        pthread_barrier_wait(&done);
        for (int i = 0; i < BATCH; i++) OK(pthread_rwlock_destroy(&batch[i].lock));
    }
    long r = 0, w = 0;
    for (int i = 0; i < THREADS; i++) {
        join_thread(t[i]);
        r += reads[i];
        w += writes[i];
    }
    if (r + w != (long)THREADS * ROUNDS * BATCHES) fail("counted %ld acquisitions", r + w);
    printf("reads=%ld writes=%ld\n", r, w);
}

static pthread_rwlock_t held;
static pthread_barrier_t together;

static void *reader(void *arg) {
    (void)arg;
    OK(pthread_rwlock_rdlock(&held));
    pthread_barrier_wait(&together); /* all four hold it at once */
    sleep_ms(60);
    OK(pthread_rwlock_unlock(&held));
    return NULL;
}

static void hold(void) {
    OK(pthread_rwlock_init(&held, NULL));
    OK(pthread_barrier_init(&together, NULL, 4));
    pthread_t t[4];
    for (long i = 0; i < 4; i++) t[i] = start_thread(reader, NULL);
    for (int i = 0; i < 4; i++) join_thread(t[i]);
    OK(pthread_rwlock_wrlock(&held));
    sleep_ms(40);
    OK(pthread_rwlock_unlock(&held));
    printf("readers=4 read_hold_ms=60 write_hold_ms=40\n");
}

static pthread_rwlock_t statically = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;

static void static_init(void) {
    for (int i = 0; i < 5; i++) {
        if (i < 3) OK(pthread_rwlock_rdlock(&statically));
        else OK(pthread_rwlock_wrlock(&statically));
        OK(pthread_rwlock_unlock(&statically));
    }
    OK(pthread_mutex_lock(&plain));
    OK(pthread_mutex_unlock(&plain));
}

static void timeout(void) {
    pthread_rwlock_t l;
    OK(pthread_rwlock_init(&l, NULL));
    struct rw_holder h;
    rw_holder_start(&h, &l, 1);
    struct timespec soon = deadline_in(CLOCK_MONOTONIC, 20000000);
    EXPECT_RC(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &soon), ETIMEDOUT);
    soon = deadline_in(CLOCK_MONOTONIC, 20000000);
    EXPECT_RC(pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &soon), ETIMEDOUT);
    rw_holder_release(&h);
    OK(pthread_rwlock_destroy(&l));
}

int main(int argc, char **argv) {
    test_begin("rwlock_classes", 60);
    if (argc < 2) fail("usage: rwlock_classes churn|hold|static|timeout");
    if (strcmp(argv[1], "churn") == 0) churn();
    else if (strcmp(argv[1], "hold") == 0) hold();
    else if (strcmp(argv[1], "static") == 0) static_init();
    else if (strcmp(argv[1], "timeout") == 0) timeout();
    else fail("unknown mode %s", argv[1]);
    return 0;
}
