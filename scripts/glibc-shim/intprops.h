/* The integer-property macros glibc's test support uses, on the compiler's overflow
 * built-ins. */
#ifndef SPINMUTEX_GLIBC_SHIM_INTPROPS_H
#define SPINMUTEX_GLIBC_SHIM_INTPROPS_H

#include <limits.h>

#define TYPE_SIGNED(t) (!((t)0 < (t)-1))
#define TYPE_WIDTH(t) (sizeof(t) * CHAR_BIT)
#define TYPE_MAXIMUM(t) ((t)(!TYPE_SIGNED(t) ? (t)-1 : ((((t)1 << (TYPE_WIDTH(t) - 2)) - 1) * 2 + 1)))
#define TYPE_MINIMUM(t) ((t)~TYPE_MAXIMUM(t))
/* Characters enough for any value of integer type t in decimal, sign included (log10(2)
 * is below 146/485), without the terminating null. */
#define INT_STRLEN_BOUND(t) ((TYPE_WIDTH(t) - TYPE_SIGNED(t)) * 146 / 485 + 1 + TYPE_SIGNED(t))
#define INT_BUFSIZE_BOUND(t) (INT_STRLEN_BOUND(t) + 1)
#define INT_ADD_WRAPV(a, b, r) __builtin_add_overflow(a, b, r)
#define INT_SUBTRACT_WRAPV(a, b, r) __builtin_sub_overflow(a, b, r)
#define INT_MULTIPLY_WRAPV(a, b, r) __builtin_mul_overflow(a, b, r)

#endif
