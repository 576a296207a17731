/* Contends on a mutex, then raises the signal given as its argument and lingers: a
 * setting of the library must never change what that signal does to the program (with
 * SPINMUTEX_STATS_SIGNAL=15, SIGTERM must still end it).
 *
 * usage: raise_signal SIGNAL_NUMBER */
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int main(int argc, char **argv) {
    test_begin("raise_signal", 10);
    if (argc < 2) fail("usage: raise_signal SIGNAL_NUMBER");
    struct holder h;
    holder_start(&h, &m, 2);
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    holder_release(&h);
    raise(atoi(argv[1]));
    sleep_ms(500);
    return 0;
}
