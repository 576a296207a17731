//! Settings read from the environment when the library loads (or on first use, if a
//! mutex is locked before the library's constructor runs).
//!
//! Reading them allocates nothing and takes no lock: the values are parsed from
//! `getenv`'s strings and published in atomics, so the lock path pays one relaxed load.
//! A bad value produces one line on standard error and the default is used.

use core::ffi::CStr;
use core::fmt::{self, Write};
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8};

pub use spinmutex_names::Strategy;
use spinmutex_names::{self as names, Invalid, Setting};

/// Until the constructor measures it: a typical `pause` on current x86 parts.
const DEFAULT_PAUSE_PS: u32 = 30_000;

static STRATEGY: AtomicU8 = AtomicU8::new(0);
static SPIN_LIMIT_NS: AtomicU64 = AtomicU64::new(names::DEFAULT_SPIN_LIMIT.to_ns(DEFAULT_PAUSE_PS));
static SPIN_LIMIT_ITERS: AtomicU32 = AtomicU32::new(0);
static MAX_SPINNERS: AtomicU32 = AtomicU32::new(0);
static HANDOFF_AFTER: AtomicU32 = AtomicU32::new(names::DEFAULT_HANDOFF_AFTER);
static HANDOFF_WAIT_NS: AtomicU64 = AtomicU64::new(names::DEFAULT_HANDOFF_WAIT_NS);
static FAIR: AtomicBool = AtomicBool::new(false);
static PAUSE_PS: AtomicU32 = AtomicU32::new(DEFAULT_PAUSE_PS);
/// Set by the one thread that reads the environment with warnings on.
static WARNED: AtomicBool = AtomicBool::new(false);
/// A lock-watching tool is present: everything is forwarded, nothing observed.
static STEPPED_ASIDE: AtomicBool = AtomicBool::new(false);

/// The strategy in force; reads the environment the first time.
#[inline]
pub fn strategy() -> Strategy {
    match Strategy::from_u8(STRATEGY.load(Acquire)) {
        Some(s) => s,
        None => load(Reading::FirstUse),
    }
}

/// What the uncontended paths of `exports` need to know, in one word: 0 when a plain
/// mutex may take the fast path (a strategy that serves it with glibc's word protocol,
/// statistics off), else one of the bits below; rwlocks test their own subset of them
/// ([`rwlock_fast_path`]). Until the environment is read it is
/// [`NOT_LOADED`], so the first call takes the general path, which reads it.
static FAST_PATH_OFF: AtomicU32 = AtomicU32::new(NOT_LOADED);
pub const NOT_LOADED: u32 = 1 << 31;
/// The strategy does not serve mutexes with glibc's word (`glibc`, `kernel`).
const OTHER_STRATEGY: u32 = 1 << 30;
/// Statistics watch every acquisition.
const WATCHED: u32 = 1 << 29;
/// The strategy serves nothing: every call goes to glibc's function (`glibc`).
/// `OTHER_STRATEGY` is set with it, so the mutex check needs no change for it.
const SERVES_NOTHING: u32 = 1 << 28;
/// `auto` is measuring a lock class's throughput: every mutex acquisition goes through
/// the general path, which counts it (auto/experiment.rs). Rwlocks are not counted.
pub const MEASURING: u32 = 1 << 27;

/// The same for rwlock calls, in a word of their own: 0 when a call may take the fast
/// path, else `NOT_LOADED`, `WATCHED`, or `SERVES_NOTHING` when rwlocks go to glibc (the
/// `glibc` strategy, or `SPINMUTEX_RWLOCKS=0`). `kernel` serves rwlocks with this
/// library's own protocol, so `OTHER_STRATEGY` is never set here.
static RWLOCK_PATH_OFF: AtomicU32 = AtomicU32::new(NOT_LOADED);

/// The bits that send a plain mutex to the general path (see `FAST_PATH_OFF`).
#[inline(always)]
pub fn fast_path_off() -> u32 {
    FAST_PATH_OFF.load(Relaxed)
}

/// True when an rwlock call may take the fast path: the environment has been read, the
/// strategy serves rwlocks, statistics are off. One test of one word.
#[inline(always)]
pub fn rwlock_fast_path() -> bool {
    RWLOCK_PATH_OFF.load(Relaxed) == 0
}

/// True when the environment has been read and rwlocks go to glibc's functions (the
/// `glibc` strategy, or `SPINMUTEX_RWLOCKS=0`). False until the environment is read.
#[inline(always)]
pub fn rwlocks_forwarded() -> bool {
    RWLOCK_PATH_OFF.load(Relaxed) & (NOT_LOADED | SERVES_NOTHING) == SERVES_NOTHING
}

/// Whether rwlocks are served, reading the environment the first time.
pub fn rwlocks_served() -> bool {
    strategy();
    RWLOCK_PATH_OFF.load(Acquire) & SERVES_NOTHING == 0
}

/// True when the environment has been read and the strategy serves nothing (`glibc`):
/// every lock goes to glibc's function. False until the environment is read, so a
/// caller that then asks [`row`] reads it.
#[inline(always)]
pub fn serves_nothing() -> bool {
    FAST_PATH_OFF.load(Relaxed) & (NOT_LOADED | SERVES_NOTHING) == SERVES_NOTHING
}

/// Statistics are on: every acquisition goes through the general path.
pub fn watch_every_acquisition() {
    FAST_PATH_OFF.fetch_or(WATCHED, Relaxed);
    RWLOCK_PATH_OFF.fetch_or(WATCHED, Relaxed);
}

/// Starts or ends an `auto` experiment (see [`MEASURING`]).
pub fn set_measuring(on: bool) {
    if on {
        FAST_PATH_OFF.fetch_or(MEASURING, Relaxed);
    } else {
        FAST_PATH_OFF.fetch_and(!MEASURING, Relaxed);
    }
}

/// What the strategy in force does.
#[inline]
pub fn row() -> &'static crate::strategy::Row {
    crate::strategy::row(strategy())
}

/// The spin limit as set, in nanoseconds (whatever the strategy).
pub fn spin_limit_ns() -> u64 {
    SPIN_LIMIT_NS.load(Relaxed)
}

/// Most `pause` iterations one acquisition may spin (0 under `futex`).
pub fn spin_limit() -> u32 {
    SPIN_LIMIT_ITERS.load(Relaxed)
}

/// Most threads that spin on one mutex at once; 0: no cap.
pub fn max_spinners() -> u32 {
    MAX_SPINNERS.load(Relaxed)
}

/// Lost wake-ups after which a sleeper asks for the lock to be handed to it (0: never).
pub fn handoff_after() -> u32 {
    HANDOFF_AFTER.load(Relaxed)
}

/// Time asleep after which a sleeper asks for a handoff (0: no time bound).
pub fn handoff_wait_ns() -> u64 {
    HANDOFF_WAIT_NS.load(Relaxed)
}

/// A tool that watches locks (helgrind, drd, ThreadSanitizer) is present.
pub fn stepped_aside() -> bool {
    STEPPED_ASIDE.load(Relaxed)
}

/// Never spin while another thread sleeps on the mutex (`SPINMUTEX_FAIR=1`).
pub fn fair() -> bool {
    FAIR.load(Relaxed)
}

/// Measured cost of one `pause`, in picoseconds.
pub fn pause_ps() -> u32 {
    PAUSE_PS.load(Relaxed)
}

/// Measures `pause`, then reads the environment (so a spin limit given as a duration
/// is converted with the measured cost). Called by the constructor.
pub fn init() {
    calibrate_pause();
    load(Reading::Constructor);
    note_secure_execution();
}

/// The settings that name a file or a descriptor for the library to write to. In a
/// secure-execution process (setuid, setgid, raised capabilities) they come from a
/// less privileged user, who must not make the program write where only it may, so
/// they are ignored there, as glibc ignores `MALLOC_TRACE` and `LD_DEBUG_OUTPUT`.
const FILE_SETTINGS: [&Setting; 3] = [&names::TRACE_FILE, &names::STATS_FILE, &names::HANDSHAKE];

/// The value of a setting that names a file (one of `FILE_SETTINGS`): None when unset,
/// and in a secure-execution process.
pub fn file_setting(setting: &'static Setting) -> Option<&'static [u8]> {
    debug_assert!(FILE_SETTINGS.iter().any(|s| s.name == setting.name));
    env(setting.cname).filter(|_| !crate::sys::secure_execution())
}

/// In a secure-execution process, one line naming the file settings that are set and
/// ignored (nothing when none is set).
fn note_secure_execution() {
    if !crate::sys::secure_execution() {
        return;
    }
    let mut line: LineBuf = LineBuf::new();
    let mut set = FILE_SETTINGS.iter().filter(|s| env(s.cname).is_some()).peekable();
    if set.peek().is_none() {
        return;
    }
    line.push(b"spinmutex: secure execution (a setuid, setgid or privileged program): ignoring ");
    for (i, setting) in set.enumerate() {
        line.push(if i > 0 { b", " } else { b"" }).push(setting.name.as_bytes());
    }
    line.push(b"; reports and traces go to standard error\n");
    crate::sys::write_stderr(line.end_line());
}

/// Who reads the environment.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// A lock call before the constructor ran.
    FirstUse,
    /// The constructor: it also looks for tools that watch locks (which takes the
    /// dynamic loader's locks, so it is not done inside an arbitrary lock call).
    Constructor,
}

/// Set while a thread reads the environment: a lock call made meanwhile (the reading
/// may allocate, and the allocator may lock) gets the default strategy at once rather
/// than reading again from inside the reading.
static LOADING: AtomicBool = AtomicBool::new(false);

extern "C" {
    /// The environment; still null while `.preinit_array` functions run.
    static environ: *const *const core::ffi::c_char;
}

#[cold]
fn load(reading: Reading) -> Strategy {
    if LOADING.swap(true, Acquire) {
        return names::DEFAULT_STRATEGY;
    }
    let strategy = read_environment(reading);
    LOADING.store(false, Release);
    strategy
}

fn read_environment(reading: Reading) -> Strategy {
    // A mutex locked from `.preinit_array` sees no environment yet: that reading is
    // provisional (defaults, no warnings), and the constructor reads again.
    // SAFETY: reads the pointer glibc keeps; a torn read is impossible for a pointer.
    let have_environment = unsafe { !core::ptr::addr_of!(environ).read_volatile().is_null() };
    let warn = have_environment && !WARNED.swap(true, Relaxed);
    let strategy = read(&names::STRATEGY, names::parse_strategy, names::DEFAULT_STRATEGY, warn);
    // The spin limit is kept in nanoseconds; an iteration count is converted with the
    // pause cost measured at load, so both spellings mean the same thing later.
    let limit_ns =
        read(&names::SPIN_LIMIT, names::parse_spin_limit, names::DEFAULT_SPIN_LIMIT, warn).to_ns(pause_ps());
    let spinners = read(&names::MAX_SPINNERS, names::parse_max_spinners, names::DEFAULT_MAX_SPINNERS, warn);
    let handoff_after =
        read(&names::HANDOFF_AFTER, names::parse_handoff_after, names::DEFAULT_HANDOFF_AFTER, warn);
    let handoff_wait =
        read(&names::HANDOFF_WAIT, names::parse_handoff_wait, names::DEFAULT_HANDOFF_WAIT_NS, warn);
    let fair = read(&names::FAIR, names::parse_fair, false, warn);
    let rwlocks = read(&names::RWLOCKS, names::parse_rwlocks, true, warn);
    if warn {
        warn_unknown_names();
    }

    // Under a tool that watches locks through glibc's functions, serving them would hide
    // them from it (see `tools`).
    let watcher = if reading == Reading::Constructor { crate::tools::lock_watcher() } else { None };
    let strategy = match watcher {
        Some(tool) => {
            // Only the constructor looks, once per process.
            note(format_args!(
                "{tool} watches this program's locks, so libspinmutex steps aside: \
                 every lock call goes on to it, statistics and tracing are off"
            ));
            Strategy::Glibc
        }
        None => strategy,
    };
    STEPPED_ASIDE.store(watcher.is_some(), Relaxed);

    SPIN_LIMIT_NS.store(limit_ns, Relaxed);
    publish_spin_limit(strategy);
    MAX_SPINNERS.store(spinners, Relaxed);
    HANDOFF_AFTER.store(handoff_after, Relaxed);
    HANDOFF_WAIT_NS.store(handoff_wait, Relaxed);
    FAIR.store(fair, Relaxed);
    STRATEGY.store(strategy as u8, Release);
    let row = crate::strategy::row(strategy);
    let other = if row.serves && !row.priority_inheritance { 0 } else { OTHER_STRATEGY };
    let forwarded = if row.serves { 0 } else { SERVES_NOTHING };
    let watched = FAST_PATH_OFF.load(Relaxed) & WATCHED;
    FAST_PATH_OFF.store(other | forwarded | watched, Release);
    let rwlocks_forwarded = if row.serves && rwlocks { 0 } else { SERVES_NOTHING };
    RWLOCK_PATH_OFF.store(rwlocks_forwarded | watched, Release);
    strategy
}

fn publish_spin_limit(strategy: Strategy) {
    let iters = match crate::strategy::row(strategy).spins {
        true => SPIN_LIMIT_NS.load(Relaxed) * 1000 / u64::from(pause_ps().max(1)),
        false => 0,
    };
    SPIN_LIMIT_ITERS.store(iters.min(u64::from(u32::MAX)) as u32, Relaxed);
}

/// Times a few hundred `pause` instructions; keeps the fastest of three tries, so a
/// preemption during one try does not inflate the figure.
fn calibrate_pause() {
    const ROUNDS: u64 = 256;
    let mut best = u64::MAX;
    for _ in 0..3 {
        let start = crate::sys::now_ns();
        for _ in 0..ROUNDS {
            core::hint::spin_loop();
        }
        best = best.min(crate::sys::now_ns() - start);
    }
    let ps = (best * 1000 / ROUNDS).clamp(1_000, 500_000);
    PAUSE_PS.store(ps as u32, Relaxed);
}

/// The value of an environment variable, if set. Never allocates.
pub fn env(name: &CStr) -> Option<&'static [u8]> {
    // SAFETY: getenv returns null or a NUL-terminated string owned by the environment,
    // which the program does not free while it runs.
    unsafe {
        let value = libc::getenv(name.as_ptr());
        (!value.is_null()).then(|| CStr::from_ptr(value).to_bytes())
    }
}

/// The value of `setting` parsed by `parse`; `default` when it is unset, and when it is
/// not valid, after one line on standard error if `warn`.
pub fn read<T>(
    setting: &'static Setting,
    parse: impl Fn(&'static [u8]) -> Result<T, Invalid>,
    default: T,
    warn: bool,
) -> T {
    match env(setting.cname) {
        None => default,
        Some(value) => parse(value).unwrap_or_else(|invalid| {
            if warn {
                warn_invalid(invalid, value);
            }
            default
        }),
    }
}

/// A misspelt setting would otherwise be ignored without a word (a baseline quietly
/// run with the default strategy): one line names the first `SPINMUTEX_*` variable of
/// the environment that is not known, with the known name nearest to it, and how many
/// more there are. Reads `environ` directly: no allocation, no lock.
fn warn_unknown_names() {
    let mut first: Option<&[u8]> = None;
    let mut more = 0u64;
    // SAFETY: the environment is a null-terminated array of NUL-terminated strings that
    // the program does not free while it runs; it is read once, here, at load.
    unsafe {
        let mut entry = core::ptr::addr_of!(environ).read_volatile();
        while !entry.is_null() && !(*entry).is_null() {
            if let Some(name) = names::unknown_name(CStr::from_ptr(*entry).to_bytes()) {
                match first {
                    None => first = Some(name),
                    Some(_) => more += 1,
                }
            }
            entry = entry.add(1);
        }
    }
    let Some(name) = first else { return };
    let mut line: LineBuf = LineBuf::new();
    line.push(b"spinmutex: ");
    // The name as written, but a terminal's control bytes (or broken UTF-8) shown as `?`.
    for &b in name.iter().take(Shown::MAX) {
        line.push(if b.is_ascii_graphic() { core::slice::from_ref(&b) } else { b"?" });
    }
    line.push(b" is not a setting of this library (did you mean ");
    line.push(names::closest(name).as_bytes()).push(b"?); ignored");
    if more > 0 {
        line.push(b", and ").push_u64(more).push(b" more unknown SPINMUTEX_* name(s)");
    }
    line.push(b"\n");
    crate::sys::write_stderr(line.end_line());
}

/// One line on standard error: `spinmutex: ` and `what`.
pub fn note(what: fmt::Arguments<'_>) {
    let mut line: LineBuf = LineBuf::new();
    let _ = writeln!(line, "spinmutex: {what}");
    crate::sys::write_stderr(line.end_line());
}

/// The one line a bad setting earns: names the variable, the value and what is accepted.
pub fn warn_invalid(Invalid(setting): Invalid, value: &[u8]) {
    note(format_args!(
        "{}={} is not valid (accepted: {}); using the default, {}",
        setting.name,
        Shown(value),
        setting.accepted,
        setting.default
    ));
}

/// A setting's value as a line on standard error shows it: quoted and escaped as Rust's
/// `{:?}` does, and, when longer than [`Shown::MAX`] bytes, cut (at a character) with an
/// ellipsis and the full length after it, so that the line stays whole.
pub struct Shown<'a>(pub &'a [u8]);

impl Shown<'_> {
    pub const MAX: usize = 160;
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(text) = core::str::from_utf8(self.0) else { return f.write_str("<not UTF-8>") };
        if text.len() <= Self::MAX {
            return write!(f, "{text:?}");
        }
        let cut = (0..=Self::MAX).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        write!(f, "{:?}… ({} bytes)", &text[..cut], text.len())
    }
}

/// A fixed-size text buffer of `N` bytes: formatting without allocating. Longer text is
/// cut.
pub struct LineBuf<const N: usize = 512> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> LineBuf<N> {
    pub const fn new() -> Self {
        LineBuf { buf: [0; N], len: 0 }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The text as one whole line: if it was cut before its newline, its last bytes give
    /// way to `…` and the newline.
    pub fn end_line(&mut self) -> &[u8] {
        const CUT: &[u8] = "…\n".as_bytes();
        if self.as_bytes().last() != Some(&b'\n') {
            let mut keep = self.len.min(N.saturating_sub(CUT.len()));
            // Cut at a character boundary: never in the middle of a UTF-8 sequence.
            while keep > 0 && self.buf[keep] & 0xc0 == 0x80 {
                keep -= 1;
            }
            self.len = keep;
            self.push(CUT);
        }
        self.as_bytes()
    }

    /// Appends bytes (cut at the end of the buffer).
    pub fn push(&mut self, bytes: &[u8]) -> &mut Self {
        let n = bytes.len().min(N - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
        self
    }

    /// Appends a number in decimal, without `core::fmt`.
    pub fn push_u64(&mut self, value: u64) -> &mut Self {
        self.push_digits(value, 10, b"")
    }

    pub fn push_i64(&mut self, value: i64) -> &mut Self {
        if value < 0 {
            self.push(b"-");
        }
        self.push_u64(value.unsigned_abs())
    }

    /// Appends a number in hexadecimal with a `0x` prefix, without `core::fmt`.
    pub fn push_hex(&mut self, value: u64) -> &mut Self {
        self.push_digits(value, 16, b"0x")
    }

    #[inline(never)]
    fn push_digits(&mut self, mut value: u64, base: u64, prefix: &[u8]) -> &mut Self {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b"0123456789abcdef"[(value % base) as usize];
            value /= base;
            if value == 0 {
                break;
            }
        }
        self.push(prefix).push(&digits[at..])
    }
}

impl<const N: usize> Write for LineBuf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_buffer_formats_numbers_by_hand() {
        let mut line: LineBuf<96> = LineBuf::new();
        line.push_u64(0).push(b" ").push_u64(u64::MAX).push(b" ").push_i64(-42).push(b" ");
        line.push_i64(i64::MIN).push(b" ").push_hex(0x7f12_3456_789a).push(b" ").push_hex(0);
        assert_eq!(line.as_bytes(), b"0 18446744073709551615 -42 -9223372036854775808 0x7f123456789a 0x0");
    }

    #[test]
    fn a_cut_line_still_ends_with_a_newline() {
        let mut line: LineBuf<16> = LineBuf::new();
        let _ = writeln!(line, "0123456789abcdéfghij");
        assert_eq!(line.end_line(), "0123456789ab…\n".as_bytes());
        let mut line: LineBuf<16> = LineBuf::new();
        let _ = writeln!(line, "0123456789aéxxxxxx");
        assert_eq!(line.end_line(), "0123456789a…\n".as_bytes());
        let mut short: LineBuf<16> = LineBuf::new();
        let _ = writeln!(short, "whole");
        assert_eq!(short.end_line(), b"whole\n");
    }

    #[test]
    fn long_values_are_shown_shortened() {
        let long = "x".repeat(1000);
        let shown = format!("{}", Shown(long.as_bytes()));
        assert_eq!(shown, format!("\"{}\"… (1000 bytes)", "x".repeat(Shown::MAX)));
        assert_eq!(format!("{}", Shown(b"a\"b")), "\"a\\\"b\"");
    }

    #[test]
    fn line_buffer_cuts_long_text() {
        let mut line: LineBuf = LineBuf::new();
        for _ in 0..100 {
            let _ = write!(line, "0123456789");
        }
        assert_eq!(line.as_bytes().len(), 512);
    }
}
