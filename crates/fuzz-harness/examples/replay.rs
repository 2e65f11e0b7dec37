//! Runs one fuzz target on files, without libFuzzer, for debugging a
//! crash: `cargo run -p fuzz-harness --example replay -- TARGET FILE...`
//! (`FERRITE_FUZZ_TRACE=1` makes `compound_run` print every step).

fn main() {
    let mut args = std::env::args().skip(1);
    let target = args.next().unwrap_or_default();
    let Some(&(_, f)) = fuzz_harness::TARGETS.iter().find(|t| t.0 == target) else {
        let names: Vec<_> = fuzz_harness::TARGETS.iter().map(|t| t.0).collect();
        eprintln!("usage: replay TARGET FILE...; targets: {names:?}");
        std::process::exit(2);
    };
    for path in args {
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        eprintln!("== {path} ({} bytes)", data.len());
        f(&data);
    }
}
