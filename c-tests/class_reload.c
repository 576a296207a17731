/* Two different plugins, each loaded, run (it makes and locks a mutex) and unloaded in
 * turn; the second usually lands where the first was, so their mutexes are made at the
 * same addresses. Lock classes must still be two: a class is a place in a module, not an
 * address. Prints "same address" or "moved".
 * usage: class_reload PLUGIN_A PLUGIN_B */
#include "check.h"

#include <dlfcn.h>

/* One call site for both plugins, so that the whole call stack of their mutexes' init
 * is the same addresses. */
static __attribute__((noinline)) void *run(const char *path) {
    void *plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!plugin) fail("dlopen %s: %s", path, dlerror());
    int (*plugin_run)(void) = (int (*)(void))dlsym(plugin, "plugin_run");
    if (!plugin_run) fail("dlsym plugin_run in %s: %s", path, dlerror());
    if (plugin_run() != 0) fail("plugin %s failed", path);
    if (dlclose(plugin) != 0) fail("dlclose %s: %s", path, dlerror());
    return (void *)plugin_run;
}

int main(int argc, char **argv) {
    test_begin("class_reload", 30);
    if (argc != 3) fail("usage: class_reload PLUGIN_A PLUGIN_B");
    void *at[2];
#pragma GCC unroll 1
    for (volatile int i = 0; i < 2; i++) at[i] = run(argv[i + 1]);
    printf("%s\n", at[0] == at[1] ? "same address" : "moved");
    return 0;
}
