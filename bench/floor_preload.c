/* The floor of an uncontended pthread mutex on this machine: a preload that keeps
 * only the bookkeeping glibc and libspinmutex.so keep for a default mutex (the type
 * check, a compare-and-swap on __lock, __owner and __nusers, and the mirror on
 * unlock) and nothing else. It is NOT a usable mutex (no other types, no error
 * checks, a bare futex wait): bench/uncontended.sh preloads it into
 * bench/uncontended.c only, to show how far below glibc a fast path can go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static __thread int my_tid;

int pthread_mutex_lock(pthread_mutex_t *m) {
    if (m->__data.__kind != 0)
        return EINVAL;
    int expected = 0;
    while (!__atomic_compare_exchange_n(&m->__data.__lock, &expected, 1, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
        expected = 0;
        syscall(SYS_futex, &m->__data.__lock, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
    }
    if (!my_tid)
        my_tid = gettid();
    m->__data.__owner = my_tid;
    m->__data.__nusers++;
    return 0;
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
    if (m->__data.__kind != 0)
        return EINVAL;
    m->__data.__owner = 0;
    m->__data.__nusers--;
    int locked = 1;
    if (!__atomic_compare_exchange_n(&m->__data.__lock, &locked, 0, 0, __ATOMIC_RELEASE,
                                     __ATOMIC_RELAXED)) {
        __atomic_store_n(&m->__data.__lock, 0, __ATOMIC_RELEASE);
        syscall(SYS_futex, &m->__data.__lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    return 0;
}
