// build-flags: -shared -fPIC
/* The plugin of deepbind_mixed.c, loaded with RTLD_DEEPBIND: its references to the
 * pthread_mutex_* and pthread_rwlock_* functions bind to glibc's, ahead of the preload.
 * It exports them under its own names, so that the program can take one lock through
 * both. */
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

int plugin_lock(pthread_mutex_t *m) { return pthread_mutex_lock(m); }
int plugin_trylock(pthread_mutex_t *m) { return pthread_mutex_trylock(m); }
int plugin_timedlock(pthread_mutex_t *m, const struct timespec *at) { return pthread_mutex_timedlock(m, at); }
int plugin_unlock(pthread_mutex_t *m) { return pthread_mutex_unlock(m); }
int plugin_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { return pthread_cond_wait(c, m); }
int plugin_rdlock(pthread_rwlock_t *l) { return pthread_rwlock_rdlock(l); }
int plugin_wrlock(pthread_rwlock_t *l) { return pthread_rwlock_wrlock(l); }
int plugin_rwunlock(pthread_rwlock_t *l) { return pthread_rwlock_unlock(l); }

/* The function the plugin's own references reach, for the program to check the binding. */
void *plugin_binding(void) { return (void *)&pthread_mutex_lock; }
