/* Signal handlers run in threads blocked in rdlock and wrlock (and their timed
 * variants), and take other locks there: a mutex and another rwlock, for reading and
 * for writing. The blocked threads must keep waiting (no EINTR, no spurious success),
 * then get the lock when it is released; meanwhile exclusion holds. Then the same
 * threads contend with signals arriving all the time, with an exact count. Run with
 * "small" for threads on PTHREAD_STACK_MIN stacks (the handler shares that stack). */
#include "rwlock_check.h"

#include <limits.h>

#define WAITERS 6
#define ITERS 3000

static pthread_rwlock_t lock, other = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t handler_mutex = PTHREAD_MUTEX_INITIALIZER;
static volatile long handled, handler_count;
static volatile int phase, got[WAITERS];
static long counter;
static size_t stack_size;

static void on_signal(int sig) {
    (void)sig;
    int e = errno;
    pthread_mutex_lock(&handler_mutex);
    handler_count++;
    pthread_mutex_unlock(&handler_mutex);
    if (handled & 1) {
        pthread_rwlock_rdlock(&other);
        pthread_rwlock_unlock(&other);
    } else {
        pthread_rwlock_wrlock(&other);
        pthread_rwlock_unlock(&other);
    }
    __atomic_add_fetch(&handled, 1, __ATOMIC_SEQ_CST);
    errno = e;
}

static void *waiter(void *arg) {
    long id = (long)arg;
    int write = id % 2;
    struct timespec ts = deadline_in(id % 3 == 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME, 30000000000LL);
    int rc;
    if (id % 3 == 0) rc = write ? pthread_rwlock_wrlock(&lock) : pthread_rwlock_rdlock(&lock);
    else if (id % 3 == 1) rc = write ? pthread_rwlock_timedwrlock(&lock, &ts) : pthread_rwlock_timedrdlock(&lock, &ts);
    else rc = write ? pthread_rwlock_clockwrlock(&lock, CLOCK_MONOTONIC, &ts) : pthread_rwlock_clockrdlock(&lock, CLOCK_MONOTONIC, &ts);
    if (rc != 0) fail("waiter %ld: lock returned %s while signals arrived", id, err_name(rc));
    if (__atomic_load_n(&phase, __ATOMIC_SEQ_CST) == 0) fail("waiter %ld: got the lock while it was held", id);
    got[id] = 1;
    OK(pthread_rwlock_unlock(&lock));
    /* Then contend with everyone, signals still arriving. */
    for (int i = 0; i < ITERS; i++) {
        if ((i + id) % 4 == 0) {
            OK(pthread_rwlock_wrlock(&lock));
            long v = counter;
            if ((i & 15) == 0) sched_yield();
            counter = v + 1;
            OK(pthread_rwlock_unlock(&lock));
        } else {
            OK(pthread_rwlock_rdlock(&lock));
            OK(pthread_rwlock_unlock(&lock));
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    test_begin("rwlock_signals", 60);
    stack_size = argc > 1 && strcmp(argv[1], "small") == 0 ? PTHREAD_STACK_MIN : 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    for (int k = 0; k < 3; k++) {
        rw_init(&lock, rw_kinds[k], PTHREAD_PROCESS_PRIVATE);
        phase = 0;
        counter = 0;
        OK(pthread_rwlock_wrlock(&lock));
        pthread_attr_t attr;
        OK(pthread_attr_init(&attr));
        if (stack_size) OK(pthread_attr_setstacksize(&attr, stack_size));
        pthread_t t[WAITERS];
        for (long i = 0; i < WAITERS; i++) {
            got[i] = 0;
            int rc = pthread_create(&t[i], &attr, waiter, (void *)i);
            if (rc != 0) fail("pthread_create: %s", strerror(rc));
        }
        OK(pthread_attr_destroy(&attr));
        for (int round = 0; round < 100; round++) {
            for (int i = 0; i < WAITERS; i++) pthread_kill(t[i], SIGUSR1);
            usleep(500);
        }
        for (int i = 0; i < WAITERS; i++)
            if (got[i]) fail("%s: waiter %d got in while the lock was held", rw_kind_names[k], i);
        phase = 1;
        OK(pthread_rwlock_unlock(&lock));
        for (int round = 0; round < 50; round++) {
            for (int i = 0; i < WAITERS; i++) pthread_kill(t[i], SIGUSR1);
            usleep(200);
        }
        for (int i = 0; i < WAITERS; i++) join_thread(t[i]);
        long expected = 0;
        for (long id = 0; id < WAITERS; id++)
            for (int i = 0; i < ITERS; i++) expected += (i + id) % 4 == 0;
        if (counter != expected) fail("%s: counter %ld, expected %ld", rw_kind_names[k], counter, expected);
        OK(pthread_rwlock_destroy(&lock));
    }
    if (handled < 100) fail("only %ld signals were handled", handled);
    return 0;
}
