/* allocate_once: the object *place points to, allocated by the first caller; a caller
 * that loses the race frees its own copy and returns the winner's. */
#ifndef SPINMUTEX_GLIBC_SHIM_ALLOCATE_ONCE_H
#define SPINMUTEX_GLIBC_SHIM_ALLOCATE_ONCE_H

#include <stddef.h>

static inline void *allocate_once(void **place, void *(*allocate)(void *), void (*deallocate)(void *, void *),
                                  void *closure) {
    void *current = __atomic_load_n(place, __ATOMIC_ACQUIRE);
    if (current != NULL)
        return current;
    void *fresh = allocate(closure);
    if (fresh == NULL)
        return NULL;
    void *expected = NULL;
    if (__atomic_compare_exchange_n(place, &expected, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return fresh;
    deallocate(fresh, closure);
    return expected;
}

#endif
