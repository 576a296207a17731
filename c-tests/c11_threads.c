/* C11 <threads.h>: glibc's mtx_* call its internal mutex functions directly (not the
 * interposed pthread_mutex_* symbols), so this also checks that they interoperate with
 * the interposed ones on the same memory (mtx_t has pthread_mutex_t's layout).
 *   mtx_init(mtx_plain / mtx_timed / mtx_plain|mtx_recursive / mtx_timed|mtx_recursive)
 *   contended exact counts with thrd_create; half the threads use pthread_mutex_lock
 *   mtx_trylock -> thrd_busy when held (and for a plain mutex held by the caller);
 *   recursive mtx_trylock on the own lock -> thrd_success
 *   mtx_timedlock -> thrd_timedout when held by another thread (not early), success free
 *   cnd_wait / cnd_timedwait / cnd_signal / cnd_broadcast producer-consumer, exact totals
 *   cnd_timedwait -> thrd_timedout with the mutex held again */
#include "check.h"

#include <stdatomic.h>
#include <threads.h>

#define THREADS 4
#define ITERS 20000

static mtx_t m;
static int m_recursive;
static volatile long counter;
static atomic_int inside;

#define TOK(call)                                                                          \
    do {                                                                                   \
        int r_ = (call);                                                                   \
        if (r_ != thrd_success) fail("%s:%d: %s returned %d, expected thrd_success", __FILE__, __LINE__, #call, r_); \
    } while (0)

static int count_worker(void *arg) {
    long id = (long)arg;
    pthread_mutex_t *pm = (pthread_mutex_t *)&m;
    for (long i = 0; i < ITERS; i++) {
        int via_pthread = (id & 1) != 0;
        if (via_pthread) OK(pthread_mutex_lock(pm));
        else TOK(mtx_lock(&m));
        if (m_recursive) TOK(mtx_lock(&m));
        if (atomic_fetch_add(&inside, 1) != 0) fail("two threads inside the critical section");
        long v = counter;
        if ((i & 127) == 0) thrd_yield();
        counter = v + 1;
        atomic_fetch_sub(&inside, 1);
        if (m_recursive) TOK(mtx_unlock(&m));
        if (via_pthread) OK(pthread_mutex_unlock(pm));
        else TOK(mtx_unlock(&m));
    }
    return 0;
}

static atomic_int hold_state;
static int hold_main(void *arg) {
    (void)arg;
    TOK(mtx_lock(&m));
    atomic_store(&hold_state, 1);
    while (atomic_load(&hold_state) != 2) thrd_yield();
    TOK(mtx_unlock(&m));
    return 0;
}

static int try_other(void *arg) {
    mtx_t *mx = (mtx_t *)arg;
    int r = mtx_trylock(mx);
    if (r == thrd_success) TOK(mtx_unlock(mx));
    return r;
}

static void one_type(int type, const char *name) {
    TOK(mtx_init(&m, type));
    m_recursive = (type & mtx_recursive) != 0;
    counter = 0;
    thrd_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        if (thrd_create(&t[i], count_worker, (void *)i) != thrd_success) fail("thrd_create");
    for (int i = 0; i < THREADS; i++) {
        int res;
        TOK(thrd_join(t[i], &res));
    }
    if (counter != (long)THREADS * ITERS) fail("%s: counter %ld, expected %ld", name, counter, (long)THREADS * ITERS);

    /* trylock */
    TOK(mtx_trylock(&m));
    int r = mtx_trylock(&m);
    if (m_recursive) {
        if (r != thrd_success) fail("%s: recursive mtx_trylock of own lock returned %d", name, r);
        TOK(mtx_unlock(&m));
    } else if (r != thrd_busy) {
        fail("%s: mtx_trylock of own lock returned %d, expected thrd_busy", name, r);
    }
    thrd_t o;
    if (thrd_create(&o, try_other, &m) != thrd_success) fail("thrd_create");
    TOK(thrd_join(o, &r));
    if (r != thrd_busy) fail("%s: mtx_trylock by another thread returned %d, expected thrd_busy", name, r);
    TOK(mtx_unlock(&m));
    if (thrd_create(&o, try_other, &m) != thrd_success) fail("thrd_create");
    TOK(thrd_join(o, &r));
    if (r != thrd_success) fail("%s: mtx_trylock of a free mutex returned %d", name, r);

    /* timedlock */
    if (type & mtx_timed) {
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        ts.tv_sec -= 1;
        TOK(mtx_timedlock(&m, &ts)); /* free: taken even with a past deadline */
        TOK(mtx_unlock(&m));
        atomic_store(&hold_state, 0);
        thrd_t h;
        if (thrd_create(&h, hold_main, NULL) != thrd_success) fail("thrd_create");
        while (atomic_load(&hold_state) != 1) thrd_yield();
        ts = deadline_in(CLOCK_REALTIME, 40000000LL);
        r = mtx_timedlock(&m, &ts);
        int64_t early = ts_ns(&ts) - now_ns(CLOCK_REALTIME);
        if (r != thrd_timedout) fail("%s: mtx_timedlock of a held mutex returned %d, expected thrd_timedout", name, r);
        if (early > 1000000) fail("%s: mtx_timedlock timed out %lld us early", name, (long long)(early / 1000));
        atomic_store(&hold_state, 2);
        TOK(thrd_join(h, &r));
        ts = deadline_in(CLOCK_REALTIME, 5000000000LL);
        TOK(mtx_timedlock(&m, &ts));
        TOK(mtx_unlock(&m));
    }
    mtx_destroy(&m);
}

/* ---- cnd producer/consumer ---- */

#define ITEMS 10000
#define SLOTS 4
static mtx_t qm;
static cnd_t not_empty, not_full;
static long q[SLOTS];
static int qhead, qcount, producing;
static long got_sum, got_n;

static int producer(void *arg) {
    long base = (long)arg;
    for (long i = 1; i <= ITEMS; i++) {
        TOK(mtx_lock(&qm));
        while (qcount == SLOTS) TOK(cnd_wait(&not_full, &qm));
        q[(qhead + qcount++) % SLOTS] = base + i;
        TOK(cnd_signal(&not_empty));
        TOK(mtx_unlock(&qm));
    }
    TOK(mtx_lock(&qm));
    if (--producing == 0) TOK(cnd_broadcast(&not_empty));
    TOK(mtx_unlock(&qm));
    return 0;
}

static int consumer(void *arg) {
    (void)arg;
    for (;;) {
        TOK(mtx_lock(&qm));
        while (qcount == 0 && producing > 0) {
            struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000LL);
            int r = cnd_timedwait(&not_empty, &qm, &ts);
            if (r != thrd_success) fail("cnd_timedwait returned %d", r);
        }
        if (qcount == 0) {
            TOK(mtx_unlock(&qm));
            return 0;
        }
        long v = q[qhead];
        qhead = (qhead + 1) % SLOTS;
        qcount--;
        got_sum += v;
        got_n++;
        TOK(cnd_broadcast(&not_full));
        TOK(mtx_unlock(&qm));
    }
}

static void prodcons(int type) {
    TOK(mtx_init(&qm, type));
    TOK(cnd_init(&not_empty));
    TOK(cnd_init(&not_full));
    qhead = qcount = 0;
    producing = 2;
    got_sum = got_n = 0;
    thrd_t t[5];
    if (thrd_create(&t[0], producer, (void *)1000000L) != thrd_success) fail("thrd_create");
    if (thrd_create(&t[1], producer, (void *)2000000L) != thrd_success) fail("thrd_create");
    for (int i = 2; i < 5; i++)
        if (thrd_create(&t[i], consumer, NULL) != thrd_success) fail("thrd_create");
    for (int i = 0; i < 5; i++) {
        int res;
        TOK(thrd_join(t[i], &res));
    }
    long expect = 3000000L * ITEMS + (long)ITEMS * (ITEMS + 1);
    if (got_n != 2L * ITEMS) fail("cnd: consumed %ld items, expected %ld", got_n, 2L * ITEMS);
    if (got_sum != expect) fail("cnd: consumed sum %ld, expected %ld", got_sum, expect);

    /* cnd_timedwait times out with the mutex held again. */
    TOK(mtx_lock(&qm));
    struct timespec ts = deadline_in(CLOCK_REALTIME, 30000000LL);
    int r;
    while ((r = cnd_timedwait(&not_empty, &qm, &ts)) == thrd_success) {
    }
    if (r != thrd_timedout) fail("cnd_timedwait returned %d, expected thrd_timedout", r);
    int64_t early = ts_ns(&ts) - now_ns(CLOCK_REALTIME);
    if (early > 1000000) fail("cnd_timedwait timed out %lld us early", (long long)(early / 1000));
    pthread_mutex_t *pm = (pthread_mutex_t *)&qm;
    if (pm->__data.__owner != gettid()) fail("cnd_timedwait returned without the mutex");
    thrd_t o;
    if (thrd_create(&o, try_other, &qm) != thrd_success) fail("thrd_create");
    TOK(thrd_join(o, &r));
    if (r != thrd_busy) fail("after cnd_timedwait, mtx_trylock by another thread returned %d", r);
    TOK(mtx_unlock(&qm));
    cnd_destroy(&not_empty);
    cnd_destroy(&not_full);
    mtx_destroy(&qm);
}

int main(void) {
    test_begin("c11_threads", 30);
    one_type(mtx_plain, "mtx_plain");
    one_type(mtx_timed, "mtx_timed");
    one_type(mtx_plain | mtx_recursive, "mtx_plain|mtx_recursive");
    one_type(mtx_timed | mtx_recursive, "mtx_timed|mtx_recursive");
    prodcons(mtx_plain);
    prodcons(mtx_timed);
    return 0;
}
