/* Condition-variable waits, observed and forwarded unchanged (src/cond.rs says why and
 * how their symbol versions work).
 *
 * These few functions are C, not Rust, for one reason: a thread cancelled inside the
 * wait is unwound by glibc's forced unwinding through the wrapper's frame, and Rust
 * code built with panic=abort must never be unwound through. A C frame compiled with
 * unwind tables and holding nothing to clean up is exactly what forced unwinding
 * expects. Everything else (the statistics, finding glibc's functions) is Rust's. */
#include <errno.h>
#include <pthread.h>
#include <threads.h>
#include <time.h>

/* The Rust side (src/cond.rs). */
void spinmutex_cond_wait_starts(void *mutex);
void spinmutex_cond_wait_ended(void *mutex);
void *spinmutex_glibc_cond(int which);

/* Which glibc function: the order of `GlibcCond` in src/cond.rs. */
enum { WAIT, TIMEDWAIT, OLD_WAIT, OLD_TIMEDWAIT, CLOCKWAIT, CND_WAIT, CND_TIMEDWAIT };

typedef int wait_fn(void *cond, void *mutex);
typedef int timed_fn(void *cond, void *mutex, const struct timespec *abstime);
typedef int clock_fn(void *cond, void *mutex, clockid_t clock, const struct timespec *abstime);

static int wait_on(int which, void *cond, void *mutex, int missing) {
    wait_fn *glibc = (wait_fn *)spinmutex_glibc_cond(which);
    if (!glibc) return missing;
    spinmutex_cond_wait_starts(mutex);
    int result = glibc(cond, mutex);
    spinmutex_cond_wait_ended(mutex);
    return result;
}

static int timed_on(int which, void *cond, void *mutex, const struct timespec *abstime, int missing) {
    timed_fn *glibc = (timed_fn *)spinmutex_glibc_cond(which);
    if (!glibc) return missing;
    spinmutex_cond_wait_starts(mutex);
    int result = glibc(cond, mutex, abstime);
    spinmutex_cond_wait_ended(mutex);
    return result;
}

int spinmutex_cond_wait(void *cond, void *mutex) { return wait_on(WAIT, cond, mutex, ENOSYS); }
int spinmutex_old_cond_wait(void *cond, void *mutex) { return wait_on(OLD_WAIT, cond, mutex, ENOSYS); }
int spinmutex_cnd_wait(void *cond, void *mutex) { return wait_on(CND_WAIT, cond, mutex, thrd_error); }

int spinmutex_cond_timedwait(void *cond, void *mutex, const struct timespec *abstime) {
    return timed_on(TIMEDWAIT, cond, mutex, abstime, ENOSYS);
}

int spinmutex_old_cond_timedwait(void *cond, void *mutex, const struct timespec *abstime) {
    return timed_on(OLD_TIMEDWAIT, cond, mutex, abstime, ENOSYS);
}

int spinmutex_cnd_timedwait(void *cond, void *mutex, const struct timespec *abstime) {
    return timed_on(CND_TIMEDWAIT, cond, mutex, abstime, thrd_error);
}

int spinmutex_cond_clockwait(void *cond, void *mutex, clockid_t clock, const struct timespec *abstime) {
    clock_fn *glibc = (clock_fn *)spinmutex_glibc_cond(CLOCKWAIT);
    if (!glibc) return ENOSYS;
    spinmutex_cond_wait_starts(mutex);
    int result = glibc(cond, mutex, clock, abstime);
    spinmutex_cond_wait_ended(mutex);
    return result;
}

/* Each name under every version glibc 2.36 gives it; the nodes are in src/versions.map. */
__asm__(".symver spinmutex_cond_wait, pthread_cond_wait@@GLIBC_2.3.2");
__asm__(".symver spinmutex_old_cond_wait, pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver spinmutex_cond_timedwait, pthread_cond_timedwait@@GLIBC_2.3.2");
__asm__(".symver spinmutex_old_cond_timedwait, pthread_cond_timedwait@GLIBC_2.2.5");
__asm__(".symver spinmutex_cond_clockwait, pthread_cond_clockwait@@GLIBC_2.34");
__asm__(".symver spinmutex_cond_clockwait, pthread_cond_clockwait@GLIBC_2.30");
__asm__(".symver spinmutex_cnd_wait, cnd_wait@@GLIBC_2.34");
__asm__(".symver spinmutex_cnd_wait, cnd_wait@GLIBC_2.28");
__asm__(".symver spinmutex_cnd_timedwait, cnd_timedwait@@GLIBC_2.34");
__asm__(".symver spinmutex_cnd_timedwait, cnd_timedwait@GLIBC_2.28");
