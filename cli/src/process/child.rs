//! Running a child process to completion with `wait4`, which gives its CPU time, and
//! collecting what the library said when it loaded in it.
//!
//! Interruption is one mechanism for every subcommand: [`catch_interrupts`] makes
//! SIGINT, SIGTERM and SIGHUP set a flag instead of killing this command; a child then
//! running (in a process group of its own, so that the whole group can be stopped) is
//! sent SIGTERM at once and SIGKILL after [`GRACE`]. The caller sees [`interrupted`],
//! reports what finished and exits with 128 + the signal number.

use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::process::handshake::Pipe;
use crate::process::settings::Effective;
use crate::stats::metric::Metric;

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

/// What becomes of a child's standard output and error.
#[derive(Debug, Clone)]
pub enum Output {
    /// Shared with this command, stdin too.
    Inherit,
    /// Kept whole in [`Finished::stdout`] and [`Finished::stderr`]; stdin is /dev/null.
    /// Only for programs of this command's own, whose output is small.
    Keep,
    /// stdin is /dev/null; stdout is discarded unless `metric` reads it or `show`
    /// passes it through; stderr is read as it comes. Each stream is condensed to the
    /// lines that matter (see [`condense`]), so memory stays flat however much the
    /// child writes.
    Condense { metric: Option<Metric>, show: bool },
}

/// The most of one line that [`condense`] keeps; the rest of a longer line is dropped.
const LINE_CAP: usize = 64 * 1024;

/// How long a child told to stop with SIGTERM has before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);

/// The signal that interrupted this command, or 0.
static INTERRUPTED_BY: AtomicI32 = AtomicI32::new(0);

/// What `kill(2)` stops the running child with: minus its process group, or its pid
/// when it shares this command's group; 0 when none runs.
static RUNNING: AtomicI32 = AtomicI32::new(0);

/// The signals that interrupt a measurement.
const INTERRUPTS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_interrupt(sig: libc::c_int) {
    let _ = INTERRUPTED_BY.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    let target = RUNNING.load(Ordering::SeqCst);
    if target != 0 {
        // SAFETY: kill(2) is async-signal-safe.
        unsafe { libc::kill(target, libc::SIGTERM) };
    }
}

/// A write to this command's output whose reader has gone (`| head`, a pager that
/// quits) ends the command by SIGPIPE, as it ends other tools: but not before the child
/// running then, in a process group of its own that the signal does not reach, is
/// stopped like an interrupted one (SIGTERM to its group, SIGKILL after [`GRACE`]), so
/// that no child outlives the command. The write may come from any thread (the one
/// passing the child's output on, or the one that reports), so all of it happens here:
/// kill, waitid and nanosleep are async-signal-safe, and the child is left for the
/// thread in `wait4` (it is never reaped here, so that thread cannot go on to start
/// another: it would first join the reader this handler may be running on).
extern "C" fn on_broken_pipe(_: libc::c_int) {
    let target = RUNNING.load(Ordering::SeqCst);
    if target != 0 {
        let pid = target.abs();
        // SAFETY: kill(2), waitid(2) and nanosleep(2) on our own child, its group, and
        // plain local data.
        unsafe {
            libc::kill(target, libc::SIGTERM);
            let step = libc::timespec { tv_sec: 0, tv_nsec: 10_000_000 };
            for _ in 0..GRACE.as_millis() / 10 {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
                // -1: reaped already by the thread in wait4; a pid: exited, not reaped.
                if libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) != 0 || info.si_pid() != 0 {
                    break;
                }
                libc::nanosleep(&step, std::ptr::null_mut());
            }
            // The leader is gone or out of time; whatever of its group is left goes too.
            if target < 0 {
                libc::kill(target, libc::SIGKILL);
            }
        }
    }
    // SAFETY: signal(2) and raise(2); SIGPIPE is blocked in this handler, so it is
    // delivered, with its default action, as the handler returns.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
}

/// From now on SIGINT, SIGTERM and SIGHUP do not kill this command: they stop the
/// running child (see the module's comment) and [`interrupted`] says which came.
/// Installed without `SA_RESTART`, so that a `wait4` in progress returns at once.
/// SIGPIPE still ends the command, after stopping the child (see `on_broken_pipe`).
pub fn catch_interrupts() {
    let handlers = INTERRUPTS
        .iter()
        .map(|&sig| (sig, on_interrupt as extern "C" fn(libc::c_int)))
        .chain([(libc::SIGPIPE, on_broken_pipe as extern "C" fn(libc::c_int))]);
    for (sig, handler) in handlers {
        // SAFETY: sigaction is plain data (all zero is valid); the handlers only load
        // and store atomics and make async-signal-safe system calls.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// Gives SIGINT, SIGTERM, SIGHUP and SIGPIPE their default action again, once no child
/// runs: what is left (writing the results) must stay stoppable.
pub fn stop_catching_interrupts() {
    for sig in INTERRUPTS.into_iter().chain([libc::SIGPIPE]) {
        // SAFETY: signal(2) with SIG_DFL.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// The signal that interrupted this command, if one did.
pub fn interrupted() -> Option<i32> {
    match INTERRUPTED_BY.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// The signal that interrupted the command, if one did, said on standard error with how
/// many of the runs (`what`) finished: `spinmutex ab: interrupted by SIGINT; reporting
/// the 7 measured runs finished`.
pub fn say_if_interrupted(command: &str, finished: usize, what: &str) -> Option<i32> {
    let sig = interrupted()?;
    eprintln!(
        "spinmutex {command}: interrupted by {}; reporting the {finished} {what} finished",
        signal_name(sig)
    );
    Some(sig)
}

/// The exit status of a command interrupted by `sig`: 128 + its number, as a shell
/// gives for a program killed by it.
pub fn interrupted_status(sig: i32) -> u8 {
    Termination::Signaled { signo: sig, core_dumped: false }.shell_status()
}

/// Makes the child die with this command (with the thread that spawns it, this
/// command's main thread). A command stopped by SIGKILL, or by a crash, cannot stop its
/// child as an interrupted one does: the kernel then sends the child SIGKILL, so that
/// no program goes on running, unmeasured, after the command that measured it. (Only
/// the child: its own children are the program's to stop.)
pub fn die_with_this_command(cmd: &mut Command) {
    // SAFETY: getpid only reads.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec, and makes only
    // async-signal-safe system calls (prctl, getppid).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // This command died before the request took effect: nobody is measuring.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Whether this command runs in the foreground of a terminal on stdin: a child that
/// shares the terminal must then stay in this command's process group, where the
/// terminal lets it read and sends it Ctrl-C itself.
fn terminal_foreground() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp only read.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// Signal dispositions changed while a child shares the terminal, restored on drop.
struct TerminalSignals {
    saved: Vec<(libc::c_int, libc::sighandler_t)>,
}

impl TerminalSignals {
    /// Like system(3): SIGINT and SIGQUIT, which the terminal sends to the child as
    /// well, are left to it.
    fn ignore() -> Self {
        let mut saved = Vec::new();
        for sig in [libc::SIGINT, libc::SIGQUIT] {
            // SAFETY: signal(2) with SIG_IGN; restored on drop.
            saved.push((sig, unsafe { libc::signal(sig, libc::SIG_IGN) }));
        }
        TerminalSignals { saved }
    }
}

impl Drop for TerminalSignals {
    fn drop(&mut self) {
        for &(sig, old) in &self.saved {
            // SAFETY: restores the disposition saved above.
            unsafe { libc::signal(sig, old) };
        }
    }
}

/// Blocks the interrupting signals in this thread while alive, so that threads spawned
/// meanwhile never take them: they must reach the thread blocked in `wait4`.
struct InterruptsBlocked {
    old: libc::sigset_t,
}

impl InterruptsBlocked {
    fn new() -> Self {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset; pthread_sigmask
        // only changes this thread's mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in INTERRUPTS {
                libc::sigaddset(&mut set, sig);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            InterruptsBlocked { old }
        }
    }
}

impl Drop for InterruptsBlocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// Spawns `cmd` and waits for it, its output handled as `output` says. The child runs
/// in a process group of its own, except under [`Output::Inherit`] in the foreground of
/// a terminal (there SIGINT and SIGQUIT are left to the child while it runs). The child
/// gets the handshake pipe; what arrived on it by the time the child exited is in
/// [`Finished::loads`]. After [`catch_interrupts`], an interruption stops the child:
/// the caller checks [`interrupted`].
pub fn run(cmd: &mut Command, output: Output) -> io::Result<Finished> {
    let shares_terminal = matches!(output, Output::Inherit) && terminal_foreground();
    if !shares_terminal {
        cmd.process_group(0);
    }
    die_with_this_command(cmd);
    match &output {
        Output::Inherit => {}
        Output::Keep => {
            cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        Output::Condense { metric, show } => {
            let stdout = match (metric, show) {
                (None, false) => Stdio::null(),
                (None, true) => Stdio::inherit(),
                (Some(_), _) => Stdio::piped(),
            };
            cmd.stdin(Stdio::null()).stdout(stdout).stderr(Stdio::piped());
        }
    }
    let mut pipe = Pipe::new()?;
    pipe.attach(cmd);
    let start = Instant::now();
    let spawned = cmd.spawn();
    pipe.close_write();
    let mut child = spawned?;
    let pid = child.id() as libc::pid_t;
    let target = if shares_terminal { pid } else { -pid };
    let guard = shares_terminal.then(TerminalSignals::ignore);
    RUNNING.store(target, Ordering::SeqCst);
    let readers = {
        let _blocked = InterruptsBlocked::new();
        let out = child.stdout.take();
        let err = child.stderr.take();
        let (out_metric, show) = match &output {
            Output::Condense { metric, show } => (Some(metric.clone()), *show),
            _ => (None, false),
        };
        let read = |stream: Option<Box<dyn Read + Send>>, metric: Option<Option<Metric>>, echo: Echo| {
            thread::spawn(move || match (stream, metric) {
                (None, _) => Vec::new(),
                (Some(mut s), None) => {
                    let mut v = Vec::new();
                    let _ = s.read_to_end(&mut v);
                    v
                }
                (Some(s), Some(m)) => condense(s, m.as_ref(), show.then_some(echo)),
            })
        };
        let stderr_metric = out_metric.clone();
        (
            read(out.map(|o| Box::new(o) as Box<dyn Read + Send>), out_metric, Echo::Stdout),
            read(err.map(|e| Box::new(e) as Box<dyn Read + Send>), stderr_metric, Echo::Stderr),
        )
    };
    let waited = wait(pid, target);
    let wall = start.elapsed();
    RUNNING.store(0, Ordering::SeqCst);
    drop(guard);
    // The child is reaped: `child` must not be waited for again; dropping it is fine.
    drop(child);
    let stdout = readers.0.join().unwrap_or_default();
    let stderr = readers.1.join().unwrap_or_default();
    let (status, usage) = waited?;
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

/// Reads `stream` to its end, keeping only what a metric and a failure message need:
/// the first line that `metric` matches and the last non-empty line (each at most
/// [`LINE_CAP`] bytes), in that order. With `echo`, everything read is passed on to
/// this command's own stdout or stderr.
fn condense(mut stream: Box<dyn Read + Send>, metric: Option<&Metric>, echo: Option<Echo>) -> Vec<u8> {
    let mut echo_to: Option<Box<dyn Write>> = match echo {
        None => None,
        Some(Echo::Stdout) => Some(Box::new(io::stdout())),
        Some(Echo::Stderr) => Some(Box::new(io::stderr())),
    };
    let mut chunk = vec![0u8; 64 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut first_match: Option<Vec<u8>> = None;
    let mut last: Vec<u8> = Vec::new();
    let mut finish_line = |line: &mut Vec<u8>| {
        if let (Some(m), None) = (metric, &first_match) {
            if m.matches(&String::from_utf8_lossy(line)) {
                first_match = Some(line.clone());
            }
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            std::mem::swap(&mut last, line);
        }
        line.clear();
    };
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if let Some(w) = echo_to.as_mut() {
            let _ = w.write_all(&chunk[..n]);
        }
        for piece in chunk[..n].split_inclusive(|b| *b == b'\n') {
            let (text, ends) = match piece.split_last() {
                Some((b'\n', text)) => (text, true),
                _ => (piece, false),
            };
            let room = LINE_CAP.saturating_sub(line.len());
            line.extend_from_slice(&text[..text.len().min(room)]);
            if ends {
                finish_line(&mut line);
            }
        }
    }
    if !line.is_empty() {
        finish_line(&mut line);
    }
    let mut out = Vec::new();
    for kept in first_match.into_iter().chain((!last.is_empty()).then_some(last)) {
        out.extend_from_slice(&kept);
        out.push(b'\n');
    }
    out
}

/// Where [`condense`] passes a stream on to.
#[derive(Clone, Copy)]
enum Echo {
    Stdout,
    Stderr,
}

/// Waits for the child `pid`; an interruption stops it (see [`stop`]).
fn wait(pid: libc::pid_t, target: libc::pid_t) -> io::Result<(libc::c_int, libc::rusage)> {
    // An interruption that came before the child was recorded as running did not reach
    // it: stop it here. (One that comes between this check and wait4 is sent SIGTERM by
    // the handler; a second one interrupts wait4 if the child ignores that.)
    loop {
        if interrupted().is_some() {
            return stop(pid, target);
        }
        match wait4(pid, 0)? {
            Some(done) => return Ok(done),
            None => continue,
        }
    }
}

/// Stops the child `pid` and its process group (`target` < 0): SIGTERM, then SIGKILL
/// when the group is not gone within [`GRACE`]; reaps the child.
fn stop(pid: libc::pid_t, target: libc::pid_t) -> io::Result<(libc::c_int, libc::rusage)> {
    // SAFETY: kill(2) on our own child or its process group.
    unsafe { libc::kill(target, libc::SIGTERM) };
    let deadline = Instant::now() + GRACE;
    let mut reaped = None;
    loop {
        if reaped.is_none() {
            reaped = wait4(pid, libc::WNOHANG)?;
        }
        // The group's id cannot be reused while any member lives, so it is safe to
        // signal after the leader is reaped; ESRCH says the group is empty.
        // SAFETY: signal 0 only checks.
        let group_gone = target > 0 || unsafe { libc::kill(target, 0) } != 0;
        if let (Some(done), true) = (reaped, group_gone) {
            return Ok(done);
        }
        if Instant::now() >= deadline {
            // SAFETY: as above.
            unsafe { libc::kill(target, libc::SIGKILL) };
            return match reaped {
                Some(done) => Ok(done),
                None => loop {
                    if let Some(done) = wait4(pid, 0)? {
                        break Ok(done);
                    }
                },
            };
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// One `wait4(2)` for `pid`: its status and resource use, or None when it has not
/// ended (WNOHANG) or the wait was interrupted by a signal.
fn wait4(pid: libc::pid_t, flags: libc::c_int) -> io::Result<Option<(libc::c_int, libc::rusage)>> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to locals; waits for our own child only.
    let r = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
    if r == pid {
        return Ok(Some((status, usage)));
    }
    if r == 0 {
        return Ok(None);
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::Interrupted {
        Ok(None)
    } else {
        Err(e)
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
        let f = run(&mut cmd, Output::Keep).unwrap();
        assert_eq!(f.termination, Termination::Exited(4));
        assert_eq!(f.stdout, b"out\n");
        assert_eq!(f.stderr, b"err\n");
        assert!(f.loads.is_empty());
    }

    #[test]
    fn condenses_to_the_first_match_and_the_last_line() {
        let metric = Metric::compile(r"ops=(\d+)").unwrap();
        let text = b"start\nops=12\nops=13\nlast words\n\n".to_vec();
        let kept = condense(Box::new(io::Cursor::new(text)), Some(&metric), None);
        assert_eq!(kept, b"ops=12\nlast words\n");
        // A line longer than the cap is cut, and one without a newline still counts.
        let long = vec![b'x'; 3 * LINE_CAP];
        let kept = condense(Box::new(io::Cursor::new(long)), None, None);
        assert_eq!(kept.len(), LINE_CAP + 1);
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "echo ops=5; echo done; echo oops >&2; exit 3"]);
        let f = run(&mut cmd, Output::Condense { metric: Some(metric), show: false }).unwrap();
        assert_eq!(f.termination, Termination::Exited(3));
        assert_eq!(f.stdout, b"ops=5\ndone\n");
        assert_eq!(f.stderr, b"oops\n");
    }
}
