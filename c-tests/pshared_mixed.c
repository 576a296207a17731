/* A process-shared mutex used at the same time by this process (under the preload, if
 * any) and by a process that does not preload anything: the same mutex, glibc alone in
 * the other process. Neither may lose an update, fail a call or hang.
 *
 * usage: pshared_mixed             (the preloaded side; starts the other itself)
 *        pshared_mixed child FD    (the other side: the shared page is file FD) */
#include "check.h"

#include <sys/mman.h>
#include <sys/wait.h>

enum { ROUNDS = 20000 };

struct page {
    pthread_mutex_t m;
    long counter;
    int ready;
};

static void hammer(struct page *p) {
    for (int i = 0; i < ROUNDS; i++) {
        OK(pthread_mutex_lock(&p->m));
        p->counter++;
        OK(pthread_mutex_unlock(&p->m));
    }
}

static struct page *map_page(int fd) {
    void *at = mmap(NULL, sizeof(struct page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (at == MAP_FAILED) fail("mmap: %s", strerror(errno));
    return (struct page *)at;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "child") == 0) {
        test_begin("pshared_mixed (unpreloaded side)", 30);
        struct page *p = map_page(atoi(argv[2]));
        __atomic_store_n(&p->ready, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&p->ready, __ATOMIC_SEQ_CST) != 2) sched_yield();
        hammer(p);
        return 0;
    }
    test_begin("pshared_mixed", 30);
    int fd = memfd_create("pshared_mixed", 0);
    if (fd < 0 || ftruncate(fd, sizeof(struct page)) != 0) fail("memfd: %s", strerror(errno));
    struct page *p = map_page(fd);
    for (int run = 0; run < 5; run++) {
        /* What pthread_mutex_init with PTHREAD_PROCESS_SHARED leaves, written directly,
         * so that the library first sees the mutex at its first lock, as for a mutex
         * another process made: a fresh one each run. */
        memset(&p->m, 0, sizeof p->m);
        p->m.__data.__kind = 128;
        p->counter = 0;
        p->ready = 0;
        pid_t pid = fork();
        if (pid < 0) fail("fork: %s", strerror(errno));
        if (pid == 0) {
            char fdname[16];
            snprintf(fdname, sizeof fdname, "%d", fd);
            unsetenv("LD_PRELOAD");
            execl("/proc/self/exe", argv[0], "child", fdname, (char *)NULL);
            fail("exec: %s", strerror(errno));
        }
        while (__atomic_load_n(&p->ready, __ATOMIC_SEQ_CST) != 1) sched_yield();
        __atomic_store_n(&p->ready, 2, __ATOMIC_SEQ_CST);
        hammer(p);
        int status;
        if (waitpid(pid, &status, 0) != pid) fail("waitpid: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the unpreloaded side failed (status %#x)", status);
        if (p->counter != 2L * ROUNDS) fail("run %d: counter %ld, expected %ld", run, p->counter, 2L * ROUNDS);
        OK(pthread_mutex_trylock(&p->m));
        OK(pthread_mutex_unlock(&p->m));
    }
    return 0;
}
