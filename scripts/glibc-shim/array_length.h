/* The element count of an array object. */
#ifndef SPINMUTEX_GLIBC_SHIM_ARRAY_LENGTH_H
#define SPINMUTEX_GLIBC_SHIM_ARRAY_LENGTH_H

#define array_length(var) (sizeof(var) / sizeof((var)[0]))
#define array_end(var) (&(var)[array_length(var)])

#endif
