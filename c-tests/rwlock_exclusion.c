/* Exclusion under many readers and writers, for every way to make an rwlock: both static
 * initialisers (in static and in automatic storage), pthread_rwlock_init with NULL and
 * with every kind x pshared attribute. Readers and writers use every lock entry point
 * (rdlock, tryrdlock, timedrdlock, clockrdlock on both clocks; the same for writers).
 * Inside, writers check they are alone and rewrite a 16-word record to a new
 * generation, yielding half-way now and then; readers check no writer is inside and
 * that the record is never torn. At the end the count of write sections is exact.
 *
 * Arguments: the setups to run (default: all). "many" runs 16 readers and 4 writers,
 * "one-reader" one reader and 6 writers, for each kind. */
#include "rwlock_check.h"

#define WORDS 16
#define ITERS 20000

static pthread_rwlock_t *lock;
static volatile long record[WORDS];
static long write_sections;
static int readers_inside, writers_inside;
static int nreaders = 4, nwriters = 2;
static pthread_barrier_t start;

static void take_read(int how) {
    struct timespec ts;
    int rc;
    switch (how) {
    case 0: OK(pthread_rwlock_rdlock(lock)); return;
    case 1:
        while ((rc = pthread_rwlock_tryrdlock(lock)) == EBUSY) sched_yield();
        if (rc != 0) fail("tryrdlock returned %s", err_name(rc));
        return;
    case 2:
        ts = deadline_in(CLOCK_REALTIME, 20000000000LL);
        OK(pthread_rwlock_timedrdlock(lock, &ts));
        return;
    case 3:
        ts = deadline_in(CLOCK_REALTIME, 20000000000LL);
        OK(pthread_rwlock_clockrdlock(lock, CLOCK_REALTIME, &ts));
        return;
    default:
        ts = deadline_in(CLOCK_MONOTONIC, 20000000000LL);
        OK(pthread_rwlock_clockrdlock(lock, CLOCK_MONOTONIC, &ts));
        return;
    }
}

static void take_write(int how) {
    struct timespec ts;
    int rc;
    switch (how) {
    case 0: OK(pthread_rwlock_wrlock(lock)); return;
    case 1:
        while ((rc = pthread_rwlock_trywrlock(lock)) == EBUSY) sched_yield();
        if (rc != 0) fail("trywrlock returned %s", err_name(rc));
        return;
    case 2:
        ts = deadline_in(CLOCK_REALTIME, 20000000000LL);
        OK(pthread_rwlock_timedwrlock(lock, &ts));
        return;
    case 3:
        ts = deadline_in(CLOCK_REALTIME, 20000000000LL);
        OK(pthread_rwlock_clockwrlock(lock, CLOCK_REALTIME, &ts));
        return;
    default:
        ts = deadline_in(CLOCK_MONOTONIC, 20000000000LL);
        OK(pthread_rwlock_clockwrlock(lock, CLOCK_MONOTONIC, &ts));
        return;
    }
}

static void *reader(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ITERS; i++) {
        take_read((int)((i + id) % 5));
        __atomic_add_fetch(&readers_inside, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&writers_inside, __ATOMIC_SEQ_CST) != 0) fail("a reader is inside with a writer");
        long first = record[0];
        for (int k = 1; k < WORDS; k++)
            if (record[k] != first) fail("torn record: word 0 is %ld, word %d is %ld", first, k, record[k]);
        if ((i & 255) == 0) sched_yield();
        __atomic_sub_fetch(&readers_inside, 1, __ATOMIC_SEQ_CST);
        OK(pthread_rwlock_unlock(lock));
    }
    return NULL;
}

static void *writer(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ITERS / 2; i++) {
        take_write((int)((i + id) % 5));
        if (__atomic_add_fetch(&writers_inside, 1, __ATOMIC_SEQ_CST) != 1) fail("two writers inside");
        if (__atomic_load_n(&readers_inside, __ATOMIC_SEQ_CST) != 0) fail("a writer is inside with readers");
        long next = record[0] + 1;
        for (int k = 0; k < WORDS; k++) {
            record[k] = next;
            if (k == WORDS / 2 && (i & 63) == 0) sched_yield();
        }
        write_sections++;
        __atomic_sub_fetch(&writers_inside, 1, __ATOMIC_SEQ_CST);
        OK(pthread_rwlock_unlock(lock));
    }
    return NULL;
}

static void run(pthread_rwlock_t *l, const char *what) {
    lock = l;
    write_sections = 0;
    for (int k = 0; k < WORDS; k++) record[k] = 0;
    pthread_t t[64];
    int n = 0;
    OK(pthread_barrier_init(&start, NULL, (unsigned)(nreaders + nwriters)));
    for (long i = 0; i < nreaders; i++) t[n++] = start_thread(reader, (void *)i);
    for (long i = 0; i < nwriters; i++) t[n++] = start_thread(writer, (void *)i);
    for (int i = 0; i < n; i++) join_thread(t[i]);
    OK(pthread_barrier_destroy(&start));
    long expected = (long)nwriters * (ITERS / 2);
    if (write_sections != expected || record[0] != expected)
        fail("%s: %ld write sections, record at %ld, expected %ld", what, write_sections, record[0], expected);
    /* Idle again: both kinds of try succeed. */
    OK(pthread_rwlock_trywrlock(l));
    OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_tryrdlock(l));
    OK(pthread_rwlock_unlock(l));
}

static pthread_rwlock_t static_default = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t static_writer = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static void setup(const char *name) {
    if (strcmp(name, "static-default") == 0) {
        run(&static_default, name);
    } else if (strcmp(name, "static-writer-nonrecursive") == 0) {
        run(&static_writer, name);
    } else if (strcmp(name, "automatic") == 0) {
        /* Automatic storage: padding bytes are whatever was on the stack. */
        volatile char dirt[256];
        memset((char *)dirt, 0xa5, sizeof dirt);
        pthread_rwlock_t a = PTHREAD_RWLOCK_INITIALIZER;
        run(&a, "automatic default");
        pthread_rwlock_t b = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
        run(&b, "automatic writer-nonrecursive");
    } else if (strcmp(name, "init-null") == 0) {
        pthread_rwlock_t l;
        memset(&l, 0xff, sizeof l);
        OK(pthread_rwlock_init(&l, NULL));
        run(&l, name);
        OK(pthread_rwlock_destroy(&l));
    } else if (strcmp(name, "init-attrs") == 0) {
        for (int k = 0; k < 3; k++) {
            for (int shared = 0; shared < 2; shared++) {
                pthread_rwlock_t l;
                memset(&l, 0x5a, sizeof l);
                rw_init(&l, rw_kinds[k], shared ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE);
                char what[96];
                snprintf(what, sizeof what, "init %s %s", rw_kind_names[k], shared ? "shared" : "private");
                run(&l, what);
                OK(pthread_rwlock_destroy(&l));
            }
        }
    } else if (strcmp(name, "one-reader") == 0) {
        /* The reverse: many writers and one reader. */
        nreaders = 1;
        nwriters = 6;
        pthread_rwlock_t l;
        for (int k = 0; k < 3; k++) {
            rw_init(&l, rw_kinds[k], PTHREAD_PROCESS_PRIVATE);
            run(&l, rw_kind_names[k]);
        }
        nreaders = 4;
        nwriters = 2;
    } else if (strcmp(name, "many") == 0) {
        nreaders = 16;
        nwriters = 4;
        pthread_rwlock_t l;
        for (int k = 0; k < 3; k++) {
            rw_init(&l, rw_kinds[k], PTHREAD_PROCESS_PRIVATE);
            run(&l, rw_kind_names[k]);
        }
        nreaders = 4;
        nwriters = 2;
    } else {
        fail("unknown setup %s", name);
    }
}

int main(int argc, char **argv) {
    test_begin("rwlock_exclusion", 60);
    static const char *all[] = {"static-default", "static-writer-nonrecursive", "automatic", "init-null", "init-attrs"};
    if (argc > 1) {
        for (int i = 1; i < argc; i++) setup(argv[i]);
    } else {
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) setup(all[i]);
    }
    return 0;
}
