/* Process-shared rwlocks (PTHREAD_PROCESS_SHARED, in a MAP_SHARED mapping) across
 * processes, for every kind:
 *  - sleepers in one process are woken by releases in another: a child blocks in rdlock
 *    behind the parent's write lock, and in wrlock behind the parent's read lock, and
 *    gets in once the parent lets go (a private futex would never wake it);
 *  - three processes with a reader and a writer thread each: exclusion, untorn reads and
 *    an exact count of write sections, all checked in the shared mapping. */
#include "rwlock_check.h"

#include <sys/mman.h>
#include <sys/wait.h>

#define WORDS 8
#define PROCS 3
#define ITERS 4000

struct shared {
    pthread_rwlock_t lock;
    volatile long record[WORDS];
    long write_sections;
    int readers_inside, writers_inside;
    volatile int child_acquired;
};

static struct shared *sh;

static void wait_child(pid_t pid, const char *what) {
    int status;
    if (waitpid(pid, &status, 0) != pid) fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("%s: a child failed (status %#x)", what, status);
}

static void cross_process_wake(int kind, int child_writes) {
    sh->child_acquired = 0;
    if (child_writes) OK(pthread_rwlock_rdlock(&sh->lock)); else OK(pthread_rwlock_wrlock(&sh->lock));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        test_name = "rwlock_pshared (child)";
        int rc = child_writes ? pthread_rwlock_wrlock(&sh->lock) : pthread_rwlock_rdlock(&sh->lock);
        if (rc != 0) fail("child lock returned %s", err_name(rc));
        __atomic_store_n(&sh->child_acquired, 1, __ATOMIC_SEQ_CST);
        OK(pthread_rwlock_unlock(&sh->lock));
        _exit(0);
    }
    sleep_ms(50);
    if (__atomic_load_n(&sh->child_acquired, __ATOMIC_SEQ_CST)) fail("%s: the child got in while the parent held the lock", rw_kind_names[kind]);
    OK(pthread_rwlock_unlock(&sh->lock));
    for (int i = 0; i < 50000 && !__atomic_load_n(&sh->child_acquired, __ATOMIC_SEQ_CST); i++) usleep(100);
    if (!sh->child_acquired) fail("%s: the child was not woken by the parent's release", rw_kind_names[kind]);
    wait_child(pid, rw_kind_names[kind]);
}

static void *reader(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        if (i % 3 == 0) {
            struct timespec ts = deadline_in(CLOCK_MONOTONIC, 20000000000LL);
            OK(pthread_rwlock_clockrdlock(&sh->lock, CLOCK_MONOTONIC, &ts));
        } else {
            OK(pthread_rwlock_rdlock(&sh->lock));
        }
        __atomic_add_fetch(&sh->readers_inside, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&sh->writers_inside, __ATOMIC_SEQ_CST) != 0) fail("a reader is inside with a writer");
        long first = sh->record[0];
        for (int k = 1; k < WORDS; k++)
            if (sh->record[k] != first) fail("torn record across processes");
        __atomic_sub_fetch(&sh->readers_inside, 1, __ATOMIC_SEQ_CST);
        OK(pthread_rwlock_unlock(&sh->lock));
    }
    return NULL;
}

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS / 4; i++) {
        if (i % 3 == 0) {
            struct timespec ts = deadline_in(CLOCK_REALTIME, 20000000000LL);
            OK(pthread_rwlock_timedwrlock(&sh->lock, &ts));
        } else {
            OK(pthread_rwlock_wrlock(&sh->lock));
        }
        if (__atomic_add_fetch(&sh->writers_inside, 1, __ATOMIC_SEQ_CST) != 1) fail("two writers inside");
        if (__atomic_load_n(&sh->readers_inside, __ATOMIC_SEQ_CST) != 0) fail("a writer is inside with readers");
        long next = sh->record[0] + 1;
        for (int k = 0; k < WORDS; k++) {
            sh->record[k] = next;
            if (k == WORDS / 2 && (i & 31) == 0) sched_yield();
        }
        sh->write_sections++;
        __atomic_sub_fetch(&sh->writers_inside, 1, __ATOMIC_SEQ_CST);
        OK(pthread_rwlock_unlock(&sh->lock));
    }
    return NULL;
}

static void work(void) {
    pthread_t r = start_thread(reader, NULL), w = start_thread(writer, NULL);
    join_thread(r);
    join_thread(w);
}

static void across_processes(int kind) {
    sh->write_sections = 0;
    for (int k = 0; k < WORDS; k++) sh->record[k] = 0;
    fflush(NULL);
    pid_t pids[PROCS - 1];
    for (int p = 0; p < PROCS - 1; p++) {
        pids[p] = fork();
        if (pids[p] < 0) fail("fork: %s", strerror(errno));
        if (pids[p] == 0) {
            test_name = "rwlock_pshared (worker child)";
            work();
            _exit(0);
        }
    }
    work();
    for (int p = 0; p < PROCS - 1; p++) wait_child(pids[p], rw_kind_names[kind]);
    long expected = (long)PROCS * (ITERS / 4);
    if (sh->write_sections != expected || sh->record[0] != expected)
        fail("%s: %ld write sections, record %ld, expected %ld", rw_kind_names[kind], sh->write_sections, sh->record[0], expected);
}

int main(void) {
    test_begin("rwlock_pshared", 60);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) fail("mmap: %s", strerror(errno));
    for (int k = 0; k < 3; k++) {
        rw_init(&sh->lock, rw_kinds[k], PTHREAD_PROCESS_SHARED);
        cross_process_wake(rw_kinds[k], 0);
        cross_process_wake(rw_kinds[k], 1);
        across_processes(rw_kinds[k]);
        OK(pthread_rwlock_destroy(&sh->lock));
    }
    return 0;
}
