//! The `pthread_rwlock_*` symbols the preload puts in front of glibc's. Under the `glibc`
//! strategy, or with `SPINMUTEX_RWLOCKS=0`, each forwards to glibc's own function;
//! otherwise the rwlock's bytes are served by [`RawRwLock`]. `init` and `destroy` are
//! always glibc's (see `mod.rs`).
//!
//! Every entry point is one [`entry`]: a served call with statistics off takes the fast
//! path after one test of one word. Statistics count served acquisitions and releases in
//! [`in_general`]; waits, sleeps and timeouts are traced and counted inside
//! [`RawRwLock`]. With tracing or statistics on, forwarded calls go through
//! [`forward_observed`], which sees them the way forwarded mutex calls are seen.
//!
//! One unversioned definition here satisfies every version a program may have bound:
//! `pthread_rwlock_*@GLIBC_2.2.5` and `@GLIBC_2.34`, `clock*lock@GLIBC_2.30`, and the old
//! `__pthread_rwlock_*@GLIBC_2.2.5` aliases (defined at the end).

use libc::{c_int, clockid_t, pthread_rwlock_t, pthread_rwlockattr_t, timespec};

use super::RawRwLock;
use crate::config;
use crate::observe::{self, Mode};
use crate::real;
use crate::sys::{self, Deadline};

/// Every call goes to glibc's own function: the `glibc` strategy, or
/// `SPINMUTEX_RWLOCKS=0`. (Under `kernel`, rwlocks are served and sleep at once: the
/// kernel has no spinning futex for them.)
fn forwarded() -> bool {
    !config::rwlocks_served()
}

/// The application's rwlock as this library sees it.
///
/// # Safety
/// `l` must point to an initialised rwlock, as POSIX requires of the caller (a null
/// pointer crashes in glibc too).
#[inline(always)]
unsafe fn ours<'a>(l: *mut pthread_rwlock_t) -> &'a RawRwLock {
    // SAFETY: see above.
    unsafe { RawRwLock::from_ptr(l) }
}

/// One of the entry points (its arguments beside it: a clock and a deadline for the
/// timed ones).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    RdLock,
    TryRdLock,
    TimedRdLock,
    ClockRdLock,
    WrLock,
    TryWrLock,
    TimedWrLock,
    ClockWrLock,
    Unlock,
}

impl Call {
    fn mode(self) -> Mode {
        match self {
            Call::RdLock | Call::TryRdLock | Call::TimedRdLock | Call::ClockRdLock => Mode::Read,
            _ => Mode::Write,
        }
    }
}

/// Every entry point: served at once when the strategy serves rwlocks and statistics are
/// off (one test of one word), straight to glibc when it forwards and nothing observes,
/// else through [`in_general`]. (`call` is a constant in each
/// entry point, so this folds to the one method or function.)
///
/// # Safety
/// The caller's arguments, as glibc's function takes them (`clock` and `at` only for the
/// timed calls that take them).
#[inline(always)]
unsafe fn entry(l: *mut pthread_rwlock_t, call: Call, clock: clockid_t, at: *const timespec) -> c_int {
    // SAFETY (every branch): as above.
    unsafe {
        if config::rwlock_fast_path() {
            serve(ours(l), call, clock, at)
        } else if config::rwlocks_forwarded() && !observe::enabled() {
            glibc(l, call, clock, at)
        } else {
            in_general(l, call, clock, at)
        }
    }
}

/// `call` on this library's protocol. Statistics are not counted here: only
/// [`in_general`] counts, and the fast path runs with them off.
///
/// # Safety
/// As [`entry`].
#[inline(always)]
unsafe fn serve(lock: &RawRwLock, call: Call, clock: clockid_t, at: *const timespec) -> c_int {
    let clock = match call {
        Call::TimedRdLock | Call::TimedWrLock => libc::CLOCK_REALTIME,
        _ => clock,
    };
    // SAFETY (both): POSIX requires `at` to point to a timespec for the timed calls.
    let timed = || unsafe { deadline(clock, at) };
    match call {
        Call::RdLock => lock.read_lock(None),
        Call::TryRdLock => lock.try_read_lock(),
        Call::WrLock => lock.write_lock(None),
        Call::TryWrLock => lock.try_write_lock(),
        Call::Unlock => lock.unlock(),
        Call::TimedRdLock | Call::ClockRdLock => match timed() {
            Ok(d) => lock.read_lock(d.as_ref()),
            Err(e) => e,
        },
        Call::TimedWrLock | Call::ClockWrLock => match timed() {
            Ok(d) => lock.write_lock(d.as_ref()),
            Err(e) => e,
        },
    }
}

/// Everything but the two fast routes: the first call before the environment is read,
/// forwarding with tracing or statistics on, and serving with statistics on, which
/// count each acquisition after it and each release before it (afterwards the lock is
/// not ours to look at).
///
/// # Safety
/// As [`entry`].
#[cold]
#[inline(never)]
unsafe fn in_general(l: *mut pthread_rwlock_t, call: Call, clock: clockid_t, at: *const timespec) -> c_int {
    if forwarded() {
        // SAFETY: as above.
        return unsafe { forward(l, call, clock, at) };
    }
    // SAFETY: the caller's rwlock pointer.
    let lock = unsafe { ours(l) };
    if call == Call::Unlock && observe::stats_on() {
        lock.note_unlocking();
    }
    // SAFETY: as above.
    let r = unsafe { serve(lock, call, clock, at) };
    if r == 0 && call != Call::Unlock && observe::stats_on() {
        lock.note_locked(call.mode());
    }
    r
}

/// Passes a call to glibc's own function, so that statistics and tracing see it when
/// either is on (after the first call, [`entry`] forwards the unobserved ones itself).
///
/// # Safety
/// As [`entry`].
unsafe fn forward(l: *mut pthread_rwlock_t, call: Call, clock: clockid_t, at: *const timespec) -> c_int {
    if observe::enabled() {
        // SAFETY: as above.
        return unsafe { forward_observed(l, call, clock, at) };
    }
    // SAFETY: as above.
    unsafe { glibc(l, call, clock, at) }
}

/// glibc's function for `call`.
///
/// # Safety
/// As [`entry`].
#[inline(always)]
unsafe fn glibc(l: *mut pthread_rwlock_t, call: Call, clock: clockid_t, at: *const timespec) -> c_int {
    // SAFETY (every arm): the caller's arguments go to glibc unchanged.
    unsafe {
        match call {
            Call::RdLock => real::rwlock_rdlock(l),
            Call::TryRdLock => real::rwlock_tryrdlock(l),
            Call::TimedRdLock => real::rwlock_timedrdlock(l, at),
            Call::ClockRdLock => real::rwlock_clockrdlock(l, clock, at),
            Call::WrLock => real::rwlock_wrlock(l),
            Call::TryWrLock => real::rwlock_trywrlock(l),
            Call::TimedWrLock => real::rwlock_timedwrlock(l, at),
            Call::ClockWrLock => real::rwlock_clockwrlock(l, clock, at),
            Call::Unlock => real::rwlock_unlock(l),
        }
    }
}

/// [`forward`] with statistics or tracing on: a try that fails is neither contended nor
/// an acquisition; the others are contended when glibc's bytes say they would wait.
///
/// # Safety
/// As [`entry`].
#[cold]
#[inline(never)]
unsafe fn forward_observed(
    l: *mut pthread_rwlock_t,
    call: Call,
    clock: clockid_t,
    at: *const timespec,
) -> c_int {
    // SAFETY: the caller's rwlock; only read here, through atomics.
    let lock = unsafe { ours(l) };
    // SAFETY (both closures): the caller's arguments go to glibc unchanged.
    let glibc = || unsafe { glibc(l, call, clock, at) };
    if call == Call::Unlock {
        if observe::stats_on() {
            lock.note_unlocking();
        }
        return glibc();
    }
    let mode = call.mode();
    if matches!(call, Call::TryRdLock | Call::TryWrLock) {
        let r = glibc();
        if r == 0 && observe::stats_on() {
            lock.note_locked(mode);
        }
        return r;
    }
    let busy = lock.glibc_busy(mode);
    let (addr, kind) = lock.identity();
    observe::rw_forward_acquire(addr, kind, mode, busy, glibc)
}

/// The deadline of a timed call, checked as glibc checks it before anything else: an
/// unsupported clock or a `tv_nsec` outside 0..1e9 is `EINVAL` even when the lock is
/// free. A NULL timespec means no timeout (glibc 2.36 skips the check and waits).
/// A negative `tv_sec` is accepted here and times out only if the call would block.
///
/// # Safety
/// `abstime` is null or points to a readable timespec.
unsafe fn deadline(clock: clockid_t, abstime: *const timespec) -> Result<Option<Deadline>, c_int> {
    // SAFETY: the caller's timespec, read once.
    let Some(at) = (unsafe { abstime.as_ref() }) else {
        return Ok(None);
    };
    if !sys::clock_supported(clock) || !(0..1_000_000_000).contains(&at.tv_nsec) {
        return Err(libc::EINVAL);
    }
    Ok(Some(Deadline { clock, at: *at }))
}

/// Defines the lock and unlock entry points, each one [`entry`] for its [`Call`].
macro_rules! entry_points {
    ($($name:ident($($arg:ident: $ty:ty),*) => $call:ident, $clock:expr, $at:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(l: *mut pthread_rwlock_t $(, $arg: $ty)*) -> c_int {
            // SAFETY: the caller's arguments, as glibc's function takes them.
            unsafe { entry(l, Call::$call, $clock, $at) }
        }
    )*};
}

entry_points! {
    pthread_rwlock_rdlock() => RdLock, 0, core::ptr::null();
    pthread_rwlock_tryrdlock() => TryRdLock, 0, core::ptr::null();
    pthread_rwlock_timedrdlock(abstime: *const timespec) => TimedRdLock, 0, abstime;
    pthread_rwlock_clockrdlock(clock: clockid_t, abstime: *const timespec) => ClockRdLock, clock, abstime;
    pthread_rwlock_wrlock() => WrLock, 0, core::ptr::null();
    pthread_rwlock_trywrlock() => TryWrLock, 0, core::ptr::null();
    pthread_rwlock_timedwrlock(abstime: *const timespec) => TimedWrLock, 0, abstime;
    pthread_rwlock_clockwrlock(clock: clockid_t, abstime: *const timespec) => ClockWrLock, clock, abstime;
    pthread_rwlock_unlock() => Unlock, 0, core::ptr::null();
}

/// glibc's initialiser writes exactly the layout the protocol reads (all zero but the
/// kind and the shared flag), so it stays glibc's under every strategy. Statistics see a
/// new instance of the caller's class.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_init(
    l: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
) -> c_int {
    // SAFETY: the caller's arguments go to glibc unchanged.
    let r = unsafe { real::rwlock_init(l, attr) };
    if r == 0 && observe::stats_on() {
        // SAFETY: the rwlock glibc just initialised.
        let (addr, kind) = unsafe { ours(l) }.identity();
        observe::rw_born(addr, kind);
    }
    r
}

/// glibc 2.36's `destroy` does nothing and returns 0, whatever the lock's state. Its
/// counters join its class's.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_destroy(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's rwlock goes to glibc unchanged.
    let r = unsafe { real::rwlock_destroy(l) };
    if r == 0 {
        observe::died(l as usize);
    }
    r
}

// The old double-underscore names (`__pthread_rwlock_*@GLIBC_2.2.5`).
alias! {
    __pthread_rwlock_rdlock => pthread_rwlock_rdlock(l: *mut pthread_rwlock_t);
    __pthread_rwlock_tryrdlock => pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t);
    __pthread_rwlock_wrlock => pthread_rwlock_wrlock(l: *mut pthread_rwlock_t);
    __pthread_rwlock_trywrlock => pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t);
    __pthread_rwlock_unlock => pthread_rwlock_unlock(l: *mut pthread_rwlock_t);
    __pthread_rwlock_init => pthread_rwlock_init(l: *mut pthread_rwlock_t, a: *const pthread_rwlockattr_t);
    __pthread_rwlock_destroy => pthread_rwlock_destroy(l: *mut pthread_rwlock_t);
}
