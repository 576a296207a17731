/* Mutual exclusion with exact counts under contention, for every mutex type and both
 * initialisation paths, plus the glibc in-memory protocol seen from outside:
 * while held, __owner is the caller's TID, __lock is non-zero and __nusers is 1
 * (__count counts recursion for recursive mutexes); when free, all are 0 again and
 * __kind is unchanged (but for the priority-inheritance bit SPINMUTEX_STRATEGY=kernel
 * adds).
 *
 * usage: mutex_exclusion VARIANT...   (no argument: every variant)
 * variants: static-normal static-recursive static-errorcheck static-adaptive
 *           init-null init-default init-normal init-recursive init-errorcheck init-adaptive */
#include "check.h"

#include <stdatomic.h>

#define THREADS 4
#define ITERS 25000

/* Statically initialised mutexes are used in place, never copied. */
static pthread_mutex_t s_normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t s_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t initialised;
static pthread_mutex_t *mutex;
static int recursive;
static volatile long counter;
static atomic_int inside;
static atomic_int go;

static void enter(void) {
    if (atomic_fetch_add(&inside, 1) != 0) fail("two threads inside the critical section");
    int owner = __atomic_load_n(&mutex->__data.__owner, __ATOMIC_RELAXED);
    if (owner != gettid()) fail("__owner is %d while thread %d holds the mutex", owner, gettid());
    int word = __atomic_load_n(&mutex->__data.__lock, __ATOMIC_RELAXED);
    if (word == 0) fail("the lock word is 0 while the mutex is held");
}

static void leave(void) { atomic_fetch_sub(&inside, 1); }

static void *worker(void *arg) {
    long id = (long)arg;
    while (!atomic_load(&go)) {
    }
    for (long i = 0; i < ITERS; i++) {
        if ((i + id) % 8 == 0) {
            /* Some acquisitions by trylock, retried until it succeeds. */
            int rc;
            while ((rc = pthread_mutex_trylock(mutex)) == EBUSY) sched_yield();
            if (rc != 0) fail("pthread_mutex_trylock returned %s", err_name(rc));
        } else {
            OK(pthread_mutex_lock(mutex));
        }
        if (recursive) {
            OK(pthread_mutex_lock(mutex));
            unsigned c = mutex->__data.__count;
            if (c != 2) fail("recursive mutex locked twice has __count %u, expected 2", c);
        }
        enter();
        long v = counter;
        if ((i & 63) == 0) sched_yield(); /* widen the window a broken lock would expose */
        counter = v + 1;
        leave();
        if (recursive) OK(pthread_mutex_unlock(mutex));
        OK(pthread_mutex_unlock(mutex));
    }
    return NULL;
}

static void check_free(const char *variant, int kind) {
    pthread_mutex_t *m = mutex;
    if (m->__data.__kind == kind_in_use(kind)) kind = kind_in_use(kind);
    if (m->__data.__lock != 0 || m->__data.__owner != 0 || m->__data.__nusers != 0 ||
        m->__data.__kind != kind || (recursive && m->__data.__count != 0))
        fail("%s: free mutex has __lock %d __owner %d __nusers %u __count %u __kind %d "
             "(expected 0 0 0 0 %d)",
             variant, m->__data.__lock, m->__data.__owner, m->__data.__nusers, m->__data.__count,
             m->__data.__kind, kind);
}

static void run_variant(const char *variant) {
    int type;
    recursive = 0;
    if (strcmp(variant, "static-normal") == 0) {
        mutex = &s_normal;
        type = PTHREAD_MUTEX_NORMAL;
    } else if (strcmp(variant, "static-recursive") == 0) {
        mutex = &s_recursive;
        type = PTHREAD_MUTEX_RECURSIVE;
    } else if (strcmp(variant, "static-errorcheck") == 0) {
        mutex = &s_errorcheck;
        type = PTHREAD_MUTEX_ERRORCHECK;
    } else if (strcmp(variant, "static-adaptive") == 0) {
        mutex = &s_adaptive;
        type = PTHREAD_MUTEX_ADAPTIVE_NP;
    } else if (strcmp(variant, "init-null") == 0) {
        mutex = &initialised;
        memset(mutex, 0xa5, sizeof *mutex); /* init must not depend on prior contents */
        OK(pthread_mutex_init(mutex, NULL));
        type = PTHREAD_MUTEX_NORMAL;
    } else if (strcmp(variant, "init-default") == 0) {
        mutex = &initialised;
        memset(mutex, 0xa5, sizeof *mutex);
        pthread_mutexattr_t a;
        OK(pthread_mutexattr_init(&a));
        OK(pthread_mutex_init(mutex, &a));
        OK(pthread_mutexattr_destroy(&a));
        type = PTHREAD_MUTEX_DEFAULT;
    } else if (strcmp(variant, "init-normal") == 0) {
        mutex = &initialised;
        memset(mutex, 0xa5, sizeof *mutex);
        init_typed(mutex, PTHREAD_MUTEX_NORMAL);
        type = PTHREAD_MUTEX_NORMAL;
    } else if (strcmp(variant, "init-recursive") == 0) {
        mutex = &initialised;
        memset(mutex, 0xa5, sizeof *mutex);
        init_typed(mutex, PTHREAD_MUTEX_RECURSIVE);
        type = PTHREAD_MUTEX_RECURSIVE;
    } else if (strcmp(variant, "init-errorcheck") == 0) {
        mutex = &initialised;
        memset(mutex, 0xa5, sizeof *mutex);
        init_typed(mutex, PTHREAD_MUTEX_ERRORCHECK);
        type = PTHREAD_MUTEX_ERRORCHECK;
    } else if (strcmp(variant, "init-adaptive") == 0) {
        mutex = &initialised;
        memset(mutex, 0xa5, sizeof *mutex);
        init_typed(mutex, PTHREAD_MUTEX_ADAPTIVE_NP);
        type = PTHREAD_MUTEX_ADAPTIVE_NP;
    } else {
        fail("unknown variant %s", variant);
    }
    recursive = type == PTHREAD_MUTEX_RECURSIVE;
    int kind = mutex->__data.__kind;
    if ((kind & 3) != type) fail("%s: __kind %d does not carry type %d", variant, kind, type);
    check_free(variant, kind);

    /* Uncontended: the protocol fields while held. */
    OK(pthread_mutex_lock(mutex));
    if (mutex->__data.__owner != gettid() || mutex->__data.__nusers != 1 || mutex->__data.__lock == 0)
        fail("%s: held mutex has __lock %d __owner %d (tid %d) __nusers %u", variant,
             mutex->__data.__lock, mutex->__data.__owner, gettid(), mutex->__data.__nusers);
    if (recursive && mutex->__data.__count != 1)
        fail("%s: recursive mutex locked once has __count %u", variant, mutex->__data.__count);
    OK(pthread_mutex_unlock(mutex));
    check_free(variant, kind);

    counter = 0;
    atomic_store(&go, 0);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) t[i] = start_thread(worker, (void *)i);
    atomic_store(&go, 1);
    for (int i = 0; i < THREADS; i++) join_thread(t[i]);
    if (counter != (long)THREADS * ITERS)
        fail("%s: counter is %ld, expected %ld (lost updates: mutual exclusion broken)", variant,
             counter, (long)THREADS * ITERS);
    check_free(variant, kind);
    OK(pthread_mutex_destroy(mutex));
}

int main(int argc, char **argv) {
    test_begin("mutex_exclusion", 30);
    static const char *all[] = {"static-normal", "static-recursive", "static-errorcheck",
                                "static-adaptive", "init-null", "init-default", "init-normal",
                                "init-recursive", "init-errorcheck", "init-adaptive"};
    if (argc > 1) {
        for (int i = 1; i < argc; i++) run_variant(argv[i]);
    } else {
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) run_variant(all[i]);
    }
    return 0;
}
