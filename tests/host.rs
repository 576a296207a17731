//! The host cannot tell the library is there, except by speed: programs that are correct
//! under glibc, written as an adversary would, must behave exactly as under glibc under
//! every strategy and knob, with statistics and tracing on or off.
//!
//! * memory freed by the next owner right after an unlock (a hardware watchpoint makes
//!   this deterministic; a timer-driven version makes it likely), for mutexes and
//!   rwlocks;
//! * a cancellation pending while a thread locks (tracing must not add a cancellation
//!   point);
//! * descriptors closed and reused by the program, standard error closed before exit;
//! * signal handlers that run while a thread is owed a handoff, and `siglongjmp`;
//! * how much of the caller's stack the lock path and the report signal use;
//! * settings that must not change how the program reacts to signals, even after it
//!   dlopens and closes the library;
//! * no trace file for forked children that never lock, whole lines on a full disk, no
//!   residue of a killed process in a shared mutex;
//! * Valgrind's helgrind and drd, ThreadSanitizer: the library steps aside.
//! * trace and statistics files that are pipes or FIFOs never stop the program; files no
//!   report could reach are refused at load; warnings stay whole lines;
//! * a setuid program ignores the settings that name files, and the statistics file is
//!   the one opened at load even if its path is replaced by a link.

mod common;

use common::harness::{tests, Need, Suite};
use common::{c_test, preloaded, run_bounded, scratch, Outcome, STRATEGIES};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// The knobs every program here runs under, on top of each strategy. The trace file of
/// the last one is set per run.
fn knob_sets(trace: &Path) -> Vec<Vec<(String, String)>> {
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    vec![
        vec![],
        pairs(&[("SPINMUTEX_FAIR", "1")]),
        pairs(&[("SPINMUTEX_HANDOFF_AFTER", "1"), ("SPINMUTEX_HANDOFF_WAIT", "20us")]),
        pairs(&[("SPINMUTEX_STATS", "1"), ("SPINMUTEX_STATS_FILE", "/dev/null")]),
        pairs(&[("SPINMUTEX_TRACE", "trace"), ("SPINMUTEX_TRACE_FILE", trace.to_str().expect("utf-8 path"))]),
    ]
}

fn describe(what: &str, o: &Outcome) -> String {
    format!(
        "{what}: status {:?}, timed out {}\n--- stdout\n{}--- stderr\n{}",
        o.status, o.timed_out, o.stdout, o.stderr
    )
}

/// Runs `program args` without the library (it must pass: the expectations are
/// glibc's), then under every strategy with every knob set; collects all failures.
fn everywhere(program: &str, args: &[&str]) {
    let dir = scratch();
    let path = c_test(program);
    assert!(path.exists(), "{} was not built", path.display());
    let mut failures = Vec::new();
    let mut base = preloaded(&path, None);
    base.args(args);
    let o = run_bounded(base, LIMIT);
    if !o.success() {
        failures.push(describe(&format!("{program} {args:?} without the library"), &o));
    }
    for strategy in STRATEGIES {
        for knobs in knob_sets(&dir.path().join("trace.log")) {
            let mut cmd = preloaded(&path, Some(strategy));
            cmd.args(args).envs(knobs.iter().map(|(k, v)| (k, v)));
            let o = run_bounded(cmd, LIMIT);
            if !o.success() {
                failures.push(describe(&format!("{program} {args:?} under {strategy} with {knobs:?}"), &o));
            }
        }
    }
    assert!(failures.is_empty(), "{} failing runs:\n\n{}", failures.len(), failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------
// 1. Nothing touches a mutex after its release.

/// A write watchpoint on the lock word unmaps the mutex's page the instant the release
/// makes it free; any later read by the unlock faults. Deterministic, where the kernel
/// offers hardware watchpoints (the program says "skipped" otherwise).
fn unlock_never_reads_the_mutex_after_releasing_it() {
    everywhere("release_watch", &["30"]);
    let o = run_bounded(preloaded(c_test("release_watch"), Some("spin")), LIMIT);
    if o.stderr.contains("skipped:") {
        eprintln!("note: {}", o.stderr.trim());
    }
}

/// The next owner drops the last reference and unmaps the object while timer signals
/// stretch the unlocking thread's path after its release.
fn mutex_freed_by_the_next_owner_at_once() {
    everywhere("unlock_then_free", &["timer", "600"]);
    everywhere("unlock_then_free", &["yield", "400"]);
}

/// The same for rwlocks (a writer or two readers release, the next holder unmaps the
/// page at once), with statistics and tracing among the knobs: neither may touch the
/// lock after its release.
fn rwlock_freed_by_the_next_owner_at_once() {
    everywhere("rwlock_reuse", &[]);
}

// ---------------------------------------------------------------------------------
// 2. Lock and unlock are not cancellation points.

fn lock_and_unlock_are_not_cancellation_points() {
    everywhere("cancel_in_lock", &[]);
}

// ---------------------------------------------------------------------------------
// 3. Descriptors.

/// A daemon closes every descriptor above 2 and opens its data file, which gets the
/// trace file's old number; trace lines must not land in it, and a forked child must
/// keep its copy.
fn descriptors_closed_and_reused_by_the_program() {
    let dir = scratch();
    let data = dir.path().join("data");
    everywhere("fd_hygiene", &["daemon", data.to_str().expect("utf-8 path")]);
    everywhere("fd_hygiene", &["close-all"]);
}

/// xz and GNU sort close standard error before they exit: the report must still reach
/// the standard error the program started with.
fn report_reaches_standard_error_after_the_program_closed_it() {
    for strategy in STRATEGIES {
        for format in ["1", "json"] {
            let mut cmd = preloaded(c_test("fd_hygiene"), Some(strategy));
            cmd.arg("close-stderr").env("SPINMUTEX_STATS", format);
            let o = run_bounded(cmd, LIMIT);
            assert!(o.success(), "{}", describe(&format!("close-stderr under {strategy}"), &o));
            let marker = if format == "json" { "\"pid\":" } else { "spinmutex: lock statistics" };
            assert!(
                o.stderr.contains(marker),
                "{strategy}, SPINMUTEX_STATS={format}: no report on stderr:\n{}",
                o.stderr
            );
        }
    }
}

/// A program started with standard error closed (`2>&-`) gives descriptor 2 to its first
/// file: neither the exit report nor trace lines may land in it.
fn no_output_into_a_file_that_took_descriptor_2() {
    for strategy in STRATEGIES {
        for (name, value) in
            [("SPINMUTEX_STATS", "1"), ("SPINMUTEX_STATS", "json"), ("SPINMUTEX_TRACE", "trace")]
        {
            let dir = scratch();
            let data = dir.path().join("data");
            let mut cmd = preloaded(c_test("fd_hygiene"), Some(strategy));
            cmd.arg("no-stderr").arg(&data).env(name, value);
            let o = run_bounded(cmd, LIMIT);
            assert!(o.success(), "{}", describe(&format!("no-stderr under {strategy}, {name}={value}"), &o));
        }
    }
}

/// A forked child that never locks (or execs at once) leaves no `FILE.<pid>` behind.
fn no_trace_file_for_children_that_never_trace() {
    for strategy in STRATEGIES {
        let dir = scratch();
        let trace = dir.path().join("trace.log");
        let mut cmd = preloaded(c_test("fd_hygiene"), Some(strategy));
        cmd.arg("fork-quiet").env("SPINMUTEX_TRACE", "trace").env("SPINMUTEX_TRACE_FILE", &trace);
        let o = run_bounded(cmd, LIMIT);
        assert!(o.success(), "{}", describe(&format!("fork-quiet under {strategy}"), &o));
        let files: Vec<String> = std::fs::read_dir(dir.path())
            .expect("read scratch directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files, ["trace.log"], "{strategy}: trace files {files:?}");
    }
}

/// With the file size limited as a full disk would, the trace keeps whole lines only.
fn trace_on_a_full_disk_holds_whole_lines() {
    for format in ["text", "json"] {
        let dir = scratch();
        let trace = dir.path().join("trace.log");
        let mut cmd = preloaded(c_test("fd_hygiene"), Some("spin"));
        cmd.arg("fsize")
            .env("SPINMUTEX_TRACE", "trace")
            .env("SPINMUTEX_TRACE_FORMAT", format)
            .env("SPINMUTEX_TRACE_FILE", &trace);
        let o = run_bounded(cmd, LIMIT);
        assert!(o.success(), "{}", describe("fsize", &o));
        let text = std::fs::read_to_string(&trace).expect("read the trace");
        assert!(text.len() > 2000, "{format}: the trace did not fill up: {} bytes", text.len());
        assert!(text.len() <= 4000, "{format}: the trace outgrew the limit: {} bytes", text.len());
        assert!(text.ends_with('\n'), "{format}: the trace ends with a partial line: {text:?}");
        for line in text.lines() {
            let whole = if format == "json" {
                line.starts_with('{') && line.ends_with('}')
            } else {
                // An event names its mutex; the count of events the full file refused,
                // written at exit, fits whenever the space left is too short for an event
                // but not for it.
                let dropped = line
                    .split_once(" event=dropped count=")
                    .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                line.contains(" event=") && (line.contains(" mutex=0x") || dropped)
            };
            assert!(whole, "{format}: partial line {line:?}");
        }
    }
}

// ---------------------------------------------------------------------------------
// 4. Handoffs and signals.

/// A thread owed a handoff gets a signal whose handler locks the same mutex, locks a
/// mutex held by another waiter of the first, or leaves with siglongjmp.
fn handoff_never_strands_a_lock_with_a_signalled_thread() {
    everywhere("handoff_signals", &[]);
}

// ---------------------------------------------------------------------------------
// 5. Stack.

/// The lock path (mutexes and rwlocks) with tracing on takes at most 1,152 bytes of the
/// caller's stack, `pthread_mutex_init` (which may unwind the stack) at most 2,304, and
/// the report signal's handler (listing a mutex and an rwlock) at most 1 KiB; a
/// PTHREAD_STACK_MIN thread survives them. (The lock path's bound allows
/// for the first trace event of a call site, which registers it with `tracing`: about
/// 1,064 bytes since the profiles unwind on panic, whose landing pads take frame space.)
fn lock_path_and_report_handler_fit_in_a_small_stack() {
    let dir = scratch();
    let trace = dir.path().join("trace.log");
    let trace = trace.to_str().expect("utf-8 path");
    let lock_envs: &[&[(&str, &str)]] = &[
        &[],
        &[("SPINMUTEX_TRACE", "trace"), ("SPINMUTEX_TRACE_FILE", trace)],
        &[("SPINMUTEX_TRACE", "trace"), ("SPINMUTEX_TRACE_FORMAT", "json"), ("SPINMUTEX_TRACE_FILE", trace)],
        &[("SPINMUTEX_STATS", "1"), ("SPINMUTEX_STATS_FILE", "/dev/null")],
    ];
    let mut runs: Vec<(&str, &[(&str, &str)])> = Vec::new();
    for mode in ["lock", "rwlock"] {
        runs.extend(lock_envs.iter().map(|env| (mode, *env)));
    }
    runs.push(("init", &[]));
    runs.push(("init", &[("SPINMUTEX_STATS", "1"), ("SPINMUTEX_STATS_FILE", "/dev/null")]));
    runs.push(("handler", &[("SPINMUTEX_STATS", "1")]));
    runs.push(("handler", &[("SPINMUTEX_STATS", "json")]));
    let mut report = Vec::new();
    for strategy in STRATEGIES {
        for (mode, env) in &runs {
            let mut cmd = preloaded(c_test("stack_depth"), Some(strategy));
            let limit = match *mode {
                "handler" => "1024",
                // Unwinding: `auto` at a wrapper (1,736 bytes measured), the statistics'
                // call stack of every class (1,944).
                "init" => "2304",
                _ => "1152",
            };
            cmd.args([mode, limit]).envs(env.iter().copied());
            let o = run_bounded(cmd, LIMIT);
            assert!(
                o.success(),
                "{}",
                describe(&format!("stack_depth {mode} under {strategy} with {env:?}"), &o)
            );
            report.push(format!("{strategy} {env:?}: {}", o.stdout.trim()));
        }
    }
    eprintln!("stack use (bytes):\n{}", report.join("\n"));
}

// ---------------------------------------------------------------------------------
// 6. Settings that would change the program's behaviour.

/// Runs hello_contended with `var=value` and checks for exactly one stderr line naming
/// the variable and the value.
fn one_warning(var: &str, value: &str, extra: &[(&str, &str)]) -> Outcome {
    let mut cmd = preloaded(c_test("hello_contended"), Some("spin"));
    cmd.env(var, value).envs(extra.iter().copied());
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success(), "{}", describe(&format!("{var}={value}"), &o));
    let lines: Vec<&str> = o.stderr.lines().filter(|l| l.starts_with("spinmutex: ")).collect();
    let warnings: Vec<&&str> = lines.iter().filter(|l| l.contains(var)).collect();
    assert_eq!(warnings.len(), 1, "{var}={value}: expected one warning line, got:\n{}", o.stderr);
    assert!(warnings[0].contains(&format!("{value:?}")), "{var}={value}: {}", warnings[0]);
    o
}

/// A program that dlopens the library and closes it again still has the library's
/// signal handlers (statistics on): the library stays mapped, and the signals do what
/// they do with it preloaded, not crash in unmapped code.
fn a_closed_library_still_handles_its_signals() {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = preloaded(c_test("dlclose_signals"), None);
    cmd.arg(common::lib_path()).env("SPINMUTEX_STATS", "1");
    let o = run_bounded(cmd, LIMIT);
    assert_eq!(o.status.and_then(|s| s.signal()), Some(libc::SIGTERM), "{}", describe("dlclose_signals", &o));
    assert!(o.stderr.contains("lock statistics"), "no report on SIGUSR2:\n{}", o.stderr);
}

/// Signals whose default action a program relies on are refused, with one line.
fn report_signal_refuses_signals_programs_rely_on() {
    for signal in ["2", "9", "11", "15", "SIGTERM", "INT", "65", "RTMIN+31"] {
        one_warning(
            "SPINMUTEX_STATS_SIGNAL",
            signal,
            &[("SPINMUTEX_STATS", "1"), ("SPINMUTEX_STATS_FILE", "/dev/null")],
        );
    }
    for accepted in ["0", "USR1", "SIGUSR2", "10", "12", "34", "RTMIN+2", "RTMAX-1", "64"] {
        let mut cmd = preloaded(c_test("hello_contended"), Some("spin"));
        cmd.env("SPINMUTEX_STATS", "1")
            .env("SPINMUTEX_STATS_FILE", "/dev/null")
            .env("SPINMUTEX_STATS_SIGNAL", accepted);
        let o = run_bounded(cmd, LIMIT);
        assert!(
            o.success() && o.stderr.is_empty(),
            "{}",
            describe(&format!("SPINMUTEX_STATS_SIGNAL={accepted}"), &o)
        );
    }
    // SIGTERM still ends the program, whatever was asked.
    for strategy in STRATEGIES {
        let mut cmd = preloaded(c_test("raise_signal"), Some(strategy));
        cmd.arg("15").env("SPINMUTEX_STATS", "1").env("SPINMUTEX_STATS_SIGNAL", "15");
        let o = run_bounded(cmd, LIMIT);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            o.status.and_then(|s| s.signal()),
            Some(15),
            "{}",
            describe(&format!("raise_signal 15 under {strategy}"), &o)
        );
    }
}

/// A statistics file in a missing directory is reported at load, not lost silently.
fn statistics_file_in_a_missing_directory_is_reported() {
    let o = one_warning("SPINMUTEX_STATS_FILE", "/nonexistent/dir/report.txt", &[("SPINMUTEX_STATS", "1")]);
    assert!(o.stderr.contains("lock statistics"), "the report should go to stderr instead:\n{}", o.stderr);
}

/// A statistics file no report could reach is refused at load with one line, and the
/// report goes to standard error.
fn statistics_file_that_takes_no_report_is_refused() {
    let dir = scratch();
    for (file, why) in [
        (dir.path().to_str().expect("utf-8 path"), "a directory"),
        ("/dev/full", "/dev/full"),
        ("/proc/self/status", "/proc"),
        ("/proc/version", "/proc"),
    ] {
        let o = one_warning("SPINMUTEX_STATS_FILE", file, &[("SPINMUTEX_STATS", "1")]);
        assert!(o.stderr.contains(why), "{file}: the line should say why:\n{}", o.stderr);
        assert!(o.stderr.contains("lock statistics"), "{file}: no report on stderr:\n{}", o.stderr);
    }
}

/// A warning about a very long value is still one whole line: the value is shortened,
/// with an ellipsis and its length.
fn warnings_for_long_values_are_whole_lines() {
    for (var, value) in [
        ("SPINMUTEX_SPIN_LIMIT", "9".repeat(1000)),
        ("SPINMUTEX_STATS_FILE", format!("/nonexistent/{}", "d".repeat(3000))),
    ] {
        let mut cmd = preloaded(c_test("hello_contended"), Some("spin"));
        cmd.env(var, &value).env("SPINMUTEX_STATS", "1");
        let o = run_bounded(cmd, LIMIT);
        assert!(o.success(), "{}", describe(var, &o));
        assert!(o.stderr.ends_with('\n'), "{var}: stderr does not end with a newline:\n{}", o.stderr);
        let warning: Vec<&str> = o.stderr.lines().filter(|l| l.contains(var)).collect();
        assert_eq!(warning.len(), 1, "{var}: expected one warning:\n{}", o.stderr);
        assert!(warning[0].len() < 512, "{var}: the warning is {} bytes long", warning[0].len());
        let shown = format!("… ({} bytes)", value.len());
        assert!(warning[0].contains(&shown), "{var}: the value is not shown shortened: {}", warning[0]);
        assert!(o.stderr.contains("lock statistics for pid"), "{var}: the report is missing:\n{}", o.stderr);
    }
}

// ---------------------------------------------------------------------------------
// 7. Output that cannot stop the program.

/// What becomes of the reading end of the program's standard output.
#[derive(Clone, Copy, Debug)]
enum Reader {
    /// Reads `n` bytes, then holds the pipe open and never reads again.
    Stalls(usize),
    /// Reads `n` bytes, then closes the pipe (`head -c n`).
    Leaves(usize),
}

/// Runs `cmd` with its standard output a pipe read as `reader` says; waits up to `limit`.
fn run_with_reader(mut cmd: std::process::Command, reader: Reader, limit: Duration) -> Outcome {
    use std::io::Read;
    use std::process::Stdio;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let n = match reader {
        Reader::Stalls(n) | Reader::Leaves(n) => n,
    };
    let mut first = vec![0u8; n];
    let _ = out.read_exact(&mut first);
    let held = match reader {
        Reader::Stalls(_) => Some(out),
        Reader::Leaves(_) => {
            drop(out);
            None
        }
    };
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(held);
    Outcome {
        status,
        stdout: String::new(),
        stderr: errors.join().expect("stderr reader"),
        timed_out: status.is_none(),
    }
}

/// A trace file that is a pipe whose reader stops reading, or goes away (`/dev/stdout`
/// into `head -c 1000`, `>(head -c 1000)`), costs trace events, never the program's
/// progress or its exit status; the dropped events are counted on standard error.
fn trace_into_a_pipe_never_stops_the_program() {
    for reader in [Reader::Stalls(1000), Reader::Leaves(1000)] {
        for strategy in ["spin", "glibc"] {
            let mut cmd = preloaded(c_test("mutex_exclusion"), Some(strategy));
            cmd.env("SPINMUTEX_TRACE", "trace").env("SPINMUTEX_TRACE_FILE", "/dev/stdout");
            let o = run_with_reader(cmd, reader, LIMIT);
            let what = format!("mutex_exclusion tracing into a pipe whose reader {reader:?}, {strategy}");
            assert!(o.success(), "{}", describe(&what, &o));
            assert!(o.stderr.contains("trace events were dropped"), "{}", describe(&what, &o));
        }
    }
}

/// Tracing to standard error (the default) that is a pipe whose reader stops reading:
/// the library writes through a non-blocking description of its own, so the program
/// ends in its usual time, whatever the pipe holds.
fn trace_into_standard_error_never_stops_the_program() {
    use std::io::Read;
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    let mut cmd = preloaded(c_test("mutex_exclusion"), Some("spin"));
    cmd.env("SPINMUTEX_TRACE", "trace").stdin(std::process::Stdio::null());
    cmd.stdout(std::process::Stdio::null()).stderr(writer);
    let mut child = cmd.spawn().expect("spawn mutex_exclusion");
    drop(cmd); // our copy of the pipe's writing end
    let mut first = [0u8; 1000];
    reader.read_exact(&mut first).expect("the first trace lines");
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break Some(status);
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(reader);
    assert!(
        status.is_some_and(|s| s.success()),
        "mutex_exclusion tracing into a stalled stderr pipe: {status:?}"
    );
}

/// A FIFO with no reader as the trace file: the program starts and ends as usual; one
/// line says so, and the events are counted dropped.
fn trace_into_a_fifo_without_reader_never_stops_the_program() {
    let dir = scratch();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("run mkfifo");
    assert!(made.success(), "mkfifo failed");
    let mut cmd = preloaded(c_test("hello_contended"), Some("spin"));
    cmd.env("SPINMUTEX_TRACE", "trace").env("SPINMUTEX_TRACE_FILE", &fifo);
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success(), "{}", describe("trace into a FIFO with no reader", &o));
    assert!(o.stderr.contains("FIFO with no reader"), "{}", describe("trace into a FIFO", &o));
    assert!(o.stderr.contains("trace events were dropped"), "{}", describe("trace into a FIFO", &o));
    // The same FIFO as the statistics file: refused at load, the report on stderr.
    let mut cmd = preloaded(c_test("hello_contended"), Some("spin"));
    cmd.env("SPINMUTEX_STATS", "1").env("SPINMUTEX_STATS_FILE", &fifo);
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success(), "{}", describe("statistics into a FIFO with no reader", &o));
    assert!(o.stderr.contains("FIFO with no reader"), "{}", describe("statistics into a FIFO", &o));
    assert!(o.stderr.contains("lock statistics for pid"), "{}", describe("statistics into a FIFO", &o));
}

/// A statistics file that is a pipe whose reader went away before the exit report: the
/// program exits as it would (no SIGPIPE), and the report goes to standard error after a
/// line that says why.
fn statistics_into_a_pipe_whose_reader_left() {
    let mut cmd = preloaded(c_test("mutex_exclusion"), Some("spin"));
    cmd.env("SPINMUTEX_STATS", "1").env("SPINMUTEX_STATS_FILE", "/dev/stdout");
    let o = run_with_reader(cmd, Reader::Leaves(0), LIMIT);
    assert!(o.success(), "{}", describe("statistics into a closed pipe", &o));
    assert!(o.stderr.contains("its reader went away"), "{}", describe("statistics into a closed pipe", &o));
    assert!(
        o.stderr.contains("lock statistics for pid"),
        "{}",
        describe("statistics into a closed pipe", &o)
    );
}

// ---------------------------------------------------------------------------------
// 8. Files named by a less privileged user.

/// The statistics file is the one opened at load: a path replaced by a symbolic link
/// before exit does not redirect the report.
fn statistics_file_is_the_one_opened_at_load() {
    let dir = scratch();
    let (file, target) = (dir.path().join("report"), dir.path().join("elsewhere"));
    std::fs::write(&file, "").expect("create the statistics file");
    let mut cmd = preloaded(c_test("stats_swap"), Some("spin"));
    cmd.arg(&file).arg(&target).env("SPINMUTEX_STATS", "1").env("SPINMUTEX_STATS_FILE", &file);
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success(), "{}", describe("stats_swap", &o));
    assert!(!target.exists(), "the report followed the link to {}", target.display());
    let kept = std::fs::read_to_string(dir.path().join("report.old")).expect("read the file opened at load");
    assert!(kept.contains("lock statistics for pid"), "no report in the file opened at load:\n{kept}");
    // The program also closed the library's descriptor: the report goes to standard
    // error, after a line that says why, and still not through the link.
    std::fs::remove_file(&file).expect("remove the link");
    std::fs::write(&file, "").expect("create the statistics file");
    let mut cmd = preloaded(c_test("stats_swap"), Some("spin"));
    cmd.arg(&file).arg(&target).arg("close").env("SPINMUTEX_STATS", "1").env("SPINMUTEX_STATS_FILE", &file);
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success(), "{}", describe("stats_swap close", &o));
    assert!(!target.exists(), "the report followed the link to {}", target.display());
    assert!(o.stderr.contains("leads elsewhere"), "{}", describe("stats_swap close", &o));
    assert!(o.stderr.contains("lock statistics for pid"), "{}", describe("stats_swap close", &o));
}

/// A daemon that closes every descriptor above 2 still gets its report in the statistics
/// file: the path is opened again, and found to be the same file.
fn statistics_file_survives_a_daemon_closing_descriptors() {
    let dir = scratch();
    let (file, data) = (dir.path().join("stats.txt"), dir.path().join("data"));
    let mut cmd = preloaded(c_test("fd_hygiene"), Some("spin"));
    cmd.arg("daemon").arg(&data).env("SPINMUTEX_STATS", "1").env("SPINMUTEX_STATS_FILE", &file);
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success(), "{}", describe("fd_hygiene daemon", &o));
    let text = std::fs::read_to_string(&file).expect("read the statistics file");
    assert!(text.contains("lock statistics for pid"), "no report in the file:\n{text}\n{}", o.stderr);
    assert!(!o.stderr.contains("lock statistics"), "a report went to stderr:\n{}", o.stderr);
}

/// A setuid-root program (linked with the library by RUNPATH) run by `nobody`: the
/// settings that name files are ignored, with one line saying so; nothing is created in
/// a root-only directory; reports and traces go to standard error; the program works.
fn setuid_program_ignores_settings_that_name_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let root = dir.path();
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).expect("chmod scratch");
    // A setuid copy of `id` tells whether this file system honours the setuid bit (a
    // `nosuid` mount does not): without it there is nothing to test here.
    let id = root.join("id");
    std::fs::copy("/usr/bin/id", &id).expect("copy id");
    std::fs::set_permissions(&id, std::fs::Permissions::from_mode(0o4755)).expect("chmod u+s id");
    let probe = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(&id)
        .output()
        .expect("run setpriv");
    if !String::from_utf8_lossy(&probe.stdout).contains("euid=0") {
        eprintln!("skipped: a setuid program does not run setuid in {} (nosuid?)", root.display());
        return;
    }
    let lib_dir = root.join("lib");
    std::fs::create_dir(&lib_dir).expect("mkdir lib");
    std::fs::copy(common::lib_path(), lib_dir.join("libspinmutex.so")).expect("copy the library");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("c-tests/hello_contended.c");
    let program = root.join("hello_setuid");
    let built = std::process::Command::new("cc")
        .args(["-O2", "-pthread", "-I"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("c-tests"))
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .arg("-Wl,--no-as-needed")
        .arg(format!("-L{}", lib_dir.display()))
        .arg("-lspinmutex")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .status()
        .expect("run cc");
    assert!(built.success(), "building the setuid program failed");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o4755)).expect("chmod u+s");
    let secret = root.join("secret");
    std::fs::create_dir(&secret).expect("mkdir secret");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).expect("chmod secret");
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"]).arg(&program);
    cmd.env_remove("LD_PRELOAD")
        .env("SPINMUTEX_STATS", "1")
        .env("SPINMUTEX_STATS_FILE", secret.join("stats"))
        .env("SPINMUTEX_TRACE", "debug")
        .env("SPINMUTEX_TRACE_FILE", secret.join("trace"))
        .env("SPINMUTEX_HANDSHAKE", "fd=1,dev=0,ino=0");
    let o = run_bounded(cmd, LIMIT);
    assert!(o.success(), "{}", describe("setuid hello_contended", &o));
    let left: Vec<_> =
        std::fs::read_dir(&secret).expect("read secret").map(|e| e.expect("entry").file_name()).collect();
    assert!(left.is_empty(), "files created in the root-only directory: {left:?}\n{}", o.stderr);
    let notes: Vec<&str> = o.stderr.lines().filter(|l| l.contains("secure execution")).collect();
    assert_eq!(notes.len(), 1, "expected one line about secure execution:\n{}", o.stderr);
    for name in ["SPINMUTEX_STATS_FILE", "SPINMUTEX_TRACE_FILE", "SPINMUTEX_HANDSHAKE"] {
        assert!(notes[0].contains(name), "the line does not name {name}: {}", notes[0]);
    }
    assert!(o.stderr.contains("lock statistics for pid"), "no report on stderr:\n{}", o.stderr);
}

// ---------------------------------------------------------------------------------
// 9. Residue.

/// A waiter killed in its sleep on a process-shared mutex leaves nothing behind in it.
fn killed_waiter_leaves_no_residue_in_a_shared_mutex() {
    everywhere("fair_shared_kill", &[]);
}

// ---------------------------------------------------------------------------------
// 10. Tools that watch locks.

/// Under helgrind and drd a correct program has no errors with the library preloaded,
/// and the library says once that it steps aside.
fn valgrind_lock_checkers_see_the_locks() {
    for tool in ["helgrind", "drd"] {
        let mut cmd = preloaded("valgrind", Some("spin"));
        cmd.args([&format!("--tool={tool}"), "--error-exitcode=99", "-q"]).arg(c_test("hello_contended"));
        let o = run_bounded(cmd, Duration::from_secs(120));
        assert!(o.success(), "{}", describe(&format!("hello_contended under {tool}"), &o));
        let notes = o.stderr.lines().filter(|l| l.contains("steps aside")).count();
        assert_eq!(notes, 1, "{tool}: expected one note that the library steps aside:\n{}", o.stderr);
    }
}

/// A ThreadSanitizer program (GCC links libtsan dynamically, after the preload) sees
/// every lock: no reported race in a correct program.
fn thread_sanitizer_sees_the_locks() {
    let program = c_test("tsan_counter");
    if !program.exists() {
        eprintln!(
            "skipped: tsan_counter was not built (no ThreadSanitizer runtime, Debian package libtsan2)"
        );
        return;
    }
    for strategy in STRATEGIES {
        let mut cmd = preloaded(&program, Some(strategy));
        cmd.env("TSAN_OPTIONS", "exitcode=66");
        let o = run_bounded(cmd, LIMIT);
        assert!(o.success(), "{}", describe(&format!("tsan_counter under {strategy}"), &o));
        assert!(
            !o.stderr.contains("data race"),
            "{strategy}: ThreadSanitizer reported a race:\n{}",
            o.stderr
        );
    }
}

/// A ThreadSanitizer program's condition-variable waits and signals reach one
/// implementation (the runtime's, then glibc's current one) with the library preloaded:
/// its unversioned reference to `pthread_cond_wait` binds to the library's wrapper,
/// which hands the wait to the runtime's definition, as the reference would have
/// without the library. Ten runs per strategy: when the wait went to glibc's old
/// condition variable instead, runs hung, and the runtime saw a double lock in all.
fn thread_sanitizer_sees_condition_variable_waits() {
    let program = c_test("tsan_condvar");
    for strategy in STRATEGIES {
        for run in 0..10 {
            let mut cmd = preloaded(&program, Some(strategy));
            cmd.env("TSAN_OPTIONS", "exitcode=66");
            let o = run_bounded(cmd, Duration::from_secs(30));
            let what = format!("tsan_condvar under {strategy}, run {run}");
            assert!(o.success(), "{}", describe(&what, &o));
            assert!(!o.stderr.contains("WARNING: ThreadSanitizer"), "{}", describe(&what, &o));
        }
    }
}

/// helgrind and drd see the waits of a condition-variable program with the library
/// preloaded: no errors, and the program finishes. (drd's own preload calls the
/// condition-variable functions without versions, and gets glibc's old ones for all of
/// them only if an unversioned wait binds as glibc would bind it.)
fn valgrind_lock_checkers_see_condition_variable_waits() {
    for tool in ["helgrind", "drd"] {
        let mut cmd = preloaded("valgrind", Some("spin"));
        cmd.args([&format!("--tool={tool}"), "--error-exitcode=99", "-q"])
            .arg(c_test("cond_small"))
            .arg("500");
        let o = run_bounded(cmd, Duration::from_secs(180));
        assert!(o.success(), "{}", describe(&format!("cond_small under {tool}"), &o));
    }
}

/// AddressSanitizer refuses to run behind a preload, and says so; the library must not
/// crash first.
fn address_sanitizer_refuses_clearly() {
    let program = c_test("asan_counter");
    if !program.exists() {
        eprintln!(
            "skipped: asan_counter was not built (no AddressSanitizer runtime, Debian package libasan8)"
        );
        return;
    }
    let o = run_bounded(preloaded(&program, Some("spin")), LIMIT);
    assert!(!o.success(), "{}", describe("asan_counter", &o));
    assert!(o.stderr.contains("ASan runtime does not come first"), "{}", describe("asan_counter", &o));
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(
        suite,
        unlock_never_reads_the_mutex_after_releasing_it,
        mutex_freed_by_the_next_owner_at_once,
        rwlock_freed_by_the_next_owner_at_once,
        lock_and_unlock_are_not_cancellation_points,
        descriptors_closed_and_reused_by_the_program,
        report_reaches_standard_error_after_the_program_closed_it,
        no_output_into_a_file_that_took_descriptor_2,
        no_trace_file_for_children_that_never_trace,
        trace_on_a_full_disk_holds_whole_lines,
        handoff_never_strands_a_lock_with_a_signalled_thread,
        lock_path_and_report_handler_fit_in_a_small_stack,
        report_signal_refuses_signals_programs_rely_on,
        a_closed_library_still_handles_its_signals,
        statistics_file_in_a_missing_directory_is_reported,
        statistics_file_that_takes_no_report_is_refused,
        warnings_for_long_values_are_whole_lines,
        trace_into_a_pipe_never_stops_the_program,
        trace_into_standard_error_never_stops_the_program,
        trace_into_a_fifo_without_reader_never_stops_the_program,
        statistics_into_a_pipe_whose_reader_left,
        statistics_file_is_the_one_opened_at_load,
        statistics_file_survives_a_daemon_closing_descriptors,
        killed_waiter_leaves_no_residue_in_a_shared_mutex,
    );
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        suite.needs(
            "setuid_program_ignores_settings_that_name_files",
            &[Need::Program("setpriv", "util-linux")],
            setuid_program_ignores_settings_that_name_files,
        );
    } else {
        suite.skip(
            "setuid_program_ignores_settings_that_name_files",
            "not run as root (a setuid-root copy is needed)",
        );
    }
    suite.needs(
        "valgrind_lock_checkers_see_the_locks",
        &[Need::Program("valgrind", "valgrind")],
        valgrind_lock_checkers_see_the_locks,
    );
    suite.needs(
        "thread_sanitizer_sees_the_locks",
        &[Need::Built(c_test("tsan_counter"), "the ThreadSanitizer runtime (package libtsan2)")],
        thread_sanitizer_sees_the_locks,
    );
    suite.needs(
        "thread_sanitizer_sees_condition_variable_waits",
        &[Need::Built(c_test("tsan_condvar"), "the ThreadSanitizer runtime (package libtsan2)")],
        thread_sanitizer_sees_condition_variable_waits,
    );
    suite.needs(
        "valgrind_lock_checkers_see_condition_variable_waits",
        &[Need::Program("valgrind", "valgrind")],
        valgrind_lock_checkers_see_condition_variable_waits,
    );
    suite.needs(
        "address_sanitizer_refuses_clearly",
        &[Need::Built(c_test("asan_counter"), "the AddressSanitizer runtime (package libasan8)")],
        address_sanitizer_refuses_clearly,
    );
    suite.run()
}
