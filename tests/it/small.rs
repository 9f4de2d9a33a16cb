//! Smaller things real files showed (issue 14): heap dumps named by their file, `;` in
//! flame graph names, `--help`, `inspect` of unknown input, DDM labels, deterministic merge
//! errors, dump times with units.

use crate::common::*;
use heapconv_testdata::hprof::android_sample;

#[test]
fn a_heap_dump_without_process_name_is_called_by_its_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = android_sample(4, true);
    let p = dir.path().join("my-app.hprof");
    std::fs::write(&p, &bytes).unwrap();
    let p = p.to_str().unwrap();
    let o = heapconv_ok(&["convert", p, "--to", "svg"], 0);
    let svg = String::from_utf8(o.stdout).unwrap();
    assert!(svg.contains(">my-app, heap java, dump 1: Object size<"), "{}", &svg[..svg.len().min(3000)]);
    assert!(!svg.contains("unknown process"));
    let o = heapconv_ok(&["top", p], 0);
    let text = String::from_utf8(o.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("my-app, JAVA PROFILE 1.0.3"), "{first}");
    // The JSON says what the file says: no process name.
    let o = heapconv_ok(&["top", p, "--json"], 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["process_name"].is_null(), "{}", v["process_name"]);
}
