//! The text of a trace's summary: tables per strategy and per mutex, and histograms
//! drawn with bars.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::output::text::{duration_ns, Table};
use crate::stats::lockstats::Sort;

use super::trace::*;

/// Nanoseconds in the unit that suits them: `850ns`, `12.3µs`, `4.10ms`, `1.20s`.
pub fn fmt_ns(ns: f64) -> String {
    duration_ns(ns, false)
}

/// A bucket's lower bound, short: `0`, `512ns`, `1.0µs`, `16µs`.
pub(super) fn short_ns(v: u64) -> String {
    duration_ns(v as f64, true)
}

/// The label of a wait-time bucket: `0`, `1ns`, `512ns-1.0µs`.
pub(super) fn wait_label(k: usize) -> String {
    let (lo, hi) = bucket_range(k);
    match k {
        0 => "0".to_string(),
        1 => "1ns".to_string(),
        64 => format!("≥{}", short_ns(lo)),
        _ => format!("{}-{}", short_ns(lo), short_ns(hi + 1)),
    }
}

/// The label of a spins bucket: `0`, `1`, `2-3`, `1024-2047`.
pub(super) fn spin_label(k: usize) -> String {
    let (lo, hi) = bucket_range(k);
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    }
}

pub(super) const BAR_WIDTH: usize = 40;

/// A bar of `frac` × [`BAR_WIDTH`] cells; anything non-zero shows.
pub(super) fn bar(frac: f64, ascii: bool) -> String {
    let eighths = (frac.clamp(0.0, 1.0) * (BAR_WIDTH * 8) as f64).round() as usize;
    let nonzero = frac > 0.0;
    if ascii {
        let n = eighths.div_ceil(8).max(usize::from(nonzero));
        return "#".repeat(n);
    }
    const PARTS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
    let eighths = eighths.max(usize::from(nonzero));
    let mut s = "█".repeat(eighths / 8);
    s.push_str(PARTS[eighths % 8]);
    s
}

/// A histogram as rows of bars, from the first to the last non-empty bucket.
pub(super) fn render_hist(out: &mut String, title: &str, h: &Hist, label: fn(usize) -> String, ascii: bool) {
    let Some((lo, hi)) = h.span() else {
        let _ = writeln!(out, "  {title}: none");
        return;
    };
    let total = h.total();
    let max = h.0[lo..=hi].iter().copied().max().unwrap_or(1).max(1);
    let _ = writeln!(out, "  {title} ({total}):");
    let labels: Vec<String> = (lo..=hi).map(label).collect();
    let lw = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let cw = h.0[lo..=hi].iter().map(|c| c.to_string().len()).max().unwrap_or(1);
    for (k, l) in (lo..=hi).zip(&labels) {
        let c = h.0[k];
        let b = bar(c as f64 / max as f64, ascii);
        let pad_l = lw - l.chars().count();
        let pad_b = BAR_WIDTH - b.chars().count();
        let _ = writeln!(
            out,
            "    {}{l} |{b}{} {c:>cw$} {:>5.1}%",
            " ".repeat(pad_l),
            " ".repeat(pad_b),
            100.0 * c as f64 / total as f64
        );
    }
}

pub(super) fn list(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".to_string();
    }
    m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

/// Event counts with the library's events first, in a fixed order, then unknown ones;
/// then the events the recorded level leaves out.
pub(super) fn event_list(t: &Trace, s: &Stats) -> String {
    let mut parts: Vec<String> =
        KNOWN_EVENTS.iter().filter_map(|e| s.events.get(*e).map(|c| format!("{e} {c}"))).collect();
    parts.extend(
        s.events.iter().filter(|(e, _)| !KNOWN_EVENTS.contains(&e.as_str())).map(|(e, c)| format!("{e} {c}")),
    );
    if let Some(omitted) = t.omitted() {
        parts.push(format!("{}: not recorded at this level", omitted.join(", ")));
    }
    parts.join(", ")
}

pub(super) fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.0}%", 100.0 * part as f64 / whole as f64)
    }
}

/// Columns shared by the strategy and mutex tables.
pub(super) fn acquisition_cells(s: &Stats) -> Vec<String> {
    let n = s.acquired();
    let how = |h: &str| s.how.get(h).copied().unwrap_or(0);
    let w = s.wait_summary();
    let ns = |f: fn(&WaitSummary) -> f64| w.as_ref().map_or("-".to_string(), |w| fmt_ns(f(w)));
    vec![
        n.to_string(),
        format!("{} ({})", how("spin"), pct(how("spin"), n)),
        format!("{} ({})", how("sleep"), pct(how("sleep"), n)),
        format!("{} ({})", how("handoff"), pct(how("handoff"), n)),
        ns(|w| w.mean),
        ns(|w| w.p50 as f64),
        ns(|w| w.p99 as f64),
        ns(|w| w.max as f64),
        if n == 0 { "-".to_string() } else { format!("{:.1}", s.spins as f64 / n as f64) },
    ]
}

pub(super) const ACQ_HEADER: [&str; 9] =
    ["acquired", "by spin", "by sleep", "by handoff", "mean wait", "p50", "p99", "max", "spins/acq"];

/// What the trace says of `event`s at its level: "not recorded at this level" when the
/// level leaves them out.
pub(super) fn not_recorded(t: &Trace, events: &[&str]) -> bool {
    t.omitted().is_some_and(|o| events.iter().all(|e| o.contains(e)))
}

pub(super) const NOT_RECORDED: &str = "not recorded at this level (SPINMUTEX_TRACE=trace records them)";

pub fn render_text(t: &Trace, file: &str, top: usize, ascii: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "spinmutex report: {file}");
    let span = match (t.first_ts, t.last_ts) {
        (Some(a), Some(b)) => format!(", over {}", fmt_ns(b.saturating_sub(a) as f64)),
        _ => String::new(),
    };
    let threads: BTreeSet<&(u64, u64)> = t.by_strategy.values().flat_map(|s| &s.threads).collect();
    let _ = writeln!(
        out,
        "{} events in {} lines, {} process{}, {} thread{}, {} mutex{}{span}",
        t.events,
        t.lines,
        t.pids.len(),
        if t.pids.len() == 1 { "" } else { "es" },
        threads.len(),
        if threads.len() == 1 { "" } else { "s" },
        t.by_mutex.len(),
        if t.by_mutex.len() == 1 { "" } else { "es" },
    );
    if t.malformed > 0 {
        let _ = writeln!(
            out,
            "{} malformed line{} skipped:",
            t.malformed,
            if t.malformed == 1 { "" } else { "s" }
        );
        for (f, n, why) in &t.malformed_examples {
            let _ = writeln!(out, "  {f} line {n}: {why}");
        }
        if t.malformed > t.malformed_examples.len() as u64 {
            let _ = writeln!(out, "  ...");
        }
    }
    if t.dropped > 0 {
        let _ = writeln!(
            out,
            "warning: the trace writer dropped {} events; counts below are lower bounds",
            t.dropped
        );
    }
    if !t.unknown_events.is_empty() {
        let _ = writeln!(out, "unknown events (counted, not interpreted): {}", list(&t.unknown_events));
    }
    if let Some(omitted) = t.omitted() {
        let _ = writeln!(
            out,
            "recorded at level {}: {} are not recorded at this level (SPINMUTEX_TRACE=trace records them)",
            t.levels.keys().map(|l| l.to_ascii_lowercase()).collect::<Vec<_>>().join("/"),
            omitted.join(", ")
        );
    }
    if t.events == 0 {
        let _ = writeln!(out, "\nno events");
        return out;
    }

    // Per process. A trace recorded at `info` holds no acquisitions: their columns would
    // read 0, as if no lock had been contended.
    let acquisitions = !not_recorded(t, &["acquired"]);
    let _ = writeln!(out, "\n== By process ==\n");
    let mut table = Table::new(1);
    let mut h = vec!["pid".to_string(), "strategy".to_string(), "events".to_string(), "mutexes".to_string()];
    if acquisitions {
        h.extend(ACQ_HEADER.iter().map(|s| s.to_string()));
    }
    table.header.push(h);
    for (pid, s) in &t.by_pid {
        let strategies: Vec<&str> =
            t.pid_strategies.get(pid).into_iter().flatten().map(String::as_str).collect();
        let mutexes = t.by_mutex.keys().filter(|k| k.pid == *pid).count();
        let mut row = vec![
            pid.to_string(),
            strategies.join(","),
            s.events.values().sum::<u64>().to_string(),
            mutexes.to_string(),
        ];
        if acquisitions {
            row.extend(acquisition_cells(s));
        }
        table.rows.push(row);
    }
    out.push_str(&table.render());

    // Per strategy.
    if acquisitions {
        let _ = writeln!(out, "\n== By strategy (contended acquisitions) ==\n");
        let mut table = Table::new(1);
        let mut h = vec!["strategy".to_string()];
        h.extend(ACQ_HEADER.iter().map(|s| s.to_string()));
        table.header.push(h);
        for (name, s) in &t.by_strategy {
            let mut row = vec![name.clone()];
            row.extend(acquisition_cells(s));
            table.rows.push(row);
        }
        out.push_str(&table.render());
    } else {
        let _ = writeln!(
            out,
            "\ncontended acquisitions: not recorded at this level (SPINMUTEX_TRACE=debug records them)"
        );
    }

    for (name, s) in &t.by_strategy {
        let _ = writeln!(out, "\n-- strategy {name} --");
        let _ = writeln!(out, "  events: {}", event_list(t, s));
        let count = |event: &str| {
            if not_recorded(t, &[event]) {
                "not recorded".to_string()
            } else {
                s.count(event).to_string()
            }
        };
        let forwarded = if not_recorded(t, &["forward"]) {
            count("forward")
        } else {
            format!("{} ({} errors)", s.count("forward"), s.forward_errors)
        };
        let _ = writeln!(
            out,
            "  handoffs {}, handoff requests {}, timeouts {}, forwarded {forwarded}, threads {}",
            count("handoff"),
            count("handoff_request"),
            count("timeout"),
            s.threads.len()
        );
        if not_recorded(t, &["spin_give_up"]) {
            let _ = writeln!(out, "  spin give-ups: {NOT_RECORDED}");
        } else {
            let _ = writeln!(out, "  spin give-ups: {}", list(&s.give_ups));
        }
        if s.acquired() > 0 {
            render_hist(&mut out, "wait time per contended acquisition", &s.wait_hist, wait_label, ascii);
            render_hist(&mut out, "spins per contended acquisition", &s.spin_hist, spin_label, ascii);
        }
    }

    render_policies(&mut out, t);

    // Per mutex.
    let hot = t.hottest();
    if hot.is_empty() {
        return out;
    }
    let shown = hot.len().min(top);
    let with_sites = hot.iter().take(top).any(|(k, _)| t.site(k).is_some());
    let order = match t.sort {
        Sort::Contended | Sort::Acquisitions => "by contended acquisitions",
        Sort::Wait | Sort::Hold => "by total time waited",
    };
    let _ = writeln!(out, "\n== Hottest mutexes ({shown} of {}, {order}) ==\n", hot.len());
    let mut table = Table::new(4);
    let mut h: Vec<String> = ["#", "mutex", "pid", "strategy"].iter().map(|s| s.to_string()).collect();
    h.extend(ACQ_HEADER.iter().map(|s| s.to_string()));
    h.extend(["give-ups", "timeouts", "threads"].iter().map(|s| s.to_string()));
    if with_sites {
        h.push("call site".to_string());
        table.left_last = 1;
    }
    table.header.push(h);
    let give_ups_recorded = !not_recorded(t, &["spin_give_up"]);
    for (i, (k, s)) in hot.iter().take(top).enumerate() {
        let mut row = vec![format!("{}", i + 1), k.mutex.clone(), k.pid.to_string(), k.strategy.clone()];
        row.extend(acquisition_cells(s));
        row.push(if give_ups_recorded { s.count("spin_give_up").to_string() } else { "-".to_string() });
        row.push(s.count("timeout").to_string());
        row.push(s.threads.len().to_string());
        if with_sites {
            row.push(t.site(k).unwrap_or("-").to_string());
        }
        table.rows.push(row);
    }
    out.push_str(&table.render());
    if !give_ups_recorded {
        let _ = writeln!(out, "(give-ups: {NOT_RECORDED})");
    }

    for (i, (k, s)) in hot.iter().take(top).enumerate() {
        let site = t.site(k).map(|c| format!(", made at {c}")).unwrap_or_default();
        let _ = writeln!(out, "\n-- #{} mutex {} (pid {}, {}{site}) --", i + 1, k.mutex, k.pid, k.strategy);
        let _ = writeln!(out, "  events: {}", event_list(t, s));
        if !give_ups_recorded {
            let _ = writeln!(out, "  spin give-ups: {NOT_RECORDED}");
        } else if !s.give_ups.is_empty() {
            let _ = writeln!(out, "  spin give-ups: {}", list(&s.give_ups));
        }
        if s.acquired() > 0 {
            render_hist(&mut out, "wait time", &s.wait_hist, wait_label, ascii);
            render_hist(&mut out, "spins", &s.spin_hist, spin_label, ascii);
        }
    }
    out
}

/// Policy events shown per class: the most recent.
const POLICY_HISTORY: usize = 8;

/// `auto`'s lock classes: the mode each was last seen in, then its recent decisions with
/// the measurements behind them, timed from the trace's first event.
fn render_policies(out: &mut String, t: &Trace) {
    if t.policies.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n== auto: lock class policies ==\n");
    // Phases are DEBUG events of their own target: none at all means none recorded.
    let phases_recorded = t.policies.values().any(|p| p.phases > 0);
    let mut table = Table::new(1);
    table
        .header
        .push(["class", "pid", "mode", "experiments", "changes", "phases"].map(String::from).to_vec());
    for ((pid, class), p) in &t.policies {
        table.rows.push(vec![
            class.clone(),
            pid.to_string(),
            p.mode().to_string(),
            p.experiments().to_string(),
            p.changes().to_string(),
            if phases_recorded { p.phases.to_string() } else { "-".to_string() },
        ]);
    }
    out.push_str(&table.render());
    if !phases_recorded {
        let _ =
            writeln!(out, "(phases: not recorded; SPINMUTEX_TRACE=info,spinmutex::auto=debug records them)");
    }
    let start = t.first_ts.unwrap_or(0);
    for ((pid, class), p) in &t.policies {
        let _ = writeln!(out, "\n-- class {class} (pid {pid}): {} --", p.mode());
        let skip = p.events.len().saturating_sub(POLICY_HISTORY);
        let earlier = p.earlier + skip as u64;
        if earlier > 0 {
            let _ = writeln!(out, "  ({earlier} earlier event{})", if earlier == 1 { "" } else { "s" });
        }
        for e in p.events.iter().skip(skip) {
            let at =
                e.ts_ns.map_or("-".to_string(), |ts| format!("+{}", fmt_ns(ts.saturating_sub(start) as f64)));
            let _ = writeln!(out, "  {at:>9}  {} -> {}  {}: {}", e.from, e.to, e.because, e.detail);
        }
    }
}
