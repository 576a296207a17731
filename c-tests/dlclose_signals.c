/* Loads the library given as its argument with dlopen, closes it, then takes the
 * signals the library handles with statistics on: SIGUSR2 (a report on demand) and
 * SIGTERM (a report, then the end the signal brings). The library must still be there
 * to handle them (it is never unloaded): the program ends by SIGTERM, not by a crash in
 * unmapped code.
 *
 * usage: dlclose_signals LIBRARY */
#include "check.h"
#include <dlfcn.h>

int main(int argc, char **argv) {
    test_begin("dlclose_signals", 10);
    if (argc < 2) fail("usage: dlclose_signals LIBRARY");
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) fail("dlopen %s: %s", argv[1], dlerror());
    if (dlclose(lib) != 0) fail("dlclose: %s", dlerror());
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    OK(pthread_mutex_lock(&m));
    OK(pthread_mutex_unlock(&m));
    raise(SIGUSR2);
    raise(SIGTERM);
    sleep_ms(500);
    return 0;
}
