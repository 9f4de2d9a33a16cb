//! pprof shapes real producers write (issue 14, "Real producers' pprof files"), on the small
//! profiles `tests/data/pprof-odd/make.py` writes by hand: the default sample type, names of
//! unsymbolized frames, `top` rows, empty stacks, invalid UTF-8, each checked against
//! `go tool pprof` run live.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{data, have_go, heapconv, heapconv_ok, parse_raw};

const ODD: [&str; 4] = ["empty-sample-type", "empty-stack", "invalid-utf8", "unsymbolized-offsets"];

fn odd(name: &str) -> std::path::PathBuf {
    data(&format!("pprof-odd/{name}.pb.gz"))
}

/// `go tool pprof -top` rows (every node), name -> (flat, cum), in base units.
fn go_top(path: &Path, unit: &str) -> (String, BTreeMap<String, (i64, i64)>) {
    let mut args =
        vec!["tool", "pprof", "-top", "-nodecount=0", "-nodefraction=0", "-edgefraction=0", "-symbolize=none"];
    let u = format!("-unit={unit}");
    if !unit.is_empty() {
        args.push(&u);
    }
    let out = Command::new("go").args(&args).arg(path).env("PPROF_TMPDIR", std::env::temp_dir()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let num = |t: &str| -> i64 {
        let digits: String = t.chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-').collect();
        digits.parse::<f64>().unwrap().round() as i64
    };
    let mut rows = BTreeMap::new();
    let mut total = String::new();
    let mut body = false;
    for l in text.lines() {
        if l.starts_with("Showing nodes") {
            total = l.to_owned();
        }
        if l.contains("flat%") {
            body = true;
            continue;
        }
        let parts: Vec<&str> = l.split_whitespace().collect();
        if body && parts.len() >= 6 {
            rows.insert(parts[5..].join(" "), (num(parts[0]), num(parts[3])));
        }
    }
    (total, rows)
}

/// `heapconv top --json -n 0` rows, name -> (flat, cum), and the total; names carry go's
/// ` (inline)`/` (partial-inline)` marks as `go tool pprof -top` prints them.
fn heapconv_top(path: &Path) -> (i64, String, BTreeMap<String, (i64, i64)>) {
    let out = heapconv_ok(&["top", "--json", "-n", "0", path.to_str().unwrap()], 0);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut name = r["name"].as_str().unwrap().to_owned();
            if let Some(m) = r["inline"].as_str() {
                name.push_str(&format!(" ({m})"));
            }
            (name, (r["flat"].as_i64().unwrap(), r["cum"].as_i64().unwrap()))
        })
        .collect();
    (j["total"].as_i64().unwrap(), j["sample_type"].as_str().unwrap_or("").to_owned(), rows)
}

/// Per sample type, the sum over samples, and the sample count, of a `-raw` text.
fn raw_totals(path: &Path) -> (Vec<i64>, usize) {
    // `-raw` prints strings as they are (not valid UTF-8 in invalid-utf8's input).
    let out = Command::new("go")
        .args(["tool", "pprof", "-raw", "-symbolize=none"])
        .arg(path)
        .env("PPROF_TMPDIR", std::env::temp_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (_, samples) = parse_raw(&String::from_utf8_lossy(&out.stdout));
    let n = samples.first().map_or(0, |s| s.0.len());
    let totals = (0..n).map(|i| samples.iter().map(|s| s.0[i]).sum()).collect();
    (totals, samples.len())
}

#[test]
fn top_rows_and_default_types_are_go_tool_pprofs() {
    if !have_go() {
        return;
    }
    // The unit go is told to print in, per fixture (base units of its default type).
    let units = [("empty-sample-type", ""), ("empty-stack", "ns"), ("invalid-utf8", ""), ("unsymbolized-offsets", "B")];
    for (name, unit) in units {
        let f = odd(name);
        let (_, go_rows) = go_top(&f, unit);
        let (_, ty, mut rows) = heapconv_top(&f);
        // go's rows leave out the samples without a stack (its total counts them).
        rows.remove("[no stack]");
        if name == "invalid-utf8" {
            // go prints the replacement characters; the values are what is compared.
            assert_eq!(rows.values().collect::<Vec<_>>(), go_rows.values().collect::<Vec<_>>(), "{name}");
            continue;
        }
        assert_eq!(rows, go_rows, "{name} ({ty})");
    }
    let (_, ty, rows) = heapconv_top(&odd("unsymbolized-offsets"));
    assert_eq!(ty, "alloc_space");
    let want: BTreeMap<String, (i64, i64)> = [
        ("[libc-2.31.so]".to_owned(), (4096, 4196)),
        ("[[vdso]]".to_owned(), (100, 100)),
        ("<unknown>".to_owned(), (64, 64)),
        ("[server]".to_owned(), (30, 4290)),
    ]
    .into();
    assert_eq!(rows, want);
}

#[test]
fn convert_shows_the_default_type_and_names_frames_by_file_offset() {
    let f = odd("unsymbolized-offsets");
    let out = heapconv_ok(&["convert", f.to_str().unwrap(), "--to", "folded", "-o", "-"], 0);
    let text = String::from_utf8(out.stdout).unwrap();
    let total: i64 = text.lines().map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap()).sum();
    assert_eq!(total, 4290, "alloc_space, the default_sample_type:\n{text}");
    // 0x7f0000001d0a in a mapping at 0x7f0000001000 with file offset 0x22000.
    assert!(text.contains("server+0x123ab;libc-2.31.so+0x23000;libc-2.31.so+0x22d0a 4096"), "{text}");
    assert!(text.contains("[unknown]+0x7fff12345678"), "{text}");
    // --sample-type by name, and a meaning the profile lacks is an error that lists its types.
    let out =
        heapconv_ok(&["convert", f.to_str().unwrap(), "--to", "folded", "-o", "-", "--sample-type", "inuse_space"], 0);
    let total: i64 = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(total, 164);
    let out = heapconv(&["convert", f.to_str().unwrap(), "--to", "folded", "-o", "-", "--view", "unreleased-count"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no sample type unreleased-count; the profile has alloc_objects, alloc_space, inuse_space"),
        "{err}"
    );
    // No default_sample_type: the last type (cpu), as go.
    let e = odd("empty-stack");
    let out = heapconv_ok(&["convert", e.to_str().unwrap(), "--to", "folded", "-o", "-"], 0);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "[no stack] 50000000\nmain.main 10000000\nmain.main;main.leaf 20000000\n"
    );
}

#[test]
fn merges_and_diffs_have_go_tool_pprofs_totals() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ODD {
        let f = odd(name);
        let fs = f.to_str().unwrap();
        let go = dir.path().join(format!("{name}.go.pb.gz"));
        let hc = dir.path().join(format!("{name}.hc.pb.gz"));
        let out = Command::new("go")
            .args(["tool", "pprof", "-proto", "-symbolize=none", fs, fs])
            .env("PPROF_TMPDIR", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::write(&go, &out.stdout).unwrap();
        heapconv_ok(&["merge", fs, fs, "-o", hc.to_str().unwrap()], 0);
        assert_eq!(raw_totals(&hc), raw_totals(&go), "merge of {name}");
        // diff NEW=BASE: go's -diff_base output and heapconv's both total 0 per type.
        let gd = dir.path().join(format!("{name}.go-diff.pb.gz"));
        let hd = dir.path().join(format!("{name}.hc-diff.pb.gz"));
        let base = format!("-diff_base={fs}");
        let out = Command::new("go")
            .args(["tool", "pprof", "-proto", "-symbolize=none", &base, fs])
            .env("PPROF_TMPDIR", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::write(&gd, &out.stdout).unwrap();
        heapconv_ok(&["diff", fs, fs, "-o", hd.to_str().unwrap()], 0);
        let (go_totals, _) = raw_totals(&gd);
        let (hc_totals, _) = raw_totals(&hd);
        assert!(go_totals.iter().all(|&t| t == 0) && hc_totals.iter().all(|&t| t == 0), "diff of {name}");
    }
    // The empty stack is left out, as go: 2 samples, [6, 60 ms].
    let hc = dir.path().join("empty-stack.hc.pb.gz");
    assert_eq!(raw_totals(&hc), (vec![6, 60000000], 2));
}

#[test]
fn invalid_utf8_is_read_with_a_warning() {
    let f = odd("invalid-utf8");
    for cmd in [vec!["top"], vec!["convert", "--to", "folded", "-o", "-"]] {
        let mut args = cmd.clone();
        args.push(f.to_str().unwrap());
        let out = heapconv_ok(&args, 0);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("warning:") && err.contains("1 string(s) were not valid UTF-8"), "{cmd:?}: {err}");
    }
}

/// traceconv's own `--java-heap` pprof refers to mapping 1 and defines none: go reads such a
/// location as one without a mapping, and so does heapconv (it used to reject the file).
#[test]
fn locations_naming_an_undefined_mapping_read_as_go_reads_them() {
    let f = data("traceconv/expected/heap_graph_small/java_heap_dump.1.10.pb");
    let (total, ty, rows) = heapconv_top(&f);
    assert_eq!(ty, "Total allocation size");
    assert!(rows.len() >= 3, "{rows:?}");
    if !have_go() {
        return;
    }
    let (totals, samples) = raw_totals(&f);
    assert_eq!(total, *totals.last().unwrap(), "the default (last) type's total is go's");
    assert!(samples > 0);
    let (_, go_rows) = go_top(&f, "B");
    assert_eq!(rows, go_rows);
}

/// Bytes that only parse as protobuf fields (a text file of `x`s: field 15, varint 0x78, again
/// and again) are not a profile: a profile's string table starts with "", and go rejects
/// them too.
#[test]
fn protobuf_shaped_text_is_no_profile() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x100");
    std::fs::write(&f, [b'x'; 100]).unwrap();
    let r = heapconv_ok(&["inspect", f.to_str().unwrap()], 1);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("string table does not start with the empty string"), "{err}");
    assert!(err.contains("x100"), "names the file: {err}");
}

#[test]
fn invalid_utf8_warnings_are_in_batch_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    std::fs::copy(odd("invalid-utf8"), inputs.join("bad.pb.gz")).unwrap();
    std::fs::copy(odd("empty-stack"), inputs.join("good.pb.gz")).unwrap();
    let out = dir.path().join("out");
    let sum = dir.path().join("sum.json");
    let pattern = format!("{}/*.pb.gz", inputs.display());
    let o = heapconv_ok(
        &[
            "convert",
            &pattern,
            "--to",
            "folded",
            "-o",
            out.to_str().unwrap(),
            "--summary-json",
            sum.to_str().unwrap(),
            "-vv",
        ],
        0,
    );
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&sum).unwrap()).unwrap();
    let by_key: BTreeMap<String, Vec<String>> = j["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let w = r["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_owned()).collect();
            (r["key"].as_str().unwrap().to_owned(), w)
        })
        .collect();
    let bad = &by_key[by_key.keys().find(|k| k.starts_with("bad")).unwrap()];
    assert_eq!(bad.len(), 1, "{by_key:?}");
    assert!(
        bad[0].ends_with("bad.pb.gz: 1 string(s) were not valid UTF-8; their invalid bytes were replaced with U+FFFD"),
        "{bad:?}"
    );
    let good = &by_key[by_key.keys().find(|k| k.starts_with("good")).unwrap()];
    assert!(good.is_empty(), "{good:?}");
    // The text summary (-vv) lists it too.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning: ") && err.contains("1 string(s) were not valid UTF-8"), "{err}");
}

#[test]
fn merge_takes_sample_type() {
    let f = odd("unsymbolized-offsets");
    let fs = f.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Folded output shows the type asked for (inuse_space: 164 per input), by name or meaning.
    for sel in ["inuse_space", "unreleased-size"] {
        let out = heapconv_ok(&["merge", fs, fs, "--to", "folded", "-o", "-", "--sample-type", sel], 0);
        let total: i64 = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap())
            .sum();
        assert_eq!(total, 2 * 164, "{sel}");
    }
    // Without it: the inputs' default type (alloc_space).
    let out = heapconv_ok(&["merge", fs, fs, "--to", "folded", "-o", "-"], 0);
    let total: i64 = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(total, 2 * 4290);
    // pprof output: the type becomes the default type go shows.
    let m = dir.path().join("m.pb.gz");
    heapconv_ok(&["merge", fs, fs, "-o", m.to_str().unwrap(), "--sample-type", "alloc_objects"], 0);
    let p = crate::common::read_pprof(&m);
    assert_eq!(p.string_table[p.default_sample_type as usize], "alloc_objects");
    if have_go() {
        let out = Command::new("go")
            .args(["tool", "pprof", "-top", "-symbolize=none"])
            .arg(&m)
            .env("PPROF_TMPDIR", dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Type: alloc_objects"), "{text}");
    }
    // A type no input has: an error listing the types (exit 2), nothing written.
    let bad = dir.path().join("bad.pb.gz");
    let out = heapconv(&["merge", fs, fs, "-o", bad.to_str().unwrap(), "--sample-type", "cpu"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no sample type \"cpu\"; the profile has alloc_objects, alloc_space, inuse_space"), "{err}");
    assert!(!bad.exists());
}

/// Real Go profiles written by `tests/data/goprof/` (built and run once per test process):
/// `heap.pb.gz`, `cpu.pb.gz` and `goroutine.pb.gz` in the returned directory; `None` when Go is
/// missing (and oracles are optional).
pub(crate) fn go_profiles() -> Option<&'static Path> {
    static CELL: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    CELL.get_or_init(|| {
        if !have_go() {
            return None;
        }
        let dir = Box::leak(Box::new(tempfile::tempdir().unwrap())).path().to_path_buf();
        for f in ["main.go", "go.mod"] {
            std::fs::copy(data("goprof").join(f), dir.join(f)).unwrap();
        }
        let build = Command::new("go")
            .args(["build", "-o", "goprof", "."])
            .current_dir(&dir)
            .env("GOFLAGS", "-mod=mod")
            .env("GOCACHE", crate::common::root().join("target/go-cache"))
            .env("GOPROXY", "off")
            .output()
            .expect("go build runs");
        assert!(build.status.success(), "go build: {}", String::from_utf8_lossy(&build.stderr));
        let st = Command::new(dir.join("goprof")).arg(&dir).status().expect("the Go program runs");
        assert!(st.success());
        Some(dir)
    })
    .as_deref()
}

/// The real Go profiles, with the unit `go tool pprof -top` is told to print their default
/// type in and that type's name.
const GO_PROFILES: [(&str, &str, &str); 3] =
    [("heap", "B", "inuse_space"), ("cpu", "ns", "cpu"), ("goroutine", "", "goroutine")];

#[test]
fn go_profiles_top_rows_are_go_tool_pprofs_with_inline_marks() {
    let Some(dir) = go_profiles() else { return };
    for (name, unit, ty) in GO_PROFILES {
        let f = dir.join(format!("{name}.pb.gz"));
        let (_, go_rows) = go_top(&f, unit);
        let (total, got_ty, rows) = heapconv_top(&f);
        assert_eq!(got_ty, ty, "{name}");
        assert_eq!(rows, go_rows, "{name}");
        let (totals, _) = raw_totals(&f);
        assert_eq!(Some(&total), totals.last(), "{name}: the default type is the last");
    }
    // The heap profile's allocations go through grow, inlined in one caller and called in the
    // other, and growInner, always inlined.
    let heap = dir.join("heap.pb.gz");
    let (_, _, rows) = heapconv_top(&heap);
    assert!(rows.contains_key("main.growInner (inline)"), "{rows:?}");
    assert!(rows.contains_key("main.grow (partial-inline)"), "{rows:?}");
    // (The runtime's own small allocations, growing `keep`, may land in either.)
    let called = rows["main.allocCalled"].1;
    let inlined = rows["main.allocInlined"].1;
    assert!((50 * 65536..50 * 65536 + 4096).contains(&called), "{called}");
    assert!((500 * 4096..500 * 4096 + 4096).contains(&inlined), "{inlined}");
    let text = String::from_utf8(heapconv_ok(&["top", "-n", "0", heap.to_str().unwrap()], 0).stdout).unwrap();
    assert!(text.lines().any(|l| l.ends_with("  main.growInner (inline)")), "{text}");
    assert!(text.lines().any(|l| l.ends_with("  main.grow (partial-inline)")), "{text}");
    // mix is inlined into spin in the CPU profile; the goroutines wait in parked.
    let (_, _, rows) = heapconv_top(&dir.join("cpu.pb.gz"));
    assert!(rows.keys().any(|k| k == "main.mix (inline)") || rows.is_empty(), "{rows:?}");
    let (total, _, rows) = heapconv_top(&dir.join("goroutine.pb.gz"));
    assert_eq!(rows["main.parked"].1, 8);
    assert_eq!(total, 9, "8 parked and main");
}

#[test]
fn go_profiles_convert_and_merge_as_go_tool_pprof() {
    let Some(dir) = go_profiles() else { return };
    let out = tempfile::tempdir().unwrap();
    for (name, _, _) in GO_PROFILES {
        let f = dir.join(format!("{name}.pb.gz"));
        let fs = f.to_str().unwrap();
        let want = raw_totals(&f);
        // convert to pprof: every type's total and the samples kept.
        let conv = out.path().join(format!("{name}.conv.pb.gz"));
        heapconv_ok(&["convert", fs, "--to", "pprof", "-o", conv.to_str().unwrap()], 0);
        assert_eq!(raw_totals(&conv), want, "convert of {name}");
        // merge with itself: go tool pprof -proto A A's totals and sample count.
        let go = out.path().join(format!("{name}.go.pb.gz"));
        let o = Command::new("go")
            .args(["tool", "pprof", "-proto", "-symbolize=none", fs, fs])
            .env("PPROF_TMPDIR", out.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(&go, &o.stdout).unwrap();
        let hc = out.path().join(format!("{name}.hc.pb.gz"));
        heapconv_ok(&["merge", fs, fs, "-o", hc.to_str().unwrap()], 0);
        let (go_totals, go_count) = raw_totals(&go);
        assert_eq!(raw_totals(&hc), (go_totals.clone(), go_count), "merge of {name}");
        assert_eq!(go_totals, want.0.iter().map(|t| 2 * t).collect::<Vec<_>>(), "{name}");
        // and the merged profile's -top rows are go's rows of go's merge.
        let unit = GO_PROFILES.iter().find(|g| g.0 == name).unwrap().1;
        assert_eq!(go_top(&hc, unit).1, go_top(&go, unit).1, "merged {name}");
    }
}

/// Every pprof file under `tests/data` (the hand-written odd shapes, the profiles real
/// traceconv wrote, the symbolized one with inline chains): `top`'s rows, values and inline
/// marks are `go tool pprof -top`'s (every node, no cuts), in the default type's base unit.
#[test]
fn every_pprof_fixture_tops_as_go_tool_pprof() {
    if !have_go() {
        return;
    }
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().unwrap() != "fuzz" {
                    walk(&p, out);
                }
            } else if p.to_str().unwrap().ends_with(".pb") || p.to_str().unwrap().ends_with(".pb.gz") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&data(""), &mut files);
    files.sort();
    assert!(files.len() >= 21, "{files:?}");
    let mut inline_marks = 0;
    for f in &files {
        let out = heapconv_ok(&["top", "--json", "-n", "0", f.to_str().unwrap()], 0);
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let unit = match j["unit"].as_str().unwrap() {
            "bytes" => "B",
            "nanoseconds" => "ns",
            _ => "",
        };
        let (_, _, rows) = heapconv_top(f);
        let (_, go_rows) = go_top(f, unit);
        assert_eq!(rows, go_rows, "{}", f.display());
        inline_marks += rows.keys().filter(|k| k.ends_with(" (inline)")).count();
    }
    assert!(inline_marks >= 2, "the symbolized traceconv profile has inlined functions");
}

/// The legacy text heap profiles `tests/data/legacy-heap/make.py` writes.
const LEGACY: [&str; 5] = ["gperftools", "heap_v2", "go_heap", "inuse_only", "brief_maps"];

/// Legacy text heap profiles (gperftools, old Go) read as `go tool pprof` reads them: every
/// sample type's total and the sample count (`-raw`, of the text itself and of heapconv's
/// pprof of it), `top`'s rows, and merges.
#[test]
fn legacy_heap_profiles_read_as_go_tool_pprof() {
    for name in LEGACY {
        let f = data(&format!("legacy-heap/{name}.heap"));
        let fs = f.to_str().unwrap();
        let out = heapconv_ok(&["inspect", "--json", fs], 0);
        assert!(!out.stdout.is_empty(), "{name}");
        let dir = tempfile::tempdir().unwrap();
        let conv = dir.path().join("conv.pb.gz");
        heapconv_ok(&["convert", fs, "--to", "pprof", "-o", conv.to_str().unwrap()], 0);
        let p = crate::common::read_pprof(&conv);
        let types: Vec<&str> = p.sample_type.iter().map(|t| p.string_table[t.r#type as usize].as_str()).collect();
        let want_types: &[&str] = if name == "inuse_only" || name == "brief_maps" {
            &["objects", "space"]
        } else {
            &["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"]
        };
        assert_eq!(types, want_types, "{name}");
        if !have_go() {
            continue;
        }
        let want = raw_totals(&f);
        assert_eq!(raw_totals(&conv), want, "convert of {name}");
        let (_, go_rows) = go_top(&f, "B");
        let (total, ty, rows) = heapconv_top(&f);
        assert_eq!(rows, go_rows, "{name}");
        assert_eq!(ty, *want_types.last().unwrap());
        assert_eq!(Some(&total), want.0.last(), "{name}");
        // Merged with itself, as go -proto A A.
        let go = dir.path().join("go.pb.gz");
        let o = Command::new("go")
            .args(["tool", "pprof", "-proto", "-symbolize=none", fs, fs])
            .env("PPROF_TMPDIR", dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(&go, &o.stdout).unwrap();
        let hc = dir.path().join("hc.pb.gz");
        heapconv_ok(&["merge", fs, fs, "-o", hc.to_str().unwrap()], 0);
        assert_eq!(raw_totals(&hc), raw_totals(&go), "merge of {name}");
    }
    // The values go computes, by hand: heapprofile as written; heap_v2/524288 unsampled
    // (4 MiB: x 1/(1-e^-8)); heap/1048576 at half the rate.
    let top = |name: &str, ty: &str| {
        let f = data(&format!("legacy-heap/{name}.heap"));
        let out = heapconv_ok(&["top", "--json", "-n", "0", "--sample-type", ty, f.to_str().unwrap()], 0);
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        j["total"].as_i64().unwrap()
    };
    assert_eq!(top("gperftools", "inuse_space"), 65536 + 12288 + 32768);
    assert_eq!(top("gperftools", "alloc_space"), 131072 + 24576 + 90112 + 4096 + 16);
    assert_eq!(top("heap_v2", "inuse_space"), 4195711 + 5275716 + 1049600);
    assert_eq!(top("go_heap", "alloc_objects"), 24 + 2052 + 650);
    assert_eq!(top("inuse_only", "space"), 3072);
    // The brief map section names the mappings (with `$source` replaced), as go names them.
    let (_, _, rows) = heapconv_top(&data("legacy-heap/brief_maps.heap"));
    assert!(rows.contains_key("[server_main]") && rows.contains_key("[libpthread-2.15.so]"), "{rows:?}");
}

/// The other legacy text profiles go reads are refused, with an error naming no format.
#[test]
fn other_legacy_text_profiles_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("contention.txt", "--- contention:\ncycles/second=3000000000\n100 200 @ 0x4005d1 0x400612\n"),
        ("goroutine.txt", "goroutine profile: total 2\n2 @ 0x4005d1 0x400612\n"),
        ("heapz.txt", "--- heapz 1 ---\nformat = java\n1 2 @ 0x1\n"),
    ] {
        let f = dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        let out = heapconv(&["top", f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
