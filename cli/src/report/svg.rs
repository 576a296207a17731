//! `report --svg`: histograms of waits and spins per strategy, and bars of the hottest
//! mutexes and lock classes.

use std::fmt::Write as _;

use crate::output::svg::{self, colour, escape, Layout};
use crate::output::text::short_count;
use crate::stats::lockstats::{self, ProcessReport, Sort};

use super::text::*;
use super::trace::*;

pub(super) const LAYOUT: Layout =
    Layout { panel_w: 520.0, panel_h: 300.0, left: 64.0, right: 16.0, top: 30.0, bottom: 58.0 };
pub(super) const PANEL_W: f64 = LAYOUT.panel_w;

pub(super) const PANEL_H: f64 = LAYOUT.panel_h;

pub(super) const TOP_MUTEXES_IN_SVG: usize = 10;

/// Width of the labels left of horizontal bars.
pub(super) const LABEL_W: f64 = 480.0;

/// Longest label (in characters) left of a bar; longer ones are cut, whole in the tooltip.
pub(super) const LABEL_CHARS: usize = 76;

/// One histogram panel: bucket groups on x, one bar per strategy in each group. Each
/// strategy's bars are its share of its own contended acquisitions, so a strategy with
/// 3 shows beside one with 379.
pub(super) fn svg_hist_panel(
    s: &mut String,
    ox: f64,
    oy: f64,
    title: &str,
    x_label: &str,
    series: &[(&str, &Hist)],
    label: fn(u64) -> String,
) {
    let mut plot = LAYOUT.plot(ox, oy, 1.0, 1.0);
    let (px, py, pw, ph) = (plot.x, plot.y, plot.w, plot.h);
    let _ = writeln!(s, "<g>");
    plot.title(s, oy + 18.0, title);
    let span =
        series.iter().filter_map(|(_, h)| h.span()).fold(None, |acc: Option<(usize, usize)>, (lo, hi)| {
            Some(acc.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))))
        });
    plot.border(s);
    let Some((lo, hi)) = span else {
        plot.note(s, "no data");
        let _ = writeln!(s, "</g>");
        return;
    };
    let share = |h: &Hist, k: usize| -> f64 {
        let total = h.total();
        if total == 0 {
            0.0
        } else {
            100.0 * h.0[k] as f64 / total as f64
        }
    };
    let max =
        series.iter().flat_map(|(_, h)| (lo..=hi).map(move |k| share(h, k))).fold(0.0f64, f64::max).max(1.0);
    let ticks = svg::ticks(max);
    plot.top = ticks.last().copied().unwrap_or(100.0).max(1.0);
    plot.y_grid(s, &ticks);
    let groups = hi - lo + 1;
    let gw = pw / groups as f64;
    let n = series.len().max(1) as f64;
    let bw = (gw * 0.8 / n).max(0.5);
    // Label every group when they fit, else every other one.
    let every = if gw >= 34.0 { 1 } else { (34.0 / gw).ceil() as usize };
    for (g, k) in (lo..=hi).enumerate() {
        let gx = px + g as f64 * gw;
        if g % every == 0 {
            let (cx, cy) = (gx + gw / 2.0, py + ph + 12.0);
            let _ = writeln!(
                s,
                r#"<text x="{cx:.1}" y="{cy:.1}" text-anchor="end" transform="rotate(-35 {cx:.1} {cy:.1})">{}</text>"#,
                escape(&label(bucket_range(k).0))
            );
        }
        for (i, (name, h)) in series.iter().enumerate() {
            let c = h.0[k];
            if c == 0 {
                continue;
            }
            let pct = share(h, k);
            let x = gx + gw * 0.1 + i as f64 * bw;
            let y = plot.sy(pct);
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{:.1}" fill="{}"><title>{} {}: {c} of {} ({pct:.1}%)</title></rect>"#,
                (py + ph - y).max(0.5),
                colour(name, i),
                escape(name),
                escape(&label(bucket_range(k).0)),
                h.total()
            );
        }
    }
    plot.axis_labels(s, x_label, oy + PANEL_H - 6.0, "% of the strategy's contended acquisitions", ox + 14.0);
    let _ = writeln!(s, "</g>");
}

/// A label cut to [`LABEL_CHARS`] characters.
pub(super) fn cut(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return label.to_string();
    }
    let mut s: String = label.chars().take(LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

/// One bar of a horizontal bar panel.
pub(super) struct Bar {
    label: String,
    value: f64,
    colour: &'static str,
    /// Written after the bar.
    text: String,
    tooltip: String,
}

/// Horizontal bars, two panels wide, labels on the left.
pub(super) fn svg_bar_panel(
    s: &mut String,
    ox: f64,
    oy: f64,
    title: &str,
    x_label: &str,
    bars: &[Bar],
    empty: &str,
) {
    let mut plot = LAYOUT.plot(ox + LABEL_W - LAYOUT.left, oy, 2.0, 1.0);
    plot.w -= LABEL_W - LAYOUT.left + 170.0;
    let (px, py, pw, ph) = (plot.x, plot.y, plot.w, plot.h);
    let _ = writeln!(s, "<g>");
    plot.title(s, oy + 18.0, title);
    if bars.is_empty() {
        plot.note(s, empty);
        let _ = writeln!(s, "</g>");
        return;
    }
    let max = bars.iter().map(|b| b.value).fold(0.0f64, f64::max).max(1.0);
    let ticks = svg::ticks(max);
    plot.top = ticks.last().copied().unwrap_or(1.0).max(1.0);
    let sx = |v: f64| px + v / plot.top * pw;
    for tk in &ticks {
        let x = sx(*tk);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{py:.1}" x2="{x:.1}" y2="{:.1}" stroke="#e6e6e6"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            py + ph,
            py + ph + 14.0,
            svg::tick_label(*tk)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        px + pw / 2.0,
        py + ph + 32.0,
        escape(x_label)
    );
    let rh = ph / TOP_MUTEXES_IN_SVG as f64;
    for (i, b) in bars.iter().take(TOP_MUTEXES_IN_SVG).enumerate() {
        let y = py + i as f64 * rh;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}<title>{}</title></text>"#,
            px - 6.0,
            y + rh * 0.65,
            escape(&cut(&b.label)),
            escape(&b.label)
        );
        let _ = writeln!(
            s,
            r#"<rect x="{px:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect><text x="{:.1}" y="{:.1}">{}</text>"#,
            y + rh * 0.15,
            (sx(b.value) - px).max(0.5),
            rh * 0.7,
            b.colour,
            escape(&b.tooltip),
            sx(b.value) + 4.0,
            y + rh * 0.65,
            escape(&b.text)
        );
    }
    plot.border(s);
    let _ = writeln!(s, "</g>");
}

/// The trace's hottest mutexes, labelled by the call site of their class when a
/// statistics report names it, else by address.
pub(super) fn mutex_bars(t: &Trace, strategies: &[&str]) -> Vec<Bar> {
    let several = t.pids.len() > 1;
    t.hottest()
        .into_iter()
        .filter(|(_, st)| st.acquired() > 0)
        .take(TOP_MUTEXES_IN_SVG)
        .map(|(k, st)| {
            let idx = strategies.iter().position(|n| *n == k.strategy).unwrap_or(0);
            let n = st.acquired();
            let mean = st.wait_summary().map_or("-".to_string(), |w| fmt_ns(w.mean));
            let label = t.site(k).map_or_else(|| format!("mutex {}", k.mutex), str::to_string);
            let text = if several {
                format!("{n} ({}, pid {})", k.strategy, k.pid)
            } else {
                format!("{n} ({})", k.strategy)
            };
            Bar {
                label,
                value: n as f64,
                colour: colour(&k.strategy, idx),
                text,
                tooltip: format!(
                    "mutex {} (pid {}): {n} contended acquisitions, mean wait {mean}",
                    k.mutex, k.pid
                ),
            }
        })
        .collect()
}

/// The statistics reports' hottest classes in the order `sort` gives, labelled by
/// call site; a bar's length is the figure they are sorted by.
pub(super) fn class_bars(reports: &[ProcessReport], sort: Sort) -> Vec<Bar> {
    let several = reports.len() > 1;
    let mut all: Vec<(&ProcessReport, &lockstats::Class)> =
        reports.iter().flat_map(|r| r.classes.iter().map(move |c| (r, c))).collect();
    all.sort_by_key(|(_, c)| std::cmp::Reverse(sort.key(&c.counters)));
    all.into_iter()
        .take(TOP_MUTEXES_IN_SVG)
        .map(|(r, c)| {
            let k = &c.counters;
            // Times are drawn in milliseconds.
            let (value, figure) = match sort {
                Sort::Wait => {
                    (k.wait_ns_total as f64 / 1e6, format!("wait {}", fmt_ns(k.wait_ns_total as f64)))
                }
                Sort::Contended => (k.contended as f64, format!("{} contended", k.contended)),
                Sort::Hold => {
                    (k.hold_ns_total as f64 / 1e6, format!("hold {}", fmt_ns(k.hold_ns_total as f64)))
                }
                Sort::Acquisitions => (k.locked as f64, format!("{} acquisitions", k.locked)),
            };
            let text = if several {
                format!("{figure} ({} contended; {}, pid {})", k.contended, r.strategy, r.pid)
            } else {
                format!("{figure} ({} contended)", k.contended)
            };
            Bar {
                label: c.site(),
                value,
                colour: colour(&r.strategy, 0),
                text,
                tooltip: format!(
                    "pid {} class #{} ({} {}): {} of {} acquisitions contended, wait {} in all; {}",
                    r.pid,
                    c.rank,
                    c.mutexes,
                    c.kind,
                    k.contended,
                    k.locked,
                    fmt_ns(k.wait_ns_total as f64),
                    c.made_at()
                ),
            }
        })
        .collect()
}

/// The chart: for a trace, wait-time and spins histograms per strategy and the hottest
/// mutexes; for statistics reports, the hottest lock classes.
pub fn render_svg_all(t: &Trace, reports: &[ProcessReport], sort: Sort, file: &str) -> String {
    let width = 2.0 * PANEL_W + 20.0;
    let header = 70.0;
    let trace_rows = if t.events > 0 || reports.is_empty() { 2.0 } else { 0.0 };
    let report_rows = if reports.is_empty() { 0.0 } else { 1.0 };
    let height = header + (trace_rows + report_rows) * PANEL_H + 10.0;
    let strategies: Vec<&str> = t.by_strategy.keys().map(String::as_str).collect();
    let acquired: u64 = t.by_strategy.values().map(Stats::acquired).sum();
    let mut sub = String::new();
    if trace_rows > 0.0 {
        let _ = write!(
            sub,
            "{} events, {} contended acquisitions, {} mutexes",
            t.events,
            acquired,
            t.by_mutex.len()
        );
    }
    if !reports.is_empty() {
        let contended: u64 = reports.iter().map(|r| r.totals.counters.contended).sum();
        if !sub.is_empty() {
            sub.push_str("; ");
        }
        let _ = write!(
            sub,
            "statistics of {} process{}: {contended} contended acquisitions",
            reports.len(),
            if reports.len() == 1 { "" } else { "es" }
        );
    }
    if t.malformed > 0 {
        let _ = write!(sub, ", {} malformed lines skipped", t.malformed);
    }
    if t.dropped > 0 {
        let _ = write!(sub, ", {} events dropped by the writer", t.dropped);
    }
    let mut s = svg::document_start(width, height, &format!("spinmutex report: {file}"), &sub);
    let mut lx = 10.0;
    for (i, name) in strategies.iter().enumerate() {
        let n = t.by_strategy[*name].acquired();
        let text = format!("{name} ({n} contended)");
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="49" width="12" height="12" fill="{}"/><text x="{:.1}" y="59">{}</text>"#,
            colour(name, i),
            lx + 17.0,
            escape(&text)
        );
        lx += 30.0 + 6.5 * text.chars().count() as f64;
    }
    let mut y = header;
    if trace_rows > 0.0 {
        let waits: Vec<(&str, &Hist)> =
            t.by_strategy.iter().map(|(n, st)| (n.as_str(), &st.wait_hist)).collect();
        let spins: Vec<(&str, &Hist)> =
            t.by_strategy.iter().map(|(n, st)| (n.as_str(), &st.spin_hist)).collect();
        svg_hist_panel(
            &mut s,
            10.0,
            y,
            "Wait time per contended acquisition",
            "wait (log2 buckets)",
            &waits,
            |v| {
                if v == 0 {
                    "0".to_string()
                } else {
                    short_ns(v)
                }
            },
        );
        svg_hist_panel(
            &mut s,
            10.0 + PANEL_W,
            y,
            "Spins per contended acquisition",
            "pause iterations (log2 buckets)",
            &spins,
            short_count,
        );
        y += PANEL_H;
        svg_bar_panel(
            &mut s,
            10.0,
            y,
            "Hottest mutexes: contended acquisitions (by call site where a statistics report names it)",
            "contended acquisitions",
            &mutex_bars(t, &strategies),
            "no contended acquisitions",
        );
        y += PANEL_H;
    }
    if !reports.is_empty() {
        svg_bar_panel(
            &mut s,
            10.0,
            y,
            &format!("Hottest lock classes: {}, by call site", sort.describe()),
            &match sort {
                Sort::Wait | Sort::Hold => format!("{} (ms)", sort.describe()),
                _ => sort.describe().to_string(),
            },
            &class_bars(reports, sort),
            "no lock class was contended",
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The trace's chart alone.
pub fn render_svg(t: &Trace, file: &str) -> String {
    render_svg_all(t, &[], Sort::Wait, file)
}
