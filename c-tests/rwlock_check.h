/* Helpers shared by the rwlock tests (not a test itself: build.rs compiles only *.c and
 * *.cpp). Builds on check.h. */
#ifndef SPINMUTEX_RWLOCK_CHECK_H
#define SPINMUTEX_RWLOCK_CHECK_H

#include "check.h"

/* The three kinds glibc accepts, by their attribute value. */
static CHECK_UNUSED const int rw_kinds[3] = {PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_RWLOCK_PREFER_WRITER_NP,
                                             PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP};
static CHECK_UNUSED const char *rw_kind_names[3] = {"prefer-reader", "prefer-writer", "prefer-writer-nonrecursive"};

/* Initialises `l` through an attribute with `kind` and `pshared`. */
static CHECK_UNUSED void rw_init(pthread_rwlock_t *l, int kind, int pshared) {
    pthread_rwlockattr_t a;
    OK(pthread_rwlockattr_init(&a));
    OK(pthread_rwlockattr_setkind_np(&a, kind));
    OK(pthread_rwlockattr_setpshared(&a, pshared));
    OK(pthread_rwlock_init(l, &a));
    OK(pthread_rwlockattr_destroy(&a));
}

/* A thread that holds an rwlock (as reader or writer) until told to release it. */
struct rw_holder {
    pthread_t thread;
    pthread_rwlock_t *lock;
    int write;
    volatile int state; /* 0 starting, 1 holding, 2 asked to release, 3 released */
};

static CHECK_UNUSED void *rw_holder_main(void *arg) {
    struct rw_holder *h = (struct rw_holder *)arg;
    int rc = h->write ? pthread_rwlock_wrlock(h->lock) : pthread_rwlock_rdlock(h->lock);
    if (rc != 0) fail("holder: %s returned %s", h->write ? "wrlock" : "rdlock", err_name(rc));
    __atomic_store_n(&h->state, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&h->state, __ATOMIC_SEQ_CST) != 2) usleep(100);
    rc = pthread_rwlock_unlock(h->lock);
    if (rc != 0) fail("holder: unlock returned %s", err_name(rc));
    __atomic_store_n(&h->state, 3, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Starts a holder and waits until it holds `l`. */
static CHECK_UNUSED void rw_holder_start(struct rw_holder *h, pthread_rwlock_t *l, int write) {
    h->lock = l;
    h->write = write;
    h->state = 0;
    h->thread = start_thread(rw_holder_main, h);
    while (__atomic_load_n(&h->state, __ATOMIC_SEQ_CST) == 0) usleep(100);
}

static CHECK_UNUSED void rw_holder_release(struct rw_holder *h) {
    __atomic_store_n(&h->state, 2, __ATOMIC_SEQ_CST);
    join_thread(h->thread);
}

/* A thread blocked in a lock call: `started` is set just before the call, `done` after. */
struct rw_waiter {
    pthread_t thread;
    pthread_rwlock_t *lock;
    int write;
    int timed_ms; /* >0: clockrdlock/clockwrlock on CLOCK_MONOTONIC with this timeout */
    int hold_ms;  /* after acquiring, hold this long before unlocking */
    volatile int started, done, rc;
};

static CHECK_UNUSED void *rw_waiter_main(void *arg) {
    struct rw_waiter *w = (struct rw_waiter *)arg;
    __atomic_store_n(&w->started, 1, __ATOMIC_SEQ_CST);
    int rc;
    if (w->timed_ms > 0) {
        struct timespec ts = deadline_in(CLOCK_MONOTONIC, (int64_t)w->timed_ms * 1000000);
        rc = w->write ? pthread_rwlock_clockwrlock(w->lock, CLOCK_MONOTONIC, &ts)
                      : pthread_rwlock_clockrdlock(w->lock, CLOCK_MONOTONIC, &ts);
    } else {
        rc = w->write ? pthread_rwlock_wrlock(w->lock) : pthread_rwlock_rdlock(w->lock);
    }
    w->rc = rc;
    __atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
    if (rc == 0) {
        if (w->hold_ms > 0) sleep_ms(w->hold_ms);
        int u = pthread_rwlock_unlock(w->lock);
        if (u != 0) fail("waiter: unlock returned %s", err_name(u));
    }
    return NULL;
}

static CHECK_UNUSED void rw_waiter_start(struct rw_waiter *w, pthread_rwlock_t *l, int write, int timed_ms) {
    memset((void *)w, 0, sizeof *w);
    w->lock = l;
    w->write = write;
    w->timed_ms = timed_ms;
    w->thread = start_thread(rw_waiter_main, w);
    while (!__atomic_load_n(&w->started, __ATOMIC_SEQ_CST)) usleep(100);
}

static CHECK_UNUSED int rw_waiter_done(struct rw_waiter *w) { return __atomic_load_n(&w->done, __ATOMIC_SEQ_CST); }

/* Waits up to `ms` for the waiter to return from its lock call; 1 if it did. */
static CHECK_UNUSED int rw_waiter_wait_done(struct rw_waiter *w, int ms) {
    for (int i = 0; i < ms * 10 && !rw_waiter_done(w); i++) usleep(100);
    return rw_waiter_done(w);
}

#endif
