/* Process-shared mutex and condition variable in MAP_SHARED memory, between a parent and
 * two children (each with two threads), for each mutex type:
 *   exact count of increments made under the mutex by all processes;
 *   a condvar ping-pong (turns handed parent -> child -> parent) with an exact number
 *   of turns, which loses a wake-up (and hangs until the watchdog) if the futex
 *   operations are process-private;
 *   pthread_mutex_timedlock across processes times out while the other process holds.
 * It starts with single-threaded processes only (the parent has created no thread yet,
 * and a forked child is single-threaded): a lock that takes shortcuts when the process
 * has one thread must still be atomic on a process-shared mutex. */
#include "check.h"

#include <sys/mman.h>
#include <sys/wait.h>

#define PROCS 3 /* parent + 2 children */
#define THREADS 2
#define ITERS 10000
#define TURNS 1000

struct shared {
    pthread_mutex_t m;
    pthread_cond_t cv;
    volatile long counter;
    int turn;
    int started;
    volatile int holding;
};

static struct shared *sh;

static void *incr(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        OK(pthread_mutex_lock(&sh->m));
        int rec = sh->m.__data.__kind & 3;
        if (rec == PTHREAD_MUTEX_RECURSIVE) OK(pthread_mutex_lock(&sh->m));
        long v = sh->counter;
        if ((i & 127) == 0) sched_yield();
        sh->counter = v + 1;
        if (rec == PTHREAD_MUTEX_RECURSIVE) OK(pthread_mutex_unlock(&sh->m));
        OK(pthread_mutex_unlock(&sh->m));
    }
    return NULL;
}

static void increments(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) t[i] = start_thread(incr, NULL);
    for (int i = 0; i < THREADS; i++) join_thread(t[i]);
}

/* Player `me` (0 or 1) waits for its turn and hands it to the other, TURNS times. */
static void ping_pong(int me) {
    for (int i = 0; i < TURNS; i++) {
        OK(pthread_mutex_lock(&sh->m));
        while (sh->turn % 2 != me) OK(pthread_cond_wait(&sh->cv, &sh->m));
        sh->turn++;
        OK(pthread_cond_broadcast(&sh->cv));
        OK(pthread_mutex_unlock(&sh->m));
    }
}


static void reap(pid_t pid, const char *what) {
    int status;
    if (waitpid(pid, &status, 0) != pid) fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("%s: child ended with status 0x%x", what, status);
}

/* Processes with a single thread each contend on one process-shared mutex. */
static void single_threaded_processes(int type, const char *name) {
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, type));
    OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
    OK(pthread_mutex_init(&sh->m, &ma));
    OK(pthread_mutexattr_destroy(&ma));
    sh->counter = 0;
    sh->started = 0;
    pid_t kids[PROCS - 1];
    for (int k = 0; k < PROCS - 1; k++) {
        kids[k] = fork();
        if (kids[k] < 0) fail("fork: %s", strerror(errno));
        if (kids[k] == 0) {
            test_name = "pshared (single-threaded child)";
            alarm(30);
            __atomic_add_fetch(&sh->started, 1, __ATOMIC_SEQ_CST);
            while (__atomic_load_n(&sh->started, __ATOMIC_SEQ_CST) < PROCS) {
            }
            incr(NULL);
            incr(NULL);
            _exit(0);
        }
    }
    __atomic_add_fetch(&sh->started, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&sh->started, __ATOMIC_SEQ_CST) < PROCS) {
    }
    incr(NULL);
    incr(NULL);
    for (int k = 0; k < PROCS - 1; k++) reap(kids[k], name);
    if (sh->counter != (long)PROCS * 2 * ITERS)
        fail("%s, single-threaded processes: counter %ld, expected %ld", name, sh->counter, (long)PROCS * 2 * ITERS);
    OK(pthread_mutex_destroy(&sh->m));
}

static void one_type(int type, const char *name) {
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, type));
    OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
    OK(pthread_mutex_init(&sh->m, &ma));
    OK(pthread_mutexattr_destroy(&ma));
    pthread_condattr_t ca;
    OK(pthread_condattr_init(&ca));
    OK(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED));
    OK(pthread_cond_init(&sh->cv, &ca));
    OK(pthread_condattr_destroy(&ca));
    if (!(sh->m.__data.__kind & 128)) fail("%s: process-shared mutex lacks the pshared kind bit (kind %d)", name, sh->m.__data.__kind);
    sh->counter = 0;
    sh->turn = 0;

    /* Exact count across processes. */
    pid_t kids[PROCS - 1];
    for (int k = 0; k < PROCS - 1; k++) {
        kids[k] = fork();
        if (kids[k] < 0) fail("fork: %s", strerror(errno));
        if (kids[k] == 0) {
            test_name = "pshared (child)";
            alarm(30);
            increments();
            _exit(0);
        }
    }
    increments();
    for (int k = 0; k < PROCS - 1; k++) reap(kids[k], name);
    if (sh->counter != (long)PROCS * THREADS * ITERS)
        fail("%s: counter %ld, expected %ld", name, sh->counter, (long)PROCS * THREADS * ITERS);

    /* Ping-pong through the shared condvar. */
    pid_t pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        test_name = "pshared (ping-pong child)";
        alarm(30);
        ping_pong(1);
        _exit(0);
    }
    ping_pong(0);
    reap(pid, name);
    if (sh->turn != 2 * TURNS) fail("%s: %d turns, expected %d", name, sh->turn, 2 * TURNS);

    /* Timed lock across processes. */
    sh->holding = 0;
    pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        test_name = "pshared (holder child)";
        alarm(30);
        OK(pthread_mutex_lock(&sh->m));
        __atomic_store_n(&sh->holding, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&sh->holding, __ATOMIC_SEQ_CST) != 2) usleep(200);
        sleep_ms(20); /* the parent is asleep in timedlock by now */
        OK(pthread_mutex_unlock(&sh->m));
        _exit(0);
    }
    while (__atomic_load_n(&sh->holding, __ATOMIC_SEQ_CST) != 1) usleep(200);
    EXPECT_RC(pthread_mutex_trylock(&sh->m), EBUSY);
    struct timespec ts = deadline_in(CLOCK_REALTIME, 30000000LL);
    EXPECT_RC(pthread_mutex_timedlock(&sh->m, &ts), ETIMEDOUT);
    if (now_ns(CLOCK_REALTIME) < ts_ns(&ts) - 1000000) fail("%s: cross-process timedlock timed out early", name);
    __atomic_store_n(&sh->holding, 2, __ATOMIC_SEQ_CST);
    ts = deadline_in(CLOCK_REALTIME, 10000000000LL);
    OK(pthread_mutex_timedlock(&sh->m, &ts)); /* wakes when the child unlocks */
    OK(pthread_mutex_unlock(&sh->m));
    reap(pid, name);

    OK(pthread_cond_destroy(&sh->cv));
    OK(pthread_mutex_destroy(&sh->m));
}

int main(void) {
    test_begin("pshared", 30);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) fail("mmap: %s", strerror(errno));
    /* Before any thread exists in this process. */
    single_threaded_processes(PTHREAD_MUTEX_NORMAL, "normal");
    single_threaded_processes(PTHREAD_MUTEX_RECURSIVE, "recursive");
    single_threaded_processes(PTHREAD_MUTEX_ERRORCHECK, "errorcheck");
    single_threaded_processes(PTHREAD_MUTEX_ADAPTIVE_NP, "adaptive");
    one_type(PTHREAD_MUTEX_NORMAL, "normal");
    one_type(PTHREAD_MUTEX_DEFAULT, "default");
    one_type(PTHREAD_MUTEX_RECURSIVE, "recursive");
    one_type(PTHREAD_MUTEX_ERRORCHECK, "errorcheck");
    one_type(PTHREAD_MUTEX_ADAPTIVE_NP, "adaptive");
    return 0;
}
