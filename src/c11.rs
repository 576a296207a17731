//! C11 `mtx_*`: glibc's `mtx_t` is a `pthread_mutex_t`, and its functions are thin
//! wrappers that call glibc-internal mutex code directly, so they are taken over too.

use libc::{c_int, pthread_mutex_t, timespec};

use crate::exports;

pub const THRD_SUCCESS: c_int = 0;
pub const THRD_BUSY: c_int = 1;
pub const THRD_ERROR: c_int = 2;
pub const THRD_NOMEM: c_int = 3;
pub const THRD_TIMEDOUT: c_int = 4;

/// glibc's mapping from errno values to `thrd_*` results.
fn thrd(errno: c_int) -> c_int {
    match errno {
        0 => THRD_SUCCESS,
        libc::EBUSY => THRD_BUSY,
        libc::ETIMEDOUT => THRD_TIMEDOUT,
        libc::ENOMEM => THRD_NOMEM,
        _ => THRD_ERROR,
    }
}

#[no_mangle]
pub unsafe extern "C" fn mtx_init(m: *mut pthread_mutex_t, kind: c_int) -> c_int {
    // SAFETY: the caller's arguments go to glibc unchanged.
    let r = unsafe { crate::real::mtx_init(m, kind) };
    if r == THRD_SUCCESS {
        exports::made(m, 0);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn mtx_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: an mtx_t is a pthread_mutex_t.
    thrd(unsafe { exports::pthread_mutex_lock(m) })
}

#[no_mangle]
pub unsafe extern "C" fn mtx_trylock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: an mtx_t is a pthread_mutex_t.
    thrd(unsafe { exports::pthread_mutex_trylock(m) })
}

#[no_mangle]
pub unsafe extern "C" fn mtx_timedlock(m: *mut pthread_mutex_t, abstime: *const timespec) -> c_int {
    // SAFETY: an mtx_t is a pthread_mutex_t; C11 deadlines are on CLOCK_REALTIME.
    thrd(unsafe { exports::pthread_mutex_timedlock(m, abstime) })
}

#[no_mangle]
pub unsafe extern "C" fn mtx_unlock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: an mtx_t is a pthread_mutex_t.
    thrd(unsafe { exports::pthread_mutex_unlock(m) })
}

#[no_mangle]
pub unsafe extern "C" fn mtx_destroy(m: *mut pthread_mutex_t) {
    // SAFETY: an mtx_t is a pthread_mutex_t.
    unsafe { exports::pthread_mutex_destroy(m) };
}
