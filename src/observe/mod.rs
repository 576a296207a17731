//! Seeing the locks: decision tracing ([`trace`]) and per-lock statistics ([`table`],
//! [`report`]), both off unless the environment asks for them. Mutexes and rwlocks alike:
//! the rwlock hooks (`rw_*`) take the lock's address, the kind it is recorded with
//! (`table::rwlock_kind`) and the [`Mode`] it is taken or released in.
//!
//! The lock paths call the hooks below. With both features off a hook costs one relaxed
//! load, and the uncontended path calls only `stats_on()`. The hooks never allocate
//! (except tracing's one-time registration of each event), and a hook that runs inside
//! another hook on the same thread (an allocator that locks, say) does nothing but count
//! itself dropped.
//!
//! Statistics see a mutex made (`init`), first seen, locked, released, destroyed, and
//! the time its owner spends waiting on a condition variable, which is not hold time:
//! the condition-variable wrappers in `exports` report the wait's start as a release
//! and its end as an acquisition.

pub(crate) mod callsite;
mod output;
mod report;
mod table;
mod trace;

use core::cell::Cell;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use libc::{c_int, pthread_mutex_t};

use crate::mutex::{Acquired, How, RawMutex};
use crate::sys;

pub use table::{rwlock_kind, Lock, Mode};

/// Why a spinner stopped spinning and went to sleep.
#[derive(Clone, Copy, Debug)]
pub enum GiveUp {
    /// Spun the whole budget without the lock coming free.
    Budget,
    /// Enough threads already spin on this mutex.
    TooManySpinners,
    /// A sleeper is about to be handed the lock.
    HandoffPending,
    /// Saw the lock free and lost it to another thread, repeatedly.
    LostRaces,
    /// Others sleep on the mutex and `SPINMUTEX_FAIR` is on: did not spin at all.
    Sleepers,
    /// The owner last ran on the spinner's own CPU: it is not running now.
    OwnerNotRunning,
    /// The spinner was itself preempted (its CPU changed, or time jumped).
    Preempted,
    /// The process cannot run two threads at once (affinity, CPU quota): no spin.
    NoParallelism,
}

impl GiveUp {
    fn name(self) -> &'static str {
        match self {
            GiveUp::Budget => "budget",
            GiveUp::TooManySpinners => "too_many_spinners",
            GiveUp::HandoffPending => "handoff_pending",
            GiveUp::LostRaces => "lost_races",
            GiveUp::Sleepers => "sleepers",
            GiveUp::OwnerNotRunning => "owner_not_running",
            GiveUp::Preempted => "preempted",
            GiveUp::NoParallelism => "no_parallelism",
        }
    }
}

static TRACE_ON: AtomicBool = AtomicBool::new(false);
static STATS_ON: AtomicBool = AtomicBool::new(false);
/// Events not written: the writer failed, or a hook ran inside another hook.
static DROPPED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set while this thread runs a hook.
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
}

/// Tracing or statistics is on: the slow path then measures how long it waits.
#[inline]
pub fn enabled() -> bool {
    TRACE_ON.load(Relaxed) || STATS_ON.load(Relaxed)
}

/// Statistics are on: the only check on the uncontended path.
#[inline(always)]
pub fn stats_on() -> bool {
    STATS_ON.load(Relaxed)
}

#[inline]
fn tracing() -> bool {
    TRACE_ON.load(Relaxed)
}

/// Runs `f` unless this thread is already inside a hook.
fn guarded(f: impl FnOnce()) {
    let entered = IN_HOOK.try_with(|h| !h.replace(true)).unwrap_or(false);
    if !entered {
        DROPPED.fetch_add(1, Relaxed);
        return;
    }
    f();
    let _ = IN_HOOK.try_with(|h| h.set(false));
}

/// Reads SPINMUTEX_TRACE* and SPINMUTEX_STATS*; called by the constructor.
pub fn init() {
    if crate::config::stepped_aside() {
        return;
    }
    if table::init() {
        report::init();
        crate::config::watch_every_acquisition();
        STATS_ON.store(true, Relaxed);
    }
    if trace::init() {
        if !stats_on() {
            callsite::init(); // `auto`'s policy events name classes by module and offset
        }
        TRACE_ON.store(true, Relaxed);
    }
}

/// At exit: the statistics report, and the count of dropped events if any.
pub fn at_exit() {
    if stats_on() {
        report::print(report::When::AtExit);
    }
    if tracing() {
        guarded(|| trace::finish(DROPPED.load(Relaxed)));
    }
}

pub fn after_fork_in_child() {
    table::after_fork_in_child();
    trace::after_fork_in_child();
    DROPPED.store(0, Relaxed);
}

/// `init` made a mutex at `addr`: a new instance of the caller's class.
pub fn born(addr: usize) {
    if stats_on() {
        // SAFETY: a mutex just initialised by glibc, read through atomics.
        let kind = unsafe { RawMutex::from_ptr(addr as *mut pthread_mutex_t) }.kind();
        guarded(|| table::born(addr, Lock::Mutex, kind));
    }
}

/// `destroy` of the mutex or rwlock at `addr`: its counters join its class's.
pub fn died(addr: usize) {
    if stats_on() {
        guarded(|| table::died(addr));
    }
}

/// The owner of `m` starts waiting on a condition variable, which releases `m` inside
/// glibc: the hold ends here.
pub fn cond_wait_starts(m: *mut pthread_mutex_t) {
    if stats_on() {
        // SAFETY: the caller's mutex, which it owns; read through atomics.
        count_unlocking(unsafe { RawMutex::from_ptr(m) });
    }
}

/// The condition-variable wait is over and the caller owns `m` again (as on a timeout
/// or a cancellation, glibc relocks before returning).
pub fn cond_wait_ended(m: *mut pthread_mutex_t) {
    if stats_on() {
        // SAFETY: as above.
        count_locked(unsafe { RawMutex::from_ptr(m) }, crate::thread::tid());
    }
}

/// The caller now owns `m` (any acquisition). Statistics only.
#[inline(always)]
pub fn locked(m: &RawMutex, tid: i32) {
    if stats_on() {
        count_locked(m, tid);
    }
}

/// The owner is about to release `m`. Statistics only.
#[inline(always)]
pub fn unlocking(m: &RawMutex) {
    if stats_on() {
        count_unlocking(m);
    }
}

// Kept out of line so that the uncontended path stays a leaf with no stack frame.
#[cold]
#[inline(never)]
fn count_locked(m: &RawMutex, tid: i32) {
    guarded(|| table::locked(m.addr(), m.kind(), tid, sys::now_ns()));
}

#[cold]
#[inline(never)]
fn count_unlocking(m: &RawMutex) {
    guarded(|| table::unlocking(m.addr(), sys::now_ns()));
}

/// A contended acquisition of `m` ended; `started_ns` is when it found the lock busy.
#[cold]
#[inline(never)]
pub fn acquired(m: &RawMutex, a: Acquired, started_ns: u64) {
    let wait_ns = sys::now_ns().saturating_sub(started_ns);
    if stats_on() {
        guarded(|| table::contended(m.addr(), m.kind(), a.spins, a.sleeps, a.how == How::Handoff, wait_ns));
    }
    if tracing() {
        guarded(|| trace::acquired(m.addr(), how_name(a.how), a.spins, a.sleeps, wait_ns));
    }
}

fn how_name(how: How) -> &'static str {
    match how {
        How::Spinning => "spin",
        How::Sleeping => "sleep",
        How::Handoff => "handoff",
        How::Kernel => "kernel",
    }
}

/// `auto` moved the lock class `class` (its key: an init call site or a mutex's
/// address) from one mode to another.
#[cold]
pub fn policy_changed(class: usize, from: &'static str, to: &'static str, because: &crate::auto::Because) {
    if tracing() {
        guarded(|| trace::policy(class, from, to, because));
    }
}

/// One phase of an experiment of `auto`'s lock class `class` ended.
#[cold]
pub fn experiment_phase(class: usize, phase: &crate::auto::Phase) {
    if tracing() {
        guarded(|| trace::phase(class, phase));
    }
}

pub fn gave_up_spinning(m: &RawMutex, spun: u32, budget: u32, why: GiveUp) {
    if tracing() {
        guarded(|| trace::spin_give_up(m.addr(), why.name(), spun, budget));
    }
}

pub fn sleeping(m: &RawMutex) {
    if tracing() {
        guarded(|| trace::simple(m.addr(), "sleep"));
    }
}

/// A release woke a sleeper of the mutex at `addr` (which may be gone already).
pub fn woke(addr: usize) {
    if tracing() {
        guarded(|| trace::simple(addr, "wake"));
    }
}

pub fn handoff_requested(m: &RawMutex) {
    if tracing() {
        guarded(|| trace::simple(m.addr(), "handoff_request"));
    }
}

/// The mutex at `addr` (which may be gone already) was handed to `to_tid`.
pub fn handed_off(addr: usize, to_tid: i32) {
    if tracing() {
        guarded(|| trace::handoff(addr, to_tid));
    }
}

#[cold]
#[inline(never)]
pub fn timed_out(m: &RawMutex) {
    guarded(|| {
        if stats_on() {
            table::timed_out(m.addr(), Lock::Mutex, m.kind(), Mode::Write);
        }
        if tracing() {
            trace::simple(m.addr(), "timeout");
        }
    });
}

/// An acquiring call forwarded to glibc while tracing or statistics are on. Statistics
/// see it like one of ours (contended when the lock word was busy on entry); tracing
/// notes it when it was contended or failed, so an uncontended forwarded lock stays
/// silent.
pub fn forward_acquire(m: *mut pthread_mutex_t, call: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: the caller's mutex pointer, read only through atomics.
    let raw = unsafe { RawMutex::from_ptr(m) };
    let busy = raw.is_locked();
    let started = sys::now_ns();
    let result = call();
    let wait_ns = sys::now_ns() - started;
    guarded(|| {
        if stats_on() && result == 0 {
            if busy {
                table::contended(raw.addr(), raw.kind(), 0, 0, false, wait_ns);
            }
            table::locked(raw.addr(), raw.kind(), crate::thread::tid(), sys::now_ns());
        }
        if tracing() && (busy || result != 0) {
            trace::forward(raw.addr(), result, wait_ns);
        }
    });
    result
}

/// A release forwarded to glibc while tracing or statistics are on.
pub fn forward_release(m: *mut pthread_mutex_t, call: impl FnOnce() -> c_int) -> c_int {
    if stats_on() {
        // SAFETY: the caller's mutex pointer, read only through atomics.
        count_unlocking(unsafe { RawMutex::from_ptr(m) });
    }
    call()
}

// ---------------------------------------------------------------------------------
// Reader-writer locks. The rwlock code calls these with the lock's address and its
// recorded kind, never with the lock itself: after a release only the address is left.

/// `pthread_rwlock_init` made an rwlock at `addr`: a new instance of the caller's class.
pub fn rw_born(addr: usize, kind: i32) {
    if stats_on() {
        guarded(|| table::born(addr, Lock::RwLock, kind));
    }
}

/// The caller now holds the rwlock at `addr` in `mode` (any acquisition). Statistics
/// only; one relaxed load when they are off.
#[inline(always)]
pub fn rw_locked(addr: usize, kind: i32, mode: Mode) {
    if stats_on() {
        count_rw_locked(addr, kind, mode);
    }
}

/// The caller is about to release the rwlock at `addr`, which it holds in `mode`.
#[inline(always)]
pub fn rw_unlocking(addr: usize, mode: Mode) {
    if stats_on() {
        count_rw_unlocking(addr, mode);
    }
}

#[cold]
#[inline(never)]
fn count_rw_locked(addr: usize, kind: i32, mode: Mode) {
    guarded(|| table::rw_locked(addr, kind, mode, crate::thread::tid(), sys::now_ns()));
}

#[cold]
#[inline(never)]
fn count_rw_unlocking(addr: usize, mode: Mode) {
    guarded(|| table::rw_unlocking(addr, mode, sys::now_ns()));
}

/// A contended acquisition of the rwlock at `addr` in `mode` ended; `started_ns` is when
/// it found the lock busy. Inlined into the rwlock's (cold) waiting code: one frame fewer
/// under the trace event (see tests/host.rs on stack use).
#[inline(always)]
pub fn rw_acquired(addr: usize, kind: i32, mode: Mode, a: Acquired, started_ns: u64) {
    let wait_ns = sys::now_ns().saturating_sub(started_ns);
    if stats_on() {
        count_rw_contended(addr, kind, mode, a, wait_ns);
    }
    if tracing() {
        trace_rw_acquired(addr, mode, a, wait_ns);
    }
}

#[cold]
#[inline(never)]
fn count_rw_contended(addr: usize, kind: i32, mode: Mode, a: Acquired, wait_ns: u64) {
    guarded(|| table::rw_contended(addr, kind, mode, a.spins, a.sleeps, wait_ns));
}

#[cold]
#[inline(never)]
fn trace_rw_acquired(addr: usize, mode: Mode, a: Acquired, wait_ns: u64) {
    guarded(|| trace::rw_acquired(addr, mode.name(), how_name(a.how), a.spins, a.sleeps, wait_ns));
}

#[cold]
#[inline(never)]
pub fn rw_gave_up_spinning(addr: usize, mode: Mode, spun: u32, budget: u32, why: GiveUp) {
    if tracing() {
        guarded(|| trace::rw_spin_give_up(addr, mode.name(), why.name(), spun, budget));
    }
}

/// A waiter of `mode` goes to sleep on the rwlock at `addr`.
#[inline]
pub fn rw_sleeping(addr: usize, mode: Mode) {
    if tracing() {
        rw_sleep(addr, mode);
    }
}

/// A release (or a waiter that gave up) woke `woken` sleepers of `mode` of the rwlock at
/// `addr`, which may be gone already.
#[inline]
pub fn rw_woke(addr: usize, mode: Mode, woken: i32) {
    if tracing() {
        rw_wake(addr, mode, woken);
    }
}

#[cold]
#[inline(never)]
fn rw_wake(addr: usize, mode: Mode, woken: i32) {
    guarded(|| trace::rw_wake(addr, mode.name(), woken));
}

#[cold]
#[inline(never)]
fn rw_sleep(addr: usize, mode: Mode) {
    guarded(|| trace::rw_sleep(addr, mode.name()));
}

/// A timed rwlock acquisition in `mode` gave up.
#[cold]
#[inline(never)]
pub fn rw_timed_out(addr: usize, kind: i32, mode: Mode) {
    if stats_on() {
        guarded(|| table::timed_out(addr, Lock::RwLock, kind, mode));
    }
    if tracing() {
        guarded(|| trace::rw_timeout(addr, mode.name()));
    }
}

/// An rwlock acquisition forwarded to glibc while tracing or statistics are on. `busy`:
/// glibc's bytes said on entry that the caller would have to wait. Statistics see it
/// like one of ours (contended when busy); tracing notes it when it was contended or
/// failed.
pub fn rw_forward_acquire(
    addr: usize,
    kind: i32,
    mode: Mode,
    busy: bool,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let started = sys::now_ns();
    let result = call();
    let wait_ns = sys::now_ns() - started;
    guarded(|| {
        if stats_on() && result == 0 {
            if busy {
                table::rw_contended(addr, kind, mode, 0, 0, wait_ns);
            }
            table::rw_locked(addr, kind, mode, crate::thread::tid(), sys::now_ns());
        } else if stats_on() && result == libc::ETIMEDOUT {
            table::timed_out(addr, Lock::RwLock, kind, mode);
        }
        if tracing() && (busy || result != 0) {
            trace::rw_forward(addr, mode.name(), result, wait_ns);
        }
    });
    result
}

/// Counts one event lost by the writer.
fn dropped() {
    DROPPED.fetch_add(1, Relaxed);
}
