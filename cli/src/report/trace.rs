//! Aggregating trace events: per process, per strategy and per mutex, event counts, how
//! contended acquisitions ended, wait statistics and log2 histograms.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io::BufRead;

use super::input::*;
use crate::stats::lockstats::Sort;

/// Log2 buckets: bucket 0 holds 0, bucket k ≥ 1 holds [2^(k-1), 2^k).
pub const BUCKETS: usize = 65;

pub fn bucket(v: u64) -> usize {
    (u64::BITS - v.leading_zeros()) as usize
}

/// The values bucket `k` holds, inclusive.
pub fn bucket_range(k: usize) -> (u64, u64) {
    match k {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        _ => (1 << (k - 1), (1 << k) - 1),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Hist(pub [u64; BUCKETS]);

impl Default for Hist {
    fn default() -> Self {
        Hist([0; BUCKETS])
    }
}

impl Hist {
    pub fn add(&mut self, v: u64) {
        self.0[bucket(v)] += 1;
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The first and last non-empty buckets.
    pub fn span(&self) -> Option<(usize, usize)> {
        let lo = self.0.iter().position(|&c| c > 0)?;
        let hi = self.0.iter().rposition(|&c| c > 0)?;
        Some((lo, hi))
    }
}

/// Everything counted for one strategy or one mutex.
#[derive(Default, Debug)]
pub struct Stats {
    /// Events by name, including unknown ones.
    pub events: BTreeMap<String, u64>,
    /// Contended acquisitions by how they ended.
    pub how: BTreeMap<String, u64>,
    /// wait_ns of every contended acquisition.
    pub waits: Vec<u64>,
    pub wait_hist: Hist,
    pub spin_hist: Hist,
    pub spins: u64,
    pub sleeps: u64,
    /// Spin give-ups by reason.
    pub give_ups: BTreeMap<String, u64>,
    /// Spins spent before giving up.
    pub give_up_spins: u64,
    /// Forwarded calls that returned an error.
    pub forward_errors: u64,
    pub threads: BTreeSet<(u64, u64)>,
}

impl Stats {
    fn add(&mut self, event: &str, r: &Record) {
        *self.events.entry(event.to_string()).or_default() += 1;
        if let (Some(pid), Some(tid)) = (r.u64("pid"), r.u64("tid")) {
            self.threads.insert((pid, tid));
        }
        match event {
            "acquired" => {
                *self.how.entry(r.str("how").unwrap_or("?").to_string()).or_default() += 1;
                let spins = r.u64("spins").unwrap_or(0);
                self.spins += spins;
                self.spin_hist.add(spins);
                self.sleeps += r.u64("sleeps").unwrap_or(0);
                if let Some(w) = r.u64("wait_ns") {
                    self.waits.push(w);
                    self.wait_hist.add(w);
                }
            }
            "spin_give_up" => {
                *self.give_ups.entry(r.str("reason").unwrap_or("?").to_string()).or_default() += 1;
                self.give_up_spins += r.u64("spins").unwrap_or(0);
            }
            "forward" if r.i64("result").is_some_and(|v| v != 0) => self.forward_errors += 1,
            _ => {}
        }
    }

    pub fn count(&self, event: &str) -> u64 {
        self.events.get(event).copied().unwrap_or(0)
    }

    pub fn acquired(&self) -> u64 {
        self.count("acquired")
    }

    pub fn total_wait(&self) -> u128 {
        self.waits.iter().map(|&w| u128::from(w)).sum()
    }

    /// Mean, p50, p99 and max of the waits (nearest-rank percentiles).
    pub fn wait_summary(&self) -> Option<WaitSummary> {
        if self.waits.is_empty() {
            return None;
        }
        let mut w = self.waits.clone();
        w.sort_unstable();
        let pct = |q: f64| w[((q * w.len() as f64).ceil() as usize).clamp(1, w.len()) - 1];
        Some(WaitSummary {
            mean: self.total_wait() as f64 / w.len() as f64,
            p50: pct(0.50),
            p99: pct(0.99),
            max: w[w.len() - 1],
        })
    }
}

#[derive(Debug, PartialEq)]
pub struct WaitSummary {
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// A mutex as the trace names it: one address in one process under one strategy.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MutexKey {
    pub mutex: String,
    pub pid: u64,
    pub strategy: String,
}

/// The events the library writes; others are counted as unknown.
pub(super) const KNOWN_EVENTS: &[&str] = &[
    "acquired",
    "spin_give_up",
    "sleep",
    "wake",
    "handoff",
    "handoff_request",
    "timeout",
    "forward",
    "dropped",
    "policy",
    "phase",
];

/// One `policy` event of `auto`: a lock class changed mode, or an experiment kept it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PolicyEvent {
    pub ts_ns: Option<u64>,
    pub from: String,
    pub to: String,
    pub because: String,
    /// The measurements behind it, in words.
    pub detail: String,
    /// The same, as the event's figures (`spin_per_s`, `wins`, ...).
    pub figures: BTreeMap<String, u64>,
}

/// Policy events kept per class, the most recent: a class experiments every few seconds
/// at most, so this covers hours, and a trace of days does not take gigabytes to read.
pub const KEPT_POLICY_EVENTS: usize = 1_000;

/// What a trace says of one `auto` lock class: its latest policy events in order (and
/// how many came before them), its experiments and mode changes, and how many
/// experiment phases it ran.
#[derive(Debug, Default)]
pub struct ClassPolicy {
    pub events: VecDeque<PolicyEvent>,
    pub earlier: u64,
    experiments: usize,
    changes: usize,
    pub phases: u64,
}

impl ClassPolicy {
    fn add(&mut self, e: PolicyEvent) {
        // A check (one phase in the mode an experiment chose) counts as one too.
        self.experiments += usize::from(matches!(e.because.as_str(), "measured" | "uncontended" | "checked"));
        self.changes += usize::from(e.from != e.to);
        self.events.push_back(e);
        if self.events.len() > KEPT_POLICY_EVENTS {
            self.events.pop_front();
            self.earlier += 1;
        }
    }

    /// The mode the class was last seen in.
    pub fn mode(&self) -> &str {
        self.events.back().map_or("?", |e| e.to.as_str())
    }

    pub fn changes(&self) -> usize {
        self.changes
    }

    pub fn experiments(&self) -> usize {
        self.experiments
    }
}

/// Acquisitions per second, short: `950/s`, `12.3k/s`, `4.1M/s`.
fn rate(v: u64) -> String {
    match v {
        0..1_000 => format!("{v}/s"),
        1_000..1_000_000 => format!("{:.1}k/s", v as f64 / 1e3),
        _ => format!("{:.1}M/s", v as f64 / 1e6),
    }
}

impl PolicyEvent {
    fn of(r: &Record) -> PolicyEvent {
        let n = |k: &str| r.u64(k).unwrap_or(0);
        let ns = |k: &str| super::text::fmt_ns(n(k) as f64);
        let because = r.str("because").unwrap_or("?").to_string();
        let detail = match because.as_str() {
            "measured" | "uncontended" => {
                let mode = |m: &str| {
                    format!(
                        "{m} {} ({}ns CPU, {}‰ contended)",
                        rate(n(&format!("{m}_per_s"))),
                        n(&format!("{m}_cpu_ns")),
                        n(&format!("{m}_contended_permille"))
                    )
                };
                let modes = if n("sleep_per_s") == 0 {
                    mode("spin")
                } else {
                    format!("{}; {}", mode("spin"), mode("sleep"))
                };
                match n("classes") {
                    0 | 1 => modes,
                    classes => format!("{modes}; {classes} lock classes measured together"),
                }
            }
            "checked" => format!(
                "{} ran at {} when checked; {} had kept {} in the experiment",
                r.str("from").unwrap_or("?"),
                rate(n("per_s")),
                if r.str("from") == Some("spin") { "sleep" } else { "spin" },
                rate(n("to_beat_per_s"))
            ),
            "watched" => format!(
                "{} ran at {} when watched, {} before: the lock is used differently now, and the class experiments again",
                r.str("from").unwrap_or("?"),
                rate(n("per_s")),
                rate(n("pace_per_s"))
            ),
            "spins_lose" => format!(
                "{} of {} spins won: they cost {} and saved {}",
                n("wins"),
                n("spins"),
                ns("spent_ns"),
                ns("saved_ns")
            ),
            "probes_win" => format!(
                "{} of {} probes won: spinning would cost {} and save {}",
                n("wins"),
                n("probes"),
                ns("spent_ns"),
                ns("saved_ns")
            ),
            _ => String::new(),
        };
        PolicyEvent {
            ts_ns: r.u64("ts_ns"),
            from: r.str("from").unwrap_or("?").to_string(),
            to: r.str("to").unwrap_or("?").to_string(),
            because,
            detail,
            figures: r
                .0
                .keys()
                .filter(|k| !matches!(k.as_str(), "ts_ns" | "pid" | "tid"))
                .filter_map(|k| Some((k.clone(), r.u64(k)?)))
                .collect(),
        }
    }
}

/// A whole trace, summarised.
#[derive(Default, Debug)]
pub struct Trace {
    pub lines: u64,
    pub events: u64,
    pub malformed: u64,
    /// File, line number and reason of the first few malformed lines.
    pub malformed_examples: Vec<(String, u64, String)>,
    pub unknown_events: BTreeMap<String, u64>,
    /// Events the writer says it dropped.
    pub dropped: u64,
    pub first_ts: Option<u64>,
    pub last_ts: Option<u64>,
    pub pids: BTreeSet<u64>,
    pub by_strategy: BTreeMap<String, Stats>,
    pub by_mutex: HashMap<MutexKey, Stats>,
    pub by_pid: BTreeMap<u64, Stats>,
    /// The strategies each process's events name.
    pub pid_strategies: BTreeMap<u64, BTreeSet<String>>,
    /// `auto`'s lock classes, by pid and class name.
    pub policies: BTreeMap<(u64, String), ClassPolicy>,
    /// Events by their `level` (TRACE, DEBUG, WARN).
    pub levels: BTreeMap<String, u64>,
    /// The call site of a mutex (pid, address), from the statistics reports read with
    /// the trace.
    pub sites: HashMap<(u64, String), String>,
    /// The file being read, and lines read from it so far.
    pub file: String,
    pub file_lines: u64,
    /// The order of [`Trace::hottest`] (`--sort`).
    pub sort: Sort,
}

pub(super) const MALFORMED_EXAMPLES: usize = 5;

/// What a trace recorded at `info` (`auto`'s policy changes alone) leaves out: the events
/// the library records at `debug`, then those it records only at `trace`.
pub const BELOW_INFO_EVENTS: &[&str] =
    &["acquired", "handoff", "timeout", "forward", "spin_give_up", "sleep", "wake", "handoff_request"];
/// The events the library records at `debug` (target `spinmutex`).
pub const DEBUG_LEVEL_EVENTS: &[&str] = BELOW_INFO_EVENTS.split_at(4).0;
/// The events the library records only at `trace` level.
pub const TRACE_LEVEL_EVENTS: &[&str] = BELOW_INFO_EVENTS.split_at(4).1;

impl Trace {
    /// Reads a whole trace; only an I/O error fails.
    pub fn read(&mut self, mut r: impl BufRead) -> std::io::Result<()> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if r.read_until(b'\n', &mut buf)? == 0 {
                return Ok(());
            }
            match std::str::from_utf8(&buf) {
                Ok(line) => {
                    self.add_line(line);
                }
                Err(_) => self.skip_line("not UTF-8".to_string()),
            }
        }
    }

    /// Lines from now on come from `file`.
    pub fn begin_file(&mut self, file: &str) {
        self.file = file.to_string();
        self.file_lines = 0;
    }

    /// Counts a line that cannot be read as malformed.
    pub fn skip_line(&mut self, why: String) {
        self.lines += 1;
        self.file_lines += 1;
        self.malformed(self.file_lines, why);
    }

    pub fn malformed(&mut self, lineno: u64, why: String) {
        self.malformed += 1;
        if self.malformed_examples.len() < MALFORMED_EXAMPLES {
            self.malformed_examples.push((self.file.clone(), lineno, why));
        }
    }

    /// Adds one line of the trace; returns the event's pid. Blank lines are skipped.
    pub fn add_line(&mut self, line: &str) -> Option<u64> {
        self.lines += 1;
        self.file_lines += 1;
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        let r = match parse_line(line) {
            Ok(r) => r,
            Err(why) => {
                self.malformed(self.file_lines, why);
                return None;
            }
        };
        let Some(event) = r.str("event").map(str::to_string) else {
            self.malformed(self.file_lines, "no \"event\" string".to_string());
            return None;
        };
        self.events += 1;
        if let Some(ts) = r.u64("ts_ns") {
            self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
            self.last_ts = Some(self.last_ts.map_or(ts, |l| l.max(ts)));
        }
        let pid = r.u64("pid");
        if let Some(pid) = pid {
            self.pids.insert(pid);
        }
        if let Some(level) = r.str("level") {
            *self.levels.entry(level.to_ascii_uppercase()).or_default() += 1;
        }
        if !KNOWN_EVENTS.contains(&event.as_str()) {
            *self.unknown_events.entry(event.clone()).or_default() += 1;
        }
        if event == "dropped" {
            self.dropped += r.u64("count").unwrap_or(0);
            return pid;
        }
        let class = || (pid.unwrap_or(0), r.str("class").unwrap_or("?").to_string());
        match event.as_str() {
            "policy" => self.policies.entry(class()).or_default().add(PolicyEvent::of(&r)),
            "phase" => self.policies.entry(class()).or_default().phases += 1,
            _ => {}
        }
        let strategy = r.str("strategy").unwrap_or("?").to_string();
        // Events of a lock class name no lock.
        if let Some(lock) = r.str("mutex").or_else(|| r.str("rwlock")) {
            let key = MutexKey { mutex: lock.to_string(), pid: pid.unwrap_or(0), strategy: strategy.clone() };
            self.by_mutex.entry(key).or_default().add(&event, &r);
        }
        self.pid_strategies.entry(pid.unwrap_or(0)).or_default().insert(strategy.clone());
        self.by_strategy.entry(strategy).or_default().add(&event, &r);
        self.by_pid.entry(pid.unwrap_or(0)).or_default().add(&event, &r);
        pid
    }

    /// The events the recorded level leaves out, judged by the events it holds: the
    /// `trace`-level ones when none is at TRACE, and the `debug`-level ones too when none
    /// of those is there either (recorded at `info`, or at
    /// `info,spinmutex::auto=debug`, whose DEBUG events are `auto`'s phases alone).
    /// None when nothing is left out, or the trace does not say its levels.
    pub fn omitted(&self) -> Option<&'static [&'static str]> {
        if self.levels.is_empty() || self.levels.contains_key("TRACE") {
            None
        } else if self.by_strategy.values().any(|s| DEBUG_LEVEL_EVENTS.iter().any(|e| s.count(e) > 0)) {
            Some(TRACE_LEVEL_EVENTS)
        } else {
            Some(BELOW_INFO_EVENTS)
        }
    }

    /// The call site of a mutex, when a statistics report names it.
    pub fn site(&self, k: &MutexKey) -> Option<&str> {
        self.sites.get(&(k.pid, k.mutex.clone())).map(String::as_str)
    }

    /// Mutexes, hottest first: by default the most time waited (what the lock cost its
    /// threads), then the most contended acquisitions; `--sort contended` or
    /// `acquisitions` puts the count first (a trace records contended acquisitions
    /// only, and no hold times: `hold` ranks as `wait`).
    pub fn hottest(&self) -> Vec<(&MutexKey, &Stats)> {
        let mut v: Vec<(&MutexKey, &Stats)> = self.by_mutex.iter().collect();
        let count_first = matches!(self.sort, Sort::Contended | Sort::Acquisitions);
        v.sort_by(|a, b| {
            let wait = b.1.total_wait().cmp(&a.1.total_wait());
            let count = b.1.acquired().cmp(&a.1.acquired());
            (if count_first { count.then(wait) } else { wait.then(count) })
                .then(b.1.events.values().sum::<u64>().cmp(&a.1.events.values().sum::<u64>()))
                .then(a.0.cmp(b.0))
        });
        v
    }
}
