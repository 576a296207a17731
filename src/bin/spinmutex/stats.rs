//! Summary statistics and Welch's t-test, with the Student t distribution computed
//! from the regularised incomplete beta function (no tables).

/// Arithmetic mean; NaN for no samples.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
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
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Sample standard deviation (divisor n − 1).
pub fn stddev(xs: &[f64]) -> f64 {
    variance(xs).sqrt()
}

/// Standard deviation as a percentage of the mean.
pub fn stddev_pct(xs: &[f64]) -> f64 {
    let m = mean(xs);
    if m == 0.0 {
        return 0.0;
    }
    100.0 * stddev(xs) / m.abs()
}

/// 95% confidence interval of the mean (Student t, n − 1 degrees of freedom);
/// None for fewer than two samples.
pub fn ci95_mean(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let half = t_quantile(0.975, n - 1.0) * stddev(xs) / n.sqrt();
    let m = mean(xs);
    Some((m - half, m + half))
}

/// Welch's unequal-variance t-test of `b` against `a`.
#[derive(Debug, Clone, PartialEq)]
pub struct Welch {
    pub mean_a: f64,
    pub mean_b: f64,
    /// mean(b) − mean(a)
    pub diff: f64,
    /// Standard error of the difference.
    pub se: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    pub t: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// 95% confidence interval of `diff`.
    pub diff_ci: (f64, f64),
}

impl Welch {
    /// mean(b) / mean(a).
    pub fn ratio(&self) -> f64 {
        self.mean_b / self.mean_a
    }

    /// The 95% interval of the difference expressed as a ratio to mean(a):
    /// `(mean(a) + lo) / mean(a)` to `(mean(a) + hi) / mean(a)`. The uncertainty of
    /// both means is in the interval of the difference; the divisor is taken as exact.
    pub fn ratio_ci(&self) -> (f64, f64) {
        ((self.mean_a + self.diff_ci.0) / self.mean_a, (self.mean_a + self.diff_ci.1) / self.mean_a)
    }

    /// Significant at the 5% level (two-sided): the interval of the difference excludes 0.
    pub fn significant(&self) -> bool {
        self.p < 0.05
    }
}

/// Welch's t-test; None unless both samples have at least two values.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean(a), mean(b));
    let (qa, qb) = (variance(a) / na, variance(b) / nb);
    let se = (qa + qb).sqrt();
    let diff = mb - ma;
    if se == 0.0 {
        // Both samples constant: the difference is exact.
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        let t = if diff == 0.0 { 0.0 } else { diff.signum() * f64::INFINITY };
        return Some(Welch {
            mean_a: ma,
            mean_b: mb,
            diff,
            se,
            df: na + nb - 2.0,
            t,
            p,
            diff_ci: (diff, diff),
        });
    }
    let df = (qa + qb).powi(2) / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
    let t = diff / se;
    let p = t_two_sided_p(t, df);
    let half = t_quantile(0.975, df) * se;
    Some(Welch { mean_a: ma, mean_b: mb, diff, se, df, t, p, diff_ci: (diff - half, diff + half) })
}

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    reg_inc_beta(df / 2.0, 0.5, x).clamp(0.0, 1.0)
}

/// Cumulative distribution of Student's t.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = t_two_sided_p(t, df) / 2.0;
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile of Student's t (0 < p < 1), by bisection on the CDF.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0 && df > 0.0);
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, nine coefficients).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised incomplete beta function I_x(a, b).
fn reg_inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2); use the
    // symmetry I_x(a, b) = 1 − I_{1−x}(b, a) otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz method).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let nonzero = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    // One Lentz step for the partial numerator `num`: updates c and d, returns the factor.
    let mut step = |num: f64| {
        d = 1.0 / nonzero(1.0 + num * d);
        c = nonzero(1.0 + num / c);
        d * c
    };
    for m in 1..=300 {
        let m = m as f64;
        h *= step(m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)));
        let odd = step(-(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)));
        h *= odd;
        if (odd - 1.0).abs() < EPS {
            break;
        }
    }
    h
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
        assert!(close(stddev(&xs), (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(stddev_pct(&xs), 100.0 * (32.0f64 / 7.0).sqrt() / 5.0, 1e-9));
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert!(mean(&[]).is_nan());
        assert!(median(&[]).is_nan());
        assert_eq!(stddev(&[1.0]), 0.0);
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
        assert!(close(t_cdf(0.0, 5.0), 0.5, 1e-12));
        assert!(close(t_quantile(0.025, 4.0), -2.7764, 1e-3));
        // Cauchy (df 1) has a closed form: P(T <= 1) = 3/4.
        assert!(close(t_cdf(1.0, 1.0), 0.75, 1e-10));
    }

    #[test]
    fn ci_of_known_samples() {
        // 1..=5: mean 3, sd sqrt(2.5), half-width t(0.975,4) * sd / sqrt(5) = 1.9632.
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
        let (lo, hi) = ci95_mean(&xs).unwrap();
        assert!(close(lo, 3.0 - 1.96324, 1e-4), "{lo}");
        assert!(close(hi, 3.0 + 1.96324, 1e-4), "{hi}");
        assert!(ci95_mean(&[1.0]).is_none());
    }

    #[test]
    fn welch_known_case() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [3.0, 4.0, 5.0, 6.0, 7.0];
        let w = welch(&a, &b).unwrap();
        // Equal variances and sizes: t = 2 / sqrt(2.5/5 * 2) = 2, df = 8.
        assert!(close(w.diff, 2.0, 1e-12));
        assert!(close(w.t, 2.0, 1e-12));
        assert!(close(w.df, 8.0, 1e-12));
        // Two-sided p for t = 2 with 8 df is 0.0805.
        assert!(close(w.p, 0.08052, 1e-4), "p {}", w.p);
        assert!(!w.significant());
        let half = 2.306_004 * 1.0; // t(0.975, 8) * se, se = 1
        assert!(close(w.diff_ci.0, 2.0 - half, 1e-4));
        assert!(close(w.diff_ci.1, 2.0 + half, 1e-4));
        assert!(close(w.ratio(), 5.0 / 3.0, 1e-12));
        let (rlo, rhi) = w.ratio_ci();
        assert!(close(rlo, (3.0 + 2.0 - half) / 3.0, 1e-4));
        assert!(close(rhi, (3.0 + 2.0 + half) / 3.0, 1e-4));

        let far = [13.0, 14.0, 15.0, 16.0, 17.0];
        assert!(welch(&a, &far).unwrap().significant());
        assert!(welch(&a, &[1.0]).is_none());
    }

    #[test]
    fn welch_unequal_variances() {
        // Worked by hand: var a = 1 (n 3), b has n 6:
        // qa = 1/3, qb = var b / 6, df by the Welch–Satterthwaite formula.
        let a = [9.0, 10.0, 11.0];
        let b = [5.0, 10.0, 15.0, 20.0, 10.0, 0.0];
        let vb = variance(&b);
        let qa = 1.0 / 3.0;
        let qb = vb / 6.0;
        let want_df = (qa + qb).powi(2) / (qa * qa / 2.0 + qb * qb / 5.0);
        let w = welch(&a, &b).unwrap();
        assert!(close(w.df, want_df, 1e-9));
        assert!(close(w.se, (qa + qb).sqrt(), 1e-12));
    }

    #[test]
    fn welch_constant_samples() {
        let w = welch(&[2.0, 2.0], &[2.0, 2.0]).unwrap();
        assert_eq!(w.p, 1.0);
        assert!(!w.significant());
        let w = welch(&[2.0, 2.0], &[3.0, 3.0]).unwrap();
        assert!(w.significant());
        assert_eq!(w.ratio_ci(), (1.5, 1.5));
    }
}
