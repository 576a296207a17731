/* Timed read and write locks on CLOCK_REALTIME and CLOCK_MONOTONIC (timedrdlock,
 * timedwrlock, clockrdlock, clockwrlock), for every kind:
 *  - blocked for the whole wait: ETIMEDOUT, not before the deadline (1 ms slack) and not
 *    later than 2 s after it;
 *  - the holder lets go part-way: acquired (0) soon after, well before the deadline;
 *  - several timed waiters give up while one more waits without a timeout: the untimed
 *    one still gets the lock when it is released (no wake-up is lost with the ones that
 *    left), for readers and for writers;
 *  - a timed writer that gives up lets in the readers it was keeping out (writer-
 *    preferring kind) while the first reader still holds the lock;
 *  - the release races with a timed writer's deadline, an untimed writer behind it. */
#include "rwlock_check.h"

#define TIMEOUT_MS 30
#define SLACK_EARLY_NS 1000000LL
#define SLACK_LATE_NS 2000000000LL

enum how { TIMED, CLOCK_RT, CLOCK_MONO };
static const char *how_names[] = {"timed(REALTIME)", "clock(REALTIME)", "clock(MONOTONIC)"};
static clockid_t clock_of(enum how how) { return how == CLOCK_MONO ? CLOCK_MONOTONIC : CLOCK_REALTIME; }

static int timed(pthread_rwlock_t *l, int write, enum how how, const struct timespec *ts) {
    switch (how) {
    case TIMED: return write ? pthread_rwlock_timedwrlock(l, ts) : pthread_rwlock_timedrdlock(l, ts);
    case CLOCK_RT:
        return write ? pthread_rwlock_clockwrlock(l, CLOCK_REALTIME, ts) : pthread_rwlock_clockrdlock(l, CLOCK_REALTIME, ts);
    default:
        return write ? pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, ts) : pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, ts);
    }
}

static void expect_timeout(pthread_rwlock_t *l, int write, enum how how, const char *what) {
    clockid_t c = clock_of(how);
    struct timespec ts = deadline_in(c, TIMEOUT_MS * 1000000LL);
    int rc = timed(l, write, how, &ts);
    int64_t early = ts_ns(&ts) - now_ns(c);
    const char *mode = write ? "write" : "read";
    if (rc != ETIMEDOUT) fail("%s %s %s: returned %s, expected ETIMEDOUT", what, mode, how_names[how], err_name(rc));
    if (early > SLACK_EARLY_NS)
        fail("%s %s %s: ETIMEDOUT %lld us before the deadline", what, mode, how_names[how], (long long)(early / 1000));
    if (-early > SLACK_LATE_NS)
        fail("%s %s %s: ETIMEDOUT %lld ms after the deadline", what, mode, how_names[how], (long long)(-early / 1000000));
}

struct releaser {
    struct rw_holder *h;
    int after_ms;
};
static void *release_later(void *arg) {
    struct releaser *r = (struct releaser *)arg;
    sleep_ms(r->after_ms);
    rw_holder_release(r->h);
    return NULL;
}

static void acquired_when_released(pthread_rwlock_t *l, int write, enum how how, const char *what) {
    struct rw_holder h;
    rw_holder_start(&h, l, 1);
    struct releaser r = {&h, 20};
    pthread_t t = start_thread(release_later, &r);
    clockid_t c = clock_of(how);
    struct timespec ts = deadline_in(c, 10000000000LL);
    int rc = timed(l, write, how, &ts);
    if (rc != 0) fail("%s %s %s: returned %s after the holder let go", what, write ? "write" : "read", how_names[how], err_name(rc));
    if (ts_ns(&ts) - now_ns(c) < 5000000000LL) fail("%s: acquired more than 5 s after the release", what);
    OK(pthread_rwlock_unlock(l));
    join_thread(t);
}

/* Timed waiters of one mode give up behind a holder while an untimed one waits too. */
static void timed_leave_untimed_stays(pthread_rwlock_t *l, int write, const char *what) {
    struct rw_holder h;
    rw_holder_start(&h, l, write ? 0 : 1); /* a reader keeps writers out, a writer readers */
    struct rw_waiter timed_w[3], untimed;
    rw_waiter_start(&untimed, l, write, 0);
    for (int i = 0; i < 3; i++) rw_waiter_start(&timed_w[i], l, write, 20 + 10 * i);
    for (int i = 0; i < 3; i++) {
        join_thread(timed_w[i].thread);
        if (timed_w[i].rc != ETIMEDOUT) fail("%s: timed waiter %d returned %s", what, i, err_name(timed_w[i].rc));
    }
    if (rw_waiter_done(&untimed)) fail("%s: the untimed waiter got in while the lock was held", what);
    rw_holder_release(&h);
    if (!rw_waiter_wait_done(&untimed, 5000)) fail("%s: the untimed waiter was not woken (lost wake-up)", what);
    join_thread(untimed.thread);
    OK(untimed.rc);
}

/* Writer preference: a timed writer keeps a second reader out; when it gives up, that
 * reader gets in while the first reader still holds the lock. */
static void writer_gives_up_readers_enter(pthread_rwlock_t *l, const char *what) {
    struct rw_holder h;
    rw_holder_start(&h, l, 0);
    struct rw_waiter w, r;
    rw_waiter_start(&w, l, 1, 100);
    sleep_ms(20);
    rw_waiter_start(&r, l, 0, 0);
    sleep_ms(20);
    if (rw_waiter_done(&r)) fail("%s: a reader got in while a writer waited", what);
    join_thread(w.thread);
    if (w.rc != ETIMEDOUT) fail("%s: the timed writer returned %s", what, err_name(w.rc));
    if (!rw_waiter_wait_done(&r, 5000)) fail("%s: the writer gave up but the waiting reader stayed out", what);
    join_thread(r.thread);
    OK(r.rc);
    rw_holder_release(&h);
}

/* The holder releases just as a timed writer's deadline passes, with an untimed writer
 * queued behind it: whoever is woken, the untimed writer must get in. */
static void release_races_deadline(pthread_rwlock_t *l, const char *what) {
    for (int round = 0; round < 40; round++) {
        struct rw_holder h;
        rw_holder_start(&h, l, round % 2);
        struct rw_waiter timed_w, untimed;
        rw_waiter_start(&timed_w, l, 1, 10);
        rw_waiter_start(&untimed, l, 1, 0);
        struct timespec nap = {0, 9000000 + (round % 8) * 250000};
        nanosleep(&nap, NULL);
        rw_holder_release(&h);
        join_thread(timed_w.thread);
        if (timed_w.rc != 0 && timed_w.rc != ETIMEDOUT) fail("%s: timed writer returned %s", what, err_name(timed_w.rc));
        if (!rw_waiter_wait_done(&untimed, 5000)) fail("%s round %d: the untimed writer was never woken", what, round);
        join_thread(untimed.thread);
        OK(untimed.rc);
    }
}

int main(void) {
    test_begin("rwlock_timed", 60);
    for (int k = 0; k < 3; k++) {
        pthread_rwlock_t l;
        rw_init(&l, rw_kinds[k], PTHREAD_PROCESS_PRIVATE);
        const char *what = rw_kind_names[k];
        for (int how = 0; how < 3; how++) {
            struct rw_holder h;
            rw_holder_start(&h, &l, 1);
            expect_timeout(&l, 0, (enum how)how, what);
            expect_timeout(&l, 1, (enum how)how, what);
            rw_holder_release(&h);
            rw_holder_start(&h, &l, 0);
            expect_timeout(&l, 1, (enum how)how, what);
            rw_holder_release(&h);
            acquired_when_released(&l, 0, (enum how)how, what);
            acquired_when_released(&l, 1, (enum how)how, what);
        }
        timed_leave_untimed_stays(&l, 0, what);
        timed_leave_untimed_stays(&l, 1, what);
        if (rw_kinds[k] == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) writer_gives_up_readers_enter(&l, what);
        release_races_deadline(&l, what);
        OK(pthread_rwlock_destroy(&l));
    }
    return 0;
}
