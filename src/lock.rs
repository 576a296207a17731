//! Acquiring a mutex this library serves: `lock`, the timed variants and `trylock`,
//! with glibc's per-type rules and error codes.

use libc::{c_int, pthread_mutex_t};

use crate::config::{self, Strategy};
use crate::mutex::{kind, RawMutex};
use crate::sys::Deadline;
use crate::{observe, thread};

/// The mutex, if this library serves it: the strategy is not `glibc` and the mutex is
/// not robust, priority-inherit, priority-protect or destroyed. Otherwise the caller
/// forwards to glibc.
#[inline]
pub fn served<'a>(m: *mut pthread_mutex_t) -> Option<&'a RawMutex> {
    // SAFETY: the caller passes the application's mutex pointer, which POSIX requires to
    // point to a mutex.
    let mutex = unsafe { RawMutex::from_ptr(m) };
    (mutex.kind() & !kind::SERVED == 0 && config::strategy() != Strategy::Glibc).then_some(mutex)
}

/// Blocks until the caller owns `m`, or until `deadline`.
#[inline]
pub fn lock(m: &RawMutex, deadline: Option<&Deadline>) -> c_int {
    let tid = thread::tid();
    let ty = m.kind() & kind::TYPE_MASK;
    if (ty == kind::RECURSIVE || ty == kind::ERRORCHECK) && m.owner() == tid {
        return relock(m, ty);
    }
    if !m.try_acquire() {
        if let Err(e) = wait(m, deadline) {
            return e;
        }
    }
    take_ownership(m, tid, ty);
    0
}

/// The slow path: the lock was busy.
#[cold]
fn wait(m: &RawMutex, deadline: Option<&Deadline>) -> Result<(), c_int> {
    if let Some(d) = deadline {
        d.check()?;
    }
    let started = if observe::enabled() { crate::sys::now_ns() } else { 0 };
    let how = m.acquire_contended(deadline)?;
    observe::acquired(m, how, started);
    Ok(())
}

/// One attempt: `EBUSY` if another thread holds `m`.
#[inline]
pub fn trylock(m: &RawMutex) -> c_int {
    let tid = thread::tid();
    let ty = m.kind() & kind::TYPE_MASK;
    if ty == kind::RECURSIVE && m.owner() == tid {
        return relock(m, ty);
    }
    if !m.try_acquire() {
        return libc::EBUSY;
    }
    take_ownership(m, tid, ty);
    0
}

#[inline]
fn take_ownership(m: &RawMutex, tid: i32, ty: i32) {
    m.set_owner(tid);
    if ty == kind::RECURSIVE {
        m.set_count(1);
    }
    observe::locked(m, tid);
}

/// The owner locks again: recursive mutexes count, error-checking ones refuse.
#[cold]
fn relock(m: &RawMutex, ty: i32) -> c_int {
    if ty == kind::ERRORCHECK {
        return libc::EDEADLK;
    }
    match m.count().checked_add(1) {
        Some(n) => {
            m.set_count(n);
            0
        }
        None => libc::EAGAIN,
    }
}
