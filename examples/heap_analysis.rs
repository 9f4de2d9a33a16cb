//! Runs the heap analyses on a synthetic heap and prints how long each took, for
//! BENCHMARKS.md's peak-RSS figures (`/usr/bin/time -f %M`):
//!
//! ```sh
//! cargo run --release --example heap_analysis -- 10000000 [SEED] [PHASES]
//! ```
//!
//! PHASES is a comma-separated subset of `reachable,spt,dominators,histogram,profiles`
//! (default: all), so that the peak of one phase can be measured alone.

use std::time::Instant;

use heapconv::analysis::heap::{HeapTopOptions, RootedHeap};
use heapconv::encode::heap_top::heap_top_text;
use heapconv_testdata::heap_dump::synthetic_heap_dump;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let phases = args.get(3).cloned().unwrap_or_else(|| "reachable,spt,dominators,histogram,profiles".to_owned());
    let on = |p: &str| phases.split(',').any(|x| x == p);

    let t = Instant::now();
    let dump = synthetic_heap_dump(n, seed);
    eprintln!(
        "generate      {:>8.3} s  {} objects, {} references",
        t.elapsed().as_secs_f64(),
        dump.len(),
        dump.ref_target.len()
    );
    let t = Instant::now();
    let heap = RootedHeap::new(&dump);
    eprintln!("roots         {:>8.3} s  {} roots", t.elapsed().as_secs_f64(), heap.roots().len());
    if on("reachable") {
        let t = Instant::now();
        let r = heap.reachable();
        eprintln!("reachable     {:>8.3} s  {} reachable", t.elapsed().as_secs_f64(), r.iter().filter(|&&x| x).count());
    }
    let spt = on("spt").then(|| {
        let t = Instant::now();
        let spt = heap.shortest_path_tree();
        eprintln!("spt           {:>8.3} s", t.elapsed().as_secs_f64());
        spt
    });
    let dom = on("dominators").then(|| {
        let t = Instant::now();
        let dom = heap.dominators();
        eprintln!("dominators    {:>8.3} s", t.elapsed().as_secs_f64());
        dom
    });
    if let (Some(spt), Some(dom)) = (&spt, &dom) {
        if on("histogram") {
            let t = Instant::now();
            let top = heap.heap_top(spt, dom, &HeapTopOptions::default());
            eprintln!("histogram+top {:>8.3} s", t.elapsed().as_secs_f64());
            print!("{}", heap_top_text(&top));
        }
        if on("profiles") {
            let t = Instant::now();
            let p = heap.spt_profile(spt);
            eprintln!("spt profile   {:>8.3} s  {} samples", t.elapsed().as_secs_f64(), p.sample_count());
            drop(p);
            let t = Instant::now();
            let p = heap.dominator_profile(dom);
            eprintln!("dom profile   {:>8.3} s  {} samples", t.elapsed().as_secs_f64(), p.sample_count());
        }
    }
}
