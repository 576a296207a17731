/* The library's file descriptors never collide with the program's.
 *
 *   daemon        closes every descriptor above 2, as daemons do, and opens its own
 *                 data file, which may get the number a trace file had; then contends
 *                 (trace events, statistics), forks a child that contends too and
 *                 writes to the same data descriptor, and checks that the data file
 *                 holds exactly what the two processes wrote: no trace line landed in
 *                 it, and the child's copy of the descriptor was not closed.
 *   close-stderr  contends, then closes standard error before exiting (xz and GNU sort
 *                 do): the caller checks that the exit report still reached the
 *                 standard error the program started with.
 *   close-all     closes every descriptor, 0 to 2 included, then contends and exits:
 *                 nothing may crash or hang.
 *   no-stderr     runs itself again with standard error closed (`2>&-`): that copy
 *                 opens its data file, which gets descriptor 2, writes a line and
 *                 contends; the data file must then hold that line alone, with no
 *                 trace line or exit report in it.
 *   fork-quiet    contends, then forks children that never lock (one exits at once,
 *                 one runs /bin/true): the caller checks that no trace file was made
 *                 for them.
 *   fsize         limits the size of files it writes to 4000 bytes (ignoring SIGXFSZ),
 *                 as a full disk would, then contends long enough to fill a trace file:
 *                 the caller checks that the trace holds whole lines only.
 *
 * usage: fd_hygiene MODE [DATA_FILE] */
#include "check.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

/* A few contended acquisitions, so that the slow path (and its trace events) runs. */
static void contend(void) {
    for (int i = 0; i < 5; i++) {
        struct holder h;
        holder_start(&h, &m, 2);
        OK(pthread_mutex_lock(&m));
        OK(pthread_mutex_unlock(&m));
        holder_release(&h);
    }
}

static void close_from(int lowest) {
    struct rlimit rl;
    int limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
    for (int fd = lowest; fd < limit; fd++) close(fd);
}

static void write_all(int fd, const char *text) {
    size_t n = strlen(text);
    if (write(fd, text, n) != (ssize_t)n) fail("write to the data file (fd %d): %s", fd, strerror(errno));
}

/* What the data file at `path` holds (up to `size` - 1 bytes), as a string. */
static void read_back(const char *path, char *got, size_t size) {
    int in = open(path, O_RDONLY);
    if (in < 0) fail("open %s: %s", path, strerror(errno));
    ssize_t n = read(in, got, size - 1);
    close(in);
    got[n < 0 ? 0 : n] = 0;
}

static void daemon_mode(const char *path) {
    close_from(3);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (fd < 0) fail("open %s: %s", path, strerror(errno));
    write_all(fd, "parent before\n");
    contend();
    write_all(fd, "parent after\n");
    pid_t child = fork();
    if (child < 0) fail("fork: %s", strerror(errno));
    if (child == 0) {
        contend();
        write_all(fd, "child\n");
        _exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child) fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the child failed (status %#x)", status);
    contend();
    write_all(fd, "parent last\n");
    close(fd);

    char got[4096];
    read_back(path, got, sizeof got);
    const char *expected = "parent before\nparent after\nchild\nparent last\n";
    if (strcmp(got, expected) != 0) fail("the data file holds:\n%s\nexpected:\n%s", got, expected);
}

/* The copy started without standard error: its data file becomes descriptor 2. */
static void without_stderr(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (fd != 2) _exit(3); /* fail() would write into the data file */
    write_all(fd, "data\n");
    contend();
}

static void no_stderr_mode(const char *self, const char *path) {
    pid_t child = fork();
    if (child < 0) fail("fork: %s", strerror(errno));
    if (child == 0) {
        close(2);
        execl(self, self, "no-stderr", path, "child", (char *)NULL);
        _exit(127);
    }
    int status;
    if (waitpid(child, &status, 0) != child) fail("waitpid: %s", strerror(errno));
    char got[4096];
    read_back(path, got, sizeof got);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the copy without stderr failed (status %#x); its data file holds:\n%s", status, got);
    if (strcmp(got, "data\n") != 0) fail("the data file holds:\n%s\nexpected only the program's line", got);
}

int main(int argc, char **argv) {
    test_begin("fd_hygiene", 30);
    if (argc < 2) fail("usage: fd_hygiene daemon FILE | no-stderr FILE | close-stderr | close-all | fork-quiet | fsize");
    if (strcmp(argv[1], "daemon") == 0) {
        if (argc < 3) fail("daemon needs a data file path");
        daemon_mode(argv[2]);
    } else if (strcmp(argv[1], "close-stderr") == 0) {
        contend();
        close(2);
    } else if (strcmp(argv[1], "fork-quiet") == 0) {
        contend();
        pid_t quiet = fork();
        if (quiet == 0) _exit(0);
        pid_t exec = fork();
        if (exec == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int status;
        waitpid(quiet, &status, 0);
        waitpid(exec, &status, 0);
        contend();
    } else if (strcmp(argv[1], "fsize") == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit limit = {4000, 4000};
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) fail("setrlimit: %s", strerror(errno));
        for (int i = 0; i < 10; i++) contend();
    } else if (strcmp(argv[1], "no-stderr") == 0) {
        if (argc < 3) fail("no-stderr needs a data file path");
        if (argc > 3) without_stderr(argv[2]);
        else no_stderr_mode("/proc/self/exe", argv[2]);
    } else if (strcmp(argv[1], "close-all") == 0) {
        close_from(0);
        contend();
        if (fork() == 0) {
            contend();
            _exit(0);
        }
        wait(NULL);
    } else {
        fail("unknown mode %s", argv[1]);
    }
    return 0;
}
