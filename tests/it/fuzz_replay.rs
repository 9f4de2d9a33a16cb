//! The fuzz drivers (`fuzz/src/lib.rs`, the code every cargo-fuzz target runs) compiled into
//! this test and run on the fixtures each target is seeded with and on every minimized
//! finding under `tests/data/fuzz/<target>/`. So the ordinary test build checks that the
//! drivers still compile against the library (the fuzz crate itself is detached and only
//! built by `fuzz/run.sh`), and every past finding stays fixed without libFuzzer.

#[allow(dead_code, unreachable_pub)]
#[path = "../../fuzz/src/lib.rs"]
mod drivers;

use std::path::PathBuf;

use crate::common::root;

/// A target: its name, its driver, and its seeds (named for messages).
type Target = (&'static str, fn(&[u8]), Vec<(String, Vec<u8>)>);

/// The contents of files, named by their path.
fn load(paths: Vec<PathBuf>) -> Vec<(String, Vec<u8>)> {
    paths.into_iter().map(|p| (p.display().to_string(), std::fs::read(&p).unwrap())).collect()
}

/// Every target: its driver and the seeds `fuzz/seed.sh` gives it (a subset for the large
/// ELF files; the gzip copies it makes of the pprof files are made here too).
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
    let mut graphs = files("tests/data/heapgraph", &[".pftrace", ".pftrace.gz"]);
    graphs.push(root().join("tests/data/traceconv/cases/heap_graph_small.pftrace"));
    let mut pprofs = Vec::new();
    for d in std::fs::read_dir(root().join("tests/data/traceconv/expected")).unwrap() {
        pprofs.extend(files(
            &format!("tests/data/traceconv/expected/{}", d.unwrap().file_name().to_string_lossy()),
            &[".pb"],
        ));
    }
    pprofs.extend(files("tests/data/traceconv/symbolize", &[".pb"]));
    pprofs.extend(files("tests/data/legacy-heap", &[".heap"]));
    pprofs.sort();
    let mut pprofs = load(pprofs);
    let gzipped: Vec<(String, Vec<u8>)> = pprofs.iter().map(|(n, b)| (format!("{n}.gz"), gzip(b))).collect();
    pprofs.extend(gzipped);
    let mut hprofs = drivers::hprof_seeds(&root());
    let gzipped: Vec<(String, Vec<u8>)> = hprofs
        .iter()
        .filter(|(n, _)| n.starts_with("android-sample"))
        .map(|(n, b)| (format!("{n}.gz"), gzip(b)))
        .collect();
    hprofs.extend(gzipped);
    vec![
        ("perfetto_heapprofd", drivers::perfetto_heapprofd, load(traces())),
        ("perfetto_to_outputs", drivers::perfetto_to_outputs, load(traces())),
        ("ddm_alloc_records", drivers::ddm_alloc_records, load(files("tests/data/ddm", &[".alloc", ".real", ".jdwp"]))),
        ("symbol_file", drivers::symbol_file, load(elf)),
        ("hprof_reader", drivers::hprof_reader, hprofs),
        ("perfetto_heap_graph", drivers::perfetto_heap_graph, load(graphs)),
        ("pprof_reader", drivers::pprof_reader, pprofs),
        ("proguard_map", drivers::proguard_map, load(files("tests/data/proguard", &[".map"]))),
    ]
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
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
            inputs.extend(load(found));
        }
        for (input, bytes) in inputs {
            let r = std::panic::catch_unwind(|| driver(&bytes));
            assert!(r.is_ok(), "{name} panicked on {input}");
            runs += 1;
        }
    }
    let _ = std::fs::remove_dir_all(drivers::scratch_dir());
    assert!(runs > 150, "{runs}");
}

/// Finding 3 (`perfetto_heap_graph`): a heap-graph type whose instances are 4 GiB
/// (`object_size` 2^32). Written as hprof, the class was padded to its instance size with one
/// primitive field per 8 bytes: 536 million fields (and their names) for one class, memory
/// without bound, and more fields than a CLASS_DUMP can count (u2). Now padding stops at
/// 64 KiB (8,192 longs); the declared instance size stays what the trace says (u4).
#[test]
fn fuzz_heap_graph_type_of_4_gib_instances_writes_as_hprof() {
    use heapconv::decode::Input;
    use heapconv::decode::hprof::{HprofReadOptions, read_hprof};
    use heapconv::decode::perfetto::{HeapGraphOptions, decode_heap_graphs_all};
    use heapconv::encode::hprof::{HprofOptions, encode_hprof};

    let path = root().join("tests/data/fuzz/perfetto_heap_graph/huge-object-size.pftrace");
    let mut input = Input::open(&path, 1 << 20).unwrap();
    let (dumps, _) = decode_heap_graphs_all(&mut input, &HeapGraphOptions::default()).unwrap();
    assert_eq!(dumps.len(), 1);
    let d = &dumps[0];
    let huge = d.classes.iter().find(|c| c.name == "Huge").unwrap();
    assert_eq!(huge.instance_size, 1 << 32);
    let mut out = Vec::new();
    let summary = encode_hprof(d, &HprofOptions::default(), &mut out).unwrap();
    assert_eq!((summary.instances, summary.roots), (1, 1));
    assert_eq!(summary.bytes, out.len() as u64);
    // One instance of 64 KiB of zeros, the class's 8,192 fields and their names: about 330 KiB.
    assert!(out.len() > 64 << 10 && out.len() < 512 << 10, "{}", out.len());
    let back = read_hprof(out.as_slice(), "written", &HprofReadOptions { partial: false }).unwrap();
    let c = back.classes.iter().position(|c| c.name == "Huge").unwrap();
    assert_eq!(back.classes[c].fields.len(), 8192);
    assert_eq!(back.classes[c].instance_size, u64::from(u32::MAX));
    let o = back.obj_class.iter().position(|&k| k as usize == c).unwrap();
    assert_eq!(back.obj_id[o], 0x10);
    assert_eq!(back.obj_self_size[o], u64::from(u32::MAX));
    assert!(back.incomplete.is_empty());
}

/// The hprof driver's invariant that damage names the file: the reader's two limits inside a
/// heap dump (256 heaps, 2^32 - 2 objects) said neither the file nor where ("more than 256
/// heaps (HEAP_DUMP_INFO heap ids)"). Now they name the file, the sub-record and its record.
#[test]
fn hprof_limit_errors_name_file_sub_record_and_record() {
    use heapconv::decode::hprof::{HprofReadOptions, read_hprof};
    use heapconv::error::ErrorKind;
    use heapconv_testdata::hprof::HprofWriter;

    let mut w = HprofWriter::new("JAVA PROFILE 1.0.3", 4, 0);
    w.begin_heap_dump(0x1C);
    for heap in 0..300 {
        w.heap_dump_info(heap, 0);
    }
    w.end_heap_dump();
    let bytes = w.finish();
    let e = read_hprof(bytes.as_slice(), "heaps.hprof", &HprofReadOptions { partial: false }).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Malformed);
    // Header 19 + 12 bytes, the record header 9, then sub-records of 9 bytes: the 257th heap.
    let record = 31;
    let sub = record + 9 + 256 * 9;
    assert_eq!(
        e.context(),
        format!(
            "heaps.hprof: sub-record 0xFE HEAP_DUMP_INFO at byte {sub} in record 0x1C HEAP_DUMP_SEGMENT at byte {record}: more than 256 heaps (HEAP_DUMP_INFO heap ids)"
        )
    );
    // A partial read keeps the 256 heaps and says the same.
    let d = read_hprof(bytes.as_slice(), "heaps.hprof", &HprofReadOptions::default()).unwrap();
    assert_eq!(d.heaps.len(), 256);
    assert_eq!(d.incomplete, [e.to_string()]);
}

/// A mutation run of the drivers without libFuzzer, for a machine where the cargo-fuzz build
/// (AddressSanitizer, one codegen unit) cannot be afforded: each seed of the targets named by
/// `HEAPCONV_MUTATE` (comma-separated; default: the readers of hand-written wire code,
/// `hprof_reader,pprof_reader,perfetto_heapprofd`) mutated at random (bytes flipped, set to
/// boundary values, runs deleted, duplicated or spliced from another seed, truncated) for
/// `HEAPCONV_MUTATE_SECS` seconds per target (default 60). Not coverage-guided: it finds
/// shallow bugs only. A panicking input is written to `target/mutate-<target>-<n>` and the
/// test fails naming it. Run with `cargo test --release --test it mutated -- --ignored`.
#[test]
#[ignore = "slow: a timed mutation run (HEAPCONV_MUTATE_SECS per target)"]
fn mutated_seeds_never_panic_the_drivers() {
    let secs: u64 = std::env::var("HEAPCONV_MUTATE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let wanted =
        std::env::var("HEAPCONV_MUTATE").unwrap_or_else(|_| "hprof_reader,pprof_reader,perfetto_heapprofd".to_owned());
    let mut rng = heapconv_testdata::rng::Rng::seeded(1);
    let mut rand = move |n: usize| rng.index(n);
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    for (name, driver, seeds) in targets().into_iter().filter(|t| wanted.split(',').any(|w| w == t.0)) {
        let seeds: Vec<Vec<u8>> = seeds.into_iter().map(|s| s.1).filter(|b| b.len() <= 4 << 20).collect();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        let mut runs = 0u64;
        while std::time::Instant::now() < end {
            let mut b = seeds[rand(seeds.len())].clone();
            for _ in 0..=rand(4) {
                let len = b.len().max(1);
                match rand(7) {
                    0 if !b.is_empty() => {
                        let i = rand(b.len());
                        b[i] ^= 1 << rand(8);
                    }
                    1 if !b.is_empty() => {
                        let i = rand(b.len());
                        b[i] = [0, 0xFF, 0x7F, 0x80, 1, 0xFE][rand(6)];
                    }
                    2 if b.len() > 1 => {
                        let i = rand(b.len());
                        let n = rand(len - i).min(64) + 1;
                        b.drain(i..(i + n).min(b.len()));
                    }
                    3 if !b.is_empty() => {
                        let i = rand(b.len());
                        let n = (rand(len - i) + 1).min(64);
                        let chunk = b[i..i + n].to_vec();
                        let at = rand(b.len());
                        b.splice(at..at, chunk);
                    }
                    4 => {
                        let o = &seeds[rand(seeds.len())];
                        if !o.is_empty() {
                            let i = rand(o.len());
                            let n = (rand(o.len() - i) + 1).min(256);
                            let at = rand(b.len() + 1);
                            b.splice(at..at, o[i..i + n].iter().copied());
                        }
                    }
                    5 => b.truncate(rand(len + 1)),
                    _ if b.len() >= 4 => {
                        let i = rand(b.len() - 3);
                        b[i..i + 4].copy_from_slice(&[[0xFF; 4], [0x7F, 0xFF, 0xFF, 0xFF], [0, 0, 0, 0]][rand(3)]);
                    }
                    _ => {}
                }
            }
            runs += 1;
            if std::panic::catch_unwind(|| driver(&b)).is_err() {
                let p = root().join(format!("target/mutate-{name}-{}", failures.len()));
                std::fs::write(&p, &b).unwrap();
                failures.push(p.display().to_string());
            }
        }
        eprintln!("mutated {name}: {runs} inputs in {secs} s");
    }
    let _ = std::panic::take_hook();
    assert!(failures.is_empty(), "inputs that panic a driver: {failures:?}");
}
