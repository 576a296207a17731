//! Waiting for a busy rwlock: spinning first under the `spin` strategy (the budget and
//! back-off come from [`policy`]), then sleeping on the gate in the reader or writer
//! queue. The protocol these loops follow is described in the module header (`mod.rs`).

use core::sync::atomic::Ordering::Relaxed;
use libc::{c_int, timespec};

use super::policy;
use super::{
    gate, idle, queued_writers, RawRwLock, Wake, QUEUED_WRITER, READERS_WAITING, READER_QUEUE,
    STALE_WAITER_GRACE_NS, WRITERS_WAITING, WRITER_QUEUE, WRITE_LOCKED,
};
use crate::mutex::{Acquired, How};
use crate::observe::{self, GiveUp, Mode};
use crate::sys::{self, Deadline};

/// A reader that was refused waits until it can enter, or until `deadline`; how it got
/// in (spinning or after sleeping, and how long it spun and how often it slept).
/// Inlined into its one caller: one frame fewer under the trace events.
#[inline(always)]
pub(super) fn read(lock: &RawRwLock, deadline: Option<&Deadline>) -> Result<Acquired, c_int> {
    let mut spins = 0;
    if !deadline.is_some_and(passed) {
        let budget = policy::budget(lock.spin_estimate());
        if budget > 0 {
            match spin_read(lock, budget)? {
                Ok(used) => return Ok(Acquired { how: How::Spinning, spins: used, sleeps: 0 }),
                Err((why, used)) => {
                    gave_up(lock, Mode::Read, used, budget, why);
                    spins = used;
                }
            }
        }
    }
    let sleeps = sleep_read(lock, deadline)?;
    Ok(Acquired { how: How::Sleeping, spins, sleeps })
}

/// A writer that was refused waits until it has the lock, or until `deadline`.
/// Inlined into its one caller, as `read`.
#[inline(always)]
pub(super) fn write(lock: &RawRwLock, deadline: Option<&Deadline>) -> Result<Acquired, c_int> {
    // Under writer preference the writer queues itself before it spins: from here on no
    // new reader enters, so the readers inside drain while it spins.
    let registered = lock.prefers_writers();
    if registered {
        lock.state.fetch_add(QUEUED_WRITER, Relaxed);
    }
    let mut spins = 0;
    if !deadline.is_some_and(passed) {
        let budget = policy::budget(lock.spin_estimate());
        if budget > 0 {
            match spin_write(lock, budget, registered) {
                Ok(used) => return Ok(Acquired { how: How::Spinning, spins: used, sleeps: 0 }),
                Err((why, used)) => {
                    gave_up(lock, Mode::Write, used, budget, why);
                    spins = used;
                }
            }
        }
    }
    let sleeps = sleep_write(lock, deadline, registered)?;
    Ok(Acquired { how: How::Sleeping, spins, sleeps })
}

// Spinning and sleeping are functions of their own (not inlined into `read` and `write`):
// so the trace events each emits stand only on its own frame, not on the other's locals
// as well (see tests/host.rs on stack use).

/// Exponential back-off between reads of the state, as the mutex spins.
struct Spinner {
    used: u32,
    backoff: u32,
    budget: u32,
    lost: u32,
}

impl Spinner {
    fn new(budget: u32) -> Spinner {
        Spinner { used: 0, backoff: 1, budget, lost: 0 }
    }

    /// Pauses before the next read; false once the budget is spent.
    fn pause(&mut self) -> bool {
        if self.used >= self.budget {
            return false;
        }
        for _ in 0..self.backoff {
            core::hint::spin_loop();
        }
        self.used += self.backoff;
        self.backoff = (self.backoff * 2).min(policy::MAX_BACKOFF);
        true
    }

    /// The lock was open and another thread closed it first; false once that happened
    /// often enough that spinning only drags the lock's cache line between cores.
    fn lost_race(&mut self) -> bool {
        self.lost += 1;
        self.lost < policy::LOST_RACES
    }

    fn learn(&self, lock: &RawRwLock, won: bool) {
        let won_after = won.then_some(self.used);
        lock.set_spin_estimate(policy::next_estimate(lock.spin_estimate(), won_after));
    }

    /// How the spin ended, for its caller.
    fn end(&self, lock: &RawRwLock, gave_up: Option<GiveUp>) -> Spun {
        self.learn(lock, gave_up.is_none());
        match gave_up {
            None => Ok(self.used),
            Some(why) => Err((why, self.used)),
        }
    }
}

/// How a spin ended: won after so many pause iterations, or gave up (why, after how
/// many).
type Spun = Result<u32, (GiveUp, u32)>;

/// Tells the trace why spinning stopped short of the lock. (Called by the waiting code
/// after the spin function returned: one frame fewer under the event.)
fn gave_up(lock: &RawRwLock, mode: Mode, used: u32, budget: u32, why: GiveUp) {
    if observe::enabled() {
        observe::rw_gave_up_spinning(lock.addr(), mode, used, budget, why);
    }
}

/// Spins reading the state until a reader may enter.
#[inline(never)]
fn spin_read(lock: &RawRwLock, budget: u32) -> Result<Spun, c_int> {
    let mut spinner = Spinner::new(budget);
    let mut state = lock.state.load(Relaxed);
    let mut was_open = false;
    let gave_up = loop {
        if !lock.blocks_readers(state) {
            if lock.try_enter_as_reader(state)? {
                break None;
            }
            // Usually another reader moved the count: look again at once.
            state = lock.state.load(Relaxed);
            was_open = true;
            continue;
        }
        if was_open {
            was_open = false;
            if !spinner.lost_race() {
                break Some(GiveUp::LostRaces);
            }
        }
        if !spinner.pause() {
            break Some(GiveUp::Budget);
        }
        state = lock.state.load(Relaxed);
    };
    Ok(spinner.end(lock, gave_up))
}

/// Spins reading the state until the lock is idle and this writer takes it.
#[inline(never)]
fn spin_write(lock: &RawRwLock, budget: u32, registered: bool) -> Spun {
    let mut spinner = Spinner::new(budget);
    let mut state = lock.state.load(Relaxed);
    let mut was_open = false;
    let gave_up = loop {
        if lock.open_for_writer(state) {
            if lock.try_enter_as_writer(state, registered, false) {
                break None;
            }
            state = lock.state.load(Relaxed);
            was_open = true;
            continue;
        }
        if was_open {
            was_open = false;
            if !spinner.lost_race() {
                break Some(GiveUp::LostRaces);
            }
        }
        if state & WRITERS_WAITING != 0 && policy::queue_behind_sleepers() {
            break Some(GiveUp::Sleepers);
        }
        if !spinner.pause() {
            break Some(GiveUp::Budget);
        }
        state = lock.state.load(Relaxed);
    };
    spinner.end(lock, gave_up)
}

/// Sleeps in the reader queue until a reader may enter, then enters; how many times it
/// slept.
#[inline(never)]
fn sleep_read(lock: &RawRwLock, deadline: Option<&Deadline>) -> Result<u32, c_int> {
    let addr = lock.gate_addr();
    let mut sleeps = 0;
    // Set once queued writers have held back an idle lock for the whole grace period.
    let mut writers_presumed_gone = false;
    // Set once the deadline has passed: the call fails if the lock still blocks it.
    let mut expired = false;
    loop {
        let state = lock.state.load(Relaxed);
        let blocked =
            if writers_presumed_gone { state & WRITE_LOCKED != 0 } else { lock.blocks_readers(state) };
        if !blocked {
            if lock.try_enter_as_reader(state)? {
                return Ok(sleeps);
            }
            continue;
        }
        if expired {
            give_up_reader(lock);
            return Err(libc::ETIMEDOUT);
        }
        let waiting = state | READERS_WAITING;
        if waiting != state && lock.state.compare_exchange(state, waiting, Relaxed, Relaxed).is_err() {
            continue;
        }
        if let Some(Err(e)) = deadline.map(Deadline::check) {
            give_up_reader(lock);
            return Err(e);
        }
        // Blocked only by queued writers while nobody holds the lock: one of them is about
        // to take it, unless they are gone (see "No handoff, and leaving a wait").
        let held_back_by_queue = idle(state);
        lock.going_to_sleep(Mode::Read);
        sleeps += 1;
        let r = if held_back_by_queue {
            sleep_for_grace(addr, gate(waiting), READER_QUEUE)
        } else {
            sys::futex_wait_bitset(addr.word, gate(waiting), READER_QUEUE, deadline, addr.shared)
        };
        if held_back_by_queue {
            if r == libc::ETIMEDOUT && gate(lock.state.load(Relaxed)) == gate(waiting) {
                writers_presumed_gone = true;
            }
            expired = deadline.is_some_and(passed);
        } else {
            expired = r == libc::ETIMEDOUT;
        }
        // Timed out, woken, interrupted by a signal (whose handler may have taken other
        // locks), or the gate changed before the thread slept: look again.
    }
}

/// Sleeps in the writer queue until the lock is idle, then takes it; how many times it
/// slept.
#[inline(never)]
fn sleep_write(lock: &RawRwLock, deadline: Option<&Deadline>, mut registered: bool) -> Result<u32, c_int> {
    let addr = lock.gate_addr();
    let mut woken = false;
    let mut sleeps = 0;
    // Set once the deadline has passed: the call fails if the lock is still busy.
    let mut expired = false;
    loop {
        let state = lock.state.load(Relaxed);
        // A writer whose time is up does not defer to woken readers: a timed call fails
        // only on a busy lock, never on an idle one.
        let may_enter =
            lock.open_for_writer(state) || (idle(state) && (expired || deadline.is_some_and(passed)));
        if may_enter {
            if lock.try_enter_as_writer(state, registered, woken) {
                return Ok(sleeps);
            }
            continue;
        }
        if expired {
            give_up_writer(lock);
            return Err(libc::ETIMEDOUT);
        }
        // Queue up and promise that the release wakes a writer, in one step.
        let queue = if registered { 0 } else { QUEUED_WRITER };
        let waiting = (state + queue) | WRITERS_WAITING;
        if waiting != state {
            if lock.state.compare_exchange(state, waiting, Relaxed, Relaxed).is_err() {
                continue;
            }
            registered = true;
        }
        if let Some(Err(e)) = deadline.map(Deadline::check) {
            give_up_writer(lock);
            return Err(e);
        }
        // Held back only by woken readers on their way in (the lock is idle): they enter
        // within microseconds, unless they are gone (a reader that left its wait with
        // `siglongjmp`), which the grace period tells.
        let held_back_by_woken_readers = idle(state);
        lock.going_to_sleep(Mode::Write);
        sleeps += 1;
        let r = if held_back_by_woken_readers {
            sleep_for_grace(addr, gate(waiting), WRITER_QUEUE)
        } else {
            sys::futex_wait_bitset(addr.word, gate(waiting), WRITER_QUEUE, deadline, addr.shared)
        };
        if held_back_by_woken_readers {
            if r == libc::ETIMEDOUT {
                // Nothing moved for the whole grace period: the readers are gone.
                let _ = lock.state.compare_exchange(waiting, waiting & !READERS_WAITING, Relaxed, Relaxed);
            }
            expired = deadline.is_some_and(passed);
        } else {
            expired = r == libc::ETIMEDOUT;
        }
        // EAGAIN: the gate changed before this thread slept, so no wake was meant for it.
        // Anything else (a wake, a signal, a timeout racing one) may have taken one.
        woken |= r != libc::EAGAIN;
    }
}

/// A queued writer stops waiting without the lock. It takes itself off the queue and
/// passes on what it may owe the others: the wake it may have consumed (to another
/// writer, at once if the lock is idle, else through `WW` at the next release), and,
/// if it was the last queued writer under writer preference, the readers it kept out.
fn give_up_writer(lock: &RawRwLock) {
    let addr = lock.gate_addr();
    let prefers_writers = lock.prefers_writers();
    let mut state = lock.state.load(Relaxed);
    loop {
        if queued_writers(state) == 0 {
            return; // cannot happen: the caller is queued
        }
        let mut next = state - QUEUED_WRITER;
        let mut wake = Wake::NOBODY;
        if queued_writers(next) != 0 {
            if lock.open_for_writer(state) {
                wake.writer = true;
            } else {
                next |= WRITERS_WAITING;
            }
        } else if prefers_writers && state & WRITE_LOCKED == 0 && state & READERS_WAITING != 0 {
            next &= !READERS_WAITING;
            wake.readers = true;
        }
        match lock.state.compare_exchange_weak(state, next, Relaxed, Relaxed) {
            // This thread is inside a lock call, so the lock is still alive here.
            Ok(_) => return addr.wake(wake),
            Err(now) => state = now,
        }
    }
}

/// A reader stops waiting without the lock, and leaves `RW` as if it had never come.
/// It cannot tell whether other readers still wait, so it clears the bit and, if the lock
/// still keeps readers out, wakes them all: those still blocked set it again before they
/// sleep (one wake per reader, paid only when a reader gives up). Left set, `RW` would
/// outlive the reader: the next write release would take it for woken readers on their
/// way in and keep writers out of the idle lock for them. Under the reader-preferring
/// kinds an idle lock with `RW` set is such a lock already (none of those readers
/// sleeps, as no writer holds it): it opens to writers again and one is woken, as a last
/// reader would.
fn give_up_reader(lock: &RawRwLock) {
    let addr = lock.gate_addr();
    let prefers_writers = lock.prefers_writers();
    let mut state = lock.state.load(Relaxed);
    while state & READERS_WAITING != 0 {
        let mut next = state & !READERS_WAITING;
        let mut wake = Wake { readers: lock.blocks_readers(state), writer: false };
        if !prefers_writers && idle(state) {
            next &= !WRITERS_WAITING;
            wake.writer = state & WRITERS_WAITING != 0;
        }
        match lock.state.compare_exchange_weak(state, next, Relaxed, Relaxed) {
            // This thread is inside a lock call, so the lock is still alive here.
            Ok(_) => return addr.wake(wake),
            Err(now) => state = now,
        }
    }
}

/// Sleeps in `queue` while the gate reads `gate`, for at most the grace period given to
/// waiters that may be gone. (Its own frame: the deadline is not on the stack while the
/// caller emits its trace events.)
#[inline(never)]
fn sleep_for_grace(addr: super::GateAddr, gate: u32, queue: u32) -> c_int {
    let grace = Deadline { clock: libc::CLOCK_MONOTONIC, at: ns_from_now(STALE_WAITER_GRACE_NS) };
    sys::futex_wait_bitset(addr.word, gate, queue, Some(&grace), addr.shared)
}

/// Whether `d` has passed on its clock. (Out of line, as `sleep_for_grace`.)
#[inline(never)]
fn passed(d: &Deadline) -> bool {
    let mut now = timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own; the clock was checked on entry.
    unsafe { libc::clock_gettime(d.clock, &mut now) };
    (now.tv_sec, now.tv_nsec) >= (d.at.tv_sec, d.at.tv_nsec)
}

/// `CLOCK_MONOTONIC` now plus `ns`, as an absolute timespec.
fn ns_from_now(ns: i64) -> timespec {
    let t = sys::now_ns() as i64 + ns;
    timespec { tv_sec: t / 1_000_000_000, tv_nsec: t % 1_000_000_000 }
}
