/* The process exits while other threads are still locking: the main thread returns
 * from main (atexit handlers, destructors, the preloaded library's own destructors and
 * report, stdio flush) while three threads keep taking two mutexes and waiting on and
 * signalling a condvar. Nothing may crash, hang or change the exit status. Each trial
 * is a forked child (single-threaded at first, then threaded); the parent checks that
 * every child exits 0 and printed its line.
 * usage: exit_while_locking [trials] */
#include "check.h"

#include <sys/wait.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t a = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile long counter;

static void *hammer(void *arg) {
    long id = (long)arg;
    for (long i = 0;; i++) {
        OK(pthread_mutex_lock(&m));
        counter++;
        if (id == 0 && (i & 15) == 0) {
            struct timespec ts = deadline_in(CLOCK_REALTIME, 200000);
            int rc = pthread_cond_timedwait(&cv, &m, &ts);
            if (rc != 0 && rc != ETIMEDOUT) fail("cond_timedwait returned %s", err_name(rc));
        } else if ((i & 7) == 0) {
            OK(pthread_cond_signal(&cv));
        }
        OK(pthread_mutex_unlock(&m));
        OK(pthread_mutex_lock(&a));
        counter++;
        OK(pthread_mutex_unlock(&a));
    }
    return NULL;
}

static void at_exit(void) {
    /* Contend with the hammers from an exit handler too. */
    for (int i = 0; i < 100; i++) {
        OK(pthread_mutex_lock(&m));
        counter++;
        OK(pthread_mutex_unlock(&m));
    }
}

static int child(void) {
    test_name = "exit_while_locking (child)";
    alarm(20);
    if (atexit(at_exit) != 0) fail("atexit");
    for (long i = 0; i < 3; i++) {
        pthread_t t = start_thread(hammer, (void *)i);
        pthread_detach(t);
    }
    while (__atomic_load_n(&counter, __ATOMIC_RELAXED) < 2000) sched_yield();
    printf("child done\n"); /* flushed by exit, while the hammers run */
    return 0; /* exit() with the threads still locking */
}

int main(int argc, char **argv) {
    test_begin("exit_while_locking", 30);
    int trials = argc > 1 ? atoi(argv[1]) : 50;
    for (int i = 0; i < trials; i++) {
        int fds[2];
        if (pipe(fds) != 0) fail("pipe: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0) fail("fork: %s", strerror(errno));
        if (pid == 0) {
            close(fds[0]);
            if (dup2(fds[1], 1) < 0) _exit(9);
            close(fds[1]);
            exit(child());
        }
        close(fds[1]);
        char buf[64] = {0};
        size_t got = 0;
        ssize_t n;
        while (got < sizeof buf - 1 && (n = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)n;
        close(fds[0]);
        int status;
        if (waitpid(pid, &status, 0) != pid) fail("waitpid: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (WIFSIGNALED(status)) fail("trial %d: child killed by signal %d (%s)", i, WTERMSIG(status), strsignal(WTERMSIG(status)));
            fail("trial %d: child exited with status %d", i, WEXITSTATUS(status));
        }
        if (strcmp(buf, "child done\n") != 0) fail("trial %d: child printed \"%s\"", i, buf);
    }
    return 0;
}
