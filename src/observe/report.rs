//! The statistics report, in the columns mutrace users know: printed at exit, and on
//! demand when the process receives SPINMUTEX_STATS_SIGNAL (SIGUSR2 by default).
//!
//! Formatting goes through a buffer on the stack straight to the file descriptor, so the
//! on-demand report, which runs inside a signal handler, allocates nothing and takes no
//! lock; it shows call sites as addresses. The exit report also symbolizes them.

use core::fmt::{self, Write};
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize};
use std::ffi::CString;
use std::sync::OnceLock;

use super::table::{self, Slot, FORWARDED, SERVED, TOTALS};
use spinmutex_names::{self as names, Invalid, Stats};

use crate::config;
use crate::mutex::kind;

/// The most rows a report can list (SPINMUTEX_STATS_TOP's upper bound).
const MAX_TOP: usize = 100;

static JSON: AtomicBool = AtomicBool::new(false);
static TOP: AtomicUsize = AtomicUsize::new(names::DEFAULT_STATS_TOP);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// SPINMUTEX_STATS_FILE.
static PATH: OnceLock<CString> = OnceLock::new();

/// Reads the report settings and installs the signal handler.
pub fn init() {
    let stats = config::read(&names::STATS, names::parse_stats, Stats::Off, false);
    JSON.store(stats == Stats::Json, Relaxed);
    TOP.store(
        config::read(&names::STATS_TOP, names::parse_stats_top, names::DEFAULT_STATS_TOP, true),
        Relaxed,
    );
    if let Some(path) = config::env(names::STATS_FILE.cname) {
        match names::parse_stats_file(path).ok().and_then(|p| CString::new(p).ok()) {
            Some(p) => {
                let _ = PATH.set(p);
            }
            None => config::warn_invalid(Invalid(&names::STATS_FILE), path),
        }
    }
    let signal =
        config::read(&names::STATS_SIGNAL, names::parse_stats_signal, names::DEFAULT_STATS_SIGNAL, true);
    if signal != 0 {
        install_handler(signal);
    }
}

/// Takes the signal only if the program left it at its default action.
fn install_handler(signal: i32) {
    // SAFETY: sigaction with a zeroed struct and our handler; querying first so that a
    // handler the program installed is never replaced.
    unsafe {
        let mut old: libc::sigaction = core::mem::zeroed();
        if libc::sigaction(signal, core::ptr::null(), &mut old) != 0 || old.sa_sigaction != libc::SIG_DFL {
            return;
        }
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(i32) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signal, &action, core::ptr::null_mut()) == 0 {
            SIGNAL.store(signal, Relaxed);
        }
    }
}

extern "C" fn on_signal(_signal: i32) {
    // SAFETY: errno is saved and restored around the report's system calls.
    let saved = unsafe { *libc::__errno_location() };
    print(false);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// Writes the report; `symbolize` resolves call sites to names (allocates: exit only).
pub fn print(symbolize: bool) {
    let fd = match PATH.get() {
        Some(path) => match super::trace::open_append(path) {
            Some(fd) => fd,
            None => return,
        },
        None => 2,
    };
    let mut out = FdWriter { fd, buf: [0; 4096], len: 0 };
    let top = top_mutexes();
    let _ =
        if JSON.load(Relaxed) { json(&mut out, &top, symbolize) } else { text(&mut out, &top, symbolize) };
    out.flush();
    if fd != 2 {
        // SAFETY: our own descriptor.
        unsafe { libc::close(fd) };
    }
}

/// The most contended mutexes, most contended first (ties: longer total wait, then more
/// acquisitions), as indices into the table.
struct Top {
    rows: [usize; MAX_TOP],
    len: usize,
    used: usize,
}

fn rank(slot: &Slot) -> (u64, u64, u64) {
    (slot.contended.load(Relaxed), slot.wait_total_ns.load(Relaxed), slot.acquisitions.load(Relaxed))
}

fn top_mutexes() -> Top {
    let slots = table::slots();
    let limit = TOP.load(Relaxed);
    let mut top = Top { rows: [0; MAX_TOP], len: 0, used: 0 };
    for (i, slot) in slots.iter().enumerate() {
        if slot.key.load(Relaxed) == 0 || slot.acquisitions.load(Relaxed) == 0 {
            continue;
        }
        top.used += 1;
        let key = rank(slot);
        let mut at = top.len;
        while at > 0 && rank(&slots[top.rows[at - 1]]) < key {
            at -= 1;
        }
        if at >= limit {
            continue;
        }
        let end = top.len.min(limit - 1);
        top.rows.copy_within(at..end, at + 1);
        top.rows[at] = i;
        top.len = (top.len + 1).min(limit);
    }
    top
}

fn type_name(k: i32) -> &'static str {
    if k & kind::ROBUST != 0 {
        return "robust";
    }
    if k & kind::PRIO_INHERIT != 0 {
        return "prio-inherit";
    }
    if k & kind::PRIO_PROTECT != 0 {
        return "prio-protect";
    }
    match (k & kind::TYPE_MASK, k & kind::PSHARED != 0) {
        (kind::RECURSIVE, false) => "recursive",
        (kind::ERRORCHECK, false) => "errorcheck",
        (kind::ADAPTIVE, false) => "adaptive",
        (_, false) => "normal",
        (kind::RECURSIVE, true) => "recursive,pshared",
        (kind::ERRORCHECK, true) => "errorcheck,pshared",
        (kind::ADAPTIVE, true) => "adaptive,pshared",
        (_, true) => "normal,pshared",
    }
}

/// Milliseconds with three decimals, from nanoseconds.
struct Ms(u64);

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = {
            let mut b = config::LineBuf::new();
            let _ = write!(b, "{}.{:03}", self.0 / 1_000_000, self.0 / 1000 % 1000);
            b
        };
        f.pad(text.as_str())
    }
}

fn avg(total: u64, n: u64) -> u64 {
    total.checked_div(n).unwrap_or(0)
}

fn text(out: &mut FdWriter, top: &Top, symbolize: bool) -> fmt::Result {
    let slots = table::slots();
    let strategy = config::strategy().name();
    let contended = slots.iter().filter(|s| s.contended.load(Relaxed) > 0).count();
    writeln!(
        out,
        "spinmutex: lock statistics for pid {}, strategy {strategy}: {} mutexes used, {contended} contended; top {} by contention",
        crate::thread::pid(),
        top.used,
        top.len
    )?;
    writeln!(
        out,
        "{:>4} {:>14} {:>10} {:>9} {:>9} {:>12} {:>9} {:>9} {:>12} {:>9} {:>9}  {:<10} call site",
        "#",
        "mutex",
        "locked",
        "changed",
        "cont.",
        "wait tot ms",
        "avg ms",
        "max ms",
        "hold tot ms",
        "avg ms",
        "max ms",
        "type"
    )?;
    let mut symbolizer = symbolizer(symbolize, top);
    for (rank, &i) in top.rows[..top.len].iter().enumerate() {
        let s = &slots[i];
        let locked = s.acquisitions.load(Relaxed);
        let cont = s.contended.load(Relaxed);
        let (wait, hold) = (s.wait_total_ns.load(Relaxed), s.hold_total_ns.load(Relaxed));
        write!(
            out,
            "{:>4} {:>#14x} {:>10} {:>9} {:>9} {:>12} {:>9} {:>9} {:>12} {:>9} {:>9}  {:<10} ",
            rank + 1,
            s.key.load(Relaxed),
            locked,
            s.owner_changes.load(Relaxed),
            cont,
            Ms(wait),
            Ms(avg(wait, cont)),
            Ms(s.wait_max_ns.load(Relaxed)),
            Ms(hold),
            Ms(avg(hold, locked)),
            Ms(s.hold_max_ns.load(Relaxed)),
            type_name(s.kind.load(Relaxed)),
        )?;
        let site = s.callsite[0].load(Relaxed);
        match (&mut symbolizer, site) {
            (_, 0) => writeln!(out, "-")?,
            (Some(sym), _) => writeln!(out, "{}", sym.describe(call_of(site)))?,
            (None, _) => writeln!(out, "{site:#x}")?,
        }
    }
    for (bucket, name) in [(SERVED, strategy), (FORWARDED, "glibc, forwarded")] {
        let t = &TOTALS[bucket];
        if t.acquisitions.load(Relaxed) == 0 {
            continue;
        }
        writeln!(
            out,
            "totals ({name}): locked {}, changed {}, contended {}, spins {}, sleeps {}, handoffs {}, timeouts {}, wait {} ms (max {}), hold {} ms (max {})",
            t.acquisitions.load(Relaxed),
            t.owner_changes.load(Relaxed),
            t.contended.load(Relaxed),
            t.spins.load(Relaxed),
            t.sleeps.load(Relaxed),
            t.handoffs.load(Relaxed),
            t.timeouts.load(Relaxed),
            Ms(t.wait_total_ns.load(Relaxed)),
            Ms(t.wait_max_ns.load(Relaxed)),
            Ms(t.hold_total_ns.load(Relaxed)),
            Ms(t.hold_max_ns.load(Relaxed)),
        )?;
    }
    let overflow = table::OVERFLOW.load(Relaxed);
    if overflow > 0 {
        writeln!(
            out,
            "side table full: {overflow} events not attributed to a mutex (counted in the totals); raise SPINMUTEX_STATS_SLOTS (now {})",
            slots.len()
        )?;
    }
    Ok(())
}

fn json(out: &mut FdWriter, top: &Top, symbolize: bool) -> fmt::Result {
    let slots = table::slots();
    let strategy = config::strategy().name();
    write!(
        out,
        "{{\"pid\":{},\"strategy\":\"{strategy}\",\"slots\":{},\"mutexes_used\":{},\"overflow\":{},\"mutexes\":[",
        crate::thread::pid(),
        slots.len(),
        top.used,
        table::OVERFLOW.load(Relaxed)
    )?;
    let mut symbolizer = symbolizer(symbolize, top);
    for (rank, &i) in top.rows[..top.len].iter().enumerate() {
        let s = &slots[i];
        if rank > 0 {
            out.write_str(",")?;
        }
        write!(
            out,
            "{{\"rank\":{},\"mutex\":\"{:#x}\",\"type\":\"{}\",",
            rank + 1,
            s.key.load(Relaxed),
            type_name(s.kind.load(Relaxed))
        )?;
        counters(out, s)?;
        out.write_str(",\"frames\":[")?;
        let frames = s.callsite.iter().map(|f| f.load(Relaxed)).take_while(|&f| f != 0);
        for (n, frame) in frames.enumerate() {
            write!(out, "{}\"{frame:#x}\"", if n > 0 { "," } else { "" })?;
        }
        out.write_str("]")?;
        let site = s.callsite[0].load(Relaxed);
        if let (Some(sym), true) = (&mut symbolizer, site != 0) {
            write!(out, ",\"callsite\":\"{}\"", sym.describe(call_of(site)).escape_default())?;
        }
        out.write_str("}")?;
    }
    out.write_str("],\"totals\":{")?;
    let mut first = true;
    for (bucket, name) in [(SERVED, strategy), (FORWARDED, "glibc")] {
        let t = &TOTALS[bucket];
        if t.acquisitions.load(Relaxed) == 0 {
            continue;
        }
        write!(out, "{}\"{name}\":{{", if first { "" } else { "," })?;
        counters(out, t)?;
        out.write_str("}")?;
        first = false;
    }
    out.write_str("}}\n")
}

/// A symbolizer primed with every call site of the report (one `addr2line` run per
/// module), or none for the on-demand report.
fn symbolizer(symbolize: bool, top: &Top) -> Option<super::symbolize::Symbolizer> {
    if !symbolize {
        return None;
    }
    let mut symbolizer = super::symbolize::Symbolizer::new();
    let slots = table::slots();
    let sites: Vec<usize> = top.rows[..top.len]
        .iter()
        .map(|&i| slots[i].callsite[0].load(Relaxed))
        .filter(|&site| site != 0)
        .map(call_of)
        .collect();
    symbolizer.describe_all(&sites);
    Some(symbolizer)
}

/// A return address points after the call; one byte back is inside the call itself,
/// which is the line a reader wants.
fn call_of(return_address: usize) -> usize {
    return_address - 1
}

fn counters(out: &mut FdWriter, s: &Slot) -> fmt::Result {
    write!(
        out,
        "\"locked\":{},\"owner_changes\":{},\"contended\":{},\"spins\":{},\"sleeps\":{},\"handoffs\":{},\"timeouts\":{},\"wait_ns_total\":{},\"wait_ns_max\":{},\"hold_ns_total\":{},\"hold_ns_max\":{}",
        s.acquisitions.load(Relaxed),
        s.owner_changes.load(Relaxed),
        s.contended.load(Relaxed),
        s.spins.load(Relaxed),
        s.sleeps.load(Relaxed),
        s.handoffs.load(Relaxed),
        s.timeouts.load(Relaxed),
        s.wait_total_ns.load(Relaxed),
        s.wait_max_ns.load(Relaxed),
        s.hold_total_ns.load(Relaxed),
        s.hold_max_ns.load(Relaxed),
    )
}

/// Buffered writes to a descriptor, from the stack.
struct FdWriter {
    fd: i32,
    buf: [u8; 4096],
    len: usize,
}

impl FdWriter {
    fn flush(&mut self) {
        let mut rest = &self.buf[..self.len];
        while !rest.is_empty() {
            // SAFETY: writes from our live buffer.
            let n = unsafe { libc::write(self.fd, rest.as_ptr().cast(), rest.len()) };
            if n <= 0 {
                break;
            }
            rest = &rest[n as usize..];
        }
        self.len = 0;
    }
}

impl Write for FdWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for chunk in s.as_bytes().chunks(self.buf.len()) {
            if self.len + chunk.len() > self.buf.len() {
                self.flush();
            }
            self.buf[self.len..self.len + chunk.len()].copy_from_slice(chunk);
            self.len += chunk.len();
        }
        Ok(())
    }
}
