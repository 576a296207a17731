//! `spinmutex bench`: a reduced mutex grid and rwlock grid with their CSV, JSON and SVG,
//! the scenarios and the hogs cleaned up after.

use super::*;

pub(crate) fn bench_reduced_grid_writes_csv_json_svg() {
    let dir = scratch();
    let (csv, json, svg) = (dir.path().join("b.csv"), dir.path().join("b.json"), dir.path().join("b.svg"));
    let o = run(&[
        "bench",
        "--quick",
        "--threads",
        "1,2",
        "--loads",
        "0,10",
        "--runs",
        "2",
        "--duration-ms",
        "50",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    o.assert_success("bench --quick (reduced)");
    for want in [
        "none",
        "glibc",
        "glibc-adaptive",
        "futex",
        "spin",
        "auto",
        "kernel",
        "lock-free",
        "kops/s",
        "vs none",
        "paired",
        "bound",
        "fair",
        "fair/ctl",
        "wait p99",
        "strategy=spin",
        "layout alone: the mutex on a cache line of its own",
        "layout shared: the mutex on one cache line with the counter it protects",
    ] {
        assert!(o.stdout.contains(want), "bench table lacks {want:?}:\n{}", o.stdout);
    }
    // 2 layouts × 2 threads × 2 loads × (7 arms and the control) × 2 runs.
    let cells = 2 * 2 * 2;
    let runs = cells * 8 * 2;
    assert_eq!(o.stderr.lines().filter(|l| l.starts_with('[')).count(), runs, "{}", o.stderr);

    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<String>> = csv_rows(&text);
    assert_eq!(rows.len(), runs + 1, "{text}");
    let header = &rows[0];
    for r in &rows {
        assert_eq!(r.len(), header.len(), "ragged CSV row {r:?}");
    }
    let col =
        |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    for layout in ["alone", "shared"] {
        assert_eq!(rows.iter().filter(|r| r[col("layout")] == layout).count(), runs / 2, "{text}");
    }
    for r in &rows[1..] {
        assert_eq!(r[col("scenario")], "", "{r:?}");
        assert_eq!(r[col("ok")], "1", "{r:?}");
        assert_eq!(r[col("counter_ok")], "1", "{r:?}");
        let ops: f64 = r[col("ops_per_s")].parse().unwrap();
        assert!(ops > 0.0, "{r:?}");
        let load: u32 = r[col("load")].parse().unwrap();
        assert_eq!(r[col("bound_ops_per_s")].is_empty(), load == 0, "{r:?}");
    }

    let report: BenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        report.config.strategies,
        ["none", "glibc", "glibc-adaptive", "futex", "spin", "auto", "kernel"]
    );
    assert_eq!(report.config.reference, "glibc");
    assert_eq!(report.runs.len(), runs);
    assert_eq!(report.cells.len(), cells * 8, "one summary per cell and arm, the control's too");
    assert!(report
        .runs
        .iter()
        .all(|r| r.ok && r.workload.as_ref().is_some_and(|w| w.contains_key("wait_max_ns"))));
    assert!(report.machine.nproc >= 1);
    assert!(report.effective["none"].is_none());
    assert_eq!(report.effective["glibc-adaptive"].as_ref().unwrap().strategy, "glibc");
    for c in &report.cells {
        let control = c.strategy == "lock-free";
        assert_eq!(c.versus.ratio_to_reference.is_none(), c.strategy == "glibc" || control, "{c:?}");
        assert_eq!(c.versus.paired_ratio.is_none(), c.strategy == "glibc" || control, "{c:?}");
        assert_eq!(c.versus.ratio_to_none.is_none(), c.strategy == "none" || control, "{c:?}");
        assert_eq!(c.bound_ops_per_s.is_none(), c.cell.load == 0, "{c:?}");
        assert_eq!(c.fairness_vs_control.is_none(), control, "{c:?}");
        assert!(c.cell.scenario.is_none());
    }

    let text = std::fs::read_to_string(&svg).unwrap();
    xml_check(&text);
    for want in ["load 0 pauses, mutex alone", "load 10 pauses, mutex shared", "bound"] {
        assert!(text.contains(want), "the chart lacks {want:?}");
    }
}

/// Every `spinmutex-bench-*` cgroup there is.
fn bench_cgroups() -> Vec<std::path::PathBuf> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with("spinmutex-bench-"))
        .map(|e| e.path())
        .collect()
}

pub(crate) fn bench_scenarios_run_and_clean_up() {
    let dir = scratch();
    let json = dir.path().join("s.json");
    let before = bench_cgroups();
    // A group left by a bench that was killed (its process is gone) is removed by the
    // next one; the kernel refuses where it cannot make one (not root, no cgroup fs).
    let dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    let _ = { dead }.wait();
    let orphans: Vec<_> = ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"]
        .iter()
        .map(|d| std::path::Path::new(d).join(format!("spinmutex-bench-{dead_pid}")))
        .filter(|d| std::fs::create_dir(d).is_ok())
        .collect();
    let o = run(&[
        "bench",
        "--no-grid",
        "--scenarios",
        "idle-owner,cpu-quota,mixed",
        "-s",
        "glibc,spin",
        "--runs",
        "1",
        "--duration-ms",
        "100",
        "--json",
        json.to_str().unwrap(),
    ]);
    o.assert_success("bench --no-grid --scenarios idle-owner,cpu-quota,mixed");
    for want in [
        "scenario idle-owner: thread 0 at SCHED_IDLE on CPU",
        "scenario cpu-quota: ",
        "hold a mutex of their own across 50 µs of pauses, 500 times in all",
        "Scenario mixed, per lock class",
        "fast class s",
    ] {
        assert!(o.stdout.contains(want), "bench output lacks {want:?}:\n{}", o.stdout);
    }
    assert!(!o.stdout.contains("layout alone"), "--no-grid ran the grid:\n{}", o.stdout);
    let report: BenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 3 scenarios × (none, glibc, spin and the control) × 1 run.
    assert_eq!(report.runs.len(), 3 * 4);
    assert!(report.runs.iter().all(|r| r.ok), "{:?}", report.runs);
    // mixed does a fixed amount of work (2,000 and 5 acquisitions per ms of --duration-ms),
    // and says when each class finished.
    for r in report.runs.iter().filter(|r| r.cell.scenario.map(|s| s.to_string()).as_deref() == Some("mixed"))
    {
        let w = r.workload.as_ref().unwrap();
        if r.strategy == "lock-free" {
            assert!(!w.contains_key("slow_ops"), "{w:?}");
            continue;
        }
        assert_eq!((w["fast_ops"], w["slow_ops"]), (Some(200_000.0), Some(500.0)), "{w:?}");
        for class in ["fast_elapsed_s", "slow_elapsed_s"] {
            assert!(w[class].unwrap() <= w["elapsed_s"].unwrap(), "{w:?}");
        }
    }
    let mixed = report
        .cells
        .iter()
        .find(|c| c.strategy == "spin" && c.cell.scenario.is_some_and(|s| s.to_string() == "mixed"));
    let mixed = mixed.expect("a summary of mixed under spin");
    assert!(
        mixed.work_wall_s.unwrap() >= mixed.fast_class_s.unwrap().max(mixed.slow_class_s.unwrap()),
        "{mixed:?}"
    );
    let threads: Vec<(String, u64)> = report
        .cells
        .iter()
        .filter(|c| c.strategy == "spin")
        .map(|c| (c.cell.scenario.unwrap().to_string(), c.cell.threads))
        .collect();
    // mixed: a thread per CPU on each lock.
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(
        threads,
        [("idle-owner".to_string(), 4), ("cpu-quota".to_string(), 16), ("mixed".to_string(), 2 * cpus)]
    );
    let quota = &report.scenario_setup["cpu-quota"];
    assert!(quota.starts_with("in cgroup ") || quota.starts_with("pinned to CPU"), "{quota}");
    for orphan in orphans.iter().filter(|o| o.exists()) {
        // Only the hierarchy the scenario used is cleaned.
        let parent = orphan.parent().unwrap().display().to_string();
        let used = quota
            .strip_prefix("in cgroup ")
            .and_then(|q| q.rsplit_once('/'))
            .is_some_and(|(p, _)| p == parent);
        let _ = std::fs::remove_dir(orphan);
        assert!(!used, "{} outlived the next bench", orphan.display());
    }
    assert_eq!(bench_cgroups(), before, "the scenario's cgroup outlived the bench");
}

/// `bench --rwlock`: threads × writes × loads, every arm interleaved; the tables carry
/// the per-mode columns, and the CSV and JSON every run and every cell.
pub(crate) fn bench_rwlock_grid_writes_csv_and_json() {
    let dir = scratch();
    let (csv, json) = (dir.path().join("rw.csv"), dir.path().join("rw.json"));
    let o = run(&[
        "bench",
        "--rwlock",
        "--threads",
        "1,2",
        "--writes",
        "0,50",
        "--loads",
        "0,10",
        "--runs",
        "2",
        "--duration-ms",
        "50",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    o.assert_success("bench --rwlock (reduced)");
    for want in [
        "none", "glibc", "futex", "spin", "kops/s", "vs none", "vs glibc", "paired", "bound", "fair r",
        "fair w", "p99 w", "50%",
    ] {
        assert!(o.stdout.contains(want), "bench --rwlock table lacks {want:?}:\n{}", o.stdout);
    }
    assert!(!o.stdout.contains("glibc-adaptive"), "{}", o.stdout);
    // 2 threads × 2 write fractions × 2 loads × 4 arms × 2 runs.
    let runs = 2 * 2 * 2 * 4 * 2;
    assert_eq!(o.stderr.lines().filter(|l| l.starts_with('[')).count(), runs, "{}", o.stderr);

    let text = std::fs::read_to_string(&csv).unwrap();
    let rows = csv_rows(&text);
    assert_eq!(rows.len(), runs + 1, "{text}");
    let header = &rows[0];
    let col =
        |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    for r in &rows[1..] {
        assert_eq!(r.len(), header.len(), "ragged CSV row {r:?}");
        assert_eq!((r[col("ok")].as_str(), r[col("data_ok")].as_str()), ("1", "1"), "{r:?}");
        let writes: f64 = r[col("writes_pct")].parse().unwrap();
        let done: u64 = r[col("writes")].parse().unwrap();
        assert_eq!(done == 0, writes == 0.0, "{r:?}");
        assert_eq!(r[col("bound_ops_per_s")].is_empty(), r[col("load")] == "0", "{r:?}");
    }

    let report: RwBenchReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.tool, "spinmutex bench --rwlock");
    assert_eq!(report.config.strategies, ["none", "glibc", "futex", "spin"]);
    assert_eq!(
        (report.config.writes_pct.as_slice(), report.config.kind.as_str()),
        (&[0.0, 50.0][..], "reader")
    );
    assert_eq!(report.runs.len(), runs);
    assert_eq!(report.cells.len(), 2 * 2 * 2 * 4, "one summary per cell and arm");
    for r in &report.runs {
        let w = r.workload.as_ref().expect("a workload line");
        for key in
            ["ops_per_s", "reads", "writes", "read_wait_p99_ns", "write_wait_p99_ns", "fairness", "pause_ns"]
        {
            assert!(w.contains_key(key), "run without {key}: {r:?}");
        }
    }
    for c in &report.cells {
        assert_eq!(c.versus.ratio_to_reference.is_none(), c.strategy == "glibc", "{c:?}");
        assert_eq!(c.versus.paired_ratio.is_none(), c.strategy == "glibc", "{c:?}");
        assert_eq!(c.versus.ratio_to_none.is_none(), c.strategy == "none", "{c:?}");
        assert_eq!(c.bound_ops_per_s.is_none(), c.load == 0, "{c:?}");
        assert_eq!(c.write_share.is_none(), c.writes_pct == 0.0, "{c:?}");
        assert_eq!(c.write_wait_p99_ns.is_none(), c.writes_pct == 0.0, "{c:?}");
        assert!(c.median_ops_per_s.is_some_and(|v| v > 0.0) && c.read_wait_p99_ns.is_some(), "{c:?}");
    }
}

pub(crate) fn bench_with_a_hog_cleans_up() {
    // The hogs inherit the environment: a marker finds them in /proc afterwards.
    let marker = format!("SPINMUTEX_CLI_TEST_HOG_MARKER=hog-{}", std::process::id());
    let mut cmd = spinmutex(&[
        "bench",
        "--threads",
        "2",
        "--loads",
        "1",
        "--strategies",
        "glibc,spin",
        "--runs",
        "1",
        "--duration-ms",
        "30",
        "--hogs",
        "1",
    ]);
    let (k, v) = marker.split_once('=').unwrap();
    cmd.env(k, v);
    let o = run_bounded(cmd, LIMIT);
    o.assert_success("bench --hogs 1");
    assert!(o.stdout.contains("1 hog(s)"), "{}", o.stdout);
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(env) = std::fs::read(entry.path().join("environ")) {
            if env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
                left.push(entry.file_name());
            }
        }
    }
    assert!(left.is_empty(), "processes of the bench still running: {left:?}");
}

/// RFC 4180 CSV rows (quoted fields may hold commas, quotes and newlines).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(!quoted, "unterminated quoted CSV field");
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// Well-formed-ish XML: one root `<svg ...>` ... `</svg>`, and every element closed
/// in order.
fn xml_check(text: &str) {
    let t = text.trim();
    assert!(t.starts_with("<svg") && t.ends_with("</svg>"), "not an SVG document");
    let mut stack: Vec<String> = Vec::new();
    let mut rest = t;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("unterminated tag") + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack.pop().unwrap_or_else(|| panic!("stray </{name}>"));
            assert_eq!(top, name.trim(), "mismatched closing tag");
        } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
            let name = tag.split_whitespace().next().expect("tag name").to_string();
            stack.push(name);
        }
        assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
    assert!(!t.contains("NaN") && !t.contains("inf"), "non-finite number in the SVG");
}

/// `bench --json -` (or `--csv -`): standard output carries that file alone, for a pipe
/// into jq, and the text report goes to standard error; two of them on standard output
/// are refused before anything runs.
pub(crate) fn bench_json_dash_writes_json_alone_on_stdout() {
    let dir = scratch();
    let quick = ["bench", "--quick", "--threads", "2", "--loads", "0", "--runs", "1", "--duration-ms", "30"];
    let o = run_in(dir.path(), &[&quick[..], &["-s", "glibc", "--without-control", "--json", "-"]].concat());
    o.assert_success("bench --json -");
    let report: BenchReport =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", o.stdout));
    assert_eq!(report.runs.len(), 2 * 2, "2 layouts × (none, glibc)");
    assert!(o.stderr.contains("kops/s"), "the text report goes to stderr:\n{}", o.stderr);
    let o = run_in(dir.path(), &[&quick[..], &["-s", "glibc", "--without-control", "--csv", "-"]].concat());
    o.assert_success("bench --csv -");
    assert_eq!(csv_rows(&o.stdout).len(), 1 + 2 * 2, "{}", o.stdout);
    let o = run_in(dir.path(), &["bench", "--rwlock", "--json", "-", "--svg", "-"]);
    assert_eq!(code(&o), Some(2), "{o:?}");
    assert!(o.stderr.contains("only one of --csv, --json and --svg"), "{}", o.stderr);
    assert!(!dir.path().join("-").exists(), "bench created a file named '-'");
}
