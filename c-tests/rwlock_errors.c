/* glibc 2.36's error codes for every rwlock entry point, case by case (one argument per
 * case; the baseline test runs each without the preload, so every expectation here is
 * glibc's own behaviour):
 *   deadlk     the write owner asks again: EDEADLK from rdlock, wrlock and all timed
 *              variants, EBUSY from both trylocks; a bad timespec is EINVAL even then.
 *   busy       EBUSY from the try variants against another thread's write lock, and
 *              trywrlock against readers; tryrdlock with a writer waiting depends on the
 *              kind (0 for the reader-preferring kinds, EBUSY for writer-nonrecursive).
 *   recursive  a reader may take the read lock again (no writer waiting).
 *   eagain     glibc's reader limit: 2^28 - 1 read locks succeed, the next rdlock,
 *              timedrdlock and tryrdlock give EAGAIN, trywrlock EBUSY.
 *   timespec   tv_nsec outside 0..999999999 is EINVAL even for a free lock; a negative
 *              tv_sec acquires a free lock and times out on a busy one.
 *   clock      clockrdlock/clockwrlock accept only CLOCK_REALTIME and CLOCK_MONOTONIC
 *              (EINVAL otherwise, even for a free lock); a NULL timespec means no timeout.
 *   timeout    past deadlines: a free lock is acquired, a busy one gives ETIMEDOUT.
 *   unlock     unlock by a thread that holds nothing returns 0.
 *   destroy    destroy returns 0 in any state, and the memory can be initialised again. */
#include "rwlock_check.h"

static void for_each_kind(void (*fn)(pthread_rwlock_t *, const char *)) {
    for (int k = 0; k < 3; k++) {
        pthread_rwlock_t l;
        rw_init(&l, rw_kinds[k], PTHREAD_PROCESS_PRIVATE);
        fn(&l, rw_kind_names[k]);
        OK(pthread_rwlock_destroy(&l));
    }
}

static struct timespec in_ms(clockid_t c, int ms) { return deadline_in(c, (int64_t)ms * 1000000); }

static void deadlk(pthread_rwlock_t *l, const char *kind) {
    (void)kind;
    struct timespec rt = in_ms(CLOCK_REALTIME, 10000), mono = in_ms(CLOCK_MONOTONIC, 10000);
    struct timespec bad = rt;
    bad.tv_nsec = 1000000000;
    OK(pthread_rwlock_wrlock(l));
    EXPECT_RC(pthread_rwlock_rdlock(l), EDEADLK);
    EXPECT_RC(pthread_rwlock_wrlock(l), EDEADLK);
    EXPECT_RC(pthread_rwlock_timedrdlock(l, &rt), EDEADLK);
    EXPECT_RC(pthread_rwlock_timedwrlock(l, &rt), EDEADLK);
    EXPECT_RC(pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &mono), EDEADLK);
    EXPECT_RC(pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &mono), EDEADLK);
    EXPECT_RC(pthread_rwlock_clockrdlock(l, CLOCK_REALTIME, &rt), EDEADLK);
    EXPECT_RC(pthread_rwlock_clockwrlock(l, CLOCK_REALTIME, &rt), EDEADLK);
    /* glibc checks the timespec first. */
    EXPECT_RC(pthread_rwlock_timedrdlock(l, &bad), EINVAL);
    EXPECT_RC(pthread_rwlock_timedwrlock(l, &bad), EINVAL);
    EXPECT_RC(pthread_rwlock_clockrdlock(l, CLOCK_PROCESS_CPUTIME_ID, &rt), EINVAL);
    EXPECT_RC(pthread_rwlock_tryrdlock(l), EBUSY);
    EXPECT_RC(pthread_rwlock_trywrlock(l), EBUSY);
    OK(pthread_rwlock_unlock(l));
    /* Released: everything works again. */
    OK(pthread_rwlock_trywrlock(l));
    EXPECT_RC(pthread_rwlock_rdlock(l), EDEADLK);
    OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_rdlock(l));
    OK(pthread_rwlock_unlock(l));
}

static void busy(pthread_rwlock_t *l, const char *kind) {
    struct rw_holder h;
    rw_holder_start(&h, l, 1);
    EXPECT_RC(pthread_rwlock_tryrdlock(l), EBUSY);
    EXPECT_RC(pthread_rwlock_trywrlock(l), EBUSY);
    rw_holder_release(&h);

    rw_holder_start(&h, l, 0);
    EXPECT_RC(pthread_rwlock_trywrlock(l), EBUSY);
    OK(pthread_rwlock_tryrdlock(l));
    OK(pthread_rwlock_unlock(l));
    /* A writer waits behind the reader. */
    struct rw_waiter w;
    rw_waiter_start(&w, l, 1, 0);
    sleep_ms(50);
    if (rw_waiter_done(&w)) fail("%s: a writer got in while a reader held the lock", kind);
    int expect = strcmp(kind, "prefer-writer-nonrecursive") == 0 ? EBUSY : 0;
    int rc = pthread_rwlock_tryrdlock(l);
    if (rc != expect) fail("%s: tryrdlock with a writer waiting returned %s, expected %s", kind, err_name(rc), err_name(expect));
    if (rc == 0) OK(pthread_rwlock_unlock(l));
    EXPECT_RC(pthread_rwlock_trywrlock(l), EBUSY);
    rw_holder_release(&h);
    join_thread(w.thread);
    OK(w.rc);
    OK(pthread_rwlock_trywrlock(l));
    OK(pthread_rwlock_unlock(l));
}

static void recursive(pthread_rwlock_t *l, const char *kind) {
    (void)kind;
    OK(pthread_rwlock_rdlock(l));
    OK(pthread_rwlock_rdlock(l));
    OK(pthread_rwlock_tryrdlock(l));
    struct timespec ts = in_ms(CLOCK_MONOTONIC, 1000);
    OK(pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &ts));
    EXPECT_RC(pthread_rwlock_trywrlock(l), EBUSY);
    for (int i = 0; i < 4; i++) OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_trywrlock(l));
    OK(pthread_rwlock_unlock(l));
}

static void *nothing(void *arg) { return arg; }

static void eagain_on(pthread_rwlock_t *l) {
    /* One thread takes the read lock recursively up to glibc's limit: 2^28 - 1. */
    const long limit = (1L << 28) - 1;
    for (long i = 0; i < limit; i++) {
        int rc = pthread_rwlock_rdlock(l);
        if (rc != 0) fail("read lock %ld of %ld returned %s", i + 1, limit, err_name(rc));
    }
    struct timespec ts = in_ms(CLOCK_REALTIME, 1000);
    EXPECT_RC(pthread_rwlock_rdlock(l), EAGAIN);
    EXPECT_RC(pthread_rwlock_tryrdlock(l), EAGAIN);
    EXPECT_RC(pthread_rwlock_timedrdlock(l, &ts), EAGAIN);
    EXPECT_RC(pthread_rwlock_trywrlock(l), EBUSY);
    OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_tryrdlock(l));
    EXPECT_RC(pthread_rwlock_rdlock(l), EAGAIN);
    OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_rdlock(l));
}

static void eagain(void) {
    static pthread_rwlock_t single = PTHREAD_RWLOCK_INITIALIZER, multi = PTHREAD_RWLOCK_INITIALIZER;
    /* While the process has one thread (a library may use plain loads and stores), then
     * once it has had two. */
    eagain_on(&single);
    join_thread(start_thread(nothing, NULL));
    eagain_on(&multi);
}

static void timespec_checks(pthread_rwlock_t *l, const char *kind) {
    struct timespec bad[3];
    bad[0] = in_ms(CLOCK_REALTIME, 1000);
    bad[0].tv_nsec = -1;
    bad[1] = bad[0];
    bad[1].tv_nsec = 1000000000;
    bad[2] = bad[0];
    bad[2].tv_nsec = 2000000000;
    for (int i = 0; i < 3; i++) {
        EXPECT_RC(pthread_rwlock_timedrdlock(l, &bad[i]), EINVAL);
        EXPECT_RC(pthread_rwlock_timedwrlock(l, &bad[i]), EINVAL);
        EXPECT_RC(pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &bad[i]), EINVAL);
        EXPECT_RC(pthread_rwlock_clockwrlock(l, CLOCK_REALTIME, &bad[i]), EINVAL);
    }
    /* Negative seconds: a free lock is taken, a busy one times out. */
    struct timespec neg = {-1, 0};
    OK(pthread_rwlock_timedrdlock(l, &neg));
    OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &neg));
    OK(pthread_rwlock_unlock(l));
    struct rw_holder h;
    rw_holder_start(&h, l, 1);
    EXPECT_RC(pthread_rwlock_timedrdlock(l, &neg), ETIMEDOUT);
    EXPECT_RC(pthread_rwlock_timedwrlock(l, &neg), ETIMEDOUT);
    EXPECT_RC(pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &neg), ETIMEDOUT);
    EXPECT_RC(pthread_rwlock_clockwrlock(l, CLOCK_REALTIME, &neg), ETIMEDOUT);
    rw_holder_release(&h);
    rw_holder_start(&h, l, 0);
    EXPECT_RC(pthread_rwlock_timedwrlock(l, &neg), ETIMEDOUT);
    OK(pthread_rwlock_timedrdlock(l, &neg));
    OK(pthread_rwlock_unlock(l));
    rw_holder_release(&h);
    (void)kind;
}

typedef int (*clockfn)(pthread_rwlock_t *, clockid_t, const struct timespec *);

static void clock_checks(pthread_rwlock_t *l, const char *kind) {
    (void)kind;
    static const clockid_t bad[] = {CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW,
                                    CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME, 12345, -1};
    struct timespec ts = in_ms(CLOCK_REALTIME, 1000);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        EXPECT_RC(pthread_rwlock_clockrdlock(l, bad[i], &ts), EINVAL);
        EXPECT_RC(pthread_rwlock_clockwrlock(l, bad[i], &ts), EINVAL);
    }
    struct timespec mono = in_ms(CLOCK_MONOTONIC, 1000);
    OK(pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &mono));
    OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_clockwrlock(l, CLOCK_REALTIME, &ts));
    OK(pthread_rwlock_unlock(l));
    /* glibc 2.36 checks clock and timespec only when a timespec is given; NULL means no
     * timeout. Called through volatile pointers: the prototypes say nonnull. */
    int (*volatile timedrd)(pthread_rwlock_t *, const struct timespec *) = pthread_rwlock_timedrdlock;
    int (*volatile timedwr)(pthread_rwlock_t *, const struct timespec *) = pthread_rwlock_timedwrlock;
    clockfn volatile clockrd = pthread_rwlock_clockrdlock;
    clockfn volatile clockwr = pthread_rwlock_clockwrlock;
    OK(timedrd(l, NULL));
    OK(pthread_rwlock_unlock(l));
    OK(timedwr(l, NULL));
    OK(pthread_rwlock_unlock(l));
    OK(clockrd(l, 12345, NULL));
    OK(pthread_rwlock_unlock(l));
    OK(clockwr(l, CLOCK_PROCESS_CPUTIME_ID, NULL));
    OK(pthread_rwlock_unlock(l));
}

static void timeout(pthread_rwlock_t *l, const char *kind) {
    (void)kind;
    struct timespec past_rt = in_ms(CLOCK_REALTIME, -1000), past_mono = in_ms(CLOCK_MONOTONIC, -1000);
    struct timespec epoch = {0, 0};
    OK(pthread_rwlock_timedrdlock(l, &past_rt));
    OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_timedwrlock(l, &epoch));
    OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &past_mono));
    OK(pthread_rwlock_unlock(l));
    struct rw_holder h;
    rw_holder_start(&h, l, 1);
    EXPECT_RC(pthread_rwlock_timedrdlock(l, &past_rt), ETIMEDOUT);
    EXPECT_RC(pthread_rwlock_timedwrlock(l, &past_rt), ETIMEDOUT);
    EXPECT_RC(pthread_rwlock_timedwrlock(l, &epoch), ETIMEDOUT);
    EXPECT_RC(pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &past_mono), ETIMEDOUT);
    EXPECT_RC(pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &past_mono), ETIMEDOUT);
    rw_holder_release(&h);
    rw_holder_start(&h, l, 0);
    EXPECT_RC(pthread_rwlock_timedwrlock(l, &past_rt), ETIMEDOUT);
    EXPECT_RC(pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &past_mono), ETIMEDOUT);
    OK(pthread_rwlock_clockrdlock(l, CLOCK_MONOTONIC, &past_mono));
    OK(pthread_rwlock_unlock(l));
    rw_holder_release(&h);
    OK(pthread_rwlock_trywrlock(l));
    OK(pthread_rwlock_unlock(l));
}

static pthread_rwlock_t *shared_lock;
static volatile int unlock_rc = -1;
/* Unlocks `shared_lock` twice: as a thread that has not used any lock yet, then again
 * after taking one of its own (a library may know a thread's id only once it has). */
static void *unlock_it(void *arg) {
    (void)arg;
    int first = pthread_rwlock_unlock(shared_lock);
    pthread_rwlock_t own = PTHREAD_RWLOCK_INITIALIZER;
    OK(pthread_rwlock_wrlock(&own));
    OK(pthread_rwlock_unlock(&own));
    int second = pthread_rwlock_unlock(shared_lock);
    unlock_rc = first != 0 ? first : second;
    return NULL;
}

static void unlock_unheld(void) {
    /* Each case on its own lock: after it, glibc's reader count is not to be trusted. */
    pthread_rwlock_t a = PTHREAD_RWLOCK_INITIALIZER;
    OK(pthread_rwlock_unlock(&a));
    pthread_rwlock_t b;
    rw_init(&b, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, PTHREAD_PROCESS_PRIVATE);
    OK(pthread_rwlock_unlock(&b));
    /* Another thread unlocks this thread's write lock. */
    pthread_rwlock_t c = PTHREAD_RWLOCK_INITIALIZER;
    OK(pthread_rwlock_wrlock(&c));
    shared_lock = &c;
    join_thread(start_thread(unlock_it, NULL));
    if (unlock_rc != 0) fail("unlock by a thread that holds nothing returned %s", err_name(unlock_rc));
    /* ... and left the lock to its writer. */
    if (pthread_rwlock_trywrlock(&c) != EBUSY) fail("another thread's unlock released the write lock");
    OK(pthread_rwlock_unlock(&c));
    /* Another thread unlocks this thread's read lock. */
    pthread_rwlock_t d = PTHREAD_RWLOCK_INITIALIZER;
    OK(pthread_rwlock_rdlock(&d));
    shared_lock = &d;
    unlock_rc = -1;
    join_thread(start_thread(unlock_it, NULL));
    if (unlock_rc != 0) fail("unlock of another thread's read lock returned %s", err_name(unlock_rc));
    OK(pthread_rwlock_unlock(&d));
}

static void destroy(pthread_rwlock_t *l, const char *kind) {
    (void)kind;
    OK(pthread_rwlock_wrlock(l));
    OK(pthread_rwlock_destroy(l));
    OK(pthread_rwlock_init(l, NULL));
    OK(pthread_rwlock_rdlock(l));
    OK(pthread_rwlock_rdlock(l));
    OK(pthread_rwlock_destroy(l));
    OK(pthread_rwlock_init(l, NULL));
    OK(pthread_rwlock_trywrlock(l));
    OK(pthread_rwlock_unlock(l));
    OK(pthread_rwlock_destroy(l));
    OK(pthread_rwlock_destroy(l));
    OK(pthread_rwlock_init(l, NULL));
}

int main(int argc, char **argv) {
    test_begin("rwlock_errors", 60);
    if (argc < 2) fail("usage: rwlock_errors CASE...");
    for (int i = 1; i < argc; i++) {
        const char *c = argv[i];
        if (strcmp(c, "deadlk") == 0) for_each_kind(deadlk);
        else if (strcmp(c, "busy") == 0) for_each_kind(busy);
        else if (strcmp(c, "recursive") == 0) for_each_kind(recursive);
        else if (strcmp(c, "eagain") == 0) eagain();
        else if (strcmp(c, "timespec") == 0) for_each_kind(timespec_checks);
        else if (strcmp(c, "clock") == 0) for_each_kind(clock_checks);
        else if (strcmp(c, "timeout") == 0) for_each_kind(timeout);
        else if (strcmp(c, "unlock") == 0) unlock_unheld();
        else if (strcmp(c, "destroy") == 0) for_each_kind(destroy);
        else fail("unknown case %s", c);
    }
    return 0;
}
