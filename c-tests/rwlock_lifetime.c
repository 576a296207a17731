/* rwlocks taken before the preloaded library's constructor has run (from this
 * program's .preinit_array, before libc has even set up environ), in a constructor, in
 * main, in an atexit handler and in a destructor (after the library's destructor may
 * have run): each stage locks for reading and writing, checks EBUSY/EDEADLK, and prints
 * one line. The test compares stdout with the run without the preload. */
#include "rwlock_check.h"

static pthread_rwlock_t a = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t b = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static int exercise(void) {
    if (pthread_rwlock_rdlock(&a) != 0 || pthread_rwlock_tryrdlock(&a) != 0) return 0;
    if (pthread_rwlock_trywrlock(&a) != EBUSY) return 0;
    if (pthread_rwlock_unlock(&a) != 0 || pthread_rwlock_unlock(&a) != 0) return 0;
    if (pthread_rwlock_wrlock(&b) != 0 || pthread_rwlock_rdlock(&b) != EDEADLK) return 0;
    struct timespec ts = deadline_in(CLOCK_MONOTONIC, 1000000);
    if (pthread_rwlock_clockwrlock(&b, CLOCK_MONOTONIC, &ts) != EDEADLK) return 0;
    if (pthread_rwlock_unlock(&b) != 0) return 0;
    if (pthread_rwlock_trywrlock(&a) != 0 || pthread_rwlock_unlock(&a) != 0) return 0;
    return 1;
}

static int preinit_ok;
static void preinit(int argc, char **argv, char **envp) {
    (void)argc, (void)argv, (void)envp;
    preinit_ok = exercise();
}
__attribute__((section(".preinit_array"), used)) static void (*preinit_entry)(int, char **, char **) = preinit;

__attribute__((constructor)) static void ctor(void) {
    printf("preinit %s\n", preinit_ok ? "ok" : "FAILED");
    printf("ctor %s\n", exercise() ? "ok" : "FAILED");
}

static void at_exit(void) {
    printf("atexit %s\n", exercise() ? "ok" : "FAILED");
    fflush(stdout);
}

__attribute__((destructor)) static void dtor(void) {
    /* stdout may already be flushed and closed by now: write(2) directly. */
    const char *msg = exercise() ? "dtor ok\n" : "dtor FAILED\n";
    ssize_t r = write(1, msg, strlen(msg));
    (void)r;
}

int main(void) {
    atexit(at_exit);
    printf("main %s\n", exercise() ? "ok" : "FAILED");
    return 0;
}
