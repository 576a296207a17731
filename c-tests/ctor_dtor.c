/* Locks taken outside main: from the executable's .preinit_array (which runs before
 * any shared object's constructor, so before the preloaded library's own), from a
 * constructor (each including a lock contended by a thread started there, and a timed
 * lock), from an atexit handler (also contended) and from a destructor. Each stage
 * writes one line to stdout with write(2); the test checks that all five lines appear
 * in order: preinit ok / ctor ok / main ok / atexit ok / dtor ok */
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rm = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t em = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static volatile long count;
static volatile int waiting;

static void say(const char *s) {
    ssize_t r = write(1, s, strlen(s));
    (void)r;
}

static void *contender(void *arg) {
    (void)arg;
    __atomic_store_n(&waiting, 1, __ATOMIC_SEQ_CST);
    OK(pthread_mutex_lock(&m)); /* blocks until the other side unlocks */
    count++;
    OK(pthread_mutex_unlock(&m));
    return NULL;
}

/* Holds m while another thread blocks on it, then releases; exact count after. */
static void contended_round(const char *where) {
    long before = count;
    OK(pthread_mutex_lock(&m));
    __atomic_store_n(&waiting, 0, __ATOMIC_SEQ_CST);
    pthread_t t = start_thread(contender, NULL);
    while (!__atomic_load_n(&waiting, __ATOMIC_SEQ_CST)) usleep(100);
    usleep(5000);
    if (count != before) fail("%s: contender got in while the mutex was held", where);
    count++;
    OK(pthread_mutex_unlock(&m));
    join_thread(t);
    if (count != before + 2) fail("%s: count %ld, expected %ld", where, count, before + 2);
}

static void typed_checks(const char *where) {
    OK(pthread_mutex_lock(&rm));
    OK(pthread_mutex_lock(&rm));
    OK(pthread_mutex_unlock(&rm));
    OK(pthread_mutex_unlock(&rm));
    OK(pthread_mutex_lock(&em));
    EXPECT_RC(pthread_mutex_lock(&em), EDEADLK);
    OK(pthread_mutex_unlock(&em));
    EXPECT_RC(pthread_mutex_unlock(&em), EPERM);
    struct timespec ts = deadline_in(CLOCK_REALTIME, 1000000000LL);
    OK(pthread_mutex_timedlock(&m, &ts));
    EXPECT_RC(pthread_mutex_trylock(&m), EBUSY);
    OK(pthread_mutex_unlock(&m));
    (void)where;
}

static void preinit(int argc, char **argv, char **envp) {
    (void)argc, (void)argv, (void)envp;
    test_begin("ctor_dtor (preinit_array)", 30);
    typed_checks("preinit");
    contended_round("preinit");
    say("preinit ok\n");
}
__attribute__((section(".preinit_array"), used)) static void (*const preinit_entry)(int, char **, char **) = preinit;

__attribute__((constructor)) static void ctor(void) {
    test_name = "ctor_dtor (constructor)";
    typed_checks("constructor");
    contended_round("constructor");
    pthread_mutex_t local;
    init_typed(&local, PTHREAD_MUTEX_ERRORCHECK);
    OK(pthread_mutex_lock(&local));
    OK(pthread_mutex_unlock(&local));
    OK(pthread_mutex_destroy(&local));
    say("ctor ok\n");
}

static void at_exit(void) {
    test_name = "ctor_dtor (atexit)";
    typed_checks("atexit");
    contended_round("atexit");
    say("atexit ok\n");
}

__attribute__((destructor)) static void dtor(void) {
    test_name = "ctor_dtor (destructor)";
    typed_checks("destructor");
    OK(pthread_mutex_lock(&m));
    count++;
    OK(pthread_mutex_unlock(&m));
    if (count != 7) fail("destructor: count %ld, expected 7", count);
    say("dtor ok\n");
}

int main(void) {
    test_name = "ctor_dtor (main)";
    if (count != 4) fail("main: count %ld after preinit and the constructor, expected 4", count);
    if (atexit(at_exit) != 0) fail("atexit failed");
    typed_checks("main");
    say("main ok\n");
    return 0;
}
