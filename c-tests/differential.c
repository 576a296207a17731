/* Random sequences of mutex or rwlock operations, each done by one of three threads
 * while the others wait, and every return code printed: the output must be the same
 * without the preload and under every strategy, since glibc's results are the contract,
 * including for what POSIX leaves undefined (unlocking another thread's normal mutex,
 * a robust mutex whose owner exited, a lock destroyed and made again).
 *
 *   differential mutex SEED OPS     three mutexes of random type, robustness and
 *                                   protocol (none, inherit, protect)
 *   differential rwlock SEED OPS    two rwlocks of random kind, private or shared
 *
 * The operations are one at a time, so the output depends on the seed alone. An
 * operation that would wait for ever under glibc (a lock held by another thread, or by
 * one that exited) is skipped; the bookkeeping that decides it follows the results
 * seen, so a strategy whose result differs takes the sequence elsewhere, and shows in
 * the output at once. An operation that still does not return within 10 s prints
 * `HANG` and ends the program. Threads exit now and then, holding what they hold, and
 * fork: the child probes every lock (see `probe_in_child`). */
#include "check.h"

#include <semaphore.h>
#include <sys/wait.h>

#define THREADS 3
#define MAX_LOCKS 3
#define SHORT_WAIT_NS 2000000

static unsigned long long rng;

static unsigned pick(unsigned n) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33) % n;
}

/* A result, by name where check.h knows it (a number otherwise, in one of a few
 * buffers used in turn: a line prints at most two results). */
static const char *result(int rc) {
    static char numbers[4][16];
    static unsigned next;
    if (strcmp(err_name(rc), "(other)") != 0)
        return err_name(rc);
    char *number = numbers[next++ % 4];
    snprintf(number, sizeof numbers[0], "%d", rc);
    return number;
}

static struct timespec after(clockid_t clock, long ns) {
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_nsec += ns;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    return t;
}

/* What the threads hold, by the results seen; row THREADS: threads that exited. */
static int alive[MAX_LOCKS];
static int held[THREADS + 1][MAX_LOCKS];   /* mutexes: how often */
static int reads[THREADS + 1][MAX_LOCKS];  /* rwlocks: read holds */
static int writes[THREADS + 1][MAX_LOCKS]; /* rwlocks: the write hold */

/* ---- the threads: each runs the operation it is given, then reports back. ---- */

#define EXIT_THREAD (-1)
/* The thread forks; the child, the forking thread alone, probes every lock with the
 * kind's `probe_in_child` and exits. The result is the child's exit status. */
#define FORK (-2)

static struct worker {
    pthread_t thread;
    sem_t go, done;
    int op, lock, rc;
} workers[THREADS];

static int (*do_op)(int op, int lock); /* the kind's own operations */
static void (*probe_in_child)(int thread);

static int fork_and_probe(int thread) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        probe_in_child(thread);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    for (;;) {
        sem_wait(&w->go);
        if (w->op == EXIT_THREAD) {
            sem_post(&w->done);
            pthread_exit(NULL);
        }
        w->rc = w->op == FORK ? fork_and_probe((int)(w - workers)) : do_op(w->op, w->lock);
        sem_post(&w->done);
    }
}

static void start_worker(int i) {
    sem_init(&workers[i].go, 0, 0);
    sem_init(&workers[i].done, 0, 0);
    if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
        fprintf(stderr, "differential: pthread_create failed\n");
        exit(1);
    }
}

/* Makes `locks` locks of a kind, with its operations, and starts the threads. */
static void start_sequence(int locks, void (*make)(int lock), int (*op)(int op, int lock),
                           void (*probe)(int thread)) {
    for (int l = 0; l < locks; l++) {
        make(l);
        alive[l] = 1;
    }
    do_op = op;
    probe_in_child = probe;
    for (int i = 0; i < THREADS; i++)
        start_worker(i);
}

/* Thread `i` runs `op` on lock `lock`; its result. */
static int run_op(int i, int op, int lock, const char *name) {
    workers[i].op = op;
    workers[i].lock = lock;
    sem_post(&workers[i].go);
    struct timespec limit = after(CLOCK_REALTIME, 0);
    limit.tv_sec += 10;
    while (sem_timedwait(&workers[i].done, &limit) != 0) {
        if (errno != EINTR) {
            printf("HANG: thread %d %s %d\n", i, name, lock);
            fflush(stdout);
            _exit(3);
        }
    }
    return workers[i].rc;
}

/* Step `k`: thread `i` forks; the child probes the locks (see `fork_and_probe`). */
static void fork_step(int k, int i) {
    printf("%d: thread %d forks\n", k, i);
    printf("  child: exit status %d\n", run_op(i, FORK, 0, "fork"));
}

/* Thread `i` exits, holding what it holds; a new thread takes its place. */
static void replace_worker(int i) {
    run_op(i, EXIT_THREAD, 0, "exit");
    pthread_join(workers[i].thread, NULL);
    start_worker(i);
}

/* ---- mutexes ---- */

enum { M_LOCK, M_TRY, M_TIMED, M_TIMED_PAST, M_CLOCK, M_UNLOCK, M_CONSISTENT, M_DESTROY, M_CONDWAIT, M_OPS };
static const char *const mutex_op_names[] = {
    "lock", "trylock", "timedlock", "timedlock-past", "clocklock", "unlock", "consistent", "destroy", "condwait",
};

static pthread_mutex_t mutexes[MAX_LOCKS];
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int type_of[MAX_LOCKS], robust_of[MAX_LOCKS], protocol_of[MAX_LOCKS];

static int mutex_op(int op, int m) {
    pthread_mutex_t *x = &mutexes[m];
    struct timespec t;
    switch (op) {
    case M_LOCK: return pthread_mutex_lock(x);
    case M_TRY: return pthread_mutex_trylock(x);
    case M_TIMED: t = after(CLOCK_REALTIME, SHORT_WAIT_NS); return pthread_mutex_timedlock(x, &t);
    case M_TIMED_PAST: t = after(CLOCK_REALTIME, 0); t.tv_sec--; return pthread_mutex_timedlock(x, &t);
    case M_CLOCK: t = after(CLOCK_MONOTONIC, SHORT_WAIT_NS); return pthread_mutex_clocklock(x, CLOCK_MONOTONIC, &t);
    case M_UNLOCK: return pthread_mutex_unlock(x);
    case M_CONSISTENT: return pthread_mutex_consistent(x);
    case M_DESTROY: return pthread_mutex_destroy(x);
    case M_CONDWAIT: t = after(CLOCK_REALTIME, SHORT_WAIT_NS); return pthread_cond_timedwait(&cond, x, &t);
    }
    return -1;
}

/* Makes mutex `m` with new random attributes (robust with priority-protect, which glibc
 * refuses, is made without the protocol). */
static void make_mutex(int m) {
    static const int types[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ERRORCHECK,
                                PTHREAD_MUTEX_ADAPTIVE_NP};
    static const int protocols[] = {PTHREAD_PRIO_NONE, PTHREAD_PRIO_NONE, PTHREAD_PRIO_INHERIT, PTHREAD_PRIO_PROTECT};
    type_of[m] = types[pick(4)];
    robust_of[m] = (int)pick(2);
    protocol_of[m] = protocols[pick(geteuid() == 0 ? 4 : 3)]; /* a ceiling needs root */
    if (robust_of[m] && protocol_of[m] == PTHREAD_PRIO_PROTECT)
        protocol_of[m] = PTHREAD_PRIO_NONE;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type_of[m]);
    pthread_mutexattr_setrobust(&a, robust_of[m] ? PTHREAD_MUTEX_ROBUST : PTHREAD_MUTEX_STALLED);
    pthread_mutexattr_setprotocol(&a, protocol_of[m]);
    if (protocol_of[m] == PTHREAD_PRIO_PROTECT)
        pthread_mutexattr_setprioceiling(&a, sched_get_priority_min(SCHED_FIFO));
    int rc = pthread_mutex_init(&mutexes[m], &a);
    pthread_mutexattr_destroy(&a);
    printf("mutex %d: type %d robust %d protocol %d: init %s\n", m, type_of[m], robust_of[m], protocol_of[m],
           result(rc));
}

/* A trylock of every mutex, undone when it succeeds. */
static void mutex_trylock_each(const char *who) {
    for (int m = 0; m < MAX_LOCKS; m++) {
        if (!alive[m])
            continue;
        int rc = pthread_mutex_trylock(&mutexes[m]);
        printf("  %s: trylock %d: %s", who, m, result(rc));
        if (rc == 0 || rc == EOWNERDEAD)
            printf(", unlock: %s", result(pthread_mutex_unlock(&mutexes[m])));
        printf("\n");
    }
}

/* In a child of thread `thread`: a trylock of every mutex, an unlock of each the thread
 * holds, then an unlock of every other mutex (a normal one held by another thread of
 * the parent gives way under glibc) and a trylock of every mutex again. */
static void mutex_probe_in_child(int thread) {
    mutex_trylock_each("child");
    for (int m = 0; m < MAX_LOCKS; m++)
        if (alive[m] && held[thread][m])
            printf("  child: unlock %d: %s\n", m, result(pthread_mutex_unlock(&mutexes[m])));
    for (int m = 0; m < MAX_LOCKS; m++)
        if (alive[m] && !held[thread][m])
            printf("  child: unlock %d: %s\n", m, result(pthread_mutex_unlock(&mutexes[m])));
    mutex_trylock_each("child");
}

static void mutex_sequence(int ops) {
    start_sequence(MAX_LOCKS, make_mutex, mutex_op, mutex_probe_in_child);
    for (int k = 0; k < ops; k++) {
        int i = (int)pick(THREADS), m = (int)pick(MAX_LOCKS), op = (int)pick(M_OPS + 3);
        int mine = held[i][m], others = 0;
        for (int j = 0; j <= THREADS; j++)
            others += j == i ? 0 : held[j][m];
        int exited_only = others == held[THREADS][m];
        int plain = type_of[m] == PTHREAD_MUTEX_NORMAL || type_of[m] == PTHREAD_MUTEX_ADAPTIVE_NP;
        if (op == M_OPS) { /* a thread exits, now and then */
            if (pick(3) != 0)
                continue;
            replace_worker(i);
            for (int q = 0; q < MAX_LOCKS; q++) {
                held[THREADS][q] += held[i][q];
                held[i][q] = 0;
            }
            printf("%d: thread %d exits\n", k, i);
            continue;
        }
        if (op == M_OPS + 2) {
            fork_step(k, i);
            continue;
        }
        if (op == M_OPS + 1) { /* a destroyed mutex is made again */
            if (alive[m])
                continue;
            make_mutex(m);
            alive[m] = 1;
            for (int j = 0; j <= THREADS; j++)
                held[j][m] = 0;
            continue;
        }
        if (!alive[m] || (op == M_DESTROY && (mine || others)))
            continue;
        /* Skipped: waits that never end under glibc. */
        if (op == M_LOCK && ((others && !(exited_only && robust_of[m])) || (mine && plain)))
            continue;
        if (op == M_CONDWAIT && mine != 1)
            continue;
        int rc = run_op(i, op, m, mutex_op_names[op]);
        printf("%d: thread %d %s %d: %s\n", k, i, mutex_op_names[op], m, result(rc));
        if (op <= M_CLOCK && (rc == 0 || rc == EOWNERDEAD)) {
            held[i][m]++;
            if (rc == EOWNERDEAD)
                held[THREADS][m] = 0;
        } else if (op == M_UNLOCK && rc == 0) {
            if (held[i][m]) {
                held[i][m]--;
            } else { /* another thread's normal mutex: glibc frees it */
                for (int j = 0; j <= THREADS; j++)
                    held[j][m] = 0;
            }
        } else if (op == M_DESTROY && rc == 0) {
            alive[m] = 0;
        } else if (op == M_CONDWAIT && rc == ENOTRECOVERABLE) {
            held[i][m] = 0;
        }
    }
}

/* ---- rwlocks ---- */

enum {
    R_RD, R_TRYRD, R_TIMEDRD, R_CLOCKRD, R_PASTRD, /* read locks */
    R_WR, R_TRYWR, R_TIMEDWR, R_CLOCKWR, R_PASTWR, /* write locks */
    R_UNLOCK, R_DESTROY, R_OPS
};
static const char *const rwlock_op_names[] = {
    "rdlock", "tryrdlock", "timedrdlock", "clockrdlock", "timedrdlock-past",
    "wrlock", "trywrlock", "timedwrlock", "clockwrlock", "timedwrlock-past",
    "unlock", "destroy",
};

static pthread_rwlock_t rwlocks[MAX_LOCKS];

static int rwlock_op(int op, int l) {
    pthread_rwlock_t *x = &rwlocks[l];
    struct timespec real = after(CLOCK_REALTIME, SHORT_WAIT_NS), mono = after(CLOCK_MONOTONIC, SHORT_WAIT_NS);
    struct timespec past = {0, 0};
    switch (op) {
    case R_RD: return pthread_rwlock_rdlock(x);
    case R_TRYRD: return pthread_rwlock_tryrdlock(x);
    case R_TIMEDRD: return pthread_rwlock_timedrdlock(x, &real);
    case R_CLOCKRD: return pthread_rwlock_clockrdlock(x, CLOCK_MONOTONIC, &mono);
    case R_PASTRD: return pthread_rwlock_timedrdlock(x, &past);
    case R_WR: return pthread_rwlock_wrlock(x);
    case R_TRYWR: return pthread_rwlock_trywrlock(x);
    case R_TIMEDWR: return pthread_rwlock_timedwrlock(x, &real);
    case R_CLOCKWR: return pthread_rwlock_clockwrlock(x, CLOCK_MONOTONIC, &mono);
    case R_PASTWR: return pthread_rwlock_timedwrlock(x, &past);
    case R_UNLOCK: return pthread_rwlock_unlock(x);
    case R_DESTROY: return pthread_rwlock_destroy(x);
    }
    return -1;
}

static void make_rwlock(int l) {
    static const int kinds[] = {PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_RWLOCK_PREFER_WRITER_NP,
                                PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP};
    int kind = kinds[pick(3)], shared = (int)pick(2);
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, kind);
    pthread_rwlockattr_setpshared(&a, shared ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE);
    int rc = pthread_rwlock_init(&rwlocks[l], &a);
    pthread_rwlockattr_destroy(&a);
    printf("rwlock %d: kind %d shared %d: init %s\n", l, kind, shared, result(rc));
}

#define RWLOCKS 2

/* In a child of thread `thread`: a tryrdlock and a trywrlock of every rwlock (each
 * undone when it succeeds), then an unlock of each hold the thread has. */
static void rwlock_probe_in_child(int thread) {
    for (int l = 0; l < RWLOCKS; l++) {
        if (!alive[l])
            continue;
        int rc = pthread_rwlock_tryrdlock(&rwlocks[l]);
        printf("  child: tryrdlock %d: %s", l, result(rc));
        if (rc == 0)
            printf(", unlock: %s", result(pthread_rwlock_unlock(&rwlocks[l])));
        rc = pthread_rwlock_trywrlock(&rwlocks[l]);
        printf("; trywrlock: %s", result(rc));
        if (rc == 0)
            printf(", unlock: %s", result(pthread_rwlock_unlock(&rwlocks[l])));
        printf("\n");
    }
    for (int l = 0; l < RWLOCKS; l++)
        for (int n = alive[l] ? reads[thread][l] + writes[thread][l] : 0; n > 0; n--)
            printf("  child: unlock %d: %s\n", l, result(pthread_rwlock_unlock(&rwlocks[l])));
}

static void rwlock_sequence(int ops) {
    const int locks = RWLOCKS;
    start_sequence(locks, make_rwlock, rwlock_op, rwlock_probe_in_child);
    for (int k = 0; k < ops; k++) {
        int i = (int)pick(THREADS), l = (int)pick(locks), op = (int)pick(R_OPS + 3);
        int my_reads = reads[i][l], my_write = writes[i][l], other_reads = 0, other_writes = 0;
        for (int j = 0; j <= THREADS; j++) {
            other_reads += j == i ? 0 : reads[j][l];
            other_writes += j == i ? 0 : writes[j][l];
        }
        if (op == R_OPS) {
            if (pick(5) != 0)
                continue;
            replace_worker(i);
            for (int q = 0; q < locks; q++) {
                reads[THREADS][q] += reads[i][q];
                writes[THREADS][q] += writes[i][q];
                reads[i][q] = writes[i][q] = 0;
            }
            printf("%d: thread %d exits\n", k, i);
            continue;
        }
        if (op == R_OPS + 2) {
            fork_step(k, i);
            continue;
        }
        if (op == R_OPS + 1) {
            if (alive[l])
                continue;
            make_rwlock(l);
            alive[l] = 1;
            for (int j = 0; j <= THREADS; j++)
                reads[j][l] = writes[j][l] = 0;
            continue;
        }
        if (!alive[l])
            continue;
        if (op == R_DESTROY && (my_reads || my_write || other_reads || other_writes))
            continue;
        /* Skipped: waits that never end, and an unlock by a thread that holds nothing. */
        if ((op == R_RD && other_writes) || (op == R_WR && (other_reads || other_writes || my_reads)))
            continue;
        if (op == R_UNLOCK && !my_reads && !my_write)
            continue;
        int rc = run_op(i, op, l, rwlock_op_names[op]);
        printf("%d: thread %d %s %d: %s\n", k, i, rwlock_op_names[op], l, result(rc));
        if (rc != 0)
            continue;
        if (op <= R_PASTRD)
            reads[i][l]++;
        else if (op <= R_PASTWR)
            writes[i][l] = 1;
        else if (op == R_UNLOCK && my_write)
            writes[i][l] = 0;
        else if (op == R_UNLOCK)
            reads[i][l]--;
        else if (op == R_DESTROY)
            alive[l] = 0;
    }
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "mutex") != 0 && strcmp(argv[1], "rwlock") != 0)) {
        fprintf(stderr, "usage: differential mutex|rwlock SEED OPS\n");
        return 2;
    }
    rng = strtoull(argv[2], NULL, 10) * 2654435761ULL + 1;
    int ops = atoi(argv[3]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argv[1][0] == 'm')
        mutex_sequence(ops);
    else
        rwlock_sequence(ops);
    printf("end\n");
    fflush(stdout);
    _exit(0); /* threads may still hold locks: nothing is torn down */
}
