//! The JSON form of a trace's summary (`report --json`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::text::*;
use super::trace::*;

/// The trace's summary as `report --json` writes it.
#[derive(Serialize)]
pub struct TraceJson {
    pub events: u64,
    pub lines: u64,
    pub malformed: u64,
    pub dropped: u64,
    pub pids: Vec<u64>,
    /// Events by level.
    pub levels: BTreeMap<String, u64>,
    /// Events the recorded level does not record (so their counts say nothing).
    pub not_recorded: Vec<&'static str>,
    pub unknown_events: BTreeMap<String, u64>,
    pub strategies: BTreeMap<String, StatsJson>,
    pub processes: BTreeMap<u64, StatsJson>,
    /// Hottest first.
    pub mutexes: Vec<MutexJson>,
    /// `auto`'s lock classes, with every policy event of each.
    pub policies: Vec<PolicyJson>,
}

#[derive(Serialize)]
pub struct StatsJson {
    pub events: BTreeMap<String, u64>,
    /// Contended acquisitions, and how they ended.
    pub acquired: u64,
    pub how: BTreeMap<String, u64>,
    pub spins: u64,
    pub sleeps: u64,
    /// Null when the recorded level does not record give-ups.
    pub give_ups: Option<BTreeMap<String, u64>>,
    pub wait_ns: Option<WaitJson>,
    /// (lower bound, count) of each non-empty log2 bucket.
    pub wait_histogram: Vec<[u64; 2]>,
    pub spin_histogram: Vec<[u64; 2]>,
    pub threads: usize,
}

#[derive(Serialize)]
pub struct WaitJson {
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

#[derive(Serialize)]
pub struct MutexJson {
    pub mutex: String,
    pub pid: u64,
    pub strategy: String,
    /// Where the mutex's class was made, when a statistics report lists it.
    pub call_site: Option<String>,
    #[serde(flatten)]
    pub stats: StatsJson,
}

#[derive(Serialize)]
pub struct PolicyJson {
    pub class: String,
    pub pid: u64,
    pub mode: String,
    pub experiments: usize,
    pub changes: usize,
    pub phases: u64,
    /// The latest policy events, at most [`KEPT_POLICY_EVENTS`], oldest first.
    pub events: Vec<PolicyEvent>,
    /// Policy events before those.
    pub earlier_events: u64,
}

pub(super) fn buckets(h: &Hist) -> Vec<[u64; 2]> {
    h.0.iter().enumerate().filter(|(_, c)| **c > 0).map(|(k, c)| [bucket_range(k).0, *c]).collect()
}

impl StatsJson {
    fn of(t: &Trace, s: &Stats) -> StatsJson {
        StatsJson {
            events: s.events.clone(),
            acquired: s.acquired(),
            how: s.how.clone(),
            spins: s.spins,
            sleeps: s.sleeps,
            give_ups: (!not_recorded(t, &["spin_give_up"])).then(|| s.give_ups.clone()),
            wait_ns: s.wait_summary().map(|w| WaitJson { mean: w.mean, p50: w.p50, p99: w.p99, max: w.max }),
            wait_histogram: buckets(&s.wait_hist),
            spin_histogram: buckets(&s.spin_hist),
            threads: s.threads.len(),
        }
    }
}

impl TraceJson {
    pub fn of(t: &Trace) -> TraceJson {
        TraceJson {
            events: t.events,
            lines: t.lines,
            malformed: t.malformed,
            dropped: t.dropped,
            pids: t.pids.iter().copied().collect(),
            levels: t.levels.clone(),
            not_recorded: t.omitted().map(<[_]>::to_vec).unwrap_or_default(),
            unknown_events: t.unknown_events.clone(),
            strategies: t.by_strategy.iter().map(|(k, s)| (k.clone(), StatsJson::of(t, s))).collect(),
            processes: t.by_pid.iter().map(|(k, s)| (*k, StatsJson::of(t, s))).collect(),
            mutexes: t
                .hottest()
                .into_iter()
                .map(|(k, s)| MutexJson {
                    mutex: k.mutex.clone(),
                    pid: k.pid,
                    strategy: k.strategy.clone(),
                    call_site: t.site(k).map(str::to_string),
                    stats: StatsJson::of(t, s),
                })
                .collect(),
            policies: t
                .policies
                .iter()
                .map(|((pid, class), p)| PolicyJson {
                    class: class.clone(),
                    pid: *pid,
                    mode: p.mode().to_string(),
                    experiments: p.experiments(),
                    changes: p.changes(),
                    phases: p.phases,
                    events: p.events.iter().cloned().collect(),
                    earlier_events: p.earlier,
                })
                .collect(),
        }
    }
}
