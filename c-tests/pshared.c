/* Process-shared mutex and condition variable in MAP_SHARED memory, between a parent and
 * two children (each with two threads), for each mutex type:
 *   exact count of increments made under the mutex by all processes;
 *   a condvar ping-pong (turns handed parent -> child -> parent) with an exact number
 *   of turns, which loses a wake-up (and hangs until the watchdog) if the futex
 *   operations are process-private;
 *   pthread_mutex_timedlock across processes times out while the other process holds.
 * It starts with single-threaded processes only (the parent has created no thread yet,
 * and a forked child is single-threaded): a lock that takes shortcuts when the process
 * has one thread must still be atomic on a process-shared mutex. It ends with one
 * memfd mapped twice in one process: the same mutex and condvar at two addresses. */
#include "check.h"

#include <sys/mman.h>
#include <sys/syscall.h>
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
/* sh->m as a process-shared mutex of `type`. */
static void init_shared_mutex(int type) {
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_settype(&ma, type));
    OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
    OK(pthread_mutex_init(&sh->m, &ma));
    OK(pthread_mutexattr_destroy(&ma));
}

static void single_threaded_processes(int type, const char *name) {
    init_shared_mutex(type);
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
    init_shared_mutex(type);
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

/* One memfd mapped twice in this process: the same process-shared mutex and condvar
 * seen at two addresses. Threads using either address must exclude each other and
 * wake each other (shared futexes are keyed by the memory, not the address). */
struct twice {
    struct shared *view[2];
    long per_thread;
};
static struct twice tw;
static void *twice_incr(void *arg) {
    long which = (long)arg;
    struct shared *s = tw.view[which & 1];
    for (long i = 0; i < tw.per_thread; i++) {
        OK(pthread_mutex_lock(&s->m));
        long v = s->counter;
        if ((i & 127) == 0) sched_yield();
        s->counter = v + 1;
        OK(pthread_mutex_unlock(&s->m));
    }
    return NULL;
}
static void *twice_pong(void *arg) {
    (void)arg;
    struct shared *s = tw.view[1];
    for (int i = 0; i < TURNS; i++) {
        OK(pthread_mutex_lock(&s->m));
        while (s->turn % 2 != 1) OK(pthread_cond_wait(&s->cv, &s->m));
        s->turn++;
        OK(pthread_cond_broadcast(&s->cv));
        OK(pthread_mutex_unlock(&s->m));
    }
    return NULL;
}

static void mapped_twice(void) {
    int fd = (int)syscall(SYS_memfd_create, "spinmutex-pshared", 0);
    if (fd < 0) fail("memfd_create: %s", strerror(errno));
    if (ftruncate(fd, 4096) != 0) fail("ftruncate: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
        tw.view[i] = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (tw.view[i] == MAP_FAILED) fail("mmap: %s", strerror(errno));
    }
    close(fd);
    if (tw.view[0] == tw.view[1]) fail("the two mappings share an address");
    struct shared *s = tw.view[0];
    pthread_mutexattr_t ma;
    OK(pthread_mutexattr_init(&ma));
    OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
    OK(pthread_mutex_init(&s->m, &ma));
    OK(pthread_mutexattr_destroy(&ma));
    pthread_condattr_t ca;
    OK(pthread_condattr_init(&ca));
    OK(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED));
    OK(pthread_cond_init(&s->cv, &ca));
    OK(pthread_condattr_destroy(&ca));
    s->counter = 0;
    s->turn = 0;
    tw.per_thread = ITERS;
    pthread_t t[4];
    for (long i = 0; i < 4; i++) t[i] = start_thread(twice_incr, (void *)i);
    for (int i = 0; i < 4; i++) join_thread(t[i]);
    if (tw.view[1]->counter != 4L * ITERS) fail("mapped twice: counter %ld, expected %ld", tw.view[1]->counter, 4L * ITERS);
    /* Ping-pong: this thread through view 0, the other through view 1. */
    pthread_t p = start_thread(twice_pong, NULL);
    for (int i = 0; i < TURNS; i++) {
        OK(pthread_mutex_lock(&s->m));
        while (s->turn % 2 != 0) OK(pthread_cond_wait(&s->cv, &s->m));
        s->turn++;
        OK(pthread_cond_broadcast(&s->cv));
        OK(pthread_mutex_unlock(&s->m));
    }
    join_thread(p);
    if (tw.view[1]->turn != 2 * TURNS) fail("mapped twice: %d turns, expected %d", tw.view[1]->turn, 2 * TURNS);
    /* Held through one address: timed out through the other, then woken through it. */
    struct holder h;
    holder_start(&h, &tw.view[1]->m, 0);
    EXPECT_RC(pthread_mutex_trylock(&tw.view[0]->m), EBUSY);
    struct timespec ts = deadline_in(CLOCK_REALTIME, 20000000LL);
    EXPECT_RC(pthread_mutex_timedlock(&tw.view[0]->m, &ts), ETIMEDOUT);
    holder_release(&h);
    holder_start(&h, &tw.view[1]->m, 30);
    ts = deadline_in(CLOCK_REALTIME, 10000000000LL);
    OK(pthread_mutex_timedlock(&tw.view[0]->m, &ts));
    OK(pthread_mutex_unlock(&tw.view[0]->m));
    join_thread(h.thread);
    OK(pthread_cond_destroy(&s->cv));
    OK(pthread_mutex_destroy(&s->m));
    munmap(tw.view[0], 4096);
    munmap(tw.view[1], 4096);
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
    mapped_twice();
    return 0;
}
