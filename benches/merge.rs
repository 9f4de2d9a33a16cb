//! Criterion benchmarks of `heapconv merge` on two pprof profiles: the two dumps of one
//! process of a synthetic heapprofd trace (`heapconv_testdata::heapprofd`, as heapprofd writes them),
//! converted to pprof as `heapconv profile --raw` does (so the two share most stacks, as two
//! runs of one program do). Stages: decoding one profile, decoding and merging both, and
//! the whole `heapconv merge A B -o OUT` (decode in parallel, merge, canonical order, pprof
//! encoding and gzip). Throughput is in input bytes.
//!
//! `HEAPCONV_BENCH_CALLSTACKS` sets the size (default 60000 callstacks, depth 30: two
//! profiles of about 4.5 MB); BENCHMARKS.md records the side-by-side figures with
//! `go tool pprof -proto` on two ~40 MB profiles (540k callstacks).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heapconv::decode::Input;
use heapconv::decode::perfetto::{DecodeOptions, decode_heapprofd_all};
use heapconv::decode::pprof::decode_pprof;
use heapconv::encode::pprof::{PprofOptions, encode_pprof};
use heapconv::merge::{MergeOptions, Merger};
use heapconv::pipeline::Format;
use heapconv::pipeline::merge::encode_merged;
use heapconv_testdata::heapprofd::{SynthOptions, write_synthetic_trace};

/// Two pprof profiles (raw bytes) of one synthetic process, dumps 1 and 2.
fn profiles() -> (Vec<u8>, Vec<u8>) {
    let callstacks = std::env::var("HEAPCONV_BENCH_CALLSTACKS").ok().and_then(|v| v.parse().ok()).unwrap_or(60_000);
    let opts = SynthOptions { callstacks, dumps: 2, processes: 1, ..SynthOptions::default() };
    let mut trace = Vec::new();
    write_synthetic_trace(&opts, &mut trace).expect("synthetic trace");
    let mut input = Input::from_bytes("bench", trace, u64::MAX).expect("in memory");
    let (dumps, _) = decode_heapprofd_all(&mut input, &DecodeOptions::default()).expect("decodes");
    let opts = PprofOptions::default();
    (encode_pprof(&dumps[0], &opts), encode_pprof(&dumps[1], &opts))
}

fn merge(a: &[u8], b: &[u8]) -> Merger {
    let (pa, pb) = rayon::join(|| decode_pprof(a, "A").unwrap(), || decode_pprof(b, "B").unwrap());
    let mut m = Merger::new(MergeOptions::default(), 1);
    m.add_flat(&pa, false).unwrap();
    m.add_flat(&pb, false).unwrap();
    m
}

fn bench(c: &mut Criterion) {
    let (a, b) = profiles();
    let mut g = c.benchmark_group("merge");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(a.len() as u64));
    g.bench_function("decode one pprof", |bn| bn.iter(|| black_box(decode_pprof(&a, "A").unwrap().sample_count())));
    g.throughput(Throughput::Bytes((a.len() + b.len()) as u64));
    g.bench_function("decode+merge two", |bn| bn.iter(|| black_box(merge(&a, &b).sample_count())));
    g.bench_function("merge two to pprof.gz", |bn| {
        bn.iter(|| {
            let merged = merge(&a, &b).finish().unwrap();
            black_box(encode_merged(&merged, Format::Pprof).unwrap().len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
