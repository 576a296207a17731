//! What the mutex grid writes: its text tables, its CSV and JSON rows, and its chart.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::bench::grid::{arm_columns_table, kops, ns, ArmFigures};
use crate::output::svg;
use crate::output::text::{self, csv_field, csv_num, finite, Table};
use crate::process::library::Arm;
use crate::process::machine::Machine;
use crate::process::settings::Effective;
use crate::stats;
use crate::stats::sample::{Sample, Versus};

use super::*;

pub(super) fn render_tables(
    c: &Config,
    sums: &[CellSummary],
    m: &Machine,
    effective: &BTreeMap<String, Option<Effective>>,
    scenario_setup: &BTreeMap<String, String>,
    lib: &Path,
) -> String {
    let refname = &c.reference;
    let has_none = c.strategies.iter().any(|s| s == "none");
    let control = Arm::LockFree.to_string();
    let mut out = String::new();
    let runs = if c.layouts.is_empty() {
        format!("{} run(s) per arm per scenario", c.scenario_runs)
    } else if c.scenarios.is_empty() {
        format!("{} run(s) per arm per cell", c.runs)
    } else {
        format!("{} run(s) per arm per cell, {} per scenario", c.runs, c.scenario_runs)
    };
    let _ = writeln!(
        out,
        "\nspinmutex bench: {runs}, interleaved; {} CPUs ({}); {} hog(s)",
        m.nproc, m.cpu_model, c.hogs
    );
    let _ = writeln!(out, "arms (the settings each reported when it loaded):");
    let width = c.summarised_arms().iter().map(String::len).max().unwrap_or(0);
    for s in &c.strategies {
        let what = match effective.get(s) {
            Some(Some(e)) => format!("{} {}: {}", lib.display(), e.version, e.describe()),
            _ if s == "none" => "no preload: glibc's mutex, without the library".into(),
            _ => "no run".into(),
        };
        let adaptive = if s == "glibc-adaptive" { " (a PTHREAD_MUTEX_ADAPTIVE_NP mutex)" } else { "" };
        let _ = writeln!(out, "  {s:width$}  {what}{adaptive}");
    }
    if c.control {
        let _ = writeln!(
            out,
            "  {control:width$}  the control: the same threads and pauses without the lock, no preload"
        );
    }

    let _ = writeln!(
        out,
        "\nThroughput in kops/s (median), its stddev in % of the mean, and the change against {refname}{}\n\
         (* = significant, Welch's t-test p < 0.05). bound = 1 / (load × pause time), in kops/s.",
        if has_none { " (and, for glibc, against none: the preload's own cost)" } else { "" }
    );
    let mut groups: Vec<(String, Vec<&Cell>)> = Vec::new();
    for cell in &c.cells {
        match groups.iter_mut().find(|(g, _)| *g == cell.group()) {
            Some((_, cells)) => cells.push(cell),
            None => groups.push((cell.group(), vec![cell])),
        }
    }
    for (group, cells) in &groups {
        let heading = match cells[0].scenario {
            None if cells[0].layout == Layout::Alone => {
                "layout alone: the mutex on a cache line of its own".to_string()
            }
            None => "layout shared: the mutex on one cache line with the counter it protects".to_string(),
            Some(s) => {
                format!("scenario {s}: {}", scenario_setup.get(group).map_or("not run", String::as_str))
            }
        };
        let _ = writeln!(out, "\n{heading}\n");
        out.push_str(&throughput_table(c, sums, cells));
    }

    let _ = writeln!(
        out,
        "\nPer arm (medians over runs): ratio of median throughput to {refname} and to none, each with the\n\
         95% interval of the ratio of means (Fieller; * = significant, Welch); paired: the median over\n\
         runs of the ratio to {refname} in the same run (arms run back to back, so it holds when the\n\
         machine's speed changes between runs); CPU µs per 1000 acquisitions; fairness (fewest\n\
         per-thread acquisitions ÷ mean){};\n\
         acquisition wait p50/p99/max (sampled, so a thread starved of the lock shows in `fair`,\n\
         not here).\n",
        if c.control { " and it ÷ the lock-free control's (fair/ctl)" } else { "" }
    );
    let mut t = Table::new(4);
    let mut header: Vec<String> =
        ["cell", "threads", "load", "strategy", "ok", "kops/s", "sd%"].map(String::from).to_vec();
    header.extend(Versus::header(has_none));
    header.extend(["cpu µs/1k", "fair"].map(String::from));
    if c.control {
        header.push("fair/ctl".into());
    }
    header.extend(["wait p50", "wait p99", "wait max", "bound"].map(String::from));
    t.header.push(header);
    for s in sums {
        let mut row = vec![
            s.cell.group(),
            s.cell.threads.to_string(),
            s.cell.load.to_string(),
            s.strategy.clone(),
            format!("{}/{}", s.runs_ok, s.runs),
            kops(s.median_ops_per_s),
            text::pct(s.stddev_pct.unwrap_or(f64::NAN)),
        ];
        row.extend(s.versus.columns(has_none));
        row.push(text::fixed(s.cpu_us_per_1k_acq.unwrap_or(f64::NAN)));
        row.push(s.fairness.map_or("-".into(), |f| format!("{f:.2}")));
        if c.control {
            row.push(s.fairness_vs_control.map_or("-".into(), |f| format!("{f:.2}")));
        }
        row.extend([ns(s.wait_p50_ns), ns(s.wait_p99_ns), ns(s.wait_max_ns), kops(s.bound_ops_per_s)]);
        t.rows.push(row);
    }
    out.push_str(&t.render());
    out.push_str(&best_arm_table(sums));
    out.push_str(&class_table(sums));
    let pauses: Vec<f64> = sums.iter().filter_map(|c| c.pause_ns).collect();
    if !pauses.is_empty() {
        let _ = writeln!(out, "\npause: {:.1} ns (median of the cells' medians)", stats::median(&pauses));
    }
    out
}

/// Which arm to choose: for each arm, in how many grid cells its median throughput was
/// the highest, and its median ÷ the best arm's over the cells (the median over cells,
/// the lowest, and in how many it came within 3%), best first. Scenarios are left out:
/// `mixed` is judged by its wall time. Empty unless two arms ran in some grid cell.
pub(super) fn best_arm_table(sums: &[CellSummary]) -> String {
    let control = Arm::LockFree.to_string();
    // Each grid cell's arms with their median throughput, by the cell's label.
    let mut cells: BTreeMap<String, Vec<(&str, f64)>> = BTreeMap::new();
    for s in sums.iter().filter(|s| s.cell.scenario.is_none() && s.strategy != control) {
        if let Some(ops) = s.median_ops_per_s.filter(|v| v.is_finite() && *v > 0.0) {
            cells.entry(s.cell.label()).or_default().push((&s.strategy, ops));
        }
    }
    cells.retain(|_, arms| arms.len() > 1);
    if cells.is_empty() {
        return String::new();
    }
    // Per arm: its ratio to the leader in each cell it ran in (1 where it led).
    let mut ratios: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for ran in cells.values() {
        let best = ran.iter().map(|&(_, ops)| ops).fold(0.0, f64::max);
        for &(arm, ops) in ran {
            ratios.entry(arm).or_default().push(ops / best);
        }
    }
    let mut arms: Vec<(&str, f64, Vec<f64>)> =
        ratios.into_iter().map(|(arm, r)| (arm, stats::median(&r), r)).collect();
    arms.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut t = Table::new(1);
    t.header.push(["strategy", "best in", "median ÷ best", "lowest", "within 3%"].map(String::from).to_vec());
    for (arm, median, ratios) in &arms {
        let count = |keep: fn(f64) -> bool| ratios.iter().filter(|&&r| keep(r)).count();
        let lowest = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        t.rows.push(vec![
            arm.to_string(),
            format!("{}/{}", count(|r| r == 1.0), ratios.len()),
            format!("{median:.3}"),
            format!("{lowest:.2}"),
            format!("{}/{}", count(|r| r >= 0.97), ratios.len()),
        ]);
    }
    format!(
        "\nWhich arm to choose: per arm, the grid cells where its median throughput was the highest, and\n\
         its median ÷ the highest in each cell (the median over cells, the lowest, and how many within 3%).\n\
         Medians of few runs: read a lead of a few per cent against the sd% above.\n\n{}",
        t.render()
    )
}

/// `mixed`: each lock class's time and throughput per arm, beside the whole run's wall
/// time and its CPU per acquisition (empty when the scenario did not run).
fn class_table(sums: &[CellSummary]) -> String {
    let mixed: Vec<&CellSummary> = sums.iter().filter(|s| s.fast_class_ops_per_s.is_some()).collect();
    if mixed.is_empty() {
        return String::new();
    }
    let mut t = Table::new(1);
    t.header.push(
        ["strategy", "wall s", "fast class s", "slow class s", "fast kops/s", "slow ops/s", "cpu µs/1k"]
            .map(String::from)
            .to_vec(),
    );
    let secs = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3}"));
    let per_class = mixed[0].cell.threads / 2;
    for s in mixed {
        t.rows.push(vec![
            s.strategy.clone(),
            secs(s.work_wall_s),
            secs(s.fast_class_s),
            secs(s.slow_class_s),
            kops(s.fast_class_ops_per_s),
            s.slow_class_ops_per_s.map_or("-".into(), |v| format!("{v:.0}")),
            text::fixed(s.cpu_us_per_1k_acq.unwrap_or(f64::NAN)),
        ]);
    }
    format!(
        "\nScenario mixed, per lock class (medians over runs): a fixed amount of work for each class, the \
         fast class's {per_class} threads\nand the slow class's {per_class} (each holds the slow lock 50 µs at a \
         time: at most 20000 ops/s in all). Wall time is when the later class finished.\n\n{}",
        t.render()
    )
}

/// The throughput table of one group of cells: a row per cell, columns per arm.
pub(super) fn throughput_table(c: &Config, sums: &[CellSummary], cells: &[&Cell]) -> String {
    let rows = cells.iter().map(|cell| {
        let keys = vec![cell.threads.to_string(), cell.load.to_string()];
        (keys, c.strategies.iter().map(|s| find(sums, cell, s).map(CellSummary::figures)).collect())
    });
    arm_columns_table(&["threads", "load"], &c.strategies, &c.reference, rows)
}

impl CellSummary {
    fn figures(&self) -> ArmFigures<'_> {
        ArmFigures {
            median: self.median_ops_per_s,
            stddev_pct: self.stddev_pct,
            versus: &self.versus,
            bound: self.bound_ops_per_s,
        }
    }
}

const CSV_COLUMNS: &[&str] = &[
    "scenario",
    "layout",
    "threads",
    "load",
    "strategy",
    "run",
    "ok",
    "error",
    "wall_s",
    "duration_ms",
    "ops",
    "elapsed_s",
    "ops_per_s",
    "cpu_s",
    "user_s",
    "sys_s",
    "cpu_us_per_1k_acq",
    "min_thread_ops",
    "mean_thread_ops",
    "max_thread_ops",
    "fairness",
    "wait_samples",
    "wait_p50_ns",
    "wait_p99_ns",
    "wait_max_ns",
    "pause_ns",
    "bound_ops_per_s",
    "vol_ctx",
    "invol_ctx",
    "counter_ok",
    "slow_ops",
    "fast_ops",
    "fast_elapsed_s",
    "slow_elapsed_s",
];

pub(super) fn bound_of(load: u64, s: &Sample) -> f64 {
    bound(load, s.get("pause_ns"))
}

/// A value of a run's CSV row or JSON object, derived ones included.
pub(super) fn value(load: u64, s: &Sample, key: &str) -> f64 {
    match key {
        "cpu_us_per_1k_acq" => s.cpu_us_per_1k(),
        "fairness" => s.fairness_of("ops"),
        "bound_ops_per_s" => bound_of(load, s),
        k => s.get(k),
    }
}

pub(super) fn to_csv(c: &Config, records: &[RunRecord]) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for r in records {
        let empty = Sample::default();
        let s = r.sample.as_ref().unwrap_or(&empty);
        let cell = &c.cells[r.cell];
        let mut row = vec![
            cell.scenario.map_or(String::new(), |s| s.to_string()),
            cell.layout.to_string(),
            cell.threads.to_string(),
            cell.load.to_string(),
            csv_field(&r.strategy),
            r.run.to_string(),
            (r.error.is_none() as u8).to_string(),
            csv_field(r.error.as_deref().unwrap_or("")),
            csv_num(r.wall_s),
        ];
        for col in &CSV_COLUMNS[row.len()..] {
            row.push(csv_num(value(cell.load, s, col)));
        }
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

pub(super) fn run_json(c: &Config, r: &RunRecord) -> RunJson {
    let cell = &c.cells[r.cell];
    RunJson {
        cell: cell.clone(),
        strategy: r.strategy.clone(),
        run: r.run,
        ok: r.error.is_none(),
        error: r.error.clone(),
        wall_s: finite(r.wall_s),
        workload: r.sample.as_ref().map(|s| {
            let mut m: BTreeMap<String, Option<f64>> =
                s.values().iter().map(|(k, v)| (k.clone(), finite(*v))).collect();
            for k in ["cpu_us_per_1k_acq", "fairness", "bound_ops_per_s"] {
                m.insert(k.to_string(), finite(value(cell.load, s, k)));
            }
            m
        }),
    }
}

/// Throughput against threads, one panel per layout and load of the grid; error bars
/// from each run's throughput.
pub(super) fn to_svg(c: &Config, m: &Machine, sums: &[CellSummary], records: &[RunRecord]) -> String {
    let runs = |cell: &Cell, s: &str| -> Vec<f64> {
        records
            .iter()
            .filter(|r| c.cells[r.cell] == *cell && r.strategy == s && r.error.is_none())
            .filter_map(|r| r.sample.as_ref().map(Sample::ops_per_s))
            .collect()
    };
    let mut panels = Vec::new();
    for &layout in &c.layouts {
        for &l in &c.loads {
            let cells: Vec<&Cell> = c
                .cells
                .iter()
                .filter(|cell| cell.scenario.is_none() && cell.layout == layout && cell.load == l)
                .collect();
            let series = c
                .strategies
                .iter()
                .map(|s| {
                    let points = cells.iter().filter_map(|cell| {
                        let sum = find(sums, cell, s)?;
                        Some((cell.threads as f64, sum.median_ops_per_s.unwrap_or(f64::NAN), runs(cell, s)))
                    });
                    svg::Series::with_intervals(s.clone(), points.collect())
                })
                .collect();
            let bound =
                cells.first().and_then(|cell| find(sums, cell, &c.reference)).and_then(|s| s.bound_ops_per_s);
            panels.push(svg::Panel { title: format!("load {l} pauses, mutex {layout}"), series, bound });
        }
    }
    let mut sorted = c.threads.clone();
    sorted.sort_unstable();
    svg::Chart {
        title: "spinmutex bench: throughput against threads".into(),
        subtitle: format!(
            "points: median of {} runs of {} ms{}, bars: 95% interval of the mean; {} CPUs ({}); {} hog(s)",
            c.runs,
            c.duration_ms,
            if c.stretched { " or more" } else { "" },
            m.nproc,
            m.cpu_model,
            c.hogs
        ),
        x_label: "threads (log scale)".into(),
        y_label: "acquisitions per second".into(),
        x_ticks: sorted.iter().map(|&t| t as f64).collect(),
        panels,
    }
    .render()
}
