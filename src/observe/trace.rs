//! Decision tracing with `tracing`: each slow-path decision is a `tracing` event with
//! target `spinmutex`, filtered by the `EnvFilter` directive in SPINMUTEX_TRACE and
//! written by [`LineWriter`].
//!
//! The writer formats each event into a buffer on the stack and appends it to the trace
//! file with one `write(2)` on an `O_APPEND` descriptor: no allocation, no lock, no
//! worker thread, so nothing can deadlock with the program's own locks or its
//! allocator, and nothing is lost across `fork` (the child reopens `FILE.<pid>` in its
//! fork handler). An event that cannot be written whole is counted, and the count is
//! reported at exit.

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicI32, Ordering::Relaxed};
use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::EnvFilter;

use spinmutex_names::{self as names, Invalid, TraceFormat};

use crate::config::{self, LineBuf};

/// Where events go: the trace file, or standard error.
static FD: AtomicI32 = AtomicI32::new(2);
/// SPINMUTEX_TRACE_FILE, kept for a forked child to derive its own name.
static PATH: OnceLock<CString> = OnceLock::new();
static JSON: AtomicBool = AtomicBool::new(false);

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
    if let Some(path) = config::env(names::TRACE_FILE.cname) {
        let opened = names::parse_trace_file(path)
            .ok()
            .and_then(|p| CString::new(p).ok())
            .and_then(|p| Some((open_append(&p)?, p)));
        match opened {
            Some((fd, path)) => {
                FD.store(fd, Relaxed);
                let _ = PATH.set(path);
            }
            None => config::warn_invalid(Invalid(&names::TRACE_FILE), path),
        }
    }
    let subscriber = tracing_subscriber::registry().with(filter).with(LineWriter);
    tracing::subscriber::set_global_default(subscriber).is_ok()
}

/// Opens a path for appending.
pub fn open_append(path: &CStr) -> Option<i32> {
    // SAFETY: `path` is NUL-terminated.
    let fd = unsafe {
        libc::open(
            path.as_ptr().cast(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
            0o644,
        )
    };
    (fd >= 0).then_some(fd)
}

/// A forked child writes `FILE.<pid>`, so parent and child never interleave.
pub fn after_fork_in_child() {
    let Some(path) = PATH.get() else { return };
    let mut name = LineBuf::new();
    let _ = write!(name, "{}.{}\0", path.to_string_lossy(), crate::thread::pid());
    let opened = CStr::from_bytes_with_nul(name.as_bytes()).ok().and_then(open_append);
    if let Some(fd) = opened {
        let old = FD.swap(fd, Relaxed);
        // SAFETY: the parent's descriptor, which this child no longer writes.
        unsafe { libc::close(old) };
    }
}

/// At exit: say how many events were lost, in the trace and on standard error.
pub fn finish(dropped: u64) {
    if dropped == 0 {
        return;
    }
    tracing::warn!(target: "spinmutex", event = "dropped", count = dropped);
    let mut line = LineBuf::new();
    let _ = writeln!(line, "spinmutex: {dropped} trace events were dropped");
    crate::sys::write_stderr(line.as_bytes());
}

pub fn acquired(mutex: usize, how: &str, spins: u32, sleeps: u32, wait_ns: u64) {
    tracing::debug!(target: "spinmutex", event = "acquired", mutex, how, spins, sleeps, wait_ns);
}

pub fn spin_give_up(mutex: usize, reason: &str, spins: u32, budget: u32) {
    tracing::trace!(target: "spinmutex", event = "spin_give_up", mutex, reason, spins, budget);
}

pub fn handoff(mutex: usize, to_tid: i32) {
    tracing::debug!(target: "spinmutex", event = "handoff", mutex, to_tid);
}

pub fn forward(mutex: usize, result: i32, wait_ns: u64) {
    tracing::debug!(target: "spinmutex", event = "forward", mutex, result, wait_ns);
}

/// Events with no fields but the mutex: sleep, wake, handoff_request, timeout.
pub fn simple(mutex: usize, event: &'static str) {
    match event {
        "timeout" => tracing::debug!(target: "spinmutex", event, mutex),
        _ => tracing::trace!(target: "spinmutex", event, mutex),
    }
}

/// Formats events as JSON lines or `key=value` text and appends them to the trace.
struct LineWriter;

impl<S: Subscriber> Layer<S> for LineWriter {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let json = JSON.load(Relaxed);
        let mut line = LineBuf::new();
        let ts = crate::sys::now_ns();
        let (pid, tid) = (crate::thread::pid(), crate::thread::tid());
        let strategy = config::strategy().name();
        let level = event.metadata().level();
        let _ = if json {
            write!(line, "{{\"ts_ns\":{ts},\"pid\":{pid},\"tid\":{tid},\"strategy\":\"{strategy}\",\"level\":\"{level}\"")
        } else {
            write!(line, "{ts} {level} pid={pid} tid={tid} strategy={strategy}")
        };
        event.record(&mut Fields { line: &mut line, json });
        let _ = line.write_str(if json { "}\n" } else { "\n" });
        if line.as_bytes().last() != Some(&b'\n') || !write_all(line.as_bytes()) {
            super::dropped();
        }
    }
}

/// One `write(2)`: with O_APPEND a line this short lands whole or not at all.
fn write_all(bytes: &[u8]) -> bool {
    // SAFETY: writes from a live buffer of the given length.
    let n = unsafe { libc::write(FD.load(Relaxed), bytes.as_ptr().cast(), bytes.len()) };
    n == bytes.len() as isize
}

struct Fields<'a> {
    line: &'a mut LineBuf,
    json: bool,
}

impl Fields<'_> {
    fn key(&mut self, field: &Field) {
        let _ = if self.json {
            write!(self.line, ",\"{}\":", field.name())
        } else {
            write!(self.line, " {}=", field.name())
        };
    }
}

impl Visit for Fields<'_> {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.key(field);
        let _ = match (field.name(), self.json) {
            ("mutex", true) => write!(self.line, "\"{value:#x}\""),
            ("mutex", false) => write!(self.line, "{value:#x}"),
            _ => write!(self.line, "{value}"),
        };
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.key(field);
        let _ = write!(self.line, "{value}");
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.key(field);
        let _ = if self.json {
            write!(self.line, "\"{}\"", value.escape_default())
        } else {
            self.line.write_str(value)
        };
    }

    fn record_debug(&mut self, field: &Field, value: &dyn core::fmt::Debug) {
        self.key(field);
        let _ = if self.json { write!(self.line, "\"{value:?}\"") } else { write!(self.line, "{value:?}") };
    }
}
