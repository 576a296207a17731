/* What glibc lets a program do with a normal (or adaptive, or default) mutex although
 * POSIX leaves it undefined, and what real programs and glibc's own tests rely on. Every
 * strategy must give glibc's answers, and none may hang where glibc does not.
 *
 * usage: normal_rules GROUP...   (no argument: every group)
 *   semaphore  the owner locks its mutex again to wait for another thread's unlock
 *              (glibc's tst-cond14): lock, timedlock (which times out first) and trylock
 *   double     an unlock of a free mutex returns 0, for a static, an init(NULL), a
 *              normal and an adaptive mutex, and the mutex works on (glibc's destroy
 *              then returns EBUSY: every unlock counted a user down)
 *   waiters    another thread's unlock while threads wait for the lock lets one in,
 *              and every waiter gets it in turn
 *   handover   a mutex used as a semaphore between threads: taken by one, given back
 *              by another, many rounds, with a second taker waiting
 *   relay      a mutex used as a semaphore by three takers (lock, timedlock, trylock),
 *              each release made by one relay thread on request: an exact count, no
 *              taker starved (each takes 1 in 200 of the rounds; a third is its
 *              share; not under kernel, a known limit), and the mutex free at the end
 *   condexit   a thread whose pthread_cond_timedwait timed out exits holding the
 *              mutex; another thread unlocks it (0) and the mutex is free again
 *   exited     a thread exits holding the mutex while another waits for it: the waiter
 *              keeps waiting (glibc's word stays locked) until a third thread unlocks
 *   heir       threads exit holding the mutex, each after asking another thread to
 *              unlock it, while two threads' trylocks try to take the released
 *              hold over (under kernel, the kernel gives a dead owner's hold to a
 *              waiter): every release arrives, no thread waits for ever, 2000 rounds
 *   forkheld   in a child after fork, a mutex another parent thread held is locked:
 *              timedlock times out (glibc blocks), an unlock by the child frees it
 *   early      a fork before every library constructor (from .preinit_array): in the
 *              child, __owner after a lock is the thread's real id */
#include "check.h"

#include <sys/syscall.h>
#include <sys/wait.h>

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

static struct timespec in_ms(long ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

#define spawn start_thread
#define join join_thread

/* ---- semaphore ---- */

static void *unlock_later(void *arg) {
    sleep_ms(10);
    OK(pthread_mutex_unlock((pthread_mutex_t *)arg));
    return NULL;
}

static void semaphore_on(pthread_mutex_t *m) {
    OK(pthread_mutex_lock(m));
    EXPECT_RC(pthread_mutex_trylock(m), EBUSY);
    struct timespec soon = in_ms(30);
    EXPECT_RC(pthread_mutex_timedlock(m, &soon), ETIMEDOUT);
    for (int round = 0; round < 10; round++) {
        pthread_t t = spawn(unlock_later, m);
        OK(pthread_mutex_lock(m)); /* waits for the other thread's unlock */
        join(t);
    }
    pthread_t t = spawn(unlock_later, m);
    join(t);
    OK(pthread_mutex_trylock(m)); /* given back while we did not wait */
    OK(pthread_mutex_unlock(m));
}

static void semaphore(void) {
    static pthread_mutex_t fixed = PTHREAD_MUTEX_INITIALIZER;
    semaphore_on(&fixed);
    pthread_mutex_t m;
    OK(pthread_mutex_init(&m, NULL));
    semaphore_on(&m);
    OK(pthread_mutex_destroy(&m));
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP));
    OK(pthread_mutex_init(&m, &a));
    semaphore_on(&m);
    OK(pthread_mutex_destroy(&m));
}

/* ---- double ---- */

static void double_on(pthread_mutex_t *m) {
    OK(pthread_mutex_unlock(m)); /* never locked */
    OK(pthread_mutex_lock(m));
    OK(pthread_mutex_unlock(m));
    OK(pthread_mutex_unlock(m)); /* again */
    OK(pthread_mutex_trylock(m));
    OK(pthread_mutex_unlock(m));
    OK(pthread_mutex_lock(m));
    OK(pthread_mutex_unlock(m));
}

static void double_unlock(void) {
    static pthread_mutex_t fixed = PTHREAD_MUTEX_INITIALIZER;
    double_on(&fixed);
    pthread_mutex_t m;
    OK(pthread_mutex_init(&m, NULL));
    double_on(&m);
    /* glibc counts users down on every unlock, so its destroy refuses now */
    EXPECT_RC(pthread_mutex_destroy(&m), EBUSY);
    const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ADAPTIVE_NP, PTHREAD_MUTEX_DEFAULT};
    for (unsigned i = 0; i < sizeof types / sizeof types[0]; i++) {
        pthread_mutexattr_t a;
        OK(pthread_mutexattr_init(&a));
        OK(pthread_mutexattr_settype(&a, types[i]));
        OK(pthread_mutex_init(&m, &a));
        double_on(&m);
        EXPECT_RC(pthread_mutex_destroy(&m), EBUSY);
    }
}

/* ---- waiters ---- */

enum { WAITERS = 3 };
static pthread_mutex_t shared_m = PTHREAD_MUTEX_INITIALIZER;
static int inside;

static void *wait_then_release(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&shared_m));
    __atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
    sleep_ms(5);
    OK(pthread_mutex_unlock(&shared_m));
    return NULL;
}

static void *release_for_owner(void *arg) {
    (void)arg;
    OK(pthread_mutex_unlock(&shared_m));
    return NULL;
}

static void waiters(void) {
    for (int round = 0; round < 5; round++) {
        inside = 0;
        OK(pthread_mutex_lock(&shared_m));
        pthread_t w[WAITERS];
        for (int i = 0; i < WAITERS; i++) w[i] = spawn(wait_then_release, NULL);
        sleep_ms(50); /* all of them are waiting now */
        join(spawn(release_for_owner, NULL));
        for (int i = 0; i < WAITERS; i++) join(w[i]);
        if (inside != WAITERS) fail("round %d: %d of %d waiters got the lock", round, inside, WAITERS);
        OK(pthread_mutex_trylock(&shared_m));
        OK(pthread_mutex_unlock(&shared_m));
    }
}

/* ---- handover ---- */

enum { ROUNDS = 200 };
static pthread_mutex_t token = PTHREAD_MUTEX_INITIALIZER;
static int taken;

static int taken_now(void) { return __atomic_load_n(&taken, __ATOMIC_SEQ_CST); }

static void *taker(void *arg) {
    (void)arg;
    for (;;) {
        OK(pthread_mutex_lock(&token));
        if (__atomic_add_fetch(&taken, 1, __ATOMIC_SEQ_CST) >= ROUNDS) return NULL; /* keeps it */
    }
}

/* Two threads take the token; this one gives it back each time, owner or not. */
static void handover(void) {
    OK(pthread_mutex_lock(&token)); /* the token starts taken */
    pthread_t t[2] = {spawn(taker, NULL), spawn(taker, NULL)};
    for (int i = 0; i <= ROUNDS; i++) {
        OK(pthread_mutex_unlock(&token));
        while (taken_now() == i) sched_yield();
    }
    join(t[0]);
    join(t[1]);
}

/* ---- relay ---- */

enum { RELAY_TAKERS = 3, RELAY_ROUNDS = 20000 };
static pthread_mutex_t relayed = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t requests = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t requested = PTHREAD_COND_INITIALIZER;
static int release_wanted, relay_done, relay_inside;
static long relay_rounds, relay_taken[RELAY_TAKERS];

/* Releases `relayed` for whichever taker holds it, on request. */
static void *relay(void *arg) {
    (void)arg;
    for (;;) {
        OK(pthread_mutex_lock(&requests));
        while (!release_wanted && !relay_done) OK(pthread_cond_wait(&requested, &requests));
        int release = release_wanted;
        release_wanted = 0;
        OK(pthread_mutex_unlock(&requests));
        if (!release) return NULL;
        if (__atomic_sub_fetch(&relay_inside, 1, __ATOMIC_SEQ_CST) != 0) fail("relay: two holders");
        OK(pthread_mutex_unlock(&relayed)); /* not the owner */
    }
}

static void *relay_taker(void *arg) {
    unsigned seed = (unsigned)(long)arg + 1;
    while (__atomic_load_n(&relay_rounds, __ATOMIC_SEQ_CST) < RELAY_ROUNDS) {
        seed = seed * 1103515245 + 12345;
        int rc;
        if (seed >> 16 & 1) {
            rc = pthread_mutex_lock(&relayed);
        } else if (seed >> 17 & 1) {
            struct timespec soon = in_ms(1);
            if ((rc = pthread_mutex_timedlock(&relayed, &soon)) == ETIMEDOUT) continue;
        } else if ((rc = pthread_mutex_trylock(&relayed)) == EBUSY) {
            sched_yield();
            continue;
        }
        if (rc) fail("relay taker: %s", err_name(rc));
        if (__atomic_add_fetch(&relay_inside, 1, __ATOMIC_SEQ_CST) != 1) fail("relay taker: two holders");
        __atomic_add_fetch(&relay_rounds, 1, __ATOMIC_SEQ_CST);
        relay_taken[(long)arg]++;
        OK(pthread_mutex_lock(&requests));
        release_wanted = 1;
        OK(pthread_cond_signal(&requested));
        OK(pthread_mutex_unlock(&requests));
    }
    return NULL;
}

static void relay_group(void) {
    pthread_t r = spawn(relay, NULL), t[RELAY_TAKERS];
    for (long i = 0; i < RELAY_TAKERS; i++) t[i] = spawn(relay_taker, (void *)i);
    for (int i = 0; i < RELAY_TAKERS; i++) join(t[i]);
    OK(pthread_mutex_lock(&requests));
    relay_done = 1;
    OK(pthread_cond_signal(&requested));
    OK(pthread_mutex_unlock(&requests));
    join(r);
    /* Under kernel an owner locking again takes each release of its hold straight back,
     * while a taker queued in the kernel waits (DESIGN.md, "The kernel strategy"). */
    const char *strategy = getenv("SPINMUTEX_STRATEGY");
    int starves = strategy && strcmp(strategy, "kernel") == 0;
    for (int i = 0; i < RELAY_TAKERS && !starves; i++)
        if (relay_taken[i] < RELAY_ROUNDS / 200) fail("relay: taker %d starved: %ld of %ld rounds", i, relay_taken[i], relay_rounds);
    OK(pthread_mutex_trylock(&relayed));
    OK(pthread_mutex_unlock(&relayed));
}

/* ---- condexit ---- */

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *time_out_and_exit(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&cm));
    struct timespec soon = in_ms(20);
    EXPECT_RC(pthread_cond_timedwait(&cv, &cm, &soon), ETIMEDOUT);
    return NULL; /* exits holding cm */
}

static void condexit(void) {
    join(spawn(time_out_and_exit, NULL));
    OK(pthread_mutex_unlock(&cm));
    OK(pthread_mutex_trylock(&cm));
    OK(pthread_mutex_unlock(&cm));
    OK(pthread_mutex_lock(&cm));
    OK(pthread_mutex_unlock(&cm));
}

/* ---- exited ---- */

static pthread_mutex_t left = PTHREAD_MUTEX_INITIALIZER;
static int got_left, holds_left;

static void *exit_holding(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&left));
    __atomic_store_n(&holds_left, 1, __ATOMIC_SEQ_CST);
    sleep_ms(30);
    return NULL;
}

static void *wait_for_left(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&left));
    __atomic_store_n(&got_left, 1, __ATOMIC_SEQ_CST);
    OK(pthread_mutex_unlock(&left));
    return NULL;
}

static void exited(void) {
    pthread_t x = spawn(exit_holding, NULL);
    while (!__atomic_load_n(&holds_left, __ATOMIC_SEQ_CST)) sleep_ms(1);
    pthread_t w = spawn(wait_for_left, NULL);
    join(x);
    sleep_ms(60);
    if (__atomic_load_n(&got_left, __ATOMIC_SEQ_CST)) fail("the waiter got a mutex whose owner exited holding it");
    OK(pthread_mutex_unlock(&left)); /* for the thread that is gone */
    join(w);
    if (!got_left) fail("the waiter never got the mutex");
}

/* ---- heir ---- */

enum { HEIR_ROUNDS = 2000 };
static pthread_mutex_t inherited;
static int heir_release_wanted, heir_done;

/* Unlocks `inherited` for whichever thread holds or held it, on request. */
static void *heir_releaser(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&heir_done, __ATOMIC_SEQ_CST)) {
        if (__atomic_exchange_n(&heir_release_wanted, 0, __ATOMIC_SEQ_CST)) OK(pthread_mutex_unlock(&inherited));
        else sched_yield();
    }
    return NULL;
}

/* Asks for the release of the caller's hold, once the one asked before was made. */
static void ask_release(void) {
    while (__atomic_load_n(&heir_release_wanted, __ATOMIC_SEQ_CST)) sched_yield();
    __atomic_store_n(&heir_release_wanted, 1, __ATOMIC_SEQ_CST);
}

/* Exits holding it, 0-4 us after asking (`arg`): spread over the window in which the
 * trylocks may be taking the released hold over. */
static void *lock_then_exit(void *arg) {
    OK(pthread_mutex_lock(&inherited));
    ask_release();
    compute_for_us((long)arg % 5);
    return NULL;
}

static void *trylock_then_exit(void *arg) {
    (void)arg;
    int rc;
    while ((rc = pthread_mutex_trylock(&inherited)) == EBUSY) {
    }
    OK(rc);
    ask_release();
    return NULL;
}

static void heir(void) {
    pthread_t r = spawn(heir_releaser, NULL);
    for (int round = 0; round < HEIR_ROUNDS; round++) {
        OK(pthread_mutex_init(&inherited, NULL));
        pthread_t t[4] = {spawn(lock_then_exit, (void *)(long)(round * 7)), spawn(lock_then_exit, (void *)(long)(round * 13)),
                          spawn(trylock_then_exit, NULL), spawn(trylock_then_exit, NULL)};
        for (int i = 0; i < 4; i++) join(t[i]);
        while (__atomic_load_n(&heir_release_wanted, __ATOMIC_SEQ_CST)) sched_yield();
        struct timespec soon = in_ms(2000);
        int rc = pthread_mutex_timedlock(&inherited, &soon);
        if (rc) fail("heir: round %d: the mutex is not free after every release: %s", round, err_name(rc));
        OK(pthread_mutex_unlock(&inherited));
    }
    __atomic_store_n(&heir_done, 1, __ATOMIC_SEQ_CST);
    join(r);
}

/* ---- forkheld ---- */

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t go = PTHREAD_MUTEX_INITIALIZER;

static void *hold_across_fork(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&held));
    OK(pthread_mutex_lock(&go)); /* until the parent has forked */
    OK(pthread_mutex_unlock(&go));
    OK(pthread_mutex_unlock(&held));
    return NULL;
}

static void forkheld(void) {
    OK(pthread_mutex_lock(&go));
    pthread_t t = spawn(hold_across_fork, NULL);
    while (pthread_mutex_trylock(&held) == 0) { /* wait until the thread holds it */
        OK(pthread_mutex_unlock(&held));
        sleep_ms(1);
    }
    pid_t pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        struct timespec soon = in_ms(50);
        EXPECT_RC(pthread_mutex_timedlock(&held, &soon), ETIMEDOUT);
        EXPECT_RC(pthread_mutex_trylock(&held), EBUSY);
        OK(pthread_mutex_unlock(&held)); /* frees it, as glibc does */
        OK(pthread_mutex_lock(&held));
        OK(pthread_mutex_unlock(&held));
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the child failed (status %#x)", status);
    OK(pthread_mutex_unlock(&go));
    join(t);
}

/* ---- early ---- */

static pid_t early_child = -2; /* the fork's result; -2: no fork */

static void fork_before_constructors(int argc, char **argv, char **envp) {
    (void)envp;
    int wanted = argc == 1;
    for (int i = 1; i < argc; i++) wanted |= strcmp(argv[i], "early") == 0;
    if (!wanted) return;
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m); /* the library may learn this thread's id here */
    pthread_mutex_unlock(&m);
    early_child = fork();
}
__attribute__((section(".preinit_array"), used)) static void (*preinit)(int, char **, char **) =
    fork_before_constructors;

static void *lock_errorcheck(void *arg) {
    pthread_mutex_t *m = (pthread_mutex_t *)arg;
    OK(pthread_mutex_lock(m));
    if (m->__data.__owner != gettid_()) fail("thread: __owner %d, the thread is %d", m->__data.__owner, gettid_());
    OK(pthread_mutex_unlock(m));
    return NULL;
}

static void early(void) {
    if (early_child == -1) fail("fork in .preinit_array: %s", strerror(errno));
    if (early_child == -2) fail("the .preinit_array function did not run");
    pthread_mutexattr_t a;
    pthread_mutex_t m;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutex_init(&m, &a));
    OK(pthread_mutex_lock(&m));
    if (m.__data.__owner != gettid_()) fail("__owner %d after a lock, the thread is %d", m.__data.__owner, gettid_());
    pthread_t t = spawn(lock_errorcheck, &m);
    sleep_ms(20);
    OK(pthread_mutex_unlock(&m));
    join(t);
    OK(pthread_mutex_destroy(&m));
    if (early_child == 0) _exit(0); /* the child: done */
    int status;
    if (waitpid(early_child, &status, 0) != early_child) fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the early child failed (status %#x)", status);
}

int main(int argc, char **argv) {
    test_begin("normal_rules", 30);
    struct {
        const char *name;
        void (*run)(void);
    } groups[] = {
        {"semaphore", semaphore}, {"double", double_unlock}, {"waiters", waiters},   {"handover", handover}, {"relay", relay_group},
        {"condexit", condexit},   {"exited", exited},        {"heir", heir},            {"forkheld", forkheld},    {"early", early},
    };
    for (unsigned g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        int wanted = argc == 1;
        for (int i = 1; i < argc; i++) wanted |= strcmp(argv[i], groups[g].name) == 0;
        if (early_child == 0 && strcmp(groups[g].name, "early") != 0) continue; /* the early child */
        if (wanted) groups[g].run();
    }
    return 0;
}
