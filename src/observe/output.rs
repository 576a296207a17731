//! Where the library's own output goes, and how it avoids the program's descriptors.
//!
//! A program may close any descriptor and reuse its number: a daemon closes everything
//! above 2 and opens its data file; xz and GNU sort close standard error before they
//! exit. So the library never trusts a number it keeps. Every descriptor it opens is
//! remembered with the identity of the file it leads to (device and inode), moved above
//! the low numbers programs expect `open` to return, and checked against that identity
//! before each write. A number that leads elsewhere is forgotten, never written to and
//! never closed: the library closes only what is provably still its own.
//!
//! * Trace files are reopened by name when their descriptor was taken away, and a forked
//!   child opens its own `FILE.<pid>` on its first event (none if it never traces).
//! * "Standard error" means the one the program started with: when statistics or
//!   tracing write there, the library keeps a duplicate of descriptor 2 from load time,
//!   so that a report still arrives after the program closed its descriptor 2. (The
//!   duplicate keeps that pipe or terminal open until the process exits.) A program
//!   started without one (`2>&-`) gives number 2 to its first file, its data: output
//!   for standard error then goes nowhere.
//! * Each line is written with one `write(2)` (never libc's, which is a cancellation
//!   point). A line that a full disk cut short is taken back off the end of the file, so
//!   a trace file holds whole lines only.
//! * Output never stops the program. Files are opened write-only and non-blocking (a FIFO
//!   with no reader refuses the open at once instead of waiting for one), and standard
//!   error that is a pipe is reopened as a description of the library's own, made
//!   non-blocking: a full pipe refuses a line, which is then counted as dropped. A pipe
//!   whose reader went away fails the write with `EPIPE`, and the `SIGPIPE` that comes
//!   with it is held back and taken back (`sys::write_holding_sigpipe`); sockets are
//!   written with `MSG_DONTWAIT | MSG_NOSIGNAL`.

use core::ffi::CStr;
use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8};
use libc::c_int;

use crate::sys::{self, FileId};

/// Descriptors below this number are left to the program: it may expect `open` to
/// return 0, 1 and 2 after closing them, or count on its first files being 3, 4, ...
const FIRST_OWN_FD: c_int = 100;

const NONE: i32 = -1;

/// What kind of file a descriptor leads to, for how it is written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file, a terminal, a device: a plain `write`.
    Plain = 0,
    /// A pipe or FIFO: `SIGPIPE` held back around each write.
    Pipe = 1,
    /// A socket: `send` without blocking or `SIGPIPE`.
    Socket = 2,
}

impl Kind {
    fn of(mode: libc::mode_t) -> Kind {
        match mode & libc::S_IFMT {
            libc::S_IFIFO => Kind::Pipe,
            libc::S_IFSOCK => Kind::Socket,
            _ => Kind::Plain,
        }
    }

    fn from_u8(v: u8) -> Kind {
        match v {
            1 => Kind::Pipe,
            2 => Kind::Socket,
            _ => Kind::Plain,
        }
    }
}

/// A descriptor to write to, and how.
#[derive(Clone, Copy)]
pub struct Target {
    pub fd: c_int,
    pub kind: Kind,
}

impl Target {
    /// The descriptor `fd`, whatever it leads to now.
    pub fn of(fd: c_int) -> Option<Target> {
        let st = sys::stat_of(fd).ok()?;
        Some(Target { fd, kind: Kind::of(st.st_mode) })
    }

    /// One write of `bytes` (some of them, perhaps); never blocks on a descriptor of the
    /// library's own, never raises `SIGPIPE`. Inlined, as are the calls below it: the
    /// report signal's handler writes through here on the interrupted thread's stack.
    #[inline(always)]
    pub fn write(self, bytes: &[u8]) -> Result<usize, c_int> {
        match self.kind {
            Kind::Plain => sys::write(self.fd, bytes),
            Kind::Pipe => sys::write_holding_sigpipe(self.fd, bytes),
            Kind::Socket => sys::send_nowait(self.fd, bytes),
        }
    }

    /// Writes all of `bytes`, or fails with the error that stopped it.
    #[inline(always)]
    pub fn write_all(self, bytes: &[u8]) -> Result<(), c_int> {
        sys::write_fully(self.fd, bytes, |_, rest| self.write(rest))
    }
}

/// Holds other processes off the regular file behind a target while alive. A report is
/// many writes, and the reports of processes that end together (a process group stopped
/// by one signal, the jobs of `make -j`) must not interleave in one file. The lock is
/// taken within [`Exclusive::PATIENCE_MS`] or not at all: a process stopped while it
/// holds the lock must not hold up the others for good.
pub struct Exclusive {
    fd: Option<c_int>,
}

impl Exclusive {
    const PATIENCE_MS: u32 = 1000;

    pub fn hold(target: Target) -> Exclusive {
        let regular = sys::stat_of(target.fd).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG);
        let mut waited = 0;
        while regular && waited < Self::PATIENCE_MS {
            match sys::lock_file(target.fd, true) {
                Ok(()) => return Exclusive { fd: Some(target.fd) },
                Err(libc::EAGAIN | libc::EACCES) => {} // another process writes
                Err(_) => break,                       // a file system without locks
            }
            sys::sleep_ns(1_000_000);
            waited += 1;
        }
        Exclusive { fd: None }
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        if let Some(fd) = self.fd {
            let _ = sys::lock_file(fd, false);
        }
    }
}

/// A descriptor the library opened, with the identity of its file.
pub struct OwnFd {
    fd: AtomicI32,
    dev: AtomicU64,
    ino: AtomicU64,
    kind: AtomicU8,
}

impl OwnFd {
    pub const fn new() -> Self {
        OwnFd {
            fd: AtomicI32::new(NONE),
            dev: AtomicU64::new(0),
            ino: AtomicU64::new(0),
            kind: AtomicU8::new(0),
        }
    }

    /// Keeps `fd`, which the caller just opened (or duplicated), unless another thread
    /// kept a descriptor for the same purpose first; returns the one kept.
    pub fn adopt(&self, fd: c_int) -> Option<c_int> {
        let high = sys::dup_at_least(fd, FIRST_OWN_FD);
        if high != fd {
            sys::close(fd);
        }
        let Ok(st) = sys::stat_of(high) else {
            sys::close(high);
            return None;
        };
        // Every thread that races here opened the same file, so the identity written
        // by any of them is right for whichever descriptor wins.
        self.dev.store(st.st_dev, Relaxed);
        self.ino.store(st.st_ino, Relaxed);
        self.kind.store(Kind::of(st.st_mode) as u8, Relaxed);
        match self.fd.compare_exchange(NONE, high, AcqRel, Acquire) {
            Ok(_) => Some(high),
            Err(kept) => {
                sys::close(high);
                Some(kept)
            }
        }
    }

    /// The identity recorded for this descriptor.
    fn id(&self) -> FileId {
        FileId { dev: self.dev.load(Relaxed), ino: self.ino.load(Relaxed) }
    }

    /// The descriptor, if its number still leads to the file the library opened.
    pub fn get(&self) -> Option<Target> {
        let fd = self.fd.load(Acquire);
        if fd == NONE {
            return None;
        }
        match sys::fstat(fd) {
            Ok((id, _)) if id == self.id() => {
                Some(Target { fd, kind: Kind::from_u8(self.kind.load(Relaxed)) })
            }
            _ => {
                // Closed by the program, perhaps reused: not ours any more.
                let _ = self.fd.compare_exchange(fd, NONE, Relaxed, Relaxed);
                None
            }
        }
    }

    /// Whether `fd` leads to this descriptor's file (it may be another number for it).
    pub fn same_file(&self, fd: c_int) -> bool {
        self.fd.load(Acquire) != NONE && matches!(sys::fstat(fd), Ok((id, _)) if id == self.id())
    }

    /// The file the library opened, again, after the program closed its descriptor:
    /// `path` opened anew (never created) and kept only if it is still that very file. A
    /// path that now leads elsewhere (replaced, or a link put in its place) gives None.
    pub fn reopen_same(&self, path: &CStr) -> Option<Target> {
        if let Some(target) = self.get() {
            return Some(target);
        }
        let fd = sys::open(path, libc::O_WRONLY | libc::O_APPEND | libc::O_NONBLOCK, 0).ok()?;
        match sys::fstat(fd) {
            Ok((id, _)) if id == self.id() => {
                self.adopt(fd)?;
                self.get()
            }
            _ => {
                sys::close(fd);
                None
            }
        }
    }

    /// Lets the descriptor go, closing it only if it is still the library's.
    pub fn forget(&self) {
        if let Some(Target { fd, .. }) = self.get() {
            if self.fd.compare_exchange(fd, NONE, Relaxed, Relaxed).is_ok() {
                sys::close(fd);
            }
        }
    }
}

/// The standard error the program started with.
static STDERR: OwnFd = OwnFd::new();

/// The program started with descriptor 2 closed (`2>&-`): the number then goes to the
/// first file it opens, its data, and output meant for standard error goes nowhere.
static NO_STDERR_AT_LOAD: AtomicBool = AtomicBool::new(false);

/// Keeps a duplicate of descriptor 2 for output that must reach it even after the
/// program closed it. Called by the constructor when output goes to standard error.
///
/// A pipe is opened anew instead (through `/proc/self/fd/2`), which gives the library
/// a description of its own that it can make non-blocking without changing how the
/// program's own descriptor 2 behaves.
pub fn keep_stderr() {
    if STDERR.get().is_some() {
        return;
    }
    let Some(at_load) = Target::of(2) else {
        NO_STDERR_AT_LOAD.store(true, Relaxed);
        return;
    };
    let pipe = at_load.kind == Kind::Pipe;
    let own = if pipe { reopen_pipe(c"/proc/self/fd/2", 2) } else { None };
    if let Some(fd) = own.or_else(|| dup_of(2).ok()) {
        let _ = STDERR.adopt(fd);
    }
}

/// A new non-blocking, write-only description of the pipe behind `fd`, opened through
/// `path` (its `/proc` name); None if that fails (no `/proc`, no reader).
fn reopen_pipe(path: &CStr, fd: c_int) -> Option<c_int> {
    let own = sys::open(path, libc::O_WRONLY | libc::O_NONBLOCK, 0).ok()?;
    if same_file(own, fd) {
        return Some(own);
    }
    sys::close(own);
    None
}

/// Whether `a` and `b` lead to the same file.
fn same_file(a: c_int, b: c_int) -> bool {
    matches!((sys::fstat(a), sys::fstat(b)), (Ok((x, _)), Ok((y, _))) if x == y)
}

fn dup_of(fd: c_int) -> Result<c_int, c_int> {
    let dup = sys::dup_at_least(fd, 0);
    if dup == fd {
        Err(libc::EBADF)
    } else {
        Ok(dup)
    }
}

/// Where standard-error output goes now: the kept duplicate, else descriptor 2 if it
/// still leads to the same file, else nowhere (and nowhere if the program started with
/// no descriptor 2).
pub fn stderr() -> Option<Target> {
    STDERR.get().or_else(|| if STDERR.same_file(2) { Target::of(2) } else { None }).or_else(|| {
        // Nothing was kept (output to standard error was not expected at load): the
        // program's descriptor 2 is the best there is, unless it started without one.
        if STDERR.fd.load(Relaxed) == NONE && !NO_STDERR_AT_LOAD.load(Relaxed) {
            Target::of(2)
        } else {
            None
        }
    })
}

/// Writes a whole message to the standard error the program started with, if it is
/// still there.
pub fn write_stderr(bytes: &[u8]) {
    if let Some(target) = stderr() {
        let _ = target.write_all(bytes);
    }
}

/// `text` as a JSON string: quotes, backslashes and control characters escaped, other
/// characters (UTF-8) as they are.
pub fn write_json_string(out: &mut impl core::fmt::Write, text: &str) -> core::fmt::Result {
    out.write_char('"')?;
    let mut plain = 0;
    for (i, c) in text.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 || c == '\u{7f}' => "",
            _ => continue,
        };
        out.write_str(&text[plain..i])?;
        if escaped.is_empty() {
            write!(out, "\\u{:04x}", c as u32)?;
        } else {
            out.write_str(escaped)?;
        }
        plain = i + c.len_utf8();
    }
    out.write_str(&text[plain..])?;
    out.write_char('"')
}

/// Opens `path` for appending lines; the descriptor, or the error. Write-only and
/// non-blocking, so that neither the open nor a write ever waits for a reader (a FIFO
/// with no reader fails with `ENXIO`). Never read-write on a pipe: a descriptor that
/// could read a FIFO would keep it open for reading, and writes would never learn that
/// the real reader has gone. A regular file is opened a second time, read-write, and
/// that descriptor kept if it leads to the same file: reading lets a cut line be taken
/// back.
pub fn open_append(path: &CStr) -> Result<c_int, c_int> {
    let flags = libc::O_APPEND | libc::O_NONBLOCK;
    let fd = sys::open(path, libc::O_WRONLY | libc::O_CREAT | flags, 0o644)?;
    let regular = sys::stat_of(fd).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG);
    if regular {
        if let Ok(rw) = sys::open(path, libc::O_RDWR | flags, 0) {
            if same_file(rw, fd) {
                sys::close(fd);
                return Ok(rw);
            }
            sys::close(rw);
        }
    }
    Ok(fd)
}

/// Appends one whole line with one `write`. A line the disk had room for only in part
/// is removed again (when the file can be read, as the library's regular files can).
/// The error if the line is not in the file (`EAGAIN`: a full pipe; `EPIPE`: its reader
/// went away; the caller counts the line dropped).
pub fn append_line(target: Target, line: &[u8]) -> Result<(), c_int> {
    loop {
        match target.write(line) {
            Ok(n) if n == line.len() => return Ok(()),
            Ok(n) => {
                take_back(target.fd, &line[..n]);
                return Err(libc::ENOSPC);
            }
            Err(libc::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Removes `tail` from the end of the file if that is what the end holds.
#[cold]
#[inline(never)]
fn take_back(fd: c_int, tail: &[u8]) {
    let Ok((_, size)) = sys::fstat(fd) else { return };
    let Some(start) = size.checked_sub(tail.len() as u64) else { return };
    let mut at = 0;
    let mut chunk = [0u8; 32];
    while at < tail.len() {
        let n = (tail.len() - at).min(chunk.len());
        match sys::pread(fd, &mut chunk[..n], start + at as u64) {
            Ok(got) if got == n && chunk[..n] == tail[at..at + n] => at += n,
            _ => return, // not our bytes (or unreadable): leave the file alone
        }
    }
    let _ = sys::ftruncate(fd, start);
}

#[cfg(test)]
mod tests {
    use super::write_json_string;

    fn json(text: &str) -> String {
        let mut out = String::new();
        write_json_string(&mut out, text).unwrap();
        out
    }

    #[test]
    fn json_strings_escape_what_json_requires_and_nothing_else() {
        assert_eq!(json("plain"), "\"plain\"");
        assert_eq!(json("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(json("l1\nl2\t\r"), "\"l1\\nl2\\t\\r\"");
        assert_eq!(json("\u{1}\u{1f}\u{7f}"), "\"\\u0001\\u001f\\u007f\"");
        assert_eq!(json("é ü ☃ 'q'"), "\"é ü ☃ 'q'\"");
    }
}
