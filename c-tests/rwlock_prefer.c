/* The kinds keep their meaning.
 *   reader   PTHREAD_RWLOCK_PREFER_READER_NP (the default) and PREFER_WRITER_NP (which
 *            glibc treats the same way for readers): while a reader holds the lock and
 *            a writer waits, another reader still gets in; the writer gets in once both
 *            readers have left.
 *   writer   PREFER_WRITER_NONRECURSIVE_NP: while a writer waits, a new reader stays out,
 *            and when the first reader leaves the writer goes before it.
 *   stream   PREFER_WRITER_NONRECURSIVE_NP: readers take the lock in a continuous
 *            overlapping stream (the lock is never idle by itself); a writer must still
 *            get in, every time, within a bound. */
#include "rwlock_check.h"

static void reader_preferring(int kind, const char *what) {
    pthread_rwlock_t l;
    rw_init(&l, kind, PTHREAD_PROCESS_PRIVATE);
    struct rw_holder r1;
    rw_holder_start(&r1, &l, 0);
    struct rw_waiter w, r2;
    rw_waiter_start(&w, &l, 1, 0);
    sleep_ms(30);
    rw_waiter_start(&r2, &l, 0, 0);
    if (!rw_waiter_wait_done(&r2, 5000)) fail("%s: a reader stayed out while a writer waited", what);
    OK(r2.rc);
    join_thread(r2.thread);
    if (rw_waiter_done(&w)) fail("%s: the writer got in while a reader held the lock", what);
    rw_holder_release(&r1);
    if (!rw_waiter_wait_done(&w, 5000)) fail("%s: the writer did not get in after the readers left", what);
    join_thread(w.thread);
    OK(w.rc);
    OK(pthread_rwlock_destroy(&l));
}

static void writer_preferring(void) {
    pthread_rwlock_t l;
    rw_init(&l, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, PTHREAD_PROCESS_PRIVATE);
    struct rw_holder r1;
    rw_holder_start(&r1, &l, 0);
    struct rw_waiter w, r2;
    rw_waiter_start(&w, &l, 1, 0);
    sleep_ms(30);
    rw_waiter_start(&r2, &l, 0, 0);
    sleep_ms(100);
    if (rw_waiter_done(&r2)) fail("writer-nonrecursive: a new reader got in while a writer waited");
    EXPECT_RC(pthread_rwlock_tryrdlock(&l), EBUSY);
    struct timespec ts = deadline_in(CLOCK_MONOTONIC, 20000000);
    EXPECT_RC(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
    rw_holder_release(&r1);
    if (!rw_waiter_wait_done(&w, 5000)) fail("writer-nonrecursive: the writer did not get in");
    if (!rw_waiter_wait_done(&r2, 5000)) fail("writer-nonrecursive: the reader did not get in after the writer");
    join_thread(w.thread);
    join_thread(r2.thread);
    OK(w.rc);
    OK(r2.rc);
    OK(pthread_rwlock_destroy(&l));
}

#define STREAM_READERS 4
#define WRITES 25
#define BOUND_NS 2000000000LL

static pthread_rwlock_t stream_lock;
static volatile int stop;
static int inside, max_inside;
static long reads;

static void *stream_reader(void *arg) {
    long id = (long)arg;
    sleep_ms((int)id * 3);
    while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
        OK(pthread_rwlock_rdlock(&stream_lock));
        int n = __atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
        int m = __atomic_load_n(&max_inside, __ATOMIC_SEQ_CST);
        while (n > m && !__atomic_compare_exchange_n(&max_inside, &m, n, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        }
        compute_for_us(150);
        __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&reads, 1, __ATOMIC_SEQ_CST);
        OK(pthread_rwlock_unlock(&stream_lock));
    }
    return NULL;
}

static void stream(void) {
    rw_init(&stream_lock, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, PTHREAD_PROCESS_PRIVATE);
    pthread_t t[STREAM_READERS];
    for (long i = 0; i < STREAM_READERS; i++) t[i] = start_thread(stream_reader, (void *)i);
    sleep_ms(50);
    int64_t worst = 0;
    for (int i = 0; i < WRITES; i++) {
        int64_t t0 = now_ns(CLOCK_MONOTONIC);
        OK(pthread_rwlock_wrlock(&stream_lock));
        int64_t waited = now_ns(CLOCK_MONOTONIC) - t0;
        if (__atomic_load_n(&inside, __ATOMIC_SEQ_CST) != 0) fail("stream: the writer is inside with readers");
        OK(pthread_rwlock_unlock(&stream_lock));
        if (waited > worst) worst = waited;
        if (waited > BOUND_NS) fail("stream: the writer waited %lld ms for a stream of readers", (long long)(waited / 1000000));
        sleep_ms(10);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < STREAM_READERS; i++) join_thread(t[i]);
    if (max_inside < 2) fail("stream: the readers never overlapped (max %d inside), so the test proved nothing", max_inside);
    OK(pthread_rwlock_destroy(&stream_lock));
    fprintf(stderr, "stream: %d writes, worst wait %lld us, %ld reads, up to %d readers inside\n", WRITES,
            (long long)(worst / 1000), reads, max_inside);
}

int main(int argc, char **argv) {
    test_begin("rwlock_prefer", 60);
    if (argc < 2) fail("usage: rwlock_prefer reader|writer|stream...");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "reader") == 0) {
            reader_preferring(PTHREAD_RWLOCK_PREFER_READER_NP, "prefer-reader");
            reader_preferring(PTHREAD_RWLOCK_PREFER_WRITER_NP, "prefer-writer");
        } else if (strcmp(argv[i], "writer") == 0) {
            writer_preferring();
        } else if (strcmp(argv[i], "stream") == 0) {
            stream();
        } else {
            fail("unknown case %s", argv[i]);
        }
    }
    return 0;
}
