/* fork while readers hold an rwlock (two other threads and the forking thread itself),
 * with and without a writer waiting, for every kind; and fork while the forking thread
 * holds the write lock. The child has one thread and the lock's bytes as they were:
 *  - the parent's other readers never leave, so trywrlock is EBUSY and a timed write
 *    lock times out;
 *  - readers still get in where the kind lets them (tryrdlock 0), except behind a
 *    waiting writer under PREFER_WRITER_NONRECURSIVE_NP (EBUSY);
 *  - the child can release the read lock its thread held at the fork;
 *  - a write lock held at the fork stays held in the child (its thread id changed), as
 *    in glibc, and unlock there returns 0.
 * Meanwhile the parent goes on: its readers leave, its writer gets in. */
#include "rwlock_check.h"

#include <sys/wait.h>

static void child_checks(pthread_rwlock_t *l, int kind, int writer_waiting) {
    test_name = "rwlock_fork (child)";
    alarm(20);
    int readers_blocked = writer_waiting && kind == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
    EXPECT_RC(pthread_rwlock_trywrlock(l), EBUSY);
    struct timespec ts = deadline_in(CLOCK_MONOTONIC, 30000000);
    EXPECT_RC(pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
    EXPECT_RC(pthread_rwlock_tryrdlock(l), readers_blocked ? EBUSY : 0);
    if (!readers_blocked) {
        OK(pthread_rwlock_unlock(l));
        OK(pthread_rwlock_rdlock(l));
        OK(pthread_rwlock_unlock(l));
    } else {
        ts = deadline_in(CLOCK_REALTIME, 30000000);
        EXPECT_RC(pthread_rwlock_timedrdlock(l, &ts), ETIMEDOUT);
    }
    /* The read lock this thread took before the fork. */
    OK(pthread_rwlock_unlock(l));
    EXPECT_RC(pthread_rwlock_trywrlock(l), EBUSY);
}

static void with_readers(int kind, int writer_waiting) {
    pthread_rwlock_t l;
    rw_init(&l, kind, PTHREAD_PROCESS_PRIVATE);
    struct rw_holder r1, r2;
    rw_holder_start(&r1, &l, 0);
    rw_holder_start(&r2, &l, 0);
    OK(pthread_rwlock_rdlock(&l));
    struct rw_waiter w;
    if (writer_waiting) {
        rw_waiter_start(&w, &l, 1, 0);
        sleep_ms(30);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        child_checks(&l, kind, writer_waiting);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("%s: the child failed (status %#x)", rw_kind_names[kind], status);
    OK(pthread_rwlock_unlock(&l));
    rw_holder_release(&r1);
    rw_holder_release(&r2);
    if (writer_waiting) {
        if (!rw_waiter_wait_done(&w, 5000)) fail("%s: the parent's writer did not get in", rw_kind_names[kind]);
        join_thread(w.thread);
        OK(w.rc);
    }
    OK(pthread_rwlock_trywrlock(&l));
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_destroy(&l));
}

static void with_writer(int kind) {
    pthread_rwlock_t l;
    rw_init(&l, kind, PTHREAD_PROCESS_PRIVATE);
    OK(pthread_rwlock_wrlock(&l));
    struct rw_waiter r;
    rw_waiter_start(&r, &l, 0, 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        test_name = "rwlock_fork (child of a writer)";
        alarm(20);
        EXPECT_RC(pthread_rwlock_trywrlock(&l), EBUSY);
        EXPECT_RC(pthread_rwlock_tryrdlock(&l), EBUSY);
        OK(pthread_rwlock_unlock(&l));
        EXPECT_RC(pthread_rwlock_trywrlock(&l), EBUSY);
        EXPECT_RC(pthread_rwlock_tryrdlock(&l), EBUSY);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("%s: the child failed (status %#x)", rw_kind_names[kind], status);
    OK(pthread_rwlock_unlock(&l));
    if (!rw_waiter_wait_done(&r, 5000)) fail("%s: the parent's reader did not get in", rw_kind_names[kind]);
    join_thread(r.thread);
    OK(r.rc);
    OK(pthread_rwlock_destroy(&l));
}

int main(void) {
    test_begin("rwlock_fork", 60);
    for (int k = 0; k < 3; k++) {
        with_readers(rw_kinds[k], 0);
        with_readers(rw_kinds[k], 1);
        with_writer(rw_kinds[k]);
    }
    return 0;
}
