//! Two-level factorial experiment designs: the full 2^k·r design and the
//! fractional 2^(k-p)·r one, with their analysis (main effects and
//! interactions, their confidence intervals, the allocation of
//! variation), as in Jain, *The Art of Computer Systems Performance
//! Analysis*, chapters 17 to 19, which the wide-area NFS study
//! (seeds/003, §4) applies to NFS.
//!
//! Factors are letters A, B, C ... in the order given. An effect is a
//! word: a set of factors, kept as a bit mask (bit i: factor i), whose
//! sign in a run is the product of its factors' levels (-1 or +1). The
//! first k-p factors are the base: their 2^(k-p) combinations are the
//! runs, in standard order (A alternates fastest). Each of the other p
//! factors is generated as a word of base factors ("D=AB": D's level is
//! A's times B's), which confounds it with that word: the defining
//! relation is the group of words I = ABD ... made from the generators,
//! every estimated effect is the sum of its aliases (its word times each
//! word of the relation), and the design's resolution is the length of
//! the shortest word in the relation.

use crate::stats::t_quantile;

/// Most factors a design may have.
pub const MAX_FACTORS: usize = 16;

/// A design: k factors, p of them generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Design {
    pub k: usize,
    /// For each generated factor (k-p .. k), its word over the base.
    pub generators: Vec<u32>,
}

/// The letter of factor `i`.
pub fn letter(i: usize) -> char {
    (b'A' + i as u8) as char
}

/// "AB", "ACD"; "I" for the empty word.
pub fn word_name(w: u32) -> String {
    if w == 0 {
        return "I".into();
    }
    (0..32).filter(|i| w >> i & 1 == 1).map(letter).collect()
}

fn parse_word(s: &str, k: usize) -> Result<u32, String> {
    let mut w = 0u32;
    for c in s.trim().chars() {
        let i = (c.to_ascii_uppercase() as u32).wrapping_sub('A' as u32) as usize;
        if i >= k {
            return Err(format!("{s:?}: {c} is not one of the {k} factors"));
        }
        if w >> i & 1 == 1 {
            return Err(format!("{s:?}: {c} twice"));
        }
        w |= 1 << i;
    }
    Ok(w)
}

impl Design {
    /// The full 2^k design.
    pub fn full(k: usize) -> Result<Design, String> {
        Design::fractional(k, &[])
    }

    /// A 2^(k-p) design with the generators given, as "D=AB", one per
    /// generated factor: the last p factors, in order, each a word of at
    /// least two base factors.
    pub fn fractional(k: usize, generators: &[&str]) -> Result<Design, String> {
        if k == 0 || k > MAX_FACTORS {
            return Err(format!("{k} factors: between 1 and {MAX_FACTORS}"));
        }
        let p = generators.len();
        if p >= k {
            return Err(format!("{p} generators for {k} factors leave no base"));
        }
        let base = k - p;
        let mut gens = Vec::with_capacity(p);
        for (j, g) in generators.iter().enumerate() {
            let (lhs, rhs) = g
                .split_once('=')
                .ok_or_else(|| format!("generator {g:?}: expected FACTOR=WORD, as D=AB"))?;
            let f = parse_word(lhs, k)?;
            let want = 1u32 << (base + j);
            if f != want {
                return Err(format!(
                    "generator {g:?}: the generators define the last factors in order, here {}",
                    letter(base + j)
                ));
            }
            let w = parse_word(rhs, k)?;
            if w >> base != 0 {
                return Err(format!(
                    "generator {g:?}: use base factors only (A to {})",
                    letter(base - 1)
                ));
            }
            if w.count_ones() < 2 {
                return Err(format!(
                    "generator {g:?}: a word of two or more base factors"
                ));
            }
            if gens.contains(&w) {
                return Err(format!(
                    "generator {g:?}: the same word as another generator"
                ));
            }
            gens.push(w);
        }
        Ok(Design {
            k,
            generators: gens,
        })
    }

    /// The 2^(k-p) design of highest resolution (then fewest words of
    /// that length in its defining relation), found by trying every
    /// choice of generators.
    pub fn best(k: usize, p: usize) -> Result<Design, String> {
        if p == 0 {
            return Design::full(k);
        }
        if p >= k || k > MAX_FACTORS {
            return Err(format!("a 2^({k}-{p}) design does not exist"));
        }
        let base = k - p;
        let words: Vec<u32> = (1u32..1 << base).filter(|w| w.count_ones() >= 2).collect();
        if words.len() < p {
            return Err(format!(
                "a 2^({k}-{p}) design does not exist: {base} base factors have only {} interactions",
                words.len()
            ));
        }
        let mut best: Option<(usize, usize, Vec<u32>)> = None;
        let mut pick = vec![0usize; p];
        let mut tried = 0u64;
        // Combinations of p words, in increasing index order.
        fn next(pick: &mut [usize], n: usize) -> bool {
            let p = pick.len();
            for i in (0..p).rev() {
                if pick[i] < n - (p - i) {
                    pick[i] += 1;
                    for j in i + 1..p {
                        pick[j] = pick[j - 1] + 1;
                    }
                    return true;
                }
            }
            false
        }
        for (i, x) in pick.iter_mut().enumerate() {
            *x = i;
        }
        loop {
            tried += 1;
            if tried > 2_000_000 {
                return Err(format!(
                    "too many 2^({k}-{p}) designs to search: give the generators"
                ));
            }
            let gens: Vec<u32> = pick.iter().map(|&i| words[i]).collect();
            let d = Design {
                k,
                generators: gens,
            };
            let rel = d.defining_relation();
            let res = rel
                .iter()
                .skip(1)
                .map(|w| w.count_ones() as usize)
                .min()
                .unwrap_or(k);
            let short = rel
                .iter()
                .filter(|w| w.count_ones() as usize == res)
                .count();
            if best
                .as_ref()
                .is_none_or(|(r, s, _)| res > *r || (res == *r && short < *s))
            {
                best = Some((res, short, d.generators.clone()));
            }
            if !next(&mut pick, words.len()) {
                break;
            }
        }
        let (_, _, generators) = best.expect("at least one design");
        Ok(Design { k, generators })
    }

    pub fn p(&self) -> usize {
        self.generators.len()
    }

    pub fn base(&self) -> usize {
        self.k - self.p()
    }

    /// Distinct runs (rows of the sign table).
    pub fn runs(&self) -> usize {
        1 << self.base()
    }

    /// The level (-1 or +1) of each factor in run `row`.
    pub fn levels(&self, row: usize) -> Vec<i8> {
        let base = self.base();
        let mut out: Vec<i8> = (0..base)
            .map(|i| if row >> i & 1 == 1 { 1 } else { -1 })
            .collect();
        for &g in &self.generators {
            out.push(self.sign(g, row));
        }
        out
    }

    /// The sign of base word `w` in run `row`.
    fn sign(&self, w: u32, row: usize) -> i8 {
        let minus = (0..self.base())
            .filter(|&i| w >> i & 1 == 1 && row >> i & 1 == 0)
            .count();
        if minus % 2 == 0 {
            1
        } else {
            -1
        }
    }

    /// The defining relation: I and the products of the generators'
    /// words (each with its generated factor), 2^p words.
    pub fn defining_relation(&self) -> Vec<u32> {
        let base = self.base();
        let defining: Vec<u32> = self
            .generators
            .iter()
            .enumerate()
            .map(|(j, &g)| g | 1 << (base + j))
            .collect();
        let mut rel = vec![0u32];
        for d in defining {
            let more: Vec<u32> = rel.iter().map(|w| w ^ d).collect();
            rel.extend(more);
        }
        rel
    }

    /// The length of the shortest word of the defining relation (none:
    /// a full design, where nothing is confounded).
    pub fn resolution(&self) -> Option<usize> {
        self.defining_relation()
            .iter()
            .skip(1)
            .map(|w| w.count_ones() as usize)
            .min()
    }

    /// The effects the design estimates, one per column of the sign
    /// table (I first): each the list of its aliases, shortest first,
    /// the first being the name it is reported by.
    pub fn effects(&self) -> Vec<Vec<u32>> {
        let rel = self.defining_relation();
        (0u32..1 << self.base())
            .map(|col| {
                // The column's word among all k factors: itself, whose
                // aliases are it times each word of the relation.
                let mut aliases: Vec<u32> = rel.iter().map(|r| col ^ r).collect();
                aliases.sort_by_key(|w| (w.count_ones(), word_name(*w)));
                aliases.dedup();
                aliases
            })
            .collect()
    }
}

/// One estimated effect.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Effect {
    /// "I" for the mean, "A", "AB" ...
    pub name: String,
    /// The other effects it cannot be told from (fractional designs).
    pub aliases: Vec<String>,
    pub estimate: f64,
    /// The confidence interval (none without replications).
    pub ci: Option<(f64, f64)>,
    /// Whether the interval leaves out zero.
    pub significant: Option<bool>,
    /// The share of the total variation it explains, 0 to 1 (none for
    /// the mean).
    pub variation: Option<f64>,
}

/// A design's analysis.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Analysis {
    /// q0 first, then every other effect in column order.
    pub effects: Vec<Effect>,
    /// The share of the variation the replications' errors explain.
    pub error_variation: Option<f64>,
    /// The standard deviation of the errors.
    pub error_sd: Option<f64>,
    pub sst: f64,
    pub sse: f64,
    pub confidence: f64,
}

/// Analyses `y`: for each run of `d` (standard order), its r replications
/// (the same r for all). Confidence intervals at `confidence` (0.95),
/// with Student's t on 2^(k-p)·(r-1) degrees of freedom.
pub fn analyse(d: &Design, y: &[Vec<f64>], confidence: f64) -> Result<Analysis, String> {
    let n = d.runs();
    if y.len() != n {
        return Err(format!("{} runs measured, the design has {n}", y.len()));
    }
    let r = y[0].len();
    if r == 0 || y.iter().any(|v| v.len() != r) {
        return Err("every run needs the same number of replications, at least one".into());
    }
    if y.iter().flatten().any(|v| !v.is_finite()) {
        return Err("a measured value is not a number".into());
    }
    let means: Vec<f64> = y.iter().map(|v| v.iter().sum::<f64>() / r as f64).collect();
    let grand = means.iter().sum::<f64>() / n as f64;
    let sst: f64 = y.iter().flatten().map(|v| (v - grand).powi(2)).sum();
    let sse: f64 = y
        .iter()
        .zip(&means)
        .map(|(v, m)| v.iter().map(|x| (x - m).powi(2)).sum::<f64>())
        .sum();
    let df = (n * (r - 1)) as f64;
    let error_sd = (r > 1).then(|| (sse / df).sqrt());
    let half = error_sd.map(|se| {
        let sq = se / ((n * r) as f64).sqrt();
        t_quantile(0.5 + confidence / 2.0, df) * sq
    });
    let share = |ss: f64| if sst > 0.0 { ss / sst } else { 0.0 };
    let effects = d
        .effects()
        .into_iter()
        .enumerate()
        .map(|(col, aliases)| {
            let q = (0..n)
                .map(|row| f64::from(d.sign(col as u32, row)) * means[row])
                .sum::<f64>()
                / n as f64;
            let ci = half.map(|h| (q - h, q + h));
            Effect {
                name: word_name(aliases[0]),
                aliases: aliases[1..].iter().map(|&w| word_name(w)).collect(),
                estimate: q,
                ci,
                significant: ci.map(|(lo, hi)| lo > 0.0 || hi < 0.0),
                variation: (col != 0).then(|| share((n * r) as f64 * q * q)),
            }
        })
        .collect();
    Ok(Analysis {
        effects,
        error_variation: (r > 1).then(|| share(sse)),
        error_sd,
        sst,
        sse,
        confidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Jain, Example 18.1: a 2^2·3 design (memory size A, cache size B),
    /// whose answers the book gives: q0 = 41, qA = 21.5, qB = 9.5,
    /// qAB = 5; SST = 7032, SSE = 102; A explains 78.9% of the
    /// variation, B 15.4%, AB 4.3%, the errors 1.5%; s_e = 3.57, and the
    /// 90% intervals are q ± 1.86 · 1.03.
    #[test]
    fn jain_example_18_1() {
        let d = Design::full(2).unwrap();
        assert_eq!(d.runs(), 4);
        assert_eq!(d.levels(0), [-1, -1]);
        assert_eq!(d.levels(1), [1, -1]);
        assert_eq!(d.levels(2), [-1, 1]);
        // Runs in standard order: (-,-), (+,-), (-,+), (+,+).
        let y = vec![
            vec![15.0, 18.0, 12.0],
            vec![45.0, 48.0, 51.0],
            vec![25.0, 28.0, 19.0],
            vec![75.0, 75.0, 81.0],
        ];
        let a = analyse(&d, &y, 0.90).unwrap();
        let names: Vec<&str> = a.effects.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["I", "A", "B", "AB"]);
        let q: Vec<f64> = a.effects.iter().map(|e| e.estimate).collect();
        assert_eq!(q, [41.0, 21.5, 9.5, 5.0]);
        assert_eq!((a.sst, a.sse), (7032.0, 102.0));
        let var: Vec<f64> = a.effects[1..]
            .iter()
            .map(|e| e.variation.unwrap())
            .collect();
        assert!(close(var[0], 0.7888, 1e-4), "{var:?}");
        assert!(close(var[1], 0.1540, 1e-4), "{var:?}");
        assert!(close(var[2], 0.0427, 1e-4), "{var:?}");
        assert!(close(a.error_variation.unwrap(), 0.0145, 1e-4));
        assert!(close(a.error_sd.unwrap(), 3.5707, 1e-4));
        let (lo, hi) = a.effects[1].ci.unwrap();
        // t[0.95; 8] = 1.860, s_q = 1.0308: 21.5 ± 1.917.
        assert!(
            close(lo, 19.583, 2e-3) && close(hi, 23.417, 2e-3),
            "{lo} {hi}"
        );
        assert!(a.effects.iter().all(|e| e.significant == Some(true)));
        // Without replications there is no error to speak of.
        let once: Vec<Vec<f64>> = y.iter().map(|v| vec![v[0]]).collect();
        let b = analyse(&d, &once, 0.95).unwrap();
        assert_eq!(b.effects[1].ci, None);
        assert_eq!(b.error_variation, None);
    }

    /// The wide-area study's Table 1: k = 6, p = 3 with D = AB, E = AC,
    /// F = BC: 8 runs, resolution III, each main effect of D, E, F
    /// confounded with a two-factor interaction.
    #[test]
    fn the_papers_fractional_design() {
        let d = Design::fractional(6, &["D=AB", "E=AC", "F=BC"]).unwrap();
        assert_eq!(d.runs(), 8);
        assert_eq!(d.resolution(), Some(3));
        let mut rel: Vec<String> = d.defining_relation().into_iter().map(word_name).collect();
        rel.sort();
        assert_eq!(
            rel,
            ["ABD", "ABEF", "ACDF", "ACE", "BCDE", "BCF", "DEF", "I"]
        );
        // The paper's sign table, its rows in our order: every column sums
        // to zero and any two are orthogonal.
        for row in 0..8 {
            let l = d.levels(row);
            assert_eq!(l[3], l[0] * l[1]);
            assert_eq!(l[4], l[0] * l[2]);
            assert_eq!(l[5], l[1] * l[2]);
        }
        for i in 0..6 {
            assert_eq!((0..8).map(|r| i32::from(d.levels(r)[i])).sum::<i32>(), 0);
            for j in 0..i {
                let dot: i32 = (0..8)
                    .map(|r| i32::from(d.levels(r)[i] * d.levels(r)[j]))
                    .sum();
                assert_eq!(dot, 0);
            }
        }
        let effects = d.effects();
        let ab = &effects[0b011];
        assert_eq!(word_name(ab[0]), "D", "D is reported, AB is its alias");
        assert!(ab.iter().any(|&w| word_name(w) == "AB"));
        // A response that is 10 + 3·D exactly: the analysis finds D alone.
        let y: Vec<Vec<f64>> = (0..8)
            .map(|r| vec![10.0 + 3.0 * f64::from(d.levels(r)[3]); 2])
            .collect();
        let a = analyse(&d, &y, 0.95).unwrap();
        for e in &a.effects {
            let want = match e.name.as_str() {
                "I" => 10.0,
                "D" => 3.0,
                _ => 0.0,
            };
            assert!(close(e.estimate, want, 1e-12), "{}: {}", e.name, e.estimate);
        }
        assert_eq!(
            a.effects.iter().find(|e| e.name == "D").unwrap().variation,
            Some(1.0)
        );
    }

    #[test]
    fn best_designs_have_the_known_resolutions() {
        // 2^(4-1): D = ABC, resolution IV; 2^(5-1): V; 2^(7-4): III;
        // 2^(6-2): IV.
        let d = Design::best(4, 1).unwrap();
        assert_eq!(d.generators, [0b111]);
        assert_eq!(d.resolution(), Some(4));
        assert_eq!(Design::best(5, 1).unwrap().resolution(), Some(5));
        assert_eq!(Design::best(7, 4).unwrap().resolution(), Some(3));
        assert_eq!(Design::best(6, 2).unwrap().resolution(), Some(4));
        assert!(
            Design::best(4, 3).is_err(),
            "one base factor has no interactions"
        );
        assert_eq!(Design::full(3).unwrap().resolution(), None);
    }

    #[test]
    fn bad_generators_are_refused() {
        for (k, g) in [
            (4, vec!["D=A"]),
            (4, vec!["C=AB"]),
            (4, vec!["D=AD"]),
            (5, vec!["D=AB", "E=AB"]),
            (4, vec!["DAB"]),
            (4, vec!["D=AZ"]),
        ] {
            assert!(Design::fractional(k, &g).is_err(), "{g:?}");
        }
        assert!(Design::full(0).is_err());
        assert!(analyse(&Design::full(2).unwrap(), &[vec![1.0]], 0.95).is_err());
    }
}
