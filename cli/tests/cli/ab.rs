//! `spinmutex ab`: verdicts in words and JSON, failed runs and metrics, a static
//! program, and memory that stays flat however much the program writes.

use super::*;

/// `ab --json -` writes the JSON alone on standard output; the text report goes to
/// standard error.
pub(crate) fn ab_json_dash_writes_json_alone_on_stdout() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        &["ab", "-n", "2", "--warmup", "0", "-s", "glibc", "--without-none", "--json", "-", "--", "true"],
    );
    o.assert_success("ab --json -");
    let report: AbReport =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", o.stdout));
    assert_eq!(report.runs.len(), 2);
    assert!(o.stderr.contains("wall time"), "the text report goes to stderr:\n{}", o.stderr);
    assert!(!dir.path().join("-").exists(), "ab created a file named '-'");
    let o = run(&["ab", "--json", "-", "--show-output", "--", "true"]);
    assert_eq!(code(&o), Some(2), "{o:?}");
}

pub(crate) fn ab_compares_in_words_and_writes_json() {
    let dir = scratch();
    let json = dir.path().join("ab.json");
    let prog = ab_tiny();
    let o = run(&[
        "ab",
        "-n",
        "3",
        "--warmup",
        "1",
        "-s",
        "glibc",
        "-s",
        "spin",
        "--metric",
        r"ops/s=([0-9.]+)",
        "--json",
        json.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "20000",
    ]);
    o.assert_success("ab");
    for want in
        ["wall time", "CPU time", "metric", "strategy=spin spin_limit=8us", "strategy=glibc", "no preload"]
    {
        assert!(o.stdout.contains(want), "ab output lacks {want:?}:\n{}", o.stdout);
    }
    // A verdict for every pair and quantity: spin and glibc against each baseline.
    let verdicts: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("  spin") || l.starts_with("  glibc"))
        .filter(|l| l.contains(" vs ") || l.contains(" than "))
        .collect();
    assert_eq!(verdicts.len(), 3 * 3, "{}", o.stdout);
    for v in &verdicts {
        assert!(
            v.contains("significant") || v.contains("no difference detectable at this noise"),
            "a verdict says neither: {v}"
        );
    }
    assert!(o.stdout.contains("higher is better"), "{}", o.stdout);
    // Progress on stderr: 3 arms (none added beside glibc) × (1 warm-up + 3 runs).
    assert_eq!(o.stderr.lines().filter(|l| l.starts_with('[')).count(), 12, "{}", o.stderr);

    let report: AbReport = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.tool, "spinmutex ab");
    assert_eq!(report.strategies, ["none", "glibc", "spin"]);
    assert_eq!(report.runs.len(), 9);
    assert!(report.runs.iter().all(|r| r.ok && r.metric.is_some()), "{:?}", report.runs);
    assert_eq!(report.metric_direction, Some(Direction::HigherIsBetter));
    let arm = |name: &str| report.arms.iter().find(|a| a.name == name).unwrap();
    assert!(arm("none").effective.is_none() && !arm("none").preload);
    assert_eq!(arm("spin").effective.as_ref().unwrap().strategy, "spin");
    assert_eq!(arm("glibc").effective.as_ref().unwrap().strategy, "glibc");
    assert_eq!(arm("spin").loaded_in, ["ab_tiny"]);
    for key in ["wall_s", "cpu_s", "metric"] {
        assert_eq!(report.summary[key].len(), 3, "{key}");
        let pairs: Vec<(String, String)> =
            report.comparisons[key].iter().map(|c| (c.strategy.clone(), c.baseline.clone())).collect();
        let want = [("spin", "glibc"), ("spin", "none"), ("glibc", "none")];
        assert_eq!(pairs, want.map(|(a, b)| (a.to_string(), b.to_string())), "{key}");
        for c in &report.comparisons[key] {
            if let Some([lo, hi]) = c.ratio_ci95 {
                assert!(lo >= 0.0 && lo <= hi, "{key}: {lo}..{hi}");
            }
        }
    }
}

pub(crate) fn ab_reports_failed_runs_and_keeps_times_without_a_metric() {
    let prog = ab_tiny();
    let o = run(&["ab", "-n", "2", "--warmup", "0", "--", prog.to_str().unwrap(), "1000", "3"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stdout.contains("failed run(s)") && o.stdout.contains("exit status 3"), "{}", o.stdout);
    assert!(o.stdout.contains("0/2"), "{}", o.stdout);
    assert!(o.stderr.contains("FAILED"), "{}", o.stderr);

    // A metric that matches nothing loses the metric, not the wall and CPU times.
    let o = run(&[
        "ab",
        "-n",
        "2",
        "--warmup",
        "0",
        "--metric",
        r"nomatch=(\d+)",
        "--",
        prog.to_str().unwrap(),
        "1000",
    ]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stdout.contains("matched nothing"), "{}", o.stdout);
    let wall = o.stdout.split("wall time").nth(1).expect("a wall time table");
    let wall = wall.split("CPU time").next().unwrap_or(wall);
    assert!(
        wall.lines().filter(|l| l.contains("2/2")).count() == 3,
        "wall times were dropped:\n{}",
        o.stdout
    );
}

pub(crate) fn ab_stops_when_every_warmup_fails() {
    let o = run(&["ab", "-n", "5", "--warmup", "1", "--", "sh", "-c", "exit 4"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    assert!(o.stderr.contains("every warm-up run failed"), "{}", o.stderr);
    assert!(!o.stderr.contains("run 1/5"), "ab went on after the warm-up:\n{}", o.stderr);
}

/// The library cannot load into a static binary: ab stops at the first run that
/// should have loaded it, naming the likely causes.
pub(crate) fn ab_of_a_static_program_fails_with_the_causes() {
    let o = run(&["ab", "-n", "2", "--warmup", "0", "--", ab_tiny_static().to_str().unwrap(), "1000"]);
    assert_eq!(code(&o), Some(1), "{o:?}");
    for want in ["did not load", "statically linked", "setuid", "clears LD_PRELOAD"] {
        assert!(o.stderr.contains(want), "no {want:?} in:\n{}", o.stderr);
    }
    assert!(!o.stdout.contains("wall time"), "a comparison was printed:\n{}", o.stdout);
}

/// Which way a metric is better: from the flags, else from its unit, else unknown.
pub(crate) fn metric_direction_from_flags_units_or_unknown() {
    let prog = ab_tiny();
    let dir = scratch();
    let json = dir.path().join("ab.json");
    let ab = |extra: &[&str], pattern: &str| -> AbReport {
        let mut args = vec!["ab", "-n", "2", "--warmup", "0", "-s", "spin,futex", "--metric", pattern];
        args.extend(extra);
        args.extend(["--json", json.to_str().unwrap(), "--", prog.to_str().unwrap(), "2000"]);
        let o = run(&args);
        o.assert_success(&format!("ab {extra:?} --metric {pattern}"));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    assert_eq!(ab(&[], r"ops/s=([0-9.]+)").metric_direction, Some(Direction::HigherIsBetter));
    assert_eq!(
        ab(&["--lower-is-better"], r"ops/s=([0-9.]+)").metric_direction,
        Some(Direction::LowerIsBetter)
    );
    let r = ab(&[], r"counter=(\d+)");
    assert_eq!(r.metric_direction, Some(Direction::Unknown));
    assert!(r.metric_direction_reason.unwrap().contains("--higher-is-better"));
    // Without a direction, no verdict calls a side better.
    assert!(r.comparisons["metric"].iter().all(|c| c.better.is_none()));
}

/// Runs the command with `args` to its end; its exit status and the peak resident set
/// of it and its descendants (the largest one), in bytes, from wait4(2).
fn run_measuring_rss(args: &[&str]) -> (Option<i32>, u64, String) {
    use std::process::Stdio;
    let dir = scratch();
    let err = dir.path().join("err");
    let mut cmd = spinmutex(args);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(std::fs::File::create(&err).unwrap());
    // Waited for below with wait4(2), which std's Child does not offer.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().unwrap();
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 waits for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, usage.ru_maxrss as u64 * 1024, std::fs::read_to_string(&err).unwrap_or_default())
}

/// A program that writes 1 GiB leaves ab's memory flat: its stdout is discarded, or
/// read through the metric one bounded line at a time; its stderr is kept to its last
/// line.
pub(crate) fn ab_memory_stays_flat_however_much_the_program_writes() {
    let limit = 50 << 20;
    let plain = ["ab", "-n", "2", "--warmup", "0", "-s", "glibc", "--without-none", "--", "sh", "-c"];
    let (code, rss, err) = run_measuring_rss(&[&plain[..], &["head -c 1G /dev/zero"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(rss < limit, "ab reached {} MB for a program writing 1 GiB", rss >> 20);
    let script = "echo ops=5; head -c 512M /dev/zero; head -c 512M /dev/zero >&2";
    let (code, rss, err) =
        run_measuring_rss(&[&plain[..8], &["--metric", r"ops=(\d+)", "--", "sh", "-c", script]].concat());
    assert_eq!(code, Some(0), "the metric is still found: {err}");
    assert!(rss < limit, "ab reached {} MB reading 1 GiB through --metric", rss >> 20);
}

/// --show-output passes the program's output through; without it ab prints none of it.
pub(crate) fn ab_show_output_passes_the_output_through() {
    let base = ["ab", "-n", "2", "--warmup", "0", "-s", "glibc", "--without-none"];
    // (The words printed are not in the command line, which the report repeats.)
    let script = "x=said; echo $x-on-stdout; echo $x-on-stderr >&2";
    let o = run(&[&base[..], &["--", "sh", "-c", script]].concat());
    o.assert_success("ab");
    assert!(!o.stdout.contains("said-on") && !o.stderr.contains("said-on"), "{o:?}");
    let o = run(&[&base[..], &["--show-output", "--", "sh", "-c", script]].concat());
    o.assert_success("ab --show-output");
    assert_eq!(o.stdout.matches("said-on-stdout").count(), 2, "{}", o.stdout);
    assert_eq!(o.stderr.matches("said-on-stderr").count(), 2, "{}", o.stderr);
}
