//! heapprofd fixtures encoded by the independent encoder (`tests/data/*.textproto`, Google's
//! schema from PyPI `perfetto`) checked against `tests/data/expected.json`, which
//! `tests/data/expected_oracle.py` computed from the same bytes with Python protobuf and
//! traceconv's semantics (see `tests/data/README.md`). Every value, stack, mapping, rel_pc,
//! timestamp and flag is compared.

use std::collections::BTreeSet;

use crate::common::*;
use serde_json::Value;

fn expected() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(data("expected.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap().as_object().unwrap().clone()
}

type Row = (Vec<String>, Vec<String>, Vec<u64>, Vec<i64>);

fn our_rows(p: &pp::Profile) -> (Vec<(String, String)>, Vec<Row>) {
    let s = |i: i64| p.string_table[i as usize].clone();
    let types = p.sample_type.iter().map(|t| (s(t.r#type), s(t.unit))).collect();
    let mut rows: Vec<Row> = p
        .sample
        .iter()
        .map(|smp| {
            let mut names = Vec::new();
            let mut maps = Vec::new();
            let mut pcs = Vec::new();
            for lid in smp.location_id.iter().rev() {
                let loc = p.location.iter().find(|l| l.id == *lid).unwrap();
                let f = p.function.iter().find(|f| f.id == loc.line[0].function_id).unwrap();
                names.push(s(f.system_name));
                maps.push(p.mapping.iter().find(|m| m.id == loc.mapping_id).map(|m| s(m.filename)).unwrap_or_default());
                pcs.push(loc.address);
            }
            (names, maps, pcs, smp.value.clone())
        })
        .collect();
    rows.sort();
    (types, rows)
}

fn expected_rows(e: &Value) -> (Vec<(String, String)>, Vec<Row>) {
    let types = e["sample_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t[0].as_str().unwrap().to_owned(), t[1].as_str().unwrap().to_owned()))
        .collect::<Vec<_>>();
    let strs = |v: &Value| v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let mut rows: Vec<Row> = e["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let mut vals = vec![s["total_count"].as_i64().unwrap(), s["total_size"].as_i64().unwrap()];
            if types.len() == 4 {
                vals.push(s["unreleased_count"].as_i64().unwrap());
                vals.push(s["unreleased_size"].as_i64().unwrap());
            }
            let pcs = s["rel_pcs"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            (strs(&s["stack"]), strs(&s["mappings"]), pcs, vals)
        })
        .collect();
    rows.sort();
    (types, rows)
}

#[test]
fn every_fixture_matches_the_independent_oracle() {
    let exp = expected();
    assert!(exp.len() >= 10, "expected.json lists the fixtures");
    for (name, entries) in &exp {
        let entries = entries.as_array().unwrap();
        let input = data(&format!("{name}.pftrace"));
        let out = tempfile::tempdir().unwrap();
        let run = heapconv(&["profile", input.to_str().unwrap(), "--raw", "-q", "-o", out.path().to_str().unwrap()]);
        assert!(matches!(run.status.code(), Some(0)), "{name}: {}", String::from_utf8_lossy(&run.stderr));
        let got: BTreeSet<String> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let want: BTreeSet<String> = entries.iter().map(|e| e["file"].as_str().unwrap().to_owned()).collect();
        assert_eq!(got, want, "{name}: files written");

        let inspect = heapconv(&["inspect", "--json", input.to_str().unwrap()]);
        let report: Value = serde_json::from_slice(&inspect.stdout).unwrap();
        for e in entries {
            let file = e["file"].as_str().unwrap();
            let ours = read_pprof(&out.path().join(file));
            assert_eq!(our_rows(&ours), expected_rows(e), "{name}/{file}");
            // Function names (demangled, annotated) exactly as traceconv writes them.
            let mut got_names: Vec<Vec<String>> =
                normalize(&ours).1.into_iter().map(|(_, f)| f.into_iter().rev().map(|x| x.0).collect()).collect();
            let mut want_names: Vec<Vec<String>> = e["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    s["function_names"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_owned()).collect()
                })
                .collect();
            got_names.sort();
            want_names.sort();
            assert_eq!(got_names, want_names, "{name}/{file}: function names");
            // Period is the sampling interval when the dump carries one.
            if let Some(i) = e["sampling_interval_bytes"].as_i64().filter(|&i| i > 0) {
                assert_eq!(ours.period, i, "{name}/{file}: period");
            }
            let dump = report["dumps"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| {
                    d["pid"] == e["pid"]
                        && d["heap"] == e["heap"]
                        && d["raw_timestamp"].as_u64() == e["ts_raw"].as_u64()
                })
                .unwrap_or_else(|| panic!("{name}/{file}: dump in inspect --json"));
            assert_eq!(dump["timestamp"].as_i64(), e["ts_converted"].as_i64(), "{name}/{file}: timestamp");
            let flags = &dump["flags"];
            let want_flags: BTreeSet<&str> =
                e["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
            for (key, json) in [
                ("from_startup", "from_startup"),
                ("buffer_overran", "buffer_overran"),
                ("disconnected", "disconnected"),
                ("buffer_corrupted", "buffer_corrupted"),
                ("hit_guardrail", "hit_guardrail"),
                ("rejected_concurrent", "rejected_concurrent"),
            ] {
                let want = want_flags.contains(key)
                    || (key == "buffer_overran" && want_flags.iter().any(|f| f.contains("HIT_TIMEOUT")));
                assert_eq!(flags[json].as_bool(), Some(want), "{name}/{file}: flag {key}");
            }
            let want_err = if want_flags.iter().any(|f| f.contains("HIT_TIMEOUT")) { 1 } else { 0 };
            assert_eq!(flags["client_error"].as_u64(), Some(want_err), "{name}/{file}: client_error");
        }
    }
}

#[test]
fn gzip_and_compressed_packets_variants_give_identical_bytes() {
    for (plain, variants) in [
        ("continuous_recycle", vec!["continuous_recycle.pftrace.gz", "continuous_recycle.zlib.pftrace"]),
        ("interned_chain_spill", vec!["interned_chain_spill.zlib.pftrace"]),
        ("heaps_and_procs", vec!["heaps_and_procs.pftrace.gz"]),
    ] {
        let base = tempfile::tempdir().unwrap();
        let p = data(&format!("{plain}.pftrace"));
        heapconv_ok(&["profile", p.to_str().unwrap(), "-q", "-o", base.path().to_str().unwrap()], 0);
        for v in variants {
            let other = tempfile::tempdir().unwrap();
            heapconv_ok(&["profile", data(v).to_str().unwrap(), "-q", "-o", other.path().to_str().unwrap()], 0);
            let names: Vec<_> = std::fs::read_dir(base.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert!(!names.is_empty());
            for n in names {
                let a = std::fs::read(base.path().join(&n)).unwrap();
                let b = std::fs::read(other.path().join(&n)).unwrap();
                // The comment names the source file; everything else must be identical.
                let (pa, pb) = (decode_pprof(&a), decode_pprof(&b));
                assert_eq!(normalize(&pa), normalize(&pb), "{v}: {n:?}");
                assert_eq!(pa.location, pb.location, "{v}: {n:?}");
            }
        }
    }
}

#[test]
fn same_input_same_bytes() {
    let input = data("heaps_and_procs.pftrace");
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for d in [&a, &b] {
        heapconv_ok(&["profile", input.to_str().unwrap(), "-q", "-o", d.path().to_str().unwrap()], 0);
    }
    let mut n = 0;
    for e in std::fs::read_dir(a.path()).unwrap() {
        let name = e.unwrap().file_name();
        assert_eq!(std::fs::read(a.path().join(&name)).unwrap(), std::fs::read(b.path().join(&name)).unwrap());
        n += 1;
    }
    assert_eq!(n, 5);
    for to in ["folded", "json", "svg"] {
        let x = heapconv_ok(&["convert", input.to_str().unwrap(), "--pid", "20", "--to", to], 0).stdout;
        let y = heapconv_ok(&["convert", input.to_str().unwrap(), "--pid", "20", "--to", to], 0).stdout;
        assert!(!x.is_empty());
        assert_eq!(x, y, "{to} is deterministic");
    }
}

#[test]
fn go_pprof_reads_every_output_with_the_right_totals() {
    if !have_go() {
        return;
    }
    for (name, entries) in &expected() {
        let input = data(&format!("{name}.pftrace"));
        let out = tempfile::tempdir().unwrap();
        heapconv_ok(&["profile", input.to_str().unwrap(), "-q", "-o", out.path().to_str().unwrap()], 0);
        for e in entries.as_array().unwrap() {
            let file = e["file"].as_str().unwrap().replace(".pb", ".pb.gz");
            let raw = pprof_raw(&out.path().join(&file));
            let (_, samples) = parse_raw(&raw);
            let n = e["sample_types"].as_array().unwrap().len();
            let mut got = vec![0i64; n];
            for (v, _) in &samples {
                for i in 0..n {
                    got[i] += v[i];
                }
            }
            let keys = ["total_count", "total_size", "unreleased_count", "unreleased_size"];
            let mut want = vec![0i64; n];
            for s in e["samples"].as_array().unwrap() {
                for i in 0..n {
                    want[i] += s[keys[i]].as_i64().unwrap();
                }
            }
            assert_eq!(got, want, "{name}/{file}: totals read by go tool pprof");
        }
    }
}
