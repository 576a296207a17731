/* Mutex memory freed without pthread_mutex_destroy and reused. Each round mallocs a
 * mutex (often at the address the previous round freed), makes it a mutex of the
 * round's kind (pthread_mutex_init with a type, or a static initialiser copied in,
 * over whatever bytes were there), lets threads contend on it with an exact count,
 * checks the behaviour that tells the types apart (EDEADLK / recursion / EBUSY), and
 * frees it without destroy, sometimes while it is still locked. Between rounds the
 * memory is also reused as plain data. A library that remembered anything about an
 * address (type, waiters, statistics) beyond the mutex's own bytes would show here. */
#include "check.h"

#define ROUNDS 300
#define THREADS 2
#define ITERS 2000

static pthread_mutex_t *cur;
static volatile long counter;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        OK(pthread_mutex_lock(cur));
        long v = counter;
        if ((i & 63) == 0) sched_yield();
        counter = v + 1;
        OK(pthread_mutex_unlock(cur));
    }
    return NULL;
}

static int do_trylock_other_rc;
static void *trylock_other(void *arg) {
    (void)arg;
    do_trylock_other_rc = pthread_mutex_trylock(cur);
    if (do_trylock_other_rc == 0) OK(pthread_mutex_unlock(cur));
    return NULL;
}

int main(void) {
    test_begin("reuse_memory", 30);
    int rc;
    static const pthread_mutex_t inits[4] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
                                             PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP, PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP};
    static const int types[4] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP};
    for (int round = 0; round < ROUNDS; round++) {
        int type_ix = (round * 3 + round / 4) % 4; /* vary the type seen at each address */
        int use_static = (round / 2) % 2;
        /* Sometimes an array, so that a mutex lands inside a previous mutex's bytes. */
        int in_array = round % 5 == 4;
        char *block = malloc(in_array ? 3 * sizeof(pthread_mutex_t) : sizeof(pthread_mutex_t));
        if (!block) fail("malloc");
        cur = (pthread_mutex_t *)(in_array ? block + sizeof(pthread_mutex_t) + 8 * (round % 3) : block);
        if (use_static) {
            memcpy(cur, &inits[type_ix], sizeof *cur);
        } else {
            init_typed(cur, types[type_ix]);
        }
        counter = 0;
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++) t[i] = start_thread(worker, NULL);
        for (int i = 0; i < THREADS; i++) join_thread(t[i]);
        if (counter != (long)THREADS * ITERS)
            fail("round %d (type %d, %s): counter %ld, expected %ld", round, types[type_ix], use_static ? "static" : "init",
                 counter, (long)THREADS * ITERS);

        /* The type is the one given this round, not one remembered for the address. */
        OK(pthread_mutex_lock(cur));
        switch (types[type_ix]) {
        case PTHREAD_MUTEX_RECURSIVE:
            OK(pthread_mutex_lock(cur));
            if (cur->__data.__count != 2) fail("round %d: recursive __count %u, expected 2", round, cur->__data.__count);
            OK(pthread_mutex_trylock(cur));
            OK(pthread_mutex_unlock(cur));
            OK(pthread_mutex_unlock(cur));
            break;
        case PTHREAD_MUTEX_ERRORCHECK:
            rc = pthread_mutex_lock(cur);
            if (rc != EDEADLK) fail("round %d: errorcheck relock returned %s", round, err_name(rc));
            EXPECT_RC(pthread_mutex_trylock(cur), EBUSY);
            break;
        default:
            rc = pthread_mutex_trylock(cur);
            if (rc != EBUSY) fail("round %d: type %d trylock of own lock returned %s", round, types[type_ix], err_name(rc));
            break;
        }
        if (cur->__data.__owner != gettid()) fail("round %d: __owner %d, expected %d", round, cur->__data.__owner, gettid());
        pthread_t o = start_thread(trylock_other, NULL);
        join_thread(o);
        if (do_trylock_other_rc != EBUSY) fail("round %d: another thread's trylock returned %s", round, err_name(do_trylock_other_rc));
        if (round % 3 != 0) {
            OK(pthread_mutex_unlock(cur));
            if (types[type_ix] == PTHREAD_MUTEX_RECURSIVE || types[type_ix] == PTHREAD_MUTEX_ERRORCHECK)
                EXPECT_RC(pthread_mutex_unlock(cur), EPERM);
        } /* else: freed while still locked */
        free(block);

        /* The memory as plain data for a while. */
        if (round % 4 == 1) {
            unsigned char *junk = malloc(sizeof(pthread_mutex_t));
            if (!junk) fail("malloc");
            for (size_t k = 0; k < sizeof(pthread_mutex_t); k++) junk[k] = (unsigned char)(round * 31 + k * 7);
            free(junk);
        }
    }
    return 0;
}
