//! Criterion benchmark of the offline symbolizer (gimli/addr2line, no external tools):
//! `heapconv::symbolize::symbolize_addresses` on 10,000 addresses of one ELF file with DWARF,
//! as `heapconv symbolize` does for the frames of one mapping (open + parse + look up).
//!
//! The file is `target/bench/libsqlite3.so` when it exists (`bash symbols/bench/build-sqlite.sh`:
//! the SQLite amalgamation, ~4.8 MB with DWARF 5), else the committed `symbols/app-pie`.
//! `HEAPCONV_BENCH_SYMBOL_FILE` picks another file, `HEAPCONV_BENCH_ADDRS` the count.
//! Addresses are drawn deterministically like `symbols/bench/random-addrs.py` does (a random
//! FUNC symbol of size > 0 from `.symtab`, then a random offset in it), with a fixed-seed
//! splitmix64 instead of Python's generator, so the lists differ from the script's.
//!
//! `symbolize/lookup` times 10k lookups including opening and parsing the file;
//! `symbolize/open+1` one lookup, i.e. the fixed cost of a file. The side-by-side comparison
//! with llvm-symbolizer is `symbols/bench/compare.sh` (BENCHMARKS.md, "Offline symbolization").

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heapconv::symbolize::symbolize_addresses;
use heapconv_testdata::rng::SplitMix64;

fn symbol_file() -> PathBuf {
    if let Some(p) = std::env::var_os("HEAPCONV_BENCH_SYMBOL_FILE") {
        return PathBuf::from(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sqlite = root.join("target/bench/libsqlite3.so");
    if sqlite.is_file() { sqlite } else { root.join("symbols/app-pie") }
}

/// (start, size) of the FUNC symbols of size > 0 in `.symtab` (`.dynsym` if there is none),
/// deduplicated and sorted.
fn func_ranges(path: &Path) -> Vec<(u64, u64)> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let obj = object::File::parse(&*data).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    let collect = |it: &mut dyn Iterator<Item = object::Symbol<'_, '_>>| -> Vec<(u64, u64)> {
        it.filter(|s| s.kind() == object::SymbolKind::Text && s.is_definition() && s.size() > 0)
            .map(|s| (s.address(), s.size()))
            .collect()
    };
    let mut r = collect(&mut obj.symbols());
    if r.is_empty() {
        r = collect(&mut obj.dynamic_symbols());
    }
    r.sort_unstable();
    r.dedup();
    assert!(!r.is_empty(), "{}: no function symbols with a size", path.display());
    r
}

fn addresses(path: &Path, n: usize) -> Vec<u64> {
    let ranges = func_ranges(path);
    let mut rng = SplitMix64(20_260_801);
    (0..n)
        .map(|_| {
            let (start, size) = ranges[(rng.next_u64() % ranges.len() as u64) as usize];
            start + rng.next_u64() % size
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let path = symbol_file();
    let n = std::env::var("HEAPCONV_BENCH_ADDRS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let addrs = addresses(&path, n);
    let found = symbolize_addresses(&path, &addrs).iter().filter(|l| !l.is_empty()).count();
    eprintln!("symbolize bench: {} ({n} addresses, {found} with lines or a symbol)", path.display());
    assert!(found > 0, "{}: nothing symbolized", path.display());

    let mut g = c.benchmark_group("symbolize");
    g.sample_size(20);
    g.throughput(Throughput::Elements(addrs.len() as u64));
    g.bench_function("lookup", |b| b.iter(|| black_box(symbolize_addresses(&path, black_box(&addrs)))));
    g.throughput(Throughput::Elements(1));
    g.bench_function("open+1", |b| b.iter(|| black_box(symbolize_addresses(&path, black_box(&addrs[..1])))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
