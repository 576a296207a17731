//! Releasing a mutex this library serves, with glibc's ownership checks.

use libc::c_int;

use crate::mutex::{kind, RawMutex};
use crate::thread;

/// Releases `m`: `EPERM` if a recursive or error-checking mutex is not the caller's.
#[inline]
pub fn unlock(m: &RawMutex) -> c_int {
    match m.kind() & kind::TYPE_MASK {
        kind::RECURSIVE => {
            if m.owner() != thread::tid() {
                return libc::EPERM;
            }
            let remaining = m.count() - 1;
            m.set_count(remaining);
            if remaining != 0 {
                return 0;
            }
        }
        kind::ERRORCHECK if m.owner() != thread::tid() || !m.is_locked() => return libc::EPERM,
        _ => {}
    }
    crate::observe::unlocking(m);
    m.clear_owner();
    m.release();
    0
}
