//! Integration tests of the `spinmutex` command and its environment: `SPINMUTEX_*`
//! names it does not know, statistics that would make `bench`'s arms incomparable, a
//! reader of its output that goes away while a program runs, an output that fails or
//! a file that cannot be made; and of the test
//! suite's own closing line over the programs missing from the machine.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::harness::{tests, Suite};
use common::{lib_path, preloaded, run_bounded, scratch, Outcome};

const LIMIT: Duration = Duration::from_secs(180);

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_spinmutex"))
}

/// The command with a clean environment (no SPINMUTEX_*, no LD_PRELOAD) and the
/// library of this build.
fn spinmutex(args: &[&str]) -> Command {
    let mut cmd = preloaded(bin(), None);
    cmd.env("SPINMUTEX_LIB", lib_path()).args(args);
    cmd
}

/// Checks that `o` is a usage error (exit 2) whose first line contains every one of
/// `words`, and that nothing ran: no progress or report line of a subcommand.
fn assert_refused(what: &str, o: &Outcome, words: &[&str]) {
    assert_eq!(o.status.and_then(|s| s.code()), Some(2), "{what}: {o:?}");
    let first = o.stderr.lines().next().unwrap_or("");
    assert!(first.starts_with("error: "), "{what}: {o:?}");
    for w in words {
        assert!(first.contains(w), "{what}: the first line does not say {w:?}: {o:?}");
    }
    assert!(!o.stderr.contains("spinmutex run:") && !o.stderr.contains("spinmutex ab:"), "{what}: {o:?}");
    assert!(!o.stderr.contains("spinmutex bench:") && o.stdout.is_empty(), "{what}: {o:?}");
}

/// A misspelt setting, given with `-e` or inherited, would run the program with the
/// default in its place (a "baseline" that quietly runs `spin`): `run`, `ab` and
/// `bench` refuse it before running anything, naming the setting it most likely meant.
/// The names the command itself and the test suite use are not refused.
fn unknown_spinmutex_names_are_refused_with_the_nearest_setting() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let program = ["--", "sh", "-c", touch.as_str()];
    let subcommands: [&[&str]; 4] = [
        &["run"],
        &["ab", "-n", "2", "--warmup", "0"],
        &["bench", "--threads", "1", "--loads", "1", "--runs", "1", "--duration-ms", "10"],
        &["bench", "--rwlock", "--threads", "1", "--runs", "1", "--duration-ms", "10"],
    ];
    for sub in subcommands {
        let program: &[&str] = if sub[0] == "bench" { &[] } else { &program };
        let given = [sub, &["-e", "SPINMUTEX_STRATEGI=glibc"], program].concat();
        let o = run_bounded(spinmutex(&given), LIMIT);
        assert_refused(
            &format!("{given:?}"),
            &o,
            &["SPINMUTEX_STRATEGI", "did you mean SPINMUTEX_STRATEGY?"],
        );

        let mut cmd = spinmutex(&[sub, program].concat());
        cmd.env("SPINMUTEX_SPINLIMIT", "5us");
        let o = run_bounded(cmd, LIMIT);
        assert_refused(
            &format!("{sub:?} with SPINMUTEX_SPINLIMIT inherited"),
            &o,
            &["SPINMUTEX_SPINLIMIT", "environment", "did you mean SPINMUTEX_SPIN_LIMIT?"],
        );
        assert!(!marker.exists(), "{sub:?}: the program ran");
    }
    // Known names pass: the command's own (SPINMUTEX_LIB is set by `spinmutex()`) and the
    // test suite's, inherited or given.
    let mut cmd = spinmutex(&["run", "-e", "SPINMUTEX_TESTS_REQUIRE_ALL=0", "--", "sh", "-c", &touch]);
    cmd.env("SPINMUTEX_TESTS_REQUIRE_ALL", "0");
    run_bounded(cmd, LIMIT).assert_success("run with known names");
    assert!(marker.exists(), "run with known names did not run the program");
}

/// Statistics slow the arms that load the library and not the lock-free control, so
/// `bench` refuses them, from its options or its environment, as `ab` does.
fn bench_refuses_statistics_like_ab() {
    for rwlock in [false, true] {
        let mut base = vec!["bench", "--threads", "1", "--runs", "1", "--duration-ms", "10"];
        if rwlock {
            base.push("--rwlock");
        } else {
            base.extend(["--loads", "1"]);
        }
        for extra in [&["--stats"][..], &["--stats=json"], &["-e", "SPINMUTEX_STATS=1"]] {
            let args = [&base[..], extra].concat();
            let o = run_bounded(spinmutex(&args), LIMIT);
            assert_refused(&format!("{args:?}"), &o, &["SPINMUTEX_STATS", "not be comparable"]);
        }
        let mut cmd = spinmutex(&base);
        cmd.env("SPINMUTEX_STATS", "text");
        let o = run_bounded(cmd, LIMIT);
        assert_refused(
            &format!("{base:?} with SPINMUTEX_STATS inherited"),
            &o,
            &["inherited", "not be comparable"],
        );
    }
    // Statistics set off are no statistics.
    let mut cmd =
        spinmutex(&["bench", "--threads", "1", "--loads", "1", "--runs", "1", "--duration-ms", "10"]);
    cmd.env("SPINMUTEX_STATS", "0");
    run_bounded(cmd, LIMIT).assert_success("bench with SPINMUTEX_STATS=0");
}

/// The processes (other than this test's) whose environment holds `entry`.
fn processes_with(entry: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(env) = std::fs::read(e.path().join("environ")) {
            if env.split(|b| *b == 0).any(|kv| kv == entry.as_bytes()) {
                found.push(pid);
            }
        }
    }
    found
}

/// `ab --show-output ... 2>&1 | head`: the reader of the command's output goes away
/// while the program runs, and the program's next line, which the command passes on,
/// ends the command by SIGPIPE. The program, in a process group of its own that the
/// signal does not reach, and which wrote its last line, must not outlive the command.
fn ab_ended_by_a_broken_pipe_stops_the_program() {
    // An ordinary marker (a SPINMUTEX_ name the command does not know it would refuse).
    let owner = std::process::id().to_string();
    let marker = format!("PIPE_TEST_OWNER={owner}");
    let script = "echo first >&2; sleep 1; echo second >&2; exec sleep 60";
    let args = ["ab", "-n", "2", "--warmup", "0", "-s", "glibc", "--without-none", "--show-output"];
    let mut cmd = spinmutex(&[&args[..], &["--", "sh", "-c", script]].concat());
    cmd.env("PIPE_TEST_OWNER", &owner);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn spinmutex ab");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while line != "first\n" {
        line.clear();
        let n = err.read_line(&mut line).expect("read the command's stderr");
        assert!(n > 0, "the program's first line never came");
    }
    drop(err);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("spinmutex ab did not end after its reader went away");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "ab ended otherwise: {status:?}");
    // Processes of the group that took SIGTERM or SIGKILL may take a moment to be gone.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = processes_with(&marker);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        left = processes_with(&marker);
    }
    for pid in &left {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert!(left.is_empty(), "processes of the program outlived spinmutex ab: {left:?}");
}

/// A full disk under standard output, or a reader of it that quits at once, loses
/// neither `bench`'s nor `ab`'s files: they are written before the text report, and a
/// failed write of the report is an error on standard error (exit 1), not a panic.
fn results_survive_a_standard_output_that_fails() {
    let dir = scratch();
    let file = |name: &str| dir.path().join(name).display().to_string();
    let bench = ["bench", "--threads", "1", "--loads", "1", "--runs", "1", "--duration-ms", "10"];
    let ab = ["ab", "-n", "2", "--warmup", "0", "-s", "glibc", "--without-none"];
    for (what, args) in [
        ("bench", [&bench[..], &["--json", &file("b.json"), "--csv", &file("b.csv")]].concat()),
        ("ab", [&ab[..], &["--json", &file("a.json"), "--", "true"]].concat()),
    ] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("open /dev/full");
        let o = spinmutex(&args).stdin(Stdio::null()).stdout(full).output().expect("run spinmutex");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{what} >/dev/full: {stderr}");
        assert!(stderr.contains("cannot write to standard output"), "{what} >/dev/full: {stderr}");
        assert!(!stderr.contains("panicked"), "{what} >/dev/full: {stderr}");
    }
    for name in ["b.json", "b.csv", "a.json"] {
        let text = std::fs::read_to_string(file(name)).unwrap_or_default();
        assert!(text.len() > 10, "{name} was not written");
        std::fs::remove_file(file(name)).unwrap();
    }
    // `| true`: the text report meets a closed pipe; the files are there already.
    let mut child = spinmutex(&[&bench[..], &["--json", &file("b.json")]].concat())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn spinmutex bench");
    drop(child.stdout.take());
    let status = child.wait().expect("wait for spinmutex bench");
    assert!(std::fs::metadata(file("b.json")).is_ok(), "bench | true wrote no file: {status:?}");
}

/// A file `bench` or `ab` could not make is refused before anything runs, not after
/// the whole measurement.
fn an_output_file_that_cannot_be_made_is_refused_first() {
    let dir = scratch();
    let bench = ["bench", "--threads", "1", "--loads", "1", "--runs", "1", "--duration-ms", "10"];
    let here = dir.path().display().to_string();
    for (option, path, words) in [
        ("--json", "/nonexistent/x.json", "no directory"),
        ("--csv", here.as_str(), "is a directory"),
        ("--svg", here.as_str(), "is a directory"),
    ] {
        let args = [&bench[..], &[option, path]].concat();
        assert_refused(&format!("{args:?}"), &run_bounded(spinmutex(&args), LIMIT), &[option, words]);
    }
    let args = ["ab", "-n", "2", "--json", "/nonexistent/x.json", "--", "true"];
    assert_refused(&format!("{args:?}"), &run_bounded(spinmutex(&args), LIMIT), &["--json", "no directory"]);
}

/// The closing line of every test binary totals the skips of all the binaries of the
/// same `cargo test` so far (the files of other runs left out) and gives the one
/// `apt-get install` line with every package that would run them.
fn skips_are_totalled_over_the_binaries_of_a_run() {
    use common::harness::{closing_line, package_in};
    assert_eq!(package_in("sqlite3.h (libsqlite3-dev)"), Some("libsqlite3-dev"));
    assert_eq!(package_in("the ThreadSanitizer runtime (package libtsan2)"), Some("libtsan2"));
    assert_eq!(package_in("the spinmutex command (cargo build -p spinmutex-cli)"), None);
    let files = [
        "run 10:500\nskip sysbench\nskip fio\nskip fio\n",
        "run 10:500\n",
        "run 10:500\nskip libjemalloc2 python3\nskip \n",
        "run 99:1\nskip valgrind\n",
    ];
    let line = closing_line("10:500", files.iter().map(|f| f.to_string()));
    assert_eq!(
        line,
        "skipped 5 in the 3 test binaries of this run so far: run `apt-get install fio libjemalloc2 python3 \
         sysbench` to run them (1 of them skipped for other reasons, given above)"
    );
    let line = closing_line("10:500", ["run 10:500\n".to_string()].into_iter());
    assert_eq!(line, "skipped 0 in the 1 test binary of this run so far");
    // End to end: this binary, started by this test with a filter that selects nothing,
    // leaves its file and closes with the total of its own run (this test's process).
    let mut itself = Command::new(std::env::current_exe().unwrap());
    itself.arg("no test has this name");
    let o = run_bounded(itself, LIMIT);
    o.assert_success("this test binary with an empty selection");
    let last = o.stdout.lines().last().unwrap_or("");
    assert_eq!(last, "skipped 0 in the 1 test binary of this run so far", "{}", o.stdout);
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(
        suite,
        unknown_spinmutex_names_are_refused_with_the_nearest_setting,
        bench_refuses_statistics_like_ab,
        ab_ended_by_a_broken_pipe_stops_the_program,
        results_survive_a_standard_output_that_fails,
        an_output_file_that_cannot_be_made_is_refused_first,
        skips_are_totalled_over_the_binaries_of_a_run,
    );
    suite.run()
}
