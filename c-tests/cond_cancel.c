/* Cancellation inside pthread_cond_wait / timedwait / clockwait. glibc re-takes the mutex
 * before running the thread's cleanup handlers, through its internal lock function, not
 * the interposed one. With an ERRORCHECK mutex the handler's pthread_mutex_unlock must
 * return 0 (proving the cancelled thread owned it: __owner is its TID), after which
 * another thread must be able to lock it and destroy must succeed (__nusers balanced).
 * Second part: the cancel is sent while the main thread holds the mutex, so the
 * cancelled thread must block re-taking it; its handler must not run before the main
 * thread unlocks. Also done with a default mutex, the handler checking __owner. */
#include "check.h"

#include <stdatomic.h>

static pthread_mutex_t mutex;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_int ready, handler_ran, handler_rc, handler_owner_ok;
static int errorcheck;

enum how { WAIT, TIMEDWAIT, CLOCKWAIT };
static const char *names[] = {"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait"};

static void cleanup(void *arg) {
    (void)arg;
    atomic_store(&handler_owner_ok, mutex.__data.__owner == gettid());
    atomic_store(&handler_rc, pthread_mutex_unlock(&mutex));
    atomic_store(&handler_ran, 1);
}

static void *waiter(void *arg) {
    enum how h = (enum how)(long)arg;
    OK(pthread_mutex_lock(&mutex));
    pthread_cleanup_push(cleanup, NULL);
    atomic_store(&ready, 1);
    for (;;) {
        if (h == WAIT) {
            pthread_cond_wait(&cv, &mutex);
        } else if (h == TIMEDWAIT) {
            struct timespec ts = deadline_in(CLOCK_REALTIME, 30000000000LL);
            pthread_cond_timedwait(&cv, &mutex, &ts);
        } else {
            struct timespec ts = deadline_in(CLOCK_MONOTONIC, 30000000000LL);
            pthread_cond_clockwait(&cv, &mutex, CLOCK_MONOTONIC, &ts);
        }
    }
    pthread_cleanup_pop(0);
    return NULL;
}

/* Waits until the waiter is blocked in the condvar (it has released the mutex). */
static void wait_until_waiting(void) {
    while (!atomic_load(&ready)) usleep(100);
    OK(pthread_mutex_lock(&mutex));
    OK(pthread_mutex_unlock(&mutex));
}

static void check_after(const char *what) {
    if (!atomic_load(&handler_ran)) fail("%s: cleanup handler did not run", what);
    if (!atomic_load(&handler_owner_ok)) fail("%s: in the cleanup handler __owner was not the cancelled thread", what);
    int rc = atomic_load(&handler_rc);
    if (rc != 0) fail("%s: pthread_mutex_unlock in the cleanup handler returned %s (mutex not re-held)", what, err_name(rc));
    if (mutex.__data.__owner != 0 || mutex.__data.__nusers != 0)
        fail("%s: after the handler __owner %d __nusers %u", what, mutex.__data.__owner, mutex.__data.__nusers);
    OK(pthread_mutex_lock(&mutex));
    OK(pthread_mutex_unlock(&mutex));
    if (errorcheck) EXPECT_RC(pthread_mutex_unlock(&mutex), EPERM);
}

static void one(enum how h, int cancel_while_held) {
    char what[96];
    snprintf(what, sizeof what, "%s %s mutex%s", names[h], errorcheck ? "errorcheck" : "default",
             cancel_while_held ? ", cancelled while the mutex is held" : "");
    atomic_store(&ready, 0);
    atomic_store(&handler_ran, 0);
    atomic_store(&handler_rc, -1);
    atomic_store(&handler_owner_ok, 0);
    pthread_t t = start_thread(waiter, (void *)(long)h);
    wait_until_waiting();
    if (cancel_while_held) {
        OK(pthread_mutex_lock(&mutex));
        OK(pthread_cancel(t));
        sleep_ms(20);
        if (atomic_load(&handler_ran)) fail("%s: cleanup handler ran while another thread held the mutex", what);
        OK(pthread_mutex_unlock(&mutex));
    } else {
        OK(pthread_cancel(t));
    }
    void *res = NULL;
    OK(pthread_join(t, &res));
    if (res != PTHREAD_CANCELED) fail("%s: thread was not cancelled", what);
    check_after(what);
}

int main(void) {
    test_begin("cond_cancel", 30);
    for (int e = 0; e < 2; e++) {
        errorcheck = e == 0;
        if (errorcheck) init_typed(&mutex, PTHREAD_MUTEX_ERRORCHECK);
        else OK(pthread_mutex_init(&mutex, NULL));
        for (int rep = 0; rep < 10; rep++)
            for (int h = 0; h < 3; h++) one((enum how)h, 0);
        for (int h = 0; h < 3; h++) one((enum how)h, 1);
        OK(pthread_mutex_destroy(&mutex));
    }
    /* The condvar is still usable and destroyable. */
    OK(pthread_mutex_init(&mutex, NULL));
    OK(pthread_mutex_lock(&mutex));
    OK(pthread_cond_signal(&cv));
    struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000LL);
    int rc;
    while ((rc = pthread_cond_timedwait(&cv, &mutex, &ts)) == 0) {
    }
    if (rc != ETIMEDOUT) fail("final timedwait returned %s", err_name(rc));
    OK(pthread_mutex_unlock(&mutex));
    OK(pthread_cond_destroy(&cv));
    OK(pthread_mutex_destroy(&mutex));
    return 0;
}
