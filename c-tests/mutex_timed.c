/* pthread_mutex_timedlock and pthread_mutex_clocklock on CLOCK_REALTIME and
 * CLOCK_MONOTONIC, for every type:
 *  - held by another thread for the whole wait: ETIMEDOUT, not before the deadline
 *    (1 ms slack) and not later than 2 s after it;
 *  - released by the holder part-way: acquired (0) soon after the release, well
 *    before the deadline;
 *  - several waiters timing out together while one more waits without a timeout:
 *    the untimed waiter still gets the mutex when it is released (no lost wake-up);
 *  - a null timespec, which glibc reads only when it is about to block, as no time
 *    limit: a free mutex is taken, the owner gets EDEADLK (errorcheck) or a second
 *    count (recursive), and a mutex held for 30 ms is waited for (0, not EINVAL). */
#include "check.h"

#define TIMEOUT_MS 30
#define SLACK_EARLY_NS 1000000LL
#define SLACK_LATE_NS 2000000000LL

static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
                            PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP};
static const char *type_names[] = {"normal", "recursive", "errorcheck", "adaptive"};

enum how { TIMEDLOCK, CLOCK_RT, CLOCK_MONO };
static const char *how_names[] = {"timedlock(REALTIME)", "clocklock(REALTIME)", "clocklock(MONOTONIC)"};

static clockid_t clock_of(enum how how) { return how == CLOCK_MONO ? CLOCK_MONOTONIC : CLOCK_REALTIME; }

static int timed(pthread_mutex_t *m, enum how how, const struct timespec *ts) {
    switch (how) {
    case TIMEDLOCK: return pthread_mutex_timedlock(m, ts);
    case CLOCK_RT: return pthread_mutex_clocklock(m, CLOCK_REALTIME, ts);
    default: return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, ts);
    }
}

static void expect_timeout(pthread_mutex_t *m, enum how how, const char *what) {
    clockid_t c = clock_of(how);
    struct timespec ts = deadline_in(c, TIMEOUT_MS * 1000000LL);
    int rc = timed(m, how, &ts);
    int64_t now = now_ns(c);
    if (rc != ETIMEDOUT) fail("%s %s: returned %s, expected ETIMEDOUT", what, how_names[how], err_name(rc));
    int64_t early = ts_ns(&ts) - now;
    if (early > SLACK_EARLY_NS) fail("%s %s: ETIMEDOUT %lld us before the deadline", what, how_names[how], (long long)(early / 1000));
    if (-early > SLACK_LATE_NS) fail("%s %s: ETIMEDOUT %lld ms after the deadline", what, how_names[how], (long long)(-early / 1000000));
}

struct waiter {
    pthread_mutex_t *m;
    enum how how;
    int rc;
    int timed;
};

static void *timed_waiter(void *arg) {
    struct waiter *w = (struct waiter *)arg;
    if (w->timed) {
        struct timespec ts = deadline_in(clock_of(w->how), TIMEOUT_MS * 1000000LL);
        w->rc = timed(w->m, w->how, &ts);
        if (w->rc == ETIMEDOUT) {
            int64_t early = ts_ns(&ts) - now_ns(clock_of(w->how));
            if (early > SLACK_EARLY_NS) fail("waiter %s: ETIMEDOUT %lld us early", how_names[w->how], (long long)(early / 1000));
        }
    } else {
        w->rc = pthread_mutex_lock(w->m);
    }
    if (w->rc == 0) OK(pthread_mutex_unlock(w->m));
    return NULL;
}

int main(void) {
    test_begin("mutex_timed", 30);
    for (int t = 0; t < 4; t++) {
        for (int how = 0; how < 3; how++) {
            pthread_mutex_t m;
            init_typed(&m, types[t]);
            char what[64];
            snprintf(what, sizeof what, "%s mutex", type_names[t]);

            /* Held throughout: times out. */
            struct holder h;
            holder_start(&h, &m, 0);
            expect_timeout(&m, (enum how)how, what);
            holder_release(&h);

            /* Released part-way: acquired. */
            holder_start(&h, &m, 30);
            clockid_t c = clock_of((enum how)how);
            struct timespec ts = deadline_in(c, 5000000000LL);
            int64_t t0 = now_ns(CLOCK_MONOTONIC);
            int rc = timed(&m, (enum how)how, &ts);
            int64_t took = now_ns(CLOCK_MONOTONIC) - t0;
            if (rc != 0) fail("%s %s: returned %s when released after 30 ms", what, how_names[how], err_name(rc));
            if (took > 2500000000LL) fail("%s %s: took %lld ms to get a mutex released after 30 ms", what, how_names[how], (long long)(took / 1000000));
            if (m.__data.__owner != gettid()) fail("%s %s: not the owner after success", what, how_names[how]);
            OK(pthread_mutex_unlock(&m));
            join_thread(h.thread);

            /* Timed waiters time out around an untimed one, which must still get in. */
            holder_start(&h, &m, 0);
            struct waiter ws[4];
            pthread_t th[4];
            for (int i = 0; i < 4; i++) {
                ws[i] = (struct waiter){&m, (enum how)how, -1, i != 3};
                th[i] = start_thread(timed_waiter, &ws[i]);
            }
            join_thread(th[0]);
            join_thread(th[1]);
            join_thread(th[2]);
            for (int i = 0; i < 3; i++)
                if (ws[i].rc != ETIMEDOUT) fail("%s %s: waiter %d returned %s, expected ETIMEDOUT", what, how_names[how], i, err_name(ws[i].rc));
            holder_release(&h);
            join_thread(th[3]);
            if (ws[3].rc != 0) fail("%s: untimed waiter returned %s", what, err_name(ws[3].rc));
            OK(pthread_mutex_lock(&m));
            OK(pthread_mutex_unlock(&m));

            /* No timespec: no time limit. */
            EXPECT_RC(timed(&m, (enum how)how, NULL), 0);
            if (types[t] == PTHREAD_MUTEX_ERRORCHECK) EXPECT_RC(timed(&m, (enum how)how, NULL), EDEADLK);
            if (types[t] == PTHREAD_MUTEX_RECURSIVE) {
                EXPECT_RC(timed(&m, (enum how)how, NULL), 0);
                OK(pthread_mutex_unlock(&m));
            }
            OK(pthread_mutex_unlock(&m));
            holder_start(&h, &m, 30);
            EXPECT_RC(timed(&m, (enum how)how, NULL), 0);
            OK(pthread_mutex_unlock(&m));
            join_thread(h.thread);
            OK(pthread_mutex_destroy(&m));
        }
    }
    return 0;
}
