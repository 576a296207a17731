/* Priority-inherit (PTHREAD_PRIO_INHERIT) and priority-protect (PTHREAD_PRIO_PROTECT)
 * mutexes, which the library forwards to glibc: contended exact counts for each type,
 * trylock EBUSY, timedlock ETIMEDOUT while held (EINVAL for a negative time under PI),
 * errorcheck EDEADLK/EPERM (trylock by the owner too), recursive
 * nesting, trylock EBUSY and unlock EPERM in a child of a PI mutex's owner, and a condvar
 * producer/consumer on a PI mutex.
 * glibc's PRIO_PROTECT only works for threads under a real-time policy (a SCHED_OTHER
 * thread gets EINVAL from the lock), so that part runs with every thread at SCHED_FIFO
 * priority 1 (created threads inherit it) and a ceiling of 1; where the process may not
 * use SCHED_FIFO (no CAP_SYS_NICE / RLIMIT_RTPRIO), it says so on stderr and skips PP. */
#include "check.h"

#include <sched.h>
#include <sys/wait.h>

#define THREADS 3
#define ITERS 5000

static pthread_mutex_t m;
static volatile long counter;

static void *incr(void *arg) {
    int recursive = (int)(long)arg;
    for (int i = 0; i < ITERS; i++) {
        OK(pthread_mutex_lock(&m));
        if (recursive) OK(pthread_mutex_lock(&m));
        long v = counter;
        if ((i & 127) == 0) sched_yield();
        counter = v + 1;
        if (recursive) OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_unlock(&m));
    }
    return NULL;
}

static int trylock_rc;
static void *trylock_other(void *arg) {
    (void)arg;
    trylock_rc = pthread_mutex_trylock(&m);
    if (trylock_rc == 0) OK(pthread_mutex_unlock(&m));
    return NULL;
}

static int init_prio(int protocol, int type) {
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, type));
    OK(pthread_mutexattr_setprotocol(&a, protocol));
    if (protocol == PTHREAD_PRIO_PROTECT) OK(pthread_mutexattr_setprioceiling(&a, sched_get_priority_min(SCHED_FIFO)));
    OK(pthread_mutex_init(&m, &a));
    OK(pthread_mutexattr_destroy(&a));
    int want = protocol == PTHREAD_PRIO_INHERIT ? 32 : 64;
    if (!(m.__data.__kind & want)) fail("protocol %d: __kind %d lacks bit %d", protocol, m.__data.__kind, want);
    return 0;
}

/* ---- condvar on a PI mutex ---- */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int items, produced_all;
static long got;
static void *consumer(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&m));
    for (;;) {
        while (items == 0 && !produced_all) OK(pthread_cond_wait(&cv, &m));
        if (items == 0) break;
        items--;
        got++;
    }
    OK(pthread_mutex_unlock(&m));
    return NULL;
}

static void one(int protocol, int type, const char *name) {
    init_prio(protocol, type);
    int rc = pthread_mutex_lock(&m);
    if (rc != 0) fail("%s: first lock returned %s", name, err_name(rc));
    /* own-lock behaviour per type */
    if (type == PTHREAD_MUTEX_ERRORCHECK) {
        EXPECT_RC(pthread_mutex_lock(&m), EDEADLK);
        EXPECT_RC(pthread_mutex_trylock(&m), EDEADLK); /* (EBUSY without a protocol) */
    } else if (type == PTHREAD_MUTEX_RECURSIVE) {
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_trylock(&m));
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_unlock(&m));
    } else {
        EXPECT_RC(pthread_mutex_trylock(&m), EBUSY);
    }
    join_thread(start_thread(trylock_other, NULL));
    if (trylock_rc != EBUSY) fail("%s: trylock by another thread returned %s", name, err_name(trylock_rc));
    if (protocol == PTHREAD_PRIO_INHERIT) {
        /* In a child of the owner, the word names the parent's thread: glibc refuses the
         * child's trylock and unlock, whatever the type. */
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            int try_rc = pthread_mutex_trylock(&m), unlock_rc = pthread_mutex_unlock(&m);
            if (try_rc != EBUSY || unlock_rc != EPERM) {
                fprintf(stderr, "prio_mutex: FAIL: %s held across fork: the child's trylock returned %s "
                        "(expected EBUSY), its unlock %s (expected EPERM)\n", name, err_name(try_rc),
                        err_name(unlock_rc));
                _exit(1);
            }
            _exit(0);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail("%s: the check in a forked child failed", name);
    }
    OK(pthread_mutex_unlock(&m));
    if (type != PTHREAD_MUTEX_NORMAL) EXPECT_RC(pthread_mutex_unlock(&m), EPERM);

    /* timedlock while held elsewhere */
    struct holder h;
    holder_start(&h, &m, 0);
    struct timespec ts = deadline_in(CLOCK_REALTIME, 20000000LL);
    rc = pthread_mutex_timedlock(&m, &ts);
    if (rc != ETIMEDOUT) fail("%s: timedlock while held returned %s", name, err_name(rc));
    if (now_ns(CLOCK_REALTIME) < ts_ns(&ts) - 1000000) fail("%s: timedlock timed out early", name);
    /* A negative time: PI leaves it to the kernel, which refuses it; PP times out. */
    struct timespec negative = {-1, 0};
    EXPECT_RC(pthread_mutex_timedlock(&m, &negative), protocol == PTHREAD_PRIO_INHERIT ? EINVAL : ETIMEDOUT);
    holder_release(&h);
    ts = deadline_in(CLOCK_REALTIME, 1000000000LL);
    OK(pthread_mutex_timedlock(&m, &ts));
    OK(pthread_mutex_unlock(&m));

    /* contended exact count */
    counter = 0;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) t[i] = start_thread(incr, (void *)(long)(type == PTHREAD_MUTEX_RECURSIVE));
    for (int i = 0; i < THREADS; i++) join_thread(t[i]);
    if (counter != (long)THREADS * ITERS) fail("%s: counter %ld, expected %ld", name, counter, (long)THREADS * ITERS);

    /* condvar */
    if (type != PTHREAD_MUTEX_RECURSIVE) {
        items = 0;
        produced_all = 0;
        got = 0;
        pthread_t c[2];
        for (int i = 0; i < 2; i++) c[i] = start_thread(consumer, NULL);
        for (int i = 0; i < 5000; i++) {
            OK(pthread_mutex_lock(&m));
            items++;
            OK(pthread_cond_signal(&cv));
            OK(pthread_mutex_unlock(&m));
        }
        OK(pthread_mutex_lock(&m));
        produced_all = 1;
        OK(pthread_cond_broadcast(&cv));
        OK(pthread_mutex_unlock(&m));
        for (int i = 0; i < 2; i++) join_thread(c[i]);
        if (got != 5000) fail("%s: consumers got %ld items, expected 5000", name, got);
    }
    OK(pthread_mutex_destroy(&m));
}

int main(void) {
    test_begin("prio_mutex", 30);
    one(PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_NORMAL, "PI normal");
    one(PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_RECURSIVE, "PI recursive");
    one(PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_ERRORCHECK, "PI errorcheck");

    /* PRIO_PROTECT: a SCHED_OTHER thread cannot lock it (EINVAL, glibc's own answer). */
    init_prio(PTHREAD_PRIO_PROTECT, PTHREAD_MUTEX_NORMAL);
    EXPECT_RC(pthread_mutex_lock(&m), EINVAL);
    OK(pthread_mutex_destroy(&m));

    struct sched_param sp = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
    int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (rc != 0) {
        fprintf(stderr, "prio_mutex: note: SCHED_FIFO not permitted here (%s): PRIO_PROTECT checks skipped\n", err_name(rc));
        return 0;
    }
    one(PTHREAD_PRIO_PROTECT, PTHREAD_MUTEX_NORMAL, "PP normal");
    one(PTHREAD_PRIO_PROTECT, PTHREAD_MUTEX_RECURSIVE, "PP recursive");
    one(PTHREAD_PRIO_PROTECT, PTHREAD_MUTEX_ERRORCHECK, "PP errorcheck");
    return 0;
}
