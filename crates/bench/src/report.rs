//! `ferrite bench report`: one self-contained HTML page with inline SVG
//! plots drawn here (no plotting dependency): throughput over time,
//! throughput vs threads (when the inputs differ in `--threads`), latency
//! CDFs and operation counts.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::results::Results;
use crate::stats::Summary;

const COLORS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];
/// Line styles after the colours run out: solid, dashed, dotted.
const DASHES: [&str; 3] = ["", "6 3", "2 2"];
const W: f64 = 720.0;
const H: f64 = 360.0;
const ML: f64 = 70.0;
const MR: f64 = 170.0;
const MT: f64 = 30.0;
const MB: f64 = 45.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A series: name and points (x, y, ± error).
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
}

/// "Nice" tick values covering [lo, hi].
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut v = Vec::new();
    let mut t = (lo / step).ceil() * step;
    while t <= hi + step * 1e-9 {
        v.push(t);
        t += step;
    }
    v
}

fn fmt_num(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A line chart; `log_x` plots x on a log10 axis; `lines` false draws
/// points only.
pub fn line_chart(title: &str, xl: &str, yl: &str, series: &[Series], log_x: bool) -> String {
    let tx = |x: f64| if log_x { x.max(1e-9).log10() } else { x };
    // The legend gets the room its longest name needs, and the chart grows
    // downwards when there are more series than fit beside the plot.
    let longest = series
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0) as f64;
    let mr = (longest * 6.6 + 40.0).max(MR);
    let w = W - MR + mr;
    let h = H.max(MT + 20.0 + series.len() as f64 * 16.0);
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, y, e) in pts {
        if !x.is_finite() || !y.is_finite() {
            continue;
        }
        x0 = x0.min(tx(x));
        x1 = x1.max(tx(x));
        y1 = y1.max(y + if e.is_finite() { e } else { 0.0 });
    }
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(
        o,
        r#"<text x="{}" y="18" text-anchor="middle" font-size="13" font-weight="bold">{}</text>"#,
        (w - mr + ML) / 2.0,
        esc(title)
    );
    if !x0.is_finite() {
        o += "<text x=\"100\" y=\"100\">no data</text></svg>";
        return o;
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= 0.0 {
        y1 = 1.0;
    }
    let y1 = y1 * 1.05;
    let pw = w - ML - mr;
    let ph = h - MT - MB;
    let sx = |x: f64| ML + (tx(x) - x0) / (x1 - x0) * pw;
    let sy = |y: f64| MT + ph - y / y1 * ph;
    let _ = write!(
        o,
        r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##
    );
    for t in ticks(0.0, y1) {
        let y = sy(t);
        let _ = write!(
            o,
            r##"<line x1="{ML}" x2="{}" y1="{y}" y2="{y}" stroke="#eee"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            ML + pw,
            ML - 4.0,
            y + 4.0,
            fmt_num(t)
        );
    }
    let xt = if log_x {
        let mut v = Vec::new();
        let mut d = x0.floor();
        while d <= x1.ceil() {
            v.push(10f64.powf(d));
            d += 1.0;
        }
        v
    } else {
        ticks(x0, x1)
    };
    for t in xt {
        if tx(t) < x0 - 1e-9 || tx(t) > x1 + 1e-9 {
            continue;
        }
        let x = sx(t);
        let _ = write!(
            o,
            r##"<line x1="{x}" x2="{x}" y1="{MT}" y2="{}" stroke="#eee"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
            MT + ph,
            MT + ph + 14.0,
            fmt_num(t)
        );
    }
    let _ = write!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="14" y="{}" text-anchor="middle" transform="rotate(-90 14 {})">{}</text>"#,
        ML + pw / 2.0,
        h - 8.0,
        esc(xl),
        MT + ph / 2.0,
        MT + ph / 2.0,
        esc(yl)
    );
    for (i, s) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let dash = DASHES[(i / COLORS.len()) % DASHES.len()];
        let path: Vec<String> = s
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|&(x, y, _)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        let _ = write!(
            o,
            r#"<polyline fill="none" stroke="{c}" stroke-width="1.5" stroke-dasharray="{dash}" points="{}"/>"#,
            path.join(" ")
        );
        for &(x, y, e) in &s.points {
            if e.is_finite() && e > 0.0 {
                let _ = write!(
                    o,
                    r#"<line x1="{0:.1}" x2="{0:.1}" y1="{1:.1}" y2="{2:.1}" stroke="{c}"/>"#,
                    sx(x),
                    sy(y - e),
                    sy(y + e)
                );
            }
            if s.points.len() <= 30 {
                let _ = write!(
                    o,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}"/>"#,
                    sx(x),
                    sy(y)
                );
            }
        }
        let ly = MT + 12.0 + i as f64 * 16.0;
        let _ = write!(
            o,
            r#"<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="{c}" stroke-width="3" stroke-dasharray="{dash}"/><text x="{}" y="{}">{}</text>"#,
            w - mr + 8.0,
            w - mr + 26.0,
            ly - 4.0,
            ly - 4.0,
            w - mr + 30.0,
            ly,
            esc(&s.name)
        );
    }
    o += "</svg>";
    o
}

/// Horizontal bars.
pub fn bar_chart(title: &str, items: &[(String, f64)]) -> String {
    let h = MT + 20.0 + items.len() as f64 * 18.0;
    let max = items.iter().map(|i| i.1).fold(0.0, f64::max).max(1.0);
    let lw = 190.0;
    let bw = W - lw - 90.0;
    let mut o = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif" font-size="11"><text x="{}" y="18" text-anchor="middle" font-size="13" font-weight="bold">{}</text>"#,
        W / 2.0,
        esc(title)
    );
    for (i, (name, v)) in items.iter().enumerate() {
        let y = MT + i as f64 * 18.0;
        let _ = write!(
            o,
            r##"<text x="{}" y="{}" text-anchor="end">{}</text><rect x="{lw}" y="{}" width="{:.1}" height="13" fill="#1f77b4"/><text x="{}" y="{}">{}</text>"##,
            lw - 6.0,
            y + 11.0,
            esc(name),
            y,
            v / max * bw,
            lw + v / max * bw + 4.0,
            y + 11.0,
            v
        );
    }
    o += "</svg>";
    o
}

/// An effect to draw: its name, estimate and confidence interval.
pub struct EffectBar {
    pub name: String,
    pub estimate: f64,
    pub ci: Option<(f64, f64)>,
}

/// Horizontal bars from zero to each estimate, with its interval as a
/// whisker: the effects of a factorial design.
pub fn effects_chart(title: &str, items: &[EffectBar]) -> String {
    let h = MT + 30.0 + items.len() as f64 * 20.0;
    let ends = items
        .iter()
        .flat_map(|e| [Some(e.estimate), e.ci.map(|c| c.0), e.ci.map(|c| c.1)])
        .flatten()
        .chain([0.0]);
    let (lo, hi) = ends.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, hi + 1.0)
    };
    let lw = 190.0;
    let bw = W - lw - 40.0;
    let x = |v: f64| lw + (v - lo) / (hi - lo) * bw;
    let mut o = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif" font-size="11"><text x="{}" y="18" text-anchor="middle" font-size="13" font-weight="bold">{}</text>"#,
        W / 2.0,
        esc(title)
    );
    let bottom = MT + items.len() as f64 * 20.0;
    for t in ticks(lo, hi) {
        let _ = write!(
            o,
            r##"<line x1="{0:.1}" y1="{MT}" x2="{0:.1}" y2="{bottom}" stroke="#eee"/><text x="{0:.1}" y="{1}" text-anchor="middle">{2}</text>"##,
            x(t),
            bottom + 14.0,
            fmt_num(t)
        );
    }
    let _ = write!(
        o,
        r##"<line x1="{0:.1}" y1="{MT}" x2="{0:.1}" y2="{bottom}" stroke="#444"/>"##,
        x(0.0)
    );
    for (i, e) in items.iter().enumerate() {
        let y = MT + i as f64 * 20.0;
        let (a, b) = (x(0.0).min(x(e.estimate)), x(0.0).max(x(e.estimate)));
        let colour = if e.estimate >= 0.0 {
            "#1f77b4"
        } else {
            "#d62728"
        };
        let _ = write!(
            o,
            r##"<text x="{}" y="{}" text-anchor="end">{}</text><rect x="{a:.1}" y="{}" width="{:.1}" height="13" fill="{colour}" opacity="0.8"/>"##,
            lw - 6.0,
            y + 11.0,
            esc(&e.name),
            y + 1.0,
            (b - a).max(0.5),
        );
        if let Some((l, h)) = e.ci {
            let _ = write!(
                o,
                r##"<line x1="{:.1}" y1="{2:.1}" x2="{1:.1}" y2="{2:.1}" stroke="#000"/><line x1="{0:.1}" y1="{3:.1}" x2="{0:.1}" y2="{4:.1}" stroke="#000"/><line x1="{1:.1}" y1="{3:.1}" x2="{1:.1}" y2="{4:.1}" stroke="#000"/>"##,
                x(l),
                x(h),
                y + 7.5,
                y + 3.0,
                y + 12.0
            );
        }
    }
    o += "</svg>";
    o
}

/// The start of a report page titled `title`, for text reports in `pre`.
fn page_head(title: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{0}</title>\
         <style>body{{font-family:sans-serif;margin:2em;max-width:1000px}}pre{{background:#f8f8f8;padding:1em}}</style>\
         </head><body><h1>{0}</h1>",
        esc(title)
    )
}

/// The page for experiments run with `ferrite bench design`: each one's
/// text report, its effects with their intervals, and the allocation of
/// variation.
pub fn design_html(all: &[(String, crate::experiment::Outcome)]) -> String {
    let mut o = page_head("ferrite bench design report");
    for (label, out) in all {
        let _ = write!(
            o,
            "<h2>{}</h2><pre>{}</pre>",
            esc(label),
            esc(&crate::experiment::render(out))
        );
        let named = |n: &str| crate::experiment::effect_label(&out.plan, n);
        let bars: Vec<EffectBar> = out
            .analysis
            .effects
            .iter()
            .skip(1)
            .map(|e| EffectBar {
                name: named(&e.name),
                estimate: e.estimate,
                ci: e.ci,
            })
            .collect();
        o += &effects_chart(
            &format!(
                "effects on {} ({}% intervals)",
                out.plan.response,
                out.analysis.confidence * 100.0
            ),
            &bars,
        );
        let mut shares: Vec<(String, f64)> = out
            .analysis
            .effects
            .iter()
            .filter_map(|e| Some((named(&e.name), (e.variation? * 1000.0).round() / 10.0)))
            .collect();
        if let Some(v) = out.analysis.error_variation {
            shares.push(("error".into(), (v * 1000.0).round() / 10.0));
        }
        o += &bar_chart("allocation of variation (%)", &shares);
    }
    o += "</body></html>\n";
    o
}

/// The page for sweeps: load-response curves (`ferrite bench run mix
/// --load`), mean and 99th-percentile response time against the load
/// offered, as the Legato paper's Figure 2, and the load achieved; delay
/// sweeps (`--delay-sweep`), throughput, data rate and mean response time
/// against the delay, as the NFSv4.1 evaluation's figures; one series
/// per input, then each one's table.
pub fn sweep_html(all: &[(String, crate::sweep::Sweep)]) -> String {
    let mut o = page_head("ferrite bench sweep report");
    let labels: Vec<&str> = all.iter().map(|(l, _)| l.as_str()).collect();
    let names = short_labels(&labels);
    type Pick = fn(&crate::sweep::Step) -> f64;
    let chart = |title: &str, x_label: &str, unit: &str, x: Pick, y: Pick, keep: Pick, axis| {
        let series: Vec<Series> = all
            .iter()
            .zip(&names)
            .filter(|((_, sw), _)| sw.axis == axis)
            .map(|((_, sw), name)| Series {
                name: name.clone(),
                points: sw
                    .steps
                    .iter()
                    .filter(|s| keep(s) > 0.0 && y(s).is_finite())
                    .map(|s| (x(s), y(s), 0.0))
                    .collect(),
            })
            .collect();
        if series.is_empty() {
            String::new()
        } else {
            line_chart(title, x_label, unit, &series, false)
        }
    };
    use crate::sweep::Axis;
    // Delay sweeps: throughput and response time against the delay.
    for (title, unit, pick) in [
        (
            "throughput",
            "units/s",
            (|s: &crate::sweep::Step| s.achieved) as Pick,
        ),
        ("data rate", "MB/s", |s| s.mb_per_s),
        ("mean response time", "ms", |s| s.mean_us / 1e3),
    ] {
        o += &chart(
            title,
            "one-way delay, ms",
            unit,
            |s| s.delay_ms,
            pick,
            |_| 1.0,
            Axis::Delay,
        );
    }
    for (title, unit, pick) in [
        (
            "mean response time",
            "ms",
            (|s: &crate::sweep::Step| s.mean_us / 1e3) as Pick,
        ),
        ("99th percentile response time", "ms", |s| s.p99_us / 1e3),
        ("load achieved", "operations/s", |s| s.achieved),
    ] {
        o += &chart(
            title,
            "operations/s offered",
            unit,
            |s| s.offered,
            pick,
            |s| s.offered,
            Axis::Load,
        );
    }
    for ((label, sw), name) in all.iter().zip(&names) {
        let _ = write!(
            o,
            "<h2>{}</h2><p>{}</p><pre>{}</pre>",
            esc(name),
            esc(label),
            esc(&crate::sweep::render(sw))
        );
    }
    o += "</body></html>\n";
    o
}

/// The report page for `(label, results)` pairs.
pub fn html(all: &[(String, Results)]) -> String {
    let mut o = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>ferrite bench report</title>\
         <style>body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}\
         td:first-child{text-align:left}</style></head><body><h1>ferrite bench report</h1>",
    );
    let labels: Vec<&str> = all.iter().map(|(l, _)| l.as_str()).collect();
    let names = short_labels(&labels);
    // Summary table.
    o += "<table><tr><th>result</th><th>workload</th><th>target</th><th>clients×threads</th><th>runs</th><th>ops/s (±95% CI)</th><th>MB/s</th><th>p50 µs</th><th>p99 µs</th><th>client CPU %</th></tr>";
    for (label, r) in all {
        let g = |k: &str| r.summary.get(k).copied();
        let f = |s: Option<Summary>| match s {
            Some(s) if s.ci95.is_finite() => format!("{:.1} ± {:.1}", s.mean, s.ci95),
            Some(s) => format!("{:.1}", s.mean),
            None => "-".into(),
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}×{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(label),
            esc(&r.workload),
            esc(&r.target),
            r.params.clients,
            r.params.threads,
            r.runs.len(),
            f(g("ops_per_s")),
            f(g("mb_per_s")),
            f(g("latency_p50_us")),
            f(g("latency_p99_us")),
            f(g("cpu_percent")),
        );
    }
    o += "</table>";

    // Throughput over time.
    // A last interval shorter than half a second (workers finishing their
    // last units) is a noisy rate: left out of the plot, kept in the JSON.
    let mut series = Vec::new();
    for ((_, r), name) in all.iter().zip(&names) {
        for run in &r.runs {
            let mut prev = 0.0;
            let mut points = Vec::new();
            for p in &run.series {
                if p.t_s - prev >= 0.5 {
                    points.push((p.t_s, p.ops_per_s, f64::NAN));
                }
                prev = p.t_s;
            }
            series.push(Series {
                name: format!("{name} r{}", run.run),
                points,
            });
        }
    }
    o += "<h2>Throughput over time</h2>";
    o += &line_chart("ops/s per second", "seconds", "ops/s", &series, false);

    // Throughput vs threads, per (workload, target, clients).
    let mut groups: BTreeMap<(String, String, u32), Vec<(f64, Summary)>> = BTreeMap::new();
    for (_, r) in all {
        if let Some(s) = r.summary.get("ops_per_s") {
            groups
                .entry((r.workload.clone(), r.target.clone(), r.params.clients))
                .or_default()
                .push((f64::from(r.params.threads), *s));
        }
    }
    if groups.values().any(|v| {
        let mut t: Vec<u64> = v.iter().map(|x| x.0 as u64).collect();
        t.sort();
        t.dedup();
        t.len() > 1
    }) {
        let series: Vec<Series> = groups
            .into_iter()
            .map(|((w, t, c), mut v)| {
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    name: format!("{w} {c}c {t}"),
                    points: v.into_iter().map(|(x, s)| (x, s.mean, s.ci95)).collect(),
                }
            })
            .collect();
        o += "<h2>Throughput vs threads</h2>";
        o += &line_chart(
            "mean ops/s (error bars: 95% CI)",
            "threads per client",
            "ops/s",
            &series,
            false,
        );
    }

    // Latency CDFs of the unit of work.
    let mut series = Vec::new();
    for ((_, r), name) in all.iter().zip(&names) {
        let unit = r.params.workload.unit_name();
        for run in &r.runs {
            if let Some(l) = run.latency.get(unit) {
                series.push(Series {
                    name: format!("{name} r{}", run.run),
                    points: l.cdf.iter().map(|&(x, q)| (x, q, f64::NAN)).collect(),
                });
            }
        }
    }
    o += "<h2>Latency CDF</h2>";
    o += &line_chart(
        "fraction of operations ≤ latency",
        "latency (µs, log)",
        "fraction",
        &series,
        true,
    );

    // Operation counts (measured period).
    for (label, r) in all {
        if let Some(run) = r.runs.first() {
            if let Some(t) = run.nfs.get("measure") {
                let items: Vec<(String, f64)> =
                    t.ops.iter().map(|(k, v)| (k.clone(), *v as f64)).collect();
                let _ = write!(o, "<h2>Operations, run 0 of {}</h2>", esc(label));
                o += &bar_chart("operations sent in the measured period", &items);
                let _ = write!(
                    o,
                    "<table><tr><th>call</th><th>count</th><th>per {}</th><th>errors</th><th>sent B/call</th><th>recv B/call</th><th>mean RTT µs</th><th>mean queue µs</th></tr>",
                    esc(r.params.workload.unit_name())
                );
                for (k, c) in &t.calls {
                    let per = |x: u64| x as f64 / c.count.max(1) as f64;
                    let _ = write!(
                        o,
                        "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{:.0}</td><td>{:.0}</td><td>{:.1}</td><td>{:.1}</td></tr>",
                        esc(k),
                        c.count,
                        c.count as f64 / run.ops.max(1) as f64,
                        c.errors,
                        per(c.bytes_sent),
                        per(c.bytes_recv),
                        c.mean_rtt_us,
                        c.mean_queue_us
                    );
                }
                o += "</table>";
            }
        }
    }
    o += "</body></html>\n";
    o
}

/// Legend names for the inputs: the file name without `.json`, with as
/// many parent directories as it takes to tell the inputs apart
/// (`ferrite/randread`, `ganesha/randread`); at most 32 characters, keeping
/// the end.
fn short_labels(labels: &[&str]) -> Vec<String> {
    let name = |l: &str, depth: usize| -> String {
        let l = l.trim_end_matches(".json");
        let parts: Vec<&str> = l.split('/').filter(|p| !p.is_empty()).collect();
        let from = parts.len().saturating_sub(depth);
        parts[from..].join("/")
    };
    let mut depth = 1;
    loop {
        let names: Vec<String> = labels.iter().map(|l| name(l, depth)).collect();
        let unique = names
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            == names.len();
        let deepest = labels.iter().all(|l| l.split('/').count() <= depth);
        if unique || deepest {
            return names
                .into_iter()
                .map(|n| {
                    let c: Vec<char> = n.chars().collect();
                    c[c.len().saturating_sub(32)..].iter().collect()
                })
                .collect();
        }
        depth += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(0.0, 1234.0);
        assert_eq!(t[1], 500.0);
    }

    #[test]
    fn legend_names_tell_inputs_apart() {
        assert_eq!(
            short_labels(&["res/ferrite/randread.json", "res/ganesha/randread.json"]),
            vec!["ferrite/randread", "ganesha/randread"]
        );
        assert_eq!(
            short_labels(&["a/rr-t1.json", "b/rr-t4.json"]),
            vec!["rr-t1", "rr-t4"]
        );
        // Identical inputs stay identical (and do not loop forever).
        assert_eq!(short_labels(&["x.json", "x.json"]), vec!["x", "x"]);
        let long = format!("{}.json", "y".repeat(40));
        assert_eq!(short_labels(&[&long])[0].len(), 32);
    }

    #[test]
    fn charts_are_svg() {
        let s = line_chart(
            "t",
            "x",
            "y",
            &[Series {
                name: "a<b".into(),
                points: vec![(1.0, 2.0, 0.5), (10.0, 3.0, f64::NAN)],
            }],
            true,
        );
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("a&lt;b"));
        let b = bar_chart("ops", &[("READ".into(), 10.0), ("OPEN".into(), 5.0)]);
        assert!(b.contains("READ"));
    }
}
