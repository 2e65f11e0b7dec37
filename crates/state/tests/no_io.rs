//! The state machine does no I/O and needs no runtime (issue 29): its
//! dependencies are the wire types, `bytes` and `tracing`, and its source
//! names no file, socket, process, thread or async runtime. A change that
//! brings one in fails here and belongs in the driver (the server crate).

use std::path::{Path, PathBuf};

const ALLOWED: &[&str] = &["bytes", "proto", "tracing"];

const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::io::Write",
    "std::io::Read",
    "std::net::Tcp",
    "std::net::Udp",
    "std::os::",
    "std::process",
    "std::thread::spawn",
    "std::thread::sleep",
    "tokio",
    "libc::",
    "File::",
];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn its_dependencies_are_the_wire_types_bytes_and_tracing() {
    let toml = std::fs::read_to_string(manifest_dir().join("Cargo.toml")).unwrap();
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap().trim();
            deps.push(name.to_string());
        }
    }
    assert!(!deps.is_empty(), "no [dependencies] read from Cargo.toml");
    for d in &deps {
        assert!(ALLOWED.contains(&d.as_str()), "state depends on {d}");
    }
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            // The unit tests may use threads to show what does not wait.
            if p.file_name().is_some_and(|n| n != "tests") {
                sources(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn its_source_names_no_file_socket_thread_or_runtime() {
    let mut files = Vec::new();
    sources(&manifest_dir().join("src"), &mut files);
    assert!(files.len() > 10, "found only {} source files", files.len());
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for bad in FORBIDDEN {
                if code.contains(bad) {
                    found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "I/O in the state machine:\n{}",
        found.join("\n")
    );
}
