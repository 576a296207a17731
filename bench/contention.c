/*
 * The contention workload behind `spinmutex bench`.
 *
 * T threads share one pthread mutex. Each iteration: lock, L "pause" instructions
 * (the load), increment a shared counter, unlock, then L pauses outside the lock.
 * The threads start together on a barrier and run for a fixed duration, or, with
 * --ops, until a fixed amount of work is done.
 *
 * --layout alone   the mutex and the counter on cache lines of their own;
 * --layout shared  both on one line, as in a struct holding a lock and its data: the
 *                  owner's write to the counter then pulls the line away from every
 *                  thread reading the lock word, and a spinner's reads slow the owner.
 * --no-lock        the control: the same threads and pauses without the lock (each
 *                  thread counts on its own), so what the scheduler alone allows shows
 *                  in the fairness figures.
 * --idle-thread C  thread 0 runs at SCHED_IDLE pinned to CPU C: an owner that runs
 *                  only when C has nothing else to do.
 * --mixed S        two lock classes of opposite needs: threads 0..S-1 share a second
 *                  mutex (made at another call site, alone on its line) and hold it
 *                  for a long computation (--slow-hold-ns of pauses, default 50 µs,
 *                  then --slow-gap-ns outside, default as long), while the others run
 *                  the usual loop on the first. More threads than CPUs: a thread
 *                  spinning for the slow lock takes a CPU the others need. The output
 *                  adds each class's operations; the per-thread figures (fewest, mean
 *                  and most operations, waits) are the first mutex's threads'.
 * --phase-load L2 --phase-ms P
 *                  a workload that changes phase: every P ms the load switches
 *                  between L and L2 (both inside and outside the lock), so that a
 *                  policy learned in one phase is tested by the next. The output
 *                  adds each load's acquisitions per second over its phases.
 * --ops N          fixed work: the threads of the first mutex stop once its counter
 *                  reaches N, and with --mixed, those of the slow one once its counter
 *                  reaches --slow-ops M. The output adds when each class finished, so
 *                  the wall time measures the policy (with a fixed duration it is
 *                  always the duration). The control's threads loop N / T times each.
 *
 * Linked into the `spinmutex` command only (never into the preloaded library); the
 * command runs it as `spinmutex __workload ARGS...` in a child process with
 * LD_PRELOAD set, so pthread_mutex_lock/unlock below go through the PLT to whatever
 * library is preloaded: exactly what a user's program gets.
 *
 * Output: one line on stdout of space-separated key=value pairs. Exit status 0 when
 * the shared counter equals the sum of the per-thread counts, 1 on a lost update,
 * 2 on bad arguments, 3 when the system refuses a resource (threads, memory).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() __asm__ __volatile__("" ::: "memory")
#endif

/* Acquisition waits are timed on every SAMPLE_EVERY-th iteration of a thread and kept
 * in a per-thread ring of WAIT_SLOTS entries (the latest ones), allocated before the
 * start. A thread with fewer than SAMPLE_EVERY acquisitions contributes no sample. */
#define SAMPLE_EVERY 64
#define WAIT_SLOTS 2048

struct worker {
    pthread_t thread;
    unsigned long index;
    unsigned long ops;
    unsigned long waits_recorded;
    uint64_t done_ns; /* when the thread stopped */
    uint64_t *waits; /* WAIT_SLOTS nanosecond samples (ring) */
    char pad[64];
};

/* The two layouts; the_lock and shared_counter point into one of them. */
struct together {
    pthread_mutex_t lock;
    unsigned long counter;
} __attribute__((aligned(64)));
static struct together together;
static struct {
    pthread_mutex_t lock;
} __attribute__((aligned(64))) lock_alone;
static struct {
    unsigned long counter;
} __attribute__((aligned(64))) counter_alone;
_Static_assert(sizeof(struct together) == 64, "the shared layout fits one cache line");

/* --mixed: the slow class's lock and counter, how many threads use it, and how long
 * they hold it and stay away from it. */
static struct {
    pthread_mutex_t lock;
    unsigned long counter;
} __attribute__((aligned(64))) slow;
static unsigned long slow_threads;
static unsigned long slow_hold_ns = 50000, slow_gap_ns = 50000;
static unsigned slow_hold_pauses, slow_gap_pauses;

/* --ops and --slow-ops: fixed work. A class's threads stop when its counter reaches
 * its target (0: run for the duration instead). */
static unsigned long fast_target, slow_target;
/* The control's share of --ops per thread (0: the duration). */
static unsigned long control_quota;

static pthread_mutex_t *the_lock;
static unsigned long *shared_counter; /* only touched under the_lock */
static int no_lock;
static int idle_cpu = -1;
static volatile int stop_flag;
static pthread_barrier_t start_barrier;
static unsigned load; /* read with __atomic_load_n: --phase-ms changes it */
static unsigned long phase_load, phase_ms;
static unsigned long phase_ops[2], phase_time_ms[2]; /* per load, with --phase-ms */

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void spin_load(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        CPU_RELAX();
}

/* Thread 0 of --idle-thread: SCHED_IDLE (allowed without privileges) on one CPU. */
static int become_idle_on(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err == 0) {
        struct sched_param param = {0};
        err = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
    }
    if (err != 0)
        fprintf(stderr, "spinmutex __workload: --idle-thread %d: %s\n", cpu, strerror(err));
    return err;
}

static void *control_main(struct worker *w)
{
    unsigned long ops = 0;
    while (!__atomic_load_n(&stop_flag, __ATOMIC_RELAXED) && (control_quota == 0 || ops < control_quota)) {
        spin_load(load);
        ops++;
        spin_load(load);
    }
    w->ops = ops;
    return NULL;
}

/* A thread of the slow class (--mixed): a long computation under the lock. */
static void *slow_main(struct worker *w)
{
    unsigned long ops = 0;
    while (!__atomic_load_n(&stop_flag, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&slow.lock);
        if (slow_target != 0 && slow.counter == slow_target) {
            pthread_mutex_unlock(&slow.lock);
            break;
        }
        spin_load(slow_hold_pauses);
        ++slow.counter;
        pthread_mutex_unlock(&slow.lock);
        ops++;
        spin_load(slow_gap_pauses);
    }
    w->ops = ops;
    w->done_ns = now_ns();
    return NULL;
}

/* The slow class's mutex, made at a call site of its own. */
static __attribute__((noinline)) int make_slow_lock(void)
{
    return pthread_mutex_init(&slow.lock, NULL);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    unsigned long ops = 0;
    unsigned long recorded = 0;
    if (idle_cpu >= 0 && w->index == 0 && become_idle_on(idle_cpu) != 0)
        _exit(3);
    pthread_barrier_wait(&start_barrier);
    if (no_lock)
        return control_main(w);
    if (w->index < slow_threads)
        return slow_main(w);
    while (!__atomic_load_n(&stop_flag, __ATOMIC_RELAXED)) {
        /* The 64th, 128th, ... acquisition: never the first, whose wait is the
         * start-up stampede of all threads leaving the barrier at once. */
        if ((ops % SAMPLE_EVERY) == SAMPLE_EVERY - 1) {
            uint64_t t0 = now_ns();
            pthread_mutex_lock(the_lock);
            uint64_t t1 = now_ns();
            w->waits[recorded % WAIT_SLOTS] = t1 - t0;
            recorded++;
        } else {
            pthread_mutex_lock(the_lock);
        }
        if (fast_target != 0 && *shared_counter == fast_target) {
            pthread_mutex_unlock(the_lock);
            break;
        }
        unsigned n = __atomic_load_n(&load, __ATOMIC_RELAXED);
        spin_load(n);
        ++*shared_counter;
        pthread_mutex_unlock(the_lock);
        ops++;
        spin_load(n);
    }
    w->ops = ops;
    w->waits_recorded = recorded;
    w->done_ns = now_ns();
    return NULL;
}

/* Nanoseconds per pause: the best of several timed batches (preemption only ever
 * makes a batch slower, so the minimum is the least disturbed estimate). */
static double measure_pause_ns(void)
{
    const unsigned batch = 20000;
    double best = 0.0;
    for (int round = 0; round < 7; round++) {
        uint64_t t0 = now_ns();
        spin_load(batch);
        uint64_t t1 = now_ns();
        double per = (double)(t1 - t0) / batch;
        if (round == 0 || per < best)
            best = per;
    }
    return best;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static double tv_seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static int usage(const char *msg)
{
    fprintf(stderr,
            "spinmutex __workload: %s\n"
            "usage: spinmutex __workload [--threads N] [--load L] [--duration-ms MS]\n"
            "                            [--layout alone|shared] [--adaptive | --no-lock]\n"
            "                            [--idle-thread CPU] [--mixed S] [--slow-hold-ns NS]\n"
            "                            [--slow-gap-ns NS] [--ops N [--slow-ops M]] [--timeout-s S]\n"
            "                            [--phase-load L2 --phase-ms P]\n",
            msg);
    return 2;
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
    char *end = NULL;
    if (s == NULL || *s == '\0' || *s == '-')
        return -1;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

int spinmutex_contention_main(int argc, char **argv)
{
    unsigned long threads = 4, duration_ms = 300, timeout_s = 0, load_arg = 10, cpu_arg = 0;
    int adaptive = 0, shared_layout = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--adaptive") == 0) {
            adaptive = 1;
        } else if (strcmp(a, "--no-lock") == 0) {
            no_lock = 1;
        } else if (strcmp(a, "--layout") == 0) {
            if (v != NULL && strcmp(v, "shared") == 0)
                shared_layout = 1;
            else if (v == NULL || strcmp(v, "alone") != 0)
                return usage("--layout needs alone or shared");
            i++;
        } else if (strcmp(a, "--idle-thread") == 0) {
            if (parse_ulong(v, CPU_SETSIZE - 1, &cpu_arg) != 0)
                return usage("--idle-thread needs a CPU number");
            idle_cpu = (int)cpu_arg;
            i++;
        } else if (strcmp(a, "--mixed") == 0) {
            if (parse_ulong(v, 100000, &slow_threads) != 0 || slow_threads == 0)
                return usage("--mixed needs a whole number of slow threads, at least 1");
            i++;
        } else if (strcmp(a, "--slow-hold-ns") == 0) {
            if (parse_ulong(v, 1000000000, &slow_hold_ns) != 0)
                return usage("--slow-hold-ns needs a whole number of nanoseconds");
            i++;
        } else if (strcmp(a, "--slow-gap-ns") == 0) {
            if (parse_ulong(v, 1000000000, &slow_gap_ns) != 0)
                return usage("--slow-gap-ns needs a whole number of nanoseconds");
            i++;
        } else if (strcmp(a, "--ops") == 0) {
            if (parse_ulong(v, ULONG_MAX - 1, &fast_target) != 0 || fast_target == 0)
                return usage("--ops needs a whole number of acquisitions, at least 1");
            i++;
        } else if (strcmp(a, "--slow-ops") == 0) {
            if (parse_ulong(v, ULONG_MAX - 1, &slow_target) != 0 || slow_target == 0)
                return usage("--slow-ops needs a whole number of acquisitions, at least 1");
            i++;
        } else if (strcmp(a, "--threads") == 0) {
            if (parse_ulong(v, 100000, &threads) != 0 || threads == 0)
                return usage("--threads needs a whole number from 1 to 100000");
            i++;
        } else if (strcmp(a, "--load") == 0) {
            if (parse_ulong(v, 10000000, &load_arg) != 0)
                return usage("--load needs a whole number of pauses from 0 to 10000000");
            i++;
        } else if (strcmp(a, "--phase-load") == 0) {
            if (parse_ulong(v, 10000000, &phase_load) != 0)
                return usage("--phase-load needs a whole number of pauses from 0 to 10000000");
            i++;
        } else if (strcmp(a, "--phase-ms") == 0) {
            if (parse_ulong(v, 86400000, &phase_ms) != 0 || phase_ms == 0)
                return usage("--phase-ms needs a whole number of milliseconds, at least 1");
            i++;
        } else if (strcmp(a, "--duration-ms") == 0) {
            if (parse_ulong(v, 86400000, &duration_ms) != 0 || duration_ms == 0)
                return usage("--duration-ms needs a whole number of milliseconds, at least 1");
            i++;
        } else if (strcmp(a, "--timeout-s") == 0) {
            if (parse_ulong(v, 86400, &timeout_s) != 0)
                return usage("--timeout-s needs a whole number of seconds");
            i++;
        } else {
            char msg[256];
            snprintf(msg, sizeof msg, "unknown argument '%s'", a);
            return usage(msg);
        }
    }
    load = (unsigned)load_arg;
    if (adaptive && no_lock)
        return usage("--adaptive and --no-lock exclude each other");
    if (slow_threads >= threads)
        return usage("--mixed needs fewer slow threads than threads");
    int fixed_work = fast_target != 0;
    if (phase_ms != 0 && (fixed_work || no_lock))
        return usage("--phase-ms needs a run of fixed length with the lock (no --ops, no --no-lock)");
    if (slow_target != 0 && (slow_threads == 0 || !fixed_work))
        return usage("--slow-ops needs --mixed and --ops");
    if (fixed_work && slow_threads != 0 && slow_target == 0)
        return usage("--ops with --mixed needs --slow-ops: fixed work for both classes");
    if (no_lock) {
        slow_threads = 0; /* the control: every thread runs the lock-free loop */
        if (fixed_work)
            control_quota = fast_target / threads + 1;
    }
    the_lock = shared_layout ? &together.lock : &lock_alone.lock;
    shared_counter = shared_layout ? &together.counter : &counter_alone.counter;

    /* A hung run (a deadlocked lock) ends by SIGALRM instead of hanging the bench. */
    if (timeout_s == 0)
        timeout_s = duration_ms / 1000 + 60;
    alarm((unsigned)timeout_s);

    pthread_mutexattr_t attr;
    pthread_mutexattr_t *attrp = NULL;
    if (adaptive) {
        pthread_mutexattr_init(&attr);
        pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
        attrp = &attr;
    }
    if (pthread_mutex_init(the_lock, attrp) != 0) {
        fprintf(stderr, "spinmutex __workload: pthread_mutex_init failed\n");
        return 3;
    }
    if (attrp)
        pthread_mutexattr_destroy(&attr);

    double pause_ns = measure_pause_ns();
    if (slow_threads > 0) {
        double per = pause_ns > 0.1 ? pause_ns : 0.1;
        slow_hold_pauses = (unsigned)((double)slow_hold_ns / per);
        slow_gap_pauses = (unsigned)((double)slow_gap_ns / per);
        if (make_slow_lock() != 0) {
            fprintf(stderr, "spinmutex __workload: pthread_mutex_init failed\n");
            return 3;
        }
    }

    struct worker *workers = calloc(threads, sizeof *workers);
    if (workers == NULL) {
        fprintf(stderr, "spinmutex __workload: out of memory\n");
        return 3;
    }
    for (unsigned long t = 0; t < threads; t++) {
        workers[t].index = t;
        workers[t].waits = calloc(WAIT_SLOTS, sizeof(uint64_t));
        if (workers[t].waits == NULL) {
            fprintf(stderr, "spinmutex __workload: out of memory\n");
            return 3;
        }
    }

    pthread_barrier_init(&start_barrier, NULL, (unsigned)threads + 1);
    pthread_attr_t tattr;
    pthread_attr_init(&tattr);
    pthread_attr_setstacksize(&tattr, 256 * 1024);
    for (unsigned long t = 0; t < threads; t++) {
        int err = pthread_create(&workers[t].thread, &tattr, worker_main, &workers[t]);
        if (err != 0) {
            fprintf(stderr, "spinmutex __workload: pthread_create: %s\n", strerror(err));
            _exit(3); /* the started threads wait on the barrier forever */
        }
    }
    pthread_attr_destroy(&tattr);

    struct rusage ru0, ru1;
    pthread_barrier_wait(&start_barrier);
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t start = now_ns();
    if (!fixed_work) {
        /* In phases of --phase-ms (the whole run without it), switching the load, and
         * counting each load's acquisitions (the counter read as it stands). */
        unsigned loads[2] = {load, (unsigned)phase_load};
        unsigned long left = duration_ms, phase = 0, counted = 0;
        while (left > 0) {
            unsigned long ms = phase_ms != 0 && phase_ms < left ? phase_ms : left;
            struct timespec nap = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
            while (nanosleep(&nap, &nap) != 0 && errno == EINTR) {
            }
            left -= ms;
            if (phase_ms == 0)
                continue;
            unsigned long now_counted = __atomic_load_n(shared_counter, __ATOMIC_RELAXED);
            phase_ops[phase % 2] += now_counted - counted;
            phase_time_ms[phase % 2] += ms;
            counted = now_counted;
            if (left > 0) /* the last phase keeps its load until the threads stop */
                __atomic_store_n(&load, loads[++phase % 2], __ATOMIC_RELAXED);
        }
        __atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&load, loads[0], __ATOMIC_RELAXED); /* for the report */
    }
    uint64_t stop = now_ns(); /* with fixed work, when the last class finished (below) */
    for (unsigned long t = 0; t < threads; t++)
        pthread_join(workers[t].thread, NULL);
    getrusage(RUSAGE_SELF, &ru1);
    alarm(0);

    unsigned long total = 0, min_ops = 0, max_ops = 0, samples = 0, slow_ops = 0;
    uint64_t fast_done = start, slow_done = start; /* when each class's last thread stopped */
    for (unsigned long t = 0; t < threads; t++) {
        unsigned long ops = workers[t].ops;
        uint64_t *done = t < slow_threads ? &slow_done : &fast_done;
        if (workers[t].done_ns > *done)
            *done = workers[t].done_ns;
        total += ops;
        if (t < slow_threads) {
            slow_ops += ops;
            continue; /* the per-thread figures are the first mutex's threads' */
        }
        if (t == slow_threads || ops < min_ops)
            min_ops = ops;
        if (ops > max_ops)
            max_ops = ops;
        samples += workers[t].waits_recorded < WAIT_SLOTS ? workers[t].waits_recorded : WAIT_SLOTS;
    }
    if (fixed_work)
        stop = fast_done > slow_done ? fast_done : slow_done;

    uint64_t p50 = 0, p99 = 0, pmax = 0;
    uint64_t *all = samples ? malloc(samples * sizeof(uint64_t)) : NULL;
    if (all != NULL) {
        unsigned long k = 0;
        for (unsigned long t = 0; t < threads; t++) {
            unsigned long n = workers[t].waits_recorded < WAIT_SLOTS ? workers[t].waits_recorded : WAIT_SLOTS;
            memcpy(all + k, workers[t].waits, n * sizeof(uint64_t));
            k += n;
        }
        qsort(all, samples, sizeof(uint64_t), cmp_u64);
        p50 = all[(samples - 1) / 2];
        p99 = all[(unsigned long)((double)(samples - 1) * 0.99)];
        pmax = all[samples - 1];
        free(all);
    }

    double elapsed = (double)(stop - start) / 1e9;
    double user = tv_seconds(ru1.ru_utime) - tv_seconds(ru0.ru_utime);
    double sys = tv_seconds(ru1.ru_stime) - tv_seconds(ru0.ru_stime);
    /* The control has no shared counter to check. */
    if (no_lock)
        *shared_counter = total;
    int counter_ok = *shared_counter + slow.counter == total && slow.counter == slow_ops;

    printf("threads=%lu load=%u adaptive=%d layout_shared=%d no_lock=%d duration_ms=%lu ops=%lu elapsed_s=%.6f ops_per_s=%.1f "
           "cpu_s=%.6f user_s=%.6f sys_s=%.6f min_thread_ops=%lu mean_thread_ops=%.1f "
           "max_thread_ops=%lu wait_samples=%lu wait_p50_ns=%llu wait_p99_ns=%llu "
           "wait_max_ns=%llu pause_ns=%.3f vol_ctx=%ld invol_ctx=%ld counter=%lu counter_ok=%d",
           threads, load, adaptive, shared_layout, no_lock, duration_ms, total, elapsed, elapsed > 0 ? (double)total / elapsed : 0.0,
           user + sys, user, sys, min_ops, (double)(total - slow_ops) / (double)(threads - slow_threads), max_ops, samples,
           (unsigned long long)p50, (unsigned long long)p99, (unsigned long long)pmax, pause_ns,
           ru1.ru_nvcsw - ru0.ru_nvcsw, ru1.ru_nivcsw - ru0.ru_nivcsw, *shared_counter, counter_ok);
    if (slow_threads > 0)
        printf(" slow_threads=%lu slow_ops=%lu fast_ops=%lu", slow_threads, slow_ops, total - slow_ops);
    if (phase_ms != 0)
        printf(" phase_load=%lu phase_ms=%lu load_ops_per_s=%.1f phase_load_ops_per_s=%.1f", phase_load, phase_ms,
               phase_time_ms[0] ? (double)phase_ops[0] * 1000.0 / (double)phase_time_ms[0] : 0.0,
               phase_time_ms[1] ? (double)phase_ops[1] * 1000.0 / (double)phase_time_ms[1] : 0.0);
    if (fixed_work)
        printf(" fast_elapsed_s=%.6f", (double)(fast_done - start) / 1e9);
    if (fixed_work && slow_threads > 0)
        printf(" slow_elapsed_s=%.6f", (double)(slow_done - start) / 1e9);
    printf("\n");
    fflush(stdout);

    for (unsigned long t = 0; t < threads; t++)
        free(workers[t].waits);
    free(workers);
    pthread_barrier_destroy(&start_barrier);
    pthread_mutex_destroy(the_lock);

    if (!counter_ok) {
        fprintf(stderr, "spinmutex __workload: LOST UPDATE: shared counters %lu + %lu, sum of per-thread counts %lu\n",
                *shared_counter, slow.counter, total);
        return 1;
    }
    return 0;
}
