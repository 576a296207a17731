//! Condition-variable waits, observed and forwarded to glibc.
//!
//! glibc's `pthread_cond_*wait` and `cnd_*wait` release and retake the caller's mutex
//! inside glibc, where this library does not see it (and need not: the mutex's bytes
//! speak glibc's protocol). But the time a thread spends waiting on a condition variable
//! is not time it holds the mutex, so the library puts wrappers in front of the waits:
//! with statistics on they tell the statistics that the hold ends when the wait starts
//! and that the caller owns the mutex again when it returns; either way they pass every
//! argument and the result through to glibc's own function. One thing they may change
//! first: under `kernel`, in a forked child, a mutex the caller held when it forked still
//! names the caller's id in the parent, which glibc's unlock inside the wait would refuse;
//! the word takes the caller's id in the child (pi.rs).
//!
//! The wrappers themselves are C (src/cond.c): a thread cancelled in the wait is
//! unwound through them, which Rust frames built with panic=abort must never be. This
//! module gives them the two hooks and glibc's functions.
//!
//! Symbol versions: `pthread_cond_wait` and `pthread_cond_timedwait` have two ABIs in
//! glibc, GLIBC_2.3.2 (the current condition variable) and GLIBC_2.2.5 (the old one,
//! whose `pthread_cond_t` holds a pointer); each of the two wrappers carries the version
//! of the glibc function it forwards to, so a binary linked against either keeps its
//! ABI. The others have one ABI under both of their versions and one wrapper serves
//! both. A reference that names no version binds, as glibc's own would, to the symbol
//! of the first version node, GLIBC_2.2.5 (src/versions.map). Each wrapper forwards to
//! what the caller would have reached without this library: glibc's function of its
//! version, or a definition without versions that comes first (ThreadSanitizer's
//! runtime, which must see every wait). A library with version nodes still lets its unversioned definitions (all the
//! mutex functions) satisfy references to any version: glibc's loader accepts a
//! definition of the base version for any requested version.

use core::ffi::{c_int, c_void};
use libc::pthread_mutex_t;

use crate::mutex::RawMutex;
use crate::{observe, real};

/// The glibc functions the wrappers forward to, in the order src/cond.c numbers them.
#[repr(C)]
enum GlibcCond {
    Wait,
    TimedWait,
    OldWait,
    OldTimedWait,
    ClockWait,
    CndWait,
    CndTimedWait,
}

/// glibc's function number `which` (see `GlibcCond`), or null if glibc lacks it. (Or a
/// tool's definition that comes first, such as ThreadSanitizer's: see `real::Real`.)
#[no_mangle]
pub extern "C" fn spinmutex_glibc_cond(which: c_int) -> *mut c_void {
    let function = match which {
        w if w == GlibcCond::Wait as c_int => &real::COND_WAIT,
        w if w == GlibcCond::TimedWait as c_int => &real::COND_TIMEDWAIT,
        w if w == GlibcCond::OldWait as c_int => &real::OLD_COND_WAIT,
        w if w == GlibcCond::OldTimedWait as c_int => &real::OLD_COND_TIMEDWAIT,
        w if w == GlibcCond::ClockWait as c_int => &real::COND_CLOCKWAIT,
        w if w == GlibcCond::CndWait as c_int => &real::CND_WAIT,
        w if w == GlibcCond::CndTimedWait as c_int => &real::CND_TIMEDWAIT,
        _ => return core::ptr::null_mut(),
    };
    function.get()
}

/// The owner of `m` starts waiting on a condition variable.
#[no_mangle]
pub extern "C" fn spinmutex_cond_wait_starts(m: *mut pthread_mutex_t) {
    // SAFETY: the caller's mutex, which it owns; read through atomics.
    crate::pi::adopt_hold_across_fork(unsafe { RawMutex::from_ptr(m) });
    observe::cond_wait_starts(m);
}

/// The wait is over: the caller owns `m` again.
#[no_mangle]
pub extern "C" fn spinmutex_cond_wait_ended(m: *mut pthread_mutex_t) {
    observe::cond_wait_ended(m);
}
