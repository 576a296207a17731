/* A thread that has waited long enough to ask for the lock to be handed to it, and is
 * then interrupted by a signal. Under glibc a thread waiting for a mutex owns nothing,
 * so its signal handlers may do what they like; the library must never hand the lock
 * to a thread that is running a handler or has left the wait.
 *
 * Each case: a holder keeps mutex `m`; the waiter blocks in pthread_mutex_lock(&m) and
 * is nudged awake by a few harmless signals (each wake that finds the lock still held
 * counts towards a handoff request, SPINMUTEX_HANDOFF_AFTER), then gets SIGUSR1, whose
 * handler:
 *   self     locks and unlocks `m` itself, the mutex its own thread waits for;
 *   other    locks `m2`, held by a third thread that is itself waiting for `m`;
 *   longjmp  leaves the wait with siglongjmp; the thread then never calls the mutex
 *            functions again, and the main thread must still be able to take `m`.
 * The holder releases `m` while the handler runs; everything must finish.
 *
 * usage: handoff_signals [self|other|longjmp]... (default: all three) */
#include "check.h"

#include <setjmp.h>
#include <stdatomic.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;
static const char *mode;
static atomic_int in_handler, handler_done, waiter_done, third_holds_m2, third_done, escape_ready;
static sigjmp_buf escape;

static void on_nudge(int sig) { (void)sig; }

static void on_usr1(int sig) {
    (void)sig;
    atomic_store(&in_handler, 1);
    if (strcmp(mode, "self") == 0) {
        if (pthread_mutex_lock(&m) != 0) _exit(5);
        if (pthread_mutex_unlock(&m) != 0) _exit(6);
    } else if (strcmp(mode, "other") == 0) {
        if (pthread_mutex_lock(&m2) != 0) _exit(5);
        if (pthread_mutex_unlock(&m2) != 0) _exit(6);
    } else {
        atomic_store(&handler_done, 1);
        siglongjmp(escape, 1);
    }
    atomic_store(&handler_done, 1);
}

static void *waiter(void *arg) {
    (void)arg;
    if (strcmp(mode, "longjmp") == 0) {
        if (sigsetjmp(escape, 1) != 0) {
            atomic_store(&waiter_done, 1); /* left the wait: owns nothing, calls nothing */
            return NULL;
        }
    }
    atomic_store(&escape_ready, 1); /* no SIGUSR1 before the jump buffer is set */
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    atomic_store(&waiter_done, 1);
    return NULL;
}

/* Holds m2, then waits for m: the waiter's handler needs m2. */
static void *third(void *arg) {
    (void)arg;
    OK(pthread_mutex_lock(&m2));
    atomic_store(&third_holds_m2, 1);
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    OK(pthread_mutex_unlock(&m2));
    atomic_store(&third_done, 1);
    return NULL;
}

static void wait_for(atomic_int *flag, const char *what) {
    int64_t give_up = now_ns(CLOCK_MONOTONIC) + 5000000000LL;
    while (!atomic_load(flag)) {
        if (now_ns(CLOCK_MONOTONIC) > give_up) fail("%s: timed out waiting until %s", mode, what);
        usleep(200);
    }
}

static void run(const char *which) {
    mode = which;
    atomic_store(&in_handler, 0);
    atomic_store(&handler_done, 0);
    atomic_store(&waiter_done, 0);
    atomic_store(&third_holds_m2, 0);
    atomic_store(&third_done, 0);

    struct holder h;
    holder_start(&h, &m, 0);
    pthread_t th = 0;
    if (strcmp(mode, "other") == 0) {
        th = start_thread(third, NULL);
        wait_for(&third_holds_m2, "the third thread holds m2");
    }
    atomic_store(&escape_ready, 0);
    pthread_t w = start_thread(waiter, NULL);
    wait_for(&escape_ready, "the waiter is ready");
    usleep(5000);
    /* Wake the waiter a few times while m stays held: each lost wake counts towards a
     * handoff request, and the time it has waited passes SPINMUTEX_HANDOFF_WAIT. */
    for (int i = 0; i < 4; i++) {
        pthread_kill(w, SIGUSR2);
        usleep(2000);
    }
    pthread_kill(w, SIGUSR1);
    usleep(20000); /* the handler runs, or is about to */
    holder_release(&h);
    wait_for(&handler_done, "the handler finished");
    wait_for(&waiter_done, "the waiter finished");
    join_thread(w);
    if (th) {
        wait_for(&third_done, "the third thread finished");
        join_thread(th);
    }
    struct timespec ts = deadline_in(CLOCK_MONOTONIC, 2000000000LL);
    int rc = pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts);
    if (rc != 0) fail("%s: the mutex cannot be taken afterwards (%s)", mode, err_name(rc));
    OK(pthread_mutex_unlock(&m));
}

int main(int argc, char **argv) {
    test_begin("handoff_signals", 40);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_nudge;
    sigaction(SIGUSR2, &sa, NULL); /* no SA_RESTART: the wait returns EINTR */
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    if (argc < 2) {
        run("self");
        run("other");
        run("longjmp");
    }
    for (int i = 1; i < argc; i++) run(argv[i]);
    return 0;
}
