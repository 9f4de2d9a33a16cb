//! Criterion benchmarks of hprof heap dumps, on synthetic dumps of about 100 MB
//! (`HEAPCONV_HPROF_BENCH_MB` to change) made by `heapconv_testdata::hprof::synthetic_heap`:
//! an Android one (`JAVA PROFILE 1.0.3`, 4-byte ids, ART's segments of at most 128 objects or
//! 4 KiB each starting with a HEAP_DUMP_INFO, some instances before their class) and a
//! HotSpot-like one (`1.0.2`, 8-byte ids, class dumps first, 1 MiB segments).
//!
//! * `walk`: the low-level walker alone (every sub-record parsed, nothing kept);
//! * `read`: `read_hprof`, the whole HeapDump (objects, references resolved, classes, roots);
//! * `hprof-conv`: the Android dump converted to the standard format, into a sink.
//!
//! Throughput is in dump bytes. With `HEAPCONV_HPROF_DUMP=FILE` the Android dump is also
//! written to FILE, for `benches/hprof-conv-compare.sh`, which times `heapconv hprof-conv`
//! against Android's `hprof-conv` on it. BENCHMARKS.md records the figures.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heapconv::decode::hprof::walk::HprofStream;
use heapconv::decode::hprof::{HprofConvOptions, HprofReadOptions, NoSeek, hprof_conv, read_hprof};
use heapconv_testdata::hprof::{SyntheticHeap, synthetic_heap};

fn target_bytes() -> usize {
    std::env::var("HEAPCONV_HPROF_BENCH_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(100usize) << 20
}

fn bench(c: &mut Criterion) {
    let size = target_bytes();
    let (android, sum) = synthetic_heap(&SyntheticHeap { target_bytes: size, id_size: 4, android: true, seed: 1 });
    if let Ok(path) = std::env::var("HEAPCONV_HPROF_DUMP") {
        std::fs::write(&path, &android).expect("writing HEAPCONV_HPROF_DUMP");
        eprintln!("wrote {path}: {} bytes, {sum:?}", android.len());
    }
    let (hotspot, _) = synthetic_heap(&SyntheticHeap { target_bytes: size, id_size: 8, android: false, seed: 2 });
    let mut g = c.benchmark_group("hprof");
    g.sample_size(10).measurement_time(Duration::from_secs(20)).warm_up_time(Duration::from_secs(2));
    for (name, dump) in [("android", &android), ("hotspot", &hotspot)] {
        g.throughput(Throughput::Bytes(dump.len() as u64));
        g.bench_function(format!("walk/{name}"), |b| {
            b.iter(|| {
                let mut s = HprofStream::new(&dump[..], "bench").unwrap();
                let mut subs = 0u64;
                while s.next_record().unwrap().is_some() {
                    while let Some(sr) = s.next_sub().unwrap() {
                        subs += u64::from(sr.tag);
                    }
                }
                black_box(subs)
            })
        });
        g.bench_function(format!("read/{name}"), |b| {
            b.iter(|| black_box(read_hprof(&dump[..], "bench", &HprofReadOptions::default()).unwrap().len()))
        });
    }
    g.throughput(Throughput::Bytes(android.len() as u64));
    g.bench_function("hprof-conv/android", |b| {
        b.iter(|| {
            let mut out = NoSeek(std::io::sink());
            black_box(hprof_conv(&android[..], "bench", &mut out, &HprofConvOptions::default()).unwrap().bytes_out)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
