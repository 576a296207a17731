//! The load message: proof for the `spinmutex` command that this library was loaded,
//! with the settings in force.
//!
//! The command creates a pipe, leaves its write end open in the child and names it in
//! `SPINMUTEX_HANDSHAKE=fd=N,dev=D,ino=I`. Every process that loads the library with
//! that variable set (a shell wrapper, then the real program) writes one line,
//! [`LoadReport`], to it from the constructor. The descriptor is used only while it is
//! still that pipe (a program may have closed the number and reused it), is never
//! closed, and is written with the raw system call: libc's `write` is a cancellation
//! point. The command made the pipe non-blocking, so a full pipe drops the line instead
//! of stopping the program; a line is far shorter than `PIPE_BUF`, so lines of several
//! processes never interleave.

use core::fmt::Write;

use spinmutex_names::{self as names, LoadReport, Stats};

use crate::config::{self, LineBuf};
use crate::{observe, sys};

/// The library's version, NUL-terminated.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The library's version as an exported symbol, so that the `spinmutex` command can
/// tell, before it runs anything, that a file is this library and the version it
/// expects (it reads the symbol from the file; nothing calls it).
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static spinmutex_version: [u8; VERSION.len()] = {
    let mut out = [0u8; VERSION.len()];
    let mut i = 0;
    while i < VERSION.len() {
        out[i] = VERSION.as_bytes()[i];
        i += 1;
    }
    out
};

/// Writes the load line when the command asked for one. Called by the constructor,
/// after the settings and the observers are set up.
pub fn announce() {
    let Some(Ok(target)) = config::file_setting(&names::HANDSHAKE).map(names::parse_handshake) else {
        return;
    };
    if !is_the_pipe(target) {
        return;
    }
    let mut exe_buf = [0u8; 256];
    let stats = match observe::stats_on() {
        false => Stats::Off,
        true => config::read(&names::STATS, names::parse_stats, Stats::Text, false),
    };
    let report = LoadReport {
        pid: sys::getpid() as u32,
        version: env!("CARGO_PKG_VERSION"),
        strategy: config::strategy(),
        spin_limit_ns: config::spin_limit_ns(),
        pause_ps: config::pause_ps(),
        max_spinners: config::max_spinners(),
        handoff_after: config::handoff_after(),
        handoff_wait_ns: config::handoff_wait_ns(),
        fair: config::fair(),
        rwlocks: config::rwlocks_served(),
        stats,
        trace: tracing::dispatcher::has_been_set(),
        exe: executable(&mut exe_buf),
    };
    let mut line: LineBuf = LineBuf::new();
    let _ = writeln!(line, "{report}");
    let bytes = line.as_bytes();
    if bytes.last() != Some(&b'\n') {
        return; // cut short: a partial line would only confuse the reader
    }
    // One attempt to a descriptor just checked to be the command's pipe: a full pipe or
    // a signal loses the line, which the command reports; it never blocks the program.
    let _ = sys::write(target.fd, bytes);
}

/// True when `target.fd` is open and is the FIFO the command named.
fn is_the_pipe(target: names::Handshake) -> bool {
    // SAFETY: `libc::stat` is plain data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fstat writes one `struct stat` we own; a closed descriptor gives EBADF.
    let r = unsafe { libc::syscall(libc::SYS_fstat, target.fd, &mut st as *mut libc::stat) };
    r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFIFO && st.st_dev == target.dev && st.st_ino == target.ino
}

/// This process's executable (`/proc/self/exe`), or `?`.
fn executable(buf: &mut [u8; 256]) -> &str {
    // SAFETY: readlinkat writes at most `buf.len()` bytes into `buf` and returns how
    // many; the path is a NUL-terminated literal.
    let n = unsafe {
        libc::syscall(
            libc::SYS_readlinkat,
            libc::AT_FDCWD,
            c"/proc/self/exe".as_ptr(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    match usize::try_from(n) {
        Ok(n) if n > 0 && n < buf.len() => core::str::from_utf8(&buf[..n]).unwrap_or("?"),
        _ => "?",
    }
}
