//! The strategies, each one row of settings. Code asks a strategy what it does (does it
//! serve mutexes, which protocol do they speak, does it spin, does it hand off), never
//! which one it is; so a new strategy is a name in the names crate, a row here, and,
//! where it waits in a way of its own, one module (`pi` for `kernel`).

use spinmutex_names::Strategy;

/// What a strategy does.
pub struct Row {
    /// Serves mutexes itself; if not, every call goes on to glibc.
    pub serves: bool,
    /// Its mutexes speak the kernel's priority-inheritance protocol (`pi`) rather than
    /// glibc's 0/1/2 word (`mutex`).
    pub priority_inheritance: bool,
    /// Spins before sleeping (`spin`).
    pub spins: bool,
    /// Hands the lock to a sleeper that keeps losing it (`mutex`).
    pub hands_off: bool,
    /// Each lock class learns whether and how long to spin (`auto`); `spins` and
    /// `hands_off` are then what a class may do, not what it always does.
    pub learns: bool,
}

/// The row of `strategy`.
pub fn row(strategy: Strategy) -> &'static Row {
    match strategy {
        Strategy::Glibc => {
            &Row { serves: false, priority_inheritance: false, spins: false, hands_off: false, learns: false }
        }
        Strategy::Futex => {
            &Row { serves: true, priority_inheritance: false, spins: false, hands_off: false, learns: false }
        }
        Strategy::Spin => {
            &Row { serves: true, priority_inheritance: false, spins: true, hands_off: true, learns: false }
        }
        Strategy::Auto => {
            &Row { serves: true, priority_inheritance: false, spins: true, hands_off: true, learns: true }
        }
        Strategy::Kernel => {
            &Row { serves: true, priority_inheritance: true, spins: false, hands_off: false, learns: false }
        }
    }
}
