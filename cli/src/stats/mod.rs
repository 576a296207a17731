//! The statistics layer: summary statistics, Welch's t-test, Fieller's interval for a
//! ratio of means, and how many runs a comparison would need (here; distributions come
//! from `statrs`); a workload run's figures and how arms compare ([`sample`]); the
//! `--metric` taken from a command's output ([`metric`]); and the library's lock
//! statistics reports, read and shown ([`lockstats`]).

pub mod lockstats;
pub mod metric;
pub mod sample;

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use statrs::statistics::Statistics;

/// Arithmetic mean; NaN for no samples.
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().mean()
}

/// Median (mean of the two middle samples for an even count); NaN for no samples.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Sample variance (divisor n − 1); 0 for fewer than two samples.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        0.0
    } else {
        xs.iter().variance()
    }
}

/// Sample standard deviation (divisor n − 1).
pub fn stddev(xs: &[f64]) -> f64 {
    variance(xs).sqrt()
}

/// Standard deviation as a percentage of the mean; NaN for fewer than two samples.
pub fn stddev_pct(xs: &[f64]) -> f64 {
    let m = mean(xs);
    if xs.len() < 2 || m == 0.0 {
        return f64::NAN;
    }
    100.0 * stddev(xs) / m.abs()
}

/// The `p` quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

/// 95% confidence interval of the mean (Student t, n − 1 degrees of freedom).
pub fn ci95_mean(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let half = t_quantile(0.975, n - 1.0) * stddev(xs) / n.sqrt();
    let m = mean(xs);
    Some((m - half, m + half))
}

/// Fieller's confidence interval for the ratio `num / den` of two independent means,
/// given their standard errors and the critical value `t` of Student's distribution
/// (E. C. Fieller, "The biological standardization of insulin", Suppl. J. R. Statist.
/// Soc. 7, 1940; with no covariance term). It is the set of ratios θ for which
/// `num − θ·den` is not significantly different from zero:
/// `(num − θ·den)² ≤ t² (se_num² + θ² se_den²)`.
///
/// Unlike the difference of means divided by the baseline, it accounts for the
/// baseline's own uncertainty. None when the denominator's mean is not significantly different from zero
/// (`g = t² se_den² / den² ≥ 1`): the ratio then has no bounded interval.
pub fn fieller(num: f64, se_num: f64, den: f64, se_den: f64, t: f64) -> Option<(f64, f64)> {
    let g = (t * se_den / den).powi(2);
    if !g.is_finite() || g >= 1.0 {
        return None;
    }
    let q = num / den;
    let half = t / den.abs() * (se_num * se_num * (1.0 - g) + q * q * se_den * se_den).sqrt();
    let (lo, hi) = ((q - half) / (1.0 - g), (q + half) / (1.0 - g));
    Some((lo.min(hi), lo.max(hi)))
}

/// Two samples compared: Welch's t-test of the difference of their means, and the 95%
/// interval of the ratio of their means by Fieller's method with Welch's degrees of
/// freedom, so that the interval excludes 1 exactly when the test is significant.
/// When no sample is negative (times, rates) the ratio cannot be either, and a lower
/// bound below zero (a numerator as noisy as its own mean) is reported as 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub mean_base: f64,
    pub mean: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value of Welch's test.
    pub p: f64,
    /// 95% interval of mean / mean_base; None when unbounded.
    pub ratio_ci: Option<(f64, f64)>,
    /// Stddev in % of the mean of each sample.
    pub cv_base_pct: f64,
    pub cv_pct: f64,
}

impl Comparison {
    /// mean / mean_base.
    pub fn ratio(&self) -> f64 {
        self.mean / self.mean_base
    }

    /// Significant at the 5% level (two-sided).
    pub fn significant(&self) -> bool {
        self.p < 0.05
    }

    /// Runs per sample that would detect a 5% difference, for a display when this
    /// comparison's interval is wider than that.
    pub fn runs_for_5pct(&self) -> Option<u64> {
        runs_needed(self.cv_base_pct, self.cv_pct, 5.0)
    }
}

/// Compares `xs` with the baseline `base`; None unless both have at least two values
/// and the baseline's mean is not zero.
pub fn compare(base: &[f64], xs: &[f64]) -> Option<Comparison> {
    if base.len() < 2 || xs.len() < 2 {
        return None;
    }
    let (na, nb) = (base.len() as f64, xs.len() as f64);
    let (ma, mb) = (mean(base), mean(xs));
    if ma == 0.0 {
        return None;
    }
    let (qa, qb) = (variance(base) / na, variance(xs) / nb);
    let se = (qa + qb).sqrt();
    let diff = mb - ma;
    let (df, p, ratio_ci) = if se == 0.0 {
        // Both samples constant: the difference and the ratio are exact.
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        (na + nb - 2.0, p, Some((mb / ma, mb / ma)))
    } else {
        let df = (qa + qb).powi(2) / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
        let t = StudentsT::new(0.0, 1.0, df).ok();
        let p = t.as_ref().map_or(f64::NAN, |t| 2.0 * t.cdf(-(diff / se).abs()));
        let crit = t.map_or(f64::NAN, |t| t.inverse_cdf(0.975));
        let nonnegative = base.iter().chain(xs).all(|&x| x >= 0.0);
        let ci = fieller(mb, qb.sqrt(), ma, qa.sqrt(), crit).map(|(lo, hi)| {
            if nonnegative {
                (lo.max(0.0), hi.max(0.0))
            } else {
                (lo, hi)
            }
        });
        (df, p, ci)
    };
    Some(Comparison {
        mean_base: ma,
        mean: mb,
        df,
        p,
        ratio_ci,
        cv_base_pct: stddev_pct(base),
        cv_pct: stddev_pct(xs),
    })
}

/// Runs per sample for a two-sided 5%-level test to detect a difference of `delta_pct`
/// percent of the mean with 80% power, for samples whose stddevs are the given
/// percentages of their means (normal approximation:
/// n = (z₀.₉₇₅ + z₀.₈)² (cv₁² + cv₂²) / δ²). None when a stddev is unknown.
pub fn runs_needed(cv1_pct: f64, cv2_pct: f64, delta_pct: f64) -> Option<u64> {
    if !(cv1_pct.is_finite() && cv2_pct.is_finite()) || delta_pct <= 0.0 {
        return None;
    }
    let z = Normal::new(0.0, 1.0).ok()?;
    let k = z.inverse_cdf(0.975) + z.inverse_cdf(0.8);
    let n = (k * k * (cv1_pct * cv1_pct + cv2_pct * cv2_pct) / (delta_pct * delta_pct)).ceil();
    Some((n as u64).max(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn mean_median_stddev_of_known_samples() {
        // The classic example: mean 5, population sd 2, sample sd sqrt(32/7).
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        assert_eq!(median(&xs), 4.5);
        assert!(close(variance(&xs), 32.0 / 7.0, 1e-12));
        assert!(close(stddev_pct(&xs), 100.0 * (32.0f64 / 7.0).sqrt() / 5.0, 1e-9));
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert!(mean(&[]).is_nan() && median(&[]).is_nan());
        assert_eq!(stddev(&[1.0]), 0.0);
        assert!(stddev_pct(&[1.0]).is_nan());
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Two-sided 95% critical values from any t table.
        for (df, want) in
            [(1.0, 12.7062), (2.0, 4.3027), (4.0, 2.7764), (9.0, 2.2622), (30.0, 2.0423), (1000.0, 1.9623)]
        {
            let got = t_quantile(0.975, df);
            assert!(close(got, want, 1e-3), "df {df}: {got} vs {want}");
        }
        let (lo, hi) = ci95_mean(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert!(close(lo, 3.0 - 1.96324, 1e-4) && close(hi, 3.0 + 1.96324, 1e-4));
    }

    /// The worked example of GraphPad's QuickCalcs "CI of a sum, difference, quotient or
    /// product" (H. Motulsky, after Fieller 1940): A has mean 14, SD 3, n 6; B has mean
    /// 7, SD 2, n 6; A/B = 2.00 with 90% CI 1.54–2.64, 95% CI 1.46–2.83 and 99% CI
    /// 1.27–3.36, computed with n_A + n_B − 2 = 10 degrees of freedom.
    #[test]
    fn fieller_matches_the_published_example() {
        let (se_a, se_b) = (3.0 / 6f64.sqrt(), 2.0 / 6f64.sqrt());
        for (level, lo, hi) in [(0.90, 1.54, 2.64), (0.95, 1.46, 2.83), (0.99, 1.27, 3.36)] {
            let t = t_quantile(1.0 - (1.0 - level) / 2.0, 10.0);
            let (l, h) = fieller(14.0, se_a, 7.0, se_b, t).unwrap();
            assert!(close(l, lo, 0.005) && close(h, hi, 0.005), "{level}: {l:.3}–{h:.3}, want {lo}–{hi}");
        }
        // A denominator indistinguishable from zero: no bounded interval.
        assert_eq!(fieller(14.0, se_a, 1.0, 2.0, 2.228), None);
    }

    #[test]
    fn ratio_intervals_never_leave_the_positive_axis() {
        // A noisy sample against a baseline: dividing the difference's interval by the
        // baseline's mean gave negative lower bounds ("95% CI -0.818 to 2.623").
        let base = [1.0, 1.2, 0.8, 1.1, 0.9];
        let noisy = [0.2, 2.5, 0.3, 0.4, 1.6];
        let c = compare(&base, &noisy).unwrap();
        let (lo, hi) = c.ratio_ci.unwrap();
        assert!(lo == 0.0 && c.ratio() < hi, "{lo} {hi}");
        assert!(!c.significant());
        let moderate = [0.8, 1.3, 0.9, 1.2, 1.0];
        let (lo, hi) = compare(&base, &moderate).unwrap().ratio_ci.unwrap();
        assert!(lo > 0.0 && lo < 1.0 && hi > 1.0, "{lo} {hi}");
    }

    #[test]
    fn welch_known_case() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [3.0, 4.0, 5.0, 6.0, 7.0];
        let c = compare(&a, &b).unwrap();
        // Equal variances and sizes: t = 2, df = 8; two-sided p = 0.0805.
        assert!(close(c.df, 8.0, 1e-9));
        assert!(close(c.p, 0.08052, 1e-4), "p {}", c.p);
        assert!(!c.significant());
        let (lo, hi) = c.ratio_ci.unwrap();
        assert!(lo < 1.0 && hi > 1.0, "not significant: the interval holds 1 ({lo}, {hi})");
        let far = [13.0, 14.0, 15.0, 16.0, 17.0];
        let c = compare(&a, &far).unwrap();
        assert!(c.significant() && c.ratio_ci.unwrap().0 > 1.0);
        assert!(compare(&a, &[1.0]).is_none());
    }

    #[test]
    fn constant_samples_are_exact() {
        assert_eq!(compare(&[2.0, 2.0], &[2.0, 2.0]).unwrap().p, 1.0);
        let c = compare(&[2.0, 2.0], &[3.0, 3.0]).unwrap();
        assert!(c.significant());
        assert_eq!(c.ratio_ci, Some((1.5, 1.5)));
    }

    #[test]
    fn runs_needed_for_a_difference() {
        // 5% stddev on both sides, 5% difference: 7.85 × 2 = 15.7 → 16 runs.
        assert_eq!(runs_needed(5.0, 5.0, 5.0), Some(16));
        assert_eq!(runs_needed(1.0, 1.0, 5.0), Some(2));
        assert_eq!(runs_needed(f64::NAN, 1.0, 5.0), None);
    }
}
