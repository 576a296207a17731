//! Decision tracing with `tracing`: each slow-path decision is a `tracing` event with
//! target `spinmutex`, filtered by the `EnvFilter` directive in SPINMUTEX_TRACE and
//! written by [`LineWriter`].
//!
//! The writer formats each event into a small buffer on the stack and appends it to the
//! trace with one `write(2)` system call on an `O_APPEND` descriptor (see [`output`]):
//! no allocation, no lock, no worker thread, no cancellation point, so nothing can
//! deadlock with the program's own locks or its allocator, and a thread with a
//! cancellation pending is not cancelled inside a lock call. A forked child writes
//! `FILE.<pid>`, created at its first event. An event that cannot be written whole is
//! counted, and the count is reported at exit.
//!
//! [`output`]: super::output

use core::cell::UnsafeCell;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::EnvFilter;

use spinmutex_names::{self as names, Invalid, TraceFormat};

use super::output::{self, OwnFd};
use crate::config::{self, LineBuf};

/// The trace file, when SPINMUTEX_TRACE_FILE names one (else events go to standard
/// error).
static FILE: OwnFd = OwnFd::new();
/// SPINMUTEX_TRACE_FILE, kept to reopen it and for a forked child to derive its name.
static PATH: OnceLock<CString> = OnceLock::new();
/// In a forked child, the name of its own trace file, `FILE.<pid>` (NUL-terminated);
/// empty in the process that read the environment.
static CHILD_PATH: ChildPath = ChildPath(UnsafeCell::new([0; PATH_MAX]));
static CHILD: AtomicBool = AtomicBool::new(false);
static JSON: AtomicBool = AtomicBool::new(false);

const PATH_MAX: usize = libc::PATH_MAX as usize;

struct ChildPath(UnsafeCell<[u8; PATH_MAX]>);
// SAFETY: written only by the fork handler in a child that has one thread, before any
// other thread of that child exists (which orders the write before every read);
// read only after `CHILD` is set.
unsafe impl Sync for ChildPath {}

/// Reads SPINMUTEX_TRACE, _FILE and _FORMAT and installs the subscriber. False if off.
pub fn init() -> bool {
    let Some(directive) = config::env(names::TRACE.cname) else { return false };
    let parsed = names::parse_trace(directive).ok().and_then(|text| EnvFilter::builder().parse(text).ok());
    let Some(filter) = parsed else {
        config::warn_invalid(Invalid(&names::TRACE), directive);
        return false;
    };
    let format = config::read(&names::TRACE_FORMAT, names::parse_trace_format, TraceFormat::Text, true);
    JSON.store(format == TraceFormat::Json, Relaxed);
    let file = config::file_setting(&names::TRACE_FILE);
    let opened = file.map(|path| {
        let path =
            names::parse_trace_file(path).ok().and_then(|p| CString::new(p).ok()).ok_or(libc::EINVAL)?;
        match output::open_append(&path) {
            Ok(fd) => FILE.adopt(fd).map(|_| path).ok_or(libc::EBADF),
            // A FIFO that nobody reads yet: events are dropped (and counted) until a
            // reader opens it; the open is retried now and then (`destination`).
            Err(libc::ENXIO) => {
                config::note(format_args!(
                    "{}={} is a FIFO with no reader: trace events are dropped until one opens it",
                    names::TRACE_FILE.name,
                    config::Shown(path.to_bytes())
                ));
                Ok(path)
            }
            Err(e) => Err(e),
        }
    });
    match (file, opened) {
        (_, Some(Ok(path))) => {
            let _ = PATH.set(path);
        }
        (Some(bad), _) => {
            config::warn_invalid(Invalid(&names::TRACE_FILE), bad);
            output::keep_stderr();
        }
        (None, _) => output::keep_stderr(),
    }
    let subscriber = tracing_subscriber::registry().with(filter).with(LineWriter);
    tracing::subscriber::set_global_default(subscriber).is_ok()
}

/// A forked child writes `FILE.<pid>`, so parent and child never interleave. It lets
/// go of the parent's file (closing its copy only if the number is still the
/// library's) and creates its own at its first event.
pub fn after_fork_in_child() {
    let Some(path) = PATH.get() else { return };
    FILE.forget();
    let mut name: LineBuf<PATH_MAX> = LineBuf::new();
    let _ = write!(name, "{}.{}\0", path.to_string_lossy(), crate::thread::pid());
    // SAFETY: see `ChildPath`: this child has no other thread yet.
    let child_path = unsafe { &mut *CHILD_PATH.0.get() };
    child_path[..name.as_bytes().len()].copy_from_slice(name.as_bytes());
    CHILD.store(true, Relaxed);
}

/// How long after a failed open of the trace file the next event tries again (events in
/// between are dropped): a FIFO with no reader, say, costs one failed `open` per period,
/// not one per event.
const REOPEN_AFTER_NS: u64 = 100_000_000;
/// When the trace file may be opened again after a failed open.
static NEXT_OPEN_NS: AtomicU64 = AtomicU64::new(0);

/// The descriptor events go to now: the trace file (reopened if the program took its
/// descriptor away or a pipe's reader went away, created on a forked child's first
/// event), or standard error.
fn destination() -> Option<output::Target> {
    let Some(path) = PATH.get() else { return output::stderr() };
    if let Some(target) = FILE.get() {
        return Some(target);
    }
    let now = crate::sys::now_ns();
    if now < NEXT_OPEN_NS.load(Relaxed) {
        return None;
    }
    let opened = if CHILD.load(Relaxed) {
        // SAFETY: see `ChildPath`: written before `CHILD` was set, never again.
        let name = unsafe { &*CHILD_PATH.0.get() };
        CStr::from_bytes_until_nul(name).map_err(|_| libc::EINVAL).and_then(output::open_append)
    } else {
        output::open_append(path)
    };
    match opened {
        Ok(fd) => {
            FILE.adopt(fd)?;
            FILE.get()
        }
        Err(_) => {
            NEXT_OPEN_NS.store(now + REOPEN_AFTER_NS, Relaxed);
            None
        }
    }
}

/// At exit: say how many events were lost, in the trace and on standard error.
pub fn finish(dropped: u64) {
    if dropped == 0 {
        return;
    }
    tracing::warn!(target: "spinmutex", event = "dropped", count = dropped);
    let mut line: LineBuf<64> = LineBuf::new();
    line.push(b"spinmutex: ").push_u64(dropped).push(b" trace events were dropped\n");
    output::write_stderr(line.as_bytes());
}

// Each event below is out of line, so that its field set is on the stack only while
// the event is emitted, not throughout the lock path that emits it.

#[inline(never)]
pub fn acquired(mutex: usize, how: &str, spins: u32, sleeps: u32, wait_ns: u64) {
    tracing::debug!(target: "spinmutex", event = "acquired", mutex, how, spins, sleeps, wait_ns);
}

#[inline(never)]
pub fn spin_give_up(mutex: usize, reason: &str, spins: u32, budget: u32) {
    tracing::trace!(target: "spinmutex", event = "spin_give_up", mutex, reason, spins, budget);
}

#[inline(never)]
pub fn handoff(mutex: usize, to_tid: i32) {
    tracing::debug!(target: "spinmutex", event = "handoff", mutex, to_tid);
}

#[inline(never)]
pub fn forward(mutex: usize, result: i32, wait_ns: u64) {
    tracing::debug!(target: "spinmutex", event = "forward", mutex, result, wait_ns);
}

/// Events with no fields but the mutex: sleep, wake, handoff_request, timeout.
#[inline(never)]
pub fn simple(mutex: usize, event: &'static str) {
    match event {
        "timeout" => tracing::debug!(target: "spinmutex", event, mutex),
        _ => tracing::trace!(target: "spinmutex", event, mutex),
    }
}

/// An `auto` lock class, named as the statistics report names a call site: the
/// module's file name and the offset (or the bare address where the module is not
/// known), cut to fit the event's line.
fn class_name(key: usize) -> LineBuf<64> {
    let mut name: LineBuf<64> = LineBuf::new();
    match super::callsite::locate(key, true) {
        Some(at) => {
            let file = at.module.rsplit(|&b| b == b'/').next().unwrap_or(at.module);
            let offset = at.offset as u64;
            name.push(&file[..file.len().min(40)]).push(b"+").push_hex(offset)
        }
        None => name.push_hex(key as u64),
    };
    name
}

/// `auto` changed a lock class's mode, or an experiment kept it.
#[inline(never)]
pub fn policy(key: usize, from: &str, to: &str, because: &crate::auto::Because) {
    use crate::auto::Because;
    let name = class_name(key);
    let class = core::str::from_utf8(name.as_bytes()).unwrap_or("?");
    match *because {
        Because::SpinsLose { wins, spins, spent_ns, saved_ns } => tracing::info!(
            target: "spinmutex",
            event = "policy",
            class,
            from,
            to,
            because = because.name(),
            wins,
            spins,
            spent_ns,
            saved_ns
        ),
        Because::ProbesWin { wins, probes, spent_ns, saved_ns } => tracing::info!(
            target: "spinmutex",
            event = "policy",
            class,
            from,
            to,
            because = because.name(),
            wins,
            probes,
            spent_ns,
            saved_ns
        ),
        Because::Checked { per_s, to_beat_per_s } => tracing::info!(
            target: "spinmutex",
            event = "policy",
            class,
            from,
            to,
            because = because.name(),
            per_s,
            to_beat_per_s
        ),
        Because::Watched { per_s, pace_per_s } => tracing::info!(
            target: "spinmutex",
            event = "policy",
            class,
            from,
            to,
            because = because.name(),
            per_s,
            pace_per_s
        ),
        Because::Measured(o) | Because::Uncontended(o) => tracing::info!(
            target: "spinmutex",
            event = "policy",
            class,
            from,
            to,
            because = because.name(),
            spin_per_s = o.per_s[0],
            sleep_per_s = o.per_s[1],
            spin_cpu_ns = o.cpu_ns_per_acq[0],
            sleep_cpu_ns = o.cpu_ns_per_acq[1],
            spin_contended_permille = o.contended_permille[0],
            sleep_contended_permille = o.contended_permille[1],
            classes = o.classes
        ),
    }
}

/// One phase of an `auto` experiment ended. Target `spinmutex::auto`, so that a filter
/// can add these to the policy events alone (`info,spinmutex::auto=debug`).
#[inline(never)]
pub fn phase(key: usize, p: &crate::auto::Phase) {
    let name = class_name(key);
    let class = core::str::from_utf8(name.as_bytes()).unwrap_or("?");
    tracing::debug!(
        target: "spinmutex::auto",
        event = "phase",
        class,
        phase = p.index,
        mode = p.mode.name(),
        per_s = p.per_s,
        contended_permille = p.contended_permille,
        cpu_ns = p.cpu_ns_per_acq,
        busy_cpus_permille = p.busy_cpus_permille,
        counted = p.counted
    );
}

// Reader-writer lock events: the lock's address is the `rwlock` field, and `mode` says
// whether the thread wants (or wakes) readers or a writer.

#[inline(never)]
pub fn rw_acquired(rwlock: usize, mode: &str, how: &str, spins: u32, sleeps: u32, wait_ns: u64) {
    tracing::debug!(target: "spinmutex", event = "acquired", rwlock, mode, how, spins, sleeps, wait_ns);
}

#[inline(never)]
pub fn rw_spin_give_up(rwlock: usize, mode: &str, reason: &str, spins: u32, budget: u32) {
    tracing::trace!(target: "spinmutex", event = "spin_give_up", rwlock, mode, reason, spins, budget);
}

#[inline(never)]
pub fn rw_wake(rwlock: usize, mode: &str, woken: i32) {
    tracing::trace!(target: "spinmutex", event = "wake", rwlock, mode, woken);
}

#[inline(never)]
pub fn rw_forward(rwlock: usize, mode: &str, result: i32, wait_ns: u64) {
    tracing::debug!(target: "spinmutex", event = "forward", rwlock, mode, result, wait_ns);
}

/// A waiter of `mode` goes to sleep.
#[inline(never)]
pub fn rw_sleep(rwlock: usize, mode: &str) {
    tracing::trace!(target: "spinmutex", event = "sleep", rwlock, mode);
}

#[inline(never)]
pub fn rw_timeout(rwlock: usize, mode: &str) {
    tracing::debug!(target: "spinmutex", event = "timeout", rwlock, mode);
}

/// Formats events as JSON lines or `key=value` text and appends them to the trace.
struct LineWriter;

impl<S: Subscriber> Layer<S> for LineWriter {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        // The clock and the descriptor first, so that what they take of the stack and
        // the formatting below never stand on it at the same time.
        let ts = crate::sys::now_ns();
        match destination().map(|target| write_event(target, ts, event)) {
            Some(Ok(())) => {}
            Some(Err(libc::EPIPE)) => {
                // The pipe's reader went away, and no reader comes back to this
                // description: let it go, so that later events try to open the file
                // again (a FIFO may get a new reader).
                FILE.forget();
                super::dropped();
            }
            _ => super::dropped(),
        }
    }
}

/// Formats `event` as one line and appends it to `target`. The error if it is not in the
/// file.
///
/// Numbers and names are copied in by hand rather than through `core::fmt`, whose
/// machinery would more than double the stack this takes from the locking thread.
#[inline(never)]
fn write_event(target: output::Target, ts: u64, event: &Event<'_>) -> Result<(), i32> {
    let json = JSON.load(Relaxed);
    // SAFETY: events are written only from hooks that `observe::guarded` admitted, and
    // the line is not kept past this call.
    let line = unsafe { crate::thread::output_line() };
    let level = event.metadata().level().as_str().as_bytes();
    let strategy = config::strategy().name().as_bytes();
    let (pid, tid) = (crate::thread::pid(), crate::thread::tid());
    if json {
        line.push(b"{\"ts_ns\":").push_u64(ts);
        line.push(b",\"pid\":").push_i64(pid.into()).push(b",\"tid\":").push_i64(tid.into());
        line.push(b",\"strategy\":\"").push(strategy).push(b"\",\"level\":\"").push(level).push(b"\"");
    } else {
        line.push_u64(ts).push(b" ").push(level);
        line.push(b" pid=").push_i64(pid.into()).push(b" tid=").push_i64(tid.into());
        line.push(b" strategy=").push(strategy);
    }
    event.record(&mut Fields { line, json });
    line.push(if json { b"}\n" } else { b"\n" });
    if line.as_bytes().last() != Some(&b'\n') {
        return Err(libc::EMSGSIZE);
    }
    output::append_line(target, line.as_bytes())
}

/// Out of line: the escaping machinery stays off the stack of text-format events.
#[inline(never)]
fn json_string(line: &mut crate::thread::OutputLine, value: &str) {
    let _ = output::write_json_string(line, value);
}

struct Fields<'a> {
    line: &'a mut crate::thread::OutputLine,
    json: bool,
}

impl Fields<'_> {
    fn key(&mut self, field: &Field) {
        let name = field.name().as_bytes();
        if self.json {
            self.line.push(b",\"").push(name).push(b"\":");
        } else {
            self.line.push(b" ").push(name).push(b"=");
        }
    }
}

impl Visit for Fields<'_> {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.key(field);
        match (field.name(), self.json) {
            ("mutex" | "rwlock", true) => self.line.push(b"\"").push_hex(value).push(b"\""),
            ("mutex" | "rwlock", false) => self.line.push_hex(value),
            _ => self.line.push_u64(value),
        };
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.key(field);
        self.line.push_i64(value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.key(field);
        self.line.push(if value { b"true" as &[u8] } else { b"false" });
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.key(field);
        if self.json {
            json_string(self.line, value);
        } else {
            self.line.push(value.as_bytes());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn core::fmt::Debug) {
        self.key(field);
        let _ = if self.json { write!(self.line, "\"{value:?}\"") } else { write!(self.line, "{value:?}") };
    }
}
