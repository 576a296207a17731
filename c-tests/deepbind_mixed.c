/* One mutex locked and unlocked both through this library and through glibc's own
 * functions, at once: a plugin loaded with RTLD_DEEPBIND binds its pthread_mutex_* calls
 * to glibc ahead of the preload (deepbind_plugin.c), which is what any program that
 * loads its plugins so meets. The lock lives in the mutex's bytes in glibc's protocol,
 * so the two must mix: exact counts for every type with threads that lock through one
 * side and unlock through the other, glibc's error codes for the owner either side
 * records, a timed lock through glibc on a mutex this library holds, and a condition
 * variable whose waiter and signaller are on different sides.
 *
 * Reader-writer locks do not mix so: this library serves them with a protocol of its
 * own (docs/DESIGN.md, "Known limits"). With the argument `rwlock` the program takes one
 * rwlock through both sides instead, which works without the preload, under `glibc`, and
 * with SPINMUTEX_RWLOCKS=0 (every rwlock call forwarded to glibc). With `rwlock-held`,
 * a thread of the program waits 200 ms to write-lock an rwlock that the plugin holds
 * for writing: a library that serves rwlocks then says, on stderr, that glibc's
 * functions took it, and what to do.
 *
 * usage: deepbind_mixed [rwlock | rwlock-held]   (the plugin is found beside the program) */
#include "check.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>

#define THREADS 4
#define ITERS 20000

typedef int lock_fn(pthread_mutex_t *);
static lock_fn *plugin_lock, *plugin_trylock, *plugin_unlock;
static int (*plugin_timedlock)(pthread_mutex_t *, const struct timespec *);
static int (*plugin_cond_wait)(pthread_cond_t *, pthread_mutex_t *);

static pthread_mutex_t *mutex;
static long counter;

static void *load_plugin(void) {
    char exe[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) fail("readlink /proc/self/exe");
    exe[n] = 0;
    snprintf(path, sizeof path, "%s/deepbind_plugin", dirname(exe));
    void *plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!plugin) fail("dlopen %s: %s", path, dlerror());
    return plugin;
}

static void *symbol(void *plugin, const char *name) {
    void *f = dlsym(plugin, name);
    if (!f) fail("dlsym %s: %s", name, dlerror());
    return f;
}

/* Each thread locks and unlocks through a side chosen per iteration, the two choices
 * out of step, so that every pairing (ours/ours, ours/glibc, glibc/ours, glibc/glibc)
 * occurs, with contention; a recursive mutex is entered twice, once through each. */
static void *worker(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        int lock_glibc = (int)((id + i) & 1), unlock_glibc = (int)((id + i / 3) & 1);
        if (i % 5 == 0) {
            int rc;
            while ((rc = (lock_glibc ? plugin_trylock : pthread_mutex_trylock)(mutex)) == EBUSY) {
            }
            if (rc != 0) fail("trylock returned %s", err_name(rc));
        } else {
            OK((lock_glibc ? plugin_lock : pthread_mutex_lock)(mutex));
        }
        int recursive = (lock_glibc ? plugin_trylock : pthread_mutex_trylock)(mutex) == 0;
        counter++;
        if (recursive) OK((unlock_glibc ? pthread_mutex_unlock : plugin_unlock)(mutex));
        OK((unlock_glibc ? plugin_unlock : pthread_mutex_unlock)(mutex));
    }
    return NULL;
}

static void run_type(int type, const char *name) {
    pthread_mutex_t m;
    pthread_mutexattr_t attr;
    OK(pthread_mutexattr_init(&attr));
    OK(pthread_mutexattr_settype(&attr, type));
    OK(pthread_mutex_init(&m, &attr));
    mutex = &m;
    counter = 0;
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) OK(pthread_create(&t[i], NULL, worker, (void *)i));
    for (int i = 0; i < THREADS; i++) OK(pthread_join(t[i], NULL));
    if (counter != (long)THREADS * ITERS) fail("%s: counter %ld, expected %d", name, counter, THREADS * ITERS);

    /* The owner is one thread whichever side took the lock. */
    OK(plugin_lock(&m));
    if (type == PTHREAD_MUTEX_ERRORCHECK) {
        EXPECT_RC(pthread_mutex_lock(&m), EDEADLK);
        EXPECT_RC(pthread_mutex_trylock(&m), EBUSY);
    }
    if (type == PTHREAD_MUTEX_RECURSIVE) {
        OK(pthread_mutex_lock(&m));
        OK(plugin_unlock(&m));
    }
    /* glibc's timed lock waits out a mutex this library holds for another thread. */
    struct holder h;
    OK(plugin_unlock(&m));
    holder_start(&h, &m, 0);
    struct timespec at = deadline_in(CLOCK_REALTIME, 20 * 1000 * 1000);
    EXPECT_RC(plugin_timedlock(&m, &at), ETIMEDOUT);
    EXPECT_RC(plugin_trylock(&m), EBUSY);
    if (type == PTHREAD_MUTEX_ERRORCHECK) EXPECT_RC(plugin_unlock(&m), EPERM);
    holder_release(&h);
    OK(plugin_lock(&m));
    OK(pthread_mutex_unlock(&m));
    if (type == PTHREAD_MUTEX_ERRORCHECK || type == PTHREAD_MUTEX_RECURSIVE) EXPECT_RC(plugin_unlock(&m), EPERM);
    OK(pthread_mutex_destroy(&m));
    OK(pthread_mutexattr_destroy(&attr));
}

/* A waiter on this library's side, signalled from glibc's, and the other way round. */
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn, rounds_done;
#define ROUNDS 2000

static void *ping(void *arg) {
    int side = (int)(long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        OK((side ? plugin_lock : pthread_mutex_lock)(&cm));
        while (turn != side) OK(side ? plugin_cond_wait(&cv, &cm) : pthread_cond_wait(&cv, &cm));
        turn = !side;
        rounds_done++;
        OK(pthread_cond_broadcast(&cv));
        OK((r & 1 ? plugin_unlock : pthread_mutex_unlock)(&cm));
    }
    return NULL;
}

/* Readers and writers through either side of one rwlock: exact counts, and no reader
 * ever sees a write half done. */
static lock_fn *plugin_rdlock_fn, *plugin_wrlock_fn, *plugin_rwunlock_fn;
typedef int rw_fn(pthread_rwlock_t *);
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long halves[2];

static void *rw_worker(void *arg) {
    long id = (long)arg;
    rw_fn *rd = (rw_fn *)(void *)plugin_rdlock_fn, *wr = (rw_fn *)(void *)plugin_wrlock_fn,
          *un = (rw_fn *)(void *)plugin_rwunlock_fn;
    for (int i = 0; i < ITERS; i++) {
        int lock_glibc = (int)((id + i) & 1), unlock_glibc = (int)((id + i / 3) & 1);
        if (i % 4 == 0) {
            OK((lock_glibc ? rd : pthread_rwlock_rdlock)(&rw));
            if (halves[0] != halves[1]) fail("a reader saw a write half done: %ld, %ld", halves[0], halves[1]);
        } else {
            OK((lock_glibc ? wr : pthread_rwlock_wrlock)(&rw));
            halves[0]++;
            halves[1]++;
        }
        OK((unlock_glibc ? un : pthread_rwlock_unlock)(&rw));
    }
    return NULL;
}

static void run_rwlock(void *plugin) {
    plugin_rdlock_fn = (lock_fn *)symbol(plugin, "plugin_rdlock");
    plugin_wrlock_fn = (lock_fn *)symbol(plugin, "plugin_wrlock");
    plugin_rwunlock_fn = (lock_fn *)symbol(plugin, "plugin_rwunlock");
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) OK(pthread_create(&t[i], NULL, rw_worker, (void *)i));
    for (int i = 0; i < THREADS; i++) OK(pthread_join(t[i], NULL));
    long expect = (long)THREADS * (ITERS - (ITERS + 3) / 4);
    if (halves[0] != expect) fail("rwlock: %ld writes counted, expected %ld", halves[0], expect);
}

static void *timed_writer(void *arg) {
    (void)arg;
    struct timespec at = deadline_in(CLOCK_REALTIME, 200 * 1000 * 1000);
    int rc = pthread_rwlock_timedwrlock(&rw, &at);
    if (rc == 0) rc = pthread_rwlock_unlock(&rw);
    return (void *)(long)rc;
}

/* The plugin holds the lock for writing while a thread of the program waits for it. */
static void run_rwlock_held(void *plugin) {
    plugin_wrlock_fn = (lock_fn *)symbol(plugin, "plugin_wrlock");
    plugin_rwunlock_fn = (lock_fn *)symbol(plugin, "plugin_rwunlock");
    OK(((rw_fn *)(void *)plugin_wrlock_fn)(&rw));
    pthread_t t;
    OK(pthread_create(&t, NULL, timed_writer, NULL));
    void *rc;
    OK(pthread_join(t, &rc));
    OK(((rw_fn *)(void *)plugin_rwunlock_fn)(&rw));
    /* Without the preload the writer times out; served, whatever the protocols make of
     * it, the program goes on: only the warning is checked. */
    if ((long)rc != ETIMEDOUT && (long)rc != 0) fail("timed writer returned %s", err_name((int)(long)rc));
}

int main(int argc, char **argv) {
    test_begin("deepbind_mixed", 60);
    void *plugin = load_plugin();
    if (argc > 1 && strcmp(argv[1], "rwlock") == 0) {
        run_rwlock(plugin);
        printf("ok\n");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "rwlock-held") == 0) {
        run_rwlock_held(plugin);
        printf("ok\n");
        return 0;
    }
    plugin_lock = (lock_fn *)symbol(plugin, "plugin_lock");
    plugin_trylock = (lock_fn *)symbol(plugin, "plugin_trylock");
    plugin_unlock = (lock_fn *)symbol(plugin, "plugin_unlock");
    plugin_timedlock = (int (*)(pthread_mutex_t *, const struct timespec *))symbol(plugin, "plugin_timedlock");
    plugin_cond_wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))symbol(plugin, "plugin_cond_wait");

    /* The plugin must reach glibc's function, or this tests nothing. */
    void *(*binding)(void) = (void *(*)(void))symbol(plugin, "plugin_binding");
    Dl_info info;
    if (!dladdr(binding(), &info) || !info.dli_fname || !strstr(info.dli_fname, "libc.so"))
        fail("the plugin's pthread_mutex_lock is in %s, not glibc's", info.dli_fname ? info.dli_fname : "?");

    run_type(PTHREAD_MUTEX_NORMAL, "normal");
    run_type(PTHREAD_MUTEX_RECURSIVE, "recursive");
    run_type(PTHREAD_MUTEX_ERRORCHECK, "errorcheck");
    run_type(PTHREAD_MUTEX_ADAPTIVE_NP, "adaptive");

    pthread_t a, b;
    OK(pthread_create(&a, NULL, ping, (void *)0));
    OK(pthread_create(&b, NULL, ping, (void *)1));
    OK(pthread_join(a, NULL));
    OK(pthread_join(b, NULL));
    if (rounds_done != 2 * ROUNDS) fail("condition variable: %d rounds, expected %d", rounds_done, 2 * ROUNDS);
    printf("ok\n");
    return 0;
}
