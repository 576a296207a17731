/* A SCHED_IDLE thread shares a mutex with normal threads while normal-priority busy
 * loops keep every CPU busy: the idle thread runs only now and then, often while it
 * holds the lock, and the normal threads then wait for an owner that does not run.
 * glibc's own mutex stalls them too (priority inversion: up to about a second on
 * 2 CPUs), so nothing is asserted about throughput; what must hold is that no
 * strategy spins or hands off its way into a hang, and that every acquisition counts.
 * usage: sched_idle [duration_ms] */
#include "check.h"

#include <sched.h>
#include <stdatomic.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;
static atomic_int stop_workers, stop_hogs;
enum { WORKERS = 3 }; /* worker 0 runs at SCHED_IDLE */
static long ops[WORKERS];

static void *hog(void *arg) {
    (void)arg;
    while (!atomic_load_explicit(&stop_hogs, memory_order_relaxed)) {
    }
    return NULL;
}

static void *worker(void *arg) {
    long id = (long)arg;
    if (id == 0) {
        struct sched_param sp = {.sched_priority = 0};
        OK(pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp));
    }
    int held = id == 0 ? 2000 : 50; /* the idle thread holds the lock longer */
    long n = 0;
    while (!atomic_load_explicit(&stop_workers, memory_order_relaxed)) {
        OK(pthread_mutex_lock(&m));
        counter++;
        for (int i = 0; i < held; i++) __asm__ volatile("" ::: "memory");
        OK(pthread_mutex_unlock(&m));
        n++;
    }
    ops[id] = n;
    return NULL;
}

int main(int argc, char **argv) {
    test_begin("sched_idle", 30);
    int duration_ms = argc > 1 ? atoi(argv[1]) : 300;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1 || cpus > 64) cpus = 64;
    pthread_t hogs[64], workers[WORKERS];
    for (long i = 0; i < cpus; i++) hogs[i] = start_thread(hog, NULL);
    for (long i = 0; i < WORKERS; i++) workers[i] = start_thread(worker, (void *)i);
    sleep_ms(duration_ms);
    atomic_store(&stop_workers, 1);
    for (int i = 0; i < WORKERS; i++) join_thread(workers[i]);
    atomic_store(&stop_hogs, 1);
    for (long i = 0; i < cpus; i++) join_thread(hogs[i]);
    long total = 0;
    for (int i = 0; i < WORKERS; i++) total += ops[i];
    if (counter != total) fail("counter %ld, but the threads counted %ld acquisitions", counter, total);
    fprintf(stderr, "sched_idle: idle thread %ld acquisitions, normal threads %ld and %ld, in %d ms beside %ld busy loops\n",
            ops[0], ops[1], ops[2], duration_ms, cpus);
    return 0;
}
