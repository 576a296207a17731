//! The other end of the library's load message: a pipe whose write end a child
//! inherits, named in `SPINMUTEX_HANDSHAKE`; every process of the child's tree that
//! loads the library writes one line to it (see src/handshake.rs at the repository
//! root). The lines prove the library was loaded and say with which settings.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use spinmutex_names::{self as names, Handshake, LoadReport};

use crate::process::settings::Effective;

/// The most the reader takes from one run: the pipe holds 64 KiB, and the library's
/// writes are non-blocking, so a run that starts more processes than that loses lines
/// past it, never its own progress.
const MAX_BYTES: usize = 1 << 20;

pub struct Pipe {
    read: OwnedFd,
    write: Option<OwnedFd>,
    id: Handshake,
}

impl Pipe {
    pub fn new() -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // A child's standard streams are set up on 0, 1 and 2: keep the write end above.
        let write = if write.as_raw_fd() < 3 {
            // SAFETY: duplicates a descriptor we own; the copy is owned by the new OwnedFd.
            let fd = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` was just created.
            unsafe { OwnedFd::from_raw_fd(fd) }
        } else {
            write
        };
        // SAFETY: `libc::stat` is plain data; fstat fills it for a descriptor we own.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(write.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let id = Handshake { fd: write.as_raw_fd(), dev: st.st_dev, ino: st.st_ino };
        Ok(Pipe { read, write: Some(write), id })
    }

    /// Names the pipe in `cmd`'s environment and lets the child inherit its write end.
    pub fn attach(&self, cmd: &mut Command) {
        cmd.env(names::HANDSHAKE.name, self.id.to_string());
        let fd = self.id.fd;
        // SAFETY: the closure runs in the child between fork and exec and only calls
        // fcntl(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// Closes this process's copy of the write end (after the child has started).
    pub fn close_write(&mut self) {
        self.write = None;
    }

    /// Every load line written so far, and the number of lines that were not one. Never
    /// waits: a grandchild that keeps the pipe open does not hold the reader up.
    pub fn take(&self) -> (Vec<Effective>, usize) {
        let mut data = Vec::new();
        let mut buf = [0u8; 8192];
        while data.len() < MAX_BYTES {
            // SAFETY: reads into a live buffer of the given length.
            let n = unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                data.extend_from_slice(&buf[..n as usize]);
            } else if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            } else {
                break; // end of file, or nothing more for now
            }
        }
        let text = String::from_utf8_lossy(&data);
        let mut loads = Vec::new();
        let mut other = 0;
        for line in text.lines() {
            match LoadReport::parse(line) {
                Some(r) => loads.push(Effective::from(&r)),
                None => other += 1,
            }
        }
        (loads, other)
    }
}

/// Why a run that should have loaded the library reported nothing.
pub fn not_loaded(program: &str) -> String {
    format!(
        "the library did not load in `{program}`: no process of the run reported it. Likely causes: \
         the program is statically linked (check with `file {program}`); it is setuid, setgid or has \
         file capabilities (the loader then ignores LD_PRELOAD); or it, or a script that starts it, \
         clears LD_PRELOAD before the real program runs"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lines_without_waiting_for_writers_to_close() {
        let mut pipe = Pipe::new().unwrap();
        let line = "spinmutex-loaded pid=9 version=0.1.0 strategy=spin spin_limit_ns=8000 pause_ps=30000 \
                    max_spinners=0 handoff_after=2 handoff_wait_ns=1000000 fair=0 rwlocks=1 stats=off trace=off \
                    exe=/x y\n";
        // bash: dash redirects only descriptors 0 to 9.
        let mut cmd = Command::new("bash");
        // The background sleep keeps the write end open after the shell exits.
        cmd.arg("-c").arg(format!("printf %s '{line}' >&{fd}; echo junk >&{fd}; sleep 5 &", fd = pipe.id.fd));
        pipe.attach(&mut cmd);
        let status = cmd.status().unwrap();
        pipe.close_write();
        assert!(status.success());
        let start = std::time::Instant::now();
        let (loads, other) = pipe.take();
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
        assert_eq!(other, 1);
        assert_eq!(loads.len(), 1);
        assert_eq!((loads[0].pid, loads[0].exe.as_str(), loads[0].strategy.as_str()), (9, "/x y", "spin"));
    }
}
