//! Releasing a mutex this library serves, with glibc's ownership checks.

use libc::c_int;

use crate::mutex::{kind, RawMutex};
use crate::{pi, thread};

/// Releases `m`: `EPERM` if a recursive or error-checking mutex is not the caller's.
pub fn unlock(m: &RawMutex) -> c_int {
    let k = m.kind();
    let tid = thread::tid();
    match k & kind::TYPE_MASK {
        kind::RECURSIVE => {
            if m.owner() != tid {
                return libc::EPERM;
            }
            let remaining = m.count() - 1;
            m.set_count(remaining);
            if remaining != 0 {
                return 0;
            }
        }
        kind::ERRORCHECK if m.owner() != tid || !m.is_locked() => return libc::EPERM,
        _ => {}
    }
    let priority_inheritance = k & kind::PRIO_INHERIT != 0;
    crate::observe::unlocking(m);
    if priority_inheritance && !pi::owned_by(m, tid) {
        // Unlocked by a thread the word does not name, or unlocked while free: glibc's
        // rules for a normal mutex where the mutex was converted (pi.rs says how).
        return pi::release_not_owned(m);
    }
    m.clear_owner();
    if priority_inheritance {
        pi::release(m, tid);
    } else {
        m.release();
    }
    0
}
