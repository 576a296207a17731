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

static volatile int holding;

static void *holder(void *arg) {
    (void)arg;
    pin_to(0);
    for (int i = 0; i < 20; i++) {
        OK(pthread_mutex_lock(&m));
        __atomic_store_n(&holding, 1, __ATOMIC_SEQ_CST);
        /* Give CPU 0 to the contender while holding the lock. */
        for (int k = 0; k < 3; k++) sched_yield();
        __atomic_store_n(&holding, 0, __ATOMIC_SEQ_CST);
        OK(pthread_mutex_unlock(&m));
        sched_yield();
    }
    return NULL;
}

static void *contender(void *arg) {
    (void)arg;
    pin_to(0);
    for (int i = 0; i < 200; i++) {
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        sched_yield();
    }
    return NULL;
}

/* Holds the lock asleep for a moment now and then, so that the others find it busy. */
static void *worker(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 10; i++) {
        OK(pthread_mutex_lock(&m));
        if (id == 0) sleep_ms(2);
        OK(pthread_mutex_unlock(&m));
        if (id == 0) sleep_ms(1);
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
