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
//!   duplicate keeps that pipe or terminal open until the process exits.)
//! * Each line is written with one `write(2)` (never libc's, which is a cancellation
//!   point). A line that a full disk cut short is taken back off the end of the file, so
//!   a trace file holds whole lines only.

use core::ffi::CStr;
use core::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use core::sync::atomic::{AtomicI32, AtomicU64};
use libc::c_int;

use crate::sys::{self, FileId};

/// Descriptors below this number are left to the program: it may expect `open` to
/// return 0, 1 and 2 after closing them, or count on its first files being 3, 4, ...
const FIRST_OWN_FD: c_int = 100;

const NONE: i32 = -1;

/// A descriptor the library opened, with the identity of its file.
pub struct OwnFd {
    fd: AtomicI32,
    dev: AtomicU64,
    ino: AtomicU64,
}

impl OwnFd {
    pub const fn new() -> Self {
        OwnFd { fd: AtomicI32::new(NONE), dev: AtomicU64::new(0), ino: AtomicU64::new(0) }
    }

    /// Keeps `fd`, which the caller just opened (or duplicated), unless another thread
    /// kept a descriptor for the same purpose first; returns the one kept.
    pub fn adopt(&self, fd: c_int) -> Option<c_int> {
        let high = sys::dup_at_least(fd, FIRST_OWN_FD);
        if high != fd {
            sys::close(fd);
        }
        let Ok((id, _)) = sys::fstat(high) else {
            sys::close(high);
            return None;
        };
        // Every thread that races here opened the same file, so the identity written
        // by any of them is right for whichever descriptor wins.
        self.dev.store(id.dev, Relaxed);
        self.ino.store(id.ino, Relaxed);
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
    pub fn get(&self) -> Option<c_int> {
        let fd = self.fd.load(Acquire);
        if fd == NONE {
            return None;
        }
        match sys::fstat(fd) {
            Ok((id, _)) if id == self.id() => Some(fd),
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

    /// Lets the descriptor go, closing it only if it is still the library's.
    pub fn forget(&self) {
        if let Some(fd) = self.get() {
            if self.fd.compare_exchange(fd, NONE, Relaxed, Relaxed).is_ok() {
                sys::close(fd);
            }
        }
    }
}

/// The standard error the program started with.
static STDERR: OwnFd = OwnFd::new();

/// Keeps a duplicate of descriptor 2 for output that must reach it even after the
/// program closed it. Called by the constructor when output goes to standard error.
pub fn keep_stderr() {
    if STDERR.get().is_some() {
        return;
    }
    if let Ok(dup) = dup_of(2) {
        let _ = STDERR.adopt(dup);
    }
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
/// still leads to the same file, else nowhere.
pub fn stderr() -> Option<c_int> {
    STDERR.get().or_else(|| STDERR.same_file(2).then_some(2)).or_else(|| {
        // Nothing was kept (output to standard error was not expected at load): the
        // program's descriptor 2 is the best there is.
        (STDERR.fd.load(Relaxed) == NONE && sys::fstat(2).is_ok()).then_some(2)
    })
}

/// Writes a whole message to the standard error the program started with, if it is
/// still there.
pub fn write_stderr(bytes: &[u8]) {
    if let Some(fd) = stderr() {
        sys::write_fully(fd, bytes);
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

/// Opens `path` for appending lines (read access lets a cut line be taken back).
pub fn open_append(path: &CStr) -> Option<c_int> {
    sys::open(path, libc::O_RDWR | libc::O_CREAT | libc::O_APPEND, 0o644).ok()
}

/// Appends one whole line with one `write`. A line the disk had room for only in part
/// is removed again (when `fd` can be read, as the library's own files can). False if
/// the line is not in the file.
pub fn append_line(fd: c_int, line: &[u8]) -> bool {
    loop {
        match sys::write(fd, line) {
            Ok(n) if n == line.len() => return true,
            Ok(n) => {
                take_back(fd, &line[..n]);
                return false;
            }
            Err(libc::EINTR) => continue,
            Err(_) => return false,
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
