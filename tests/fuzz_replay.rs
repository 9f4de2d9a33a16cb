//! The fuzz drivers (`fuzz/src/lib.rs`, the code every cargo-fuzz target runs) compiled into
//! this test and run on the fixtures each target is seeded with and on every minimized
//! finding under `tests/data/fuzz/<target>/`. So the ordinary test build checks that the
//! drivers still compile against the library (the fuzz crate itself is detached and only
//! built by `fuzz/run.sh`), and every past finding stays fixed without libFuzzer.

mod common;

#[allow(dead_code, unreachable_pub)]
#[path = "../fuzz/src/lib.rs"]
mod drivers;

use std::path::PathBuf;

use common::root;

/// A fuzz target: its name, its driver and its seed files.
type Target = (&'static str, fn(&[u8]), Vec<PathBuf>);

/// Every target: its driver and the fixtures `fuzz/seed.sh` seeds it with (a subset for the
/// large ELF files).
fn targets() -> Vec<Target> {
    let files = |dir: &str, exts: &[&str]| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| exts.iter().any(|x| p.to_string_lossy().ends_with(x)))
            .collect();
        v.sort();
        v
    };
    let traces = || {
        let mut v = files("tests/data", &[".pftrace", ".pftrace.gz"]);
        v.extend(files("tests/data/symbolize", &[".pftrace"]));
        v.extend(files("tests/data/traceconv/cases", &[".pftrace"]));
        v
    };
    let elf = ["symbols/libwidget.so", "symbols/libgadget.so", "symbols/.debug/libgadget.so.debug"]
        .iter()
        .map(|p| root().join(p))
        .collect();
    vec![
        ("perfetto_heapprofd", drivers::perfetto_heapprofd, traces()),
        ("perfetto_to_outputs", drivers::perfetto_to_outputs, traces()),
        ("ddm_alloc_records", drivers::ddm_alloc_records, files("tests/data/ddm", &[".alloc", ".real", ".jdwp"])),
        ("symbol_file", drivers::symbol_file, elf),
    ]
}

#[test]
fn every_fuzz_target_is_replayed_here() {
    let manifest = std::fs::read_to_string(root().join("fuzz/Cargo.toml")).unwrap();
    let mut names: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.strip_prefix("name = \"")?.strip_suffix('"'))
        .filter(|n| *n != "heapconv-fuzz")
        .collect();
    names.sort();
    let mut known: Vec<&str> = targets().iter().map(|t| t.0).collect();
    known.sort();
    assert_eq!(names, known, "fuzz/Cargo.toml targets and this test's table differ");
    for n in names {
        let src = std::fs::read_to_string(root().join(format!("fuzz/fuzz_targets/{n}.rs"))).unwrap();
        assert!(src.contains(&format!("heapconv_fuzz::{n}(")), "fuzz_targets/{n}.rs does not call its driver");
        // seed.sh knows where the target's seeds are.
        let seed = std::fs::read_to_string(root().join("fuzz/seed.sh")).unwrap();
        assert!(seed.contains(n), "fuzz/seed.sh has no seeds for {n}");
    }
}

#[test]
fn fuzz_drivers_run_on_seeds_and_past_findings() {
    let mut runs = 0;
    for (name, driver, seeds) in targets() {
        assert!(!seeds.is_empty(), "{name}: no seeds");
        let mut inputs = seeds;
        if let Ok(rd) = std::fs::read_dir(root().join("tests/data/fuzz").join(name)) {
            let mut found: Vec<PathBuf> = rd.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
            found.sort();
            inputs.extend(found);
        }
        for p in inputs {
            let bytes = std::fs::read(&p).unwrap();
            let r = std::panic::catch_unwind(|| driver(&bytes));
            assert!(r.is_ok(), "{name} panicked on {}", p.display());
            runs += 1;
        }
    }
    let _ = std::fs::remove_dir_all(drivers::scratch_dir());
    assert!(runs > 80, "{runs}");
}
