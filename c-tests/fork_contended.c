/* fork while other threads contend.
 * Part 1: the forking thread holds the contended mutex A (others are queued on it and
 *   may be sleeping or spinning). The child, with only one thread, unlocks A, relocks it,
 *   locks another mutex B (static, used before by the parent), then starts threads that
 *   contend on A with an exact count, and exits 0. The parent unlocks A and checks.
 *   In some rounds the child first starts a thread that comes for A while the child
 *   still holds it from the parent, and then lets it in: by waiting on a condition
 *   variable with A (glibc's own code releases it), or by unlocking A.
 * Part 2: fork without holding anything while threads contend on C, with a
 *   pthread_atfork prepare handler that takes C and parent/child handlers that release
 *   it (the pattern allocators use). The child contends on C with its own threads.
 * Part 3: the same as part 1 with _Fork() (glibc 2.34), which runs no atfork handlers:
 *   the child must still be seen as its own thread (errorcheck/recursive ownership,
 *   __owner = its tid, a condvar wait with an errorcheck mutex), and requests that the
 *   parent's sleeping threads left in the held mutex must not stall the child.
 * Part 4: a child made by the raw clone system call, as Chromium and Firefox start their
 *   sandboxed processes: no fork handler runs and glibc's cached thread id still names
 *   the parent's thread, until the child corrects it (they find it as libthread_db
 *   does); then mutexes the child locks must name the child, as glibc's own would.
 * The parent's contenders keep an exact count throughout.
 * usage: fork_contended [fork] [_Fork] [atfork] [clone]   (no argument: all four parts) */
#include "check.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define CONTENDERS 3
#define FORKS 10
#define CHILD_THREADS 2
#define CHILD_ITERS 3000

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t c = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static volatile long count_a, count_c;
static atomic_int stop;
static long done_a[CONTENDERS], done_c[CONTENDERS];

static void *contender(void *arg) {
    long id = (long)arg;
    while (!atomic_load(&stop)) {
        OK(pthread_mutex_lock(&a));
        count_a++;
        OK(pthread_mutex_unlock(&a));
        done_a[id]++;
        OK(pthread_mutex_lock(&c));
        count_c++;
        OK(pthread_mutex_unlock(&c));
        done_c[id]++;
        if ((done_c[id] & 1023) == 0) usleep(100); /* leave the forking thread some CPU */
    }
    return NULL;
}

static pthread_mutex_t *child_mutex;
static volatile long child_count;
static void *child_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < CHILD_ITERS; i++) {
        OK(pthread_mutex_lock(child_mutex));
        long v = child_count;
        if ((i & 255) == 0) sched_yield();
        child_count = v + 1;
        OK(pthread_mutex_unlock(child_mutex));
    }
    return NULL;
}

static void child_contend(pthread_mutex_t *m) {
    child_mutex = m;
    child_count = 0;
    pthread_t t[CHILD_THREADS];
    for (int i = 0; i < CHILD_THREADS; i++) t[i] = start_thread(child_worker, NULL);
    for (int i = 0; i < CHILD_THREADS; i++) join_thread(t[i]);
    if (child_count != (long)CHILD_THREADS * CHILD_ITERS)
        fail("child: count %ld, expected %ld", child_count, (long)CHILD_THREADS * CHILD_ITERS);
}

/* Errorcheck and recursive mutexes in the child: ownership is by the child's tid. */
static void child_typed_checks(void) {
    pthread_mutex_t e, r;
    init_typed(&e, PTHREAD_MUTEX_ERRORCHECK);
    init_typed(&r, PTHREAD_MUTEX_RECURSIVE);
    OK(pthread_mutex_lock(&e));
    if (e.__data.__owner != gettid()) fail("errorcheck __owner %d in the child, child tid %d", e.__data.__owner, gettid());
    EXPECT_RC(pthread_mutex_lock(&e), EDEADLK);
    OK(pthread_mutex_unlock(&e));
    EXPECT_RC(pthread_mutex_unlock(&e), EPERM);
    OK(pthread_mutex_lock(&r));
    OK(pthread_mutex_lock(&r));
    if (r.__data.__owner != gettid() || r.__data.__count != 2) fail("recursive mutex in the child: __owner %d __count %u", r.__data.__owner, r.__data.__count);
    OK(pthread_mutex_unlock(&r));
    OK(pthread_mutex_unlock(&r));
    EXPECT_RC(pthread_mutex_unlock(&r), EPERM);
}

static pthread_cond_t child_cv = PTHREAD_COND_INITIALIZER;

/* A condvar wait in the child: glibc's own code releases and retakes the mutex and
 * checks errorcheck ownership against the thread id it knows. */
static void child_condvar_checks(void) {
    pthread_mutex_t e;
    init_typed(&e, PTHREAD_MUTEX_ERRORCHECK);
    OK(pthread_mutex_lock(&e));
    struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000LL);
    int rc;
    while ((rc = pthread_cond_timedwait(&child_cv, &e, &ts)) == 0) {
    }
    if (rc != ETIMEDOUT) fail("pthread_cond_timedwait with an errorcheck mutex in the child returned %s", err_name(rc));
    if (e.__data.__owner != gettid()) fail("after the condvar wait __owner %d, child tid %d", e.__data.__owner, gettid());
    OK(pthread_mutex_unlock(&e));
    EXPECT_RC(pthread_mutex_unlock(&e), EPERM);
}

/* A thread of the child comes for `m`, which the child's thread held when it forked,
 * and must get it once that thread lets it in (`by_condvar`: by waiting on a condition
 * variable with it, else by unlocking it). On return the caller holds `m` again. */
static atomic_int handed;
static pthread_cond_t handover_cv = PTHREAD_COND_INITIALIZER;

static void *take_and_signal(void *arg) {
    pthread_mutex_t *m = arg;
    OK(pthread_mutex_lock(m));
    atomic_store(&handed, 1);
    OK(pthread_cond_signal(&handover_cv));
    OK(pthread_mutex_unlock(m));
    return NULL;
}

static void child_hands_over(pthread_mutex_t *m, int by_condvar) {
    atomic_store(&handed, 0);
    pthread_t t = start_thread(take_and_signal, m);
    usleep(1000); /* let it come for m */
    if (by_condvar) {
        while (!atomic_load(&handed)) OK(pthread_cond_wait(&handover_cv, m));
        join_thread(t); /* it unlocked m before ending; we hold it again */
    } else {
        OK(pthread_mutex_unlock(m));
        join_thread(t);
        if (!atomic_load(&handed)) fail("the child's thread ended without taking the mutex");
        OK(pthread_mutex_lock(m));
    }
}

static void prepare(void) { OK(pthread_mutex_lock(&c)); }
static void parent_after(void) { OK(pthread_mutex_unlock(&c)); }
static void child_after(void) { OK(pthread_mutex_unlock(&c)); }

static void reap(pid_t pid, const char *what, int i) {
    int status;
    if (waitpid(pid, &status, 0) != pid) fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail("%s %d: child ended with status 0x%x", what, i, status);
}

static int wanted(int argc, char **argv, const char *part) {
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], part) == 0) return 1;
    return 0;
}

/* Forks (with `make_child`: fork, or _Fork, which runs no atfork handlers) while holding
 * the contended mutex a; the child unlocks and relocks it, must be recorded as its owner,
 * and then locks and contends on a and b. */
static void fork_holding_a(pid_t (*make_child)(void), const char *how, int round) {
    static char child_name[96], what[64];
    OK(pthread_mutex_lock(&a));
    usleep(200); /* let the contenders queue up on a */
    pid_t pid = make_child();
    if (pid < 0) fail("%s: %s", how, strerror(errno));
    if (pid == 0) {
        snprintf(child_name, sizeof child_name, "fork_contended (child of %s, forked holding the mutex)", how);
        test_name = child_name;
        alarm(10);
        if (round % 3 != 0) child_hands_over(&a, round % 3 == 1);
        OK(pthread_mutex_unlock(&a));
        OK(pthread_mutex_lock(&a));
        /* The owner recorded is the child's own thread id, not the parent's. */
        if (a.__data.__owner != gettid()) fail("__owner %d after relocking in the child, child tid %d", a.__data.__owner, gettid());
        child_typed_checks();
        child_condvar_checks();
        OK(pthread_mutex_lock(&b));
        EXPECT_RC(pthread_mutex_trylock(&a), EBUSY);
        OK(pthread_mutex_unlock(&b));
        OK(pthread_mutex_unlock(&a));
        child_contend(&a);
        child_contend(&b);
        _exit(0);
    }
    OK(pthread_mutex_unlock(&a));
    snprintf(what, sizeof what, "%s holding the mutex", how);
    reap(pid, what, round);
}

/* What the browsers do in a child of a raw clone: write the child's id into glibc's
 * cached one (struct pthread's tid, at the offset glibc publishes for libthread_db). */
static void correct_glibc_cached_tid(void) {
    const unsigned *tid_field = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid"); /* bits, count, offset */
    if (!tid_field) fail("glibc publishes no _thread_db_pthread_tid");
    *(pid_t *)((char *)pthread_self() + tid_field[2]) = gettid();
}

static void raw_clone(int round) {
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid < 0) fail("clone: %s", strerror(errno));
    if (pid == 0) {
        test_name = "fork_contended (child of a raw clone)";
        alarm(10);
        correct_glibc_cached_tid();
        child_typed_checks();
        child_condvar_checks();
        _exit(0);
    }
    reap(pid, "raw clone", round);
}

int main(int argc, char **argv) {
    test_begin("fork_contended", 30);
    test_name = "fork_contended (parent)";
    /* Use b in the parent first so that whatever state it has is inherited. */
    OK(pthread_mutex_lock(&b));
    OK(pthread_mutex_unlock(&b));
    pthread_t t[CONTENDERS];
    for (long i = 0; i < CONTENDERS; i++) t[i] = start_thread(contender, (void *)i);
    /* The forks must come while the contenders contend: on a loaded machine they may
     * take a while to run at all. */
    for (int i = 0; i < CONTENDERS; i++)
        while (__atomic_load_n(&done_c[i], __ATOMIC_RELAXED) < 16) usleep(1000);

    for (int i = 0; wanted(argc, argv, "fork") && i < FORKS; i++) fork_holding_a(fork, "fork", i);
    for (int i = 0; wanted(argc, argv, "_Fork") && i < FORKS; i++) fork_holding_a(_Fork, "_Fork", i);

    for (int i = 0; wanted(argc, argv, "clone") && i < FORKS; i++) raw_clone(i);

    if (wanted(argc, argv, "atfork")) OK(pthread_atfork(prepare, parent_after, child_after));
    for (int i = 0; wanted(argc, argv, "atfork") && i < FORKS; i++) {
        usleep(500);
        pid_t pid = fork();
        if (pid < 0) fail("fork: %s", strerror(errno));
        if (pid == 0) {
            test_name = "fork_contended (child, atfork)";
            alarm(10);
            child_typed_checks();
            OK(pthread_mutex_lock(&c));
            OK(pthread_mutex_unlock(&c));
            child_contend(&c);
            OK(pthread_mutex_lock(&b));
            OK(pthread_mutex_unlock(&b));
            _exit(0);
        }
        reap(pid, "fork with atfork handlers", i);
    }

    atomic_store(&stop, 1);
    long total_a = 0, total_c = 0;
    for (int i = 0; i < CONTENDERS; i++) {
        join_thread(t[i]);
        total_a += done_a[i];
        total_c += done_c[i];
    }
    if (count_a != total_a) fail("parent: count under a %ld, expected %ld", count_a, total_a);
    if (count_c != total_c) fail("parent: count under c %ld, expected %ld", count_c, total_c);
    if (total_a == 0) fail("the contenders made no progress");
    return 0;
}
