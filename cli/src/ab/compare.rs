//! What `ab` compares (wall time, CPU time, the metric) and how it says it: each
//! comparison as a record and in words, and the text report.

use std::fmt::Write as _;
use std::path::Path;

use crate::output::text::{self, finite, Table};
use crate::stats::metric::{self, Direction};
use crate::stats::Comparison;

use super::*;

pub(super) fn metric_direction(a: &AbArgs, runs: &[Run]) -> (Direction, String) {
    if a.higher_is_better {
        return (Direction::HigherIsBetter, "--higher-is-better".into());
    }
    if a.lower_is_better {
        return (Direction::LowerIsBetter, "--lower-is-better".into());
    }
    match (&a.metric, runs.iter().find_map(|r| r.metric.as_ref())) {
        (Some(m), Some(found)) => metric::infer(m.source(), found),
        _ => (Direction::Unknown, "no run produced the metric".into()),
    }
}

pub(super) fn quantities(a: &AbArgs, direction: Direction) -> Vec<Quantity> {
    let mut q = vec![
        Quantity {
            key: "wall_s",
            label: "wall time",
            direction: Direction::LowerIsBetter,
            get: |r| r.error.is_none().then_some(r.wall_s),
            time: true,
        },
        Quantity {
            key: "cpu_s",
            label: "CPU time",
            direction: Direction::LowerIsBetter,
            get: |r| r.error.is_none().then_some(r.cpu_s),
            time: true,
        },
    ];
    if a.metric.is_some() {
        q.push(Quantity {
            key: "metric",
            label: "metric",
            direction,
            get: |r| r.metric.as_ref().map(|f| f.value),
            time: false,
        });
    }
    q
}

pub(super) fn samples(runs: &[Run], arm: usize, get: fn(&Run) -> Option<f64>) -> Vec<f64> {
    runs.iter().filter(|r| r.arm == arm).filter_map(get).collect()
}

/// A p-value as people read it: `p = 0.012`, `p < 0.001`.
pub(super) fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// A percentage range `8.1–16.5%`.
pub(super) fn range(lo: f64, hi: f64) -> String {
    format!("{:.1}–{:.1}%", lo.min(hi), lo.max(hi))
}

/// The comparison of `arm` with `base` for quantity `q`, in words and numbers.
pub(super) fn record(arm: &str, base: &str, q: &Quantity, c: Option<&Comparison>) -> ComparisonRecord {
    let Some(c) = c else {
        return ComparisonRecord {
            strategy: arm.into(),
            baseline: base.into(),
            ratio: None,
            ratio_ci95: None,
            p_value: None,
            significant: None,
            better: None,
            runs_for_5pct: None,
            verdict: format!("{arm} vs {base}: not enough successful runs to compare (2 of each needed)"),
        };
    };
    let r = c.ratio();
    let p = c.p;
    let significant = c.significant();
    // The change in the quantity's good direction (for an unknown direction: upwards).
    let (good, label_up, label_down) = match q.direction {
        Direction::LowerIsBetter => (-1.0, "", ""),
        Direction::HigherIsBetter => (1.0, "", ""),
        Direction::Unknown => (1.0, "higher", "lower"),
    };
    let gain = |ratio: f64| good * (ratio - 1.0) * 100.0;
    let pct = gain(r).abs();
    let ci_pct = c.ratio_ci.map(|(lo, hi)| (gain(lo), gain(hi)));
    let better = (significant && q.direction != Direction::Unknown).then(|| gain(r) > 0.0);
    let runs_for_5pct = c.runs_for_5pct();
    let verdict = if significant {
        let ci = match ci_pct {
            Some((a, b)) => format!("95% CI {}", range(a.abs(), b.abs())),
            None => "95% CI unbounded".into(),
        };
        let sentence = match (q.direction, q.time, q.label, gain(r) > 0.0) {
            (Direction::Unknown, _, _, up) => format!(
                "{arm}'s {} is {pct:.1}% {} than {base}'s ({ci}), significant (Welch {}); which is \
                 better is unknown: pass --higher-is-better or --lower-is-better",
                q.label,
                if up { label_up } else { label_down },
                fmt_p(p)
            ),
            (_, true, "CPU time", b) => format!(
                "{arm} uses {pct:.1}% {} CPU than {base} ({ci}), significant (Welch {})",
                if b { "less" } else { "more" },
                fmt_p(p)
            ),
            (_, true, _, b) => format!(
                "{arm} is {pct:.1}% {} than {base} ({ci}), significant (Welch {})",
                if b { "faster" } else { "slower" },
                fmt_p(p)
            ),
            (d, false, _, b) => format!(
                "{arm} is {pct:.1}% {} than {base} ({} {}, {ci}), significant (Welch {})",
                if b { "better" } else { "worse" },
                q.label,
                if (d == Direction::HigherIsBetter) == b { "higher" } else { "lower" },
                fmt_p(p)
            ),
        };
        sentence
    } else {
        let change = match c.ratio_ci {
            Some((lo, hi)) => {
                format!(
                    "95% CI of the change in {}: {:+.1}% to {:+.1}%",
                    q.label,
                    (lo - 1.0) * 100.0,
                    (hi - 1.0) * 100.0
                )
            }
            None => "the 95% interval is unbounded".into(),
        };
        let wide = c.ratio_ci.is_none_or(|(lo, hi)| (hi - lo) / 2.0 > 0.05);
        let more = match (wide, runs_for_5pct) {
            (true, Some(n)) => format!("; about {n} runs per arm would resolve a 5% difference"),
            _ => String::new(),
        };
        format!(
            "{arm} vs {base}: no difference detectable at this noise ({change}, Welch {}){more}",
            fmt_p(p)
        )
    };
    ComparisonRecord {
        strategy: arm.into(),
        baseline: base.into(),
        ratio: finite(r),
        ratio_ci95: c.ratio_ci.map(|(l, h)| [l, h]),
        p_value: finite(p),
        significant: Some(significant),
        better,
        runs_for_5pct,
        verdict,
    }
}

pub(super) fn render(
    r: &AbReport,
    quantities: &[Quantity],
    lib: &Path,
    failed: &[&Run],
    no_metric: &[&Run],
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\ncommand: {}", r.command.join(" "));
    if let (Some(m), Some(d), Some(why)) = (&r.metric, r.metric_direction, &r.metric_direction_reason) {
        let _ = writeln!(out, "metric: {m} ({}: {why})", d.describe());
    }
    let _ = writeln!(out, "arms (the settings each reported when it loaded):");
    let width = r.arms.iter().map(|a| a.name.len()).max().unwrap_or(0);
    for arm in &r.arms {
        let what = match (&arm.effective, arm.preload) {
            (_, false) => "no preload: the program alone".to_string(),
            (Some(e), true) => format!("{} {}: {}", lib.display(), e.version, e.describe()),
            (None, true) => "no measured run".to_string(),
        };
        let _ = writeln!(out, "  {:width$}  {what}", arm.name);
    }
    let loaded: Vec<&str> = r.arms.iter().flat_map(|a| a.loaded_in.iter().map(String::as_str)).collect();
    if !loaded.is_empty() {
        let mut unique: Vec<&str> = Vec::new();
        for l in loaded {
            if !unique.contains(&l) {
                unique.push(l);
            }
        }
        let _ = writeln!(out, "  (the library loaded in: {})", unique.join(", "));
    }
    for q in quantities {
        let mut t = Table::new(1);
        t.header.push(vec![
            q.label.to_string(),
            "ok".into(),
            "mean".into(),
            "median".into(),
            "stddev".into(),
        ]);
        let fmt = |v: Option<f64>| match v {
            Some(v) if q.time => text::seconds(v),
            Some(v) => text::fixed(v),
            None => "-".into(),
        };
        for s in &r.summary[q.key] {
            let attempted = r.runs.iter().filter(|run| run.strategy == s.strategy).count();
            t.rows.push(vec![
                s.strategy.clone(),
                format!("{}/{attempted}", s.n),
                fmt(s.mean),
                fmt(s.median),
                s.stddev_pct.map_or("-".into(), |p| format!("{p:.1}%")),
            ]);
        }
        out.push('\n');
        out.push_str(&t.render());
        for c in &r.comparisons[q.key] {
            let _ = writeln!(out, "  {}", c.verdict);
        }
    }
    if r.arms.iter().any(|a| a.name == "none") && r.arms.iter().any(|a| a.name == "glibc") {
        let _ = writeln!(
            out,
            "\nglibc against none is the preload's own cost: under glibc every call goes through \
             libspinmutex.so to glibc's mutex."
        );
    }
    let _ = writeln!(
        out,
        "For times, \"X% faster\" means X% less time. Intervals are 95% intervals of the ratio of \
         means (Fieller); \"significant\" means Welch's t-test gives p < 0.05."
    );
    if !r.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in &r.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    if !failed.is_empty() {
        let _ = writeln!(out, "\n{} failed run(s), left out of the statistics:", failed.len());
        for run in failed {
            let _ = writeln!(
                out,
                "  {} run {}: {}",
                r.strategies[run.arm],
                run.index,
                run.error.as_deref().unwrap_or("")
            );
        }
    }
    if !no_metric.is_empty() {
        let _ = writeln!(
            out,
            "\n{} run(s) without the metric (their wall and CPU times count):",
            no_metric.len()
        );
        for run in no_metric {
            let _ = writeln!(
                out,
                "  {} run {}: {}",
                r.strategies[run.arm],
                run.index,
                run.metric_error.as_deref().unwrap_or("")
            );
        }
    }
    out
}
