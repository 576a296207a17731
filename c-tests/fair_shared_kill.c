/* A process-shared mutex whose waiter is killed with SIGKILL while it sleeps on it must
 * leave nothing of that waiter behind in the mutex: the other processes go on locking
 * it as before. (Under SPINMUTEX_FAIR a per-mutex count of sleepers would keep the dead
 * waiter's share for good, and the mutex would never spin again in any process.)
 * Checks that the bytes glibc leaves unused for this type are all zero after the
 * waiter's death and a few more acquisitions. */
#include "check.h"

#include <sys/mman.h>
#include <sys/wait.h>

int main(void) {
    test_begin("fair_shared_kill", 30);
    pthread_mutex_t *m = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) fail("mmap: %s", strerror(errno));
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
    OK(pthread_mutex_init(m, &a));
    OK(pthread_mutexattr_destroy(&a));

    for (int round = 0; round < 3; round++) {
        OK(pthread_mutex_lock(m));
        pid_t child = fork();
        if (child < 0) fail("fork: %s", strerror(errno));
        if (child == 0) {
            pthread_mutex_lock(m); /* sleeps until killed */
            _exit(9);
        }
        /* Let the child reach its sleep (the word turns CONTENDED), then kill it. */
        for (int i = 0; i < 2000 && __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) != 2; i++)
            usleep(500);
        usleep(20000);
        kill(child, SIGKILL);
        int status;
        if (waitpid(child, &status, 0) != child) fail("waitpid: %s", strerror(errno));
        if (!WIFSIGNALED(status)) fail("the child was not killed (status %#x)", status);
        OK(pthread_mutex_unlock(m));
    }
    for (int i = 0; i < 100; i++) {
        OK(pthread_mutex_lock(m));
        OK(pthread_mutex_unlock(m));
    }
    const unsigned char *list = (const unsigned char *)&m->__data.__list;
    for (size_t i = 0; i < sizeof m->__data.__list; i++)
        if (list[i] != 0) fail("byte %zu of __list is %#x after the waiter's death", i, list[i]);
    return 0;
}
