/* Contends on a mutex, then raises the signal given as its argument and lingers: a
 * setting of the library must never change what that signal does to the program (with
 * SPINMUTEX_STATS_SIGNAL=15, SIGTERM must still end it). With `reset` after it, the
 * program first takes the signal and gives it its default action back, as CPython does
 * before it ends by SIGINT. With `once`, it takes the signal with a handler set to run
 * once (SA_RESETHAND), which raises the signal again to end by it, as Node.js does. With
 * `wait` instead, it says "ready" on stderr and waits for a signal from outside to end it.
 *
 * usage: raise_signal SIGNAL_NUMBER [reset|once] | raise_signal wait */
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void ignored(int sig) { (void)sig; }

/* Cleans up (nothing here), then ends by the signal: its default action is back. */
static void once_then_again(int sig, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    raise(sig);
}

int main(int argc, char **argv) {
    if (argc < 2) fail("usage: raise_signal SIGNAL_NUMBER [reset|once] | raise_signal wait");
    int waits = strcmp(argv[1], "wait") == 0;
    test_begin("raise_signal", waits ? 60 : 10);
    struct holder h;
    holder_start(&h, &m, 2);
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    holder_release(&h);
    if (waits) {
        fprintf(stderr, "ready\n");
        for (;;) pause();
    }
    int sig = atoi(argv[1]);
    if (argc > 2 && strcmp(argv[2], "reset") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = ignored;
        OK(sigaction(sig, &sa, NULL));
        sa.sa_handler = SIG_DFL;
        OK(sigaction(sig, &sa, NULL));
    }
    if (argc > 2 && strcmp(argv[2], "once") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = once_then_again;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
        sigfillset(&sa.sa_mask);
        OK(sigaction(sig, &sa, NULL));
    }
    raise(sig);
    sleep_ms(500);
    return 0;
}
