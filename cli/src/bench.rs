//! `spinmutex bench`: the contention benchmark grid, and named scenarios beside it.
//!
//! Every run is a child process, `spinmutex __workload ...`, with the library preloaded
//! under one strategy (see bench/contention.c), or without it for `none` and for the
//! lock-free control. A cell is one workload shape: a layout × threads × load of the
//! grid, or a scenario (scenario.rs). Within a cell the arms are interleaved: for each
//! run, every arm once.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use serde::{Deserialize, Serialize};
use spinmutex_names::Strategy;

use crate::library::{self, parse_bench_arm, Arm};
use crate::machine::Machine;
use crate::progress::Progress;
use crate::sample::{median_of, samples, throughputs, values, Runs, Sample, Versus};
use crate::scenario::{self, Scenario, Stage};
use crate::settings::{self, Effective, Expected, LibSettings};
use crate::stats;
use crate::text::{self, csv_field, csv_num, finite, Table};
use crate::workload::Hogs;
use crate::{child, handshake, svg, Failure};

/// Run the contention benchmark grid
#[derive(Args, Debug, Clone)]
#[command(long_about = "Run the contention benchmark grid.\n\n\
    T threads share one pthread mutex; each iteration locks it, runs L `pause` instructions, \
    increments a shared counter, unlocks, then runs L pauses outside. Each run lasts a fixed \
    time, in a child process with libspinmutex.so preloaded (or without it, for `none`). For \
    every cell (threads × load) and arm it reports the median throughput, its stddev in % of \
    the mean, the ratio to glibc and to none (with a 95% interval and Welch's test), CPU µs \
    per 1000 acquisitions, fairness (fewest per-thread acquisitions ÷ mean), the p50, p99 and \
    longest acquisition wait (sampled on every 64th acquisition) and the physical bound \
    1 / (load × measured pause time). Every run must prove that the library loaded with the \
    settings asked for. A run whose shared counter does not add up (a lost update) or that \
    fails otherwise is reported, left out, and makes the exit status 1.\n\n\
    Layouts: `alone` puts the mutex on a cache line of its own; `shared` puts it on one line \
    with the counter it protects, as a struct holding a lock and its data does. The \
    lock-free control runs the same threads and pauses without the lock; each arm's \
    fairness is also given as a fraction of the control's, which is what the scheduler \
    alone allows.\n\n\
    Scenarios (4 threads and 16 threads, load 10, 7 runs of 2 s unless --runs and \
    --duration-ms say otherwise): `idle-owner`, thread 0 at SCHED_IDLE on a CPU a busy \
    process keeps occupied, so the lock's owner is often not running; `cpu-quota`, the \
    workload in a cgroup limited to half a CPU (or pinned to one CPU where no cgroup can \
    be made).")]
pub struct BenchArgs {
    /// A small grid: threads 1,2,8; loads 0,10,100; 3 runs; 200 ms (options given
    /// explicitly still win)
    #[arg(long)]
    pub quick: bool,

    /// Thread counts [default: 1,2,4,16,64,256]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub threads: Vec<u64>,

    /// Pauses per critical section [default: 0,1,10,50,100]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub loads: Vec<u64>,

    /// Where the mutex lies: alone (on a cache line of its own) or shared (on one line
    /// with the counter it protects) [default: alone,shared]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_enum)]
    pub layout: Vec<Layout>,

    /// Arms: none (no library), glibc, glibc-adaptive (glibc with a
    /// PTHREAD_MUTEX_ADAPTIVE_NP mutex), futex, spin, kernel [default:
    /// none,glibc,glibc-adaptive,futex,spin,kernel]
    #[arg(short = 's', long, value_name = "LIST", value_delimiter = ',', value_parser = parse_bench_arm)]
    pub strategies: Vec<Arm>,

    /// Do not add the `none` arm that otherwise runs whenever glibc is benchmarked
    #[arg(long)]
    pub without_none: bool,

    /// Do not run the lock-free control that fairness is measured against
    #[arg(long)]
    pub without_control: bool,

    /// Named scenarios to run after the grid: idle-owner, cpu-quota, or none
    /// [default: idle-owner,cpu-quota; none with --quick]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_scenario)]
    pub scenarios: Vec<Option<Scenario>>,

    /// Run only the scenarios, not the grid
    #[arg(long)]
    pub no_grid: bool,

    /// Runs per arm per cell [default: 5, 3 with --quick; 7 for scenarios]
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub runs: Option<u64>,

    /// Length of each run [default: 300, 200 with --quick, and at least 8 ms per thread
    /// per CPU so that every thread gets several scheduler slices; 2000 for scenarios]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub duration_ms: Option<u64>,

    /// Run N busy-looping processes beside the benchmark
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=4096))]
    pub hogs: u64,

    /// Every run as CSV
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Every run and every cell's summary as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Throughput against threads, one panel per load, as SVG
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// The reader-writer grid instead: T threads share one pthread rwlock and take it
    /// for writing in a fraction W of their acquisitions (--writes), else for reading
    #[arg(long)]
    pub rwlock: bool,

    /// With --rwlock: percentages of write acquisitions, 0 to 100 [default: 0,1,10,50]
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "rwlock", value_parser = parse_write_pct)]
    pub writes: Vec<f64>,

    /// With --rwlock: the rwlock's kind [default: reader]
    #[arg(long, value_name = "KIND", requires = "rwlock", value_parser = ["reader", "writer", "writer-nonrecursive"])]
    pub kind: Option<String>,

    #[command(flatten)]
    pub settings: LibSettings,
}

/// `--scenarios`' value parser: a scenario, or `none` (None).
fn parse_scenario(text: &str) -> Result<Option<Scenario>, String> {
    match text {
        "none" => Ok(None),
        _ => {
            Scenario::from_name(text).map(Some).ok_or_else(|| "accepted: idle-owner, cpu-quota, none".into())
        }
    }
}

/// Where the workload's mutex lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// On a cache line of its own, the counter on another.
    Alone,
    /// On one cache line with the counter it protects.
    Shared,
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Layout::Alone => "alone",
            Layout::Shared => "shared",
        })
    }
}

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

/// A percentage of writes: 0 to 100, in steps of 0.1 (the workload counts per mille).
fn parse_write_pct(text: &str) -> Result<f64, String> {
    let v: f64 = text.parse().map_err(|_| format!("'{text}' is not a percentage"))?;
    let permille = v * 10.0;
    if !(0.0..=1000.0).contains(&permille) || (permille - permille.round()).abs() > 1e-9 {
        return Err(format!("'{text}': a percentage from 0 to 100 in steps of 0.1"));
    }
    Ok(v)
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
    if a.rwlock {
        return crate::bench_rwlock::main(a);
    }
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
    let mut records = Vec::new();
    let mut effective: BTreeMap<String, Option<Effective>> = BTreeMap::new();
    let mut scenario_setup: BTreeMap<String, String> = BTreeMap::new();
    let mut progress = Progress::new(total);
    let mut stage: Option<(Scenario, Stage)> = None;
    'cells: for (index, cell) in c.cells.iter().enumerate() {
        if let Some(s) = cell.scenario {
            if stage.as_ref().map(|(had, _)| *had) != Some(s) {
                drop(stage.take()); // the previous scenario's hog or cgroup goes first
                let set = Stage::set_up(s).map_err(|e| Failure::Runtime(format!("scenario {s}: {e}")))?;
                scenario_setup.insert(s.to_string(), set.note.clone());
                eprintln!("spinmutex bench: scenario {s}: {}", set.note);
                stage = Some((s, set));
            }
        }
        let runs = c.runs_of(cell);
        for run in 1..=runs {
            for arm in &run_arms {
                let staged = stage.as_ref().filter(|(s, _)| Some(*s) == cell.scenario).map(|(_, st)| st);
                let Some((rec, loads)) = run_once(&exe, &lib, &env, (index, cell), staged, *arm, run)? else {
                    break 'cells;
                };
                if arm.strategy().is_some() {
                    effective.entry(arm.to_string()).or_insert_with(|| loads.last().cloned());
                } else if *arm == Arm::None {
                    effective.entry(arm.to_string()).or_insert(None);
                }
                let head = format!("{} {arm:<14} run {run}/{runs}", cell.label());
                match (&rec.sample, &rec.error) {
                    (Some(s), None) => progress.step(
                        &format!(
                            "{head}: {:>10.1} kops/s, fairness {:.2}",
                            s.ops_per_s() / 1e3,
                            s.fairness_of("ops")
                        ),
                        false,
                    ),
                    (_, e) => {
                        progress.step(&format!("{head}: FAILED: {}", e.as_deref().unwrap_or("?")), true)
                    }
                }
                records.push(rec);
            }
        }
    }
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
    print!("{}", render_tables(&c, &summaries, &machine, &effective, &scenario_setup, &lib));
    let failed: Vec<String> = records
        .iter()
        .filter_map(|r| {
            let e = r.error.as_deref()?;
            Some(format!("{} {} run {}: {e}", c.cells[r.cell].label(), r.strategy, r.run))
        })
        .collect();
    print_warnings_and_failures(&warnings, &failed);
    if let Some(p) = &a.csv {
        write(p, to_csv(&c, &records))?;
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
        write(p, serde_json::to_string_pretty(&report).expect("the report serialises") + "\n")?;
    }
    if let Some(p) = &a.svg {
        write(p, to_svg(&c, &machine, &summaries, &records))?;
    }
    Ok(exit_status(interrupted, failed.is_empty()))
}

/// A grid's exit status: 128 + the signal that interrupted it, else 1 when a run
/// failed, else 0.
pub(crate) fn exit_status(interrupted: Option<i32>, all_ok: bool) -> u8 {
    match interrupted {
        Some(sig) => child::interrupted_status(sig),
        None => u8::from(!all_ok),
    }
}

/// What closes a grid's text report: the warnings, and the runs that failed (one line
/// each), which the statistics leave out.
pub(crate) fn print_warnings_and_failures(warnings: &[String], failed: &[String]) {
    if !warnings.is_empty() {
        println!("\nwarnings:");
        for w in warnings {
            println!("  {w}");
        }
    }
    if !failed.is_empty() {
        println!("\n{} failed run(s), left out of the statistics:", failed.len());
        for f in failed {
            println!("  {f}");
        }
    }
}

/// Writes one of the files a grid was asked for (--csv, --json, --svg), and says so.
pub(crate) fn write(path: &Path, text: String) -> Result<(), Failure> {
    std::fs::write(path, text)
        .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
    eprintln!("spinmutex bench: wrote {}", path.display());
    Ok(())
}

/// One run of the workload; stops the benchmark (Err) when the library did not load as
/// asked, since every later run would measure the wrong thing too. None when the
/// command was interrupted: the run is not finished.
fn run_once(
    exe: &Path,
    lib: &Path,
    env: &[(String, String)],
    (index, cell): (usize, &Cell),
    stage: Option<&Stage>,
    arm: Arm,
    run: u64,
) -> Result<Option<(RunRecord, Vec<Effective>)>, Failure> {
    let mut cmd = Command::new(exe);
    cmd.arg("__workload")
        .args(["--threads", &cell.threads.to_string(), "--load", &cell.load.to_string()])
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
        stage.apply(&mut cmd);
    }
    library::apply(arm, &mut cmd, lib, env);
    let mut rec = RunRecord {
        cell: index,
        strategy: arm.to_string(),
        run,
        wall_s: f64::NAN,
        sample: None,
        error: None,
    };
    let done = match child::run(&mut cmd, child::Output::Keep) {
        _ if child::interrupted().is_some() => return Ok(None),
        Err(e) => {
            rec.error = Some(format!("cannot start the workload: {e}"));
            return Ok(Some((rec, Vec::new())));
        }
        Ok(done) => done,
    };
    check_loads(arm, exe, env, &done)?;
    rec.wall_s = done.wall.as_secs_f64();
    let stdout = String::from_utf8_lossy(&done.stdout);
    let parsed = Sample::parse(&stdout, REQUIRED_KEYS, &[]);
    if !done.termination.success() {
        rec.error = Some(failure_message(&done));
        rec.sample = parsed.ok();
    } else {
        match parsed {
            Ok(s) if s.get("counter_ok") != 1.0 => {
                rec.error = Some("LOST UPDATE: the shared counter does not add up".into());
                rec.sample = Some(s);
            }
            Ok(s) => rec.sample = Some(s),
            Err(e) => rec.error = Some(e),
        }
    }
    Ok(Some((rec, done.loads)))
}

/// Stops the benchmark (Err) when the library did not load in a run of `arm` as asked:
/// every later run would measure the wrong thing too.
pub(crate) fn check_loads(
    arm: Arm,
    exe: &Path,
    env: &[(String, String)],
    done: &child::Finished,
) -> Result<(), Failure> {
    match arm.strategy() {
        None if !done.loads.is_empty() => {
            return Err(Failure::Runtime(format!(
                "the `{arm}` arm loaded libspinmutex.so anyway (in {}): it comes from somewhere else than \
                 LD_PRELOAD (/etc/ld.so.preload?)",
                done.loads[0].exe
            )))
        }
        None => {}
        Some(_) if done.loads.is_empty() => {
            return Err(Failure::Runtime(handshake::not_loaded(&exe.display().to_string())))
        }
        Some(strategy) => {
            let expected = Expected::new(strategy, env);
            for e in &done.loads {
                let wrong = expected.mismatches(e);
                if !wrong.is_empty() {
                    return Err(Failure::Runtime(format!(
                        "arm {arm}: the library does not run the settings asked for: {}",
                        wrong.join("; ")
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Why a workload run failed: how it ended and the last line it wrote on stderr.
pub(crate) fn failure_message(done: &child::Finished) -> String {
    let err = String::from_utf8_lossy(&done.stderr);
    let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut msg = done.termination.describe();
    if matches!(done.termination, child::Termination::Signaled { signo: libc::SIGALRM, .. }) {
        msg.push_str(" (the workload's timeout: a hang?)");
    }
    if !last.is_empty() {
        msg = format!("{msg}: {last}");
    }
    msg
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
            });
        }
    }
    out
}

fn find<'a>(sums: &'a [CellSummary], cell: &Cell, s: &str) -> Option<&'a CellSummary> {
    sums.iter().find(|c| c.cell == *cell && c.strategy == s)
}

pub(crate) fn kops(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.0}", v / 1e3))
}

pub(crate) fn ns(v: Option<f64>) -> String {
    text::duration_ns(v.unwrap_or(f64::NAN), true)
}

/// A change against a baseline, with `*` when Welch's test says significant.
pub(crate) fn change_cell(ratio: Option<f64>, significant: Option<bool>) -> String {
    let mark = if significant == Some(true) { "*" } else { "" };
    format!("{}{mark}", text::change(ratio.unwrap_or(f64::NAN)))
}

fn render_tables(
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
    let pauses: Vec<f64> = sums.iter().filter_map(|c| c.pause_ns).collect();
    if !pauses.is_empty() {
        let _ = writeln!(out, "\npause: {:.1} ns (median of the cells' medians)", stats::median(&pauses));
    }
    out
}

/// The throughput table of one group of cells: a row per cell, columns per arm.
fn throughput_table(c: &Config, sums: &[CellSummary], cells: &[&Cell]) -> String {
    let rows = cells.iter().map(|cell| {
        let keys = vec![cell.threads.to_string(), cell.load.to_string()];
        (keys, c.strategies.iter().map(|s| find(sums, cell, s).map(CellSummary::figures)).collect())
    });
    arm_columns_table(&["threads", "load"], &c.strategies, &c.reference, rows)
}

/// What a throughput table shows of one arm in one cell (both grids' summaries give it).
pub(crate) struct ArmFigures<'a> {
    pub median: Option<f64>,
    pub stddev_pct: Option<f64>,
    pub versus: &'a Versus,
    pub bound: Option<f64>,
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

/// A throughput table: per row the cell's `keys`, then per arm (in `strategies`' order)
/// its kops/s, sd% and change against `reference` (for the reference itself: against
/// none, when none ran), then the cell's bound.
pub(crate) fn arm_columns_table<'a>(
    keys: &[&str],
    strategies: &[String],
    reference: &str,
    rows: impl IntoIterator<Item = (Vec<String>, Vec<Option<ArmFigures<'a>>>)>,
) -> String {
    let has_none = strategies.iter().any(|s| s == "none");
    let mut t = Table::new(0);
    let mut h1 = vec![String::new(); keys.len()];
    let mut h2: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    for s in strategies {
        h1.extend([s.clone(), String::new()]);
        h2.extend(["kops/s".to_string(), "sd%".to_string()]);
        if s != reference && s != "none" {
            h1.push(String::new());
            h2.push(format!("vs {reference}"));
        }
        if s == reference && has_none {
            h1.push(String::new());
            h2.push("vs none".into());
        }
    }
    h1.push(String::new());
    h2.push("bound".into());
    t.header = vec![h1, h2];
    for (mut row, arms) in rows {
        let mut bound = None;
        for (s, sum) in strategies.iter().zip(arms) {
            row.push(kops(sum.as_ref().and_then(|c| c.median)));
            row.push(text::pct(sum.as_ref().and_then(|c| c.stddev_pct).unwrap_or(f64::NAN)));
            if s != reference && s != "none" {
                row.push(
                    sum.as_ref().map_or("-".into(), |c| {
                        change_cell(c.versus.ratio_to_reference, c.versus.significant)
                    }),
                );
            }
            if s == reference && has_none {
                row.push(sum.as_ref().map_or("-".into(), |c| {
                    change_cell(c.versus.ratio_to_none, c.versus.significant_to_none)
                }));
            }
            bound = bound.or(sum.and_then(|c| c.bound));
        }
        row.push(kops(bound));
        t.rows.push(row);
    }
    t.render()
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
];

/// The physical bound of a cell: the critical section is serial, so at most
/// 1 / (load × pause time) acquisitions per second; infinite for load 0.
fn bound(load: u64, pause_ns: f64) -> f64 {
    if load > 0 && pause_ns > 0.0 {
        1e9 / (load as f64 * pause_ns)
    } else {
        f64::INFINITY
    }
}

fn bound_of(load: u64, s: &Sample) -> f64 {
    bound(load, s.get("pause_ns"))
}

/// A value of a run's CSV row or JSON object, derived ones included.
fn value(load: u64, s: &Sample, key: &str) -> f64 {
    match key {
        "cpu_us_per_1k_acq" => s.cpu_us_per_1k(),
        "fairness" => s.fairness_of("ops"),
        "bound_ops_per_s" => bound_of(load, s),
        k => s.get(k),
    }
}

fn to_csv(c: &Config, records: &[RunRecord]) -> String {
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

fn run_json(c: &Config, r: &RunRecord) -> RunJson {
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
fn to_svg(c: &Config, m: &Machine, sums: &[CellSummary], records: &[RunRecord]) -> String {
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

#[cfg(test)]
mod tests {
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
        assert_eq!(c.scenarios, [Scenario::IdleOwner, Scenario::CpuQuota]);
        assert_eq!(c.strategies, ["none", "glibc", "glibc-adaptive", "futex", "spin", "kernel"]);
        assert_eq!((c.runs, c.duration_ms, c.hogs, c.reference.as_str()), (5, 300, 0, "glibc"));
        assert!(c.control);
        assert_eq!(c.cells.len(), 2 * 6 * 5 + 2);
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
}
