//! Criterion benchmarks of the core pipeline on synthetic heapprofd traces written by
//! `heapconv_testdata::heapprofd` (the way heapprofd writes them): decoding alone, and decode + pprof
//! encode + gzip as `heapconv profile` does. Throughput is in trace bytes.
//!
//! `HEAPCONV_BENCH_CALLSTACKS` sets the trace size (default 30000 callstacks, depth 30,
//! 4 dumps, 2 processes, about 8 MB); BENCHMARKS.md records the 300k-callstack figures.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heapconv::decode::Input;
use heapconv::decode::perfetto::{DecodeOptions, decode_heapprofd};
use heapconv::encode::pprof::{PprofOptions, encode_pprof, gzip};
use heapconv_testdata::heapprofd::{SynthOptions, write_synthetic_trace};

fn trace() -> Vec<u8> {
    let callstacks = std::env::var("HEAPCONV_BENCH_CALLSTACKS").ok().and_then(|v| v.parse().ok()).unwrap_or(30_000);
    let opts = SynthOptions { callstacks, ..SynthOptions::default() };
    let mut buf = Vec::new();
    write_synthetic_trace(&opts, &mut buf).expect("synthetic trace");
    buf
}

fn bench(c: &mut Criterion) {
    let bytes = trace();
    let mut g = c.benchmark_group("heapprofd");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("decode", |b| {
        b.iter(|| {
            let mut input = Input::from_bytes("bench", bytes.clone(), u64::MAX).unwrap();
            let mut samples = 0usize;
            decode_heapprofd(&mut input, &DecodeOptions::default(), &mut |p| {
                samples += p.sample_count();
                Ok(())
            })
            .unwrap();
            black_box(samples)
        })
    });
    g.bench_function("decode+pprof+gzip", |b| {
        b.iter(|| {
            let mut input = Input::from_bytes("bench", bytes.clone(), u64::MAX).unwrap();
            let mut out = 0usize;
            decode_heapprofd(&mut input, &DecodeOptions::default(), &mut |p| {
                out += gzip(&encode_pprof(&p, &PprofOptions::default())).len();
                Ok(())
            })
            .unwrap();
            black_box(out)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
