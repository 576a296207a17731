//! Runtimes stopped by a signal: each ends as it does without the library (the same
//! signal or exit status) and, with statistics on, leaves its report. Each ends its own
//! way: CPython raises KeyboardInterrupt and ends by setting SIGINT back to its default
//! action and raising it; Node.js's own handler, set to run once (SA_RESETHAND),
//! restores the terminal and raises the signal again; the JVM runs its shutdown hooks
//! and exits 143.

use std::os::unix::process::ExitStatusExt;

use super::*;

/// Starts `cmd` (stderr to a file in `scratch`), waits until it says "ready" on
/// stderr, sends it `signal`, and returns how it ended: `Ok(signal)` or `Err(status)`.
fn stop_when_ready(what: &str, scratch: &Scratch, mut cmd: Command, signal: i32) -> Result<i32, i32> {
    let err = scratch.join("stderr");
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(File::create(&err).expect("stderr file"));
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: spawn: {e}"));
    let start = Instant::now();
    while !fs::read_to_string(&err).unwrap_or_default().contains("ready") {
        if start.elapsed() > HANG_GUARD || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            panic!("{what}: never got ready:\n{}", fs::read_to_string(&err).unwrap_or_default());
        }
        thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let status = wait_within_guard(&mut child, start)
        .unwrap_or_else(|| panic!("{what}: still running {HANG_GUARD:?} after it started"));
    status.signal().ok_or(status.code().unwrap_or(-1))
}

struct Runtime {
    what: &'static str,
    program: PathBuf,
    args: Vec<String>,
    signals: &'static [i32],
}

fn check_endings(runtime: &Runtime) {
    let scratch = Scratch::new("endings");
    for &signal in runtime.signals {
        let what = format!("{} stopped by signal {signal}", runtime.what);
        let mut cmd = preloaded(&runtime.program, None);
        cmd.args(&runtime.args);
        let without = stop_when_ready(&what, &scratch, cmd, signal);
        for strategy in STRATEGIES {
            let file = scratch.join(format!("{strategy}-{signal}.json"));
            let mut cmd = preloaded(&runtime.program, Some(strategy));
            cmd.args(&runtime.args).env("SPINMUTEX_STATS", "json").env("SPINMUTEX_STATS_FILE", &file);
            let ended = stop_when_ready(&what, &scratch, cmd, signal);
            assert_eq!(ended, without, "{what} under {strategy}: ended otherwise than without the library");
            let text = fs::read_to_string(&file).unwrap_or_default();
            let reports: Vec<serde_json::Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {l}")))
                .collect();
            assert_eq!(reports.len(), 1, "{what} under {strategy}: one report expected:\n{text}");
            assert!(
                reports[0]["totals"]["counters"]["locked"].as_u64() > Some(0),
                "{what} under {strategy}: {:#}",
                reports[0]
            );
        }
        eprintln!("{what}: {without:?} (Ok: killed by that signal; Err: exit status), with a report");
    }
}

/// Threads that lock, then "ready", then an idle wait for the signal.
const PYTHON_WAITS: &str = r#"
import sys, threading, time
lock = threading.Lock()
def bump():
    for _ in range(20000):
        with lock:
            pass
threads = [threading.Thread(target=bump) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print("ready", file=sys.stderr, flush=True)
time.sleep(600)
"#;

const NODE_WAITS: &str = r#"
const crypto = require('crypto');
let left = 32;
for (let i = 0; i < 32; i++) crypto.pbkdf2(String(i), 'salt', 1000, 32, 'sha256', () => {
    if (--left === 0) console.error('ready');
});
setInterval(() => {}, 1000);
"#;

pub(crate) fn python_ended_by_signals() {
    check_endings(&Runtime {
        what: "python3",
        program: PathBuf::from(PYTHON),
        args: vec!["-I".into(), "-c".into(), PYTHON_WAITS.into()],
        signals: &[libc::SIGINT, libc::SIGTERM],
    });
}

pub(crate) fn node_ended_by_signals() {
    check_endings(&Runtime {
        what: "node",
        program: tool("node"),
        args: vec!["-e".into(), NODE_WAITS.into()],
        signals: &[libc::SIGINT, libc::SIGTERM],
    });
}

pub(crate) fn java_ended_by_signals() {
    let scratch = Scratch::new("endings-java");
    let classes = compiled_hammer(&scratch);
    check_endings(&Runtime {
        what: "java",
        program: tool("java"),
        args: hammer_args(&classes, 2_000_000_000),
        signals: &[libc::SIGTERM, libc::SIGINT],
    });
}
