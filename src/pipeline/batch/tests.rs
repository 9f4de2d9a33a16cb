//! Unit tests of listing, naming and sharding.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::list::{NameGlob, split_pattern};
use super::{BatchInput, Shard, assign_keys};

fn m(p: &str, n: &str) -> bool {
    NameGlob::new(p).is_match(n)
}

#[test]
fn globs_match_like_shells() {
    assert!(m("*.pftrace", "a.pftrace"));
    assert!(!m("*.pftrace", "a.pftrace.gz"));
    assert!(m("*.pftrace*", "a.pftrace.gz"));
    assert!(m("a?c", "abc") && !m("a?c", "ac"));
    assert!(m("[ab]*", "b1") && !m("[ab]*", "c1"));
    assert!(m("run[0-9]", "run7") && !m("run[0-9]", "runx"));
    assert!(m("run[!0-9]", "runx") && !m("run[!0-9]", "run7"));
    assert!(m("*", "x") && !m("*", ".hidden") && m(".*", ".hidden"));
    assert!(m("a*b*c", "aXXbYYc") && !m("a*b*c", "aXXbYY"));
    assert!(m("[", "[") && m("x[", "x["), "an unclosed class is literal");
    assert!(m("[]]", "]"), "a ] first in a class is a member");
}

#[test]
fn patterns_split_at_the_first_wildcard() {
    let (root, parts) = split_pattern(Path::new("traces/ci/*/x*.pftrace"));
    assert_eq!(root, PathBuf::from("traces/ci"));
    assert_eq!(parts, ["*", "x*.pftrace"]);
    let (root, parts) = split_pattern(Path::new("**/*.gz"));
    assert_eq!(root, PathBuf::from("."));
    assert_eq!(parts, ["**", "*.gz"]);
}

#[test]
fn shards_parse_and_partition() {
    assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 2, count: 4 });
    for bad in ["0/4", "5/4", "1/0", "2", "a/b", "-1/3"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
    // Fixed values: the partition must never change between versions (CI matrices rely
    // on it), so these are pinned.
    let shards: Vec<u32> =
        ["a.pftrace", "b.pftrace", "run1/x.pftrace", "run2/x.pftrace"].iter().map(|r| Shard::of(r, 4)).collect();
    assert_eq!(shards, PINNED_SHARDS);
    let mut counts = [0usize; 4];
    for i in 0..1000 {
        counts[Shard::of(&format!("trace_{i:04}.pftrace"), 4) as usize - 1] += 1;
    }
    assert!(counts.iter().all(|&c| (200..300).contains(&c)), "balanced: {counts:?}");
}

/// Computed independently (Python: FNV-1a 64 of the UTF-8 path, SplitMix64's finalizer,
/// `1 + h % 4`).
const PINNED_SHARDS: [u32; 4] = [3, 2, 2, 4];

fn input(path: &str, rel: &str) -> BatchInput {
    BatchInput { path: PathBuf::from(path), rel: rel.to_owned(), key: String::new() }
}

#[test]
fn keys_are_unique_and_do_not_depend_on_order() {
    let mut v = vec![
        input("d1/app.pftrace", "app.pftrace"),
        input("d1/app.pftrace.gz", "app.pftrace.gz"),
        input("d2/app.pftrace", "app.pftrace"),
        input("d1/run1/x.pftrace", "run1/x.pftrace"),
        input("d1/App.alloc", "App.alloc"),
        input("d1/other.hprof", "other.hprof"),
    ];
    assign_keys(&mut v);
    let keys: BTreeMap<String, String> = v.iter().map(|i| (i.path.display().to_string(), i.key.clone())).collect();
    assert_eq!(keys["d1/run1/x.pftrace"], "run1/x");
    assert_eq!(keys["d1/other.hprof"], "other");
    assert_eq!(keys["d1/app.pftrace.gz"], "app.pftrace.gz");
    assert_eq!(keys["d1/App.alloc"], "App.alloc", "case-insensitive collision with app");
    assert!(keys["d1/app.pftrace"].starts_with("app.pftrace~") && keys["d2/app.pftrace"].starts_with("app.pftrace~"));
    assert_ne!(keys["d1/app.pftrace"], keys["d2/app.pftrace"]);
    let mut w: Vec<BatchInput> = v.iter().rev().cloned().collect();
    assign_keys(&mut w);
    for i in &w {
        assert_eq!(keys[&i.path.display().to_string()], i.key);
    }
}
