//! `spinmutex bench --rwlock`: the reader-writer benchmark grid.
//!
//! T threads share one pthread rwlock; each iteration takes it for writing with
//! probability W (a fixed per-thread pattern, the same in every run), else for reading,
//! runs L `pause`s inside, then L outside (bench/rwlock.c). Every run is a child
//! process, `spinmutex __rwlock_workload ...`, with the library preloaded under one
//! strategy, or without it for `none`. Within a cell (threads × writes × load) the arms
//! are interleaved: for each run, every arm once. The columns are the mutex grid's
//! (see ../grid.rs), with fairness and waits told per mode.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use spinmutex_names::Strategy;

use crate::output::progress::Progress;
use crate::output::text::finite;
use crate::process::child;
use crate::process::library::{self, Arm};
use crate::process::machine::Machine;
use crate::process::settings::{self, Effective};
use crate::stats;
use crate::stats::sample::{median_of, samples, throughputs, values, Runs, Sample, Versus};
use crate::Failure;

use super::args::BenchArgs;
use super::grid;
use output::{render_tables, run_json, to_csv};

mod output;

/// The grid as run: the options with their defaults filled in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RwConfig {
    pub threads: Vec<u64>,
    /// Percentages of write acquisitions.
    pub writes_pct: Vec<f64>,
    pub loads: Vec<u64>,
    /// The rwlock's kind: reader, writer or writer-nonrecursive
    /// (`PTHREAD_RWLOCK_PREFER_*_NP`).
    pub kind: String,
    /// The arms, `none` included.
    pub strategies: Vec<String>,
    /// The arm ratios are taken against: glibc if benchmarked, else the first.
    pub reference: String,
    pub runs: u64,
    pub duration_ms: u64,
    pub hogs: u64,
    pub env: BTreeMap<String, String>,
}

/// The JSON `bench --rwlock --json` writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RwBenchReport {
    /// "spinmutex bench --rwlock"
    pub tool: String,
    pub version: String,
    pub machine: Machine,
    pub config: RwConfig,
    /// What makes the numbers less trustworthy.
    pub warnings: Vec<String>,
    /// Per arm, the settings the library reported when it loaded (null for `none`).
    pub effective: BTreeMap<String, Option<Effective>>,
    /// The signal that interrupted the grid (`SIGINT`, ...): the runs are those that
    /// finished before it. Null when the grid ran to its end.
    #[serde(default)]
    pub interrupted: Option<String>,
    pub runs: Vec<RwRunJson>,
    pub cells: Vec<RwCellSummary>,
}

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RwRunJson {
    pub threads: u64,
    pub writes_pct: f64,
    pub load: u64,
    pub strategy: String,
    pub run: u64,
    pub ok: bool,
    pub error: Option<String>,
    pub wall_s: Option<f64>,
    /// The workload's output line (its numeric keys), with cpu_us_per_1k_acq,
    /// fairness, read_fairness, write_fairness and bound_ops_per_s added; null when it
    /// printed none.
    pub workload: Option<BTreeMap<String, Option<f64>>>,
}

/// A cell's summary for one arm (medians over its runs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RwCellSummary {
    pub threads: u64,
    pub writes_pct: f64,
    pub load: u64,
    pub strategy: String,
    pub runs_ok: usize,
    pub runs: usize,
    pub median_ops_per_s: Option<f64>,
    pub stddev_pct: Option<f64>,
    /// Against the reference arm and against none (the preload's own cost, for glibc).
    #[serde(flatten)]
    pub versus: Versus,
    pub cpu_us_per_1k_acq: Option<f64>,
    /// Fewest acquisitions of a thread ÷ the mean, both modes together.
    pub fairness: Option<f64>,
    /// The same for read acquisitions alone, and for write acquisitions alone.
    pub read_fairness: Option<f64>,
    pub write_fairness: Option<f64>,
    /// The share of writes done ÷ the share asked for.
    pub write_share: Option<f64>,
    pub wait_p50_ns: Option<f64>,
    pub wait_p99_ns: Option<f64>,
    pub read_wait_p99_ns: Option<f64>,
    pub write_wait_p99_ns: Option<f64>,
    pub wait_max_ns: Option<f64>,
    pub pause_ns: Option<f64>,
    /// See [`bound`]; null where none applies (load 0).
    pub bound_ops_per_s: Option<f64>,
}

impl RwCellSummary {
    fn figures(&self) -> grid::ArmFigures<'_> {
        grid::ArmFigures {
            median: self.median_ops_per_s,
            stddev_pct: self.stddev_pct,
            versus: &self.versus,
            bound: self.bound_ops_per_s,
        }
    }
}

const REQUIRED_KEYS: &[&str] = &[
    "ops",
    "reads",
    "writes",
    "ops_per_s",
    "cpu_s",
    "min_thread_ops",
    "mean_thread_ops",
    "wait_p99_ns",
    "pause_ns",
    "data_ok",
];

/// The keys whose values are words, not numbers.
const WORD_KEYS: &[&str] = &["kind", "layout"];

#[derive(Debug, Clone)]
struct RunRecord {
    threads: u64,
    writes_pct: f64,
    load: u64,
    strategy: String,
    run: u64,
    wall_s: f64,
    sample: Option<Sample>,
    error: Option<String>,
}

impl grid::Record for RunRecord {
    fn sample(&self) -> Option<&Sample> {
        self.sample.as_ref()
    }

    fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

impl RunRecord {
    fn in_cell(&self, t: u64, w: f64, l: u64) -> bool {
        self.threads == t && self.writes_pct == w && self.load == l
    }
}

/// The grid with defaults filled in, and the arms.
fn config(a: &BenchArgs) -> Result<(RwConfig, Vec<Arm>), Failure> {
    let usage = |m: String| Failure::Usage("bench", m);
    type Defaults<'a> = (&'a [u64], &'a [f64], &'a [u64], u64, u64);
    let (dt, dw, dl, dr, dd): Defaults = if a.quick {
        (&[1, 2, 8], &[0.0, 10.0, 50.0], &[1, 100], 3, 200)
    } else {
        (&[1, 2, 4, 8, 16], &[0.0, 1.0, 10.0, 50.0], &[1, 10, 100], 5, 300)
    };
    if a.svg.is_some() {
        return Err(usage("--svg is not available with --rwlock (use --json or --csv)".into()));
    }
    let mutex_only = [
        ("--layout", !a.layout.is_empty()),
        ("--scenarios", !a.scenarios.is_empty()),
        ("--no-grid", a.no_grid),
        ("--without-control", a.without_control),
    ];
    if let Some((flag, _)) = mutex_only.iter().find(|(_, given)| *given) {
        return Err(usage(format!("{flag} belongs to the mutex grid: it is not available with --rwlock")));
    }
    for (i, t) in a.threads.iter().enumerate() {
        if a.threads[..i].contains(t) {
            return Err(usage(format!("--threads: {t} is listed twice")));
        }
    }
    for (i, l) in a.loads.iter().enumerate() {
        if a.loads[..i].contains(l) {
            return Err(usage(format!("--loads: {l} is listed twice")));
        }
    }
    for (i, w) in a.writes.iter().enumerate() {
        if a.writes[..i].contains(w) {
            return Err(usage(format!("--writes: {w} is listed twice")));
        }
    }
    let mut arms: Vec<Arm> = Vec::new();
    for arm in &a.strategies {
        if *arm == Arm::GlibcAdaptive {
            return Err(usage("glibc-adaptive is a mutex type: it has no rwlock counterpart".into()));
        }
        if arms.contains(arm) {
            return Err(usage(format!("--strategies: '{arm}' is listed twice")));
        }
        arms.push(*arm);
    }
    if arms.is_empty() {
        arms = vec![
            Arm::Strategy(Strategy::Glibc),
            Arm::Strategy(Strategy::Futex),
            Arm::Strategy(Strategy::Spin),
        ];
    }
    if !a.without_none {
        library::with_none_baseline(&mut arms);
    }
    let names: Vec<String> = arms.iter().map(Arm::to_string).collect();
    let reference = names.iter().find(|s| *s == "glibc").unwrap_or(&names[0]).clone();
    let or =
        |given: &[u64], default: &[u64]| if given.is_empty() { default.to_vec() } else { given.to_vec() };
    Ok((
        RwConfig {
            threads: or(&a.threads, dt),
            writes_pct: if a.writes.is_empty() { dw.to_vec() } else { a.writes.clone() },
            loads: or(&a.loads, dl),
            kind: a.kind.clone().unwrap_or_else(|| "reader".into()),
            strategies: names,
            reference,
            runs: a.runs.unwrap_or(dr),
            duration_ms: a.duration_ms.unwrap_or(dd),
            hogs: a.hogs,
            env: a.settings.env().into_iter().collect(),
        },
        arms,
    ))
}

/// The per-mille the workload takes for a percentage.
fn permille(pct: f64) -> u64 {
    (pct * 10.0).round() as u64
}

pub fn main(a: BenchArgs) -> Result<u8, Failure> {
    let (c, arms) = config(&a)?;
    let env = a.settings.env();
    settings::check_inherited(&env, true).map_err(|m| Failure::Usage("bench", m))?;
    settings::refuse_statistics(&env).map_err(|m| Failure::Usage("bench", m))?;
    let lib = if arms.iter().any(|arm| arm.strategy().is_some()) {
        library::find().map_err(Failure::Runtime)?
    } else {
        PathBuf::new()
    };
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Runtime(format!("cannot find this command's path: {e}")))?;
    child::catch_interrupts();

    let machine = Machine::probe();
    let mut warnings: Vec<String> = machine.busy_warning().into_iter().collect();
    let cells = c.threads.len() * c.writes_pct.len() * c.loads.len();
    let total = cells * arms.len() * c.runs as usize;
    eprintln!(
        "spinmutex bench --rwlock: {cells} cells × {} arms × {} runs of {} ms = {total} runs, about {:.0} s; \
         {} CPUs ({}){}",
        arms.len(),
        c.runs,
        c.duration_ms,
        total as f64 * (c.duration_ms as f64 / 1000.0 + 0.05),
        machine.nproc,
        machine.cpu_model,
        if c.hogs > 0 { format!(", {} hog(s)", c.hogs) } else { String::new() }
    );
    for w in &warnings {
        eprintln!("spinmutex bench: warning: {w}");
    }

    let hogs = crate::bench::workload::Hogs::start(c.hogs, None).map_err(Failure::Runtime)?;
    let mut progress = Progress::new(total as u64);
    let mut cells = Vec::new();
    for &threads in &c.threads {
        for &writes in &c.writes_pct {
            for &load in &c.loads {
                cells.push(Cell { threads, writes, load });
            }
        }
    }
    let grid::Ran { records, effective } = grid::interleave(
        &cells,
        &arms,
        &mut progress,
        |_| c.runs,
        |cell, arm, run, runs| {
            let Cell { threads, writes, load } = *cell;
            format!("threads {threads:>3} writes {writes:>4}% load {load:>3} {arm:<6} run {run}/{runs}")
        },
        |_, cell, arm, run| run_once(&exe, &lib, &c, &env, *cell, arm, run),
    )?;
    drop(progress);
    drop(hogs);
    let interrupted = child::say_if_interrupted("bench", records.len(), "runs");

    let summaries = summarise(&c, &records, machine.nproc);
    for s in &summaries {
        if let Some(cv) = s.stddev_pct.filter(|cv| *cv > 10.0) {
            warnings.push(format!(
                "threads {} writes {}% load {} {}: throughput varies by {cv:.1}% (stddev in % of the mean, \
                 over 10%)",
                s.threads, s.writes_pct, s.load, s.strategy
            ));
        }
    }
    let mut text = render_tables(&c, &summaries, &machine, &effective, &lib);
    let failed: Vec<String> = records
        .iter()
        .filter_map(|r| {
            let e = r.error.as_deref()?;
            Some(format!(
                "threads {} writes {}% load {} {} run {}: {e}",
                r.threads, r.writes_pct, r.load, r.strategy, r.run
            ))
        })
        .collect();
    text.push_str(&grid::warnings_and_failures(&warnings, &failed));
    let mut files = Vec::new();
    if let Some(p) = &a.csv {
        files.push((p.as_path(), to_csv(&records, machine.nproc)));
    }
    if let Some(p) = &a.json {
        let report = RwBenchReport {
            tool: "spinmutex bench --rwlock".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            machine: machine.clone(),
            config: c.clone(),
            warnings,
            effective,
            interrupted: interrupted.map(|sig| child::signal_name(sig).to_string()),
            runs: records.iter().map(|r| run_json(r, machine.nproc)).collect(),
            cells: summaries,
        };
        files.push((
            p.as_path(),
            serde_json::to_string_pretty(&report).expect("the report serialises") + "\n",
        ));
    }
    grid::finish(files, &text)?;
    Ok(grid::exit_status(interrupted, failed.is_empty()))
}

/// A cell of the grid.
#[derive(Clone, Copy)]
struct Cell {
    threads: u64,
    writes: f64,
    load: u64,
}

/// The rwlock grid's workload (bench/rwlock.c).
const WORKLOAD: grid::Workload = grid::Workload {
    subcommand: "__rwlock_workload",
    required: REQUIRED_KEYS,
    words: WORD_KEYS,
    consistent: ("data_ok", "INCONSISTENT: a torn read or a lost write"),
};

/// One run of the workload (see [`grid::run`]).
fn run_once(
    exe: &Path,
    lib: &Path,
    c: &RwConfig,
    env: &[(String, String)],
    cell: Cell,
    arm: Arm,
    run: u64,
) -> Result<Option<(RunRecord, Vec<Effective>)>, Failure> {
    let args = |cmd: &mut Command| {
        cmd.args(["--threads", &cell.threads.to_string(), "--load", &cell.load.to_string()])
            .args(["--write-permille", &permille(cell.writes).to_string()])
            .args(["--duration-ms", &c.duration_ms.to_string(), "--kind", &c.kind]);
    };
    let Some(done) = grid::run(&WORKLOAD, exe, lib, env, arm, args)? else {
        return Ok(None);
    };
    let rec = RunRecord {
        threads: cell.threads,
        writes_pct: cell.writes,
        load: cell.load,
        strategy: arm.to_string(),
        run,
        wall_s: done.wall_s,
        sample: done.sample,
        error: done.error,
    };
    Ok(Some((rec, done.loads)))
}

/// The physical bound of a cell, in acquisitions per second, for a load of `load`
/// pauses of `pause_ns` inside and outside the lock: writers hold the lock alone, so
/// write acquisitions can come at most one per `load` pauses (≤ 1 / (w × load × pause)
/// in all), and every acquisition keeps a CPU busy for 2 × `load` pauses, so `cpus`
/// CPUs (or fewer threads) do at most min(threads, cpus) / (2 × load × pause). Infinite
/// for load 0.
fn bound(load: u64, writes_pct: f64, threads: u64, cpus: usize, pause_ns: f64) -> f64 {
    if load == 0 || pause_ns <= 0.0 || pause_ns.is_nan() {
        return f64::INFINITY;
    }
    let per_op_ns = load as f64 * pause_ns;
    let cpu = threads.min(cpus as u64) as f64 * 1e9 / (2.0 * per_op_ns);
    let serial = if writes_pct > 0.0 { 1e9 / (writes_pct / 100.0 * per_op_ns) } else { f64::INFINITY };
    cpu.min(serial)
}

fn summarise(c: &RwConfig, records: &[RunRecord], cpus: usize) -> Vec<RwCellSummary> {
    let good = |t: u64, w: f64, l: u64, s: &str| -> Runs {
        records
            .iter()
            .filter(|r| r.in_cell(t, w, l) && r.strategy == s && r.error.is_none())
            .filter_map(|r| Some((r.run, r.sample.as_ref()?)))
            .collect()
    };
    let med = median_of;
    let mut out = Vec::new();
    for &t in &c.threads {
        for &w in &c.writes_pct {
            for &l in &c.loads {
                let ref_ops = throughputs(&good(t, w, l, &c.reference));
                let none_ops = throughputs(&good(t, w, l, "none"));
                let cell_all: Vec<&Sample> =
                    c.strategies.iter().flat_map(|s| samples(&good(t, w, l, s))).collect();
                let pause = med(&cell_all, &|s| s.get("pause_ns"));
                let bound = bound(l, w, t, cpus, pause);
                for s in &c.strategies {
                    let runs = good(t, w, l, s);
                    let samples = samples(&runs);
                    let attempted = records.iter().filter(|r| r.in_cell(t, w, l) && r.strategy == *s).count();
                    if attempted == 0 {
                        continue;
                    }
                    let xs = throughputs(&runs);
                    let ops = values(&xs);
                    let median_ops = stats::median(&ops);
                    let versus = Versus::new(&xs, &ref_ops, &none_ops, *s == c.reference, s == "none");
                    let value = |f: &dyn Fn(&Sample) -> f64| finite(med(&samples, f));
                    out.push(RwCellSummary {
                        threads: t,
                        writes_pct: w,
                        load: l,
                        strategy: s.clone(),
                        runs_ok: samples.len(),
                        runs: attempted,
                        median_ops_per_s: finite(median_ops),
                        stddev_pct: finite(stats::stddev_pct(&ops)),
                        versus,
                        cpu_us_per_1k_acq: value(&|s| s.cpu_us_per_1k()),
                        fairness: value(&|s| s.fairness_of("ops")),
                        read_fairness: value(&|s| s.fairness_of("reads")),
                        write_fairness: value(&|s| s.fairness_of("writes")),
                        write_share: if w > 0.0 { value(&|s| s.get("write_share")) } else { None },
                        wait_p50_ns: value(&|s| s.get("wait_p50_ns")),
                        wait_p99_ns: value(&|s| s.get("wait_p99_ns")),
                        read_wait_p99_ns: value(&|s| nonzero_samples(s, "read")),
                        write_wait_p99_ns: value(&|s| nonzero_samples(s, "write")),
                        wait_max_ns: value(&|s| s.get("wait_max_ns")),
                        pause_ns: finite(pause),
                        bound_ops_per_s: finite(bound),
                    });
                }
            }
        }
    }
    out
}

/// A mode's p99 wait, NaN when the run sampled none of that mode.
fn nonzero_samples(s: &Sample, mode: &str) -> f64 {
    if s.get(&format!("{mode}_wait_samples")) > 0.0 {
        s.get(&format!("{mode}_wait_p99_ns"))
    } else {
        f64::NAN
    }
}

fn find<'a>(sums: &'a [RwCellSummary], t: u64, w: f64, l: u64, s: &str) -> Option<&'a RwCellSummary> {
    sums.iter().find(|c| c.threads == t && c.writes_pct == w && c.load == l && c.strategy == s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<(RwConfig, Vec<Arm>), String> {
        let a: BenchArgs = crate::parse_args(args).map_err(|e| e.to_string())?;
        config(&a).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn defaults_and_quick() {
        let (c, _) = parse(&["--rwlock"]).unwrap();
        assert_eq!(c.threads, vec![1, 2, 4, 8, 16]);
        assert_eq!(c.writes_pct, vec![0.0, 1.0, 10.0, 50.0]);
        assert_eq!(c.loads, vec![1, 10, 100]);
        assert_eq!(c.strategies, ["none", "glibc", "futex", "spin"]);
        assert_eq!(
            (c.runs, c.duration_ms, c.kind.as_str(), c.reference.as_str()),
            (5, 300, "reader", "glibc")
        );
        let (c, _) =
            parse(&["--rwlock", "--quick", "--writes", "0.5,100", "--kind", "writer-nonrecursive"]).unwrap();
        assert_eq!((c.threads, c.loads, c.runs), (vec![1, 2, 8], vec![1, 100], 3));
        assert_eq!((c.writes_pct, c.kind.as_str()), (vec![0.5, 100.0], "writer-nonrecursive"));
        assert_eq!(permille(0.5), 5);
        let (c, _) = parse(&["--rwlock", "-s", "spin", "--without-none"]).unwrap();
        assert_eq!((c.strategies.join(","), c.reference.as_str()), ("spin".into(), "spin"));
    }

    #[test]
    fn rejects() {
        for bad in [
            &["--writes", "10"][..],
            &["--kind", "reader"],
            &["--rwlock", "--writes", "101"],
            &["--rwlock", "--writes", "0.05"],
            &["--rwlock", "--writes", "-1"],
            &["--rwlock", "--writes", "1,1"],
            &["--rwlock", "--kind", "fair"],
            &["--rwlock", "-s", "glibc-adaptive"],
            &["--rwlock", "--svg", "x.svg"],
            &["--rwlock", "--threads", "2,2"],
            &["--rwlock", "--layout", "shared"],
            &["--rwlock", "--scenarios", "idle-owner"],
            &["--rwlock", "--no-grid"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn parses_workload_output() {
        let line = "threads=2 load=10 write_permille=100 kind=reader layout=shared ops=1000 reads=900 \
                    writes=100 ops_per_s=5000 cpu_s=0.5 min_thread_ops=400 mean_thread_ops=500 \
                    min_thread_reads=300 mean_thread_reads=450 min_thread_writes=50 mean_thread_writes=50 \
                    write_share=1 wait_p99_ns=2000 read_wait_samples=0 read_wait_p99_ns=0 pause_ns=30 data_ok=1\n";
        let s = Sample::parse(line, REQUIRED_KEYS, WORD_KEYS).unwrap();
        assert_eq!(s.ops_per_s(), 5000.0);
        assert_eq!((s.fairness_of("ops"), s.fairness_of("writes")), (0.8, 1.0));
        assert!((s.fairness_of("reads") - 300.0 / 450.0).abs() < 1e-12);
        assert_eq!(s.cpu_us_per_1k(), 500_000.0);
        assert!(nonzero_samples(&s, "read").is_nan());
        assert!(Sample::parse("ops=1", REQUIRED_KEYS, WORD_KEYS).is_err());
        assert!(Sample::parse("ops=x", REQUIRED_KEYS, WORD_KEYS).is_err());
    }

    #[test]
    fn bounds() {
        // Load 10 at 30 ns a pause: 300 ns per critical section. 50% writes serialise
        // 1 in 2 acquisitions: at most 1e9 / 150 per second; 2 CPUs, 8 threads: at most
        // 2 × 1e9 / 600.
        let b = bound(10, 50.0, 8, 2, 30.0);
        assert!((b - 2e9 / 600.0).abs() < 1e-3, "{b}");
        assert!((bound(10, 100.0, 8, 16, 30.0) - 1e9 / 300.0).abs() < 1e-3);
        assert!((bound(10, 0.0, 1, 2, 30.0) - 1e9 / 600.0).abs() < 1e-3);
        assert!(!bound(0, 50.0, 8, 2, 30.0).is_finite());
    }
}
