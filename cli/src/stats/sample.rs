//! What both benchmark grids (`bench` and `bench --rwlock`) read from a workload run
//! and how they compare arms: one run's `key=value` line as a [`Sample`], and a cell's
//! throughputs against the reference arm and against `none` as [`Versus`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::output::text::finite;
use crate::stats::{self, Comparison};

/// The numeric values of one run's output line.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    values: BTreeMap<String, f64>,
}

impl Sample {
    /// Parses a workload's `key=value ...` line (the last non-empty line of its stdout);
    /// the values of `words` are skipped, every other value is a number, and each of
    /// `required` must be there.
    pub fn parse(stdout: &str, required: &[&str], words: &[&str]) -> Result<Sample, String> {
        let line =
            stdout.lines().rev().find(|l| !l.trim().is_empty()).ok_or("the workload printed nothing")?;
        let mut values = BTreeMap::new();
        for pair in line.split_whitespace() {
            let (k, v) =
                pair.split_once('=').ok_or_else(|| format!("unexpected workload output '{pair}'"))?;
            if words.contains(&k) {
                continue;
            }
            let v: f64 = v.parse().map_err(|_| format!("unexpected workload value {k}={v}"))?;
            values.insert(k.to_string(), v);
        }
        match required.iter().find(|k| !values.contains_key(**k)) {
            Some(k) => Err(format!("the workload's output lacks {k}")),
            None => Ok(Sample { values }),
        }
    }

    /// A value; NaN when the line did not have it.
    pub fn get(&self, k: &str) -> f64 {
        self.values.get(k).copied().unwrap_or(f64::NAN)
    }

    pub fn ops_per_s(&self) -> f64 {
        self.get("ops_per_s")
    }

    /// CPU µs per 1000 acquisitions.
    pub fn cpu_us_per_1k(&self) -> f64 {
        self.get("cpu_s") * 1e9 / self.get("ops")
    }

    /// The fewest of `what` (`ops`, `reads`, `writes`) a thread did ÷ the mean; NaN when
    /// the mean is 0.
    pub fn fairness_of(&self, what: &str) -> f64 {
        let mean = self.get(&format!("mean_thread_{what}"));
        if mean > 0.0 {
            self.get(&format!("min_thread_{what}")) / mean
        } else {
            f64::NAN
        }
    }

    pub fn values(&self) -> &BTreeMap<String, f64> {
        &self.values
    }
}

/// A cell's good runs of one arm, each with its run number: the arms of run n ran one
/// right after another, so they met the machine in about the same state.
pub type Runs<'a> = Vec<(u64, &'a Sample)>;

/// The samples of `runs`, without their run numbers.
pub fn samples<'a>(runs: &[(u64, &'a Sample)]) -> Vec<&'a Sample> {
    runs.iter().map(|(_, s)| *s).collect()
}

/// The throughput of each of `runs`, by run number.
pub fn throughputs(runs: &[(u64, &Sample)]) -> Vec<(u64, f64)> {
    runs.iter().map(|(run, s)| (*run, s.ops_per_s())).collect()
}

/// The values of `runs`, without their run numbers.
pub fn values(runs: &[(u64, f64)]) -> Vec<f64> {
    runs.iter().map(|(_, v)| *v).collect()
}

/// The median over the runs both arms completed of `xs`' throughput ÷ `base`'s in the
/// same run.
fn paired_ratio(xs: &[(u64, f64)], base: &[(u64, f64)]) -> Option<f64> {
    let ratios: Vec<f64> = xs
        .iter()
        .filter_map(|(run, x)| base.iter().find(|(b, _)| b == run).map(|(_, y)| x / y))
        .filter(|r| r.is_finite())
        .collect();
    if ratios.is_empty() {
        return None;
    }
    finite(stats::median(&ratios))
}

/// The median of `f` over the samples, leaving out what is not finite.
pub fn median_of(samples: &[&Sample], f: &dyn Fn(&Sample) -> f64) -> f64 {
    let v: Vec<f64> = samples.iter().map(|s| f(s)).filter(|v| v.is_finite()).collect();
    stats::median(&v)
}

/// One arm's throughput in a cell against the reference arm's and against `none`'s.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Versus {
    /// Median throughput ÷ the reference's.
    pub ratio_to_reference: Option<f64>,
    /// 95% interval of the ratio of mean throughputs to the reference (Fieller).
    pub ratio_ci95: Option<[f64; 2]>,
    /// The median over the runs both completed of the throughput ÷ the reference's in
    /// the same run. Steadier than the ratio of medians when the machine changes state
    /// between runs: on a VM a cell's throughput can be bimodal for every arm, and two
    /// arms' medians can fall in different modes.
    pub paired_ratio: Option<f64>,
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
    /// Median throughput ÷ none's.
    pub ratio_to_none: Option<f64>,
    pub ratio_to_none_ci95: Option<[f64; 2]>,
    pub significant_to_none: Option<bool>,
}

impl Versus {
    /// `xs` (throughput by run number) against the reference's and none's; a side is
    /// left empty where `xs` is that arm itself (`is_reference`, `is_none`) or it has no
    /// runs.
    pub fn new(
        xs: &[(u64, f64)],
        reference: &[(u64, f64)],
        none: &[(u64, f64)],
        is_reference: bool,
        is_none: bool,
    ) -> Versus {
        let mine = values(xs);
        let against = |base: &[(u64, f64)], skip: bool| -> (Option<f64>, Option<Comparison>) {
            if skip || base.is_empty() {
                return (None, None);
            }
            let base = values(base);
            (finite(stats::median(&mine) / stats::median(&base)), stats::compare(&base, &mine))
        };
        let (ratio, cmp) = against(reference, is_reference);
        let (ratio_none, cmp_none) = against(none, is_none);
        let ci = |c: &Option<Comparison>| c.as_ref().and_then(|c| c.ratio_ci).map(|(a, b)| [a, b]);
        Versus {
            ratio_to_reference: ratio,
            ratio_ci95: ci(&cmp),
            paired_ratio: if is_reference { None } else { paired_ratio(xs, reference) },
            p_value: cmp.as_ref().and_then(|c| finite(c.p)),
            significant: cmp.as_ref().map(Comparison::significant),
            ratio_to_none: ratio_none,
            ratio_to_none_ci95: ci(&cmp_none),
            significant_to_none: cmp_none.as_ref().map(Comparison::significant),
        }
    }

    /// The per-arm table's headings for [`Self::columns`].
    pub fn header(with_none: bool) -> Vec<String> {
        let mut h: Vec<String> = ["ratio", "95% CI", "paired"].map(String::from).to_vec();
        if with_none {
            h.extend(["vs none", "95% CI"].map(String::from));
        }
        h
    }

    /// The per-arm table's columns: the ratio to the reference, its interval and the
    /// paired ratio, then (`with_none`) the ratio and interval against none.
    pub fn columns(&self, with_none: bool) -> Vec<String> {
        let ci = |ci: Option<[f64; 2]>, sig: Option<bool>| match ci {
            Some([lo, hi]) => format!("{lo:.2}–{hi:.2}{}", if sig == Some(true) { " *" } else { "" }),
            None => "-".into(),
        };
        let ratio = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.3}"));
        let mut cols = vec![
            ratio(self.ratio_to_reference),
            ci(self.ratio_ci95, self.significant),
            ratio(self.paired_ratio),
        ];
        if with_none {
            cols.push(ratio(self.ratio_to_none));
            cols.push(ci(self.ratio_to_none_ci95, self.significant_to_none));
        }
        cols
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_line_and_refuses_a_bad_one() {
        let s = Sample::parse(
            "noise\nops=10 ops_per_s=5 kind=reader min_thread_ops=2 mean_thread_ops=4\n\n",
            &["ops"],
            &["kind"],
        )
        .unwrap();
        assert_eq!((s.ops_per_s(), s.fairness_of("ops")), (5.0, 0.5));
        assert!(s.fairness_of("writes").is_nan());
        assert!(Sample::parse("", &[], &[]).is_err());
        assert!(Sample::parse("ops=x", &[], &[]).is_err());
        assert!(Sample::parse("ops=1", &["cpu_s"], &[]).is_err());
        assert!(Sample::parse("kind=reader", &[], &[]).is_err());
    }

    #[test]
    fn versus_leaves_out_the_arm_itself_and_missing_bases() {
        let v =
            Versus::new(&[(1, 2.0), (2, 2.2), (3, 1.8)], &[(1, 1.0), (2, 1.1), (3, 0.9)], &[], false, false);
        assert_eq!(v.ratio_to_reference, Some(2.0));
        assert_eq!(v.paired_ratio, Some(2.0));
        assert_eq!(v.significant, Some(true));
        assert!(v.ratio_to_none.is_none() && v.significant_to_none.is_none());
        let v = Versus::new(&[(1, 1.0), (2, 1.1)], &[(1, 1.0), (2, 1.1)], &[(1, 1.0), (2, 1.1)], true, true);
        assert!(v.ratio_to_reference.is_none() && v.ratio_to_none.is_none() && v.paired_ratio.is_none());
    }

    /// A machine that switches between two speeds from run to run: the arms' medians fall
    /// in different modes, the run-by-run ratio does not.
    #[test]
    fn the_paired_ratio_matches_runs_and_survives_a_bimodal_machine() {
        let reference = [(1, 3.0), (2, 2.0), (3, 3.0), (4, 2.0), (5, 3.0)];
        let arm = [(1, 3.0), (2, 2.0), (3, 3.0), (4, 2.0), (5, 2.0)];
        let v = Versus::new(&arm, &reference, &[], false, false);
        assert_eq!(v.ratio_to_reference, Some(2.0 / 3.0));
        assert_eq!(v.paired_ratio, Some(1.0));
        // Runs that only one arm completed are left out.
        let v = Versus::new(&[(1, 2.0), (7, 100.0)], &[(1, 1.0), (8, 1.0)], &[], false, false);
        assert_eq!(v.paired_ratio, Some(2.0));
        let v = Versus::new(&[(7, 100.0)], &[(8, 1.0)], &[], false, false);
        assert_eq!(v.paired_ratio, None);
    }
}
