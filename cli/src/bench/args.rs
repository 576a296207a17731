//! The options of `bench`, shared by the mutex grid and the rwlock grid (`--rwlock`),
//! and their value parsers.

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::bench::scenario::Scenario;
use crate::process::library::{parse_bench_arm, Arm};
use crate::process::settings::LibSettings;

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
    be made); `mixed` (on request), a thread per CPU holds a second mutex across 50 µs of \
    pauses while as many take the grid's mutex, each class doing a fixed amount of work, \
    and the report gives each class's time and the wall time.")]
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
    /// PTHREAD_MUTEX_ADAPTIVE_NP mutex), futex, spin, auto, kernel [default:
    /// none,glibc,glibc-adaptive,futex,spin,auto,kernel]
    #[arg(short = 's', long, value_name = "LIST", value_delimiter = ',', value_parser = parse_bench_arm)]
    pub strategies: Vec<Arm>,

    /// Do not add the `none` arm that otherwise runs whenever glibc is benchmarked
    #[arg(long)]
    pub without_none: bool,

    /// Do not run the lock-free control that fairness is measured against
    #[arg(long)]
    pub without_control: bool,

    /// Named scenarios to run after the grid: idle-owner, cpu-quota, mixed, or none
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
    /// per CPU so that every thread gets several scheduler slices; 2000 for scenarios].
    /// `mixed` runs a fixed amount of work instead, sized by it: 2,000 acquisitions of
    /// the fast lock and 5 of the slow one per ms
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub duration_ms: Option<u64>,

    /// Run N busy-looping processes beside the benchmark
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=4096))]
    pub hogs: u64,

    /// Every run as CSV (`-`: standard output, and the text report to standard error)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Every run and every cell's summary as JSON (`-`: standard output, and the text
    /// report to standard error)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Throughput against threads, one panel per load, as SVG (`-`: standard output)
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
        _ => Scenario::from_name(text)
            .map(Some)
            .ok_or_else(|| "accepted: idle-owner, cpu-quota, mixed, none".into()),
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

/// A percentage of writes: 0 to 100, in steps of 0.1 (the workload counts per mille).
fn parse_write_pct(text: &str) -> Result<f64, String> {
    let v: f64 = text.parse().map_err(|_| format!("'{text}' is not a percentage"))?;
    let permille = v * 10.0;
    if !(0.0..=1000.0).contains(&permille) || (permille - permille.round()).abs() > 1e-9 {
        return Err(format!("'{text}': a percentage from 0 to 100 in steps of 0.1"));
    }
    Ok(v)
}
