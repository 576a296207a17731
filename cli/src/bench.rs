//! `spinmutex bench`: the contention benchmark grid.
//!
//! Every run is a child process, `spinmutex __workload ...`, with the library preloaded
//! under one strategy (see bench/contention.c), or without it for `none`. Within a cell
//! (threads × load) the arms are interleaved: for each run, every arm once.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;
use serde::{Deserialize, Serialize};
use spinmutex_names::Strategy;

use crate::library::{self, parse_bench_arm, Arm};
use crate::machine::Machine;
use crate::progress::Progress;
use crate::settings::{self, Effective, Expected, LibSettings};
use crate::stats::{self, Comparison};
use crate::text::{self, csv_field, csv_num, finite, Table};
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
    fails otherwise is reported, left out, and makes the exit status 1.")]
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

    /// Arms: none (no library), glibc, glibc-adaptive (glibc with a
    /// PTHREAD_MUTEX_ADAPTIVE_NP mutex), futex, spin [default:
    /// none,glibc,glibc-adaptive,futex,spin]
    #[arg(short = 's', long, value_name = "LIST", value_delimiter = ',', value_parser = parse_bench_arm)]
    pub strategies: Vec<Arm>,

    /// Do not add the `none` arm that otherwise runs whenever glibc is benchmarked
    #[arg(long)]
    pub without_none: bool,

    /// Runs per arm per cell [default: 5, 3 with --quick]
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub runs: Option<u64>,

    /// Length of each run [default: 300, 200 with --quick]
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

    #[command(flatten)]
    pub settings: LibSettings,
}

/// The grid as run: the options with their defaults filled in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    pub threads: Vec<u64>,
    pub loads: Vec<u64>,
    /// The arms, `none` included.
    pub strategies: Vec<String>,
    /// The arm ratios are taken against: glibc if benchmarked, else the first.
    pub reference: String,
    pub runs: u64,
    pub duration_ms: u64,
    pub hogs: u64,
    pub env: BTreeMap<String, String>,
}

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
    pub runs: Vec<RunJson>,
    pub cells: Vec<CellSummary>,
}

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunJson {
    pub threads: u64,
    pub load: u64,
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
    pub threads: u64,
    pub load: u64,
    pub strategy: String,
    pub runs_ok: usize,
    pub runs: usize,
    pub median_ops_per_s: Option<f64>,
    pub stddev_pct: Option<f64>,
    /// Median throughput ÷ the reference's.
    pub ratio_to_reference: Option<f64>,
    /// 95% interval of the ratio of mean throughputs to the reference (Fieller).
    pub ratio_ci95: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
    /// Median throughput ÷ none's: what the arm gains or costs against no library.
    pub ratio_to_none: Option<f64>,
    pub ratio_to_none_ci95: Option<[f64; 2]>,
    pub significant_to_none: Option<bool>,
    pub cpu_us_per_1k_acq: Option<f64>,
    pub fairness: Option<f64>,
    pub wait_p50_ns: Option<f64>,
    pub wait_p99_ns: Option<f64>,
    pub wait_max_ns: Option<f64>,
    pub pause_ns: Option<f64>,
    /// 1 / (load × pause time); null for load 0.
    pub bound_ops_per_s: Option<f64>,
}

/// What one workload run printed (the keys of its output line).
#[derive(Debug, Clone, Default)]
struct Sample {
    values: BTreeMap<String, f64>,
}

impl Sample {
    fn get(&self, k: &str) -> f64 {
        self.values.get(k).copied().unwrap_or(f64::NAN)
    }
    fn ops_per_s(&self) -> f64 {
        self.get("ops_per_s")
    }
    /// CPU µs per 1000 acquisitions.
    fn cpu_us_per_1k(&self) -> f64 {
        self.get("cpu_s") * 1e9 / self.get("ops")
    }
    fn fairness(&self) -> f64 {
        let mean = self.get("mean_thread_ops");
        if mean > 0.0 {
            self.get("min_thread_ops") / mean
        } else {
            f64::NAN
        }
    }
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

/// Parses the workload's `key=value ...` line (the last non-empty line of stdout).
fn parse_output(stdout: &str) -> Result<Sample, String> {
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty()).ok_or("the workload printed nothing")?;
    let mut values = BTreeMap::new();
    for pair in line.split_whitespace() {
        let (k, v) = pair.split_once('=').ok_or_else(|| format!("unexpected workload output '{pair}'"))?;
        let v: f64 = v.parse().map_err(|_| format!("unexpected workload value {k}={v}"))?;
        values.insert(k.to_string(), v);
    }
    for k in REQUIRED_KEYS {
        if !values.contains_key(*k) {
            return Err(format!("the workload's output lacks {k}"));
        }
    }
    Ok(Sample { values })
}

#[derive(Debug, Clone)]
struct RunRecord {
    threads: u64,
    load: u64,
    strategy: String,
    run: u64,
    wall_s: f64,
    sample: Option<Sample>,
    error: Option<String>,
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The busy-looping processes of `--hogs`, killed when dropped.
struct Hogs(Vec<Child>);

impl Hogs {
    fn start(n: u64) -> Result<Hogs, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this command's path: {e}"))?;
        let mut hogs = Hogs(Vec::new());
        for _ in 0..n {
            let c = Command::new(&exe)
                .arg("__hog")
                .arg(std::process::id().to_string())
                .env_remove("LD_PRELOAD")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start a hog: {e}"))?;
            hogs.0.push(c);
        }
        Ok(hogs)
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The grid with defaults filled in, and the arms.
fn config(a: &BenchArgs) -> Result<(Config, Vec<Arm>), Failure> {
    let (dt, dl, dr, dd): (&[u64], &[u64], u64, u64) = if a.quick {
        (&[1, 2, 8], &[0, 10, 100], 3, 200)
    } else {
        (&[1, 2, 4, 16, 64, 256], &[0, 1, 10, 50, 100], 5, 300)
    };
    let unique = |what: &str, xs: &[u64]| -> Result<(), Failure> {
        for (i, x) in xs.iter().enumerate() {
            if xs[..i].contains(x) {
                return Err(Failure::Usage("bench", format!("--{what}: {x} is listed twice")));
            }
        }
        Ok(())
    };
    unique("threads", &a.threads)?;
    unique("loads", &a.loads)?;
    let mut arms: Vec<Arm> = Vec::new();
    for arm in &a.strategies {
        if arms.contains(arm) {
            return Err(Failure::Usage("bench", format!("--strategies: '{arm}' is listed twice")));
        }
        arms.push(*arm);
    }
    if arms.is_empty() {
        arms = vec![
            Arm::Strategy(Strategy::Glibc),
            Arm::GlibcAdaptive,
            Arm::Strategy(Strategy::Futex),
            Arm::Strategy(Strategy::Spin),
        ];
    }
    if !a.without_none {
        library::with_none_baseline(&mut arms);
    }
    let names: Vec<String> = arms.iter().map(Arm::to_string).collect();
    let reference = names.iter().find(|s| *s == "glibc").unwrap_or(&names[0]).clone();
    let pick =
        |given: &[u64], default: &[u64]| if given.is_empty() { default.to_vec() } else { given.to_vec() };
    Ok((
        Config {
            threads: pick(&a.threads, dt),
            loads: pick(&a.loads, dl),
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

pub fn main(a: BenchArgs) -> Result<u8, Failure> {
    let (c, arms) = config(&a)?;
    let env = a.settings.env();
    settings::check_inherited(&env, true).map_err(|m| Failure::Usage("bench", m))?;
    let lib = if arms.iter().any(|arm| arm.strategy().is_some()) {
        library::find().map_err(Failure::Runtime)?
    } else {
        PathBuf::new()
    };
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Runtime(format!("cannot find this command's path: {e}")))?;

    // SAFETY: the handler only stores to an atomic.
    unsafe {
        let h = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, h);
        libc::signal(libc::SIGTERM, h);
        libc::signal(libc::SIGHUP, h);
    }

    let machine = Machine::probe();
    let mut warnings: Vec<String> = machine.busy_warning().into_iter().collect();
    let total = c.threads.len() * c.loads.len() * arms.len() * c.runs as usize;
    let estimate = total as f64 * (c.duration_ms as f64 / 1000.0 + 0.05);
    eprintln!(
        "spinmutex bench: {} cells × {} arms × {} runs of {} ms = {} runs, about {:.0} s; {} CPUs ({}){}",
        c.threads.len() * c.loads.len(),
        arms.len(),
        c.runs,
        c.duration_ms,
        total,
        estimate,
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

    let hogs = Hogs::start(c.hogs).map_err(Failure::Runtime)?;
    let mut records = Vec::new();
    let mut effective: BTreeMap<String, Option<Effective>> = BTreeMap::new();
    let mut progress = Progress::new(total as u64);
    'grid: for &threads in &c.threads {
        for &load in &c.loads {
            for run in 1..=c.runs {
                for arm in &arms {
                    if INTERRUPTED.load(Ordering::SeqCst) {
                        break 'grid;
                    }
                    let (rec, loads) = run_once(&exe, &lib, &c, &env, threads, load, *arm, run)?;
                    effective.entry(arm.to_string()).or_insert_with(|| loads.last().cloned());
                    let head = format!("threads {threads:>3} load {load:>3} {arm:<14} run {run}/{}", c.runs);
                    match (&rec.sample, &rec.error) {
                        (Some(s), None) => progress.step(
                            &format!(
                                "{head}: {:>10.1} kops/s, fairness {:.2}",
                                s.ops_per_s() / 1e3,
                                s.fairness()
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
    }
    drop(progress);
    drop(hogs);
    let interrupted = INTERRUPTED.load(Ordering::SeqCst);
    if interrupted {
        eprintln!("spinmutex bench: interrupted; reporting the {} runs done", records.len());
    }

    let summaries = summarise(&c, &records);
    for s in &summaries {
        if let Some(cv) = s.stddev_pct.filter(|cv| *cv > 10.0) {
            warnings.push(format!(
                "threads {} load {} {}: throughput varies by {cv:.1}% (stddev in % of the mean, over 10%)",
                s.threads, s.load, s.strategy
            ));
        }
    }
    print!("{}", render_tables(&c, &summaries, &machine, &effective, &lib));
    if !warnings.is_empty() {
        println!("\nwarnings:");
        for w in &warnings {
            println!("  {w}");
        }
    }
    let failed: Vec<&RunRecord> = records.iter().filter(|r| r.error.is_some()).collect();
    if !failed.is_empty() {
        println!("\n{} failed run(s), left out of the statistics:", failed.len());
        for r in &failed {
            println!(
                "  threads {} load {} {} run {}: {}",
                r.threads,
                r.load,
                r.strategy,
                r.run,
                r.error.as_deref().unwrap_or("")
            );
        }
    }
    let write = |path: &Path, text: String| {
        std::fs::write(path, text)
            .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("spinmutex bench: wrote {}", path.display());
        Ok::<(), Failure>(())
    };
    if let Some(p) = &a.csv {
        write(p, to_csv(&records))?;
    }
    if let Some(p) = &a.json {
        let report = BenchReport {
            tool: "spinmutex bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            machine: machine.clone(),
            config: c.clone(),
            warnings,
            effective,
            runs: records.iter().map(run_json).collect(),
            cells: summaries.clone(),
        };
        write(p, serde_json::to_string_pretty(&report).expect("the report serialises") + "\n")?;
    }
    if let Some(p) = &a.svg {
        write(p, to_svg(&c, &machine, &summaries, &records))?;
    }
    Ok(if failed.is_empty() && !interrupted { 0 } else { 1 })
}

/// One run of the workload; stops the benchmark (Err) when the library did not load as
/// asked, since every later run would measure the wrong thing too.
#[allow(clippy::too_many_arguments)]
fn run_once(
    exe: &Path,
    lib: &Path,
    c: &Config,
    env: &[(String, String)],
    threads: u64,
    load: u64,
    arm: Arm,
    run: u64,
) -> Result<(RunRecord, Vec<Effective>), Failure> {
    let mut cmd = Command::new(exe);
    cmd.arg("__workload")
        .args(["--threads", &threads.to_string(), "--load", &load.to_string()])
        .args(["--duration-ms", &c.duration_ms.to_string()]);
    if arm == Arm::GlibcAdaptive {
        cmd.arg("--adaptive");
    }
    library::apply(arm, &mut cmd, lib, env);
    let mut rec = RunRecord {
        threads,
        load,
        strategy: arm.to_string(),
        run,
        wall_s: f64::NAN,
        sample: None,
        error: None,
    };
    let done = match child::run(&mut cmd, true, false) {
        Err(e) => {
            rec.error = Some(format!("cannot start the workload: {e}"));
            return Ok((rec, Vec::new()));
        }
        Ok(done) => done,
    };
    match arm.strategy() {
        None if !done.loads.is_empty() => {
            return Err(Failure::Runtime(format!(
                "the `none` arm loaded libspinmutex.so anyway (in {}): it comes from somewhere else than \
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
    rec.wall_s = done.wall.as_secs_f64();
    let stdout = String::from_utf8_lossy(&done.stdout);
    let parsed = parse_output(&stdout);
    if !done.termination.success() {
        let err = String::from_utf8_lossy(&done.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        let mut msg = done.termination.describe();
        if matches!(done.termination, child::Termination::Signaled { signo: libc::SIGALRM, .. }) {
            msg.push_str(" (the workload's timeout: a hang?)");
        }
        if !last.is_empty() {
            msg = format!("{msg}: {last}");
        }
        rec.error = Some(msg);
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
    Ok((rec, done.loads))
}

fn summarise(c: &Config, records: &[RunRecord]) -> Vec<CellSummary> {
    let good = |t: u64, l: u64, s: &str| -> Vec<&Sample> {
        records
            .iter()
            .filter(|r| r.threads == t && r.load == l && r.strategy == s && r.error.is_none())
            .filter_map(|r| r.sample.as_ref())
            .collect()
    };
    let med = |xs: &[&Sample], f: &dyn Fn(&Sample) -> f64| -> f64 {
        let v: Vec<f64> = xs.iter().map(|s| f(s)).filter(|v| v.is_finite()).collect();
        stats::median(&v)
    };
    let ops = |xs: &[&Sample]| -> Vec<f64> { xs.iter().map(|s| s.ops_per_s()).collect() };
    let mut out = Vec::new();
    for &t in &c.threads {
        for &l in &c.loads {
            let ref_ops = ops(&good(t, l, &c.reference));
            let none_ops = ops(&good(t, l, "none"));
            let cell_all: Vec<&Sample> = c.strategies.iter().flat_map(|s| good(t, l, s)).collect();
            let pause = med(&cell_all, &|s| s.get("pause_ns"));
            let bound = bound(l, pause);
            for s in &c.strategies {
                let samples = good(t, l, s);
                let attempted =
                    records.iter().filter(|r| r.threads == t && r.load == l && r.strategy == *s).count();
                if attempted == 0 {
                    continue;
                }
                let xs = ops(&samples);
                let median_ops = stats::median(&xs);
                let against = |base: &[f64], is_base: bool| -> (Option<f64>, Option<Comparison>) {
                    if is_base {
                        return (None, None);
                    }
                    (finite(median_ops / stats::median(base)), stats::compare(base, &xs))
                };
                let (ratio, cmp) = against(&ref_ops, *s == c.reference);
                let (ratio_none, cmp_none) = against(&none_ops, s == "none" || none_ops.is_empty());
                out.push(CellSummary {
                    threads: t,
                    load: l,
                    strategy: s.clone(),
                    runs_ok: samples.len(),
                    runs: attempted,
                    median_ops_per_s: finite(median_ops),
                    stddev_pct: finite(stats::stddev_pct(&xs)),
                    ratio_to_reference: ratio,
                    ratio_ci95: cmp.as_ref().and_then(|c| c.ratio_ci).map(|(a, b)| [a, b]),
                    p_value: cmp.as_ref().and_then(|c| finite(c.p)),
                    significant: cmp.as_ref().map(Comparison::significant),
                    ratio_to_none: ratio_none,
                    ratio_to_none_ci95: cmp_none.as_ref().and_then(|c| c.ratio_ci).map(|(a, b)| [a, b]),
                    significant_to_none: cmp_none.as_ref().map(Comparison::significant),
                    cpu_us_per_1k_acq: finite(med(&samples, &|s| s.cpu_us_per_1k())),
                    fairness: finite(med(&samples, &|s| s.fairness())),
                    wait_p50_ns: finite(med(&samples, &|s| s.get("wait_p50_ns"))),
                    wait_p99_ns: finite(med(&samples, &|s| s.get("wait_p99_ns"))),
                    wait_max_ns: finite(med(&samples, &|s| s.get("wait_max_ns"))),
                    pause_ns: finite(pause),
                    bound_ops_per_s: finite(bound),
                });
            }
        }
    }
    out
}

fn find<'a>(sums: &'a [CellSummary], t: u64, l: u64, s: &str) -> Option<&'a CellSummary> {
    sums.iter().find(|c| c.threads == t && c.load == l && c.strategy == s)
}

fn kops(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.0}", v / 1e3))
}

fn ns(v: Option<f64>) -> String {
    text::duration_ns(v.unwrap_or(f64::NAN), true)
}

/// A change against a baseline, with `*` when Welch's test says significant.
fn change_cell(ratio: Option<f64>, significant: Option<bool>) -> String {
    let mark = if significant == Some(true) { "*" } else { "" };
    format!("{}{mark}", text::change(ratio.unwrap_or(f64::NAN)))
}

fn render_tables(
    c: &Config,
    sums: &[CellSummary],
    m: &Machine,
    effective: &BTreeMap<String, Option<Effective>>,
    lib: &Path,
) -> String {
    let refname = &c.reference;
    let has_none = c.strategies.iter().any(|s| s == "none");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nspinmutex bench: {} run(s) of {} ms per arm per cell, interleaved; {} CPUs ({}); {} hog(s)",
        c.runs, c.duration_ms, m.nproc, m.cpu_model, c.hogs
    );
    let _ = writeln!(out, "arms (the settings each reported when it loaded):");
    let width = c.strategies.iter().map(String::len).max().unwrap_or(0);
    for s in &c.strategies {
        let what = match effective.get(s) {
            Some(Some(e)) => format!("{} {}: {}", lib.display(), e.version, e.describe()),
            _ if s == "none" => "no preload: glibc's mutex, without the library".into(),
            _ => "no run".into(),
        };
        let adaptive = if s == "glibc-adaptive" { " (a PTHREAD_MUTEX_ADAPTIVE_NP mutex)" } else { "" };
        let _ = writeln!(out, "  {s:width$}  {what}{adaptive}");
    }
    let _ = writeln!(
        out,
        "\nThroughput in kops/s (median), its stddev in % of the mean, and the change against {refname}{}\n\
         (* = significant, Welch's t-test p < 0.05). bound = 1 / (load × pause time), in kops/s.\n",
        if has_none { " (and, for glibc, against none: the preload's own cost)" } else { "" }
    );
    let mut t = Table::new(0);
    let mut h1 = vec![String::new(), String::new()];
    let mut h2 = vec!["threads".to_string(), "load".to_string()];
    for s in &c.strategies {
        h1.extend([s.clone(), String::new()]);
        h2.extend(["kops/s".to_string(), "sd%".to_string()]);
        if s != refname && s != "none" {
            h1.push(String::new());
            h2.push(format!("vs {refname}"));
        }
        if s == refname && has_none {
            h1.push(String::new());
            h2.push("vs none".into());
        }
    }
    h1.push(String::new());
    h2.push("bound".into());
    t.header = vec![h1, h2];
    for &th in &c.threads {
        for &l in &c.loads {
            let mut row = vec![th.to_string(), l.to_string()];
            let mut bound = None;
            for s in &c.strategies {
                let cell = find(sums, th, l, s);
                row.push(kops(cell.and_then(|c| c.median_ops_per_s)));
                row.push(text::pct(cell.and_then(|c| c.stddev_pct).unwrap_or(f64::NAN)));
                if s != refname && s != "none" {
                    row.push(cell.map_or("-".into(), |c| change_cell(c.ratio_to_reference, c.significant)));
                }
                if s == refname && has_none {
                    row.push(
                        cell.map_or("-".into(), |c| change_cell(c.ratio_to_none, c.significant_to_none)),
                    );
                }
                bound = bound.or(cell.and_then(|c| c.bound_ops_per_s));
            }
            row.push(kops(bound));
            t.rows.push(row);
        }
    }
    out.push_str(&t.render());

    let _ = writeln!(
        out,
        "\nPer arm (medians over runs): ratio of median throughput to {refname} and to none, each with the\n\
         95% interval of the ratio of means (Fieller; * = significant, Welch); CPU µs per 1000\n\
         acquisitions; fairness (fewest per-thread acquisitions ÷ mean); acquisition wait p50/p99/max\n\
         (sampled, so a thread starved of the lock shows in `fair`, not here).\n"
    );
    let mut t = Table::new(3);
    let mut header: Vec<String> =
        ["threads", "load", "strategy", "ok", "kops/s", "sd%", "ratio", "95% CI"].map(String::from).to_vec();
    if has_none {
        header.extend(["vs none", "95% CI"].map(String::from));
    }
    header.extend(["cpu µs/1k", "fair", "wait p50", "wait p99", "wait max", "bound"].map(String::from));
    t.header.push(header);
    let ci = |ci: Option<[f64; 2]>, sig: Option<bool>| match ci {
        Some([lo, hi]) => format!("{lo:.2}–{hi:.2}{}", if sig == Some(true) { " *" } else { "" }),
        None => "-".into(),
    };
    let ratio = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.3}"));
    for s in sums {
        let mut row = vec![
            s.threads.to_string(),
            s.load.to_string(),
            s.strategy.clone(),
            format!("{}/{}", s.runs_ok, s.runs),
            kops(s.median_ops_per_s),
            text::pct(s.stddev_pct.unwrap_or(f64::NAN)),
            ratio(s.ratio_to_reference),
            ci(s.ratio_ci95, s.significant),
        ];
        if has_none {
            row.push(ratio(s.ratio_to_none));
            row.push(ci(s.ratio_to_none_ci95, s.significant_to_none));
        }
        row.extend([
            text::fixed(s.cpu_us_per_1k_acq.unwrap_or(f64::NAN)),
            s.fairness.map_or("-".into(), |f| format!("{f:.2}")),
            ns(s.wait_p50_ns),
            ns(s.wait_p99_ns),
            ns(s.wait_max_ns),
            kops(s.bound_ops_per_s),
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

const CSV_COLUMNS: &[&str] = &[
    "threads",
    "load",
    "strategy",
    "run",
    "ok",
    "error",
    "wall_s",
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
fn value(r: &RunRecord, s: &Sample, key: &str) -> f64 {
    match key {
        "cpu_us_per_1k_acq" => s.cpu_us_per_1k(),
        "fairness" => s.fairness(),
        "bound_ops_per_s" => bound_of(r.load, s),
        k => s.get(k),
    }
}

fn to_csv(records: &[RunRecord]) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for r in records {
        let empty = Sample::default();
        let s = r.sample.as_ref().unwrap_or(&empty);
        let mut row = vec![
            r.threads.to_string(),
            r.load.to_string(),
            csv_field(&r.strategy),
            r.run.to_string(),
            (r.error.is_none() as u8).to_string(),
            csv_field(r.error.as_deref().unwrap_or("")),
            csv_num(r.wall_s),
        ];
        for col in &CSV_COLUMNS[row.len()..] {
            row.push(csv_num(value(r, s, col)));
        }
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

fn run_json(r: &RunRecord) -> RunJson {
    RunJson {
        threads: r.threads,
        load: r.load,
        strategy: r.strategy.clone(),
        run: r.run,
        ok: r.error.is_none(),
        error: r.error.clone(),
        wall_s: finite(r.wall_s),
        workload: r.sample.as_ref().map(|s| {
            let mut m: BTreeMap<String, Option<f64>> =
                s.values.iter().map(|(k, v)| (k.clone(), finite(*v))).collect();
            for k in ["cpu_us_per_1k_acq", "fairness", "bound_ops_per_s"] {
                m.insert(k.to_string(), finite(value(r, s, k)));
            }
            m
        }),
    }
}

fn to_svg(c: &Config, m: &Machine, sums: &[CellSummary], records: &[RunRecord]) -> String {
    // Each run's throughput, for the error bars.
    let runs = |t: u64, l: u64, s: &str| -> Vec<f64> {
        records
            .iter()
            .filter(|r| r.threads == t && r.load == l && r.strategy == s && r.error.is_none())
            .filter_map(|r| r.sample.as_ref().map(Sample::ops_per_s))
            .collect()
    };
    let panels = c
        .loads
        .iter()
        .map(|&l| {
            let series = c
                .strategies
                .iter()
                .map(|s| {
                    let points = c.threads.iter().filter_map(|&t| {
                        let cell = find(sums, t, l, s)?;
                        Some((t as f64, cell.median_ops_per_s.unwrap_or(f64::NAN), runs(t, l, s)))
                    });
                    svg::Series::with_intervals(s.clone(), points.collect())
                })
                .collect();
            let bound = sums.iter().find(|cell| cell.load == l).and_then(|cell| cell.bound_ops_per_s);
            svg::Panel { title: format!("load {l} pauses"), series, bound }
        })
        .collect();
    let mut sorted = c.threads.clone();
    sorted.sort_unstable();
    svg::Chart {
        title: "spinmutex bench: throughput against threads".into(),
        subtitle: format!(
            "points: median of {} runs of {} ms, bars: 95% interval of the mean; {} CPUs ({}); {} hog(s)",
            c.runs, c.duration_ms, m.nproc, m.cpu_model, c.hogs
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
        config(&a).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn defaults_and_quick() {
        let (c, _) = parse(&[]).unwrap();
        assert_eq!(c.threads, vec![1, 2, 4, 16, 64, 256]);
        assert_eq!(c.loads, vec![0, 1, 10, 50, 100]);
        assert_eq!(c.strategies, ["none", "glibc", "glibc-adaptive", "futex", "spin"]);
        assert_eq!((c.runs, c.duration_ms, c.hogs, c.reference.as_str()), (5, 300, 0, "glibc"));
        let (c, _) = parse(&["--threads", "1,2", "--quick", "--runs", "2"]).unwrap();
        assert_eq!(c.threads, vec![1, 2]);
        assert_eq!(c.loads, vec![0, 10, 100]);
        assert_eq!((c.runs, c.duration_ms), (2, 200));
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
        let s = parse_output(line).unwrap();
        assert_eq!(s.ops_per_s(), 5000.5);
        assert_eq!(s.fairness(), 0.8);
        // 0.5 s for a million acquisitions: 0.5 µs each, 500 µs per 1000.
        assert_eq!(s.cpu_us_per_1k(), 500.0);
        assert!((bound_of(10, &s) - 1e9 / 300.0).abs() < 1e-6);
        assert!(!bound_of(0, &s).is_finite());
        assert!(parse_output("").is_err());
        assert!(parse_output("ops=1").is_err());
        assert!(parse_output("ops=x").is_err());
    }
}
