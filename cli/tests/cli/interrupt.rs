//! Interruption: `run`, `ab` and `bench` stop the program and its process group on a
//! signal, keep what finished, and exit with 128 + the signal number.

use super::*;

/// What became of a command interrupted by a signal.
struct Interrupted {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// From the signal to the command's exit.
    exit_after: Duration,
    /// Processes the command started that were still alive once it had exited.
    left: Vec<String>,
}

/// The processes (other than zombies) whose environment holds `tag`.
fn processes_tagged(tag: &str) -> Vec<String> {
    let needle = format!("CLI_TEST_TAG={tag}\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let path = entry.path();
        let Ok(environ) = std::fs::read(path.join("environ")) else { continue };
        if !environ.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let state = stat.rsplit(") ").next().and_then(|rest| rest.split(' ').next()).unwrap_or("");
        if state != "Z" && state != "X" {
            found.push(stat);
        }
    }
    found
}

/// Runs the command with `args`, waits until its stderr satisfies `ready`, sends it
/// `signal` and waits for it to exit. Every process it starts inherits a tag in its
/// environment, by which any left alive afterwards is found.
fn interrupt(args: &[&str], ready: impl Fn(&str) -> bool, signal: libc_signal::Signal) -> Interrupted {
    use std::process::Stdio;
    let dir = scratch();
    let tag = format!("{}-{:?}", std::process::id(), std::time::Instant::now());
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut cmd = spinmutex(args);
    cmd.env("CLI_TEST_TAG", &tag)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let start = std::time::Instant::now();
    while !ready(&read(&err)) {
        assert!(start.elapsed() < LIMIT, "never ready:\n{}", read(&err));
        assert!(child.try_wait().unwrap().is_none(), "exited before the signal:\n{}", read(&err));
        std::thread::sleep(Duration::from_millis(20));
    }
    libc_signal::send(child.id(), signal);
    let sent = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if sent.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("still running 30 s after the signal:\n{}", read(&err));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let exit_after = sent.elapsed();
    // SIGKILL'ed processes vanish a moment after the signal: allow them that moment.
    let mut left = processes_tagged(&tag);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        left = processes_tagged(&tag);
    }
    Interrupted { code: status.code(), stdout: read(&out), stderr: read(&err), exit_after, left }
}

/// Signals sent to the command under test.
mod libc_signal {
    #[derive(Clone, Copy)]
    pub enum Signal {
        Hup = libc::SIGHUP as isize,
        Int = libc::SIGINT as isize,
        Kill = libc::SIGKILL as isize,
        Term = libc::SIGTERM as isize,
    }

    pub fn send(pid: u32, sig: Signal) {
        // SAFETY: kill(2) only sends a signal to our own child.
        assert_eq!(unsafe { libc::kill(pid as i32, sig as i32) }, 0);
    }
}

/// `ab` interrupted: the running program and its whole process group stop (here a
/// shell and its background child), the runs finished so far are reported and saved,
/// marked, and ab exits with 128 + the signal number.
pub(crate) fn ab_interrupted_stops_the_program_and_keeps_the_finished_runs() {
    let dir = scratch();
    let (json, count) = (dir.path().join("ab.json"), dir.path().join("count"));
    // The first two runs are quick; the third hangs, with a grandchild.
    let script = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n + 1)) > {c}; \
         if [ $n -ge 2 ]; then sleep 60 & sleep 60; fi",
        c = count.display()
    );
    for (signal, status, name) in
        [(libc_signal::Signal::Int, 130, "SIGINT"), (libc_signal::Signal::Term, 143, "SIGTERM")]
    {
        let _ = std::fs::remove_file(&count);
        let args = [
            "ab",
            "-n",
            "3",
            "--warmup",
            "0",
            "-s",
            "glibc,spin",
            "--without-none",
            "--json",
            json.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ];
        let o = interrupt(&args, |err| err.contains("spin run 1/3"), signal);
        assert_eq!(o.code, Some(status), "{}", o.stderr);
        assert!(o.left.is_empty(), "processes outlived ab: {:?}", o.left);
        assert!(o.exit_after < Duration::from_secs(10), "took {:?} to stop", o.exit_after);
        assert!(o.stderr.contains(&format!("interrupted by {name}")), "{}", o.stderr);
        assert!(o.stdout.contains("wall time"), "no report of the finished runs:\n{}", o.stdout);
        let report: AbReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(report.interrupted.as_deref(), Some(name));
        assert_eq!(report.runs.len(), 2, "{:?}", report.runs);
        assert!(report.runs.iter().all(|r| r.ok));
    }
}

/// `run` interrupted stops the program's whole group, SIGKILL when it ignores SIGTERM.
pub(crate) fn run_interrupted_stops_the_program_and_its_group() {
    let o = interrupt(
        &["run", "--", "sh", "-c", "trap '' TERM; echo started >&2; sleep 60 & sleep 60"],
        |err| err.contains("started"),
        libc_signal::Signal::Term,
    );
    assert_eq!(o.code, Some(143), "{}", o.stderr);
    assert!(o.left.is_empty(), "processes outlived run: {:?}", o.left);
    assert!(o.stderr.contains("interrupted by SIGTERM"), "{}", o.stderr);
    assert!(o.exit_after < Duration::from_secs(10), "took {:?} to stop", o.exit_after);
}

/// `run` killed by SIGKILL, which it cannot catch to stop the program: the program
/// dies with it all the same, instead of running on unmeasured.
pub(crate) fn run_killed_takes_the_program_with_it() {
    let o = interrupt(
        &["run", "--", "sh", "-c", "echo started >&2; exec sleep 60"],
        |err| err.contains("started"),
        libc_signal::Signal::Kill,
    );
    assert_eq!(o.code, None, "{}", o.stderr);
    assert!(o.left.is_empty(), "the program outlived run: {:?}", o.left);
}

/// `run --stats` interrupted: the program, ended by the SIGTERM run passes on, writes
/// the report it would have written at exit, and run prints it.
pub(crate) fn run_stats_interrupted_prints_the_statistics() {
    let program = c_test("raise_signal");
    let o = interrupt(
        &["run", "--stats", "--", program.to_str().unwrap(), "wait"],
        |err| err.contains("ready"),
        libc_signal::Signal::Term,
    );
    assert_eq!(o.code, Some(143), "{}", o.stderr);
    assert!(o.stderr.contains("== Lock statistics of pid"), "{}", o.stderr);
    assert!(o.stderr.contains("2 acquisitions, 1 contended"), "{}", o.stderr);
}

/// `run --stats` in the foreground of a terminal, Ctrl-C: the terminal's SIGINT reaches
/// the program itself, which writes its report as it ends, and run prints it.
pub(crate) fn run_stats_in_a_terminal_prints_the_statistics_after_ctrl_c() {
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty fills two descriptors, owned below.
    let opened = unsafe {
        libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null())
    };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are new and ours alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let program = c_test("raise_signal");
    // `spinmutex()`'s environment, without its process group of its own: a group leader
    // cannot start a session.
    let mut cmd = Command::new(bin());
    for (key, value) in spinmutex(&[]).get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.args(["run", "--stats", "--", program.to_str().unwrap(), "wait"]);
    default_signal_actions(&mut cmd);
    let stdio = || Stdio::from(slave.try_clone().unwrap());
    cmd.stdin(stdio()).stdout(stdio()).stderr(stdio());
    // A session of its own with the terminal as its controlling terminal, whose
    // foreground process group it then is, as a shell would make it.
    // SAFETY: setsid and ioctl are async-signal-safe; between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let mut child = cmd.spawn().unwrap();
    drop(slave);
    let mut terminal = std::fs::File::from(master);
    // The program's output, read as it comes until the terminal closes.
    let (tx, rx) = std::sync::mpsc::channel();
    let mut reader = terminal.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            if tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let start = std::time::Instant::now();
    while !seen.contains("ready") {
        assert!(start.elapsed() < LIMIT, "never ready:\n{seen}");
        if let Ok(bytes) = rx.recv_timeout(Duration::from_millis(100)) {
            seen.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    terminal.write_all(&[0x03]).unwrap(); // Ctrl-C, with the terminal's default settings
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < LIMIT, "still running after Ctrl-C:\n{seen}");
        std::thread::sleep(Duration::from_millis(10));
    };
    while let Ok(bytes) = rx.recv_timeout(Duration::from_millis(500)) {
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(seen.contains("killed by signal 2 (SIGINT)"), "{seen}");
    assert!(seen.contains("2 acquisitions, 1 contended"), "{seen}");
}

/// `run --stats` interrupted, the program having locked nothing: run says so, and that
/// the signal ended it.
pub(crate) fn run_stats_interrupted_says_why_there_are_none() {
    let o = interrupt(
        &["run", "--stats", "--", "sh", "-c", "echo started >&2; sleep 60"],
        |err| err.contains("started"),
        libc_signal::Signal::Term,
    );
    assert_eq!(o.code, Some(143), "{}", o.stderr);
    assert!(
        o.stderr.contains("no statistics: SIGTERM ended the command before any process of it wrote them"),
        "{}",
        o.stderr
    );
}

/// `bench --rwlock` and `bench` interrupted: the workload stops at once, the finished
/// runs are reported and saved, marked, and the exit status is 128 + the signal.
pub(crate) fn bench_interrupted_reports_the_finished_runs() {
    let dir = scratch();
    let json = dir.path().join("b.json");
    let common = ["--threads", "1", "--loads", "0", "--runs", "4", "--duration-ms", "3000", "-s", "spin"];
    let mut rw = vec!["bench", "--rwlock", "--writes", "10", "--json", json.to_str().unwrap()];
    rw.extend(common);
    let o = interrupt(&rw, |err| err.contains("run 1/4"), libc_signal::Signal::Hup);
    assert_eq!(o.code, Some(129), "{}", o.stderr);
    assert!(o.left.is_empty(), "processes outlived bench: {:?}", o.left);
    assert!(o.exit_after < Duration::from_secs(2), "took {:?}: the workload ran on", o.exit_after);
    assert!(o.stderr.contains("interrupted by SIGHUP"), "{}", o.stderr);
    let report: RwBenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.interrupted.as_deref(), Some("SIGHUP"));
    assert_eq!(report.runs.len(), 1);

    let mut grid = vec!["bench", "--layout", "alone", "--without-control", "--scenarios", "none", "--json"];
    grid.push(json.to_str().unwrap());
    grid.extend(common);
    let o = interrupt(&grid, |err| err.contains("run 1/4"), libc_signal::Signal::Int);
    assert_eq!(o.code, Some(130), "{}", o.stderr);
    assert!(o.left.is_empty(), "processes outlived bench: {:?}", o.left);
    assert!(o.exit_after < Duration::from_secs(2), "took {:?}: the workload ran on", o.exit_after);
    let report: BenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.interrupted.as_deref(), Some("SIGINT"));
}
