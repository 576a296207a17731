//! Tracing and statistics: the events a contended program yields (and the give-up
//! reason SPINMUTEX_FAIR adds), none for an uncontended one, JSON that parses, the report
//! listing the hot class first with a call site that names its module and offset, lock
//! classes that keep every destroyed mutex's counts, rows that add up to the totals, hold
//! times without condition-variable waits, a forked child's own trace file, a full side
//! table, a bad directive, output that statistics never change, the report of a program
//! a signal ends, reports of processes that end together kept whole, and signals the
//! program sees as it left them. Reader-writer locks:
//! classes with every read and write acquisition counted apart, each reader's own hold
//! time, statically initialised rwlocks listed beside mutexes, timeouts per mode, and
//! trace events that name the mode.

mod common;

use common::harness::{tests, Suite};
use common::stats::{assert_rows_add_up, classes_of, json_report};
use common::{c_test, preloaded, run_bounded, scratch, Outcome, STRATEGIES};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn run(program: &str, args: &[&str], strategy: &str, env: &[(&str, &str)]) -> Outcome {
    let mut cmd = preloaded(c_test(program), Some(strategy));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_bounded(cmd, LIMIT);
    out.assert_success(&format!("{program} {args:?} under {strategy} with {env:?}"));
    out
}

/// Every line must parse as one JSON value.
fn assert_json_lines(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    for (i, line) in text.lines().enumerate() {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(line) {
            panic!("{} line {}: not JSON ({e}): {line}", path.display(), i + 1);
        }
    }
}

fn contended_program_yields_every_decision_event() {
    for strategy in ["spin", "futex"] {
        let dir = scratch();
        let trace = dir.path().join("trace.json");
        run(
            "observe_hot",
            &[],
            strategy,
            &[
                ("SPINMUTEX_TRACE", "spinmutex=trace"),
                ("SPINMUTEX_TRACE_FORMAT", "json"),
                ("SPINMUTEX_TRACE_FILE", trace.to_str().unwrap()),
            ],
        );
        let text = std::fs::read_to_string(&trace).unwrap();
        assert_json_lines(&trace);
        let has = |event: &str| text.contains(&format!("\"event\":\"{event}\""));
        for event in ["acquired", "sleep", "wake"] {
            assert!(has(event), "{strategy}: no {event} event in\n{}", &text[..text.len().min(2000)]);
        }
        if strategy == "spin" {
            assert!(has("spin_give_up") || text.contains("\"how\":\"spin\""), "spin: no spinning recorded");
        }
        for line in text.lines().filter(|l| l.contains("\"event\":\"acquired\"")) {
            for key in
                ["\"mutex\":\"0x", "\"tid\":", "\"strategy\":\"", "\"wait_ns\":", "\"spins\":", "\"how\":"]
            {
                assert!(line.contains(key), "acquired event without {key}: {line}");
            }
        }
    }
}

/// SPINMUTEX_FAIR=1: a thread that finds others asleep on the mutex does not spin (the
/// trace says why); without it, the same program never gives that reason.
fn fair_setting_stops_spinning_past_sleepers() {
    for fair in ["1", "0"] {
        let dir = scratch();
        let trace = dir.path().join("trace.json");
        // 16 threads on 4 mutexes for 300 ms: threads sleep on every mutex.
        run(
            "stress",
            &["16", "300"],
            "spin",
            &[
                ("SPINMUTEX_FAIR", fair),
                ("SPINMUTEX_TRACE", "spinmutex=trace"),
                ("SPINMUTEX_TRACE_FORMAT", "json"),
                ("SPINMUTEX_TRACE_FILE", trace.to_str().unwrap()),
            ],
        );
        let text = std::fs::read_to_string(&trace).unwrap();
        let refusals = text.matches("\"reason\":\"sleepers\"").count();
        if fair == "1" {
            assert!(
                refusals > 0,
                "SPINMUTEX_FAIR=1: no spin refused for sleepers in\n{}",
                &text[..text.len().min(2000)]
            );
        } else {
            assert_eq!(refusals, 0, "SPINMUTEX_FAIR=0 refused to spin for sleepers");
        }
    }
}

fn forwarded_contention_is_traced_under_glibc() {
    let dir = scratch();
    let trace = dir.path().join("trace.txt");
    run(
        "observe_hot",
        &[],
        "glibc",
        &[("SPINMUTEX_TRACE", "debug"), ("SPINMUTEX_TRACE_FILE", trace.to_str().unwrap())],
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.contains("event=forward"), "no forward events:\n{}", &text[..text.len().min(2000)]);
}

fn uncontended_program_yields_no_event() {
    for strategy in STRATEGIES {
        let dir = scratch();
        let trace = dir.path().join("trace");
        run(
            "observe_quiet",
            &[],
            strategy,
            &[("SPINMUTEX_TRACE", "spinmutex=trace"), ("SPINMUTEX_TRACE_FILE", trace.to_str().unwrap())],
        );
        let text = std::fs::read_to_string(&trace).unwrap_or_default();
        assert!(text.is_empty(), "{strategy}: uncontended run traced:\n{text}");
    }
}

fn forked_child_writes_its_own_trace_file() {
    let dir = scratch();
    let trace = dir.path().join("trace.json");
    run(
        "observe_hot",
        &["fork"],
        "spin",
        &[
            ("SPINMUTEX_TRACE", "spinmutex=debug"),
            ("SPINMUTEX_TRACE_FORMAT", "json"),
            ("SPINMUTEX_TRACE_FILE", trace.to_str().unwrap()),
        ],
    );
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    let child = files
        .iter()
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("trace.json."))
        .unwrap_or_else(|| panic!("no per-child trace file among {files:?}"));
    let parent_pid = std::fs::read_to_string(&trace).unwrap();
    let child_text = std::fs::read_to_string(child).unwrap();
    assert!(!child_text.is_empty(), "child trace is empty");
    let child_pid = child.extension().unwrap().to_str().unwrap();
    assert!(child_text.contains(&format!("\"pid\":{child_pid},")), "child file holds other pids");
    assert!(!parent_pid.contains(&format!("\"pid\":{child_pid},")), "child wrote into the parent's file");
    assert_json_lines(child);
}

fn bad_trace_directive_gives_one_line_and_the_program_runs() {
    let out = run("observe_quiet", &[], "spin", &[("SPINMUTEX_TRACE", "spinmutex=loud")]);
    let lines: Vec<_> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line, got:\n{}", out.stderr);
    assert!(lines[0].contains("SPINMUTEX_TRACE") && lines[0].contains("spinmutex=loud"), "{}", lines[0]);
    assert_eq!(out.stdout, "total 100000\n");
}

fn statistics_and_tracing_never_change_the_output() {
    let baseline = run_bounded(preloaded(c_test("observe_hot"), None), LIMIT);
    baseline.assert_success("observe_hot without preload");
    let dir = scratch();
    let trace = dir.path().join("t");
    for strategy in STRATEGIES {
        for env in [
            vec![("SPINMUTEX_STATS", "1")],
            vec![("SPINMUTEX_STATS", "json")],
            vec![("SPINMUTEX_TRACE", "trace"), ("SPINMUTEX_TRACE_FILE", trace.to_str().unwrap())],
        ] {
            let out = run("observe_hot", &[], strategy, &env);
            assert_eq!(out.stdout, baseline.stdout, "{strategy} {env:?} changed stdout");
        }
    }
}

/// The hot mutex's class is the first row, told by the module and offset of the code
/// that first locked it; the text report ends with totals.
fn report_lists_the_hot_class_first_with_its_call_site() {
    for strategy in STRATEGIES {
        let out = run("observe_hot", &[], strategy, &[("SPINMUTEX_STATS", "1")]);
        let report = &out.stderr;
        let first_row = report
            .lines()
            .find(|l| l.trim_start().starts_with("1 "))
            .unwrap_or_else(|| panic!("{strategy}: no rows in report:\n{report}"));
        // 4 threads x 20,000 acquisitions, and the one that makes the workers contend.
        assert!(first_row.contains(" 80001 "), "{strategy}: the first row is not the hot mutex:\n{report}");
        assert!(first_row.contains("first lock at observe_hot+0x"), "{strategy}: no call site:\n{report}");
        assert!(first_row.contains("normal"), "{strategy}: type missing:\n{report}");
        assert!(report.lines().any(|l| l.trim_end().ends_with("totals")), "{strategy}: no totals:\n{report}");
    }
}

fn json_report_parses_and_adds_up() {
    let dir = scratch();
    let file = dir.path().join("stats.json");
    for strategy in STRATEGIES {
        let _ = std::fs::remove_file(&file);
        run(
            "observe_hot",
            &[],
            strategy,
            &[("SPINMUTEX_STATS", "json"), ("SPINMUTEX_STATS_FILE", file.to_str().unwrap())],
        );
        let report = json_report(&file);
        assert_rows_add_up(&report);
        let hot = &report["classes"][0];
        assert_eq!(hot["counters"]["locked"], 80001, "{strategy}: {report:#}");
        let frame = &hot["frames"][0];
        assert!(frame["module"].as_str().unwrap().ends_with("/observe_hot"), "{strategy}: {frame}");
        assert!(frame["offset"].as_str().unwrap().starts_with("0x"), "{strategy}: {frame}");
        assert!(frame["build_id"].as_str().is_some_and(|id| id.len() == 40), "{strategy}: {frame}");
    }
}

/// 10,000 mutexes made at one call site and destroyed, under contention: one class with
/// 10,000 instances, none live, and every acquisition counted.
fn destroyed_mutexes_are_kept_in_their_class() {
    let dir = scratch();
    let file = dir.path().join("stats.json");
    for strategy in STRATEGIES {
        let _ = std::fs::remove_file(&file);
        let out = run(
            "lock_classes",
            &["churn"],
            strategy,
            &[("SPINMUTEX_STATS", "json"), ("SPINMUTEX_STATS_FILE", file.to_str().unwrap())],
        );
        let acquisitions: u64 = out.stdout.trim().parse().unwrap();
        let report = json_report(&file);
        assert_rows_add_up(&report);
        let classes = report["classes"].as_array().unwrap();
        assert_eq!(classes.len(), 1, "{strategy}: {report:#}");
        let class = &classes[0];
        assert_eq!(class["origin"], "init", "{strategy}: {class:#}");
        assert_eq!(class["mutexes"], 10000, "{strategy}: {class:#}");
        assert_eq!(class["live"], 0, "{strategy}: {class:#}");
        assert_eq!(class["counters"]["locked"], acquisitions, "{strategy}: {class:#}");
        assert!(class["counters"]["contended"].as_u64().unwrap() > 0, "{strategy}: {class:#}");
    }
}

/// Mutexes made by one function's `pthread_mutex_init` (a wrapper) for two callers, one
/// of them called from two places: three classes of the statistics (four frames), two
/// of `auto`'s (the wrapper's callers told apart). The report gives each class the
/// policy of the `auto` class its mutexes have, and says which share one.
fn a_wrappers_callers_are_auto_classes_of_their_own() {
    let dir = scratch();
    let file = dir.path().join("stats.json");
    let env = [("SPINMUTEX_STATS", "json"), ("SPINMUTEX_STATS_FILE", file.to_str().unwrap())];
    run("lock_classes", &["wrapper"], "auto", &env);
    let report = json_report(&file);
    let classes = report["classes"].as_array().unwrap();
    let auto_class = |locked: u64| {
        let class = classes.iter().find(|c| c["counters"]["locked"] == locked);
        let class = class.unwrap_or_else(|| panic!("no class locked {locked} times: {report:#}"));
        class["policy"]["class"].as_u64().unwrap_or_else(|| panic!("no policy class: {class:#}"))
    };
    // here_a (locked once) and here_b (twice) are made by one caller of the wrapper.
    assert_eq!(auto_class(1), auto_class(2), "{report:#}");
    assert_ne!(auto_class(1), auto_class(3), "the wrapper's two callers share a class: {report:#}");
    for strategy in ["auto", "spin"] {
        let out = run("lock_classes", &["wrapper"], strategy, &[("SPINMUTEX_STATS", "1")]);
        let rows = out.stderr.lines().filter(|l| l.contains("init at lock_classes+0x")).count();
        assert_eq!(rows, 3, "{strategy}: three classes expected:\n{}", out.stderr);
        let shared =
            out.stderr.lines().filter(|l| l.contains("; one auto class with 1 other class]")).count();
        assert_eq!(shared, if strategy == "auto" { 2 } else { 0 }, "{strategy}:\n{}", out.stderr);
    }
}

/// Two plugins loaded and unloaded in turn, the second where the first was (so their
/// mutexes are made from the same addresses): two classes, one per plugin, since a class
/// is a place in a module, not an address.
fn modules_loaded_at_one_address_keep_their_own_classes() {
    let dir = scratch();
    let file = dir.path().join("stats.json");
    let plugins = [c_test("class_plugin_a"), c_test("class_plugin_b")];
    let args: Vec<&str> = plugins.iter().map(|p| p.to_str().expect("utf-8 path")).collect();
    let out = run(
        "class_reload",
        &args,
        "spin",
        &[("SPINMUTEX_STATS", "json"), ("SPINMUTEX_STATS_FILE", file.to_str().unwrap())],
    );
    if out.stdout.trim() != "same address" {
        eprintln!(
            "note: the second plugin was mapped elsewhere ({}); the check is weaker",
            out.stdout.trim()
        );
    }
    let report = json_report(&file);
    assert_rows_add_up(&report);
    let classes = report["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 2, "one class per plugin expected: {report:#}");
    for class in classes {
        assert_eq!(class["mutexes"], 1, "{class:#}");
    }
}

/// Time spent waiting on a condition variable is not time the mutex is held.
fn hold_time_leaves_out_condition_variable_waits() {
    let dir = scratch();
    let file = dir.path().join("stats.json");
    for strategy in STRATEGIES {
        let _ = std::fs::remove_file(&file);
        run(
            "lock_classes",
            &["condvar"],
            strategy,
            &[("SPINMUTEX_STATS", "json"), ("SPINMUTEX_STATS_FILE", file.to_str().unwrap())],
        );
        let report = json_report(&file);
        let held = report["totals"]["counters"]["hold_ns_total"].as_u64().unwrap();
        assert!(held < 50_000_000, "{strategy}: {held} ns held, though the 200 ms wait was on a condvar");
        assert_eq!(report["totals"]["counters"]["locked"], 2, "{strategy}: the relock is an acquisition");
    }
}

/// A module path with quotes, a backslash, a tab and non-ASCII still gives valid JSON.
fn json_report_is_valid_for_any_module_name() {
    let dir = scratch();
    let odd = dir.path().join("d\"ir\\ é\tq");
    std::fs::create_dir_all(&odd).unwrap();
    let program = odd.join("observe_hot");
    std::fs::copy(c_test("observe_hot"), &program).unwrap();
    let file = dir.path().join("stats.json");
    let mut cmd = preloaded(&program, Some("spin"));
    cmd.env("SPINMUTEX_STATS", "json").env("SPINMUTEX_STATS_FILE", &file);
    run_bounded(cmd, LIMIT).assert_success("observe_hot from an odd directory");
    let report = json_report(&file);
    let module = report["classes"][0]["frames"][0]["module"].as_str().unwrap().to_string();
    assert_eq!(Path::new(&module), program, "{report:#}");
}

fn full_side_table_keeps_running_and_reports_overflow() {
    let dir = scratch();
    let file = dir.path().join("stats.json");
    let out =
        run("observe_hot", &["many"], "spin", &[("SPINMUTEX_STATS", "1"), ("SPINMUTEX_STATS_SLOTS", "8")]);
    assert!(out.stdout.contains("total 80000"), "{}", out.stdout);
    assert!(out.stderr.contains("side table full"), "no overflow line:\n{}", out.stderr);
    run(
        "observe_hot",
        &["many"],
        "spin",
        &[
            ("SPINMUTEX_STATS", "json"),
            ("SPINMUTEX_STATS_SLOTS", "8"),
            ("SPINMUTEX_STATS_FILE", file.to_str().unwrap()),
        ],
    );
    let report = json_report(&file);
    assert_rows_add_up(&report);
    assert!(report["overflow"]["instances"].as_u64().unwrap() > 0, "{report:#}");
}

/// A process that never locked a mutex (a shell that runs the program, say) prints no
/// report at exit.
fn a_process_that_never_locked_prints_no_report() {
    let mut cmd = preloaded("/bin/true", Some("spin"));
    cmd.env("SPINMUTEX_STATS", "1");
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("/bin/true");
    assert!(o.stderr.is_empty(), "a report from a process that locked nothing:\n{}", o.stderr);
}

/// SIGINT, SIGTERM, SIGHUP or SIGPIPE at its default action (left so, given it back by
/// the program, as CPython does before it ends by SIGINT, or by a handler set to run
/// once, as Node.js's) ends a program after the report it would have written at exit,
/// with the status the signal gives; one the program ignores stays ignored.
fn a_signal_that_ends_the_program_leaves_the_exit_report() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let dir = scratch();
    for strategy in STRATEGIES {
        let signals = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE];
        for (signal, how) in signals.iter().flat_map(|&s| [(s, None), (s, Some("reset")), (s, Some("once"))])
        {
            let file = dir.path().join(format!("{strategy}-{signal}-{how:?}.json"));
            let mut cmd = preloaded(c_test("raise_signal"), Some(strategy));
            cmd.arg(signal.to_string()).env("SPINMUTEX_STATS", "json").env("SPINMUTEX_STATS_FILE", &file);
            cmd.args(how);
            let o = run_bounded(cmd, LIMIT);
            let what = format!("raise_signal {signal} {} under {strategy}", how.unwrap_or(""));
            assert_eq!(o.status.and_then(|s| s.signal()), Some(signal), "{what}: {}", o.stderr);
            let report = json_report(&file);
            assert_eq!(report["totals"]["counters"]["locked"], 2, "{what}: {report:#}");
            let exe = c_test("raise_signal").canonicalize().unwrap();
            assert_eq!(report["exe"].as_str(), exe.to_str(), "{what}: the report names its program");
        }
        // Ignored when the program started (nohup, say): the library leaves it so.
        let file = dir.path().join(format!("{strategy}-ignored.json"));
        let mut cmd = preloaded(c_test("raise_signal"), Some(strategy));
        cmd.arg(libc::SIGHUP.to_string()).env("SPINMUTEX_STATS", "json").env("SPINMUTEX_STATS_FILE", &file);
        // SAFETY: signal(2) between fork and exec; the disposition SIG_IGN survives exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                Ok(())
            })
        };
        let o = run_bounded(cmd, LIMIT);
        o.assert_success(&format!("raise_signal with SIGHUP ignored under {strategy}"));
        assert_eq!(json_report(&file)["totals"]["counters"]["locked"], 2, "{strategy}: no exit report");
    }
}

/// Processes that end together (here eight, stopped by one SIGTERM each at once) write
/// their reports to one statistics file one after another: each report a whole line of
/// JSON, none cut into by another. (Without the file lock that makes them take turns,
/// four runs of this test out of four found a cut report.)
fn reports_of_processes_that_end_together_stay_whole() {
    for round in 0..4 {
        eight_reports_at_once(round);
    }
}

fn eight_reports_at_once(round: u32) {
    use std::process::Stdio;
    let dir = scratch();
    let file = dir.path().join("stats.json");
    let children: Vec<_> = (0..8)
        .map(|i| {
            let err = dir.path().join(format!("err{i}"));
            let mut cmd = preloaded(c_test("raise_signal"), Some("spin"));
            cmd.arg("wait").env("SPINMUTEX_STATS", "json").env("SPINMUTEX_STATS_FILE", &file);
            cmd.stdout(Stdio::null()).stderr(std::fs::File::create(&err).unwrap());
            (cmd.spawn().unwrap(), err)
        })
        .collect();
    let start = std::time::Instant::now();
    for (_, err) in &children {
        while !std::fs::read_to_string(err).unwrap_or_default().contains("ready") {
            assert!(start.elapsed() < LIMIT, "a process never got ready");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for (child, _) in &children {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    for (mut child, _) in children {
        child.wait().unwrap();
    }
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "round {round}: eight reports expected:\n{text}");
    for line in lines {
        let report: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("round {round}: not one report ({e}):\n{text}"));
        assert_eq!(report["totals"]["counters"]["locked"], 2, "{report:#}");
    }
}

/// Whatever the library handles, the program reads its signals as it left them (the
/// default action) through sigaction, signal, sysv_signal and sigset, and its own
/// handler then runs (c-tests/signal_dispositions.c).
fn the_program_sees_its_signals_as_it_left_them() {
    let dir = scratch();
    let file = dir.path().join("report");
    let file = file.to_str().unwrap();
    for strategy in STRATEGIES {
        run("signal_dispositions", &[], strategy, &[]);
        run(
            "signal_dispositions",
            &[],
            strategy,
            &[("SPINMUTEX_STATS", "1"), ("SPINMUTEX_STATS_FILE", file)],
        );
    }
}

// ---------------------------------------------------------------------------------
// Reader-writer locks.

/// Runs `rwlock_classes MODE` under `strategy` with a JSON report; its stdout and the
/// report.
fn rwlock_report(mode: &str, strategy: &str) -> (String, Value) {
    let dir = scratch();
    let file = dir.path().join("stats.json");
    let out = run(
        "rwlock_classes",
        &[mode],
        strategy,
        &[("SPINMUTEX_STATS", "json"), ("SPINMUTEX_STATS_FILE", file.to_str().unwrap())],
    );
    let report = json_report(&file);
    assert_rows_add_up(&report);
    (out.stdout, report)
}

/// `key=N` in a line of `key=value` pairs.
fn number(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
}

/// 2,000 rwlocks made at one call site and destroyed, read- and write-locked at random
/// by 4 threads: one rwlock class with 2,000 instances, none live, and every read and
/// every write acquisition counted in its own mode.
fn rwlock_class_counts_every_acquisition_by_mode() {
    for strategy in STRATEGIES {
        let (stdout, report) = rwlock_report("churn", strategy);
        let (reads, writes) = (number(&stdout, "reads"), number(&stdout, "writes"));
        let classes = report["classes"].as_array().unwrap();
        assert_eq!(classes.len(), 1, "{strategy}: {report:#}");
        let class = &classes[0];
        assert_eq!(
            (&class["lock"], &class["type"], &class["origin"]),
            (&"rwlock".into(), &"rwlock".into(), &"init".into()),
            "{strategy}: {class:#}"
        );
        assert_eq!(
            (class["mutexes"].as_u64(), class["live"].as_u64()),
            (Some(2000), Some(0)),
            "{strategy}: {class:#}"
        );
        assert_eq!(class["read"]["locked"], reads, "{strategy}: {class:#}");
        assert_eq!(class["write"]["locked"], writes, "{strategy}: {class:#}");
        assert_eq!(class["counters"]["locked"], reads + writes, "{strategy}: {class:#}");
        assert_eq!(report["totals"]["counters"]["locked"], reads + writes, "{strategy}: {report:#}");
        assert_eq!(report["overflow"]["holds_unmeasured"], 0, "{strategy}: {report:#}");
        assert!(class["read"]["hold_ns_total"].as_u64().unwrap() > 0, "{strategy}: {class:#}");
        assert!(class["write"]["hold_ns_total"].as_u64().unwrap() > 0, "{strategy}: {class:#}");
    }
}

/// Four readers hold one rwlock together for 60 ms each, then a writer holds it for
/// 40 ms: the read hold time is each reader's own (four times 60 ms, the longest one
/// 60 ms), not the time the lock was read-held.
fn read_hold_time_is_each_readers_own() {
    const MS: u64 = 1_000_000;
    for strategy in STRATEGIES {
        let (_, report) = rwlock_report("hold", strategy);
        let classes = classes_of(&report, "rwlock");
        assert_eq!(classes.len(), 1, "{strategy}: {report:#}");
        for object in [classes[0], &classes[0]["instances"][0]] {
            let (read, write) = (&object["read"], &object["write"]);
            let at = |v: &Value, key: &str| v[key].as_u64().unwrap();
            assert_eq!((at(read, "locked"), at(write, "locked")), (4, 1), "{strategy}: {object:#}");
            let total = at(read, "hold_ns_total");
            assert!(
                (240 * MS..600 * MS).contains(&total),
                "{strategy}: read holds {total} ns in all: {object:#}"
            );
            let longest = at(read, "hold_ns_max");
            assert!(
                (60 * MS..200 * MS).contains(&longest),
                "{strategy}: longest read hold {longest} ns: {object:#}"
            );
            let written = at(write, "hold_ns_total");
            assert!(
                (40 * MS..200 * MS).contains(&written),
                "{strategy}: write held {written} ns: {object:#}"
            );
            assert_eq!(at(write, "hold_ns_max"), written, "{strategy}: {object:#}");
        }
    }
}

/// A statically initialised rwlock's class is its first lock's call site, and the text
/// report lists it beside a mutex, with a line per mode.
fn static_rwlock_is_listed_beside_mutexes() {
    for strategy in STRATEGIES {
        let (_, report) = rwlock_report("static", strategy);
        let rwlocks = classes_of(&report, "rwlock");
        let mutexes = classes_of(&report, "mutex");
        assert_eq!((rwlocks.len(), mutexes.len()), (1, 1), "{strategy}: {report:#}");
        let rw = rwlocks[0];
        assert_eq!(rw["origin"], "first lock", "{strategy}: {rw:#}");
        assert_eq!(
            (rw["read"]["locked"].as_u64(), rw["write"]["locked"].as_u64()),
            (Some(3), Some(2)),
            "{strategy}: {rw:#}"
        );
        assert_eq!(mutexes[0]["counters"]["locked"], 1, "{strategy}: {report:#}");
        let text = run("rwlock_classes", &["static"], strategy, &[("SPINMUTEX_STATS", "1")]).stderr;
        let lines: Vec<&str> = text.lines().collect();
        let row = lines
            .iter()
            .position(|l| l.contains("  rwlock ") && l.contains("first lock at rwlock_classes+0x"))
            .unwrap_or_else(|| panic!("{strategy}: no rwlock class row:\n{text}"));
        assert!(lines[row].split_whitespace().nth(3) == Some("5"), "{strategy}: {}", lines[row]);
        for (line, mode, locked) in [(lines[row + 1], "read", "3"), (lines[row + 2], "write", "2")] {
            assert!(line.trim_end().ends_with(mode), "{strategy}: no {mode} line under the rwlock:\n{text}");
            assert_eq!(line.split_whitespace().nth(2), Some(locked), "{strategy}: {line}");
        }
        assert!(
            lines.iter().any(|l| l.contains("  normal") && l.contains("first lock at")),
            "{strategy}: no mutex row:\n{text}"
        );
        assert!(text.contains("(1 of rwlocks)"), "{strategy}: {text}");
    }
}

/// A reader and a writer that time out are counted in their own modes.
fn rwlock_timeouts_are_counted_by_mode() {
    for strategy in STRATEGIES {
        let (_, report) = rwlock_report("timeout", strategy);
        let class = classes_of(&report, "rwlock")[0];
        assert_eq!(
            (class["read"]["timeouts"].as_u64(), class["write"]["timeouts"].as_u64()),
            (Some(1), Some(1)),
            "{strategy}: {class:#}"
        );
    }
}

/// Every rwlock event names the lock (`rwlock`) and the mode; a contended workload yields
/// acquisitions, sleeps and wakes in both modes, and timeouts name theirs.
fn rwlock_trace_events_name_the_mode() {
    for strategy in STRATEGIES {
        let dir = scratch();
        let trace = dir.path().join("trace.json");
        let env = [
            ("SPINMUTEX_TRACE", "spinmutex=trace"),
            ("SPINMUTEX_TRACE_FORMAT", "json"),
            ("SPINMUTEX_TRACE_FILE", trace.to_str().unwrap()),
        ];
        let args = ["--threads", "4", "--load", "200", "--write-permille", "200", "--duration-ms", "150"];
        run("rwlock_bench", &args, strategy, &env);
        run("rwlock_classes", &["timeout"], strategy, &env);
        assert_json_lines(&trace);
        let text = std::fs::read_to_string(&trace).unwrap();
        let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let rw: Vec<&Value> = events.iter().filter(|e| e.get("rwlock").is_some()).collect();
        for e in &rw {
            assert!(e["rwlock"].as_str().is_some_and(|a| a.starts_with("0x")), "{strategy}: {e}");
            assert!(e["mode"] == "read" || e["mode"] == "write", "{strategy}: {e}");
            assert!(e.get("mutex").is_none(), "{strategy}: {e}");
        }
        let has = |event: &str, mode: &str| rw.iter().any(|e| e["event"] == event && e["mode"] == mode);
        let expected: &[&str] =
            if *strategy == "glibc" { &["forward"] } else { &["acquired", "sleep", "wake"] };
        for event in expected.iter().copied().chain(["timeout"].into_iter().filter(|_| *strategy != "glibc"))
        {
            for mode in ["read", "write"] {
                assert!(
                    has(event, mode),
                    "{strategy}: no {event} event in mode {mode} among {} rwlock events",
                    rw.len()
                );
            }
        }
        if *strategy == "spin" {
            assert!(
                rw.iter().any(|e| e["event"] == "spin_give_up" || e["how"] == "spin"),
                "spin: no spinning recorded on the rwlock"
            );
        }
        for e in rw.iter().filter(|e| e["event"] == "acquired") {
            for key in ["how", "spins", "sleeps", "wait_ns", "tid", "strategy"] {
                assert!(e.get(key).is_some(), "{strategy}: acquired event without {key}: {e}");
            }
        }
    }
}

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(
        suite,
        contended_program_yields_every_decision_event,
        fair_setting_stops_spinning_past_sleepers,
        forwarded_contention_is_traced_under_glibc,
        uncontended_program_yields_no_event,
        report_lists_the_hot_class_first_with_its_call_site,
        json_report_parses_and_adds_up,
        destroyed_mutexes_are_kept_in_their_class,
        a_wrappers_callers_are_auto_classes_of_their_own,
        modules_loaded_at_one_address_keep_their_own_classes,
        hold_time_leaves_out_condition_variable_waits,
        json_report_is_valid_for_any_module_name,
        a_process_that_never_locked_prints_no_report,
        a_signal_that_ends_the_program_leaves_the_exit_report,
        reports_of_processes_that_end_together_stay_whole,
        the_program_sees_its_signals_as_it_left_them,
        forked_child_writes_its_own_trace_file,
        full_side_table_keeps_running_and_reports_overflow,
        bad_trace_directive_gives_one_line_and_the_program_runs,
        statistics_and_tracing_never_change_the_output,
        rwlock_class_counts_every_acquisition_by_mode,
        read_hold_time_is_each_readers_own,
        static_rwlock_is_listed_beside_mutexes,
        rwlock_timeouts_are_counted_by_mode,
        rwlock_trace_events_name_the_mode,
    );
    suite.run()
}
