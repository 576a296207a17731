/* glibc's macros for silencing one compiler warning around a piece of code. */
#ifndef SPINMUTEX_GLIBC_SHIM_LIBC_DIAG_H
#define SPINMUTEX_GLIBC_SHIM_LIBC_DIAG_H

#define DIAG_PUSH_NEEDS_COMMENT _Pragma("GCC diagnostic push")
#define DIAG_POP_NEEDS_COMMENT _Pragma("GCC diagnostic pop")
#define DIAG_STR_(x) #x
#define DIAG_PRAGMA_(x) _Pragma(DIAG_STR_(x))
#define DIAG_IGNORE_NEEDS_COMMENT(version, option) DIAG_PRAGMA_(GCC diagnostic ignored option)
#define DIAG_PUSH_NEEDS_COMMENT_CLANG
#define DIAG_POP_NEEDS_COMMENT_CLANG
#define DIAG_IGNORE_NEEDS_COMMENT_CLANG(version, option)
#define DIAG_IGNORE_Os_NEEDS_COMMENT(version, option)

#endif
