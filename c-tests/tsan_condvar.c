// build-flags: -fsanitize=thread
// build-optional: needs the ThreadSanitizer runtime (Debian package libtsan2)
/* Condition-variable producer/consumer under ThreadSanitizer. GCC links the runtime,
 * which defines the condition-variable functions itself (unversioned); the program's
 * references to them are unversioned too. Its waits and its signals must reach one
 * implementation, through the runtime: a wait bound to glibc's old condition variable
 * while the signals go to the new one never wakes, and a wait that bypasses the runtime
 * shows it a double lock. */
#include "prodcons_core.h"

int main(void) { return prodcons_main("tsan_condvar", 20000, 20); }
