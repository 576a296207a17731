/* Situations in which the spin policy must not spin, for the trace to show:
 *
 *   same-cpu   a holder and a contender pinned to the same CPU; the holder yields the
 *              CPU while it holds the lock: whenever the contender runs, the holder
 *              does not, so spinning cannot end the wait, and the contender must stop
 *              at once (reason owner_not_running);
 *   contend    threads contend on a mutex (run under `taskset -c 0`, the process has
 *              one CPU: no spinning at all, reason no_parallelism).
 *
 * usage: spin_policy same-cpu|contend */
#include "check.h"

#include <sched.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0) fail("pthread_setaffinity_np: %s", strerror(rc));
}

/* The two threads take turns, in step, so that the contender always finds the lock
 * held (the test must not depend on how the scheduler happens to interleave them). */
#define ROUNDS 20
static int holding, waiting, acquired;

static void yield_until(int *flag, int value) {
    while (__atomic_load_n(flag, __ATOMIC_SEQ_CST) != value) sched_yield();
}

static void *holder(void *arg) {
    (void)arg;
    pin_to(0);
    for (int i = 0; i < ROUNDS; i++) {
        OK(pthread_mutex_lock(&m));
        __atomic_store_n(&holding, 1, __ATOMIC_SEQ_CST);
        /* Give CPU 0 to the contender while holding the lock, until it is about to
         * lock, and a little longer so that it is inside pthread_mutex_lock. */
        yield_until(&waiting, 1);
        for (int k = 0; k < 3; k++) sched_yield();
        __atomic_store_n(&holding, 0, __ATOMIC_SEQ_CST);
        OK(pthread_mutex_unlock(&m));
        yield_until(&acquired, i + 1);
    }
    return NULL;
}

static void *contender(void *arg) {
    (void)arg;
    pin_to(0);
    for (int i = 0; i < ROUNDS; i++) {
        yield_until(&holding, 1);
        __atomic_store_n(&waiting, 1, __ATOMIC_SEQ_CST);
        OK(pthread_mutex_lock(&m));
        __atomic_store_n(&waiting, 0, __ATOMIC_SEQ_CST);
        OK(pthread_mutex_unlock(&m));
        __atomic_store_n(&acquired, i + 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

/* Worker 0 holds the lock asleep for a moment now and then; the others keep locking
 * until it is done, so that they find it busy whatever the scheduler does. */
static int sleeper_done;

static void *worker(void *arg) {
    long id = (long)arg;
    if (id == 0) {
        for (int i = 0; i < 10; i++) {
            OK(pthread_mutex_lock(&m));
            sleep_ms(2);
            OK(pthread_mutex_unlock(&m));
            sleep_ms(1);
        }
        __atomic_store_n(&sleeper_done, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    while (!__atomic_load_n(&sleeper_done, __ATOMIC_SEQ_CST)) {
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        sched_yield();
    }
    return NULL;
}

int main(int argc, char **argv) {
    test_begin("spin_policy", 30);
    if (argc < 2) fail("usage: spin_policy same-cpu|contend");
    if (strcmp(argv[1], "same-cpu") == 0) {
        pthread_t h = start_thread(holder, NULL), c = start_thread(contender, NULL);
        join_thread(h);
        join_thread(c);
    } else if (strcmp(argv[1], "contend") == 0) {
        pthread_t t[4];
        for (long i = 0; i < 4; i++) t[i] = start_thread(worker, (void *)i);
        for (int i = 0; i < 4; i++) join_thread(t[i]);
    } else {
        fail("unknown mode %s", argv[1]);
    }
    return 0;
}
