//! Criterion benchmarks of the Java heap analyses on a synthetic heap
//! ([`heapconv_testdata::heap_dump::synthetic_heap_dump`]: 10 million objects and about 29 million
//! references by default, `HEAPCONV_BENCH_OBJECTS` to change): reachability, the shortest-path
//! tree, dominators with retained sizes, the class histogram, and the two tree profiles.
//! Throughput is in objects. BENCHMARKS.md records the figures; peak memory is measured with
//! the `heap_analysis` example instead (criterion keeps several results alive).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heapconv::analysis::heap::RootedHeap;
use heapconv_testdata::heap_dump::synthetic_heap_dump;

fn bench(c: &mut Criterion) {
    let n = std::env::var("HEAPCONV_BENCH_OBJECTS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000_000);
    let dump = synthetic_heap_dump(n, 1);
    let heap = RootedHeap::new(&dump);
    let spt = heap.shortest_path_tree();
    let dom = heap.dominators();
    let mut g = c.benchmark_group("heap_analysis");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(1));
    g.measurement_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("roots", |b| b.iter(|| black_box(RootedHeap::new(&dump).roots().len())));
    g.bench_function("reachable", |b| b.iter(|| black_box(heap.reachable().len())));
    g.bench_function("shortest_path_tree", |b| b.iter(|| black_box(heap.shortest_path_tree().order.len())));
    g.bench_function("dominators", |b| b.iter(|| black_box(heap.dominators().order.len())));
    g.bench_function("class_histogram", |b| b.iter(|| black_box(heap.class_histogram(&dom).len())));
    g.bench_function("spt_profile", |b| b.iter(|| black_box(heap.spt_profile(&spt).sample_count())));
    g.bench_function("dominator_profile", |b| b.iter(|| black_box(heap.dominator_profile(&dom).sample_count())));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
