/* Forced into every file of glibc's test support library and of its tests, in place of
 * the config.h of a glibc build tree: only what those files need when they are built
 * against the installed glibc's public headers (scripts/glibc-tests.sh). */
#ifndef SPINMUTEX_GLIBC_SHIM_CONFIG_H
#define SPINMUTEX_GLIBC_SHIM_CONFIG_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

/* The test driver's default timeout multiplier; the TIMEOUTFACTOR environment variable
 * still scales it at run time. */
#define TIMEOUTFACTOR 1

/* glibc's internal <limits.h> wrapper pulls these in for every file. */
#include <limits.h>

#endif
