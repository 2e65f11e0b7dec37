//! Statistics over runs: Student's t quantiles (written here, no
//! dependency), means with 95% confidence intervals, and the ratio of two
//! means with a delta-method interval.

use serde::{Deserialize, Serialize};

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, n = 9; relative error
/// below 1e-13 over the range used here).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
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
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    // Lentz's guard: a denominator that vanishes is replaced by a tiny one.
    let nz = |v: f64| if v.abs() < 1e-300 { 1e-300 } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / nz(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=500 {
        let m = m as f64;
        let m2 = 2.0 * m;
        // Even step, then odd step, of the fraction's terms.
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / nz(1.0 + aa * d);
        c = nz(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / nz(1.0 + aa * d);
        c = nz(1.0 + aa / c);
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_bt = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let bt = ln_bt.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        bt * beta_cf(a, b, x) / a
    } else {
        1.0 - bt * beta_cf(b, a, 1.0 - x) / b
    }
}

/// The CDF of Student's t distribution with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if df.is_infinite() {
        return normal_cdf(t);
    }
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The standard normal CDF, via erfc (W. J. Cody's rational Chebyshev
/// approximation as given in Numerical Recipes `erfcc`, |error| < 1.2e-7).
pub fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let erfc = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (`df` may be
/// `f64::INFINITY` for the normal distribution). Found by bisection on
/// [`t_cdf`] to 1e-10.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) || p.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let mut hi = 1.0;
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-10 {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// JSON has no NaN: serde_json writes it as `null`; this reads `null`
/// back as NaN.
pub fn f64_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Mean, spread and 95% confidence interval of a sample (the runs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    #[serde(deserialize_with = "f64_or_nan")]
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator); 0 for n = 1.
    #[serde(deserialize_with = "f64_or_nan")]
    pub stddev: f64,
    /// Half-width of the 95% CI: t(0.975, n − 1) · s / √n; `null` (NaN)
    /// for n = 1.
    #[serde(deserialize_with = "f64_or_nan")]
    pub ci95: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub min: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub max: f64,
}

impl Summary {
    pub fn of(xs: &[f64]) -> Summary {
        let n = xs.len();
        if n == 0 {
            return Summary {
                n,
                mean: f64::NAN,
                stddev: f64::NAN,
                ci95: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let stddev = var.sqrt();
        let ci95 = if n > 1 {
            t_quantile(0.975, (n - 1) as f64) * stddev / (n as f64).sqrt()
        } else {
            f64::NAN
        };
        Summary {
            n,
            mean,
            stddev,
            ci95,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// The ratio of two means B/A with a 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// Welch–Satterthwaite degrees of freedom used for the t quantile.
    pub df: f64,
}

/// B/A with the delta method: Var(r) ≈ r² (s_B²/(n_B m_B²) + s_A²/(n_A m_A²)),
/// interval r ± t(0.975, ν) √Var with ν from Welch–Satterthwaite on the two
/// relative variances. With fewer than two runs on either side the
/// interval is NaN (unknown).
pub fn ratio(a: &Summary, b: &Summary) -> Ratio {
    let r = b.mean / a.mean;
    if a.n < 2 || b.n < 2 || a.mean == 0.0 || b.mean == 0.0 {
        return Ratio {
            ratio: r,
            low: f64::NAN,
            high: f64::NAN,
            df: f64::NAN,
        };
    }
    let va = a.stddev.powi(2) / (a.n as f64 * a.mean.powi(2));
    let vb = b.stddev.powi(2) / (b.n as f64 * b.mean.powi(2));
    let var = r * r * (va + vb);
    let df = if va + vb == 0.0 {
        f64::INFINITY
    } else {
        (va + vb).powi(2) / (va.powi(2) / (a.n - 1) as f64 + vb.powi(2) / (b.n - 1) as f64)
    };
    let half = t_quantile(0.975, df) * var.sqrt();
    Ratio {
        ratio: r,
        low: r - half,
        high: r + half,
        df,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_published_table() {
        // Two-sided 95% (t_{0.975}) from standard tables.
        let table = [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (4.0, 2.776),
            (5.0, 2.571),
            (10.0, 2.228),
            (20.0, 2.086),
            (30.0, 2.042),
            (120.0, 1.980),
            (f64::INFINITY, 1.960),
        ];
        for (df, want) in table {
            let got = t_quantile(0.975, df);
            assert!((got - want).abs() < 0.0015, "df {df}: {got} vs {want}");
        }
        // One-sided 95% and 99.5%.
        assert!((t_quantile(0.95, 1.0) - 6.314).abs() < 0.001);
        assert!((t_quantile(0.995, 10.0) - 3.169).abs() < 0.001);
        assert!((t_quantile(0.025, 5.0) + 2.571).abs() < 0.001);
        assert_eq!(t_quantile(0.5, 7.0), 0.0);
        // Very large df approaches the normal quantile.
        assert!((t_quantile(0.975, 1e7) - 1.95996).abs() < 0.001);
    }

    #[test]
    fn t_cdf_is_symmetric_and_known() {
        assert!((t_cdf(0.0, 3.0) - 0.5).abs() < 1e-12);
        // df = 1 is Cauchy: F(1) = 0.75.
        assert!((t_cdf(1.0, 1.0) - 0.75).abs() < 1e-9);
        assert!((t_cdf(-1.0, 1.0) - 0.25).abs() < 1e-9);
        assert!((normal_cdf(1.959964) - 0.975).abs() < 1e-6);
    }

    #[test]
    fn summary_and_ci() {
        let s = Summary::of(&[10.0, 12.0, 14.0]);
        assert_eq!(s.n, 3);
        assert!((s.mean - 12.0).abs() < 1e-12);
        assert!((s.stddev - 2.0).abs() < 1e-12);
        // 4.303 * 2 / sqrt(3)
        assert!((s.ci95 - 4.303 * 2.0 / 3f64.sqrt()).abs() < 0.01);
        let one = Summary::of(&[5.0]);
        assert!(one.ci95.is_nan());
        assert_eq!(one.stddev, 0.0);
        // NaN goes to JSON as null and comes back as NaN.
        let j = serde_json::to_string(&one).unwrap();
        assert!(j.contains("\"ci95\":null"), "{j}");
        let back: Summary = serde_json::from_str(&j).unwrap();
        assert!(back.ci95.is_nan() && back.mean == 5.0);
    }

    #[test]
    fn ratio_interval_covers_the_ratio() {
        let a = Summary::of(&[100.0, 102.0, 98.0, 101.0, 99.0]);
        let b = Summary::of(&[200.0, 204.0, 196.0, 202.0, 198.0]);
        let r = ratio(&a, &b);
        assert!((r.ratio - 2.0).abs() < 1e-12);
        assert!(r.low < 2.0 && r.high > 2.0);
        assert!(r.high - r.low < 0.1);
        let same = ratio(&a, &a);
        assert!((same.ratio - 1.0).abs() < 1e-12);
        let single = ratio(&Summary::of(&[1.0]), &Summary::of(&[2.0]));
        assert!(single.low.is_nan());
    }
}
