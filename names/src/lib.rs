//! Every setting of `libspinmutex.so`: the `SPINMUTEX_*` names, their defaults, the
//! values they accept and the parsers that decide, in one place that the library and
//! the `spinmutex` command both use, so the two can never disagree about what `spinn`
//! or `10x` means.
//!
//! The library parses its environment with this crate from its constructor and even
//! from `.preinit_array`, so everything here takes `&[u8]`, allocates nothing, never
//! panics and depends on nothing. A parser returns the value or an [`Invalid`] that
//! names the [`Setting`], whose `accepted` text the library prints in its one stderr
//! line and the command in its usage error.
//!
//! The module also owns the line the library writes to the command at load time (the
//! handshake, [`LoadReport`]) and the variable that asks for it ([`HANDSHAKE`]).
#![no_std]
#![forbid(unsafe_code)]

use core::ffi::CStr;
use core::fmt;

/// One environment variable of the library.
#[derive(Debug, PartialEq, Eq)]
pub struct Setting {
    /// `SPINMUTEX_...`
    pub name: &'static str,
    /// The same name, NUL-terminated, for `getenv`.
    pub cname: &'static CStr,
    /// What applies when the variable is unset or not valid, in words.
    pub default: &'static str,
    /// The values accepted, in words.
    pub accepted: &'static str,
}

macro_rules! setting {
    ($(#[$doc:meta])* $id:ident = $name:literal, default $default:expr, accepted $accepted:expr) => {
        $(#[$doc])*
        pub const $id: Setting = Setting {
            name: $name,
            cname: match CStr::from_bytes_with_nul(concat!($name, "\0").as_bytes()) {
                Ok(c) => c,
                Err(_) => panic!("a setting name holds a NUL"),
            },
            default: $default,
            accepted: $accepted,
        };
    };
}

/// A value a setting does not accept: which setting, hence what it does accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invalid(pub &'static Setting);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not valid for {} (accepted: {})", self.0.name, self.0.accepted)
    }
}

// ------------------------------------------------------------------------------ strategy

/// Joins string literals with ", " at compile time.
macro_rules! join {
    ($first:literal $(, $rest:literal)*) => { concat!($first $(, ", ", $rest)*) };
}

/// Declares the strategies: adding one is one line here (plus, in the library, the
/// code that serves it).
macro_rules! strategies {
    ($($(#[$doc:meta])* $variant:ident = $value:literal => $name:literal,)+) => {
        /// How contended mutexes wait.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Strategy {
            $($(#[$doc])* $variant = $value,)+
        }

        impl Strategy {
            /// Every strategy, in the order the documentation lists them.
            pub const ALL: &'static [Strategy] = &[$(Strategy::$variant,)+];

            pub const fn name(self) -> &'static str {
                match self {
                    $(Strategy::$variant => $name,)+
                }
            }

            /// The strategy of a `#[repr(u8)]` value; None for any other byte.
            pub const fn from_u8(v: u8) -> Option<Strategy> {
                match v {
                    $($value => Some(Strategy::$variant),)+
                    _ => None,
                }
            }

            pub fn from_name(text: &[u8]) -> Option<Strategy> {
                $(if text == $name.as_bytes() {
                    return Some(Strategy::$variant);
                })+
                None
            }
        }

        /// The strategy names, comma-separated.
        pub const STRATEGY_NAMES: &str = join!($($name),+);
    };
}

strategies! {
    /// Every call goes to glibc's own functions: the A/B baseline.
    Glibc = 1 => "glibc",
    /// Sleep on the futex at the first contention; never spin.
    Futex = 2 => "futex",
    /// Spin while spinning pays, then sleep; hand off to starving sleepers.
    Spin = 3 => "spin",
    /// The kernel's spinning futex: priority-inheritance futexes, spinning in the kernel
    /// while the owner runs.
    Kernel = 4 => "kernel",
    /// Each lock class learns online how long to spin (0: sleep at once) and whether to
    /// hand off, from what its waits cost.
    Auto = 5 => "auto",
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub const DEFAULT_STRATEGY: Strategy = Strategy::Spin;

setting! {
    /// How contended mutexes wait.
    STRATEGY = "SPINMUTEX_STRATEGY", default DEFAULT_STRATEGY.name(), accepted STRATEGY_NAMES
}

pub fn parse_strategy(v: &[u8]) -> Result<Strategy, Invalid> {
    Strategy::from_name(v).ok_or(Invalid(&STRATEGY))
}

// ------------------------------------------------------------------------------ numbers

/// A decimal integer with no sign or unit.
pub fn parse_count(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 19 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(text.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')))
}

/// A duration in nanoseconds: a decimal integer followed by `ns`, `us`, `ms` or `s`;
/// a bare `0` is also accepted.
pub fn parse_duration(text: &[u8]) -> Option<u64> {
    if text == b"0" {
        return Some(0);
    }
    let digits = text.iter().take_while(|c| c.is_ascii_digit()).count();
    let (number, unit) = text.split_at(digits);
    let scale = match unit {
        b"ns" => 1,
        b"us" => 1_000,
        b"ms" => 1_000_000,
        b"s" => 1_000_000_000,
        _ => return None,
    };
    parse_count(number)?.checked_mul(scale)
}

fn count_in(text: &[u8], max: u64, setting: &'static Setting) -> Result<u64, Invalid> {
    parse_count(text).filter(|&n| n <= max).ok_or(Invalid(setting))
}

/// Nanoseconds, shown in the largest unit that keeps them whole: `8us`, `1ms`, `250ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nanos(pub u64);

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            return f.write_str("0");
        }
        for (scale, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
            if ns.is_multiple_of(scale) {
                return write!(f, "{}{unit}", ns / scale);
            }
        }
        write!(f, "{ns}ns")
    }
}

// ------------------------------------------------------------------------------ spinning

/// The most one acquisition spins: a count of `pause` iterations or a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinLimit {
    Iterations(u64),
    Nanos(u64),
}

impl SpinLimit {
    /// The limit in nanoseconds, an iteration count converted with the measured cost of
    /// one `pause` in picoseconds.
    pub const fn to_ns(self, pause_ps: u32) -> u64 {
        match self {
            SpinLimit::Iterations(n) => n.saturating_mul(pause_ps as u64) / 1000,
            SpinLimit::Nanos(ns) => ns,
        }
    }
}

impl fmt::Display for SpinLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SpinLimit::Iterations(n) => write!(f, "{n}"),
            SpinLimit::Nanos(ns) => write!(f, "{}", Nanos(ns)),
        }
    }
}

/// About one futex sleep-and-wake round trip: spinning longer cannot pay.
pub const DEFAULT_SPIN_LIMIT: SpinLimit = SpinLimit::Nanos(8_000);
pub const MAX_SPIN_ITERATIONS: u64 = 1_000_000;
pub const MAX_SPIN_NS: u64 = 1_000_000_000;

setting! {
    /// The most one acquisition spins.
    SPIN_LIMIT = "SPINMUTEX_SPIN_LIMIT",
    default "8us",
    accepted "an iteration count 0..1000000, or a duration up to 1s in ns, us, ms or s such as 5us"
}

pub fn parse_spin_limit(v: &[u8]) -> Result<SpinLimit, Invalid> {
    if let Some(n) = parse_count(v) {
        return if n <= MAX_SPIN_ITERATIONS {
            Ok(SpinLimit::Iterations(n))
        } else {
            Err(Invalid(&SPIN_LIMIT))
        };
    }
    match parse_duration(v) {
        Some(ns) if ns <= MAX_SPIN_NS => Ok(SpinLimit::Nanos(ns)),
        _ => Err(Invalid(&SPIN_LIMIT)),
    }
}

pub const DEFAULT_MAX_SPINNERS: u32 = 0;

setting! {
    /// Most threads that spin on one mutex at once.
    MAX_SPINNERS = "SPINMUTEX_MAX_SPINNERS", default "0 (no cap)", accepted "an integer 0..1024 (0: no cap)"
}

pub fn parse_max_spinners(v: &[u8]) -> Result<u32, Invalid> {
    count_in(v, 1024, &MAX_SPINNERS).map(|n| n as u32)
}

// ------------------------------------------------------------------------------ handoff

pub const DEFAULT_HANDOFF_AFTER: u32 = 2;

setting! {
    /// Lost wake-ups after which a sleeper asks for a handoff.
    HANDOFF_AFTER = "SPINMUTEX_HANDOFF_AFTER", default "2", accepted "an integer 0..1000 (0: never)"
}

pub fn parse_handoff_after(v: &[u8]) -> Result<u32, Invalid> {
    count_in(v, 1000, &HANDOFF_AFTER).map(|n| n as u32)
}

pub const DEFAULT_HANDOFF_WAIT_NS: u64 = 1_000_000;
pub const MAX_HANDOFF_WAIT_NS: u64 = 10_000_000_000;

setting! {
    /// Time asleep after which a sleeper asks for a handoff.
    HANDOFF_WAIT = "SPINMUTEX_HANDOFF_WAIT",
    default "1ms",
    accepted "0 (no time bound) or a duration up to 10s in ns, us, ms or s such as 500us"
}

/// Nanoseconds.
pub fn parse_handoff_wait(v: &[u8]) -> Result<u64, Invalid> {
    parse_duration(v).filter(|&ns| ns <= MAX_HANDOFF_WAIT_NS).ok_or(Invalid(&HANDOFF_WAIT))
}

setting! {
    /// Never spin while another thread sleeps on the mutex.
    FAIR = "SPINMUTEX_FAIR", default "0", accepted "0 or 1"
}

pub fn parse_fair(v: &[u8]) -> Result<bool, Invalid> {
    parse_switch(v, &FAIR)
}

/// `0` or `1`, the spelling of every on/off setting.
fn parse_switch(v: &[u8], setting: &'static Setting) -> Result<bool, Invalid> {
    match v {
        b"0" => Ok(false),
        b"1" => Ok(true),
        _ => Err(Invalid(setting)),
    }
}

setting! {
    /// Whether the strategy serves reader-writer locks, or every `pthread_rwlock_*` call
    /// goes to glibc's own function (for a program that also takes its rwlocks through
    /// glibc's functions, from a plugin loaded with `RTLD_DEEPBIND`).
    RWLOCKS = "SPINMUTEX_RWLOCKS", default "1", accepted "1 (served by the strategy) or 0 (forwarded to glibc)"
}

/// True: served by the strategy.
pub fn parse_rwlocks(v: &[u8]) -> Result<bool, Invalid> {
    parse_switch(v, &RWLOCKS)
}

// ------------------------------------------------------------------------------ tracing

setting! {
    /// The tracing filter; tracing is off when unset.
    TRACE = "SPINMUTEX_TRACE", default "off", accepted "an EnvFilter directive such as debug or spinmutex=trace"
}

/// The directive as text. Only its shape is checked here (non-empty UTF-8); the
/// library's filter parser has the last word.
pub fn parse_trace(v: &[u8]) -> Result<&str, Invalid> {
    match core::str::from_utf8(v) {
        Ok(s) if !s.is_empty() => Ok(s),
        _ => Err(Invalid(&TRACE)),
    }
}

setting! {
    /// Where trace events go (appended).
    TRACE_FILE = "SPINMUTEX_TRACE_FILE", default "standard error", accepted "a writable file path"
}

/// A non-empty path.
pub fn parse_trace_file(v: &[u8]) -> Result<&[u8], Invalid> {
    path(v, &TRACE_FILE)
}

fn path<'a>(v: &'a [u8], setting: &'static Setting) -> Result<&'a [u8], Invalid> {
    if v.is_empty() || v.contains(&0) {
        Err(Invalid(setting))
    } else {
        Ok(v)
    }
}

/// How trace events are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    Text,
    Json,
}

setting! {
    /// `key=value` lines or JSON lines.
    TRACE_FORMAT = "SPINMUTEX_TRACE_FORMAT", default "text", accepted "text, json"
}

pub fn parse_trace_format(v: &[u8]) -> Result<TraceFormat, Invalid> {
    match v {
        b"text" => Ok(TraceFormat::Text),
        b"json" => Ok(TraceFormat::Json),
        _ => Err(Invalid(&TRACE_FORMAT)),
    }
}

// ------------------------------------------------------------------------------ statistics

/// Whether per-mutex statistics are kept, and how they are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stats {
    Off,
    Text,
    Json,
}

impl Stats {
    pub const fn name(self) -> &'static str {
        match self {
            Stats::Off => "off",
            Stats::Text => "text",
            Stats::Json => "json",
        }
    }
}

setting! {
    /// Per-mutex statistics, reported at exit.
    STATS = "SPINMUTEX_STATS", default "0 (off)", accepted "0, 1, text, json"
}

/// `0` (or empty) off, `1` or `text` a text report, `json` a JSON one.
pub fn parse_stats(v: &[u8]) -> Result<Stats, Invalid> {
    match v {
        b"" | b"0" => Ok(Stats::Off),
        b"1" | b"text" => Ok(Stats::Text),
        b"json" => Ok(Stats::Json),
        _ => Err(Invalid(&STATS)),
    }
}

setting! {
    /// Where reports go (appended).
    STATS_FILE = "SPINMUTEX_STATS_FILE", default "standard error", accepted "a file path"
}

pub fn parse_stats_file(v: &[u8]) -> Result<&[u8], Invalid> {
    path(v, &STATS_FILE)
}

pub const DEFAULT_STATS_TOP: usize = 10;

setting! {
    /// How many mutexes the report lists.
    STATS_TOP = "SPINMUTEX_STATS_TOP", default "10", accepted "an integer 1..100"
}

pub fn parse_stats_top(v: &[u8]) -> Result<usize, Invalid> {
    match parse_count(v) {
        Some(n @ 1..=100) => Ok(n as usize),
        _ => Err(Invalid(&STATS_TOP)),
    }
}

pub const DEFAULT_STATS_SLOTS: usize = 4096;

setting! {
    /// Size of the per-mutex side table.
    STATS_SLOTS = "SPINMUTEX_STATS_SLOTS", default "4096", accepted "an integer 1..1048576"
}

pub fn parse_stats_slots(v: &[u8]) -> Result<usize, Invalid> {
    match parse_count(v) {
        Some(n @ 1..=1_048_576) => Ok(n as usize),
        _ => Err(Invalid(&STATS_SLOTS)),
    }
}

/// glibc's real-time signals: 32 and 33 are its own.
pub const SIGRTMIN: i32 = 34;
pub const SIGRTMAX: i32 = 64;
pub const SIGUSR1: i32 = 10;
pub const SIGUSR2: i32 = 12;
pub const DEFAULT_STATS_SIGNAL: i32 = SIGUSR2;

/// The signals that end a program on request: SIGINT, SIGTERM, SIGHUP and SIGPIPE. With
/// statistics on, one of them that the program left at its default action makes the
/// library write the report it writes at exit before the signal ends the process.
pub const ENDING_SIGNALS: [i32; 4] = [2, 15, 1, 13];

setting! {
    /// A signal that prints the report on demand.
    STATS_SIGNAL = "SPINMUTEX_STATS_SIGNAL",
    default "USR2",
    accepted "0 (none), USR1 (10), USR2 (12), or a real-time signal 34..64 (RTMIN+n, RTMAX-n)"
}

/// The signal number; 0 for none. Signals a program relies on for other purposes
/// (SIGINT, SIGKILL, SIGSEGV, SIGTERM, ...) are refused.
pub fn parse_stats_signal(v: &[u8]) -> Result<i32, Invalid> {
    let bad = Invalid(&STATS_SIGNAL);
    if let Some(n) = parse_count(v) {
        return match n {
            0 => Ok(0),
            10 | 12 => Ok(n as i32),
            n if (SIGRTMIN as u64..=SIGRTMAX as u64).contains(&n) => Ok(n as i32),
            _ => Err(bad),
        };
    }
    let name = v.strip_prefix(b"SIG").unwrap_or(v);
    let offset = |rest: &[u8]| -> Option<i32> {
        if rest.is_empty() {
            return Some(0);
        }
        parse_count(rest).filter(|&n| n <= (SIGRTMAX - SIGRTMIN) as u64).map(|n| n as i32)
    };
    match name {
        b"USR1" => Ok(SIGUSR1),
        b"USR2" => Ok(SIGUSR2),
        _ => {
            if let Some(rest) = name.strip_prefix(b"RTMIN") {
                let rest = if rest.is_empty() { rest } else { rest.strip_prefix(b"+").ok_or(bad)? };
                return offset(rest).map(|n| SIGRTMIN + n).ok_or(bad);
            }
            if let Some(rest) = name.strip_prefix(b"RTMAX") {
                let rest = if rest.is_empty() { rest } else { rest.strip_prefix(b"-").ok_or(bad)? };
                return offset(rest).map(|n| SIGRTMAX - n).ok_or(bad);
            }
            Err(bad)
        }
    }
}

// ------------------------------------------------------------------------------ the command

setting! {
    /// Where the `spinmutex` command finds the library (read by the command only).
    LIB = "SPINMUTEX_LIB", default "beside spinmutex, or ../lib", accepted "a path to libspinmutex.so"
}

setting! {
    /// Set by the `spinmutex` command only: the pipe the library reports its load on.
    HANDSHAKE = "SPINMUTEX_HANDSHAKE",
    default "off",
    accepted "fd=N,dev=D,ino=I, set by the spinmutex command"
}

/// The library's settings, in the order of the documentation. `SPINMUTEX_LIB` and
/// `SPINMUTEX_HANDSHAKE` belong to the command and are not among them.
pub const SETTINGS: &[&Setting] = &[
    &STRATEGY,
    &SPIN_LIMIT,
    &MAX_SPINNERS,
    &HANDOFF_AFTER,
    &FAIR,
    &HANDOFF_WAIT,
    &RWLOCKS,
    &TRACE,
    &TRACE_FILE,
    &TRACE_FORMAT,
    &STATS,
    &STATS_FILE,
    &STATS_TOP,
    &STATS_SLOTS,
    &STATS_SIGNAL,
];

/// Checks `value` for the library setting called `name`: None when `name` is not one.
pub fn check(name: &[u8], value: &[u8]) -> Option<Result<(), Invalid>> {
    fn ok<T>(r: Result<T, Invalid>) -> Result<(), Invalid> {
        r.map(|_| ())
    }
    let setting = SETTINGS.iter().find(|s| s.name.as_bytes() == name)?;
    Some(match setting.name {
        "SPINMUTEX_STRATEGY" => ok(parse_strategy(value)),
        "SPINMUTEX_SPIN_LIMIT" => ok(parse_spin_limit(value)),
        "SPINMUTEX_MAX_SPINNERS" => ok(parse_max_spinners(value)),
        "SPINMUTEX_HANDOFF_AFTER" => ok(parse_handoff_after(value)),
        "SPINMUTEX_FAIR" => ok(parse_fair(value)),
        "SPINMUTEX_HANDOFF_WAIT" => ok(parse_handoff_wait(value)),
        "SPINMUTEX_RWLOCKS" => ok(parse_rwlocks(value)),
        "SPINMUTEX_TRACE" => ok(parse_trace(value)),
        "SPINMUTEX_TRACE_FILE" => ok(parse_trace_file(value)),
        "SPINMUTEX_TRACE_FORMAT" => ok(parse_trace_format(value)),
        "SPINMUTEX_STATS" => ok(parse_stats(value)),
        "SPINMUTEX_STATS_FILE" => ok(parse_stats_file(value)),
        "SPINMUTEX_STATS_TOP" => ok(parse_stats_top(value)),
        "SPINMUTEX_STATS_SLOTS" => ok(parse_stats_slots(value)),
        "SPINMUTEX_STATS_SIGNAL" => ok(parse_stats_signal(value)),
        _ => return None,
    })
}

// ------------------------------------------------------------------------------ names

/// The prefix of every variable this project reads.
pub const PREFIX: &str = "SPINMUTEX_";

/// `SPINMUTEX_*` names that are not library settings yet are expected in an
/// environment: the command's own, and those the test suite and its scripts set for
/// themselves (programs run under the library inherit them, so the library must not
/// call them unknown).
pub const OTHER_NAMES: &[&str] = &[
    LIB.name,
    HANDSHAKE.name,
    // The test suite: fail rather than skip when an optional program is missing.
    "SPINMUTEX_TESTS_REQUIRE_ALL",
    // Where the build put the C test programs (cargo passes it on to test runs).
    "SPINMUTEX_C_TESTS_DIR",
    // A marker a command test gives to the hogs, to find any left behind.
    "SPINMUTEX_CLI_TEST_HOG_MARKER",
    // scripts/glibc-tests.sh: the time limit of one glibc test.
    "SPINMUTEX_GLIBC_TESTS_HARD_LIMIT",
];

/// True when `name` is a library setting or one of [`OTHER_NAMES`].
pub fn is_known(name: &[u8]) -> bool {
    known_names().any(|known| known.as_bytes() == name)
}

/// Every known name: the library's settings first, then [`OTHER_NAMES`].
pub fn known_names() -> impl Iterator<Item = &'static str> {
    SETTINGS.iter().map(|s| s.name).chain(OTHER_NAMES.iter().copied())
}

/// The known name nearest to `name` by [`edit_distance`] (the first in
/// [`known_names`]' order on a tie): what a misspelling most likely meant.
pub fn closest(name: &[u8]) -> &'static str {
    let mut best = (usize::MAX, STRATEGY.name);
    for known in known_names() {
        let d = edit_distance(name, known.as_bytes());
        if d < best.0 {
            best = (d, known);
        }
    }
    best.1
}

/// The longest text [`edit_distance`] compares whole; beyond it only the first
/// `EDIT_MAX` bytes count (no setting name comes near it).
pub const EDIT_MAX: usize = 64;

/// Levenshtein distance between `a` and `b`, ignoring ASCII case: how many inserted,
/// deleted or replaced bytes turn one into the other. Allocates nothing (the library
/// calls it while reading its environment), so it looks at the first [`EDIT_MAX`]
/// bytes of each.
pub fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let a = &a[..a.len().min(EDIT_MAX)];
    let b = &b[..b.len().min(EDIT_MAX)];
    // One row of the usual table: row[j] is the distance between the prefix of `a`
    // seen so far and the first j bytes of `b`.
    let mut row = [0usize; EDIT_MAX + 1];
    for (j, cell) in row.iter_mut().enumerate().take(b.len() + 1) {
        *cell = j;
    }
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let replace = diagonal + usize::from(!ca.eq_ignore_ascii_case(&cb));
            diagonal = row[j + 1];
            row[j + 1] = replace.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The name of an environment entry `NAME=value` when it starts with [`PREFIX`] and
/// is not known: what the library warns about and the command refuses.
pub fn unknown_name(entry: &[u8]) -> Option<&[u8]> {
    let name = entry.split(|&b| b == b'=').next().unwrap_or(entry);
    (name.starts_with(PREFIX.as_bytes()) && !is_known(name)).then_some(name)
}

// ------------------------------------------------------------------------------ handshake

/// Where the library reports its load: a descriptor and the identity of the pipe the
/// command created, so a program that closed the number and reused it for something
/// else is never written to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handshake {
    pub fd: i32,
    pub dev: u64,
    pub ino: u64,
}

impl fmt::Display for Handshake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fd={},dev={},ino={}", self.fd, self.dev, self.ino)
    }
}

pub fn parse_handshake(v: &[u8]) -> Result<Handshake, Invalid> {
    let bad = Invalid(&HANDSHAKE);
    let mut fields = v.split(|&b| b == b',');
    let mut next = |key: &[u8]| -> Result<u64, Invalid> {
        let item = fields.next().ok_or(bad)?;
        let value = item.strip_prefix(key).and_then(|r| r.strip_prefix(b"=")).ok_or(bad)?;
        parse_count(value).ok_or(bad)
    };
    let fd = next(b"fd")?;
    let dev = next(b"dev")?;
    let ino = next(b"ino")?;
    if fields.next().is_some() || fd > i32::MAX as u64 {
        return Err(bad);
    }
    Ok(Handshake { fd: fd as i32, dev, ino })
}

/// The counter columns of a statistics report in text, in order: the library writes
/// them under a row's mark, and `spinmutex report` between its `#` and its type and
/// origin columns, so that both tables read alike.
pub const STATS_COLUMNS: [&str; 14] = [
    "mutexes",
    "live",
    "locked",
    "changed",
    "cont.",
    "spins",
    "sleeps",
    "handoffs",
    "wait tot ms",
    "avg ms",
    "max ms",
    "hold tot ms",
    "avg ms",
    "max ms",
];

/// The first word of the library's load line.
pub const LOADED: &str = "spinmutex-loaded";

/// What the library says when it has loaded: who it is and the settings in force.
/// Written as one line, `spinmutex-loaded key=value ... exe=PATH`; the executable's
/// path comes last because it may hold spaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadReport<'a> {
    pub pid: u32,
    pub version: &'a str,
    pub strategy: Strategy,
    /// The spin limit in nanoseconds (an iteration count is converted at load).
    pub spin_limit_ns: u64,
    /// The measured cost of one `pause`, in picoseconds.
    pub pause_ps: u32,
    pub max_spinners: u32,
    pub handoff_after: u32,
    pub handoff_wait_ns: u64,
    pub fair: bool,
    /// Reader-writer locks are served by the strategy (else forwarded to glibc).
    pub rwlocks: bool,
    pub stats: Stats,
    /// Tracing is on (its filter was accepted).
    pub trace: bool,
    /// The process's executable.
    pub exe: &'a str,
}

impl fmt::Display for LoadReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{LOADED} pid={} version={} strategy={} spin_limit_ns={} pause_ps={} max_spinners={} \
             handoff_after={} handoff_wait_ns={} fair={} rwlocks={} stats={} trace={} exe={}",
            self.pid,
            self.version,
            self.strategy,
            self.spin_limit_ns,
            self.pause_ps,
            self.max_spinners,
            self.handoff_after,
            self.handoff_wait_ns,
            u8::from(self.fair),
            u8::from(self.rwlocks),
            self.stats.name(),
            if self.trace { "on" } else { "off" },
            self.exe
        )
    }
}

impl<'a> LoadReport<'a> {
    /// Reads one line as written by [`fmt::Display`]; None for anything else.
    pub fn parse(line: &'a str) -> Option<LoadReport<'a>> {
        let rest = line.trim_end_matches(['\n', '\r']).strip_prefix(LOADED)?.strip_prefix(' ')?;
        let (words, exe) = rest.split_once(" exe=")?;
        let mut it = words.split(' ');
        let mut field = |key: &str| -> Option<&'a str> { it.next()?.strip_prefix(key)?.strip_prefix('=') };
        let num = |s: Option<&str>| parse_count(s?.as_bytes());
        let pid = num(field("pid"))?;
        let version = field("version")?;
        let strategy = Strategy::from_name(field("strategy")?.as_bytes())?;
        let spin_limit_ns = num(field("spin_limit_ns"))?;
        let pause_ps = num(field("pause_ps"))?;
        let max_spinners = num(field("max_spinners"))?;
        let handoff_after = num(field("handoff_after"))?;
        let handoff_wait_ns = num(field("handoff_wait_ns"))?;
        let fair = parse_fair(field("fair")?.as_bytes()).ok()?;
        let rwlocks = parse_rwlocks(field("rwlocks")?.as_bytes()).ok()?;
        let stats = match field("stats")? {
            "off" => Stats::Off,
            "text" => Stats::Text,
            "json" => Stats::Json,
            _ => return None,
        };
        let trace = match field("trace")? {
            "on" => true,
            "off" => false,
            _ => return None,
        };
        if it.next().is_some() {
            return None;
        }
        Some(LoadReport {
            pid: u32::try_from(pid).ok()?,
            version,
            strategy,
            spin_limit_ns,
            pause_ps: u32::try_from(pause_ps).ok()?,
            max_spinners: u32::try_from(max_spinners).ok()?,
            handoff_after: u32::try_from(handoff_after).ok()?,
            handoff_wait_ns,
            fair,
            rwlocks,
            stats,
            trace,
            exe,
        })
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;
    use std::string::ToString;

    #[test]
    fn strategies() {
        assert_eq!(STRATEGY_NAMES, "glibc, futex, spin, kernel, auto");
        for s in Strategy::ALL {
            assert_eq!(Strategy::from_name(s.name().as_bytes()), Some(*s));
            assert_eq!(Strategy::from_u8(*s as u8), Some(*s));
        }
        assert_eq!(parse_strategy(b"spinn"), Err(Invalid(&STRATEGY)));
        assert_eq!(parse_strategy(b"none"), Err(Invalid(&STRATEGY)));
        assert_eq!(Strategy::from_u8(0), None);
        assert_eq!(STRATEGY.cname.to_bytes(), b"SPINMUTEX_STRATEGY");
    }

    #[test]
    fn counts_and_durations() {
        assert_eq!(parse_count(b"0"), Some(0));
        assert_eq!(parse_count(b"200"), Some(200));
        assert_eq!(parse_count(b""), None);
        assert_eq!(parse_count(b"-1"), None);
        assert_eq!(parse_count(b"5us"), None);
        assert_eq!(parse_count(b"99999999999999999999"), None);
        assert_eq!(parse_duration(b"0"), Some(0));
        assert_eq!(parse_duration(b"250ns"), Some(250));
        assert_eq!(parse_duration(b"5us"), Some(5_000));
        assert_eq!(parse_duration(b"2ms"), Some(2_000_000));
        assert_eq!(parse_duration(b"1s"), Some(1_000_000_000));
        for bad in [&b"5"[..], b"us", b"5 us", b"5h", b"9999999999999999999s", b"0us0"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
        assert_eq!(Nanos(8_000).to_string(), "8us");
        assert_eq!(Nanos(1_500).to_string(), "1500ns");
        assert_eq!(Nanos(2_000_000_000).to_string(), "2s");
        assert_eq!(Nanos(0).to_string(), "0");
    }

    #[test]
    fn spin_limits() {
        assert_eq!(parse_spin_limit(b"200"), Ok(SpinLimit::Iterations(200)));
        assert_eq!(parse_spin_limit(b"5us"), Ok(SpinLimit::Nanos(5_000)));
        assert_eq!(parse_spin_limit(b"0"), Ok(SpinLimit::Iterations(0)));
        for bad in [&b"10x"[..], b"1000001", b"2s", b"", b"abc"] {
            assert_eq!(parse_spin_limit(bad), Err(Invalid(&SPIN_LIMIT)), "{bad:?}");
        }
        assert_eq!(SpinLimit::Iterations(100).to_ns(30_000), 3_000);
        assert_eq!(SpinLimit::Nanos(5_000).to_ns(30_000), 5_000);
        assert_eq!(SpinLimit::Iterations(u64::MAX).to_ns(u32::MAX), u64::MAX / 1000);
    }

    #[test]
    fn other_settings() {
        assert_eq!(parse_max_spinners(b"1024"), Ok(1024));
        assert!(parse_max_spinners(b"1025").is_err());
        assert_eq!(parse_handoff_after(b"0"), Ok(0));
        assert!(parse_handoff_after(b"often").is_err());
        assert_eq!(parse_handoff_wait(b"10s"), Ok(10_000_000_000));
        assert!(parse_handoff_wait(b"11s").is_err());
        assert_eq!(parse_fair(b"1"), Ok(true));
        assert!(parse_fair(b"yes").is_err());
        assert_eq!(parse_trace(b"spinmutex=trace"), Ok("spinmutex=trace"));
        assert!(parse_trace(b"").is_err() && parse_trace(b"\xff").is_err());
        assert_eq!(parse_trace_format(b"json"), Ok(TraceFormat::Json));
        assert_eq!(parse_stats(b""), Ok(Stats::Off));
        assert_eq!(parse_stats(b"1"), Ok(Stats::Text));
        assert!(parse_stats(b"yes").is_err());
        assert_eq!(parse_stats_top(b"100"), Ok(100));
        assert!(parse_stats_top(b"0").is_err());
        assert_eq!(parse_stats_slots(b"1048576"), Ok(1 << 20));
        assert!(parse_stats_slots(b"1048577").is_err());
        assert!(parse_stats_file(b"").is_err());
        assert_eq!(check(b"SPINMUTEX_SPIN_LIMIT", b"10x"), Some(Err(Invalid(&SPIN_LIMIT))));
        assert_eq!(check(b"SPINMUTEX_FAIR", b"1"), Some(Ok(())));
        assert_eq!(check(b"SPINMUTEX_LIB", b"/x"), None);
        assert_eq!(check(b"HOME", b"/x"), None);
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance(b"", b""), 0);
        assert_eq!(edit_distance(b"abc", b""), 3);
        assert_eq!(edit_distance(b"", b"abc"), 3);
        assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
        assert_eq!(edit_distance(b"flaw", b"lawn"), 2);
        assert_eq!(edit_distance(b"SPINMUTEX_STRATEGI", b"SPINMUTEX_STRATEGY"), 1);
        assert_eq!(edit_distance(b"spinmutex_fair", b"SPINMUTEX_FAIR"), 0);
        // Symmetric, and bounded by the longer length.
        assert_eq!(edit_distance(b"SPINMUTEX_STAT", b"SPINMUTEX_STATS_TOP"), 5);
        assert_eq!(edit_distance(b"SPINMUTEX_STATS_TOP", b"SPINMUTEX_STAT"), 5);
        // Longer than EDIT_MAX: only the first EDIT_MAX bytes count, and nothing panics.
        let long = [b'x'; 300];
        assert_eq!(edit_distance(&long, b""), EDIT_MAX);
        assert_eq!(edit_distance(&long, &long[..EDIT_MAX]), 0);
    }

    #[test]
    fn unknown_names_and_their_nearest() {
        assert_eq!(closest(b"SPINMUTEX_STRATEGI"), "SPINMUTEX_STRATEGY");
        assert_eq!(closest(b"SPINMUTEX_SPINLIMIT"), "SPINMUTEX_SPIN_LIMIT");
        assert_eq!(closest(b"SPINMUTEX_STAT"), "SPINMUTEX_STATS");
        assert_eq!(closest(b"SPINMUTEX_LIBRARY"), "SPINMUTEX_LIB");
        assert_eq!(closest(b"SPINMUTEX_TEST_REQUIRE_ALL"), "SPINMUTEX_TESTS_REQUIRE_ALL");
        assert_eq!(unknown_name(b"SPINMUTEX_STRATEGI=glibc"), Some(&b"SPINMUTEX_STRATEGI"[..]));
        assert_eq!(unknown_name(b"SPINMUTEX_X"), Some(&b"SPINMUTEX_X"[..]));
        assert_eq!(unknown_name(b"SPINMUTEX_STRATEGY=glibc"), None);
        assert_eq!(unknown_name(b"SPINMUTEX_LIB=/x"), None);
        assert_eq!(unknown_name(b"SPINMUTEX_HANDSHAKE=fd=3"), None);
        assert_eq!(unknown_name(b"SPINMUTEX_TESTS_REQUIRE_ALL=1"), None);
        assert_eq!(unknown_name(b"HOME=/root"), None);
        assert_eq!(unknown_name(b"spinmutex_strategy=glibc"), None, "names are case-sensitive");
        for s in SETTINGS {
            assert!(is_known(s.name.as_bytes()) && s.name.starts_with(PREFIX), "{}", s.name);
            assert_eq!(closest(s.name.as_bytes()), s.name);
        }
        for name in OTHER_NAMES {
            assert!(name.starts_with(PREFIX) && name.len() <= EDIT_MAX, "{name}");
            assert_eq!(closest(name.as_bytes()), *name);
        }
    }

    #[test]
    fn stats_signals() {
        for (text, want) in [
            ("0", 0),
            ("USR1", 10),
            ("SIGUSR1", 10),
            ("10", 10),
            ("USR2", 12),
            ("SIGUSR2", 12),
            ("12", 12),
            ("34", 34),
            ("64", 64),
            ("RTMIN", 34),
            ("RTMIN+3", 37),
            ("SIGRTMIN+30", 64),
            ("RTMAX", 64),
            ("RTMAX-2", 62),
            ("SIGRTMAX-30", 34),
        ] {
            assert_eq!(parse_stats_signal(text.as_bytes()), Ok(want), "{text}");
        }
        for bad in ["2", "9", "11", "15", "33", "65", "INT", "RTMIN+31", "RTMAX-31", "RTMIN-1", "RTMAX+1", ""]
        {
            assert_eq!(parse_stats_signal(bad.as_bytes()), Err(Invalid(&STATS_SIGNAL)), "{bad}");
        }
    }

    #[test]
    fn handshake_round_trip() {
        let h = Handshake { fd: 7, dev: 13, ino: 4_000_000_000 };
        let text = h.to_string();
        assert_eq!(text, "fd=7,dev=13,ino=4000000000");
        assert_eq!(parse_handshake(text.as_bytes()), Ok(h));
        for bad in [
            "",
            "fd=7",
            "fd=7,dev=1,ino=2,x=3",
            "fd=x,dev=1,ino=2",
            "dev=1,fd=7,ino=2",
            "fd=9999999999,dev=1,ino=2",
        ] {
            assert!(parse_handshake(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn load_report_round_trip() {
        let r = LoadReport {
            pid: 42,
            version: "0.1.0",
            strategy: Strategy::Spin,
            spin_limit_ns: 8_000,
            pause_ps: 30_000,
            max_spinners: 0,
            handoff_after: 2,
            handoff_wait_ns: 1_000_000,
            fair: true,
            rwlocks: false,
            stats: Stats::Json,
            trace: false,
            exe: "/opt/my app/bin",
        };
        let line = format!("{r}\n");
        assert!(line.starts_with("spinmutex-loaded pid=42 version=0.1.0 strategy=spin "), "{line}");
        assert_eq!(LoadReport::parse(&line), Some(r));
        assert_eq!(LoadReport::parse("spinmutex-loaded pid=1"), None);
        assert_eq!(LoadReport::parse(&line.replace("strategy=spin", "strategy=spinn")), None);
        assert_eq!(LoadReport::parse(&line.replace("fair=1", "fair=1 extra=2")), None);
        assert_eq!(LoadReport::parse(&line.replace("rwlocks=0", "rwlocks=2")), None);
    }

    #[test]
    fn invalid_names_the_accepted_values() {
        let e = parse_fair(b"2").unwrap_err();
        assert_eq!(e.to_string(), "not valid for SPINMUTEX_FAIR (accepted: 0 or 1)");
        let e = parse_rwlocks(b"off").unwrap_err();
        assert_eq!(
            e.to_string(),
            "not valid for SPINMUTEX_RWLOCKS (accepted: 1 (served by the strategy) or 0 (forwarded to glibc))"
        );
        assert_eq!((parse_rwlocks(b"0"), parse_rwlocks(b"1")), (Ok(false), Ok(true)));
    }
}
