// build-flags: -fsanitize=thread
// build-optional: needs the ThreadSanitizer runtime (Debian package libtsan2)
/* A correct program under ThreadSanitizer: four threads count under one mutex, and
 * the main thread reads the count after joining them. TSan must see every lock and
 * unlock (the library steps aside for it), so it reports no race. */
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *count(void *arg) {
    for (int i = 0; i < 20000; i++) {
        OK(pthread_mutex_lock(&m));
        counter++;
        OK(pthread_mutex_unlock(&m));
    }
    return arg;
}

int main(void) {
    test_begin("tsan_counter", 60);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) t[i] = start_thread(count, NULL);
    for (int i = 0; i < 4; i++) join_thread(t[i]);
    if (counter != 80000) fail("counter %ld", counter);
    return 0;
}
