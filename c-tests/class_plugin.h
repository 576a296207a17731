/* A plugin that makes, locks and destroys one mutex (not a test itself: included by
 * class_plugin_a.c and class_plugin_b.c, which differ only in their name, so that both
 * have the same code at the same offsets). */
#include <pthread.h>
#include <stdlib.h>

const char plugin_name[] = PLUGIN_NAME;

int plugin_run(void) {
    pthread_mutex_t *m = malloc(sizeof *m);
    if (!m || pthread_mutex_init(m, NULL) || pthread_mutex_lock(m) || pthread_mutex_unlock(m) ||
        pthread_mutex_destroy(m))
        return 1;
    free(m);
    return 0;
}
