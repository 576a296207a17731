/* The signals the library may handle (with statistics on: SIGINT, SIGTERM, SIGHUP,
 * SIGPIPE and SPINMUTEX_STATS_SIGNAL's SIGUSR2) look to the program exactly as it left
 * them, the default action, through sigaction and every function of the signal family;
 * and the handler the program then installs is the one that runs. CPython, for one,
 * raises KeyboardInterrupt on Ctrl-C only if SIGINT was at its default action. */
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t caught;

static void own(int sig) { caught = sig; }

static volatile sig_atomic_t info_ok;

static void own_with_info(int sig, siginfo_t *info, void *context) {
    caught = sig;
    info_ok = info != NULL && info->si_signo == sig && info->si_code == SI_TKILL && context != NULL;
}

static void expect_default(int sig) {
    struct sigaction sa;
    memset(&sa, 0xa5, sizeof sa);
    OK(sigaction(sig, NULL, &sa));
    if (sa.sa_handler != SIG_DFL || sa.sa_flags != 0 || !sigisemptyset(&sa.sa_mask))
        fail("signal %d reads as handler %p, flags %#x, %s mask: not the default action", sig,
             (void *)sa.sa_handler, (unsigned)sa.sa_flags, sigisemptyset(&sa.sa_mask) ? "an empty" : "a");
}

static void expect_own_runs(int sig) {
    caught = 0;
    raise(sig);
    if (caught != sig) fail("signal %d: the program's own handler did not run", sig);
}

static void expect_old(sighandler_t old, sighandler_t expected, int sig, const char *how) {
    if (old != expected)
        fail("%s(%d, ...) returned %p as the old handler, expected %p", how, sig, (void *)old, (void *)expected);
}

int main(void) {
    test_begin("signal_dispositions", 10);
    struct holder h;
    holder_start(&h, &m, 2);
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    holder_release(&h);

    const int watched[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR2};
    for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++) expect_default(watched[i]);

    /* signal: the old handler is the default action, and ours replaces it. */
    expect_old(signal(SIGINT, own), SIG_DFL, SIGINT, "signal");
    expect_own_runs(SIGINT);
    expect_old(signal(SIGINT, SIG_DFL), own, SIGINT, "signal");
    struct sigaction old, act;
    OK(sigaction(SIGINT, NULL, &old));
    if (old.sa_handler != SIG_DFL) fail("SIGINT set to SIG_DFL reads as %p", (void *)old.sa_handler);

    /* sysv_signal: the same, and its handler is reset after one delivery. */
    expect_old(sysv_signal(SIGTERM, own), SIG_DFL, SIGTERM, "sysv_signal");
    expect_own_runs(SIGTERM);
    OK(sigaction(SIGTERM, NULL, &old));
    if (old.sa_handler != SIG_DFL) fail("sysv_signal's handler was not reset after one delivery");

    /* A handler set to run once reads back as set, runs with its siginfo, and leaves the
     * default action. */
    memset(&act, 0, sizeof act);
    act.sa_sigaction = own_with_info;
    act.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, SIGUSR1);
    OK(sigaction(SIGINT, &act, &old));
    if (old.sa_handler != SIG_DFL) fail("SIGINT's old disposition is %p, not the default action", (void *)old.sa_handler);
    OK(sigaction(SIGINT, NULL, &old));
    if (old.sa_sigaction != own_with_info || (old.sa_flags & (SA_SIGINFO | SA_RESETHAND)) != (SA_SIGINFO | SA_RESETHAND) ||
        !sigismember(&old.sa_mask, SIGUSR1))
        fail("SIGINT set to run once reads as handler %p, flags %#x", (void *)old.sa_handler, (unsigned)old.sa_flags);
    caught = 0;
    raise(SIGINT);
    if (caught != SIGINT || !info_ok) fail("the handler set to run once did not run, or without its siginfo");
    OK(sigaction(SIGINT, NULL, &old));
    if (old.sa_handler != SIG_DFL) fail("a handler set to run once was not reset after one delivery");

    /* sigset (deprecated, still used) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    expect_old(sigset(SIGHUP, own), SIG_DFL, SIGHUP, "sigset");
    expect_own_runs(SIGHUP);
    expect_old(sigset(SIGHUP, SIG_DFL), own, SIGHUP, "sigset");
#pragma GCC diagnostic pop

    /* CPython's way: install only over the default action. */
    memset(&act, 0, sizeof act);
    act.sa_handler = own;
    OK(sigaction(SIGPIPE, NULL, &old));
    if (old.sa_handler == SIG_DFL) OK(sigaction(SIGPIPE, &act, NULL));
    expect_own_runs(SIGPIPE);

    /* Ignoring a signal the library handled: raising it then does nothing. */
    act.sa_handler = SIG_IGN;
    OK(sigaction(SIGUSR2, &act, &old));
    if (old.sa_handler != SIG_DFL) fail("SIGUSR2's old disposition is %p, not the default action", (void *)old.sa_handler);
    raise(SIGUSR2);
    return 0;
}
