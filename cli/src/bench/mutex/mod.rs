//! The mutex grid of `spinmutex bench`, and the named scenarios beside it.
//!
//! Every run is a child process, `spinmutex __workload ...`, with the library preloaded
//! under one strategy (see bench/contention.c), or without it for `none` and for the
//! lock-free control. A cell is one workload shape: a layout × threads × load of the
//! grid, or a scenario (../scenario.rs). Within a cell the arms are interleaved: for each
//! run, every arm once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use spinmutex_names::Strategy;

use crate::bench::scenario::{self, Scenario, Stage};
use crate::bench::workload::Hogs;
use crate::output::progress::Progress;
use crate::output::text::finite;
use crate::process::child;
use crate::process::library::{self, Arm};
use crate::process::machine::Machine;
use crate::process::settings::{self, Effective};
use crate::stats;
use crate::stats::sample::{median_of, samples, throughputs, values, Runs, Sample, Versus};
use crate::Failure;

use super::args::{BenchArgs, Layout};
use super::grid::{self, exit_status, warnings_and_failures};
use output::{render_tables, run_json, to_csv, to_svg};

mod output;

/// What the runs of a cell share: one workload shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// The named scenario; null for a cell of the grid.
    pub scenario: Option<Scenario>,
    pub layout: Layout,
    pub threads: u64,
    pub load: u64,
    /// The length of each run.
    pub duration_ms: u64,
}

impl Cell {
    /// How the progress lines and tables name the cell.
    fn label(&self) -> String {
        match self.scenario {
            Some(s) => format!("{s} ({} threads, load {})", self.threads, self.load),
            None => format!("{} threads {:>3} load {:>3}", self.layout, self.threads, self.load),
        }
    }

    /// The group of the tables the cell belongs to: its layout, or its scenario.
    fn group(&self) -> String {
        match self.scenario {
            Some(s) => s.to_string(),
            None => self.layout.to_string(),
        }
    }
}

/// The benchmark as run: the options with their defaults filled in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    /// The grid's threads, loads and layouts (empty with --no-grid).
    pub threads: Vec<u64>,
    pub loads: Vec<u64>,
    pub layouts: Vec<Layout>,
    pub scenarios: Vec<Scenario>,
    /// The arms, `none` included, the control not.
    pub strategies: Vec<String>,
    /// The arm ratios are taken against: glibc if benchmarked, else the first.
    pub reference: String,
    /// Whether the lock-free control ran.
    pub control: bool,
    pub runs: u64,
    pub scenario_runs: u64,
    /// --duration-ms, or the default before the per-thread floor.
    pub duration_ms: u64,
    /// Whether short runs are stretched to 8 ms per thread per CPU (not when
    /// --duration-ms is given).
    pub stretched: bool,
    pub scenario_duration_ms: u64,
    pub hogs: u64,
    pub env: BTreeMap<String, String>,
    /// Every cell, in the order run.
    pub cells: Vec<Cell>,
}

/// The per-thread floor of a run's length: 8 ms per thread per CPU.
const MS_PER_THREAD_PER_CPU: u64 = 8;

/// The JSON `bench --json` writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchReport {
    /// "spinmutex bench"
    pub tool: String,
    pub version: String,
    pub machine: Machine,
    pub config: Config,
    /// What makes the numbers less trustworthy.
    pub warnings: Vec<String>,
    /// Per arm, the settings the library reported when it loaded (null for `none`).
    pub effective: BTreeMap<String, Option<Effective>>,
    /// How each scenario was set up on this machine.
    pub scenario_setup: BTreeMap<String, String>,
    /// The signal that interrupted the grid (`SIGINT`, ...): the runs are those that
    /// finished before it. Null when the grid ran to its end.
    #[serde(default)]
    pub interrupted: Option<String>,
    pub runs: Vec<RunJson>,
    pub cells: Vec<CellSummary>,
}

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunJson {
    #[serde(flatten)]
    pub cell: Cell,
    pub strategy: String,
    pub run: u64,
    pub ok: bool,
    pub error: Option<String>,
    pub wall_s: Option<f64>,
    /// The workload's output line (key → value), with cpu_us_per_1k_acq, fairness and
    /// bound_ops_per_s added; null when it printed none.
    pub workload: Option<BTreeMap<String, Option<f64>>>,
}

/// A cell's summary for one arm.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellSummary {
    #[serde(flatten)]
    pub cell: Cell,
    pub strategy: String,
    pub runs_ok: usize,
    pub runs: usize,
    pub median_ops_per_s: Option<f64>,
    pub stddev_pct: Option<f64>,
    /// Against the reference arm and against none (the preload's own cost, for glibc).
    #[serde(flatten)]
    pub versus: Versus,
    pub cpu_us_per_1k_acq: Option<f64>,
    pub fairness: Option<f64>,
    /// Fairness ÷ the lock-free control's in the same cell.
    pub fairness_vs_control: Option<f64>,
    pub wait_p50_ns: Option<f64>,
    pub wait_p99_ns: Option<f64>,
    pub wait_max_ns: Option<f64>,
    pub pause_ns: Option<f64>,
    /// 1 / (load × pause time); null for load 0.
    pub bound_ops_per_s: Option<f64>,
    /// `mixed` only (medians over runs): each class's acquisitions per second, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_class_ops_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_class_ops_per_s: Option<f64>,
    /// ... the seconds each class took to do its work, and both (the run's wall time
    /// from the start of the work: the runs' `wall_s` includes the process's start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_class_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_class_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_wall_s: Option<f64>,
}

const REQUIRED_KEYS: &[&str] = &[
    "ops",
    "ops_per_s",
    "cpu_s",
    "min_thread_ops",
    "mean_thread_ops",
    "wait_p50_ns",
    "wait_p99_ns",
    "pause_ns",
    "counter_ok",
];

#[derive(Debug, Clone)]
struct RunRecord {
    /// Index into Config::cells.
    cell: usize,
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

/// The benchmark with defaults filled in, and the arms (the control not among them).
fn config(a: &BenchArgs, nproc: u64) -> Result<(Config, Vec<Arm>), Failure> {
    let (dt, dl, dr, dd): (&[u64], &[u64], u64, u64) = if a.quick {
        (&[1, 2, 8], &[0, 10, 100], 3, 200)
    } else {
        (&[1, 2, 4, 16, 64, 256], &[0, 1, 10, 50, 100], 5, 300)
    };
    fn unique<T: PartialEq + std::fmt::Display>(what: &str, xs: &[T]) -> Result<(), Failure> {
        for (i, x) in xs.iter().enumerate() {
            if xs[..i].contains(x) {
                return Err(Failure::Usage("bench", format!("--{what}: '{x}' is listed twice")));
            }
        }
        Ok(())
    }
    unique("threads", &a.threads)?;
    unique("loads", &a.loads)?;
    unique("layout", &a.layout)?;
    unique("strategies", &a.strategies)?;
    let mut scenarios: Vec<Scenario> = Vec::new();
    for s in &a.scenarios {
        match s {
            None if a.scenarios.len() > 1 => {
                return Err(Failure::Usage("bench", "--scenarios: 'none' goes alone".into()))
            }
            None => {}
            Some(s) => {
                unique("scenarios", &[scenarios.as_slice(), &[*s]].concat())?;
                scenarios.push(*s);
            }
        }
    }
    if a.scenarios.is_empty() && !a.quick {
        scenarios = scenario::ALL.to_vec();
    }
    if a.no_grid && scenarios.is_empty() {
        return Err(Failure::Usage("bench", "--no-grid leaves nothing to run without --scenarios".into()));
    }
    let mut arms = a.strategies.clone();
    if arms.is_empty() {
        arms = vec![
            Arm::Strategy(Strategy::Glibc),
            Arm::GlibcAdaptive,
            Arm::Strategy(Strategy::Futex),
            Arm::Strategy(Strategy::Spin),
            Arm::Strategy(Strategy::Auto),
            Arm::Strategy(Strategy::Kernel),
        ];
    }
    if !a.without_none {
        library::with_none_baseline(&mut arms);
    }
    let names: Vec<String> = arms.iter().map(Arm::to_string).collect();
    let reference = names.iter().find(|s| *s == "glibc").unwrap_or(&names[0]).clone();
    let pick =
        |given: &[u64], default: &[u64]| if given.is_empty() { default.to_vec() } else { given.to_vec() };
    let (threads, loads, layouts) = if a.no_grid {
        (Vec::new(), Vec::new(), Vec::new())
    } else {
        let layouts =
            if a.layout.is_empty() { vec![Layout::Alone, Layout::Shared] } else { a.layout.clone() };
        (pick(&a.threads, dt), pick(&a.loads, dl), layouts)
    };
    let duration_ms = a.duration_ms.unwrap_or(dd);
    let stretched = a.duration_ms.is_none();
    let scenario_duration_ms = a.duration_ms.unwrap_or(scenario::DURATION_MS);
    let mut cells = Vec::new();
    for &layout in &layouts {
        for &t in &threads {
            for &load in &loads {
                let floor = if stretched { t * MS_PER_THREAD_PER_CPU / nproc.max(1) } else { 0 };
                cells.push(Cell {
                    scenario: None,
                    layout,
                    threads: t,
                    load,
                    duration_ms: duration_ms.max(floor),
                });
            }
        }
    }
    for &s in &scenarios {
        cells.push(Cell {
            scenario: Some(s),
            layout: Layout::Alone,
            threads: s.threads(),
            load: scenario::LOAD,
            duration_ms: scenario_duration_ms,
        });
    }
    Ok((
        Config {
            threads,
            loads,
            layouts,
            scenarios,
            strategies: names,
            reference,
            control: !a.without_control,
            runs: a.runs.unwrap_or(dr),
            scenario_runs: a.runs.unwrap_or(scenario::RUNS),
            duration_ms,
            stretched,
            scenario_duration_ms,
            hogs: a.hogs,
            env: a.settings.env().into_iter().collect(),
            cells,
        },
        arms,
    ))
}

impl Config {
    fn runs_of(&self, cell: &Cell) -> u64 {
        if cell.scenario.is_some() {
            self.scenario_runs
        } else {
            self.runs
        }
    }

    /// The names of the arms the summaries cover: the strategies, then the control.
    fn summarised_arms(&self) -> Vec<String> {
        let mut arms = self.strategies.clone();
        if self.control {
            arms.push(Arm::LockFree.to_string());
        }
        arms
    }
}

pub fn main(a: BenchArgs) -> Result<u8, Failure> {
    let machine = Machine::probe();
    let (c, arms) = config(&a, machine.nproc as u64)?;
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

    let mut warnings: Vec<String> = machine.busy_warning().into_iter().collect();
    let mut run_arms = arms.clone();
    if c.control {
        run_arms.push(Arm::LockFree);
    }
    let total: u64 = c.cells.iter().map(|cell| c.runs_of(cell) * run_arms.len() as u64).sum();
    let seconds: f64 = c
        .cells
        .iter()
        .map(|cell| {
            (c.runs_of(cell) * run_arms.len() as u64) as f64 * (cell.duration_ms as f64 / 1000.0 + 0.05)
        })
        .sum();
    eprintln!(
        "spinmutex bench: {} cells × {} arms{} = {} runs, about {:.0} s; {} CPUs ({}){}",
        c.cells.len(),
        arms.len(),
        if c.control { " and the lock-free control" } else { "" },
        total,
        seconds,
        machine.nproc,
        machine.cpu_model,
        if c.hogs > 0 { format!(", {} hog(s)", c.hogs) } else { String::new() }
    );
    for w in &warnings {
        eprintln!("spinmutex bench: warning: {w}");
    }
    let inherited: Vec<String> = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("SPINMUTEX_") && k != "SPINMUTEX_LIB" && !env.iter().any(|(e, _)| e == k)
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !inherited.is_empty() {
        eprintln!("spinmutex bench: inherited settings apply to every run: {}", inherited.join(" "));
    }

    let hogs = Hogs::start(c.hogs, None).map_err(Failure::Runtime)?;
    let mut scenario_setup: BTreeMap<String, String> = BTreeMap::new();
    let mut progress = Progress::new(total);
    let mut stage: Option<(Scenario, Stage)> = None;
    let ran = grid::interleave(
        &c.cells,
        &run_arms,
        &mut progress,
        |cell| c.runs_of(cell),
        |cell, arm, run, runs| format!("{} {arm:<14} run {run}/{runs}", cell.label()),
        |index, cell, arm, run| {
            if let Some(s) = cell.scenario {
                if stage.as_ref().map(|(had, _)| *had) != Some(s) {
                    drop(stage.take()); // the previous scenario's hog or cgroup goes first
                    let set = Stage::set_up(s, cell.duration_ms)
                        .map_err(|e| Failure::Runtime(format!("scenario {s}: {e}")))?;
                    scenario_setup.insert(s.to_string(), set.note.clone());
                    eprintln!("spinmutex bench: scenario {s}: {}", set.note);
                    stage = Some((s, set));
                }
            }
            let staged = stage.as_ref().filter(|(s, _)| Some(*s) == cell.scenario).map(|(_, st)| st);
            run_once(&exe, &lib, &env, (index, cell), staged, arm, run)
        },
    )?;
    let grid::Ran { records, effective } = ran;
    drop(stage);
    drop(progress);
    drop(hogs);
    let interrupted = child::say_if_interrupted("bench", records.len(), "runs");

    let summaries = summarise(&c, &records);
    for s in &summaries {
        if let Some(cv) = s.stddev_pct.filter(|cv| *cv > 10.0) {
            warnings.push(format!(
                "{} {}: throughput varies by {cv:.1}% (stddev in % of the mean, over 10%)",
                s.cell.label(),
                s.strategy
            ));
        }
        if let Some(f) = s.fairness.filter(|f| *f < 0.5 && s.strategy == Arm::LockFree.to_string()) {
            warnings.push(format!(
                "{}: without any lock the fewest acquisitions of a thread are {f:.2} of the mean: \
                 the scheduler alone is that unfair here (see `fair/ctl`)",
                s.cell.label()
            ));
        }
    }
    let mut text = render_tables(&c, &summaries, &machine, &effective, &scenario_setup, &lib);
    let failed: Vec<String> = records
        .iter()
        .filter_map(|r| {
            let e = r.error.as_deref()?;
            Some(format!("{} {} run {}: {e}", c.cells[r.cell].label(), r.strategy, r.run))
        })
        .collect();
    text.push_str(&warnings_and_failures(&warnings, &failed));
    let mut files = Vec::new();
    if let Some(p) = &a.csv {
        files.push((p.as_path(), to_csv(&c, &records)));
    }
    if let Some(p) = &a.json {
        let report = BenchReport {
            tool: "spinmutex bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            machine: machine.clone(),
            config: c.clone(),
            warnings,
            effective,
            scenario_setup,
            interrupted: interrupted.map(|sig| child::signal_name(sig).to_string()),
            runs: records.iter().map(|r| run_json(&c, r)).collect(),
            cells: summaries.clone(),
        };
        files.push((
            p.as_path(),
            serde_json::to_string_pretty(&report).expect("the report serialises") + "\n",
        ));
    }
    if let Some(p) = &a.svg {
        files.push((p.as_path(), to_svg(&c, &machine, &summaries, &records)));
    }
    grid::finish(files, &text)?;
    Ok(exit_status(interrupted, failed.is_empty()))
}

/// The mutex grid's workload (bench/contention.c).
const WORKLOAD: grid::Workload = grid::Workload {
    subcommand: "__workload",
    required: REQUIRED_KEYS,
    words: &[],
    consistent: ("counter_ok", "LOST UPDATE: the shared counter does not add up"),
};

/// One run of the workload (see [`grid::run`]).
fn run_once(
    exe: &Path,
    lib: &Path,
    env: &[(String, String)],
    (index, cell): (usize, &Cell),
    stage: Option<&Stage>,
    arm: Arm,
    run: u64,
) -> Result<Option<(RunRecord, Vec<Effective>)>, Failure> {
    let args = |cmd: &mut Command| {
        cmd.args(["--threads", &cell.threads.to_string(), "--load", &cell.load.to_string()])
            .args(["--duration-ms", &cell.duration_ms.to_string()])
            .args(["--layout", &cell.layout.to_string()]);
        match arm {
            Arm::GlibcAdaptive => {
                cmd.arg("--adaptive");
            }
            Arm::LockFree => {
                cmd.arg("--no-lock");
            }
            _ => {}
        }
        if let Some(stage) = stage {
            cmd.args(&stage.args);
            stage.apply(cmd);
        }
    };
    let Some(done) = grid::run(&WORKLOAD, exe, lib, env, arm, args)? else {
        return Ok(None);
    };
    let rec = RunRecord {
        cell: index,
        strategy: arm.to_string(),
        run,
        wall_s: done.wall_s,
        sample: done.sample,
        error: done.error,
    };
    Ok(Some((rec, done.loads)))
}

fn summarise(c: &Config, records: &[RunRecord]) -> Vec<CellSummary> {
    let good = |cell: usize, s: &str| -> Runs {
        records
            .iter()
            .filter(|r| r.cell == cell && r.strategy == s && r.error.is_none())
            .filter_map(|r| Some((r.run, r.sample.as_ref()?)))
            .collect()
    };
    let med = median_of;
    let arms = c.summarised_arms();
    let control = Arm::LockFree.to_string();
    let mut out = Vec::new();
    for (index, cell) in c.cells.iter().enumerate() {
        let ref_ops = throughputs(&good(index, &c.reference));
        let none_ops = throughputs(&good(index, "none"));
        let cell_all: Vec<&Sample> = arms.iter().flat_map(|s| samples(&good(index, s))).collect();
        let pause = med(&cell_all, &|s| s.get("pause_ns"));
        let bound = bound(cell.load, pause);
        let control_fairness = med(&samples(&good(index, &control)), &|s| s.fairness_of("ops"));
        for s in &arms {
            let runs = good(index, s);
            let samples = samples(&runs);
            let attempted = records.iter().filter(|r| r.cell == index && r.strategy == *s).count();
            if attempted == 0 {
                continue;
            }
            let is_control = *s == control;
            let xs = throughputs(&runs);
            let ops = values(&xs);
            let median_ops = stats::median(&ops);
            // The control has no lock: its throughput is compared with nothing.
            let versus = if is_control {
                Versus::default()
            } else {
                Versus::new(&xs, &ref_ops, &none_ops, *s == c.reference, s == "none")
            };
            let fairness = med(&samples, &|s| s.fairness_of("ops"));
            out.push(CellSummary {
                cell: cell.clone(),
                strategy: s.clone(),
                runs_ok: samples.len(),
                runs: attempted,
                median_ops_per_s: finite(median_ops),
                stddev_pct: finite(stats::stddev_pct(&ops)),
                versus,
                cpu_us_per_1k_acq: finite(med(&samples, &|s| s.cpu_us_per_1k())),
                fairness: finite(fairness),
                fairness_vs_control: if is_control { None } else { finite(fairness / control_fairness) },
                wait_p50_ns: finite(med(&samples, &|s| s.get("wait_p50_ns"))).filter(|_| !is_control),
                wait_p99_ns: finite(med(&samples, &|s| s.get("wait_p99_ns"))).filter(|_| !is_control),
                wait_max_ns: finite(med(&samples, &|s| s.get("wait_max_ns"))).filter(|_| !is_control),
                pause_ns: finite(pause),
                bound_ops_per_s: finite(bound),
                fast_class_ops_per_s: finite(med(&samples, &|s| s.get("fast_ops") / class_s(s, "fast"))),
                slow_class_ops_per_s: finite(med(&samples, &|s| s.get("slow_ops") / class_s(s, "slow"))),
                fast_class_s: finite(med(&samples, &|s| class_s(s, "fast"))),
                slow_class_s: finite(med(&samples, &|s| class_s(s, "slow"))),
                work_wall_s: finite(med(&samples, &|s| class_s(s, "fast").max(class_s(s, "slow")))),
            });
        }
    }
    out
}

/// The seconds a `mixed` class (`fast` or `slow`) ran: until it finished its work, or
/// the whole run when the run had a fixed length; NaN outside `mixed`.
fn class_s(s: &Sample, class: &str) -> f64 {
    if s.get(&format!("{class}_ops")).is_nan() {
        return f64::NAN;
    }
    let done = s.get(&format!("{class}_elapsed_s"));
    if done.is_nan() {
        s.get("elapsed_s")
    } else {
        done
    }
}

fn find<'a>(sums: &'a [CellSummary], cell: &Cell, s: &str) -> Option<&'a CellSummary> {
    sums.iter().find(|c| c.cell == *cell && c.strategy == s)
}

/// The physical bound of a cell: the critical section is serial, so at most
/// 1 / (load × pause time) acquisitions per second; infinite for load 0.
fn bound(load: u64, pause_ns: f64) -> f64 {
    if load > 0 && pause_ns > 0.0 {
        1e9 / (load as f64 * pause_ns)
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests;
