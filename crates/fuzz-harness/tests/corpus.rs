//! Replays every committed fuzz input, `fuzz/corpus/<target>/*` and the
//! crash reproducers in `fuzz/regressions/<target>/*`, through the code
//! the fuzz targets run, without libFuzzer. A panic anywhere counts, even
//! one the server catches (as libFuzzer's panic hook would abort), and
//! so does a single allocation over 512 MiB (the process aborts).
//!
//! `FERRITE_WRITE_SEEDS=1 cargo test -p fuzz-harness` rewrites the seeds
//! (`fuzz/corpus/<target>/seed-*`) from `src/seeds.rs`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use fuzz_harness::seeds::seeds;
use fuzz_harness::TARGETS;

#[global_allocator]
static ALLOC: fuzz_harness::alloc::Limited = fuzz_harness::alloc::Limited;

static PANICS: AtomicUsize = AtomicUsize::new(0);
static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static HOOK: Once = Once::new();

/// Counts every panic in the process, caught or not.
fn count_panics() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut m) = MESSAGES.lock() {
                m.push(info.to_string());
            }
            prev(info);
        }));
    });
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs `data` through `f`; fails naming `what` on any panic.
fn replay(what: &str, f: fn(&[u8]), data: &[u8]) {
    let before = PANICS.load(Ordering::SeqCst);
    let r = catch_unwind(AssertUnwindSafe(|| f(data)));
    let after = PANICS.load(Ordering::SeqCst);
    if r.is_err() || after != before {
        let msgs = MESSAGES.lock().map(|m| m.clone()).unwrap_or_default();
        panic!("{what}: {} panic(s): {msgs:#?}", after - before);
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && !p.to_string_lossy().ends_with(".tmp"))
        .collect();
    v.sort();
    v
}

#[test]
fn seeds_are_committed() {
    let write = std::env::var_os("FERRITE_WRITE_SEEDS").is_some();
    for (target, _) in TARGETS {
        let dir = fuzz_dir().join("corpus").join(target);
        let made = seeds(target);
        assert!(made.len() >= 5, "{target}: too few seeds");
        for (name, data) in made {
            let path = dir.join(name);
            if write {
                // Whole files only: the other tests read them meanwhile.
                std::fs::create_dir_all(&dir).unwrap();
                let tmp = dir.join(format!(".{name}.tmp"));
                std::fs::write(&tmp, &data).unwrap();
                std::fs::rename(&tmp, &path).unwrap();
            } else {
                let have = std::fs::read(&path).unwrap_or_default();
                assert!(
                    have == data,
                    "{} is not what src/seeds.rs makes: \
                     FERRITE_WRITE_SEEDS=1 cargo test -p fuzz-harness",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn corpus_and_regressions_replay() {
    count_panics();
    let mut n = 0;
    for &(target, f) in TARGETS {
        for (name, data) in seeds(target) {
            replay(&format!("{target} seed {name}"), f, &data);
            n += 1;
        }
        for sub in ["corpus", "regressions"] {
            for path in files(&fuzz_dir().join(sub).join(target)) {
                let data = std::fs::read(&path).unwrap();
                replay(&path.display().to_string(), f, &data);
                n += 1;
            }
        }
    }
    eprintln!("{n} inputs replayed");
}

/// Inputs that are no program at all still run cleanly.
#[test]
fn degenerate_inputs() {
    count_panics();
    for &(target, f) in TARGETS {
        for data in [&[][..], &[0], &[0xff; 64], &[0; 300]] {
            replay(&format!("{target} {data:02x?}"), f, data);
        }
    }
}
