//! Tracing and statistics (issue 4): the events a contended program yields (and the
//! give-up reason SPINMUTEX_FAIR adds), none for an uncontended one, JSON that parses,
//! the report naming the hot mutex's function, a forked child's own trace file, a full
//! side table, a bad directive, and output that statistics never change.

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

fn report_names_the_hot_mutex_and_its_function() {
    for strategy in STRATEGIES {
        let out = run("observe_hot", &[], strategy, &[("SPINMUTEX_STATS", "1")]);
        let report = &out.stderr;
        let first_row = report
            .lines()
            .find(|l| l.trim_start().starts_with("1 "))
            .unwrap_or_else(|| panic!("{strategy}: no rows in report:\n{report}"));
        assert!(first_row.contains("hot_worker"), "{strategy}: hot mutex row lacks hot_worker:\n{report}");
        assert!(first_row.contains("normal"), "{strategy}: type missing:\n{report}");
        assert!(report.contains("totals ("), "{strategy}: no totals line:\n{report}");
    }
}

fn json_report_parses() {
    let dir = scratch();
    let file = dir.path().join("stats.json");
    run(
        "observe_hot",
        &[],
        "spin",
        &[("SPINMUTEX_STATS", "json"), ("SPINMUTEX_STATS_FILE", file.to_str().unwrap())],
    );
    assert_json_lines(&file);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"contended\":") && text.contains("hot_worker"), "{text}");
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

fn full_side_table_keeps_running_and_reports_overflow() {
    let out =
        run("observe_hot", &["many"], "spin", &[("SPINMUTEX_STATS", "1"), ("SPINMUTEX_STATS_SLOTS", "8")]);
    assert!(out.stdout.contains("total 80000"), "{}", out.stdout);
    assert!(out.stderr.contains("side table full"), "no overflow line:\n{}", out.stderr);
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

fn main() -> std::process::ExitCode {
    let mut suite = Suite::new();
    tests!(
        suite,
        contended_program_yields_every_decision_event,
        fair_setting_stops_spinning_past_sleepers,
        forwarded_contention_is_traced_under_glibc,
        uncontended_program_yields_no_event,
        report_names_the_hot_mutex_and_its_function,
        json_report_parses,
        forked_child_writes_its_own_trace_file,
        full_side_table_keeps_running_and_reports_overflow,
        bad_trace_directive_gives_one_line_and_the_program_runs,
        statistics_and_tracing_never_change_the_output,
    );
    suite.run()
}
