/* Robust mutexes (forwarded to glibc): owner death gives EOWNERDEAD.
 *   a thread exits holding a robust mutex: the next lock / trylock / timedlock returns
 *   EOWNERDEAD with the caller owning it; pthread_mutex_consistent works; then
 *   unlock / lock / unlock are fine;
 *   a waiter already blocked in lock when the owner dies gets EOWNERDEAD;
 *   unlock without consistent: the mutex becomes ENOTRECOVERABLE;
 *   a child process dies holding a process-shared robust mutex in MAP_SHARED memory:
 *   the parent's next lock returns EOWNERDEAD;
 *   a contended robust mutex keeps exact counts.
 * Each for the normal and errorcheck robust types. */
#include "check.h"

#include <sys/mman.h>
#include <sys/wait.h>

static void robust_init(pthread_mutex_t *m, int type, int pshared) {
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, type));
    OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
    if (pshared) OK(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
    OK(pthread_mutex_init(m, &a));
    OK(pthread_mutexattr_destroy(&a));
}

static void *lock_and_die(void *arg) {
    OK(pthread_mutex_lock((pthread_mutex_t *)arg));
    return NULL; /* exits holding it */
}

struct waiter {
    pthread_mutex_t *m;
    int rc;
};
static void *blocked_waiter(void *arg) {
    struct waiter *w = (struct waiter *)arg;
    w->rc = pthread_mutex_lock(w->m);
    if (w->rc == EOWNERDEAD) {
        OK(pthread_mutex_consistent(w->m));
        OK(pthread_mutex_unlock(w->m));
    }
    return NULL;
}

static volatile long counter;
static void *incr(void *arg) {
    pthread_mutex_t *m = (pthread_mutex_t *)arg;
    for (int i = 0; i < 10000; i++) {
        OK(pthread_mutex_lock(m));
        long v = counter;
        if ((i & 127) == 0) sched_yield();
        counter = v + 1;
        OK(pthread_mutex_unlock(m));
    }
    return NULL;
}

static pthread_mutex_t *try_target;
static void *try_other(void *arg) {
    *(int *)arg = pthread_mutex_trylock(try_target);
    if (*(int *)arg == 0) OK(pthread_mutex_unlock(try_target));
    return NULL;
}

static void recover(pthread_mutex_t *m, const char *what) {
    try_target = m;
    OK(pthread_mutex_consistent(m));
    if (m->__data.__owner != gettid()) fail("%s: after EOWNERDEAD and consistent, __owner %d is not the caller %d", what, m->__data.__owner, gettid());
    int rc = -1;
    pthread_t t = start_thread(try_other, &rc);
    join_thread(t);
    if (rc != EBUSY) fail("%s: after EOWNERDEAD, another thread's trylock returned %s", what, err_name(rc));
    OK(pthread_mutex_unlock(m));
    OK(pthread_mutex_lock(m));
    OK(pthread_mutex_unlock(m));
}

static void one_type(int type, const char *name) {
    pthread_mutex_t m;
    int rc;

    /* lock after the owner thread died */
    robust_init(&m, type, 0);
    join_thread(start_thread(lock_and_die, &m));
    rc = pthread_mutex_lock(&m);
    if (rc != EOWNERDEAD) fail("%s: lock after owner death returned %s, expected EOWNERDEAD", name, err_name(rc));
    recover(&m, name);

    /* trylock and timedlock see it too */
    join_thread(start_thread(lock_and_die, &m));
    rc = pthread_mutex_trylock(&m);
    if (rc != EOWNERDEAD) fail("%s: trylock after owner death returned %s", name, err_name(rc));
    recover(&m, name);
    join_thread(start_thread(lock_and_die, &m));
    struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000LL);
    rc = pthread_mutex_timedlock(&m, &ts);
    if (rc != EOWNERDEAD) fail("%s: timedlock after owner death returned %s", name, err_name(rc));
    recover(&m, name);

    /* a waiter blocked while the owner dies (the owner is cancelled while holding it) */
    struct holder h;
    struct waiter w = {&m, -1};
    holder_start(&h, &m, 0);
    pthread_t wt = start_thread(blocked_waiter, &w);
    usleep(20000); /* let it block */
    OK(pthread_cancel(h.thread)); /* cancelled in usleep, still holding the mutex */
    join_thread(h.thread);
    join_thread(wt);
    if (w.rc != EOWNERDEAD) fail("%s: blocked waiter got %s when the owner died, expected EOWNERDEAD", name, err_name(w.rc));
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));

    /* unlock without consistent: ENOTRECOVERABLE */
    join_thread(start_thread(lock_and_die, &m));
    EXPECT_RC(pthread_mutex_lock(&m), EOWNERDEAD);
    OK(pthread_mutex_unlock(&m));
    EXPECT_RC(pthread_mutex_lock(&m), ENOTRECOVERABLE);
    EXPECT_RC(pthread_mutex_trylock(&m), ENOTRECOVERABLE);
    OK(pthread_mutex_destroy(&m));

    /* contended exact counts */
    robust_init(&m, type, 0);
    counter = 0;
    pthread_t t[3];
    for (int i = 0; i < 3; i++) t[i] = start_thread(incr, &m);
    for (int i = 0; i < 3; i++) join_thread(t[i]);
    if (counter != 30000) fail("%s: robust mutex counter %ld, expected 30000", name, counter);
    OK(pthread_mutex_destroy(&m));

    /* process-shared: a child dies holding it */
    struct shared {
        pthread_mutex_t m;
        volatile int held;
    } *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) fail("mmap: %s", strerror(errno));
    pthread_mutex_t *pm = &sh->m;
    robust_init(pm, type, 1);
    pid_t pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        if (pthread_mutex_lock(pm) != 0) _exit(2);
        _exit(0); /* dies holding it */
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("%s: child failed", name);
    rc = pthread_mutex_lock(pm);
    if (rc != EOWNERDEAD) fail("%s: lock after the owning process died returned %s", name, err_name(rc));
    recover(pm, name);
    /* and a parent thread blocked on it while the child dies */
    pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        if (pthread_mutex_lock(pm) != 0) _exit(2);
        __atomic_store_n(&sh->held, 1, __ATOMIC_SEQ_CST);
        usleep(30000);
        _exit(0);
    }
    while (!__atomic_load_n(&sh->held, __ATOMIC_SEQ_CST)) usleep(200);
    w = (struct waiter){pm, -1};
    wt = start_thread(blocked_waiter, &w);
    join_thread(wt);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("%s: child 2 failed", name);
    if (w.rc != EOWNERDEAD) fail("%s: waiter on a dying process's mutex got %s", name, err_name(w.rc));
    OK(pthread_mutex_lock(pm));
    OK(pthread_mutex_unlock(pm));
    OK(pthread_mutex_destroy(pm));
    munmap(sh, sizeof *sh);
}

int main(void) {
    test_begin("robust", 30);
    one_type(PTHREAD_MUTEX_NORMAL, "robust normal");
    one_type(PTHREAD_MUTEX_ERRORCHECK, "robust errorcheck");
    one_type(PTHREAD_MUTEX_RECURSIVE, "robust recursive");
    return 0;
}
