/* The deterministic guard for "nothing touches the mutex after its release": a
 * hardware watchpoint on the lock word stops the unlocking thread right after each
 * write to it, and once the write has made the lock free, the handler unmaps the page
 * that holds the mutex, as the next owner is allowed to. Any later read of the mutex
 * by the unlock (its kind, its owner, a statistics or trace hook) then faults.
 *
 * Each case takes the contended release path: the word is left CONTENDED by a timed
 * locker that gave up (a state glibc's protocol allows: "sleepers may exist"), so the
 * unlock must swap the word and then wake. Cases: every mutex type, private and
 * process-shared, and an uncontended release for comparison.
 *
 * Hardware watchpoints need perf_event_open; where the kernel or the machine refuses
 * them the program says "skipped: ..." on stderr and exits 0.
 *
 * usage: release_watch [rounds] */
#include "check.h"

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define WATCH_SIGNAL (SIGRTMIN + 3)

static long page;
static void *volatile armed_page;  /* unmapped by the handler once the word reads 0 */
static int *volatile watched_word;
static atomic_long unmapped;

static void on_watch(int sig, siginfo_t *info, void *ctx) {
    (void)sig, (void)info, (void)ctx;
    void *p = armed_page;
    if (p == NULL || __atomic_load_n(watched_word, __ATOMIC_RELAXED) != 0) return;
    armed_page = NULL;
    if (munmap(p, page) != 0) _exit(7);
    atomic_fetch_add(&unmapped, 1);
}

/* A write watchpoint on `word` for the calling thread, signalling WATCH_SIGNAL. */
static int watch(int *word) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_BREAKPOINT;
    attr.size = sizeof attr;
    attr.bp_type = HW_BREAKPOINT_W;
    attr.bp_addr = (uintptr_t)word;
    attr.bp_len = HW_BREAKPOINT_LEN_4;
    attr.sample_period = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return -1;
    struct f_owner_ex owner = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
    if (fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, WATCH_SIGNAL) != 0 ||
        fcntl(fd, F_SETFL, O_ASYNC) != 0)
        fail("configuring the watchpoint's signal: %s", strerror(errno));
    return fd;
}

struct gave_up {
    pthread_mutex_t *m;
};

/* Marks the word CONTENDED the way glibc's protocol does, then gives up. */
static void *timed_locker(void *arg) {
    struct gave_up *g = arg;
    struct timespec ts = deadline_in(CLOCK_MONOTONIC, 2000000);
    EXPECT_RC(pthread_mutex_clocklock(g->m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);
    return NULL;
}

/* One release of a mutex of `type` (and `pshared`), `contended` or not, with the page
 * unmapped the instant the lock word reads free. Returns 1 if the watchpoint fired. */
static int one_release(int type, int pshared, int contended) {
    char *mem = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) fail("mmap: %s", strerror(errno));
    pthread_mutex_t *m = (pthread_mutex_t *)mem;
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, type));
    OK(pthread_mutexattr_setpshared(&a, pshared ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE));
    OK(pthread_mutex_init(m, &a));
    OK(pthread_mutexattr_destroy(&a));
    OK(pthread_mutex_lock(m));
    if (contended) {
        struct gave_up g = {m};
        join_thread(start_thread(timed_locker, &g));
        /* glibc's word reads 2; the kernel's priority-inheritance word (kind 32) has its
         * waiters bit set, and its release then goes through the kernel. */
        int contended = m->__data.__kind & 32 ? (m->__data.__lock & (int)0x80000000) != 0 : m->__data.__lock == 2;
        if (!contended) fail("the word reads %#x after a timed-out locker", m->__data.__lock);
    }
    int fd = watch(&m->__data.__lock);
    if (fd < 0) {
        fprintf(stderr, "skipped: hardware watchpoints unavailable (perf_event_open: %s)\n", strerror(errno));
        exit(0);
    }
    watched_word = &m->__data.__lock;
    long before = atomic_load(&unmapped);
    armed_page = mem;
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) fail("enabling the watchpoint: %s", strerror(errno));
    OK(pthread_mutex_unlock(m)); /* the handler unmaps the page right after the release */
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    close(fd);
    int fired = atomic_load(&unmapped) > before;
    if (!fired) {
        armed_page = NULL;
        munmap(mem, page);
    }
    return fired;
}

int main(int argc, char **argv) {
    test_begin("release_watch", 60);
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    page = sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_watch;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(WATCH_SIGNAL, &sa, NULL) != 0) fail("sigaction: %s", strerror(errno));

    static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ERRORCHECK,
                                PTHREAD_MUTEX_ADAPTIVE_NP};
    int fired = 0, total = 0;
    for (int r = 0; r < rounds; r++) {
        for (int t = 0; t < 4; t++) {
            for (int pshared = 0; pshared < 2; pshared++) {
                fired += one_release(types[t], pshared, 1);
                fired += one_release(types[t], pshared, 0);
                total += 2;
            }
        }
    }
    /* A watchpoint that never fires would prove nothing. (A release by the kernel does
     * not fire it: the kernel's write is not the program's.) */
    if (fired < total / 2) fail("the watchpoint fired for %d of %d releases", fired, total);
    fprintf(stderr, "release_watch: %d of %d releases unmapped at the release\n", fired, total);
    return 0;
}
