/* Small helpers shared by the C behaviour tests (not a test itself: build.rs only
 * compiles *.c and *.cpp). Every failure prints one clear line on stderr and exits 1. */
#ifndef SPINMUTEX_CHECK_H
#define SPINMUTEX_CHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_UNUSED __attribute__((unused))

/* The name of an errno value, for messages. */
static CHECK_UNUSED const char *err_name(int e) {
    switch (e) {
    case 0: return "0";
    case EBUSY: return "EBUSY";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case EAGAIN: return "EAGAIN";
    case EINVAL: return "EINVAL";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case ENOMEM: return "ENOMEM";
    case ENOTSUP: return "ENOTSUP";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    default: return "(other)";
    }
}

static CHECK_UNUSED const char *test_name = "test";

static CHECK_UNUSED __attribute__((noreturn, format(printf, 1, 2))) void fail(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: FAIL: %s\n", test_name, buf);
    fflush(stderr);
    _exit(1);
}

/* `call` must return exactly `expect` (an errno value or 0). */
#define EXPECT_RC(call, expect)                                                              \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        int ex_ = (expect);                                                                  \
        if (rc_ != ex_)                                                                      \
            fail("%s:%d: %s returned %d (%s), expected %d (%s)", __FILE__, __LINE__, #call, \
                 rc_, err_name(rc_), ex_, err_name(ex_));                                    \
    } while (0)

#define OK(call) EXPECT_RC(call, 0)

static CHECK_UNUSED void watchdog_fired(int sig) {
    (void)sig;
    static const char msg[] = ": FAIL: watchdog: the test hung (deadlock or lost wake-up?)\n";
    ssize_t r = write(2, test_name, strlen(test_name));
    r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

/* Names the test for messages and arms a watchdog that ends a hung run with a message. */
static CHECK_UNUSED void test_begin(const char *name, unsigned watchdog_seconds) {
    test_name = name;
    signal(SIGALRM, watchdog_fired);
    alarm(watchdog_seconds);
}

static CHECK_UNUSED int64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Works (the thread stays runnable, never sleeps) for `us` microseconds. */
static CHECK_UNUSED void compute_for_us(long us) {
    int64_t end = now_ns(CLOCK_MONOTONIC) + (int64_t)us * 1000;
    while (now_ns(CLOCK_MONOTONIC) < end) {
    }
}

/* An absolute deadline `ns` nanoseconds from now on `clock` (ns may be negative). */
static CHECK_UNUSED struct timespec deadline_in(clockid_t clock, int64_t ns) {
    int64_t t = now_ns(clock) + ns;
    struct timespec ts;
    ts.tv_sec = (time_t)(t / 1000000000);
    ts.tv_nsec = (long)(t % 1000000000);
    return ts;
}

static CHECK_UNUSED int64_t ts_ns(const struct timespec *ts) {
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static CHECK_UNUSED void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A thread that holds a mutex until told to release it, so that the main thread can
 * observe what happens to other callers while the mutex is owned by someone else. */
struct holder {
    pthread_t thread;
    pthread_mutex_t *mutex;
    volatile int state; /* 0 starting, 1 holding, 2 asked to release, 3 released */
    int hold_ms;        /* >0: release by itself after this long (state stays 1 until then) */
};

static CHECK_UNUSED void *holder_main(void *arg) {
    struct holder *h = (struct holder *)arg;
    int rc = pthread_mutex_lock(h->mutex);
    if (rc != 0) fail("holder: pthread_mutex_lock returned %s", err_name(rc));
    __atomic_store_n(&h->state, 1, __ATOMIC_SEQ_CST);
    if (h->hold_ms > 0) {
        sleep_ms(h->hold_ms);
    } else {
        while (__atomic_load_n(&h->state, __ATOMIC_SEQ_CST) != 2) usleep(200);
    }
    rc = pthread_mutex_unlock(h->mutex);
    if (rc != 0) fail("holder: pthread_mutex_unlock returned %s", err_name(rc));
    __atomic_store_n(&h->state, 3, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Starts a holder thread and waits until it owns `m`. hold_ms 0: hold until holder_release. */
static CHECK_UNUSED void holder_start(struct holder *h, pthread_mutex_t *m, int hold_ms) {
    h->mutex = m;
    h->state = 0;
    h->hold_ms = hold_ms;
    int rc = pthread_create(&h->thread, NULL, holder_main, h);
    if (rc != 0) fail("pthread_create: %s", strerror(rc));
    while (__atomic_load_n(&h->state, __ATOMIC_SEQ_CST) == 0) usleep(100);
}

static CHECK_UNUSED void holder_release(struct holder *h) {
    if (h->hold_ms <= 0) __atomic_store_n(&h->state, 2, __ATOMIC_SEQ_CST);
    int rc = pthread_join(h->thread, NULL);
    if (rc != 0) fail("pthread_join: %s", strerror(rc));
}

/* The kind a mutex of kind `kind` has once the library has used it: under
 * SPINMUTEX_STRATEGY=kernel the library gives it glibc's priority-inheritance bit (32),
 * so that glibc's own code speaks the kernel's protocol on it too. */
static CHECK_UNUSED int kind_in_use(int kind) {
    const char *strategy = getenv("SPINMUTEX_STRATEGY");
    const char *preload = getenv("LD_PRELOAD");
    int converts = strategy && strcmp(strategy, "kernel") == 0 && preload && strstr(preload, "spinmutex");
    /* priority-inherit (32) and the library's own mark (1024), on process-private
     * mutexes only */
    return converts && (kind & ~(3 | 256 | 512)) == 0 ? kind | 32 | 1024 : kind;
}

/* Starts a thread or fails. */
static CHECK_UNUSED pthread_t start_thread(void *(*fn)(void *), void *arg) {
    pthread_t t;
    int rc = pthread_create(&t, NULL, fn, arg);
    if (rc != 0) fail("pthread_create: %s", strerror(rc));
    return t;
}

static CHECK_UNUSED void join_thread(pthread_t t) {
    int rc = pthread_join(t, NULL);
    if (rc != 0) fail("pthread_join: %s", strerror(rc));
}

/* Initialises `m` as `type` (a PTHREAD_MUTEX_* value) through a mutexattr. */
static CHECK_UNUSED void init_typed(pthread_mutex_t *m, int type) {
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, type));
    OK(pthread_mutex_init(m, &a));
    OK(pthread_mutexattr_destroy(&a));
}

#endif
