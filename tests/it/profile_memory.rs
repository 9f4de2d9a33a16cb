//! `heapconv profile` at scale (issue #15): memory follows the distinct stacks and frames of a
//! trace, not its number of dumps or its size; gzip members do not depend on the threads.

use std::io::Read;
use std::path::Path;

use crate::common::*;
use heapconv_testdata::heapprofd::{SynthOptions, write_synthetic_trace};

/// A trace of issue #15's frame family (many distinct frames, short shared prefixes).
fn family_trace(path: &Path, callstacks: usize, dumps: usize) {
    let opts = SynthOptions {
        callstacks,
        depth: 24,
        dumps,
        processes: 2,
        frames: Some(callstacks),
        functions: callstacks * 21 / 25,
        mappings: 40,
        ..Default::default()
    };
    let mut buf = Vec::new();
    write_synthetic_trace(&opts, &mut buf).unwrap();
    std::fs::write(path, buf).unwrap();
}

/// Memory follows the distinct stacks and frames, not the dumps: a trace of 16 dumps per
/// process (four times the file) takes little more memory than the same stacks in 4 dumps.
#[test]
fn profile_memory_does_not_grow_with_the_number_of_dumps() {
    let dir = tempfile::tempdir().unwrap();
    let peak = |dumps: usize| {
        let trace = dir.path().join(format!("d{dumps}.pftrace"));
        family_trace(&trace, 60_000, dumps);
        let out = dir.path().join(format!("out{dumps}"));
        let kib = peak_rss_kib(&["profile", s(&trace), "-o", s(&out), "-q"]);
        let files = std::fs::read_dir(&out).unwrap().count();
        (kib, files, std::fs::metadata(&trace).unwrap().len())
    };
    let (four, four_files, four_bytes) = peak(4);
    let (many, many_files, many_bytes) = peak(16);
    assert_eq!((four_files, many_files), (8, 32), "one file per dump and process");
    assert!(many_bytes > 2 * four_bytes, "16 dumps make a much larger trace: {many_bytes} vs {four_bytes} bytes");
    assert!(
        many * 10 < four * 13,
        "16 dumps took {many} KiB, 4 dumps {four} KiB: memory grew with the number of dumps"
    );
}

/// Large profiles are written as gzip members of 1 MiB of pprof each, compressed on every
/// core: the same bytes with one thread or two, decompressing to `profile --raw`'s bytes.
#[test]
fn profile_gzip_members_are_the_same_with_any_number_of_threads() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.pftrace");
    family_trace(&trace, 30_000, 2);
    let run = |args: &[&str], out: &str| {
        let out = dir.path().join(out);
        let mut all = vec!["profile", s(&trace), "-o", s(&out), "-q"];
        all.extend_from_slice(args);
        heapconv_ok(&all, 0);
        let mut files: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files
            .into_iter()
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(p).unwrap()))
            .collect::<Vec<_>>()
    };
    let one = run(&["--jobs", "1"], "one");
    let two = run(&["--jobs", "2"], "two");
    let raw = run(&["--raw"], "raw");
    assert_eq!(one.len(), 4);
    assert!(one == two, "--jobs 1 and --jobs 2 write the same bytes");
    let mut members_seen = false;
    for ((name, gz), (raw_name, pb)) in one.iter().zip(&raw) {
        assert_eq!(format!("{raw_name}.gz"), *name);
        let mut all = Vec::new();
        flate2::read::MultiGzDecoder::new(&gz[..]).read_to_end(&mut all).unwrap();
        assert!(all == *pb, "{name} decompresses to the --raw bytes");
        let mut first = Vec::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut first).unwrap();
        assert_eq!(first.len(), pb.len().min(1 << 20), "{name}: the first member holds the first MiB");
        members_seen |= pb.len() > 1 << 20;
    }
    assert!(members_seen, "some profile is larger than one member");
}
