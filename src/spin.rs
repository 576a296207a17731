//! The `spin` strategy's policy: how long to spin on a busy mutex before sleeping, and
//! when a sleeper may claim a handoff. The protocol itself lives in `mutex.rs`.
//!
//! Spinning pays only while the owner is about to release: beyond one futex
//! sleep-and-wake round trip (the spin limit) sleeping is cheaper. Within that limit each
//! mutex learns, like glibc's adaptive type but for every mutex, how long spinning
//! recently took to succeed: a moving average kept in the mutex's `__spins`. The next
//! acquisition spins up to twice that average plus a small floor, so a mutex whose owner
//! holds it long stops burning CPU, and one whose critical section is short keeps
//! catching the release.

use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::config;
use crate::mutex::RawMutex;

/// Longest run of pauses between two reads of a busy lock word (about 0.5 µs).
pub const MAX_BACKOFF: u32 = 32;
/// A spinner that saw the lock free this many times and each time lost it to another
/// thread stops spinning: the lock is being passed around faster than a spinner on
/// another core can take it.
pub const LOST_RACES: u32 = 2;
/// Every contended acquisition may spin this many pause iterations, whatever the
/// estimate says: it is how a mutex whose estimate fell to zero notices that spinning
/// pays again.
const FLOOR: u32 = 64;
/// Weight of the newest sample in the moving average: 1/8, as glibc's adaptive mutex.
const SHIFT: u32 = 3;

static HANDOFF_UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// Pause iterations this acquisition may spin; 0 means sleep at once.
#[inline]
pub fn budget(m: &RawMutex) -> u32 {
    budget_for(m.spin_estimate())
}

/// Moves the estimate towards what this acquisition needed: the iterations it spun if
/// spinning won, or down by a step if the whole budget was spent in vain.
pub fn learn(m: &RawMutex, won_after: Option<u32>) {
    m.set_spin_estimate(next_estimate(m.spin_estimate(), won_after));
}

/// The budget of [`budget`] for any lock that keeps an estimate (rwlocks use it too).
#[inline]
pub fn budget_for(estimate: u32) -> u32 {
    if !config::row().spins {
        return 0;
    }
    (2 * estimate + FLOOR).min(config::spin_limit())
}

/// The estimate [`learn`] moves to, for any lock that keeps one.
pub fn next_estimate(estimate: u32, won_after: Option<u32>) -> u32 {
    let estimate = estimate as i64;
    let target = match won_after {
        Some(iterations) => iterations as i64,
        None => 0,
    };
    (estimate + ((target - estimate) >> SHIFT)).max(0) as u32
}

/// Lost wake-ups after which a sleeper asks for the lock to be handed over; 0 if
/// handoffs are off (other strategies, `SPINMUTEX_HANDOFF_AFTER=0`, old kernels).
pub fn handoff_after() -> u32 {
    if !config::row().hands_off || HANDOFF_UNAVAILABLE.load(Relaxed) {
        return 0;
    }
    config::handoff_after()
}

/// The kernel lacks `futex_waitv`: handoffs are turned off for the process.
pub fn disable_handoff() {
    HANDOFF_UNAVAILABLE.store(true, Relaxed);
}
