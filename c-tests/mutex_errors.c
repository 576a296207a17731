/* Every error code of the pthread_mutex_* family, exactly as glibc 2.36 returns it.
 *
 * usage: mutex_errors GROUP...   (no argument: every group)
 *   busy      EBUSY: trylock of a mutex held by another thread (every type) or by the
 *             caller (normal, adaptive, errorcheck); destroy of a locked mutex; destroy
 *             while a thread waits on a condvar with it
 *   deadlk    EDEADLK: errorcheck relock via lock, timedlock and clocklock
 *   perm      EPERM: errorcheck/recursive unlock by a non-owner and of an unlocked mutex;
 *             (normal/adaptive unlock by a non-owner is allowed and frees the mutex)
 *   eagain    EAGAIN: recursion count overflow (lock, trylock, timedlock)
 *   timespec  EINVAL for tv_nsec >= 1e9 or < 0, only when the call would block
 *   clock     EINVAL for a clock clocklock does not support, even when free
 *   timeout   ETIMEDOUT (also for tv_sec < 0); a free mutex is taken even with a
 *             deadline in the past; a deadline of LONG_MAX seconds just waits
 *   trylock   trylock per type; recursive trylock on the own lock counts up
 *   destroyed EINVAL from every call on a destroyed mutex; init makes it usable again */
#include "check.h"

#include <limits.h>

static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
                            PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP};
static const char *type_names[] = {"normal", "recursive", "errorcheck", "adaptive"};
#define NTYPES 4

/* Runs `fn(m)` in a fresh thread and returns what it returned. */
struct call {
    int (*fn)(pthread_mutex_t *);
    pthread_mutex_t *m;
    int rc;
};
static void *call_main(void *arg) {
    struct call *c = (struct call *)arg;
    c->rc = c->fn(c->m);
    return NULL;
}
static int in_other_thread(int (*fn)(pthread_mutex_t *), pthread_mutex_t *m) {
    struct call c = {fn, m, -1};
    join_thread(start_thread(call_main, &c));
    return c.rc;
}

/* ---- EBUSY ---- */

static pthread_cond_t busy_cv = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t busy_cv_mutex = PTHREAD_MUTEX_INITIALIZER;
static int busy_waiting, busy_go;

static void *cond_waiter(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&busy_cv_mutex));
    busy_waiting = 1;
    while (!busy_go) OK(pthread_cond_wait(&busy_cv, &busy_cv_mutex));
    OK(pthread_mutex_unlock(&busy_cv_mutex));
    return NULL;
}

static void group_busy(void) {
    for (int i = 0; i < NTYPES; i++) {
        pthread_mutex_t m;
        init_typed(&m, types[i]);
        struct holder h;
        holder_start(&h, &m, 0);
        int rc = pthread_mutex_trylock(&m);
        if (rc != EBUSY) fail("%s: trylock of a mutex held by another thread returned %s", type_names[i], err_name(rc));
        holder_release(&h);
        OK(pthread_mutex_trylock(&m));
        if (types[i] != PTHREAD_MUTEX_RECURSIVE) {
            rc = pthread_mutex_trylock(&m);
            if (rc != EBUSY) fail("%s: trylock of the caller's own lock returned %s", type_names[i], err_name(rc));
        }
        /* Destroy of a locked mutex: EBUSY, and the mutex keeps working. */
        rc = pthread_mutex_destroy(&m);
        if (rc != EBUSY) fail("%s: destroy of a locked mutex returned %s", type_names[i], err_name(rc));
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_destroy(&m));
    }

    /* Destroy while another thread waits on a condvar with the mutex: EBUSY. */
    pthread_t t = start_thread(cond_waiter, NULL);
    for (;;) {
        OK(pthread_mutex_lock(&busy_cv_mutex)); /* succeeds only while the waiter waits */
        int w = busy_waiting;
        OK(pthread_mutex_unlock(&busy_cv_mutex));
        if (w) break;
        usleep(500);
    }
    int rc = pthread_mutex_destroy(&busy_cv_mutex);
    if (rc != EBUSY) fail("destroy of a mutex a condvar waiter uses returned %s", err_name(rc));
    OK(pthread_mutex_lock(&busy_cv_mutex));
    busy_go = 1;
    OK(pthread_cond_broadcast(&busy_cv));
    OK(pthread_mutex_unlock(&busy_cv_mutex));
    join_thread(t);
    OK(pthread_mutex_destroy(&busy_cv_mutex));
    OK(pthread_cond_destroy(&busy_cv));
}

/* ---- EDEADLK ---- */

static void group_deadlk(void) {
    pthread_mutex_t m;
    init_typed(&m, PTHREAD_MUTEX_ERRORCHECK);
    OK(pthread_mutex_lock(&m));
    EXPECT_RC(pthread_mutex_lock(&m), EDEADLK);
    struct timespec ts = deadline_in(CLOCK_REALTIME, 5000000000LL);
    EXPECT_RC(pthread_mutex_timedlock(&m, &ts), EDEADLK);
    ts = deadline_in(CLOCK_MONOTONIC, 5000000000LL);
    EXPECT_RC(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts), EDEADLK);
    ts = deadline_in(CLOCK_REALTIME, 5000000000LL);
    EXPECT_RC(pthread_mutex_clocklock(&m, CLOCK_REALTIME, &ts), EDEADLK);
    /* The ownership check comes before the timeout is looked at. */
    struct timespec bad = {ts.tv_sec, 1000000000};
    EXPECT_RC(pthread_mutex_timedlock(&m, &bad), EDEADLK);
    struct timespec past = {0, 0};
    EXPECT_RC(pthread_mutex_timedlock(&m, &past), EDEADLK);
    /* Still held exactly once. */
    if (m.__data.__owner != gettid()) fail("errorcheck mutex lost its owner after EDEADLK");
    OK(pthread_mutex_unlock(&m));
    EXPECT_RC(pthread_mutex_unlock(&m), EPERM);

    /* The static initialiser gives the same behaviour. */
    static pthread_mutex_t s = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    OK(pthread_mutex_lock(&s));
    EXPECT_RC(pthread_mutex_lock(&s), EDEADLK);
    ts = deadline_in(CLOCK_REALTIME, 5000000000LL);
    EXPECT_RC(pthread_mutex_timedlock(&s, &ts), EDEADLK);
    OK(pthread_mutex_unlock(&s));
    OK(pthread_mutex_destroy(&m));
}

/* ---- EPERM ---- */

static int do_unlock(pthread_mutex_t *m) { return pthread_mutex_unlock(m); }
static int do_lock(pthread_mutex_t *m) { return pthread_mutex_lock(m); }
static int do_trylock(pthread_mutex_t *m) { return pthread_mutex_trylock(m); }

static void group_perm(void) {
    int perm_types[] = {PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_RECURSIVE};
    const char *names[] = {"errorcheck", "recursive"};
    for (int i = 0; i < 2; i++) {
        pthread_mutex_t m;
        init_typed(&m, perm_types[i]);
        /* Unlock of an unlocked mutex. */
        int rc = pthread_mutex_unlock(&m);
        if (rc != EPERM) fail("%s: unlock of an unlocked mutex returned %s", names[i], err_name(rc));
        /* Unlock by a thread that does not own it, and the owner still owns it after. */
        OK(pthread_mutex_lock(&m));
        rc = in_other_thread(do_unlock, &m);
        if (rc != EPERM) fail("%s: unlock by a non-owner returned %s", names[i], err_name(rc));
        rc = in_other_thread(do_trylock, &m);
        if (rc != EBUSY) fail("%s: after a refused unlock, trylock by another thread returned %s", names[i], err_name(rc));
        OK(pthread_mutex_unlock(&m));
        rc = pthread_mutex_unlock(&m);
        if (rc != EPERM) fail("%s: second unlock returned %s", names[i], err_name(rc));
        /* Another thread locked it and exited: unlock from here is still EPERM. */
        rc = in_other_thread(do_lock, &m);
        if (rc != 0) fail("%s: lock in another thread returned %s", names[i], err_name(rc));
        rc = pthread_mutex_unlock(&m);
        if (rc != EPERM) fail("%s: unlock of a mutex owned by an exited thread returned %s", names[i], err_name(rc));
        /* Re-initialise the mutex rather than destroy it (it is still locked). */
        init_typed(&m, perm_types[i]);
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_destroy(&m));
    }
    /* Normal and adaptive mutexes are not checked: glibc lets any thread unlock them
     * (some programs rely on it), which frees the mutex. */
    int free_types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ADAPTIVE_NP};
    for (int i = 0; i < 2; i++) {
        pthread_mutex_t m;
        init_typed(&m, free_types[i]);
        OK(pthread_mutex_lock(&m));
        int rc = in_other_thread(do_unlock, &m);
        if (rc != 0) fail("type %d: unlock by a non-owner returned %s (glibc allows it)", free_types[i], err_name(rc));
        if (m.__data.__lock != 0 || m.__data.__owner != 0 || m.__data.__nusers != 0)
            fail("type %d: after a non-owner unlock __lock %d __owner %d __nusers %u", free_types[i], m.__data.__lock,
                 m.__data.__owner, m.__data.__nusers);
        rc = in_other_thread(do_trylock, &m);
        if (rc != 0) fail("type %d: trylock after a non-owner unlock returned %s", free_types[i], err_name(rc));
        /* that thread exited holding it; unlock it from here, then it is free again */
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_destroy(&m));
    }

    static pthread_mutex_t se = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    static pthread_mutex_t sr = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    EXPECT_RC(pthread_mutex_unlock(&se), EPERM);
    EXPECT_RC(pthread_mutex_unlock(&sr), EPERM);
    OK(pthread_mutex_lock(&se));
    OK(pthread_mutex_lock(&sr));
    EXPECT_RC(in_other_thread(do_unlock, &se), EPERM);
    EXPECT_RC(in_other_thread(do_unlock, &sr), EPERM);
    OK(pthread_mutex_unlock(&se));
    OK(pthread_mutex_unlock(&sr));
}

/* ---- EAGAIN ---- */

static void overflow_with(const char *how, int (*relock)(pthread_mutex_t *), pthread_mutex_t *m) {
    OK(pthread_mutex_lock(m));
    if (m->__data.__count != 1) fail("recursive __count is %u after one lock", m->__data.__count);
    m->__data.__count = UINT32_MAX - 1; /* as if locked UINT_MAX-1 times */
    int rc = relock(m);
    if (rc != 0) fail("%s: lock at count UINT_MAX-1 returned %s", how, err_name(rc));
    if (m->__data.__count != UINT32_MAX) fail("%s: __count is %u, expected UINT_MAX", how, m->__data.__count);
    rc = relock(m);
    if (rc != EAGAIN) fail("%s: lock at count UINT_MAX returned %s, expected EAGAIN", how, err_name(rc));
    if (m->__data.__count != UINT32_MAX) fail("%s: __count changed to %u by the refused lock", how, m->__data.__count);
    if (m->__data.__owner != gettid()) fail("%s: owner changed by the refused lock", how);
    m->__data.__count = 1;
    OK(pthread_mutex_unlock(m));
    EXPECT_RC(pthread_mutex_unlock(m), EPERM);
    /* Free and usable by others. */
    EXPECT_RC(in_other_thread(do_trylock, m), 0);
    init_typed(m, PTHREAD_MUTEX_RECURSIVE);
}

static int do_timedlock(pthread_mutex_t *m) {
    struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000LL);
    return pthread_mutex_timedlock(m, &ts);
}
static int do_clocklock(pthread_mutex_t *m) {
    struct timespec ts = deadline_in(CLOCK_MONOTONIC, 1000000000LL);
    return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
}

static void group_eagain(void) {
    pthread_mutex_t m;
    init_typed(&m, PTHREAD_MUTEX_RECURSIVE);
    overflow_with("lock", do_lock, &m);
    overflow_with("trylock", do_trylock, &m);
    overflow_with("timedlock", do_timedlock, &m);
    overflow_with("clocklock", do_clocklock, &m);
    static pthread_mutex_t s = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    overflow_with("static lock", do_lock, &s);
}

/* ---- EINVAL for a bad timespec ---- */

static void group_timespec(void) {
    const long bad_nsec[] = {1000000000L, -1L, 2000000000L};
    for (int i = 0; i < NTYPES; i++) {
        for (int b = 0; b < 3; b++) {
            pthread_mutex_t m;
            init_typed(&m, types[i]);
            struct timespec bad = {time(NULL) + 5, bad_nsec[b]};
            /* Free: taken, 0, no complaint about the timespec. */
            int rc = pthread_mutex_timedlock(&m, &bad);
            if (rc != 0) fail("%s: timedlock of a free mutex with tv_nsec %ld returned %s", type_names[i], bad_nsec[b], err_name(rc));
            if (m.__data.__owner != gettid()) fail("%s: free mutex not owned after timedlock with bad timespec", type_names[i]);
            if (types[i] == PTHREAD_MUTEX_RECURSIVE) {
                rc = pthread_mutex_timedlock(&m, &bad); /* would not block either */
                if (rc != 0) fail("recursive: timedlock of own lock with tv_nsec %ld returned %s", bad_nsec[b], err_name(rc));
                OK(pthread_mutex_unlock(&m));
            }
            OK(pthread_mutex_unlock(&m));
            rc = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad);
            if (rc != 0) fail("%s: clocklock of a free mutex with tv_nsec %ld returned %s", type_names[i], bad_nsec[b], err_name(rc));
            OK(pthread_mutex_unlock(&m));

            /* Held by another thread: EINVAL, promptly, without taking it. */
            struct holder h;
            holder_start(&h, &m, 0);
            int64_t t0 = now_ns(CLOCK_MONOTONIC);
            rc = pthread_mutex_timedlock(&m, &bad);
            if (rc != EINVAL) fail("%s: timedlock of a held mutex with tv_nsec %ld returned %s", type_names[i], bad_nsec[b], err_name(rc));
            rc = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad);
            if (rc != EINVAL) fail("%s: clocklock(MONOTONIC) of a held mutex with tv_nsec %ld returned %s", type_names[i], bad_nsec[b], err_name(rc));
            rc = pthread_mutex_clocklock(&m, CLOCK_REALTIME, &bad);
            if (rc != EINVAL) fail("%s: clocklock(REALTIME) of a held mutex with tv_nsec %ld returned %s", type_names[i], bad_nsec[b], err_name(rc));
            int64_t took = now_ns(CLOCK_MONOTONIC) - t0;
            if (took > 1000000000LL) fail("%s: EINVAL took %lld ms", type_names[i], (long long)(took / 1000000));
            holder_release(&h);
            /* Nothing was left behind: lock, unlock and destroy work. */
            OK(pthread_mutex_lock(&m));
            OK(pthread_mutex_unlock(&m));
            OK(pthread_mutex_destroy(&m));
        }
    }
}

/* ---- EINVAL for an unsupported clock ---- */

static void group_clock(void) {
    const clockid_t bad_clocks[] = {CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
                                    CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_REALTIME_COARSE,
                                    -1, 12345};
    for (int i = 0; i < NTYPES; i++) {
        for (size_t c = 0; c < sizeof bad_clocks / sizeof *bad_clocks; c++) {
            pthread_mutex_t m;
            init_typed(&m, types[i]);
            struct timespec ts = deadline_in(CLOCK_MONOTONIC, 1000000000LL);
            int rc = pthread_mutex_clocklock(&m, bad_clocks[c], &ts);
            if (rc != EINVAL) fail("%s: clocklock(clock %d) of a free mutex returned %s", type_names[i], (int)bad_clocks[c], err_name(rc));
            /* Not taken. */
            if (m.__data.__lock != 0 || m.__data.__owner != 0) fail("%s: refused clocklock left the mutex locked", type_names[i]);
            rc = in_other_thread(do_trylock, &m);
            if (rc != 0) fail("%s: trylock after refused clocklock returned %s", type_names[i], err_name(rc));
            init_typed(&m, types[i]);
            /* Held by self / others: EINVAL too. */
            OK(pthread_mutex_lock(&m));
            rc = pthread_mutex_clocklock(&m, bad_clocks[c], &ts);
            if (rc != EINVAL) fail("%s: clocklock(clock %d) of own lock returned %s", type_names[i], (int)bad_clocks[c], err_name(rc));
            OK(pthread_mutex_unlock(&m));
            OK(pthread_mutex_destroy(&m));
        }
    }
}

/* ---- ETIMEDOUT and deadlines in the past ---- */

static void group_timeout(void) {
    for (int i = 0; i < NTYPES; i++) {
        pthread_mutex_t m;
        init_typed(&m, types[i]);
        struct timespec epoch = {0, 0};
        struct timespec past_rt = deadline_in(CLOCK_REALTIME, -1000000000LL);
        struct timespec past_mono = deadline_in(CLOCK_MONOTONIC, -1000000000LL);
        /* Free: taken even though the deadline has passed. */
        EXPECT_RC(pthread_mutex_timedlock(&m, &epoch), 0);
        OK(pthread_mutex_unlock(&m));
        EXPECT_RC(pthread_mutex_timedlock(&m, &past_rt), 0);
        OK(pthread_mutex_unlock(&m));
        EXPECT_RC(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &past_mono), 0);
        OK(pthread_mutex_unlock(&m));
        EXPECT_RC(pthread_mutex_clocklock(&m, CLOCK_REALTIME, &epoch), 0);
        OK(pthread_mutex_unlock(&m));
        EXPECT_RC(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &epoch), 0);
        OK(pthread_mutex_unlock(&m));
        struct timespec negative = {-1, 0};
        EXPECT_RC(pthread_mutex_timedlock(&m, &negative), 0);
        OK(pthread_mutex_unlock(&m));
        /* Held by another thread: ETIMEDOUT, promptly for a past deadline. */
        struct holder h;
        holder_start(&h, &m, 0);
        int64_t t0 = now_ns(CLOCK_MONOTONIC);
        int rc = pthread_mutex_timedlock(&m, &epoch);
        if (rc != ETIMEDOUT) fail("%s: timedlock(epoch) of a held mutex returned %s", type_names[i], err_name(rc));
        rc = pthread_mutex_timedlock(&m, &past_rt);
        if (rc != ETIMEDOUT) fail("%s: timedlock(past) of a held mutex returned %s", type_names[i], err_name(rc));
        rc = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &past_mono);
        if (rc != ETIMEDOUT) fail("%s: clocklock(MONOTONIC, past) of a held mutex returned %s", type_names[i], err_name(rc));
        rc = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &epoch);
        if (rc != ETIMEDOUT) fail("%s: clocklock(MONOTONIC, 0) of a held mutex returned %s", type_names[i], err_name(rc));
        rc = pthread_mutex_timedlock(&m, &negative);
        if (rc != ETIMEDOUT) fail("%s: timedlock(tv_sec -1) of a held mutex returned %s", type_names[i], err_name(rc));
        rc = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &negative);
        if (rc != ETIMEDOUT) fail("%s: clocklock(MONOTONIC, tv_sec -1) of a held mutex returned %s", type_names[i], err_name(rc));
        int64_t took = now_ns(CLOCK_MONOTONIC) - t0;
        if (took > 1000000000LL) fail("%s: past deadlines took %lld ms to time out", type_names[i], (long long)(took / 1000000));
        struct timespec soon = deadline_in(CLOCK_REALTIME, 20000000LL);
        rc = pthread_mutex_timedlock(&m, &soon);
        if (rc != ETIMEDOUT) fail("%s: timedlock(+20ms) of a held mutex returned %s", type_names[i], err_name(rc));
        soon = deadline_in(CLOCK_MONOTONIC, 20000000LL);
        rc = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &soon);
        if (rc != ETIMEDOUT) fail("%s: clocklock(+20ms) of a held mutex returned %s", type_names[i], err_name(rc));
        rc = pthread_mutex_trylock(&m);
        if (rc != EBUSY) fail("%s: trylock after timeouts returned %s", type_names[i], err_name(rc));
        holder_release(&h);
        /* A deadline as far in the future as a timespec goes: waits, and gets the mutex. */
        struct timespec far = {LONG_MAX, 999999999};
        holder_start(&h, &m, 20);
        rc = pthread_mutex_timedlock(&m, &far);
        if (rc != 0) fail("%s: timedlock(LONG_MAX) returned %s when the holder released", type_names[i], err_name(rc));
        OK(pthread_mutex_unlock(&m));
        join_thread(h.thread);
        holder_start(&h, &m, 20);
        rc = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &far);
        if (rc != 0) fail("%s: clocklock(MONOTONIC, LONG_MAX) returned %s when the holder released", type_names[i], err_name(rc));
        OK(pthread_mutex_unlock(&m));
        join_thread(h.thread);
        /* The timed-out waiters left nothing behind. */
        if (m.__data.__nusers != 0 || m.__data.__owner != 0) fail("%s: __nusers %u __owner %d after timeouts", type_names[i], m.__data.__nusers, m.__data.__owner);
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_destroy(&m));
    }
}

/* ---- a destroyed mutex ---- */

static void group_destroyed(void) {
    for (int i = 0; i < NTYPES; i++) {
        pthread_mutex_t m;
        init_typed(&m, types[i]);
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_destroy(&m));
        struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000LL);
        int rc;
        if ((rc = pthread_mutex_lock(&m)) != EINVAL) fail("%s: lock of a destroyed mutex returned %s", type_names[i], err_name(rc));
        if ((rc = pthread_mutex_trylock(&m)) != EINVAL) fail("%s: trylock of a destroyed mutex returned %s", type_names[i], err_name(rc));
        if ((rc = pthread_mutex_timedlock(&m, &ts)) != EINVAL) fail("%s: timedlock of a destroyed mutex returned %s", type_names[i], err_name(rc));
        if ((rc = pthread_mutex_clocklock(&m, CLOCK_REALTIME, &ts)) != EINVAL) fail("%s: clocklock of a destroyed mutex returned %s", type_names[i], err_name(rc));
        if ((rc = pthread_mutex_unlock(&m)) != EINVAL) fail("%s: unlock of a destroyed mutex returned %s", type_names[i], err_name(rc));
        /* Initialised again, it works. */
        init_typed(&m, types[i]);
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_destroy(&m));
    }
}

/* ---- trylock per type ---- */

static void group_trylock(void) {
    for (int i = 0; i < NTYPES; i++) {
        pthread_mutex_t m;
        init_typed(&m, types[i]);
        OK(pthread_mutex_trylock(&m));
        if (m.__data.__owner != gettid() || m.__data.__nusers != 1) fail("%s: trylock did not record the owner", type_names[i]);
        int rc = pthread_mutex_trylock(&m);
        if (types[i] == PTHREAD_MUTEX_RECURSIVE) {
            if (rc != 0) fail("recursive: trylock of own lock returned %s", err_name(rc));
            OK(pthread_mutex_trylock(&m));
            if (m.__data.__count != 3) fail("recursive: __count %u after lock x3", m.__data.__count);
            if (m.__data.__nusers != 1) fail("recursive: __nusers %u after trylock x3", m.__data.__nusers);
            OK(pthread_mutex_unlock(&m));
            OK(pthread_mutex_unlock(&m));
            rc = in_other_thread(do_trylock, &m);
            if (rc != EBUSY) fail("recursive: trylock by another thread with count 1 returned %s", err_name(rc));
        } else if (rc != EBUSY) {
            fail("%s: trylock of own lock returned %s", type_names[i], err_name(rc));
        }
        rc = in_other_thread(do_trylock, &m);
        if (rc != EBUSY) fail("%s: trylock by another thread returned %s", type_names[i], err_name(rc));
        OK(pthread_mutex_unlock(&m));
        rc = in_other_thread(do_trylock, &m); /* that thread exits holding it */
        if (rc != 0) fail("%s: trylock of a free mutex by another thread returned %s", type_names[i], err_name(rc));
        rc = pthread_mutex_trylock(&m);
        if (rc != EBUSY) fail("%s: trylock of a mutex held by an exited thread returned %s", type_names[i], err_name(rc));
    }
}

int main(int argc, char **argv) {
    test_begin("mutex_errors", 30);
    static const char *all[] = {"busy", "deadlk", "perm", "eagain", "timespec", "clock", "timeout", "trylock", "destroyed"};
    int n = argc > 1 ? argc - 1 : (int)(sizeof all / sizeof *all);
    for (int i = 0; i < n; i++) {
        const char *g = argc > 1 ? argv[i + 1] : all[i];
        if (!strcmp(g, "busy")) group_busy();
        else if (!strcmp(g, "deadlk")) group_deadlk();
        else if (!strcmp(g, "perm")) group_perm();
        else if (!strcmp(g, "eagain")) group_eagain();
        else if (!strcmp(g, "timespec")) group_timespec();
        else if (!strcmp(g, "clock")) group_clock();
        else if (!strcmp(g, "timeout")) group_timeout();
        else if (!strcmp(g, "trylock")) group_trylock();
        else if (!strcmp(g, "destroyed")) group_destroyed();
        else fail("unknown group %s", g);
    }
    return 0;
}
