//! Tracing and statistics: the events a contended program yields (and the give-up
//! reason SPINMUTEX_FAIR adds), none for an uncontended one, JSON that parses, the report
//! listing the hot class first with a call site that names its module and offset, lock
//! classes that keep every destroyed mutex's counts, rows that add up to the totals, hold
//! times without condition-variable waits, a forked child's own trace file, a full side
//! table, a bad directive, and output that statistics never change.

mod common;

use common::harness::{tests, Suite};
use common::{c_test, preloaded, run_bounded, scratch, Outcome, STRATEGIES};
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

/// The one JSON report in `path`.
fn json_report(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not one JSON report ({e}):\n{text}", path.display()))
}

/// The listed classes, the other classes, the mutexes of unknown class and the overflow
/// add up to the totals, counter by counter (maxima: the largest).
fn assert_rows_add_up(report: &serde_json::Value) {
    if let Err(e) = common::stats::json_rows_add_up(report) {
        panic!("{e}:\n{report:#}");
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
        hold_time_leaves_out_condition_variable_waits,
        json_report_is_valid_for_any_module_name,
        a_process_that_never_locked_prints_no_report,
        forked_child_writes_its_own_trace_file,
        full_side_table_keeps_running_and_reports_overflow,
        bad_trace_directive_gives_one_line_and_the_program_runs,
        statistics_and_tracing_never_change_the_output,
    );
    suite.run()
}
