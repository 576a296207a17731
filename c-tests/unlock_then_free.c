/* A mutex freed by the next owner the moment the previous owner has released it.
 *
 * POSIX lets the thread that takes a mutex next destroy it and free its memory at once
 * (a reference-counted object that holds its own mutex: the last reference is dropped
 * under the lock, then the object goes). So after the instruction that releases the
 * lock, an unlock may touch nothing of the mutex but the futex call on its address.
 *
 * Each round puts an object (its mutex and a reference count of 2) in a page of its
 * own. The "releaser" thread ends up owning the lock with the word marked contended
 * (it slept, was woken and took the lock as a woken thread must), so its unlock takes
 * the contended path. Meanwhile the "freer" thread polls with trylock; as soon as the
 * lock is free it drops the last reference and unmaps the page. A timer signal aimed
 * at the releaser (mode `timer`) stretches the gap between its release and whatever it
 * does next, so that a read of the mutex after the release meets an unmapped page
 * (SIGSEGV) within a short run. Mode `yield` widens the gap with sched_yield in the
 * handler instead of a busy wait.
 *
 * usage: unlock_then_free [timer|yield] [milliseconds] */
#include "check.h"

#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>

struct object {
    pthread_mutex_t lock;
    int refs;
};

static struct object *_Atomic current;
static atomic_int round_no;      /* the round the threads work on */
static atomic_int releaser_done; /* rounds the releaser has finished */
static atomic_int dropped;       /* rounds in which the releaser dropped its reference */
static atomic_int stop;
static atomic_long widened;
static int use_yield;
static long page;

static void on_timer(int sig) {
    (void)sig;
    if (use_yield) {
        sched_yield();
    } else {
        int64_t until = now_ns(CLOCK_MONOTONIC) + 20000;
        while (now_ns(CLOCK_MONOTONIC) < until) {
        }
    }
    atomic_fetch_add(&widened, 1);
}

/* Drops one reference with the object's lock held; the last one frees the object. */
static int drop_ref_locked(struct object *o) { return --o->refs == 0; }

static void destroy(struct object *o) {
    OK(pthread_mutex_destroy(&o->lock));
    if (munmap(o, page) != 0) fail("munmap: %s", strerror(errno));
}

/* Owns the lock as a woken sleeper (word contended), then drops its reference and
 * releases. The freer may unmap the page any time after the release. */
static void *releaser(void *arg) {
    pid_t *tid = arg;
    *tid = (pid_t)syscall(SYS_gettid);
    for (int r = 1; !atomic_load(&stop); r++) {
        while (atomic_load(&round_no) < r && !atomic_load(&stop)) sched_yield();
        if (atomic_load(&stop)) break;
        struct object *o = atomic_load(&current);
        OK(pthread_mutex_lock(&o->lock)); /* blocks: main holds it, then wakes us */
        if (drop_ref_locked(o)) fail("the releaser dropped the last reference");
        atomic_store(&dropped, r);
        OK(pthread_mutex_unlock(&o->lock));
        atomic_store(&releaser_done, r);
    }
    return NULL;
}

/* Waits for the releaser to own the lock, takes it the moment it is free, drops the
 * last reference and frees the object. */
static void *freer(void *arg) {
    (void)arg;
    for (int r = 1; !atomic_load(&stop); r++) {
        while (atomic_load(&round_no) < r && !atomic_load(&stop)) sched_yield();
        if (atomic_load(&stop)) break;
        struct object *o = atomic_load(&current);
        /* Only once the releaser owns the lock and has dropped its reference: from then
         * on, poll for the moment it releases. */
        while (atomic_load(&dropped) < r && !atomic_load(&stop)) sched_yield();
        int last;
        for (;;) {
            int rc = pthread_mutex_trylock(&o->lock);
            if (rc == 0) {
                last = drop_ref_locked(o);
                OK(pthread_mutex_unlock(&o->lock));
                break;
            }
            if (rc != EBUSY) fail("trylock returned %s", err_name(rc));
        }
        if (!last) fail("round %d: the freer did not drop the last reference", r);
        destroy(o);
    }
    return NULL;
}

int main(int argc, char **argv) {
    test_begin("unlock_then_free", 60);
    use_yield = argc > 1 && strcmp(argv[1], "yield") == 0;
    long ms = argc > 2 ? atol(argv[2]) : 1500;
    page = sysconf(_SC_PAGESIZE);
    signal(SIGUSR1, on_timer);

    pid_t releaser_tid = 0;
    pthread_t rt = start_thread(releaser, &releaser_tid);
    pthread_t ft = start_thread(freer, NULL);
    while (__atomic_load_n(&releaser_tid, __ATOMIC_SEQ_CST) == 0) usleep(100);

    timer_t timer;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGUSR1;
    sev._sigev_un._tid = releaser_tid;
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) fail("timer_create: %s", strerror(errno));
    struct itimerspec every = {{0, 37000}, {0, 37000}};
    if (timer_settime(timer, 0, &every, NULL) != 0) fail("timer_settime: %s", strerror(errno));

    int64_t end = now_ns(CLOCK_MONOTONIC) + ms * 1000000LL;
    int rounds = 0;
    while (now_ns(CLOCK_MONOTONIC) < end) {
        struct object *o = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (o == MAP_FAILED) fail("mmap: %s", strerror(errno));
        OK(pthread_mutex_init(&o->lock, NULL));
        o->refs = 2;
        /* Main holds the lock while the releaser goes to sleep on it, so that the
         * releaser takes it as a woken sleeper: the word then reads contended and its
         * unlock takes the contended path. */
        OK(pthread_mutex_lock(&o->lock));
        atomic_store(&current, o);
        atomic_store(&round_no, ++rounds);
        int64_t give_up = now_ns(CLOCK_MONOTONIC) + 2000000;
        while (__atomic_load_n(&o->lock.__data.__lock, __ATOMIC_RELAXED) != 2 && now_ns(CLOCK_MONOTONIC) < give_up)
            sched_yield();
        OK(pthread_mutex_unlock(&o->lock));
        while (atomic_load(&releaser_done) < rounds) sched_yield();
        /* The freer unmaps the object; wait for it before the next round. */
        while (msync(o, page, MS_ASYNC) == 0) sched_yield();
    }
    atomic_store(&stop, 1);
    timer_delete(timer);
    join_thread(rt);
    join_thread(ft);
    fprintf(stderr, "unlock_then_free: %d rounds, %ld timer signals\n", rounds, atomic_load(&widened));
    return 0;
}
