//! Unit tests of the mutex grid: its options with their defaults, and what it reads
//! from a workload run.

use super::output::{best_arm_table, bound_of};
use super::*;

fn parse(args: &[&str]) -> Result<(Config, Vec<Arm>), String> {
    let a: BenchArgs = crate::parse_args(args).map_err(|e| e.to_string())?;
    config(&a, 2).map_err(|e| format!("{e:?}"))
}

#[test]
fn defaults_and_quick() {
    let (c, _) = parse(&[]).unwrap();
    assert_eq!(c.threads, vec![1, 2, 4, 16, 64, 256]);
    assert_eq!(c.loads, vec![0, 1, 10, 50, 100]);
    assert_eq!(c.layouts, [Layout::Alone, Layout::Shared]);
    assert_eq!(c.scenarios, [Scenario::IdleOwner, Scenario::CpuQuota, Scenario::Mixed]);
    assert_eq!(c.strategies, ["none", "glibc", "glibc-adaptive", "futex", "spin", "auto", "kernel"]);
    assert_eq!((c.runs, c.duration_ms, c.hogs, c.reference.as_str()), (5, 300, 0, "glibc"));
    assert!(c.control);
    assert_eq!(c.cells.len(), 2 * 6 * 5 + 3);
    // Stretched on 2 CPUs: 256 threads × 8 ms ÷ 2; 64 threads stay at 300 ms.
    let ms = |t: u64| c.cells.iter().find(|cell| cell.threads == t).unwrap().duration_ms;
    assert_eq!((ms(1), ms(64), ms(256)), (300, 300, 1024));
    let idle = c.cells.iter().find(|cell| cell.scenario == Some(Scenario::IdleOwner)).unwrap();
    assert_eq!((idle.threads, idle.load, idle.duration_ms, c.scenario_runs), (4, 10, 2000, 7));
    let (c, _) = parse(&["--threads", "1,2", "--quick", "--runs", "2"]).unwrap();
    assert_eq!(c.threads, vec![1, 2]);
    assert_eq!(c.loads, vec![0, 10, 100]);
    assert_eq!((c.runs, c.duration_ms), (2, 200));
    assert!(c.scenarios.is_empty(), "--quick runs no scenario unless asked");
    let (c, _) = parse(&["--duration-ms", "50", "--threads", "256", "--layout", "shared"]).unwrap();
    assert!(c.cells.iter().filter(|cell| cell.scenario.is_none()).all(|cell| cell.duration_ms == 50));
    assert_eq!(c.layouts, [Layout::Shared]);
    let (c, _) = parse(&["--scenarios", "cpu-quota", "--no-grid", "--runs", "3"]).unwrap();
    assert_eq!(c.cells.len(), 1);
    assert_eq!((c.cells[0].threads, c.scenario_runs), (16, 3));
    let (c, _) = parse(&["--scenarios", "none", "--without-control"]).unwrap();
    assert!(c.scenarios.is_empty() && !c.control);
    let (c, _) = parse(&["--strategies", "glibc,spin"]).unwrap();
    assert_eq!(c.strategies, ["none", "glibc", "spin"]);
    let (c, _) = parse(&["-s", "spin,futex", "--without-none"]).unwrap();
    assert_eq!((c.strategies.join(","), c.reference.as_str()), ("spin,futex".into(), "spin"));
}

#[test]
fn rejects() {
    for bad in [
        &["--threads", "0"][..],
        &["--threads", "1,x"],
        &["--threads", "1,1"],
        &["--loads", ""],
        &["--runs", "0"],
        &["--duration-ms", "0"],
        &["--hogs", "-1"],
        &["extra"],
        &["--", "cmd"],
        &["--strategies", "spin,spin"],
        &["--layout", "inline"],
        &["--layout", "alone,alone"],
        &["--scenarios", "idle"],
        &["--scenarios", "none,cpu-quota"],
        &["--scenarios", "cpu-quota,cpu-quota"],
        &["--no-grid", "--quick"],
        &["--strategies", "lock-free"],
        &["--strategies", "spinn"],
        &["--spin-limit", "10x"],
        &["--nope"],
        &["--quick=yes"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn parses_workload_output() {
    let line = "threads=2 load=10 ops=1000000 ops_per_s=5000.5 cpu_s=0.5 min_thread_ops=400 \
                mean_thread_ops=500 wait_p50_ns=100 wait_p99_ns=2000 pause_ns=30 counter_ok=1\n";
    let s = Sample::parse(line, REQUIRED_KEYS, &[]).unwrap();
    assert_eq!(s.ops_per_s(), 5000.5);
    assert_eq!(s.fairness_of("ops"), 0.8);
    // 0.5 s for a million acquisitions: 0.5 µs each, 500 µs per 1000.
    assert_eq!(s.cpu_us_per_1k(), 500.0);
    assert!((bound_of(10, &s) - 1e9 / 300.0).abs() < 1e-6);
    assert!(!bound_of(0, &s).is_finite());
    assert!(Sample::parse("", REQUIRED_KEYS, &[]).is_err());
    assert!(Sample::parse("ops=1", REQUIRED_KEYS, &[]).is_err());
    assert!(Sample::parse("ops=x", REQUIRED_KEYS, &[]).is_err());
}

/// A cell's summary for one arm with only what the best-arm table reads.
fn summary(scenario: Option<&str>, threads: u64, strategy: &str, ops: f64) -> CellSummary {
    serde_json::from_value(serde_json::json!({
        "scenario": scenario, "layout": "alone", "threads": threads, "load": 0, "duration_ms": 300,
        "strategy": strategy, "runs_ok": 5, "runs": 5, "median_ops_per_s": ops,
    }))
    .unwrap()
}

#[test]
fn best_arm_table_counts_leads_and_ratios_over_grid_cells() {
    let sums = [
        summary(None, 2, "glibc", 100.0),
        summary(None, 2, "spin", 200.0),
        summary(None, 2, "auto", 196.0),
        summary(None, 2, "lock-free", 900.0),
        summary(None, 4, "glibc", 100.0),
        summary(None, 4, "spin", 80.0),
        summary(None, 4, "auto", 90.0),
        summary(Some("cpu-quota"), 16, "glibc", 1.0),
        summary(Some("cpu-quota"), 16, "spin", 9.0),
    ];
    let rows: Vec<Vec<String>> = best_arm_table(&sums)
        .lines()
        .skip_while(|l| !l.starts_with("---"))
        .skip(1)
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    // auto: 0.98 and 0.90 (median 0.94); spin: 1.00 and 0.80 (0.90); glibc: 0.50 and 1.00
    // (0.75). The control and the scenario are not counted.
    let expected = [
        ["auto", "0/2", "0.940", "0.90", "1/2"],
        ["spin", "1/2", "0.900", "0.80", "1/2"],
        ["glibc", "1/2", "0.750", "0.50", "1/2"],
    ];
    assert_eq!(rows, expected.map(|r| r.map(String::from).to_vec()).to_vec());
    assert_eq!(best_arm_table(&sums[..1]), "", "one arm: nothing to choose from");
    assert_eq!(best_arm_table(&sums[7..]), "", "scenarios only");
}
