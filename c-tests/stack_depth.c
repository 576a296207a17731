/* How much of the calling thread's stack the library uses, measured on a thread whose
 * stack is painted with a pattern: after the call, the lowest byte no longer holding
 * the pattern shows how deep the call went.
 *
 *   lock      a contended pthread_mutex_lock + unlock (spinning, sleeping, and with
 *             SPINMUTEX_TRACE on, trace events); prints its depth;
 *   rwlock    the same for an rwlock: a contended pthread_rwlock_wrlock + unlock, then a
 *             contended pthread_rwlock_rdlock + unlock (the writer that holds it wakes
 *             the reader);
 *   init      pthread_mutex_init through a function of the program's that two others
 *             call (under `auto` such a call unwinds the stack: auto/wrapper.rs); the
 *             warm figure is the deeper of the second and third inits;
 *   handler   SIGUSR2 sent to the thread itself: with SPINMUTEX_STATS on, the library's
 *             on-demand report runs on the thread's stack. The depth of a do-nothing
 *             handler (SIGUSR1) is subtracted, which leaves out the kernel's signal
 *             frame (its size depends on the processor's register state).
 *
 * Each is measured warm (after one untimed call) and cold (the first call). Prints
 * "MODE cold N warm N" on stdout and fails if the warm figure exceeds LIMIT bytes.
 * A thread with PTHREAD_STACK_MIN bytes of stack and 4 KiB of its own data also runs
 * both, which must not crash.
 *
 * usage: stack_depth lock|rwlock|init|handler [LIMIT] */
#include "check.h"

#include <sys/mman.h>

#define STACK_BYTES (256 * 1024)
#define PATTERN 0xa5
#define UNPAINTED 160 /* room for the painter's own frame and red zone, never painted */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static char *stack_base;
static volatile int usr1_seen;

static void on_usr1(int sig) {
    (void)sig;
    usr1_seen = 1;
}

__attribute__((noinline)) static void paint(char *from, char *to) {
    for (volatile char *p = from; p < to; p++) *p = (char)PATTERN;
}

/* Lock and unlock `m`, which a holder thread keeps for a few milliseconds. */
static void lock_unlock(void) {
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
}

static void rw_write_unlock(void);
static void rw_read_unlock(void);

/* A thread that write-locks `rw` and keeps it for a few milliseconds. */
static void *rw_holder(void *arg) {
    volatile int *holding = arg;
    OK(pthread_rwlock_wrlock(&rw));
    __atomic_store_n(holding, 1, __ATOMIC_SEQ_CST);
    sleep_ms(3);
    OK(pthread_rwlock_unlock(&rw));
    return NULL;
}

/* Starts a holder thread that keeps `rw` write-locked for a few milliseconds. */
static pthread_t rw_holder_start(volatile int *holding) {
    *holding = 0;
    pthread_t t = start_thread(rw_holder, (void *)holding);
    while (!__atomic_load_n(holding, __ATOMIC_SEQ_CST)) usleep(100);
    return t;
}

/* Runs `op` while a holder thread keeps `rw` write-locked for a few milliseconds. */
static void with_rw_holder(void (*op)(void)) {
    volatile int holding;
    pthread_t t = rw_holder_start(&holding);
    op();
    join_thread(t);
}

static long depth_of(void (*op)(void));

/* The deeper of a contended write and a contended read, each measured alone. */
static long rw_depth(void) {
    volatile int holding;
    pthread_t t = rw_holder_start(&holding);
    long w = depth_of(rw_write_unlock);
    join_thread(t);
    t = rw_holder_start(&holding);
    long r = depth_of(rw_read_unlock);
    join_thread(t);
    return w > r ? w : r;
}

static void rw_write_unlock(void) {
    OK(pthread_rwlock_wrlock(&rw));
    OK(pthread_rwlock_unlock(&rw));
}

static void rw_read_unlock(void) {
    OK(pthread_rwlock_rdlock(&rw));
    OK(pthread_rwlock_unlock(&rw));
}

/* Both modes, each waiting for a writer. */
static void rw_both(void) {
    with_rw_holder(rw_write_unlock);
    with_rw_holder(rw_read_unlock);
}

static pthread_mutex_t made[2];
static volatile int made_count;

/* A wrapper of pthread_mutex_init, and its two callers (the stores keep them apart and
 * their frames on the stack). */
__attribute__((noinline)) static void make_one(pthread_mutex_t *p) {
    OK(pthread_mutex_init(p, NULL));
    made_count++;
}

__attribute__((noinline)) static void init_here(void) {
    make_one(&made[0]);
    made_count += 2;
}

__attribute__((noinline)) static void init_there(void) {
    make_one(&made[1]);
    made_count += 3;
}

static void report_signal(void) { pthread_kill(pthread_self(), SIGUSR2); }
static void quiet_signal(void) { pthread_kill(pthread_self(), SIGUSR1); }

/* Bytes below the caller's stack pointer that `op` touched (at least UNPAINTED). */
__attribute__((noinline)) static long depth_of(void (*op)(void)) {
    char *sp;
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    char *low = stack_base + 4096;
    paint(low, sp - UNPAINTED);
    op();
    char *p = low;
    while (p < sp - UNPAINTED && (unsigned char)*p == PATTERN) p++;
    return sp - p;
}

struct job {
    const char *mode;
    long cold, warm;
};

static void *measure(void *arg) {
    struct job *j = arg;
    if (strcmp(j->mode, "lock") == 0) {
        struct holder h;
        holder_start(&h, &m, 3);
        j->cold = depth_of(lock_unlock);
        holder_release(&h);
        holder_start(&h, &m, 3);
        j->warm = depth_of(lock_unlock);
        holder_release(&h);
    } else if (strcmp(j->mode, "rwlock") == 0) {
        /* As for the mutex (whose holder calls lock first): the program binds
         * pthread_rwlock_rdlock before the cold measure, so that it is the library's
         * first contended call that is measured, not the dynamic linker's. */
        rw_read_unlock();
        j->cold = rw_depth();
        j->warm = rw_depth();
    } else if (strcmp(j->mode, "init") == 0) {
        j->cold = depth_of(init_here);
        long second = depth_of(init_there), third = depth_of(init_here);
        j->warm = second > third ? second : third;
    } else {
        /* Give the report something to list: a contended mutex and a contended rwlock,
         * with call sites. */
        struct holder h;
        holder_start(&h, &m, 3);
        lock_unlock();
        holder_release(&h);
        rw_both();
        long quiet = depth_of(quiet_signal);
        if (!usr1_seen) fail("SIGUSR1 was not delivered");
        j->cold = depth_of(report_signal) - quiet;
        j->warm = depth_of(report_signal) - quiet;
    }
    return NULL;
}

/* The small-stack case: PTHREAD_STACK_MIN and a little data of the thread's own. */
static void *small(void *arg) {
    volatile char data[4 * 1024];
    memset((char *)data, 1, sizeof data);
    if (strcmp((const char *)arg, "lock") == 0) lock_unlock();
    else if (strcmp((const char *)arg, "rwlock") == 0) rw_both();
    else if (strcmp((const char *)arg, "init") == 0) {
        init_there();
        init_here();
    }
    else report_signal();
    return (void *)(long)data[100];
}

int main(int argc, char **argv) {
    test_begin("stack_depth", 30);
    if (argc < 2) fail("usage: stack_depth lock|rwlock|init|handler [LIMIT]");
    long limit = argc > 2 ? atol(argv[2]) : 1024;
    signal(SIGUSR1, on_usr1);
    /* Without the library's report handler (no preload, or statistics off) SIGUSR2
     * would end the process: measure a do-nothing handler there instead. */
    if (getenv("SPINMUTEX_STATS") == NULL) signal(SIGUSR2, on_usr1);

    stack_base = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack_base == MAP_FAILED) fail("mmap: %s", strerror(errno));
    pthread_attr_t a;
    OK(pthread_attr_init(&a));
    OK(pthread_attr_setstack(&a, stack_base, STACK_BYTES));
    struct job j = {argv[1], 0, 0};
    pthread_t t;
    OK(pthread_create(&t, &a, measure, &j));
    join_thread(t);
    OK(pthread_attr_destroy(&a));
    printf("%s cold %ld warm %ld\n", j.mode, j.cold, j.warm);
    fflush(stdout);
    if (j.warm > limit) fail("%s uses %ld bytes of the caller's stack (limit %ld)", j.mode, j.warm, limit);

    struct holder h;
    holder_start(&h, &m, 3);
    OK(pthread_attr_init(&a));
    OK(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN));
    OK(pthread_create(&t, &a, small, argv[1]));
    join_thread(t);
    OK(pthread_attr_destroy(&a));
    holder_release(&h);
    return 0;
}
