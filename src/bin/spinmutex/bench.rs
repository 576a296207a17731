//! `spinmutex bench`: the contention benchmark grid.
//!
//! Every run is a child process, `spinmutex __workload ...`, with the library preloaded
//! under one strategy (see bench/contention.c). Within a cell (threads × load) the
//! strategies are interleaved: for each run, every strategy once.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::args::{self, Arg, Parser, UsageError};
use crate::child;
use crate::json::{self, obj, Json};
use crate::library::{self, Setup};
use crate::stats;
use crate::svg;
use crate::table::{self, Table};
use crate::workload;
use crate::Failure;

pub const HELP: &str = "\
spinmutex bench: the contention benchmark grid

Usage: spinmutex bench [OPTIONS]

T threads share one pthread mutex; each iteration locks it, runs L `pause`
instructions, increments a shared counter, unlocks, then runs L pauses outside. Each
run lasts a fixed time, in a child process with libspinmutex.so preloaded. For every
cell (threads × load) and strategy it reports the median throughput, its stddev in %
of the mean, the ratio to glibc (with a 95% interval and Welch's test), CPU µs per
1000 acquisitions, fairness (fewest per-thread acquisitions ÷ mean), the p50, p99
and longest acquisition wait (sampled on every 64th acquisition) and the physical bound
1 / (load × measured pause time). A run whose shared counter does not add up (a lost
update) or that fails otherwise is reported, left out, and makes the exit status 1.

Options:
  --quick              a small grid: threads 1,2,8; loads 0,10,100; 3 runs; 200 ms
                       (options given explicitly still win)
  --threads LIST       thread counts (default 1,2,4,16,64,256)
  --loads LIST         pauses per critical section (default 0,1,10,50,100)
  --strategies LIST    default glibc,glibc-adaptive,futex,spin. glibc-adaptive is
                       SPINMUTEX_STRATEGY=glibc with a PTHREAD_MUTEX_ADAPTIVE_NP mutex;
                       `none` runs without the library; other names go to
                       SPINMUTEX_STRATEGY. The first of glibc or, failing that, the
                       first listed is the reference for ratios.
  --runs N             runs per strategy per cell (default 5)
  --duration-ms MS     length of each run (default 300)
  --hogs N             run N busy-looping processes beside the benchmark
  --csv FILE           every run as CSV
  --json FILE          every run and every cell's summary as JSON
  --svg FILE           throughput against threads, one panel per load
  -h, --help           this help
";

#[derive(Debug, Clone)]
pub struct BenchArgs {
    pub threads: Vec<u64>,
    pub loads: Vec<u64>,
    pub strategies: Vec<String>,
    pub runs: u64,
    pub duration_ms: u64,
    pub hogs: u64,
    pub quick: bool,
    pub csv: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub env: Vec<(String, String)>,
}

pub fn parse(argv: &[String]) -> Result<Option<BenchArgs>, UsageError> {
    let mut p = Parser::new(argv);
    let (mut threads, mut loads, mut strategies, mut runs, mut duration) = (None, None, None, None, None);
    let mut a = BenchArgs {
        threads: Vec::new(),
        loads: Vec::new(),
        strategies: Vec::new(),
        runs: 0,
        duration_ms: 0,
        hogs: 0,
        quick: false,
        csv: None,
        json: None,
        svg: None,
        env: Vec::new(),
    };
    while let Some(arg) = p.next_arg()? {
        let o = match arg {
            Arg::Opt(o) => o,
            Arg::Positional(w) => return Err(UsageError::new(format!("unexpected argument '{w}'"))),
            Arg::Rest(_) => return Err(UsageError::new("bench takes no command after '--'")),
        };
        match o.as_str() {
            "-h" | "--help" => {
                print!("{HELP}\n{}", args::KNOBS_HELP);
                return Ok(None);
            }
            "--quick" => a.quick = true,
            "--threads" => threads = Some(args::parse_u64_list(&o, &p.value(&o)?, 1, 100_000)?),
            "--loads" => loads = Some(args::parse_u64_list(&o, &p.value(&o)?, 0, 10_000_000)?),
            "--strategies" | "-s" => strategies = Some(args::parse_name_list(&o, &p.value(&o)?)?),
            "--runs" | "-n" => runs = Some(args::parse_u64(&o, &p.value(&o)?, 1, 100_000)?),
            "--duration-ms" => duration = Some(args::parse_u64(&o, &p.value(&o)?, 1, 86_400_000)?),
            "--hogs" => a.hogs = args::parse_u64(&o, &p.value(&o)?, 0, 4096)?,
            "--csv" => a.csv = Some(PathBuf::from(p.value(&o)?)),
            "--json" => a.json = Some(PathBuf::from(p.value(&o)?)),
            "--svg" => a.svg = Some(PathBuf::from(p.value(&o)?)),
            _ => {
                if !args::knob(&o, &mut p, &mut a.env)? {
                    return Err(UsageError::new(format!("unknown option '{o}'")));
                }
            }
        }
    }
    let (dt, dl, dr, dd): (&[u64], &[u64], u64, u64) = if a.quick {
        (&[1, 2, 8], &[0, 10, 100], 3, 200)
    } else {
        (&[1, 2, 4, 16, 64, 256], &[0, 1, 10, 50, 100], 5, 300)
    };
    a.threads = threads.unwrap_or_else(|| dt.to_vec());
    a.loads = loads.unwrap_or_else(|| dl.to_vec());
    a.runs = runs.unwrap_or(dr);
    a.duration_ms = duration.unwrap_or(dd);
    a.strategies =
        strategies.unwrap_or_else(|| ["glibc", "glibc-adaptive", "futex", "spin"].map(String::from).to_vec());
    Ok(Some(a))
}

/// What one workload run printed (the keys of its output line), plus our wall time.
#[derive(Debug, Clone, Default)]
struct Sample {
    values: HashMap<String, f64>,
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
    let mut values = HashMap::new();
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

/// A cell's summary for one strategy.
#[derive(Debug, Clone)]
struct CellSummary {
    threads: u64,
    load: u64,
    strategy: String,
    n: usize,
    attempted: usize,
    median_ops: f64,
    stddev_pct: f64,
    ratio: f64,
    welch: Option<stats::Welch>,
    cpu_us_per_1k: f64,
    fairness: f64,
    wait_p50_ns: f64,
    wait_p99_ns: f64,
    wait_max_ns: f64,
    pause_ns: f64,
    bound: f64,
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

pub fn main(argv: &[String]) -> Result<u8, Failure> {
    let Some(a) = parse(argv)? else { return Ok(0) };
    if !workload::AVAILABLE {
        return Err(Failure::Runtime(
            "this build has no contention workload (bench/contention.c was missing)".into(),
        ));
    }
    let needs_lib = a.strategies.iter().any(|s| s != "none");
    let lib = if needs_lib { library::find().map_err(Failure::Runtime)? } else { PathBuf::new() };
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
    let total = a.threads.len() * a.loads.len() * a.strategies.len() * a.runs as usize;
    let estimate = total as f64 * (a.duration_ms as f64 / 1000.0 + 0.05);
    eprintln!(
        "spinmutex bench: {} cells × {} strategies × {} runs of {} ms = {} runs, about {:.0} s; {} CPUs ({}){}",
        a.threads.len() * a.loads.len(),
        a.strategies.len(),
        a.runs,
        a.duration_ms,
        total,
        estimate,
        machine.nproc,
        machine.cpu_model,
        if a.hogs > 0 { format!(", {} hog(s)", a.hogs) } else { String::new() }
    );
    let inherited: Vec<String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("SPINMUTEX_") && k != "SPINMUTEX_LIB")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !inherited.is_empty() {
        eprintln!("spinmutex bench: inherited settings apply to every run: {}", inherited.join(" "));
    }

    let hogs = Hogs::start(a.hogs).map_err(Failure::Runtime)?;
    let mut records = Vec::new();
    let mut done = 0usize;
    'grid: for &threads in &a.threads {
        for &load in &a.loads {
            for run in 1..=a.runs {
                for strategy in &a.strategies {
                    if INTERRUPTED.load(Ordering::SeqCst) {
                        break 'grid;
                    }
                    done += 1;
                    let rec = run_once(&exe, &lib, &a, threads, load, strategy, run);
                    match (&rec.sample, &rec.error) {
                        (Some(s), None) => eprintln!(
                            "[{done:>4}/{total}] threads {threads:>3} load {load:>3} {strategy:<14} run {run}/{}: {:>10.1} kops/s, fairness {:.2}",
                            a.runs,
                            s.ops_per_s() / 1e3,
                            s.fairness()
                        ),
                        (_, e) => eprintln!(
                            "[{done:>4}/{total}] threads {threads:>3} load {load:>3} {strategy:<14} run {run}/{}: FAILED: {}",
                            a.runs,
                            e.as_deref().unwrap_or("?")
                        ),
                    }
                    records.push(rec);
                }
            }
        }
    }
    drop(hogs);
    let interrupted = INTERRUPTED.load(Ordering::SeqCst);
    if interrupted {
        eprintln!("spinmutex bench: interrupted; reporting the {} runs done", records.len());
    }

    let summaries = summarise(&a, &records);
    print!("{}", render_tables(&a, &summaries, &machine));
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
        write(p, to_json(&a, &machine, &records, &summaries).to_pretty())?;
    }
    if let Some(p) = &a.svg {
        write(p, to_svg(&a, &machine, &summaries))?;
    }
    Ok(if failed.is_empty() && !interrupted { 0 } else { 1 })
}

fn run_once(
    exe: &Path,
    lib: &Path,
    a: &BenchArgs,
    threads: u64,
    load: u64,
    strategy: &str,
    run: u64,
) -> RunRecord {
    let mut cmd = Command::new(exe);
    cmd.arg("__workload")
        .args(["--threads", &threads.to_string(), "--load", &load.to_string()])
        .args(["--duration-ms", &a.duration_ms.to_string()]);
    let setup = if strategy == "glibc-adaptive" {
        cmd.arg("--adaptive");
        Setup::for_strategy("glibc")
    } else {
        Setup::for_strategy(strategy)
    };
    setup.apply(&mut cmd, lib, &a.env);
    let mut rec = RunRecord {
        threads,
        load,
        strategy: strategy.to_string(),
        run,
        wall_s: f64::NAN,
        sample: None,
        error: None,
    };
    match child::run(&mut cmd, true, false) {
        Err(e) => rec.error = Some(format!("cannot start the workload: {e}")),
        Ok(done) => {
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
        }
    }
    rec
}

/// The reference strategy for ratios: glibc if benchmarked, else the first.
fn reference(a: &BenchArgs) -> &str {
    a.strategies.iter().find(|s| *s == "glibc").unwrap_or(&a.strategies[0])
}

fn summarise(a: &BenchArgs, records: &[RunRecord]) -> Vec<CellSummary> {
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
    let mut out = Vec::new();
    let refname = reference(a);
    for &t in &a.threads {
        for &l in &a.loads {
            let ref_ops: Vec<f64> = good(t, l, refname).iter().map(|s| s.ops_per_s()).collect();
            let cell_all: Vec<&Sample> = a.strategies.iter().flat_map(|s| good(t, l, s)).collect();
            let pause = med(&cell_all, &|s| s.get("pause_ns"));
            let bound = bound(l, pause);
            for s in &a.strategies {
                let samples = good(t, l, s);
                let attempted =
                    records.iter().filter(|r| r.threads == t && r.load == l && r.strategy == *s).count();
                if attempted == 0 {
                    continue;
                }
                let ops: Vec<f64> = samples.iter().map(|s| s.ops_per_s()).collect();
                let median_ops = stats::median(&ops);
                let ref_median = stats::median(&ref_ops);
                out.push(CellSummary {
                    threads: t,
                    load: l,
                    strategy: s.clone(),
                    n: samples.len(),
                    attempted,
                    median_ops,
                    stddev_pct: if ops.len() >= 2 { stats::stddev_pct(&ops) } else { f64::NAN },
                    ratio: median_ops / ref_median,
                    welch: if s == refname { None } else { stats::welch(&ref_ops, &ops) },
                    cpu_us_per_1k: med(&samples, &|s| s.cpu_us_per_1k()),
                    fairness: med(&samples, &|s| s.fairness()),
                    wait_p50_ns: med(&samples, &|s| s.get("wait_p50_ns")),
                    wait_p99_ns: med(&samples, &|s| s.get("wait_p99_ns")),
                    wait_max_ns: med(&samples, &|s| s.get("wait_max_ns")),
                    pause_ns: pause,
                    bound,
                });
            }
        }
    }
    out
}

fn find<'a>(sums: &'a [CellSummary], t: u64, l: u64, s: &str) -> Option<&'a CellSummary> {
    sums.iter().find(|c| c.threads == t && c.load == l && c.strategy == s)
}

fn ns(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v >= 1e6 {
        format!("{:.1}ms", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}µs", v / 1e3)
    } else {
        format!("{v:.0}ns")
    }
}

fn kops(v: f64) -> String {
    if v.is_finite() {
        format!("{:.0}", v / 1e3)
    } else {
        "-".into()
    }
}

fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}%")
    } else {
        "-".into()
    }
}

/// The change against the reference, with `*` when Welch's test says significant.
fn change_cell(c: &CellSummary) -> String {
    let mark = match &c.welch {
        Some(w) if w.significant() => "*",
        _ => "",
    };
    format!("{}{mark}", table::change(c.ratio))
}

fn render_tables(a: &BenchArgs, sums: &[CellSummary], m: &Machine) -> String {
    let refname = reference(a);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nspinmutex bench: {} run(s) of {} ms per strategy per cell, interleaved; {} CPUs ({}); {} hog(s)",
        a.runs, a.duration_ms, m.nproc, m.cpu_model, a.hogs
    );
    let _ = writeln!(
        out,
        "Throughput in kops/s (median), its stddev in % of the mean, and the change against {refname}\n\
         (* = significant, Welch's t-test p < 0.05). bound = 1 / (load × pause time), in kops/s.\n"
    );
    let mut t = Table::new(0);
    let mut h1 = vec!["".to_string(), "".to_string()];
    let mut h2 = vec!["threads".to_string(), "load".to_string()];
    for s in &a.strategies {
        h1.push(s.clone());
        h2.push("kops/s".into());
        h1.push(String::new());
        h2.push("sd%".into());
        if s != refname {
            h1.push(String::new());
            h2.push(format!("vs {refname}"));
        }
    }
    h1.push(String::new());
    h2.push("bound".into());
    t.header = vec![h1, h2];
    for &th in &a.threads {
        for &l in &a.loads {
            let mut row = vec![th.to_string(), l.to_string()];
            let mut bound = f64::INFINITY;
            for s in &a.strategies {
                match find(sums, th, l, s) {
                    Some(c) => {
                        row.push(kops(c.median_ops));
                        row.push(pct(c.stddev_pct));
                        if s != refname {
                            row.push(change_cell(c));
                        }
                        bound = c.bound;
                    }
                    None => {
                        row.extend(["-".to_string(), "-".to_string()]);
                        if s != refname {
                            row.push("-".into());
                        }
                    }
                }
            }
            row.push(if bound.is_finite() { kops(bound) } else { "-".into() });
            t.rows.push(row);
        }
    }
    out.push_str(&t.render());

    let _ = writeln!(
        out,
        "\nPer strategy (medians over runs): ratio of median throughput to {refname}; 95% interval of\n\
         the ratio of means (Welch, * = significant); CPU µs per 1000 acquisitions; fairness\n\
         (fewest per-thread acquisitions ÷ mean); acquisition wait p50/p99/max (sampled, so a\n\
         thread starved of the lock shows in `fair`, not here).\n"
    );
    let mut t = Table::new(3);
    t.header.push(
        [
            "threads",
            "load",
            "strategy",
            "ok",
            "kops/s",
            "sd%",
            "ratio",
            "95% CI",
            "cpu µs/1k",
            "fair",
            "wait p50",
            "wait p99",
            "wait max",
            "bound",
        ]
        .map(String::from)
        .to_vec(),
    );
    for c in sums {
        let ci = match &c.welch {
            Some(w) if w.mean_a != 0.0 => {
                let (lo, hi) = w.ratio_ci();
                format!("{lo:.2}–{hi:.2}{}", if w.significant() { " *" } else { "" })
            }
            _ => "-".into(),
        };
        t.rows.push(vec![
            c.threads.to_string(),
            c.load.to_string(),
            c.strategy.clone(),
            format!("{}/{}", c.n, c.attempted),
            kops(c.median_ops),
            pct(c.stddev_pct),
            if c.ratio.is_finite() { format!("{:.3}", c.ratio) } else { "-".into() },
            ci,
            table::fixed(c.cpu_us_per_1k),
            if c.fairness.is_finite() { format!("{:.2}", c.fairness) } else { "-".into() },
            ns(c.wait_p50_ns),
            ns(c.wait_p99_ns),
            ns(c.wait_max_ns),
            if c.bound.is_finite() { kops(c.bound) } else { "-".into() },
        ]);
    }
    out.push_str(&t.render());
    let pauses: Vec<f64> = sums.iter().map(|c| c.pause_ns).filter(|v| v.is_finite()).collect();
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

fn to_csv(records: &[RunRecord]) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for r in records {
        let empty = Sample::default();
        let s = r.sample.as_ref().unwrap_or(&empty);
        let mut row = vec![
            r.threads.to_string(),
            r.load.to_string(),
            json::csv_field(&r.strategy),
            r.run.to_string(),
            (r.error.is_none() as u8).to_string(),
            json::csv_field(r.error.as_deref().unwrap_or("")),
            json::csv_num(r.wall_s),
        ];
        for col in &CSV_COLUMNS[row.len()..] {
            let v = match *col {
                "cpu_us_per_1k_acq" => s.cpu_us_per_1k(),
                "fairness" => s.fairness(),
                "bound_ops_per_s" => bound_of(r.load, s),
                k => s.get(k),
            };
            row.push(json::csv_num(v));
        }
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

fn to_json(a: &BenchArgs, m: &Machine, records: &[RunRecord], sums: &[CellSummary]) -> Json {
    let runs: Vec<Json> = records
        .iter()
        .map(|r| {
            let mut fields = vec![
                ("threads", r.threads.into()),
                ("load", r.load.into()),
                ("strategy", r.strategy.as_str().into()),
                ("run", r.run.into()),
                ("ok", r.error.is_none().into()),
                ("error", r.error.clone().into()),
                ("wall_s", r.wall_s.into()),
            ];
            if let Some(s) = &r.sample {
                let mut keys: Vec<&String> = s.values.keys().collect();
                keys.sort();
                let mut out = Json::Obj(keys.into_iter().map(|k| (k.clone(), s.get(k).into())).collect());
                if let Json::Obj(o) = &mut out {
                    o.push(("cpu_us_per_1k_acq".into(), s.cpu_us_per_1k().into()));
                    o.push(("fairness".into(), s.fairness().into()));
                    o.push(("bound_ops_per_s".into(), bound_of(r.load, s).into()));
                }
                fields.push(("workload", out));
            } else {
                fields.push(("workload", Json::Null));
            }
            obj(fields)
        })
        .collect();
    let cells: Vec<Json> = sums
        .iter()
        .map(|c| {
            obj(vec![
                ("threads", c.threads.into()),
                ("load", c.load.into()),
                ("strategy", c.strategy.as_str().into()),
                ("runs_ok", c.n.into()),
                ("runs", c.attempted.into()),
                ("median_ops_per_s", c.median_ops.into()),
                ("stddev_pct", c.stddev_pct.into()),
                ("ratio_to_reference", c.ratio.into()),
                ("ratio_ci95", c.welch.as_ref().map(|w| vec![w.ratio_ci().0, w.ratio_ci().1]).into()),
                ("p_value", c.welch.as_ref().map(|w| w.p).into()),
                ("significant", c.welch.as_ref().map(|w| w.significant()).into()),
                ("cpu_us_per_1k_acq", c.cpu_us_per_1k.into()),
                ("fairness", c.fairness.into()),
                ("wait_p50_ns", c.wait_p50_ns.into()),
                ("wait_p99_ns", c.wait_p99_ns.into()),
                ("wait_max_ns", c.wait_max_ns.into()),
                ("pause_ns", c.pause_ns.into()),
                ("bound_ops_per_s", c.bound.into()),
            ])
        })
        .collect();
    obj(vec![
        ("tool", "spinmutex bench".into()),
        ("version", env!("CARGO_PKG_VERSION").into()),
        (
            "machine",
            obj(vec![
                ("nproc", m.nproc.into()),
                ("cpu_model", m.cpu_model.as_str().into()),
                ("kernel", m.kernel.as_str().into()),
            ]),
        ),
        (
            "config",
            obj(vec![
                ("threads", a.threads.clone().into()),
                ("loads", a.loads.clone().into()),
                ("strategies", a.strategies.clone().into()),
                ("reference", reference(a).into()),
                ("runs", a.runs.into()),
                ("duration_ms", a.duration_ms.into()),
                ("hogs", a.hogs.into()),
                ("env", Json::Obj(a.env.iter().map(|(k, v)| (k.clone(), v.as_str().into())).collect())),
            ]),
        ),
        ("runs", Json::Arr(runs)),
        ("cells", Json::Arr(cells)),
    ])
}

fn to_svg(a: &BenchArgs, m: &Machine, sums: &[CellSummary]) -> String {
    let panels = a
        .loads
        .iter()
        .map(|&l| {
            let series = a
                .strategies
                .iter()
                .map(|s| svg::Series {
                    name: s.clone(),
                    points: a
                        .threads
                        .iter()
                        .filter_map(|&t| find(sums, t, l, s).map(|c| (t as f64, c.median_ops)))
                        .collect(),
                })
                .collect();
            let bound = sums.iter().find(|c| c.load == l).map(|c| c.bound).filter(|b| b.is_finite());
            svg::Panel { title: format!("load {l} pauses"), series, bound }
        })
        .collect();
    let mut sorted = a.threads.clone();
    sorted.sort_unstable();
    svg::Chart {
        title: "spinmutex bench: throughput against threads".into(),
        subtitle: format!(
            "median of {} runs of {} ms; {} CPUs ({}); {} hog(s)",
            a.runs, a.duration_ms, m.nproc, m.cpu_model, a.hogs
        ),
        x_label: "threads (log scale)".into(),
        y_label: "acquisitions per second".into(),
        x_ticks: sorted.iter().map(|&t| t as f64).collect(),
        panels,
    }
    .render()
}

/// What the report says about the machine.
struct Machine {
    nproc: usize,
    cpu_model: String,
    kernel: String,
}

impl Machine {
    fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown CPU".to_string());
        Machine {
            nproc: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_model,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::words;

    #[test]
    fn defaults_and_quick() {
        let a = parse(&[]).unwrap().unwrap();
        assert_eq!(a.threads, vec![1, 2, 4, 16, 64, 256]);
        assert_eq!(a.loads, vec![0, 1, 10, 50, 100]);
        assert_eq!(a.strategies, words(&["glibc", "glibc-adaptive", "futex", "spin"]));
        assert_eq!((a.runs, a.duration_ms, a.hogs), (5, 300, 0));
        let a = parse(&words(&["--threads", "1,2", "--quick", "--runs", "2"])).unwrap().unwrap();
        assert_eq!(a.threads, vec![1, 2]);
        assert_eq!(a.loads, vec![0, 10, 100]);
        assert_eq!((a.runs, a.duration_ms), (2, 200));
    }

    #[test]
    fn rejects() {
        for bad in [
            vec!["--threads", "0"],
            vec!["--threads", "1,x"],
            vec!["--loads", ""],
            vec!["--runs", "0"],
            vec!["--duration-ms", "0"],
            vec!["--hogs", "-1"],
            vec!["extra"],
            vec!["--", "cmd"],
            vec!["--strategies", "spin,spin"],
            vec!["--nope"],
        ] {
            assert!(parse(&words(&bad)).is_err(), "{bad:?}");
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
