//! Acquiring a mutex this library serves: `lock`, the timed variants and `trylock`,
//! with glibc's per-type rules and error codes, in the protocol the mutex speaks.

use libc::{c_int, pthread_mutex_t};

use crate::config;
use crate::mutex::{kind, Acquired, RawMutex};
use crate::pi::{self, Protocol};
use crate::sys::Deadline;
use crate::{observe, thread};

/// The mutex, if this library serves it: the strategy serves mutexes, and the mutex is
/// not robust, priority-protect or destroyed (nor priority-inherit, unless the
/// strategy's own protocol is that one). Otherwise the caller forwards to glibc.
#[inline]
pub fn served<'a>(m: *mut pthread_mutex_t) -> Option<&'a RawMutex> {
    if config::serves_nothing() {
        return None; // one test of one word: the forwarding strategy skips the row
    }
    // SAFETY: the caller passes the application's mutex pointer, which POSIX requires to
    // point to a mutex.
    let mutex = unsafe { RawMutex::from_ptr(m) };
    let row = config::row();
    let ours = if row.priority_inheritance {
        kind::SERVED | kind::PRIO_INHERIT | kind::CONVERTED
    } else {
        kind::SERVED
    };
    (row.serves && mutex.kind() & !ours == 0).then_some(mutex)
}

/// The protocol `m` speaks now: glibc's word, or under a strategy that converts
/// mutexes the priority-inheritance word (converting `m` if it is free). `None`: `m` is
/// locked with glibc's word although the strategy converts mutexes (see pi.rs).
#[inline]
fn protocol(m: &RawMutex) -> Option<Protocol> {
    if config::row().priority_inheritance {
        pi::protocol(m)
    } else {
        Some(Protocol::Word)
    }
}

/// Blocks until the caller owns `m`, or until `deadline`. (Dispatches at once, so that
/// no frame of its own stands under the waiting code: see tests/host.rs on stack use.)
#[inline(always)]
pub fn lock(m: &RawMutex, deadline: Option<&Deadline>) -> c_int {
    if config::row().priority_inheritance {
        lock_converting(m, deadline)
    } else {
        lock_word(m, deadline)
    }
}

/// `lock` of a mutex that speaks glibc's word.
#[inline(never)]
fn lock_word(m: &RawMutex, deadline: Option<&Deadline>) -> c_int {
    let tid = thread::tid();
    let ty = m.kind() & kind::TYPE_MASK;
    if (ty == kind::RECURSIVE || ty == kind::ERRORCHECK) && m.owner() == tid {
        return relock(m, ty);
    }
    let taken = if m.try_acquire() { Ok(()) } else { wait(m, deadline, RawMutex::acquire_contended) };
    finish(m, tid, ty, taken)
}

/// `lock` under a strategy that converts mutexes to the priority-inheritance protocol
/// (see pi.rs).
#[inline(never)]
fn lock_converting(m: &RawMutex, deadline: Option<&Deadline>) -> c_int {
    let tid = thread::tid();
    let ty = m.kind() & kind::TYPE_MASK;
    if (ty == kind::RECURSIVE || ty == kind::ERRORCHECK) && m.owner() == tid {
        return relock(m, ty);
    }
    let taken = loop {
        break match pi::protocol(m) {
            Some(Protocol::Word) if m.try_acquire() => Ok(()),
            Some(Protocol::Word) => wait(m, deadline, RawMutex::acquire_contended),
            Some(Protocol::PriorityInheritance) if pi::try_acquire(m, tid) => Ok(()),
            // glibc leaves a priority-inheritance mutex's deadline to the kernel, which
            // refuses a negative time (a normal mutex times out on one).
            Some(Protocol::PriorityInheritance)
                if deadline.is_some_and(|d| d.at.tv_sec < 0) && pi::programs_own(m) =>
            {
                Err(libc::EINVAL)
            }
            Some(Protocol::PriorityInheritance) => wait(m, deadline, |m, d| pi::acquire_contended(m, tid, d)),
            None => match deadline
                .map_or(Ok(()), Deadline::check)
                .and_then(|()| pi::wait_unconverted(m, deadline))
            {
                Ok(()) => continue,
                Err(e) => Err(e),
            },
        };
    };
    finish(m, tid, ty, taken)
}

/// The end of a lock: ownership recorded, or the error.
#[inline(always)]
fn finish(m: &RawMutex, tid: i32, ty: i32, taken: Result<(), c_int>) -> c_int {
    match taken {
        Ok(()) => {
            take_ownership(m, tid, ty);
            0
        }
        Err(e) => e,
    }
}

/// The slow path: the lock was busy. Inlined into its two callers: one frame fewer
/// under the trace events it emits (see tests/host.rs on stack use).
#[inline(always)]
fn wait(
    m: &RawMutex,
    deadline: Option<&Deadline>,
    acquire: impl FnOnce(&RawMutex, Option<&Deadline>) -> Result<Acquired, c_int>,
) -> Result<(), c_int> {
    if let Some(d) = deadline {
        d.check()?;
    }
    let started = if observe::enabled() { crate::sys::now_ns() } else { 0 };
    let how = acquire(m, deadline)?;
    observe::acquired(m, how, started);
    Ok(())
}

/// One attempt: `EBUSY` if another thread holds `m`.
pub fn trylock(m: &RawMutex) -> c_int {
    let tid = thread::tid();
    let ty = m.kind() & kind::TYPE_MASK;
    if ty == kind::RECURSIVE && m.owner() == tid {
        return relock(m, ty);
    }
    // glibc's trylock refuses an error-checking priority-inheritance mutex's owner with
    // `EDEADLK` (an error-checking mutex of the word protocol answers `EBUSY`).
    if ty == kind::ERRORCHECK && m.owner() == tid && pi::programs_own(m) {
        return libc::EDEADLK;
    }
    let taken = match protocol(m) {
        Some(Protocol::Word) => m.try_acquire(),
        Some(Protocol::PriorityInheritance) => pi::try_lock(m, tid),
        None => false,
    };
    if !taken {
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
    if crate::auto::measuring() {
        crate::auto::count(m);
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
