//! Running a child process to completion with `wait4`, which gives its CPU time, and
//! collecting what the library said when it loaded in it.

use std::io::{self, Read};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::handshake::Pipe;
use crate::settings::Effective;

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Termination {
    Exited(i32),
    Signaled { signo: i32, core_dumped: bool },
}

impl Termination {
    pub fn success(&self) -> bool {
        *self == Termination::Exited(0)
    }

    /// The shell convention: the exit status, or 128 + the signal number.
    pub fn shell_status(&self) -> u8 {
        match *self {
            Termination::Exited(c) => c as u8,
            Termination::Signaled { signo, .. } => (128 + signo).min(255) as u8,
        }
    }

    pub fn describe(&self) -> String {
        match *self {
            Termination::Exited(c) => format!("exit status {c}"),
            Termination::Signaled { signo, core_dumped } => {
                format!(
                    "killed by signal {signo} ({}){}",
                    signal_name(signo),
                    if core_dumped { " (core dumped)" } else { "" }
                )
            }
        }
    }
}

/// What a finished child did.
#[derive(Debug, Clone)]
pub struct Finished {
    pub termination: Termination,
    pub wall: Duration,
    /// User and system CPU seconds of the child and its waited-for descendants.
    pub user_s: f64,
    pub sys_s: f64,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// One entry per process of the run that loaded the library.
    pub loads: Vec<Effective>,
}

impl Finished {
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }
}

/// The pid of the child being waited for, for the forwarding signal handler.
static CHILD_PID: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = CHILD_PID.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Signal dispositions changed while a child runs in the foreground, restored on drop.
struct ForegroundSignals {
    saved: Vec<(libc::c_int, libc::sighandler_t)>,
}

impl ForegroundSignals {
    /// Like system(3): SIGINT and SIGQUIT (which the terminal sends to the child as
    /// well) are ignored; SIGTERM and SIGHUP are forwarded to the child.
    fn install() -> Self {
        let mut saved = Vec::new();
        // SAFETY: signal(2) with SIG_IGN or a handler that only calls kill(2).
        unsafe {
            for sig in [libc::SIGINT, libc::SIGQUIT] {
                saved.push((sig, libc::signal(sig, libc::SIG_IGN)));
            }
            let handler = forward_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            for sig in [libc::SIGTERM, libc::SIGHUP] {
                saved.push((sig, libc::signal(sig, handler)));
            }
        }
        ForegroundSignals { saved }
    }
}

impl Drop for ForegroundSignals {
    fn drop(&mut self) {
        for &(sig, old) in &self.saved {
            // SAFETY: restores the disposition saved above.
            unsafe { libc::signal(sig, old) };
        }
    }
}

/// Spawns `cmd` and waits for it. With `capture`, stdout and stderr are collected
/// (stdin is /dev/null); otherwise the child shares this process's stdio. With
/// `foreground`, signals are handled as described at [`ForegroundSignals::install`].
/// The child gets the handshake pipe; what arrived on it by the time the child exited
/// is in [`Finished::loads`].
pub fn run(cmd: &mut Command, capture: bool, foreground: bool) -> io::Result<Finished> {
    if capture {
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut pipe = Pipe::new()?;
    pipe.attach(cmd);
    let start = Instant::now();
    let spawned = cmd.spawn();
    pipe.close_write();
    let mut child = spawned?;
    let pid = child.id() as libc::pid_t;
    let guard = foreground.then(|| {
        CHILD_PID.store(pid, Ordering::SeqCst);
        ForegroundSignals::install()
    });
    let readers = if capture {
        let mut out = child.stdout.take().expect("piped stdout");
        let mut err = child.stderr.take().expect("piped stderr");
        Some((
            thread::spawn(move || {
                let mut v = Vec::new();
                let _ = out.read_to_end(&mut v);
                v
            }),
            thread::spawn(move || {
                let mut v = Vec::new();
                let _ = err.read_to_end(&mut v);
                v
            }),
        ))
    } else {
        None
    };
    let (status, usage) = wait4(pid)?;
    let wall = start.elapsed();
    CHILD_PID.store(0, Ordering::SeqCst);
    drop(guard);
    // The child is reaped: `child` must not be waited for again; dropping it is fine.
    drop(child);
    let (stdout, stderr) = match readers {
        Some((o, e)) => (o.join().unwrap_or_default(), e.join().unwrap_or_default()),
        None => (Vec::new(), Vec::new()),
    };
    let (loads, _) = pipe.take();
    let termination = if libc::WIFSIGNALED(status) {
        Termination::Signaled { signo: libc::WTERMSIG(status), core_dumped: libc::WCOREDUMP(status) }
    } else {
        Termination::Exited(libc::WEXITSTATUS(status))
    };
    Ok(Finished {
        termination,
        wall,
        user_s: timeval_s(usage.ru_utime),
        sys_s: timeval_s(usage.ru_stime),
        stdout,
        stderr,
        loads,
    })
}

fn wait4(pid: libc::pid_t) -> io::Result<(libc::c_int, libc::rusage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals; waits for our own child only.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn timeval_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// The conventional name of a signal number.
pub fn signal_name(signo: i32) -> &'static str {
    match signo {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => "unknown signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_status_convention() {
        assert_eq!(Termination::Exited(3).shell_status(), 3);
        assert_eq!(Termination::Signaled { signo: 9, core_dumped: false }.shell_status(), 137);
        assert!(Termination::Signaled { signo: 11, core_dumped: true }.describe().contains("SIGSEGV"));
    }

    #[test]
    fn runs_and_captures() {
        // (No library here: the handshake pipe stays empty.)
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 4"]);
        let f = run(&mut cmd, true, false).unwrap();
        assert_eq!(f.termination, Termination::Exited(4));
        assert_eq!(f.stdout, b"out\n");
        assert_eq!(f.stderr, b"err\n");
        assert!(f.loads.is_empty());
    }
}
