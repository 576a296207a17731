//! The spin policy as rwlocks see it. Everything the rwlock's waiting code asks of
//! `crate::spin` and `crate::config` goes through this file, so that when the policy
//! becomes one type shared by mutexes and rwlocks, only these few lines change.

use crate::{config, spin};

/// Longest run of pauses between two reads of a busy state (as for mutexes).
pub const MAX_BACKOFF: u32 = spin::MAX_BACKOFF;

/// A spinner that saw the lock open and lost it this many times stops spinning.
pub const LOST_RACES: u32 = spin::LOST_RACES;

/// Pause iterations a contended acquisition may spin, from the lock's learned estimate:
/// 0 under `futex` (and with `SPINMUTEX_SPIN_LIMIT=0`), at most the spin limit.
#[inline]
pub fn budget(estimate: u32) -> u32 {
    spin::budget_for(estimate)
}

/// The estimate after a spin that won after `won_after` iterations (`None`: in vain).
pub fn next_estimate(estimate: u32, won_after: Option<u32>) -> u32 {
    spin::next_estimate(estimate, won_after)
}

/// `SPINMUTEX_FAIR=1`: a writer does not spin past writers that already sleep.
pub fn queue_behind_sleepers() -> bool {
    config::fair()
}
