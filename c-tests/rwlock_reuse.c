/* An rwlock's memory is freed the moment the next owner is done with it. Each round puts
 * a lock in a freshly mapped page; one or two threads hold it (write, or read by two);
 * another thread asks for it (read, write or timed write), gets it when they unlock,
 * unlocks, destroys it and unmaps the page at once. An unlock that touched the lock
 * after releasing it (other than the futex wake on its address) would fault, or
 * scribble on the next round's lock. A periodic timer signal interrupts the threads at
 * random points to widen every window. Thousands of rounds, every kind. */
#include "rwlock_check.h"

#include <sys/mman.h>

#define ROUNDS 4000

static pthread_rwlock_t *volatile cur;
static void *volatile page;
static pthread_barrier_t go, done;
static volatile int round_no, held, asked;
static long pagesize;

static void on_tick(int sig) { (void)sig; }

static int scenario(int r) { return r % 4; } /* 0: W->R, 1: W->W, 2: RR->W, 3: W->timed W */

static void spin_a_little(int r) {
    for (volatile int i = 0; i < (r * 37) % 2000; i++) {
    }
}

static void *holder(void *arg) {
    long second = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&go);
        int s = scenario(r);
        if (!second || s == 2) {
            pthread_rwlock_t *l = cur;
            if (s == 2) OK(pthread_rwlock_rdlock(l)); else OK(pthread_rwlock_wrlock(l));
            __atomic_add_fetch(&held, 1, __ATOMIC_SEQ_CST);
            while (!__atomic_load_n(&asked, __ATOMIC_SEQ_CST)) sched_yield();
            spin_a_little(r + (int)second);
            OK(pthread_rwlock_unlock(l));
            /* From here on the lock may be gone: nothing touches it. */
        }
        pthread_barrier_wait(&done);
    }
    return NULL;
}

static void *taker(void *arg) {
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&go);
        int s = scenario(r);
        int need = s == 2 ? 2 : 1;
        while (__atomic_load_n(&held, __ATOMIC_SEQ_CST) < need) sched_yield();
        pthread_rwlock_t *l = cur;
        __atomic_store_n(&asked, 1, __ATOMIC_SEQ_CST);
        struct timespec ts = deadline_in(CLOCK_MONOTONIC, 20000000000LL);
        switch (s) {
        case 0: OK(pthread_rwlock_rdlock(l)); break;
        case 3: OK(pthread_rwlock_clockwrlock(l, CLOCK_MONOTONIC, &ts)); break;
        default: OK(pthread_rwlock_wrlock(l)); break;
        }
        OK(pthread_rwlock_unlock(l));
        OK(pthread_rwlock_destroy(l));
        if (munmap(page, (size_t)pagesize) != 0) fail("munmap: %s", strerror(errno));
        pthread_barrier_wait(&done);
    }
    return NULL;
}

int main(void) {
    test_begin("rwlock_reuse", 60);
    pagesize = sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    timer_t timer;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGUSR1;
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) fail("timer_create: %s", strerror(errno));
    struct itimerspec its = {{0, 37000}, {0, 37000}};
    if (timer_settime(timer, 0, &its, NULL) != 0) fail("timer_settime: %s", strerror(errno));

    OK(pthread_barrier_init(&go, NULL, 4));
    OK(pthread_barrier_init(&done, NULL, 4));
    pthread_t h1 = start_thread(holder, (void *)0), h2 = start_thread(holder, (void *)1), t = start_thread(taker, NULL);
    static const pthread_rwlock_t statics[2] = {PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP};
    for (int r = 0; r < ROUNDS; r++) {
        void *p = mmap(NULL, (size_t)pagesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) fail("mmap: %s", strerror(errno));
        /* The lock at varying 8-byte aligned places in the page, made in varying ways. */
        pthread_rwlock_t *l = (pthread_rwlock_t *)((char *)p + 8 * ((r * 13) % 64));
        if (r % 5 == 4) {
            memcpy(l, &statics[(r / 5) % 2], sizeof *l);
        } else {
            rw_init(l, rw_kinds[r % 3], PTHREAD_PROCESS_PRIVATE);
        }
        page = p;
        cur = l;
        held = 0;
        asked = 0;
        round_no = r;
        pthread_barrier_wait(&go);
        pthread_barrier_wait(&done);
    }
    join_thread(h1);
    join_thread(h2);
    join_thread(t);
    timer_delete(timer);
    return 0;
}
