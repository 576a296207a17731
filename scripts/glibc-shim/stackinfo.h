/* Stack facts of x86-64 (the only target the library serves). */
#ifndef SPINMUTEX_GLIBC_SHIM_STACKINFO_H
#define SPINMUTEX_GLIBC_SHIM_STACKINFO_H

#include <elf.h>

#define _STACK_GROWS_DOWN 1
#define DEFAULT_STACK_PERMS (PF_R | PF_W)

#endif
