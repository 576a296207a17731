/* Timed condition waits on both clocks:
 *   pthread_cond_timedwait on a default (REALTIME) condvar,
 *   pthread_cond_timedwait on a condvar with pthread_condattr_setclock(MONOTONIC),
 *   pthread_cond_clockwait with CLOCK_REALTIME and with CLOCK_MONOTONIC.
 * Each must time out with ETIMEDOUT no earlier than the deadline (1 ms slack) and no
 * later than 2 s after it, holding the mutex again (checked with an errorcheck mutex:
 * __owner is the caller and unlock returns 0; another thread's trylock meanwhile gives
 * EBUSY); and must return 0 when signalled before the deadline. Invalid arguments
 * (unsupported clock, tv_nsec out of range) give EINVAL with the mutex still held; a
 * wait with an errorcheck or recursive mutex the caller does not own gives EPERM. */
#include "check.h"

#define TIMEOUT_MS 50

static pthread_mutex_t mutex;
static pthread_cond_t cv_rt, cv_mono;
static int flag;

enum how { TIMEDWAIT_RT, TIMEDWAIT_MONO_ATTR, CLOCKWAIT_RT, CLOCKWAIT_MONO };
static const char *names[] = {"timedwait(default condvar)", "timedwait(MONOTONIC condvar)",
                              "clockwait(REALTIME)", "clockwait(MONOTONIC)"};

static clockid_t clock_of(enum how h) {
    return (h == TIMEDWAIT_MONO_ATTR || h == CLOCKWAIT_MONO) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

static int wait_until(enum how h, const struct timespec *ts) {
    switch (h) {
    case TIMEDWAIT_RT: return pthread_cond_timedwait(&cv_rt, &mutex, ts);
    case TIMEDWAIT_MONO_ATTR: return pthread_cond_timedwait(&cv_mono, &mutex, ts);
    case CLOCKWAIT_RT: return pthread_cond_clockwait(&cv_rt, &mutex, CLOCK_REALTIME, ts);
    default: return pthread_cond_clockwait(&cv_mono, &mutex, CLOCK_MONOTONIC, ts);
    }
}

static int do_trylock(void) {
    int rc = pthread_mutex_trylock(&mutex);
    if (rc == 0) OK(pthread_mutex_unlock(&mutex));
    return rc;
}
static void *trylock_thread(void *arg) {
    *(int *)arg = do_trylock();
    return NULL;
}
static int trylock_elsewhere(void) {
    int rc = -1;
    join_thread(start_thread(trylock_thread, &rc));
    return rc;
}

static void expect_held(enum how h, const char *when) {
    if (mutex.__data.__owner != gettid()) fail("%s %s: mutex __owner %d, caller %d", names[h], when, mutex.__data.__owner, gettid());
    int rc = trylock_elsewhere();
    if (rc != EBUSY) fail("%s %s: another thread's trylock returned %s (mutex not re-held?)", names[h], when, err_name(rc));
}

struct signaller {
    enum how how;
    int delay_ms;
};
static void *signaller_main(void *arg) {
    struct signaller *s = (struct signaller *)arg;
    sleep_ms(s->delay_ms);
    OK(pthread_mutex_lock(&mutex));
    flag = 1;
    pthread_cond_t *cv = (s->how == TIMEDWAIT_MONO_ATTR || s->how == CLOCKWAIT_MONO) ? &cv_mono : &cv_rt;
    OK(pthread_cond_signal(cv));
    OK(pthread_mutex_unlock(&mutex));
    return NULL;
}

int main(void) {
    test_begin("cond_timed", 30);
    init_typed(&mutex, PTHREAD_MUTEX_ERRORCHECK);
    OK(pthread_cond_init(&cv_rt, NULL));
    pthread_condattr_t ca;
    OK(pthread_condattr_init(&ca));
    OK(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC));
    OK(pthread_cond_init(&cv_mono, &ca));
    OK(pthread_condattr_destroy(&ca));

    for (int round = 0; round < 2; round++) {
        for (int hi = 0; hi < 4; hi++) {
            enum how h = (enum how)hi;
            clockid_t c = clock_of(h);

            /* Times out. */
            OK(pthread_mutex_lock(&mutex));
            struct timespec ts = deadline_in(c, TIMEOUT_MS * 1000000LL);
            int rc;
            do {
                rc = wait_until(h, &ts);
            } while (rc == 0); /* spurious wake-ups are allowed */
            int64_t early = ts_ns(&ts) - now_ns(c);
            if (rc != ETIMEDOUT) fail("%s: returned %s, expected ETIMEDOUT", names[h], err_name(rc));
            if (early > 1000000LL) fail("%s: ETIMEDOUT %lld us before the deadline", names[h], (long long)(early / 1000));
            if (-early > 2000000000LL) fail("%s: ETIMEDOUT %lld ms after the deadline", names[h], (long long)(-early / 1000000));
            expect_held(h, "after ETIMEDOUT");
            /* A deadline already in the past times out at once, mutex held. */
            ts = deadline_in(c, -1000000LL);
            rc = wait_until(h, &ts);
            if (rc != ETIMEDOUT) fail("%s: past deadline returned %s", names[h], err_name(rc));
            expect_held(h, "after a past deadline");
            OK(pthread_mutex_unlock(&mutex));
            EXPECT_RC(pthread_mutex_unlock(&mutex), EPERM);

            /* Woken before the deadline. */
            OK(pthread_mutex_lock(&mutex));
            flag = 0;
            struct signaller s = {h, 20};
            pthread_t t = start_thread(signaller_main, &s);
            ts = deadline_in(c, 10000000000LL);
            int64_t t0 = now_ns(CLOCK_MONOTONIC);
            while (!flag) {
                rc = wait_until(h, &ts);
                if (rc != 0) fail("%s: returned %s while waiting to be signalled", names[h], err_name(rc));
            }
            int64_t took = now_ns(CLOCK_MONOTONIC) - t0;
            if (took > 5000000000LL) fail("%s: signal took %lld ms to arrive", names[h], (long long)(took / 1000000));
            expect_held(h, "after a signal");
            OK(pthread_mutex_unlock(&mutex));
            join_thread(t);
        }
    }

    /* Invalid arguments: EINVAL, the mutex still held. */
    OK(pthread_mutex_lock(&mutex));
    struct timespec ts = deadline_in(CLOCK_MONOTONIC, 1000000000LL);
    EXPECT_RC(pthread_cond_clockwait(&cv_rt, &mutex, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
    expect_held(CLOCKWAIT_RT, "after EINVAL (clock)");
    struct timespec bad = {ts.tv_sec, 1000000000L};
    EXPECT_RC(pthread_cond_timedwait(&cv_rt, &mutex, &bad), EINVAL);
    EXPECT_RC(pthread_cond_clockwait(&cv_mono, &mutex, CLOCK_MONOTONIC, &bad), EINVAL);
    bad.tv_nsec = -1;
    EXPECT_RC(pthread_cond_timedwait(&cv_mono, &mutex, &bad), EINVAL);
    expect_held(TIMEDWAIT_RT, "after EINVAL (timespec)");
    OK(pthread_mutex_unlock(&mutex));

    /* glibc's condvar code checks errorcheck/recursive ownership through __owner, which
     * the interposed lock must keep exactly: EPERM when the caller does not own it. */
    ts = deadline_in(CLOCK_REALTIME, 1000000000LL);
    EXPECT_RC(pthread_cond_timedwait(&cv_rt, &mutex, &ts), EPERM); /* unlocked */
    struct holder h;
    holder_start(&h, &mutex, 0);
    EXPECT_RC(pthread_cond_timedwait(&cv_rt, &mutex, &ts), EPERM); /* held by another thread */
    holder_release(&h);
    pthread_mutex_t rm;
    init_typed(&rm, PTHREAD_MUTEX_RECURSIVE);
    EXPECT_RC(pthread_cond_timedwait(&cv_rt, &rm, &ts), EPERM);
    OK(pthread_mutex_destroy(&rm));

    OK(pthread_cond_destroy(&cv_rt));
    OK(pthread_cond_destroy(&cv_mono));
    OK(pthread_mutex_destroy(&mutex));
    return 0;
}
