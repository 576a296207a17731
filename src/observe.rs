//! Hooks at every slow-path decision, for tracing and statistics. Placeholder: filled
//! in by the observability work; every hook is free while both are off.

use crate::mutex::{Acquired, RawMutex};

/// Why a spinner stopped spinning and went to sleep.
#[derive(Clone, Copy, Debug)]
pub enum GiveUp {
    /// Spun the whole budget (iterations) without the lock coming free.
    Budget(u32),
    /// Enough threads already spin on this mutex.
    TooManySpinners,
    /// A sleeper is about to be handed the lock.
    HandoffPending,
}

#[inline]
pub fn enabled() -> bool {
    false
}
pub fn init() {}
pub fn at_exit() {}
pub fn after_fork_in_child() {}
pub fn reset(_m: usize) {}
#[inline]
pub fn forwarded(_m: usize, _result: i32) {}
#[inline]
pub fn acquired(_m: &RawMutex, _how: Acquired, _started_ns: u64) {}
#[inline]
pub fn woke(_m: &RawMutex) {}
#[inline]
pub fn handed_off(_m: &RawMutex, _to: i32) {}
#[inline]
pub fn gave_up_spinning(_m: &RawMutex, _spun: u32, _why: GiveUp) {}
#[inline]
pub fn sleeping(_m: &RawMutex) {}
#[inline]
pub fn timed_out(_m: &RawMutex) {}
#[inline]
pub fn handoff_requested(_m: &RawMutex) {}
