//! The strategies, each one row of settings. Code asks a strategy what it does (does it
//! serve mutexes, which protocol do they speak, does it spin, does it hand off), never
//! which one it is; so a new strategy is a row here, its name in `config`, and, where it
//! waits in a way of its own, one module (`pi` for `kernel`).

/// How contended mutexes wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Strategy {
    /// Every call goes to glibc's own functions: the A/B baseline.
    Glibc = 1,
    /// Sleep on the futex at the first contention; never spin.
    Futex = 2,
    /// Spin while spinning pays, then sleep; hand off to starving sleepers.
    Spin = 3,
    /// The kernel's spinning futex: priority-inheritance futexes (`pi`).
    Kernel = 4,
}

/// What a strategy does.
pub struct Row {
    pub strategy: Strategy,
    pub name: &'static str,
    /// Serves mutexes itself; if not, every call goes on to glibc.
    pub serves: bool,
    /// Its mutexes speak the kernel's priority-inheritance protocol (`pi`) rather than
    /// glibc's 0/1/2 word (`mutex`).
    pub priority_inheritance: bool,
    /// Spins before sleeping (`spin`).
    pub spins: bool,
    /// Hands the lock to a sleeper that keeps losing it (`mutex`).
    pub hands_off: bool,
}

const ROWS: [Row; 4] = [
    Row {
        strategy: Strategy::Glibc,
        name: "glibc",
        serves: false,
        priority_inheritance: false,
        spins: false,
        hands_off: false,
    },
    Row {
        strategy: Strategy::Futex,
        name: "futex",
        serves: true,
        priority_inheritance: false,
        spins: false,
        hands_off: false,
    },
    Row {
        strategy: Strategy::Spin,
        name: "spin",
        serves: true,
        priority_inheritance: false,
        spins: true,
        hands_off: true,
    },
    Row {
        strategy: Strategy::Kernel,
        name: "kernel",
        serves: true,
        priority_inheritance: true,
        spins: false,
        hands_off: false,
    },
];

impl Strategy {
    pub fn row(self) -> &'static Row {
        &ROWS[self as usize - 1]
    }

    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The strategy named `name`.
    pub fn named(name: &[u8]) -> Option<Strategy> {
        ROWS.iter().find(|r| r.name.as_bytes() == name).map(|r| r.strategy)
    }

    /// Every name, for messages.
    pub const NAMES: &'static str = "glibc, futex, spin, kernel";

    /// Decodes what `as u8` gave.
    pub fn from_u8(n: u8) -> Option<Strategy> {
        ROWS.get((n as usize).wrapping_sub(1)).map(|r| r.strategy)
    }
}
