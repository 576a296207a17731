// build-flags: -fsanitize=address
// build-optional: needs the AddressSanitizer runtime (Debian package libasan8)
/* A correct program built with AddressSanitizer, whose runtime refuses to run behind a
 * preloaded library and says so: the library must not get in the way of that message. */
#include "check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int main(void) {
    test_begin("asan_counter", 30);
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    return 0;
}
