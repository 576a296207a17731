/* A waiter that leaves an rwlock's wait without the lock leaves the lock as if it had
 * never come. For every kind: a thread waits in a timed lock call while another thread
 * holds the lock in the opposite mode, and leaves because
 *  - its deadline passes ("timeout"), or
 *  - its deadline passes while a cancellation request is pending ("cancelled": the lock
 *    calls are not cancellation points, so the thread leaves the call with ETIMEDOUT and
 *    is cancelled at its next pthread_testcancel);
 * then the holder unlocks, and on the lock that now nobody holds each of trywrlock,
 * tryrdlock, timedwrlock and timedrdlock with a deadline in the past must succeed at
 * once, as they do under glibc.
 * Arguments: "reader" (the waiter is a reader, the holder a writer), "writer" (the
 * reverse); none: both. */
#include "rwlock_check.h"

static pthread_rwlock_t lock;

enum leave { TIMEOUT, CANCELLED };
static const char *leave_names[] = {"timed out", "cancelled"};

enum check { TRYWR, TRYRD, TIMEDWR_PAST, TIMEDRD_PAST };
static const char *check_names[] = {"trywrlock", "tryrdlock", "timedwrlock (past deadline)",
                                    "timedrdlock (past deadline)"};

struct leaver {
    int write;
    enum leave how;
    volatile int waiting;
    int rc;
};

static void *leaver_main(void *arg) {
    struct leaver *l = (struct leaver *)arg;
    struct timespec ts = deadline_in(CLOCK_REALTIME, 40000000);
    __atomic_store_n(&l->waiting, 1, __ATOMIC_SEQ_CST);
    l->rc = l->write ? pthread_rwlock_timedwrlock(&lock, &ts) : pthread_rwlock_timedrdlock(&lock, &ts);
    if (l->how == CANCELLED) {
        /* The request comes 10 ms into the wait, or later on a loaded machine. */
        for (int i = 0; i < 5000; i++) {
            pthread_testcancel();
            usleep(1000);
        }
        fail("the cancellation request never came");
    }
    return NULL;
}

/* Runs one scenario; the lock is idle when it returns. */
static void leave_then_check(int kind, int waiter_writes, enum leave how, enum check check) {
    char what[160];
    snprintf(what, sizeof what, "%s, %s %s, then %s", rw_kind_names[kind], waiter_writes ? "writer" : "reader",
             leave_names[how], check_names[check]);
    rw_init(&lock, rw_kinds[kind], PTHREAD_PROCESS_PRIVATE);
    if (waiter_writes) OK(pthread_rwlock_rdlock(&lock)); else OK(pthread_rwlock_wrlock(&lock));
    struct leaver l = {.write = waiter_writes, .how = how};
    pthread_t t = start_thread(leaver_main, &l);
    while (!__atomic_load_n(&l.waiting, __ATOMIC_SEQ_CST)) usleep(100);
    if (how == CANCELLED) {
        sleep_ms(10);
        OK(pthread_cancel(t));
    }
    void *res;
    OK(pthread_join(t, &res));
    if (l.rc != ETIMEDOUT) fail("%s: the waiter's timed lock returned %s, expected ETIMEDOUT", what, err_name(l.rc));
    if (how == CANCELLED && res != PTHREAD_CANCELED) fail("%s: the waiter was not cancelled", what);
    OK(pthread_rwlock_unlock(&lock));

    /* Nobody holds the lock now, and nobody waits. */
    struct timespec past = deadline_in(CLOCK_REALTIME, -1000000000LL);
    int64_t start = now_ns(CLOCK_MONOTONIC);
    int rc;
    switch (check) {
    case TRYWR: rc = pthread_rwlock_trywrlock(&lock); break;
    case TRYRD: rc = pthread_rwlock_tryrdlock(&lock); break;
    case TIMEDWR_PAST: rc = pthread_rwlock_timedwrlock(&lock, &past); break;
    default: rc = pthread_rwlock_timedrdlock(&lock, &past); break;
    }
    int64_t took_us = (now_ns(CLOCK_MONOTONIC) - start) / 1000;
    if (rc != 0) fail("%s: returned %s on a lock that nobody holds (glibc: 0)", what, err_name(rc));
    OK(pthread_rwlock_unlock(&lock));
    /* Generous for a loaded machine; a call that waited out a grace period or a timer
     * would still show here only when it waits tens of milliseconds. */
    if (took_us > 50000) fail("%s: took %lld us on a lock that nobody holds", what, (long long)took_us);
    /* And the lock is fully usable afterwards. */
    OK(pthread_rwlock_trywrlock(&lock));
    OK(pthread_rwlock_unlock(&lock));
    OK(pthread_rwlock_destroy(&lock));
}

static void run_side(int waiter_writes) {
    for (int kind = 0; kind < 3; kind++)
        for (int how = TIMEOUT; how <= CANCELLED; how++)
            for (int check = TRYWR; check <= TIMEDRD_PAST; check++)
                leave_then_check(kind, waiter_writes, (enum leave)how, (enum check)check);
}

int main(int argc, char **argv) {
    test_begin("rwlock_leave", 60);
    int reader = argc < 2, writer = argc < 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "reader") == 0) reader = 1;
        else if (strcmp(argv[i], "writer") == 0) writer = 1;
        else fail("unknown argument %s", argv[i]);
    }
    if (reader) run_side(0);
    if (writer) run_side(1);
    return 0;
}
