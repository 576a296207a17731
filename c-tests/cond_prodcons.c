/* Condition-variable producer/consumer with exact totals. pthread_cond_wait releases and
 * re-takes the mutex inside glibc (not through the interposed symbols), so this checks
 * that both paths speak one protocol. Every mutex type, static and pthread_mutex_init;
 * one round where consumers use pthread_cond_timedwait with a generous deadline. */
#include "check.h"

#define PRODUCERS 2
#define CONSUMERS 3
#define ITEMS 12000 /* per producer */
#define SLOTS 8

static pthread_mutex_t *mutex;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static long buffer[SLOTS];
static int head, count, producers_left;
static long consumed_sum[CONSUMERS], consumed_n[CONSUMERS];
static int use_timedwait;

static void check_owned(const char *where) {
    if (mutex->__data.__owner != gettid()) fail("%s: mutex __owner is %d, not the waiter %d", where, mutex->__data.__owner, gettid());
}

static void wait_on(pthread_cond_t *cv) {
    if (use_timedwait) {
        struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000LL);
        OK(pthread_cond_timedwait(cv, mutex, &ts));
    } else {
        OK(pthread_cond_wait(cv, mutex));
    }
    check_owned("after wait");
}

static void *producer(void *arg) {
    long id = (long)arg;
    for (long i = 1; i <= ITEMS; i++) {
        OK(pthread_mutex_lock(mutex));
        while (count == SLOTS) wait_on(&not_full);
        buffer[(head + count) % SLOTS] = id * 1000000 + i;
        count++;
        OK(pthread_cond_signal(&not_empty));
        OK(pthread_mutex_unlock(mutex));
    }
    OK(pthread_mutex_lock(mutex));
    if (--producers_left == 0) OK(pthread_cond_broadcast(&not_empty));
    OK(pthread_mutex_unlock(mutex));
    return NULL;
}

static void *consumer(void *arg) {
    long id = (long)arg;
    for (;;) {
        OK(pthread_mutex_lock(mutex));
        while (count == 0 && producers_left > 0) wait_on(&not_empty);
        if (count == 0) {
            OK(pthread_mutex_unlock(mutex));
            return NULL;
        }
        long v = buffer[head];
        head = (head + 1) % SLOTS;
        count--;
        OK(pthread_cond_signal(&not_full));
        OK(pthread_mutex_unlock(mutex));
        consumed_sum[id] += v;
        consumed_n[id]++;
    }
}

static void round_with(const char *name) {
    head = count = 0;
    producers_left = PRODUCERS;
    memset(consumed_sum, 0, sizeof consumed_sum);
    memset(consumed_n, 0, sizeof consumed_n);
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < CONSUMERS; i++) c[i] = start_thread(consumer, (void *)i);
    for (long i = 0; i < PRODUCERS; i++) p[i] = start_thread(producer, (void *)(i + 1));
    for (int i = 0; i < PRODUCERS; i++) join_thread(p[i]);
    for (int i = 0; i < CONSUMERS; i++) join_thread(c[i]);
    long n = 0, sum = 0, expect_sum = 0;
    for (int i = 0; i < CONSUMERS; i++) {
        n += consumed_n[i];
        sum += consumed_sum[i];
    }
    for (long id = 1; id <= PRODUCERS; id++) expect_sum += id * 1000000L * ITEMS + (long)ITEMS * (ITEMS + 1) / 2;
    if (n != (long)PRODUCERS * ITEMS) fail("%s: consumed %ld items, expected %ld", name, n, (long)PRODUCERS * ITEMS);
    if (sum != expect_sum) fail("%s: consumed sum %ld, expected %ld", name, sum, expect_sum);
    if (mutex->__data.__nusers != 0 || mutex->__data.__owner != 0 || mutex->__data.__lock != 0)
        fail("%s: mutex not clean afterwards: __lock %d __owner %d __nusers %u", name, mutex->__data.__lock,
             mutex->__data.__owner, mutex->__data.__nusers);
    OK(pthread_mutex_destroy(mutex));
}

int main(void) {
    test_begin("cond_prodcons", 30);
    static pthread_mutex_t s_normal = PTHREAD_MUTEX_INITIALIZER;
    static pthread_mutex_t s_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
    static pthread_mutex_t s_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    static pthread_mutex_t s_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    pthread_mutex_t m;

    mutex = &s_normal;
    round_with("static normal");
    mutex = &s_adaptive;
    round_with("static adaptive");
    mutex = &s_errorcheck;
    round_with("static errorcheck");
    mutex = &s_recursive;
    round_with("static recursive");
    mutex = &m;
    OK(pthread_mutex_init(&m, NULL));
    round_with("init default");
    init_typed(&m, PTHREAD_MUTEX_ERRORCHECK);
    round_with("init errorcheck");
    init_typed(&m, PTHREAD_MUTEX_ADAPTIVE_NP);
    round_with("init adaptive");
    use_timedwait = 1;
    OK(pthread_mutex_init(&m, NULL));
    round_with("init default, timedwait");
    init_typed(&m, PTHREAD_MUTEX_ERRORCHECK);
    round_with("init errorcheck, timedwait");
    return 0;
}
