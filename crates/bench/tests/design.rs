//! `ferrite bench design` end to end on a local directory: every run of
//! a 2^2·2 design is measured and analysed, and the outcome renders.
//! Each run does 50 reads (a fixed amount of work, not a time: what it
//! measures is never empty however busy the machine).

use bench::experiment::{self, Plan};

#[test]
fn a_small_design_runs_on_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan::parse(&format!(
        r#"
workload = "randread"
target = "dir:{}"
response = "ops_per_s"
replications = 2
ops = 50
duration = "2m"
warmup = "0s"

[base]
file_size = "1m"

[[factor]]
name = "threads"
low = {{ threads = 1 }}
high = {{ threads = 2 }}

[[factor]]
name = "I/O size"
low = {{ io_size = "4k", label = "4 KiB" }}
high = {{ io_size = "64k", label = "64 KiB" }}
"#,
        dir.path().display()
    ))
    .unwrap();
    let out = experiment::run(&plan, &dir.path().join("server.log")).unwrap();
    assert_eq!(out.levels.len(), 4);
    // 50 reads over however long they took: above 0 on any machine.
    assert!(out
        .responses
        .iter()
        .all(|r| r.len() == 2 && r.iter().all(|&v| v > 0.0)));
    assert_eq!(out.results.len(), 8);
    let names: Vec<&str> = out
        .analysis
        .effects
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(names, ["I", "A", "B", "AB"]);
    let explained: f64 = out
        .analysis
        .effects
        .iter()
        .filter_map(|e| e.variation)
        .sum::<f64>()
        + out.analysis.error_variation.unwrap();
    assert!((explained - 1.0).abs() < 1e-9, "{explained}");
    let text = experiment::render(&out);
    assert!(text.contains("B (I/O size)"), "{text}");
    let page = bench::report::design_html(&[("small".into(), out)]);
    assert!(page.contains("allocation of variation"));
}
