/* Signals delivered to threads blocked in (or spinning for) a mutex. A handler without
 * SA_RESTART interrupts the futex wait with EINTR; pthread_mutex_lock must go on
 * waiting and return 0 (never EINTR), a timed lock must still honour its original
 * deadline (not restart a relative timeout on every signal, not return early), and
 * the handler itself may take an unrelated mutex.
 *   - lock / timedlock / clocklock of a held mutex, interrupted by 40 SIGUSR1s (each
 *     handled before the next is sent), then the holder releases: each returns 0;
 *   - timedlock (30 ms) of a mutex held throughout, bombarded: ETIMEDOUT, not early,
 *     and not later than 2 s after the deadline;
 *   - contended counting with signals flying (their handlers contend on another
 *     mutex): exact count. */
#include "check.h"

#include <stdatomic.h>

static pthread_mutex_t m;
static pthread_mutex_t handler_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_long handled;

static void on_signal(int sig) {
    (void)sig;
    /* Not async-signal-safe by POSIX, but glibc copes and programs do it: the
     * interrupted thread never holds this mutex (SIGUSR1 is blocked while its handler
     * runs), though other threads' handlers may, so this lock can contend and sleep
     * while the interrupted thread is itself inside a lock call. */
    if (pthread_mutex_lock(&handler_mutex) != 0) _exit(5);
    if (pthread_mutex_unlock(&handler_mutex) != 0) _exit(6);
    atomic_fetch_add(&handled, 1);
}

enum how { LOCK, TIMEDLOCK, CLOCKLOCK_MONO };
static const char *names[] = {"lock", "timedlock", "clocklock(MONOTONIC)"};

struct blocked {
    enum how how;
    int64_t timeout_ns; /* for the timed forms */
    int rc;
    int64_t early_ns; /* deadline - return time (for ETIMEDOUT) */
    atomic_int started, finished;
};

static void *blocked_main(void *arg) {
    struct blocked *b = (struct blocked *)arg;
    atomic_store(&b->started, 1);
    struct timespec ts;
    switch (b->how) {
    case LOCK:
        b->rc = pthread_mutex_lock(&m);
        break;
    case TIMEDLOCK:
        ts = deadline_in(CLOCK_REALTIME, b->timeout_ns);
        b->rc = pthread_mutex_timedlock(&m, &ts);
        b->early_ns = ts_ns(&ts) - now_ns(CLOCK_REALTIME);
        break;
    default:
        ts = deadline_in(CLOCK_MONOTONIC, b->timeout_ns);
        b->rc = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts);
        b->early_ns = ts_ns(&ts) - now_ns(CLOCK_MONOTONIC);
        break;
    }
    if (b->rc == 0) OK(pthread_mutex_unlock(&m));
    atomic_store(&b->finished, 1);
    return NULL;
}

/* Sends SIGUSR1 to `t` again and again, each time waiting (briefly) for the handler to
 * have run, until `want` signals were handled or `*finished` is set; gives up after 10 s. */
static long bombard(pthread_t t, long want, atomic_int *finished) {
    long start = atomic_load(&handled);
    int64_t give_up = now_ns(CLOCK_MONOTONIC) + 10000000000LL;
    while (atomic_load(&handled) - start < want && !atomic_load(finished) && now_ns(CLOCK_MONOTONIC) < give_up) {
        long before = atomic_load(&handled);
        if (pthread_kill(t, SIGUSR1) != 0) break;
        for (int i = 0; i < 200 && atomic_load(&handled) == before && !atomic_load(finished); i++) usleep(50);
        usleep(300);
    }
    return atomic_load(&handled) - start;
}

static volatile long counter;
static atomic_int stop;
static long done[3];
static void *counter_main(void *arg) {
    long id = (long)arg;
    while (!atomic_load(&stop)) {
        OK(pthread_mutex_lock(&m));
        long v = counter;
        counter = v + 1;
        OK(pthread_mutex_unlock(&m));
        done[id]++;
    }
    return NULL;
}

int main(void) {
    test_begin("signals", 30);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: blocking calls see EINTR */
    if (sigaction(SIGUSR1, &sa, NULL) != 0) fail("sigaction: %s", strerror(errno));

    const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ADAPTIVE_NP};
    for (int ti = 0; ti < 4; ti++) {
        init_typed(&m, types[ti]);
        for (int h = 0; h < 3; h++) {
            /* Released after a bombardment: acquired, 0. */
            OK(pthread_mutex_lock(&m));
            struct blocked b = {.how = (enum how)h, .timeout_ns = 10000000000LL, .rc = -1};
            pthread_t t = start_thread(blocked_main, &b);
            while (!atomic_load(&b.started)) usleep(100);
            long n = bombard(t, 40, &b.finished);
            if (atomic_load(&b.finished)) fail("type %d: %s returned %s while the mutex was held", types[ti], names[h], err_name(b.rc));
            if (n < 40) fail("type %d %s: only %ld signals handled in 10 s", types[ti], names[h], n);
            OK(pthread_mutex_unlock(&m));
            join_thread(t);
            if (b.rc != 0) fail("type %d: %s interrupted by signals returned %s, expected 0", types[ti], names[h], err_name(b.rc));

            if (h == LOCK) continue;
            /* Held throughout: times out on its original deadline. */
            OK(pthread_mutex_lock(&m));
            b = (struct blocked){.how = (enum how)h, .timeout_ns = 30000000LL, .rc = -1};
            t = start_thread(blocked_main, &b);
            while (!atomic_load(&b.started)) usleep(100);
            bombard(t, 1000000, &b.finished); /* until it times out */
            join_thread(t);
            OK(pthread_mutex_unlock(&m));
            if (b.rc != ETIMEDOUT) fail("type %d: %s bombarded returned %s, expected ETIMEDOUT", types[ti], names[h], err_name(b.rc));
            if (b.early_ns > 1000000) fail("type %d: %s timed out %lld us early", types[ti], names[h], (long long)(b.early_ns / 1000));
            if (b.early_ns < -2000000000LL) fail("type %d: %s timed out %lld ms late", types[ti], names[h], (long long)(-b.early_ns / 1000000));
        }
        OK(pthread_mutex_destroy(&m));
    }

    /* Contended counting while signals fly. */
    OK(pthread_mutex_init(&m, NULL));
    pthread_t t[3];
    for (long i = 0; i < 3; i++) t[i] = start_thread(counter_main, (void *)i);
    int64_t end = now_ns(CLOCK_MONOTONIC) + 300000000LL;
    while (now_ns(CLOCK_MONOTONIC) < end) {
        for (int i = 0; i < 3; i++) pthread_kill(t[i], SIGUSR1);
        usleep(200);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++) join_thread(t[i]);
    if (counter != done[0] + done[1] + done[2]) fail("counter %ld, threads counted %ld", counter, done[0] + done[1] + done[2]);
    return 0;
}
