/*
 * The reader-writer workload: T threads share one pthread rwlock. Each iteration takes
 * the lock for writing with probability W/1000 (a fixed per-thread pattern, so every
 * run makes the same choices), else for reading; inside, L "pause" instructions (the
 * load), then readers read the shared data and writers change it; the same load again
 * outside. The threads start together on a barrier and run for a fixed duration.
 *
 * Its entry point is spinmutex_rwlock_main(argc, argv), which does not assume it is a
 * process's main: like bench/contention.c it can be linked into the `spinmutex` command
 * and run in a child with LD_PRELOAD set, so that pthread_rwlock_* go through the PLT to
 * whatever library is preloaded. c-tests/rwlock_bench.c wraps it as a program.
 *
 * --layout private gives every thread its own rwlock: the uncontended cost of a lock
 * and unlock pair in a multi-threaded process (with --threads 1, in a single-threaded
 * one).
 *
 * Acquisition waits are timed on every SAMPLE_EVERY-th read and every SAMPLE_EVERY-th
 * write of each thread (so that rare writes are sampled too) and kept in per-thread
 * rings of the latest WAIT_SLOTS samples per mode, allocated before the start. The
 * report gives their p50, p99 and maximum, over both modes and per mode, and the
 * fairness figures: the fewest acquisitions of a thread against the mean, over both
 * modes and per mode, and the share of writes done against the share asked for.
 *
 * Output: one line on stdout of space-separated key=value pairs. Exit status 0 when the
 * data is consistent (every read saw an untorn record; the write count matches), 1
 * otherwise, 2 on bad arguments, 3 when the system refuses a resource.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#define RW_CPU_RELAX() __builtin_ia32_pause()
#else
#define RW_CPU_RELAX() __asm__ __volatile__("" ::: "memory")
#endif

struct rw_slot {
    pthread_rwlock_t lock;
} __attribute__((aligned(64)));

struct rw_data {
    volatile unsigned long a, b;
} __attribute__((aligned(64)));

#define RW_SAMPLE_EVERY 64
#define RW_WAIT_SLOTS 1024

/* The latest wait samples of one mode of one thread. */
struct rw_waits {
    uint64_t *ns; /* RW_WAIT_SLOTS entries (a ring) */
    unsigned long recorded;
};

struct rw_worker {
    pthread_t thread;
    unsigned id;
    unsigned long reads, writes, torn;
    struct rw_slot *slot;
    struct rw_data *data;
    struct rw_waits read_waits, write_waits;
    char pad[64];
};

static volatile int rw_stop;
static pthread_barrier_t rw_start;
static unsigned rw_load, rw_write_permille;

static inline uint64_t rw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void rw_spin(unsigned n) {
    for (unsigned i = 0; i < n; i++) RW_CPU_RELAX();
}

/* A per-thread xorshift: the write/read choice without a shared random source. */
static inline uint32_t rw_next(uint32_t *s) {
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static inline void rw_record(struct rw_waits *waits, uint64_t ns) {
    waits->ns[waits->recorded % RW_WAIT_SLOTS] = ns;
    waits->recorded++;
}

static void *rw_worker_main(void *arg) {
    struct rw_worker *w = arg;
    uint32_t seed = 0x9e3779b9u * (w->id + 1);
    unsigned long reads = 0, writes = 0, torn = 0;
    pthread_barrier_wait(&rw_start);
    while (!__atomic_load_n(&rw_stop, __ATOMIC_RELAXED)) {
        int write = rw_write_permille != 0 && rw_next(&seed) % 1000 < rw_write_permille;
        if (write) {
            /* The 64th, 128th, ... write: never the first (the start-up stampede). */
            if (writes % RW_SAMPLE_EVERY == RW_SAMPLE_EVERY - 1) {
                uint64_t t0 = rw_now_ns();
                pthread_rwlock_wrlock(&w->slot->lock);
                rw_record(&w->write_waits, rw_now_ns() - t0);
            } else {
                pthread_rwlock_wrlock(&w->slot->lock);
            }
            rw_spin(rw_load);
            w->data->a++;
            w->data->b++;
            pthread_rwlock_unlock(&w->slot->lock);
            writes++;
        } else {
            if (reads % RW_SAMPLE_EVERY == RW_SAMPLE_EVERY - 1) {
                uint64_t t0 = rw_now_ns();
                pthread_rwlock_rdlock(&w->slot->lock);
                rw_record(&w->read_waits, rw_now_ns() - t0);
            } else {
                pthread_rwlock_rdlock(&w->slot->lock);
            }
            rw_spin(rw_load);
            torn += w->data->a != w->data->b;
            pthread_rwlock_unlock(&w->slot->lock);
            reads++;
        }
        rw_spin(rw_load);
    }
    w->reads = reads;
    w->writes = writes;
    w->torn = torn;
    return NULL;
}

static int rw_usage(const char *msg) {
    fprintf(stderr,
            "rwlock workload: %s\n"
            "usage: [--threads N] [--load L] [--write-permille W] [--duration-ms MS]\n"
            "       [--kind reader|writer|writer-nonrecursive] [--layout shared|private] [--timeout-s S]\n",
            msg);
    return 2;
}

static int rw_parse(const char *s, unsigned long max, unsigned long *out) {
    char *end = NULL;
    if (s == NULL || *s == '\0' || *s == '-') return -1;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max) return -1;
    *out = v;
    return 0;
}

static double rw_tv(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

/* Nanoseconds per pause: the best of several timed batches (preemption only ever makes
 * a batch slower, so the minimum is the least disturbed estimate). */
static double rw_pause_ns(void) {
    double best = 0.0;
    for (int round = 0; round < 7; round++) {
        uint64_t t0 = rw_now_ns();
        rw_spin(20000);
        double per = (double)(rw_now_ns() - t0) / 20000.0;
        if (round == 0 || per < best) best = per;
    }
    return best;
}

static int rw_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* p50, p99 and maximum of the samples of the modes asked for (read, write or both), in
 * `out`; all 0 without samples. Returns how many samples there were, or -1 when memory
 * runs out. */
static long rw_percentiles(struct rw_worker *workers, unsigned long threads, int reads, int writes,
                           uint64_t out[3]) {
    unsigned long n = 0;
    out[0] = out[1] = out[2] = 0;
    for (unsigned long t = 0; t < threads; t++) {
        if (reads) n += workers[t].read_waits.recorded < RW_WAIT_SLOTS ? workers[t].read_waits.recorded : RW_WAIT_SLOTS;
        if (writes) n += workers[t].write_waits.recorded < RW_WAIT_SLOTS ? workers[t].write_waits.recorded : RW_WAIT_SLOTS;
    }
    if (n == 0) return 0;
    uint64_t *all = malloc(n * sizeof *all);
    if (all == NULL) return -1;
    unsigned long k = 0;
    for (unsigned long t = 0; t < threads; t++) {
        struct rw_waits *modes[2] = {reads ? &workers[t].read_waits : NULL, writes ? &workers[t].write_waits : NULL};
        for (int m = 0; m < 2; m++) {
            if (modes[m] == NULL) continue;
            unsigned long c = modes[m]->recorded < RW_WAIT_SLOTS ? modes[m]->recorded : RW_WAIT_SLOTS;
            memcpy(all + k, modes[m]->ns, c * sizeof *all);
            k += c;
        }
    }
    qsort(all, n, sizeof *all, rw_cmp_u64);
    out[0] = all[(n - 1) / 2];
    out[1] = all[(unsigned long)((double)(n - 1) * 0.99)];
    out[2] = all[n - 1];
    free(all);
    return (long)n;
}

int spinmutex_rwlock_main(int argc, char **argv) {
    unsigned long threads = 4, duration_ms = 300, timeout_s = 0, load = 10, permille = 10;
    int kind = PTHREAD_RWLOCK_PREFER_READER_NP, private_locks = 0;
    const char *kind_name = "reader";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--threads") == 0) {
            if (rw_parse(v, 100000, &threads) != 0 || threads == 0) return rw_usage("--threads needs 1..100000");
        } else if (strcmp(a, "--load") == 0) {
            if (rw_parse(v, 10000000, &load) != 0) return rw_usage("--load needs 0..10000000 pauses");
        } else if (strcmp(a, "--write-permille") == 0) {
            if (rw_parse(v, 1000, &permille) != 0) return rw_usage("--write-permille needs 0..1000");
        } else if (strcmp(a, "--duration-ms") == 0) {
            if (rw_parse(v, 86400000, &duration_ms) != 0 || duration_ms == 0) return rw_usage("--duration-ms needs >= 1");
        } else if (strcmp(a, "--timeout-s") == 0) {
            if (rw_parse(v, 86400, &timeout_s) != 0) return rw_usage("--timeout-s needs seconds");
        } else if (strcmp(a, "--kind") == 0) {
            if (v && strcmp(v, "reader") == 0) kind = PTHREAD_RWLOCK_PREFER_READER_NP;
            else if (v && strcmp(v, "writer") == 0) kind = PTHREAD_RWLOCK_PREFER_WRITER_NP;
            else if (v && strcmp(v, "writer-nonrecursive") == 0) kind = PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
            else return rw_usage("--kind needs reader, writer or writer-nonrecursive");
            kind_name = v;
        } else if (strcmp(a, "--layout") == 0) {
            if (v && strcmp(v, "shared") == 0) private_locks = 0;
            else if (v && strcmp(v, "private") == 0) private_locks = 1;
            else return rw_usage("--layout needs shared or private");
        } else {
            return rw_usage("unknown argument");
        }
        i++;
    }
    rw_load = (unsigned)load;
    rw_write_permille = (unsigned)permille;
    alarm((unsigned)(timeout_s ? timeout_s : duration_ms / 1000 + 60));

    size_t nslots = private_locks ? threads : 1;
    struct rw_slot *slots = aligned_alloc(64, nslots * sizeof *slots);
    struct rw_data *datas = aligned_alloc(64, nslots * sizeof *datas);
    struct rw_worker *workers = calloc(threads, sizeof *workers);
    if (!slots || !datas || !workers) {
        fprintf(stderr, "rwlock workload: out of memory\n");
        return 3;
    }
    for (unsigned long t = 0; t < threads; t++) {
        workers[t].read_waits.ns = calloc(RW_WAIT_SLOTS, sizeof(uint64_t));
        workers[t].write_waits.ns = calloc(RW_WAIT_SLOTS, sizeof(uint64_t));
        if (!workers[t].read_waits.ns || !workers[t].write_waits.ns) {
            fprintf(stderr, "rwlock workload: out of memory\n");
            return 3;
        }
    }
    double pause_ns = rw_pause_ns();
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, kind);
    for (size_t s = 0; s < nslots; s++) {
        pthread_rwlock_init(&slots[s].lock, &attr);
        datas[s].a = datas[s].b = 0;
    }
    pthread_rwlockattr_destroy(&attr);

    pthread_barrier_init(&rw_start, NULL, (unsigned)threads + 1);
    pthread_attr_t tattr;
    pthread_attr_init(&tattr);
    pthread_attr_setstacksize(&tattr, 256 * 1024);
    for (unsigned long t = 0; t < threads; t++) {
        workers[t].id = (unsigned)t;
        workers[t].slot = &slots[private_locks ? t : 0];
        workers[t].data = &datas[private_locks ? t : 0];
        int err = pthread_create(&workers[t].thread, &tattr, rw_worker_main, &workers[t]);
        if (err != 0) {
            fprintf(stderr, "rwlock workload: pthread_create: %s\n", strerror(err));
            _exit(3);
        }
    }
    pthread_attr_destroy(&tattr);

    struct rusage ru0, ru1;
    pthread_barrier_wait(&rw_start);
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t start = rw_now_ns();
    struct timespec nap = {(time_t)(duration_ms / 1000), (long)(duration_ms % 1000) * 1000000L};
    while (nanosleep(&nap, &nap) != 0 && errno == EINTR) {
    }
    __atomic_store_n(&rw_stop, 1, __ATOMIC_RELAXED);
    uint64_t stop = rw_now_ns();
    for (unsigned long t = 0; t < threads; t++) pthread_join(workers[t].thread, NULL);
    getrusage(RUSAGE_SELF, &ru1);
    alarm(0);

    unsigned long reads = 0, writes = 0, torn = 0, min_ops = 0, max_ops = 0, data_writes = 0;
    unsigned long min_reads = 0, min_writes = 0;
    for (unsigned long t = 0; t < threads; t++) {
        unsigned long ops = workers[t].reads + workers[t].writes;
        reads += workers[t].reads;
        writes += workers[t].writes;
        torn += workers[t].torn;
        if (t == 0 || ops < min_ops) min_ops = ops;
        if (t == 0 || workers[t].reads < min_reads) min_reads = workers[t].reads;
        if (t == 0 || workers[t].writes < min_writes) min_writes = workers[t].writes;
        if (ops > max_ops) max_ops = ops;
    }
    uint64_t all_w[3], read_w[3], write_w[3];
    long samples = rw_percentiles(workers, threads, 1, 1, all_w);
    long read_samples = rw_percentiles(workers, threads, 1, 0, read_w);
    long write_samples = rw_percentiles(workers, threads, 0, 1, write_w);
    if (samples < 0 || read_samples < 0 || write_samples < 0) {
        fprintf(stderr, "rwlock workload: out of memory\n");
        return 3;
    }
    double ops_total = (double)(reads + writes);
    /* The share of writes done against the share asked for (1 when no writes asked). */
    double write_share = permille == 0 ? 1.0 : ops_total > 0 ? ((double)writes / ops_total) / ((double)permille / 1000.0) : 0.0;
    for (size_t s = 0; s < nslots; s++) data_writes += datas[s].a;
    double elapsed = (double)(stop - start) / 1e9;
    double cpu = rw_tv(ru1.ru_utime) - rw_tv(ru0.ru_utime) + rw_tv(ru1.ru_stime) - rw_tv(ru0.ru_stime);
    int ok = torn == 0 && data_writes == writes;
    printf("threads=%lu load=%lu write_permille=%lu kind=%s layout=%s ops=%lu reads=%lu writes=%lu "
           "elapsed_s=%.6f ops_per_s=%.1f ns_per_op=%.2f cpu_s=%.6f min_thread_ops=%lu mean_thread_ops=%.1f "
           "max_thread_ops=%lu min_thread_reads=%lu mean_thread_reads=%.1f min_thread_writes=%lu "
           "mean_thread_writes=%.1f write_share=%.4f wait_samples=%ld wait_p50_ns=%llu wait_p99_ns=%llu "
           "wait_max_ns=%llu read_wait_samples=%ld read_wait_p99_ns=%llu read_wait_max_ns=%llu "
           "write_wait_samples=%ld write_wait_p99_ns=%llu write_wait_max_ns=%llu pause_ns=%.3f "
           "vol_ctx=%ld invol_ctx=%ld torn=%lu data_ok=%d\n",
           threads, load, permille, kind_name, private_locks ? "private" : "shared", reads + writes, reads, writes,
           elapsed, elapsed > 0 ? ops_total / elapsed : 0.0, ops_total > 0 ? elapsed * 1e9 * (double)threads / ops_total : 0.0,
           cpu, min_ops, ops_total / (double)threads, max_ops, min_reads, (double)reads / (double)threads, min_writes,
           (double)writes / (double)threads, write_share, samples, (unsigned long long)all_w[0],
           (unsigned long long)all_w[1], (unsigned long long)all_w[2], read_samples, (unsigned long long)read_w[1],
           (unsigned long long)read_w[2], write_samples, (unsigned long long)write_w[1], (unsigned long long)write_w[2],
           pause_ns, ru1.ru_nvcsw - ru0.ru_nvcsw, ru1.ru_nivcsw - ru0.ru_nivcsw, torn, ok);
    fflush(stdout);
    for (size_t s = 0; s < nslots; s++) pthread_rwlock_destroy(&slots[s].lock);
    for (unsigned long t = 0; t < threads; t++) {
        free(workers[t].read_waits.ns);
        free(workers[t].write_waits.ns);
    }
    free(slots);
    free(datas);
    free(workers);
    pthread_barrier_destroy(&rw_start);
    if (!ok) {
        fprintf(stderr, "rwlock workload: INCONSISTENT: %lu torn reads, %lu writes counted, %lu made\n", torn, data_writes,
                writes);
        return 1;
    }
    return 0;
}
