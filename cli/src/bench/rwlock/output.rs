//! What the rwlock grid writes: its text tables and its CSV and JSON rows.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::bench::grid;
use crate::output::text::{self, csv_field, csv_num, finite, Table};
use crate::process::machine::Machine;
use crate::process::settings::Effective;
use crate::stats;
use crate::stats::sample::{Sample, Versus};

use super::*;

pub(super) fn render_tables(
    c: &RwConfig,
    sums: &[RwCellSummary],
    m: &Machine,
    effective: &BTreeMap<String, Option<Effective>>,
    lib: &Path,
) -> String {
    let refname = &c.reference;
    let has_none = c.strategies.iter().any(|s| s == "none");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nspinmutex bench --rwlock: {} run(s) of {} ms per arm per cell, interleaved; kind {}; {} CPUs \
         ({}); {} hog(s)",
        c.runs, c.duration_ms, c.kind, m.nproc, m.cpu_model, c.hogs
    );
    let _ = writeln!(out, "arms (the settings each reported when it loaded):");
    let width = c.strategies.iter().map(String::len).max().unwrap_or(0);
    for s in &c.strategies {
        let what = match effective.get(s) {
            Some(Some(e)) => format!("{} {}: {}", lib.display(), e.version, e.describe()),
            _ if s == "none" => "no preload: glibc's rwlock, without the library".into(),
            _ => "no run".into(),
        };
        let _ = writeln!(out, "  {s:width$}  {what}");
    }
    let _ = writeln!(
        out,
        "\nThroughput in kops/s (median), its stddev in % of the mean, and the change against {refname}{}\n\
         (* = significant, Welch's t-test p < 0.05). writes = % of write acquisitions. bound = min(serial\n\
         writes, CPUs) in kops/s (see --help).\n",
        if has_none { " (and, for glibc, against none: the preload's own cost)" } else { "" }
    );
    let mut rows = Vec::new();
    for &th in &c.threads {
        for &w in &c.writes_pct {
            for &l in &c.loads {
                let keys = vec![th.to_string(), format!("{w}%"), l.to_string()];
                rows.push((
                    keys,
                    c.strategies
                        .iter()
                        .map(|s| find(sums, th, w, l, s).map(RwCellSummary::figures))
                        .collect(),
                ));
            }
        }
    }
    out.push_str(&grid::arm_columns_table(&["threads", "writes", "load"], &c.strategies, refname, rows));

    let _ = writeln!(
        out,
        "\nPer arm (medians over runs): ratio of median throughput to {refname} and to none, with the 95%\n\
         interval of the ratio of means (Fieller; * = significant, Welch); paired: the median over runs\n\
         of the ratio to {refname} in the same run (arms run back to back, so it holds when the machine's\n\
         speed changes between runs); CPU µs per 1000 acquisitions;\n\
         fairness: fewest acquisitions of a thread ÷ the mean, over both modes (fair), reads (fair r) and\n\
         writes (fair w); w share: the share of writes done ÷ the share asked for; acquisition wait p99\n\
         over both modes, reads and writes, and the longest (sampled on every 64th read and every 64th\n\
         write of each thread).\n"
    );
    let mut t = Table::new(4);
    let mut header: Vec<String> =
        ["threads", "writes", "load", "strategy", "ok", "kops/s", "sd%"].map(String::from).to_vec();
    header.extend(Versus::header(has_none));
    header.extend(
        [
            "cpu µs/1k",
            "fair",
            "fair r",
            "fair w",
            "w share",
            "wait p99",
            "p99 r",
            "p99 w",
            "wait max",
            "bound",
        ]
        .map(String::from),
    );
    t.header.push(header);
    let two = |f: Option<f64>| f.map_or("-".into(), |f| format!("{f:.2}"));
    for s in sums {
        let mut row = vec![
            s.threads.to_string(),
            format!("{}%", s.writes_pct),
            s.load.to_string(),
            s.strategy.clone(),
            format!("{}/{}", s.runs_ok, s.runs),
            grid::kops(s.median_ops_per_s),
            text::pct(s.stddev_pct.unwrap_or(f64::NAN)),
        ];
        row.extend(s.versus.columns(has_none));
        row.extend([
            text::fixed(s.cpu_us_per_1k_acq.unwrap_or(f64::NAN)),
            two(s.fairness),
            two(s.read_fairness),
            two(s.write_fairness),
            two(s.write_share),
            grid::ns(s.wait_p99_ns),
            grid::ns(s.read_wait_p99_ns),
            grid::ns(s.write_wait_p99_ns),
            grid::ns(s.wait_max_ns),
            grid::kops(s.bound_ops_per_s),
        ]);
        t.rows.push(row);
    }
    out.push_str(&t.render());
    let pauses: Vec<f64> = sums.iter().filter_map(|c| c.pause_ns).collect();
    if !pauses.is_empty() {
        let _ = writeln!(out, "\npause: {:.1} ns (median of the cells' medians)", stats::median(&pauses));
    }
    out
}

/// The columns of `--csv`, one row per run: the cell, the run, then the workload's keys
/// and the derived ones.
const CSV_COLUMNS: &[&str] = &[
    "threads",
    "writes_pct",
    "load",
    "strategy",
    "run",
    "ok",
    "error",
    "wall_s",
    "ops",
    "reads",
    "writes",
    "elapsed_s",
    "ops_per_s",
    "cpu_s",
    "cpu_us_per_1k_acq",
    "min_thread_ops",
    "mean_thread_ops",
    "max_thread_ops",
    "fairness",
    "read_fairness",
    "write_fairness",
    "write_share",
    "wait_samples",
    "wait_p50_ns",
    "wait_p99_ns",
    "wait_max_ns",
    "read_wait_samples",
    "read_wait_p99_ns",
    "write_wait_samples",
    "write_wait_p99_ns",
    "pause_ns",
    "bound_ops_per_s",
    "vol_ctx",
    "invol_ctx",
    "data_ok",
];

/// A value of a run's CSV row or JSON object, derived ones included.
pub(super) fn value(r: &RunRecord, s: &Sample, key: &str, cpus: usize) -> f64 {
    match key {
        "cpu_us_per_1k_acq" => s.cpu_us_per_1k(),
        "fairness" => s.fairness_of("ops"),
        "read_fairness" => s.fairness_of("reads"),
        "write_fairness" => s.fairness_of("writes"),
        "bound_ops_per_s" => bound(r.load, r.writes_pct, r.threads, cpus, s.get("pause_ns")),
        k => s.get(k),
    }
}

const DERIVED: &[&str] =
    &["cpu_us_per_1k_acq", "fairness", "read_fairness", "write_fairness", "bound_ops_per_s"];

pub(super) fn to_csv(records: &[RunRecord], cpus: usize) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for r in records {
        let empty = Sample::default();
        let s = r.sample.as_ref().unwrap_or(&empty);
        let mut row = vec![
            r.threads.to_string(),
            csv_num(r.writes_pct),
            r.load.to_string(),
            csv_field(&r.strategy),
            r.run.to_string(),
            (r.error.is_none() as u8).to_string(),
            csv_field(r.error.as_deref().unwrap_or("")),
            csv_num(r.wall_s),
        ];
        for col in &CSV_COLUMNS[row.len()..] {
            row.push(csv_num(value(r, s, col, cpus)));
        }
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

pub(super) fn run_json(r: &RunRecord, cpus: usize) -> RwRunJson {
    RwRunJson {
        threads: r.threads,
        writes_pct: r.writes_pct,
        load: r.load,
        strategy: r.strategy.clone(),
        run: r.run,
        ok: r.error.is_none(),
        error: r.error.clone(),
        wall_s: finite(r.wall_s),
        workload: r.sample.as_ref().map(|s| {
            let mut m: BTreeMap<String, Option<f64>> =
                s.values().iter().map(|(k, v)| (k.clone(), finite(*v))).collect();
            for k in DERIVED {
                m.insert(k.to_string(), finite(value(r, s, k, cpus)));
            }
            m
        }),
    }
}
