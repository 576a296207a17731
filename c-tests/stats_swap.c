/* Locks a mutex (so that there is a statistics report), then, before exit, moves the
 * file at argv[1] aside to argv[1].old and puts a symbolic link to argv[2] in its place:
 * what a user could do to a setuid program between its start and its exit. The report
 * must go to the file opened at load (now argv[1].old), never through the link. With a
 * third argument, "close", it first closes every descriptor above 2, as a daemon does:
 * then the report cannot reach that file, and must not follow the link either.
 * usage: stats_swap FILE TARGET [close] */
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int main(int argc, char **argv) {
    test_begin("stats_swap", 30);
    if (argc < 3) fail("usage: stats_swap FILE TARGET [close]");
    if (argc > 3 && strcmp(argv[3], "close") == 0)
        for (int fd = 3; fd < 1024; fd++) close(fd);
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    char old[4096];
    snprintf(old, sizeof old, "%s.old", argv[1]);
    if (rename(argv[1], old) != 0) fail("rename %s: %s", argv[1], strerror(errno));
    if (symlink(argv[2], argv[1]) != 0) fail("symlink %s: %s", argv[1], strerror(errno));
    return 0;
}
