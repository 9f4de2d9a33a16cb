//! Criterion benchmarks of DDM allocation records: a full buffer as ART sends it (65,535
//! records, stacks 16 frames deep, the newest first): each stage alone (decode, profile, pprof
//! encoding, gzip), then all of them as `heapconv convert capture.alloc --to pprof` runs them
//! (pprof encoding and gzip overlap on two threads). Throughput is in capture bytes.
//! BENCHMARKS.md records the figures. With `HEAPCONV_DDM_CAPTURE=FILE` the capture is also
//! written to FILE.
//!
//! The capture is synthetic and deterministic: an app of 400 classes and 1,200 methods (each
//! calling up to 7 others, each call from one line) whose 6,000 distinct allocation sites are
//! reached from three framework entry points (main looper, a thread pool, binder), drawn with
//! a skew so that a few sites allocate most, on 12 threads.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heapconv::decode::ddm_alloc_records::{
    AllocRecords, BlobLayout, DdmOptions, StackFrame, alloc_records_profile, decode_alloc_records,
};
use heapconv::encode::pprof::{PprofOptions, encode_pprof, gzip};
use heapconv::encode::pprof_gzip::encode_pprof_gzip;
use heapconv_testdata::ddm::encode_alloc_records;
use heapconv_testdata::rng::Rng;

/// A full ART buffer: 65,535 records, depth 16.
pub fn full_buffer() -> Vec<u8> {
    let r = records();
    encode_alloc_records(&r, &BlobLayout::default(), None)
}

/// A harder case for the profile: the same records, but each allocating (innermost) frame on a
/// line of its own, so that no two records share a stack.
pub fn all_distinct() -> Vec<u8> {
    let mut r = records();
    for i in 0..r.entries.len() {
        let f = r.entries[i].first_frame as usize;
        r.frames[f].line = (i % 30_000) as i16;
        r.frames[f].method = (i / 30_000) as u16;
    }
    encode_alloc_records(&r, &BlobLayout::default(), None)
}

fn records() -> AllocRecords {
    let mut rng = Rng(0x5EED);
    let mut r = AllocRecords::default();
    let classes: Vec<u16> = (0..400)
        .map(|i| AllocRecords::intern(&mut r.class_names, &format!("Lcom/example/app/pkg{}/Class{i};", i % 17)))
        .collect();
    let methods: Vec<u16> =
        (0..1200).map(|i| AllocRecords::intern(&mut r.method_names, &format!("method{i}"))).collect();
    let files: Vec<u16> =
        (0..400).map(|i| AllocRecords::intern(&mut r.file_names, &format!("Class{i}.java"))).collect();
    let allocated: Vec<u16> = ["Ljava/lang/String;", "[B", "[I", "[Ljava/lang/Object;", "Ljava/util/ArrayList;"]
        .iter()
        .map(|c| AllocRecords::intern(&mut r.class_names, c))
        .chain(classes.iter().copied().take(40))
        .collect();
    let framework = |r: &mut AllocRecords, names: &[(&str, &str, &str, i16)]| -> Vec<StackFrame> {
        names
            .iter()
            .map(|&(c, m, f, line)| StackFrame {
                class: AllocRecords::intern(&mut r.class_names, c),
                method: AllocRecords::intern(&mut r.method_names, m),
                file: AllocRecords::intern(&mut r.file_names, f),
                line,
            })
            .collect()
    };
    let roots = [
        framework(
            &mut r,
            &[
                ("Lcom/android/internal/os/ZygoteInit;", "main", "ZygoteInit.java", 858),
                ("Ljava/lang/reflect/Method;", "invoke", "Method.java", -2),
                ("Landroid/app/ActivityThread;", "main", "ActivityThread.java", 6669),
                ("Landroid/os/Looper;", "loop", "Looper.java", 193),
                ("Landroid/os/Handler;", "dispatchMessage", "Handler.java", 102),
            ],
        ),
        framework(
            &mut r,
            &[
                ("Ljava/lang/Thread;", "run", "Thread.java", 764),
                ("Ljava/util/concurrent/ThreadPoolExecutor$Worker;", "run", "ThreadPoolExecutor.java", 641),
                ("Ljava/util/concurrent/ThreadPoolExecutor;", "runWorker", "ThreadPoolExecutor.java", 1167),
            ],
        ),
        framework(
            &mut r,
            &[
                ("Landroid/os/Binder;", "execTransact", "Binder.java", 731),
                ("Landroid/os/Binder;", "execTransactInternal", "Binder.java", 1184),
            ],
        ),
    ];
    // Distinct allocation sites: a root, then app frames down to depth 16 (innermost first in
    // the record, so built outermost first and reversed).
    let sites: Vec<(Vec<StackFrame>, u16)> = (0..6000)
        .map(|_| {
            let root = &roots[rng.below(3) as usize];
            let mut frames: Vec<StackFrame> = root.clone();
            let mut c = rng.below(400) as usize;
            while frames.len() < 16 {
                // Each method calls a few others, each from one line: frames recur across sites.
                let m = (c * 3 + rng.below(3) as usize) % 1200;
                let next = (c + 1 + rng.below(7) as usize) % 400;
                frames.push(StackFrame {
                    class: classes[c],
                    method: methods[m],
                    file: files[c],
                    line: 10 + ((m * 31 + next * 7) % 500) as i16,
                });
                c = next;
            }
            frames.reverse();
            (frames, allocated[rng.below(allocated.len() as u64) as usize])
        })
        .collect();
    let threads: Vec<u16> = (0..12).map(|i| 12_000 + i * 37).collect();
    for _ in 0..65_535 {
        // Skewed: the low sites are drawn far more often.
        let a = rng.below(6000);
        let site = &sites[rng.below(a + 1) as usize];
        let size = [16u32, 24, 32, 48, 64, 128, 1024, 4096][rng.below(8) as usize];
        r.push_entry(size, threads[rng.below(12) as usize], site.1, &site.0);
    }
    r
}

fn bench(c: &mut Criterion) {
    let bytes = full_buffer();
    if let Some(path) = std::env::var_os("HEAPCONV_DDM_CAPTURE") {
        // The same capture as a file, to time the command line (see BENCHMARKS.md).
        std::fs::write(&path, &bytes).expect("writing the capture");
    }
    let opts = DdmOptions::default();
    let capture = decode_alloc_records(&bytes, "bench", &opts).unwrap();
    let profile = alloc_records_profile(std::slice::from_ref(&capture), &opts);
    let encoded = encode_pprof(&profile, &PprofOptions::default());
    let mut g = c.benchmark_group("ddm");
    g.sample_size(20);
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    // The stages one by one, then all of them as `convert --to pprof` runs them.
    g.bench_function("decode", |b| b.iter(|| black_box(decode_alloc_records(&bytes, "bench", &opts).unwrap())));
    g.bench_function("profile", |b| {
        b.iter(|| black_box(alloc_records_profile(std::slice::from_ref(&capture), &opts).sample_count()))
    });
    g.bench_function("pprof", |b| b.iter(|| black_box(encode_pprof(&profile, &PprofOptions::default()).len())));
    g.bench_function("gzip", |b| b.iter(|| black_box(gzip(&encoded).len())));
    g.bench_function("pprof+gzip (2 threads)", |b| {
        b.iter(|| black_box(encode_pprof_gzip(&profile, &PprofOptions::default()).len()))
    });
    g.bench_function("decode+profile+pprof+gzip", |b| {
        b.iter(|| {
            let cap = decode_alloc_records(&bytes, "bench", &opts).unwrap();
            let p = alloc_records_profile(std::slice::from_ref(&cap), &opts);
            black_box(encode_pprof_gzip(&p, &PprofOptions::default()).len())
        })
    });
    g.finish();
    let worst = all_distinct();
    let mut g = c.benchmark_group("ddm-distinct-stacks");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(worst.len() as u64));
    g.bench_function("decode+profile+pprof+gzip", |b| {
        b.iter(|| {
            let cap = decode_alloc_records(&worst, "bench", &opts).unwrap();
            let p = alloc_records_profile(std::slice::from_ref(&cap), &opts);
            black_box(encode_pprof_gzip(&p, &PprofOptions::default()).len())
        })
    });
    g.finish();
    eprintln!(
        "capture: {} bytes, {} records; pprof: {} bytes, {} gzipped",
        bytes.len(),
        capture.records.entries.len(),
        encoded.len(),
        gzip(&encoded).len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
