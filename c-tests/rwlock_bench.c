/* bench/rwlock.c's reader-writer workload as a program of its own, for measuring the
 * library against glibc by hand and for a short run in the tests (its exit status says
 * whether the data stayed consistent). See bench/rwlock.c for the arguments. */
#include "../bench/rwlock.c"

int main(int argc, char **argv) { return spinmutex_rwlock_main(argc, argv); }
