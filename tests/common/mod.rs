//! Helpers shared by the integration tests of the library (tests/) and of the command
//! (cli/tests/, which include this file): the harness that makes skips visible, where
//! the preload library and the compiled C test programs are, and running a command
//! under a strategy with a time bound.
#![allow(dead_code)]

pub mod harness;
pub mod stats;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Every strategy the library serves; each behaviour test runs under all of them.
pub const STRATEGIES: &[&str] = &["glibc", "futex", "spin", "kernel", "auto"];

/// `target/<profile>/` of the running test binary (`target/<profile>/deps/<test>`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(Path::parent).expect("target dir").to_path_buf()
}

/// The preload library, built for this test run. `cargo test` builds a package's
/// integration tests but not its cdylib, so the first call runs `cargo build` for it:
/// the tests never load a library older than the sources.
pub fn lib_path() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_library).clone()
}

fn build_library() -> PathBuf {
    let dir = target_dir();
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "--quiet", "--package", "spinmutex", "--lib"]);
    // target/<profile>: the profile's own name, except that dev builds go to debug.
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some(profile) => {
            cargo.args(["--profile", profile]);
        }
        None => {}
    }
    if let Some(target) = dir.parent() {
        cargo.arg("--target-dir").arg(target);
    }
    let status = cargo
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("run cargo to build libspinmutex.so: {e}"));
    assert!(status.success(), "cargo build of libspinmutex.so failed ({status})");
    let lib = dir.join("libspinmutex.so");
    assert!(lib.exists(), "{} is missing after cargo build", lib.display());
    lib
}

/// A program compiled by the build script from `c-tests/<name>.c` or `.cpp`.
pub fn c_test(name: &str) -> PathBuf {
    Path::new(env!("SPINMUTEX_C_TESTS_DIR")).join(name)
}

/// A fresh directory for one test's files, removed when dropped.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("spinmutex-test-").tempdir().expect("create a temporary directory")
}

/// What a bounded run produced.
#[derive(Debug)]
pub struct Outcome {
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Outcome {
    pub fn success(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }

    /// Panics with everything the run printed unless it exited 0 in time.
    pub fn assert_success(&self, what: &str) {
        assert!(
            self.success(),
            "{what}: status {:?}, timed out {}\n--- stdout\n{}\n--- stderr\n{}",
            self.status,
            self.timed_out,
            self.stdout,
            self.stderr
        );
    }
}

/// Runs `cmd` to completion or until `limit`, then kills it. Output is captured.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Outcome {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let err_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait().expect("try_wait") {
            Some(status) => break Some(status),
            None if start.elapsed() > limit => {
                timed_out = true;
                // Kill the whole process group so forked grandchildren go too.
                // SAFETY: kill(2) with a negative pid only sends a signal.
                unsafe { libc_kill(-(child.id() as i32), 9) };
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => thread::sleep(Duration::from_millis(5)),
        }
    };
    Outcome { status, stdout: out_reader.join().unwrap(), stderr: err_reader.join().unwrap(), timed_out }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Gives the child of `cmd` the default action for every signal a test sends or
/// raises, as a terminal's shell would: a test run under `nohup` or as a background job
/// would otherwise pass SIGHUP or SIGINT on ignored, and a program would not end by it.
pub fn default_signal_actions(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    const SENT: [i32; 7] = [
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGPIPE,
        libc::SIGUSR1,
        libc::SIGUSR2,
    ];
    // SAFETY: signal(2) is async-signal-safe; it runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for sig in SENT {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        })
    };
}

/// A command for `program` with the library preloaded under `strategy`
/// (`None`: no preload at all). The child leads its own process group, and starts with
/// the default action for the signals tests send (see [`default_signal_actions`]).
pub fn preloaded(program: impl AsRef<std::ffi::OsStr>, strategy: Option<&str>) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    cmd.process_group(0);
    default_signal_actions(&mut cmd);
    for (key, _) in std::env::vars() {
        if key.starts_with("SPINMUTEX_") {
            cmd.env_remove(key);
        }
    }
    cmd.env_remove("LD_PRELOAD");
    if let Some(strategy) = strategy {
        cmd.env("LD_PRELOAD", lib_path()).env("SPINMUTEX_STRATEGY", strategy);
    }
    cmd
}

/// Runs a compiled C test program under every strategy and checks it exits 0 in time.
pub fn c_test_under_every_strategy(name: &str, args: &[&str], limit: Duration) {
    let program = c_test(name);
    assert!(program.exists(), "{} was not built", program.display());
    for strategy in STRATEGIES {
        let mut cmd = preloaded(&program, Some(strategy));
        cmd.args(args);
        run_bounded(cmd, limit).assert_success(&format!("{name} under {strategy}"));
    }
}
