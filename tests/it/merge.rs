//! `merge`, `diff`, `top` and the pprof reader, checked against `go tool pprof` (the real
//! merge, `-diff_base` and `-top`), a real Go heap profile made by `tests/data/goheap/`, the
//! independent trace oracle (`tests/data/expected.json`) and golden files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::*;
use heapconv::decode::{InputKind, sniff};
use heapconv::merge::{MergeOptions, Merger, TypeSelector, merge_tree};
use heapconv::pipeline::load::{LoadOptions, load_input};
use heapconv::pipeline::merge::encode_merged;
use heapconv::pipeline::{DumpSelect, Format, Selection};
use prost::Message;

/// Sums of each value column of a `go tool pprof -raw` text, with the sample type line.
fn raw_totals(text: &str) -> (String, Vec<i64>) {
    let raw = parse_raw(text);
    let sums = raw_sums(&raw);
    (raw.0, sums)
}

fn go_pprof(args: &[&str]) -> Vec<u8> {
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .env("PPROF_BINARY_PATH", "/nonexistent")
        .env("PPROF_TMPDIR", std::env::temp_dir())
        .output()
        .expect("go tool pprof runs");
    assert!(out.status.success(), "go tool pprof {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Two heap profiles of the Go program in `tests/data/goheap/` (MemProfileRate 1 and 512),
/// built and run once per test process; `None` when Go is missing (and oracles are optional).
pub(crate) fn go_heap() -> Option<&'static (PathBuf, PathBuf)> {
    static CELL: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    CELL.get_or_init(|| {
        if !have_go() {
            return None;
        }
        let dir = Box::leak(Box::new(tmp())).path().to_path_buf();
        for f in ["main.go", "go.mod"] {
            std::fs::copy(data("goheap").join(f), dir.join(f)).unwrap();
        }
        let cache = root().join("target/go-cache");
        let build = Command::new("go")
            .args(["build", "-o", "heapfixture", "."])
            .current_dir(&dir)
            .env("GOFLAGS", "-mod=mod")
            .env("GOCACHE", &cache)
            .env("GOPROXY", "off")
            .output()
            .expect("go build runs");
        assert!(build.status.success(), "go build: {}", String::from_utf8_lossy(&build.stderr));
        let run = |name: &str, rate: &str| {
            let out = dir.join(name);
            let st = Command::new(dir.join("heapfixture")).arg(&out).arg(rate).status().expect("the Go program runs");
            assert!(st.success());
            out
        };
        Some((run("rate1.pb.gz", "1"), run("rate512.pb.gz", "512")))
    })
    .as_ref()
}

#[test]
fn go_heap_profile_reads_back_exactly() {
    let Some((a, _)) = go_heap() else { return };
    let p = load_input(a, &LoadOptions::default()).unwrap();
    assert_eq!(p.kind, InputKind::Pprof);
    let prof = &p.flat[0].to_profile();
    let names: Vec<(&str, &str)> =
        prof.header.sample_types.iter().map(|t| (t.name.as_str(), t.unit.as_str())).collect();
    assert_eq!(
        names,
        [("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"), ("inuse_space", "bytes")]
    );
    assert_eq!(prof.header.default_sample_type, 3, "no default_sample_type means the last one");
    assert_eq!(prof.header.meta.period.as_ref().map(|p| (p.name.as_str(), p.value)), Some(("space", 1)));
    assert!(prof.header.meta.time_nanos.is_some());
    // Totals match go tool pprof's reading of the same file.
    let (_, want) = raw_totals(&pprof_raw(a));
    let got: Vec<i64> = (0..4).map(|i| prof.total(i)).collect();
    assert_eq!(got, want);
    // The two functions allocated what the program says, and their samples carry Go's
    // numeric `bytes` label.
    let table = heapconv::encode::top::top_table(
        prof,
        &heapconv::encode::top::TopOptions { value_index: 3, ..Default::default() },
    );
    let flat = |n: &str| table.rows.iter().find(|r| r.name == n).map(|r| r.flat);
    // (The runtime's own small allocations may land in either function.)
    let small = flat("main.allocSmall").unwrap();
    let large = flat("main.allocLarge").unwrap();
    assert!((1000 * 4096..1000 * 4096 + 4096).contains(&small), "{small}");
    assert!((100 * 65536..100 * 65536 + 4096).contains(&large), "{large}");
    let key = prof.tables.strings.lookup("bytes").expect("label key");
    assert!((0..prof.sample_count()).any(|i| prof.sample_labels(i).contains(&(key, 4096))));
}

#[test]
fn merged_pprof_totals_equal_the_inputs_and_go_tool_pprof_merge() {
    let Some((a, b)) = go_heap() else { return };
    let dir = tmp();
    let ours = dir.path().join("ours.pb.gz");
    heapconv_ok(&["merge", s(a), s(b), "-o", s(&ours)], 0);
    let go = dir.path().join("go.pb.gz");
    std::fs::write(&go, go_pprof(&["-proto", s(a), s(b)])).unwrap();
    let (types, got) = raw_totals(&pprof_raw(&ours));
    let (go_types, go_totals) = raw_totals(&pprof_raw(&go));
    let (_, ta) = raw_totals(&pprof_raw(a));
    let (_, tb) = raw_totals(&pprof_raw(b));
    let sum: Vec<i64> = ta.iter().zip(&tb).map(|(x, y)| x + y).collect();
    assert_eq!(got, sum, "totals are the sum of the inputs");
    assert_eq!(got, go_totals, "totals equal go tool pprof -proto's");
    assert_eq!(types, go_types.trim_end_matches("[dflt]"));
    // The same samples as Go's merge (values and frames; labels kept apart as pprof keeps them).
    let p = read_pprof(&ours);
    let g = read_pprof(&go);
    assert_eq!(p.sample.len(), g.sample.len(), "as many merged samples as go tool pprof");
    assert_eq!(parse_raw(&pprof_raw(&ours)).1, parse_raw(&pprof_raw(&go)).1);
    // Period: the largest, values not rescaled (what go tool pprof does).
    assert_eq!(p.period, 512);
    assert_eq!(p.period, g.period);
    assert_eq!(p.time_nanos, g.time_nanos, "the earliest time");
}

#[test]
fn go_profile_merged_with_itself_doubles() {
    let Some((a, _)) = go_heap() else { return };
    let dir = tmp();
    let out = dir.path().join("aa.pb.gz");
    heapconv_ok(&["merge", s(a), s(a), "-o", s(&out)], 0);
    let once = parse_raw(&pprof_raw(a)).1;
    let twice = parse_raw(&pprof_raw(&out)).1;
    assert_eq!(once.len(), twice.len(), "identical stacks and labels are one sample");
    let doubled: Vec<_> = once.iter().map(|(v, f)| (v.iter().map(|x| x * 2).collect::<Vec<_>>(), f.clone())).collect();
    let mut doubled = doubled;
    doubled.sort();
    assert_eq!(twice, doubled);
}

/// The last dump of each (pid, heap) of a fixture, from the independent oracle.
fn oracle_last_dumps(name: &str) -> Vec<serde_json::Value> {
    let all: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("expected.json")).unwrap()).unwrap();
    let mut last: BTreeMap<(u64, String), serde_json::Value> = BTreeMap::new();
    for p in all[name].as_array().unwrap() {
        last.insert((p["pid"].as_u64().unwrap(), p["heap"].as_str().unwrap().to_owned()), p.clone());
    }
    last.into_values().collect()
}

fn oracle_total(dumps: &[serde_json::Value], field: &str) -> i64 {
    dumps.iter().flat_map(|d| d["samples"].as_array().unwrap().iter()).map(|s| s[field].as_i64().unwrap()).sum()
}

#[test]
fn go_profile_merged_with_a_heapprofd_trace() {
    let Some((a, _)) = go_heap() else { return };
    let dir = tmp();
    let out = dir.path().join("mixed.pb.gz");
    let trace = data("heaps_and_procs.pftrace");
    // Different sample types: a clear error naming both sides, unless types are chosen.
    let e = heapconv_ok(&["merge", s(a), s(&trace), "--heap", "libc.malloc", "-o", s(&out)], 2);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        msg.contains("[alloc_objects/count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes]")
            && msg.contains("[Total malloc count/count, Total malloc size/bytes, Unreleased malloc count/count, Unreleased malloc size/bytes]")
            && msg.contains("--sample-types"),
        "{msg}"
    );
    heapconv_ok(&["merge", s(a), s(&trace), "--sample-types", "total-size,total-count", "-o", s(&out)], 0);
    let (types, got) = raw_totals(&pprof_raw(&out));
    assert_eq!(types.replace("[dflt]", "").trim(), "alloc_space/bytes alloc_objects/count");
    let (_, go) = raw_totals(&pprof_raw(a));
    let dumps = oracle_last_dumps("heaps_and_procs");
    assert_eq!(dumps.len(), 4);
    assert_eq!(got, [go[1] + oracle_total(&dumps, "total_size"), go[0] + oracle_total(&dumps, "total_count")]);
    // A type one input lacks: named in the error.
    let e = heapconv_ok(&["merge", s(a), s(&trace), "--sample-types", "inuse_space", "-o", s(&out)], 2);
    assert!(String::from_utf8_lossy(&e.stderr).contains("has no sample type \"inuse_space\""));
}

#[test]
fn heapprofd_trace_and_its_own_pprof_merge_into_the_same_frames() {
    // ART annotations are baked into names when a trace is merged, so the trace and the pprof
    // heapconv made of it have the same frames: every sample doubles, none is added.
    let dir = tmp();
    let trace = data("art_frames.pftrace");
    let pb = dir.path().join("art.pb.gz");
    heapconv_ok(&["convert", s(&trace), "-o", s(&pb)], 0);
    let out = dir.path().join("both.pb.gz");
    heapconv_ok(&["merge", s(&trace), s(&pb), "-o", s(&out)], 0);
    let single = normalize(&read_pprof(&pb));
    let merged = normalize(&read_pprof(&out));
    assert_eq!(single.0, merged.0);
    let mut doubled: Vec<NormSample> =
        single.1.iter().map(|(v, f)| (v.iter().map(|x| x * 2).collect(), f.clone())).collect();
    doubled.sort();
    assert_eq!(merged.1, doubled);
    assert!(merged.1.iter().any(|(_, f)| f.iter().any(|x| x.0.ends_with(" [aot]"))), "annotations kept once");
    assert!(!merged.1.iter().any(|(_, f)| f.iter().any(|x| x.0.contains("] ["))), "never annotated twice");
    // Totals by the oracle.
    let dumps = oracle_last_dumps("art_frames");
    let (_, totals) = raw_totals(&pprof_raw(&out));
    assert_eq!(totals[3], 2 * oracle_total(&dumps, "unreleased_size"));
}

#[test]
fn merge_is_independent_of_input_order_and_of_parallelism() {
    let dir = tmp();
    let mut inputs = vec![data("heaps_and_procs.pftrace"), data("ddm/art.alloc"), data("names.pftrace")];
    let pb = dir.path().join("sample.pb.gz");
    heapconv_ok(&["convert", s(&root().join("examples/sample.pftrace")), "--pid", "4242", "-o", s(&pb)], 0);
    inputs.push(pb);
    if let Some((a, b)) = go_heap() {
        inputs.push(a.clone());
        inputs.push(b.clone());
    }
    let sel = "total-size,total-count";
    let run = |order: &[usize], to: &str| -> Vec<u8> {
        let out = dir.path().join(format!("m-{}.{to}", order.iter().map(|i| i.to_string()).collect::<String>()));
        let mut args: Vec<String> = vec!["merge".into()];
        args.extend(order.iter().map(|&i| inputs[i].display().to_string()));
        args.extend(["--sample-types".into(), sel.into(), "--to".into(), to.into(), "-o".into(), s(&out).into()]);
        let args: Vec<&str> = args.iter().map(|x| x.as_str()).collect();
        heapconv_ok(&args, 0);
        std::fs::read(&out).unwrap()
    };
    let n = inputs.len();
    let forward: Vec<usize> = (0..n).collect();
    let rotated: Vec<usize> = (0..n).map(|i| (i + 2) % n).collect();
    let reversed: Vec<usize> = (0..n).rev().collect();
    for to in ["pprof", "folded", "json"] {
        let want = run(&forward, to);
        assert_eq!(run(&rotated, to), want, "{to}: rotated inputs give the same bytes");
        assert_eq!(run(&reversed, to), want, "{to}: reversed inputs give the same bytes");
    }
    // Through the library: one accumulator fed in order, a tree of one accumulator per input
    // combined in another order, and the parallel fold of the CLI all give the same bytes.
    let merge = MergeOptions {
        sample_types: Some(vec![TypeSelector::parse("total-size"), TypeSelector::parse("total-count")]),
    };
    let load = LoadOptions { ddm_lines: true, ..LoadOptions::default() };
    let loaded: Vec<_> = inputs.iter().map(|p| load_input(p, &load).unwrap()).collect();
    let add = |m: &mut Merger, l: &heapconv::pipeline::load::LoadedInput| {
        for p in &l.profiles {
            m.add(p, l.annotate).unwrap();
        }
        for p in &l.flat {
            m.add_flat(p, false).unwrap();
        }
    };
    let mut one = Merger::new(merge.clone(), 1);
    for l in &loaded {
        add(&mut one, l);
    }
    let mut many = Vec::new();
    for l in loaded.iter().rev() {
        let mut m = Merger::new(merge.clone(), 1);
        add(&mut m, l);
        many.push(m);
    }
    let tree = merge_tree(many).unwrap().unwrap();
    let a = encode_merged(&one.finish().unwrap(), Format::Pprof).unwrap();
    let b = encode_merged(&tree.finish().unwrap(), Format::Pprof).unwrap();
    assert_eq!(a, b, "sequential and tree merges give the same bytes");
    assert_eq!(a, run(&forward, "pprof"), "the CLI's parallel merge gives the same bytes");
}

#[test]
fn merge_golden_outputs() {
    let dir = tmp();
    let out = dir.path().join("m.folded");
    let trace = "heaps_and_procs.pftrace";
    let alloc = "ddm/art.alloc";
    let d = data("");
    heapconv_in(
        &d,
        &["merge", trace, alloc, "--sample-types", "total-size,total-count", "--to", "folded", "-o", s(&out)],
        0,
    );
    check_golden("merge.mixed.folded", &std::fs::read_to_string(&out).unwrap());
    let pb = dir.path().join("m.pb.gz");
    heapconv_in(&d, &["merge", trace, "--heap", "libc.malloc", "-o", s(&pb)], 0);
    check_golden("merge.libc.pprof.txt", &pprof_text(&read_pprof(&pb)));
    // What pprof reads: the oracle's totals of the two libc.malloc dumps.
    if have_go() {
        let (_, totals) = raw_totals(&pprof_raw(&pb));
        let dumps: Vec<_> =
            oracle_last_dumps("heaps_and_procs").into_iter().filter(|d| d["heap"] == "libc.malloc").collect();
        let want: Vec<i64> = ["total_count", "total_size", "unreleased_count", "unreleased_size"]
            .iter()
            .map(|f| oracle_total(&dumps, f))
            .collect();
        assert_eq!(totals, want);
    }
}

/// Per-dump pprof files of the README's sample trace (pid 4242: dumps 1, 3 and 5).
fn sample_dumps(dir: &Path) -> (PathBuf, PathBuf) {
    heapconv_ok(&["profile", s(&root().join("examples/sample.pftrace")), "-o", s(dir), "-q"], 0);
    (dir.join("heap_dump.1.4242.libc.malloc.pb.gz"), dir.join("heap_dump.5.4242.libc.malloc.pb.gz"))
}

#[test]
fn diff_matches_go_tool_pprof_diff_base() {
    let dir = tmp();
    let (base, new) = sample_dumps(dir.path());
    let mut pairs = vec![(base.clone(), new.clone())];
    if let Some((a, b)) = go_heap() {
        pairs.push((a.clone(), b.clone()));
    }
    for (base, new) in pairs {
        let out = dir.path().join("diff.pb.gz");
        heapconv_ok(&["diff", s(&base), s(&new), "-o", s(&out)], 0);
        let p = read_pprof(&out);
        // BASE's samples are negated and labelled pprof::base=true, as -diff_base makes them.
        let key = p.string_table.iter().position(|x| x == "pprof::base").expect("label key") as i64;
        assert!(p.sample.iter().any(|smp| smp.label.iter().any(|l| l.key == key) && smp.value.iter().all(|&v| v <= 0)));
        if !have_go() {
            continue;
        }
        let (_, ours) = raw_totals(&pprof_raw(&out));
        let go = String::from_utf8(go_pprof(&["-raw", "-diff_base", s(&base), s(&new)])).unwrap();
        let (_, theirs) = raw_totals(&go);
        assert_eq!(ours, theirs, "diff totals equal go tool pprof -raw -diff_base's");
        let (_, tb) = raw_totals(&pprof_raw(&base));
        let (_, tn) = raw_totals(&pprof_raw(&new));
        let want: Vec<i64> = tn.iter().zip(&tb).map(|(n, b)| n - b).collect();
        assert_eq!(ours, want);
        // And go's -top on our diff equals its -top with -diff_base.
        let top_ours = go_pprof(&["-top", "-nodefraction=0", "-unit=B", s(&out)]);
        let top_go = go_pprof(&["-top", "-nodefraction=0", "-unit=B", "-diff_base", s(&base), s(&new)]);
        let rows = |t: &[u8]| {
            let t = String::from_utf8_lossy(t).into_owned();
            t.lines().skip_while(|l| !l.trim_start().starts_with("flat")).skip(1).map(String::from).collect::<Vec<_>>()
        };
        assert_eq!(rows(&top_ours), rows(&top_go));
    }
}

#[test]
fn diff_golden_outputs_and_normalization() {
    let dir = tmp();
    let (base, new) = sample_dumps(dir.path());
    let folded = dir.path().join("d.folded");
    heapconv_ok(&["diff", s(&base), s(&new), "--to", "folded", "-o", s(&folded)], 0);
    let names = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_owned();
    let (bn, nn) = (names(&base), names(&new));
    let text = std::fs::read_to_string(&folded).unwrap();
    check_golden("diff.sample.folded", &text);
    // Every line is `stack BEFORE AFTER`, and the columns sum to the two totals.
    let (mut before, mut after) = (0i64, 0i64);
    for l in text.lines() {
        let mut parts = l.rsplitn(3, ' ');
        after += parts.next().unwrap().parse::<i64>().unwrap();
        before += parts.next().unwrap().parse::<i64>().unwrap();
    }
    let total = |p: &Path| read_pprof(p).sample.iter().map(|x| x.value[3]).sum::<i64>();
    assert_eq!((before, after), (total(&base), total(&new)));
    let json = dir.path().join("d.json");
    heapconv_in(dir.path(), &["diff", &bn, &nn, "--to", "json", "-o", "d.json", "--top", "8"], 0);
    let text = std::fs::read_to_string(&json).unwrap();
    check_golden("diff.sample.json", &text);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["total"]["before"].as_i64(), Some(before));
    assert_eq!(v["total"]["after"].as_i64(), Some(after));
    let stacks = v["stacks"].as_array().unwrap();
    assert!(!stacks.is_empty());
    let deltas: Vec<i64> = stacks.iter().map(|x| x["delta"].as_i64().unwrap()).collect();
    assert!(deltas.windows(2).all(|w| w[0] >= w[1]) && deltas[0] > 0, "largest growth first");
    // --normalize scales BASE to NEW's total: the before column then sums to NEW's total.
    let norm = dir.path().join("n.folded");
    heapconv_ok(&["diff", s(&base), s(&new), "--to", "folded", "--normalize", "-o", s(&norm)], 0);
    let before_n: i64 = std::fs::read_to_string(&norm)
        .unwrap()
        .lines()
        .map(|l| l.rsplit(' ').nth(1).unwrap().parse::<i64>().unwrap())
        .sum();
    assert!((before_n - after).abs() <= text.lines().count() as i64, "{before_n} vs {after}");
}

#[test]
fn diff_svg_explains_every_frame() {
    let dir = tmp();
    let (base, new) = sample_dumps(dir.path());
    let svg = dir.path().join("d.svg");
    heapconv_ok(&["diff", s(&base), s(&new), "--to", "svg", "-o", s(&svg)], 0);
    let text = std::fs::read_to_string(&svg).unwrap();
    let title = format!("{} -&gt; {}", base.display(), new.display());
    assert!(text.contains(&title) || text.contains(&title.replace("&gt;", ">")), "titled BASE -> NEW");
    assert!(text.contains("not normalized"));
    // Every frame's tooltip gives before, after, delta and delta %, including the root, whose
    // numbers are the totals.
    let titles: Vec<&str> = text.split("<title>").skip(1).map(|t| &t[..t.find("</title>").unwrap()]).collect();
    assert!(titles.len() > 10);
    for t in &titles {
        assert!(t.contains("(before ") && t.contains(", after ") && t.contains(", delta "), "{t}");
    }
    let f = heapconv::encode::labels::human_bytes;
    let total = |p: &Path| read_pprof(p).sample.iter().map(|x| x.value[3]).sum::<i64>();
    let root = titles.iter().find(|t| t.starts_with("all (")).expect("root frame");
    assert!(root.contains(&format!("before {}, after {}", f(total(&base)), f(total(&new)))), "{root}");
    // A parent frame shows the change of everything below it (not 0, as leaf-only diffs do).
    assert!(titles.iter().any(|t| t.starts_with("__start_thread (") && !t.contains("delta 0 B")), "{titles:?}");
}

#[test]
fn growth_gate_exit_codes() {
    let dir = tmp();
    let (base, new) = sample_dumps(dir.path());
    let out = dir.path().join("d.json");
    let run =
        |limit: &str| heapconv(&["diff", s(&base), s(&new), "--to", "json", "-o", s(&out), "--fail-if-growth", limit]);
    // NEW holds 864 KiB -> 2.33 MiB unreleased: about 1.5 MiB (+176%) more.
    let fail = run("1MB");
    assert_eq!(fail.status.code(), Some(5), "{}", String::from_utf8_lossy(&fail.stderr));
    let err = String::from_utf8_lossy(&fail.stderr);
    assert!(err.contains("growth gate failed") && err.contains("allowed: 1.00 MiB (1048576 bytes)"), "{err}");
    assert!(out.exists(), "outputs are written when the gate fails");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["gate"]["passed"], false);
    assert_eq!(run("2MB").status.code(), Some(0));
    assert_eq!(run("150%").status.code(), Some(5));
    assert_eq!(run("200%").status.code(), Some(0));
    // Shrinking always passes; a bad limit is a usage error.
    let back = heapconv(&["diff", s(&new), s(&base), "-o", s(&out), "--to", "json", "--fail-if-growth", "0"]);
    assert_eq!(back.status.code(), Some(0));
    let bad = heapconv(&["diff", s(&base), s(&new), "-o", s(&out), "--fail-if-growth", "lots"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn top_matches_go_tool_pprof_top() {
    let dir = tmp();
    let (_, new) = sample_dumps(dir.path());
    let mut inputs = vec![new];
    if let Some((a, _)) = go_heap() {
        inputs.push(a.clone());
    }
    for input in inputs {
        for (index, unit) in [("inuse_space", "-unit=B"), ("alloc_objects", "")] {
            let sample_type = if input.to_string_lossy().contains("heap_dump") {
                if index == "inuse_space" { "Unreleased malloc size" } else { "Total malloc count" }
            } else {
                index
            };
            let out = heapconv_ok(&["top", s(&input), "--sample-type", sample_type, "-n", "6", "--json"], 0);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let ours: Vec<(i64, i64, String)> = v["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (r["flat"].as_i64().unwrap(), r["cum"].as_i64().unwrap(), r["name"].as_str().unwrap().to_owned())
                })
                .collect();
            assert_eq!(ours.len(), 6);
            if !have_go() {
                continue;
            }
            let idx = format!("-sample_index={sample_type}");
            let mut args = vec!["-top", "-nodecount=6", "-nodefraction=0", idx.as_str()];
            if !unit.is_empty() {
                args.push(unit);
            }
            args.push(s(&input));
            let text = String::from_utf8(go_pprof(&args)).unwrap();
            let theirs: Vec<(i64, i64, String)> = text
                .lines()
                .skip_while(|l| !l.trim_start().starts_with("flat"))
                .skip(1)
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let num = |x: &str| x.trim_end_matches('B').parse::<i64>().unwrap();
                    (num(f[0]), num(f[3]), f[5..].join(" "))
                })
                .collect();
            assert_eq!(ours, theirs, "{} {sample_type}", input.display());
        }
    }
}

#[test]
fn top_golden_and_views() {
    let sample = root().join("examples/sample.pftrace");
    let out = heapconv_in(&root(), &["top", "examples/sample.pftrace", "--pid", "4242", "-n", "8"], 0);
    check_golden("top.sample.txt", &String::from_utf8(out.stdout).unwrap());
    let out =
        heapconv_in(&root(), &["top", "examples/sample.pftrace", "--pid", "4242", "--by", "mapping", "--json"], 0);
    check_golden("top.sample.mapping.json", &String::from_utf8(out.stdout).unwrap());
    // By stack: flat = cum, and all stacks together are the total.
    let out = heapconv_ok(&["top", s(&sample), "--by", "stack", "-n", "0", "--json"], 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["flat"] == r["cum"]));
    assert_eq!(rows.iter().map(|r| r["flat"].as_i64().unwrap()).sum::<i64>(), v["total"].as_i64().unwrap());
    assert_eq!(v["rows_total"].as_u64(), Some(rows.len() as u64));
}

#[test]
fn pprof_inputs_work_in_convert_and_inspect() {
    let dir = tmp();
    let trace = data("art_frames.pftrace");
    let pb = dir.path().join("art.pb.gz");
    heapconv_ok(&["convert", s(&trace), "-o", s(&pb)], 0);
    // Folded from the pprof equals folded from the trace (annotations not added twice).
    let from_trace = heapconv_ok(&["convert", s(&trace), "--to", "folded"], 0).stdout;
    let from_pprof = heapconv_ok(&["convert", s(&pb), "--to", "folded"], 0).stdout;
    assert_eq!(String::from_utf8(from_pprof).unwrap(), String::from_utf8(from_trace).unwrap());
    // pprof -> pprof keeps samples, names, mappings, period and comments.
    let again = dir.path().join("again.pb.gz");
    heapconv_ok(&["convert", s(&pb), "-o", s(&again)], 0);
    let (p, q) = (read_pprof(&pb), read_pprof(&again));
    assert_eq!(normalize(&p), normalize(&q));
    assert_eq!((p.period, p.period_type.is_some()), (q.period, q.period_type.is_some()));
    let comments = |x: &pp::Profile| x.comment.iter().map(|&c| x.string_table[c as usize].clone()).collect::<Vec<_>>();
    for c in comments(&p) {
        assert!(comments(&q).contains(&c), "comment {c:?} kept");
    }
    // Commands that need a trace say so.
    let e = heapconv_ok(&["profile", s(&pb), "-o", s(dir.path())], 1);
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("is a pprof profile; `heapconv profile` reads Perfetto traces")
    );
    let text = String::from_utf8(heapconv_ok(&["inspect", s(&pb)], 0).stdout).unwrap();
    assert!(text.contains("(pprof)") && text.contains("Unreleased malloc size/bytes [default]"), "{text}");
    let json = heapconv_ok(&["inspect", s(&pb), "--json"], 0).stdout;
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert!(v["profiles"][0]["totals"]["unreleased_size"].as_i64().unwrap() > 0);
}

#[test]
fn traces_are_never_sniffed_as_pprof() {
    let mut files = vec![root().join("examples/sample.pftrace")];
    for e in std::fs::read_dir(data("")).unwrap().chain(std::fs::read_dir(data("heapgraph")).unwrap()) {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "pftrace") {
            files.push(p);
        }
    }
    assert!(files.len() > 20);
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let kind = sniff(&bytes[..bytes.len().min(64)]);
        assert_ne!(kind, InputKind::Pprof, "{}", f.display());
    }
    // And heapconv's own pprof (sample types first) sniffs as pprof.
    let pb = heapconv_ok(&["convert", s(&data("names.pftrace")), "--to", "pprof"], 0).stdout;
    let raw = {
        use std::io::Read;
        let mut v = Vec::new();
        flate2::read::GzDecoder::new(pb.as_slice()).read_to_end(&mut v).unwrap();
        v
    };
    assert_eq!(sniff(&raw[..64]), InputKind::Pprof);
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A small valid profile: one sample at one location in one function.
fn tiny() -> pp::Profile {
    pp::Profile {
        sample_type: vec![pp::ValueType { r#type: 1, unit: 2 }],
        sample: vec![pp::Sample { location_id: vec![1], value: vec![42], label: vec![] }],
        location: vec![pp::Location {
            id: 1,
            line: vec![pp::Line { function_id: 1, line: 3, column: 0 }],
            ..Default::default()
        }],
        function: vec![pp::Function { id: 1, name: 3, system_name: 3, filename: 4, start_line: 0 }],
        string_table: vec!["".into(), "space".into(), "bytes".into(), "f".into(), "f.c".into()],
        ..Default::default()
    }
}

#[test]
fn hostile_pprof_inputs_give_clear_errors() {
    let dir = tmp();
    let out = dir.path().join("o.folded");
    let fails = |input: &Path, extra: &[&str], want: &str| {
        let mut args = vec!["merge", s(input), "--to", "folded", "-o", s(&out)];
        args.extend_from_slice(extra);
        let r = heapconv(&args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{}: {err}", input.display());
        assert!(err.contains(want), "{}: wanted {want:?} in {err}", input.display());
        assert!(err.contains(&*input.to_string_lossy()), "names the file: {err}");
    };
    let ok = write(dir.path(), "ok.pb", &tiny().encode_to_vec());
    heapconv_ok(&["merge", s(&ok), "--to", "folded", "-o", s(&out)], 0);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "f 42\n");

    let mut p = tiny();
    p.sample[0].location_id = vec![1, 99];
    fails(
        &write(dir.path(), "undefined-loc.pb", &p.encode_to_vec()),
        &[],
        "sample 0 refers to location 99, which is not defined",
    );
    let mut p = tiny();
    p.location[0].line[0].function_id = 7;
    fails(&write(dir.path(), "undefined-fn.pb", &p.encode_to_vec()), &[], "location 1 refers to function 7");
    // A mapping id that names no mapping is read as go reads it: a location without one.
    let mut p = tiny();
    p.location[0].mapping_id = 3;
    let undefined_map = write(dir.path(), "undefined-map.pb", &p.encode_to_vec());
    heapconv_ok(&["merge", s(&undefined_map), "--to", "folded", "-o", s(&out)], 0);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "f 42\n");
    let mut p = tiny();
    p.function[0].name = 1000;
    fails(&write(dir.path(), "bad-string.pb", &p.encode_to_vec()), &[], "refers to string 1000");
    let mut p = tiny();
    p.sample[0].value = vec![1, 2];
    fails(&write(dir.path(), "values.pb", &p.encode_to_vec()), &[], "sample 0 has 2 values");
    let mut p = tiny();
    p.location.push(p.location[0].clone());
    fails(&write(dir.path(), "dup.pb", &p.encode_to_vec()), &[], "location id 1 is defined twice");
    // Truncated in the middle of a message.
    let whole = tiny().encode_to_vec();
    fails(&write(dir.path(), "trunc.pb", &whole[..whole.len() - 3]), &[], "not a valid pprof profile");
    let gz = heapconv::encode::pprof::gzip(&whole);
    fails(&write(dir.path(), "trunc.pb.gz", &gz[..gz.len() - 6]), &[], "reading");
    // A gzip bomb: a valid start, then 64 MiB of one string; the cap stops it.
    let mut bomb =
        pp::Profile { sample_type: vec![pp::ValueType { r#type: 1, unit: 1 }], ..Default::default() }.encode_to_vec();
    bomb.push(0x32);
    prost::encoding::encode_varint(64 << 20, &mut bomb);
    bomb.resize(bomb.len() + (64 << 20), b'a');
    let bomb = write(dir.path(), "bomb.pb.gz", &heapconv::encode::pprof::gzip(&bomb));
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
    fails(&bomb, &["--max-pprof-mib", "16"], "limit of 16777216 bytes");
}

#[test]
fn damaged_pprof_never_panics() {
    // Byte flips, truncations and splices of a real profile (heapconv's pprof of a trace with
    // inline chains, labels and several mappings): every one decodes or fails with an error.
    let pb = heapconv_ok(&["convert", s(&data("inline_q_chain.pftrace")), "--pid", "300", "--to", "pprof"], 0).stdout;
    let mut whole = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(pb.as_slice()), &mut whole).unwrap();
    let mut go = tiny().encode_to_vec();
    go.extend_from_slice(&whole[..whole.len() / 2]);
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut decoded = 0;
    for round in 0..3000 {
        let base = if round % 2 == 0 { &whole } else { &go };
        let mut b = base.clone();
        match round % 3 {
            0 => {
                for _ in 0..1 + next(4) {
                    let i = next(b.len());
                    b[i] = next(256) as u8;
                }
            }
            1 => b.truncate(next(b.len())),
            _ => {
                let (i, j) = (next(b.len()), next(b.len()));
                let piece = b[i.min(j)..i.max(j)].to_vec();
                let at = next(b.len());
                b.splice(at..at, piece);
            }
        }
        if let Ok(p) = heapconv::decode::pprof::decode_pprof(&b, "fuzz") {
            decoded += 1;
            // What decodes also merges and encodes.
            let mut m = Merger::new(MergeOptions::default(), 1);
            if m.add_flat(&p, false).is_ok() {
                if let Ok(f) = m.finish() {
                    let _ = encode_merged(&f, Format::Pprof);
                    let _ = encode_merged(&f, Format::Folded);
                }
            }
        }
    }
    assert!(decoded > 50, "some damaged inputs still decode ({decoded})");
}

/// `--min-symbolized` without `--symbol-dir` gates on the symbols the inputs already have
/// (names from heapprofd, pprof functions), on any command, actual vs allowed printed.
#[test]
fn min_symbolized_counts_the_names_inputs_have() {
    let dir = tmp();
    let sample = root().join("examples/sample.pftrace");
    // sample.pftrace: 76 native frames, 71 of them named (5 frames of libgallery.so,
    // libhwui.so, libskia.so and libcameraservice.so have no name).
    let o = heapconv_ok(&["convert", s(&sample), "--pid", "4242", "--to", "folded", "--min-symbolized", "100"], 4);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("symbolized 71 of 76 native frames (93.4%)"), "{err}");
    assert!(err.contains("counting the names the input has (no --symbol-dir)"), "{err}");
    assert!(err.contains("symbolization coverage 93.4% is below --min-symbolized 100%"), "{err}");
    assert!(err.contains("NoSymbolDirectory") && err.contains("AlreadySymbolized"), "{err}");
    assert!(!o.stdout.is_empty(), "the output is still written");
    heapconv_ok(&["convert", s(&sample), "--pid", "4242", "--to", "folded", "--min-symbolized", "93.4"], 0);
    // The same gate on merge, top and diff.
    let out = dir.path().join("m.pb.gz");
    heapconv_ok(&["merge", s(&sample), "-o", s(&out), "--min-symbolized", "95"], 4);
    heapconv_ok(&["top", s(&sample), "--min-symbolized", "95"], 4);
    heapconv_ok(&["top", s(&sample), "--min-symbolized", "90"], 0);
    // A pprof input counts its own frames: heapconv's pprof of pid 4242 lacks names for the
    // frames the trace lacks them for.
    let pb = dir.path().join("p.pb.gz");
    heapconv_ok(&["convert", s(&sample), "--pid", "4242", "-o", s(&pb)], 0);
    let o = heapconv_ok(&["convert", s(&pb), "--to", "folded", "--min-symbolized", "100"], 4);
    assert!(String::from_utf8_lossy(&o.stderr).contains("is below --min-symbolized 100%"));
    let d = dir.path().join("d.pb.gz");
    heapconv_ok(&["diff", s(&pb), s(&pb), "-o", s(&d), "--min-symbolized", "100"], 4);
    // A Go profile is fully symbolized.
    if let Some((a, b)) = go_heap() {
        let o = heapconv_ok(&["merge", s(a), s(b), "-o", s(&out), "--min-symbolized", "100"], 0);
        assert!(String::from_utf8_lossy(&o.stderr).contains("(100.0%)"));
    }
    // A batch reports the coverage per input in its summary.
    let summary = dir.path().join("s.json");
    let outdir = dir.path().join("out");
    heapconv_ok(
        &["convert", s(&sample), "--batch", "-o", s(&outdir), "--summary-json", s(&summary), "--min-symbolized", "99"],
        4,
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["symbolization"]["frames"], 76);
    assert_eq!(r["symbolization"]["frames_symbolized"], 71);
    assert_eq!(r["gate"]["passed"], false);
    assert_eq!(r["gate"]["actual"], 93.421);
}

/// Total of the column of `kind` of every profile an input gives (heapconv's reader).
fn kind_total(path: &Path, load: &LoadOptions, kind: heapconv::model::ValueKind) -> i64 {
    let l = load_input(path, load).unwrap();
    let tree: i64 = l.profiles.iter().map(|p| p.total(p.value_index(kind).unwrap())).sum();
    let flat: i64 = l.flat.iter().map(|p| p.total(p.value_index(kind).unwrap())).sum();
    tree + flat
}

#[test]
fn merge_selects_dumps_of_traces_and_mixes_ddm_captures_and_pprof() {
    use heapconv::model::ValueKind::{TotalCount, TotalSize};
    let dir = tmp();
    let sample = root().join("examples/sample.pftrace");
    let alloc = data("ddm/art.alloc");
    // A pprof input: heapconv's profile of cameraserver (pid 1187), its second dump.
    let pb = dir.path().join("camera.pb.gz");
    heapconv_ok(&["convert", s(&sample), "--pid", "1187", "--dump", "2", "-o", s(&pb)], 0);
    let out = dir.path().join("m.pb.gz");
    // The three kinds of input, pid 4242's dumps of the trace, two sample types; then `extra`.
    let merge = |extra: &[&str]| {
        let mut args = vec!["merge", s(&sample), s(&alloc), s(&pb), "--pid", "4242", "--dump", "all"];
        args.extend(["--sample-types", "total-size,total-count"]);
        args.extend_from_slice(extra);
        heapconv_ok(&args, 0);
    };
    merge(&["-o", s(&out)]);
    // What each part holds, read on its own: all three dumps of pid 4242, the capture, the
    // pprof file (which --pid does not filter: it is not a trace).
    let all = LoadOptions {
        select: Selection { pids: vec![4242], heap: None, dump: DumpSelect::All },
        ..LoadOptions::default()
    };
    let parts = |kind| kind_total(&sample, &all, kind) + kind_total(&alloc, &all, kind) + kind_total(&pb, &all, kind);
    let want = [parts(TotalSize), parts(TotalCount)];
    let got = heapconv::pipeline::load::load_input(&out, &LoadOptions::default()).unwrap().flat[0].clone();
    assert_eq!([got.total(0), got.total(1)], want);
    // pid 4242's dumps by the trace's own report: 2.14 + 4.98 + 7.60 MiB allocated in all.
    let one = LoadOptions {
        select: Selection { pids: vec![4242], heap: None, dump: DumpSelect::Nth(3) },
        ..LoadOptions::default()
    };
    let last = kind_total(&sample, &one, TotalSize);
    assert!((7 << 20..8 << 20).contains(&last), "{last}");
    if have_go() {
        let (t, totals) = raw_totals(&pprof_raw(&out));
        assert_eq!(t.replace("[dflt]", "").trim(), "alloc_space/bytes alloc_objects/count");
        assert_eq!(totals, want, "go tool pprof -raw reads the same totals");
        // The period: heapprofd's sampling interval (4096 bytes) is the largest of the inputs'.
        assert_eq!(read_pprof(&out).period, read_pprof(&pb).period);
    }
    // The same merge as a flame graph: its root is the merged total of the first type.
    let svg = dir.path().join("m.svg");
    merge(&["--to", "svg", "-o", s(&svg)]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<?xml") && text.contains("</svg>"));
    let f = heapconv::encode::labels::human_bytes(want[0]);
    assert!(text.contains(&format!("all ({f}")), "the root's tooltip gives the merged total {f}");
    // --dump N picks that dump only: merging dump 2 with itself doubles it.
    let two = dir.path().join("two.pb.gz");
    heapconv_ok(&["merge", s(&sample), s(&sample), "--pid", "4242", "--dump", "2", "-o", s(&two)], 0);
    let nth = LoadOptions {
        select: Selection { pids: vec![4242], heap: None, dump: DumpSelect::Nth(2) },
        ..LoadOptions::default()
    };
    let got = load_input(&two, &LoadOptions::default()).unwrap().flat[0].clone();
    let i = got.value_index(TotalSize).unwrap();
    assert_eq!(got.total(i), 2 * kind_total(&sample, &nth, TotalSize));
    // A selection that matches nothing in a trace is an error naming it.
    let e = heapconv_ok(&["merge", s(&sample), "--pid", "999", "-o", s(&two)], 1);
    assert!(String::from_utf8_lossy(&e.stderr).contains("no dump matches the selection"));
}

/// Uncompressed pprof files of the `dumps` dumps of one process of a synthetic heapprofd trace
/// (`heapconv_testdata::heapprofd`, then `heapconv profile --raw`), in `dir`: large inputs made
/// in the test.
fn synthetic_pprofs(dir: &Path, callstacks: usize, depth: usize, dumps: usize) -> Vec<PathBuf> {
    use heapconv_testdata::heapprofd::{SynthOptions, write_synthetic_trace};
    let trace = dir.join("synth.pftrace");
    let opts = SynthOptions { callstacks, depth, dumps, processes: 1, ..Default::default() };
    let mut buf = Vec::new();
    write_synthetic_trace(&opts, &mut buf).unwrap();
    std::fs::write(&trace, buf).unwrap();
    let raw = dir.join("raw");
    heapconv_ok(&["profile", "--raw", s(&trace), "-o", s(&raw), "-q"], 0);
    (1..=dumps).map(|i| raw.join(format!("heap_dump.{i}.1000.libc.malloc.pb"))).collect()
}

/// A merge of more than 32,768 samples is written as gzip members encoded and compressed in
/// parallel, and streamed to its file as they are ready: the bytes are the same through a
/// file and standard output, with one thread or all, and they decompress to the library's
/// uncompressed encoding, whose totals are the inputs' sums (and go tool pprof's).
#[test]
fn large_merges_are_parallel_gzip_members_with_the_same_bytes_everywhere() {
    use std::io::Read;
    let dir = tmp();
    let [a, b] = &synthetic_pprofs(dir.path(), 40_000, 8, 2)[..] else { panic!("two dumps") };
    let file = dir.path().join("m.pb.gz");
    heapconv_ok(&["merge", s(a), s(b), "-o", s(&file)], 0);
    let streamed = std::fs::read(&file).unwrap();
    let stdout = heapconv_ok(&["merge", s(a), s(b), "-o", "-"], 0).stdout;
    assert!(stdout == streamed, "standard output and the streamed file hold the same bytes");
    let one = dir.path().join("one.pb.gz");
    heapconv_ok(&["merge", s(b), s(a), "--jobs", "1", "-o", s(&one)], 0);
    assert!(std::fs::read(&one).unwrap() == streamed, "one thread, inputs swapped: the same bytes");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file left: {leftovers:?}");

    let mut first = Vec::new();
    flate2::read::GzDecoder::new(&streamed[..]).read_to_end(&mut first).unwrap();
    let mut all = Vec::new();
    flate2::read::MultiGzDecoder::new(&streamed[..]).read_to_end(&mut all).unwrap();
    assert!(first.len() < all.len() / 10, "several members: the first holds {} of {} bytes", first.len(), all.len());

    let load = LoadOptions::default();
    let mut m = Merger::new(MergeOptions::default(), 1);
    for p in [a, b] {
        for f in &load_input(p, &load).unwrap().flat {
            m.add_flat(f, false).unwrap();
        }
    }
    let merged = m.finish().unwrap();
    let opts = heapconv::encode::pprof::PprofOptions { annotations: false, extras: true };
    assert!(all == heapconv::encode::pprof::encode_pprof_flat(&merged, &opts), "the library's encoding");
    let p = pp::Profile::decode(all.as_slice()).unwrap();
    assert_eq!(p.sample.len(), 40_000);
    let total = |p: &pp::Profile| -> Vec<i64> {
        (0..p.sample_type.len()).map(|t| p.sample.iter().map(|smp| smp.value[t]).sum()).collect()
    };
    let (pa, pb) = (read_pprof(a), read_pprof(b));
    let sum: Vec<i64> = total(&pa).iter().zip(total(&pb)).map(|(x, y)| x + y).collect();
    assert_eq!(total(&p), sum, "totals are the sum of the inputs");
    if have_go() {
        let go = dir.path().join("go.pb.gz");
        std::fs::write(&go, go_pprof(&["-proto", s(a), s(b)])).unwrap();
        assert_eq!(raw_totals(&pprof_raw(&file)).1, raw_totals(&pprof_raw(&go)).1, "go tool pprof reads every member");
    }
}

/// Memory follows the distinct stacks, not the number of inputs: merging 32 copies of a
/// profile (100,000 stacks) takes little more memory than merging 4 of them.
#[test]
fn merge_memory_does_not_grow_with_the_number_of_inputs() {
    let dir = tmp();
    let [input] = &synthetic_pprofs(dir.path(), 100_000, 12, 1)[..] else { panic!("one dump") };
    let out = dir.path().join("m.pb.gz");
    let peak = |copies: usize| {
        let mut args = vec!["merge", "--jobs", "2", "-o", s(&out)];
        args.extend(std::iter::repeat_n(s(input), copies));
        peak_rss_kib(&args)
    };
    let (four, many) = (peak(4), peak(32));
    let p = read_pprof(&out);
    assert_eq!(p.sample.len(), 100_000, "32 copies merge into the stacks of one");
    assert!(
        many * 10 < four * 15,
        "32 inputs took {many} KiB, 4 inputs {four} KiB: memory grew with the number of inputs"
    );
}

/// A real Go heap profile (no `default_sample_type`: the last type, inuse_space), and the
/// same profile written again by `go tool pprof -proto -sample_index=alloc_space` (go 1.19
/// writes no default there either): `convert` and `top` show the type `go tool pprof -top`
/// shows, with go's total.
#[test]
fn go_heap_profiles_show_the_type_go_tool_pprof_shows() {
    let Some((_, rate512)) = go_heap() else { return };
    let dir = tmp();
    let rewritten = dir.path().join("alloc_space.pb.gz");
    let go = |args: &[&str], path: &Path| {
        let out = Command::new("go").args(args).arg(path).env("PPROF_TMPDIR", dir.path()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    std::fs::write(&rewritten, go(&["tool", "pprof", "-proto", "-sample_index=alloc_space"], rate512)).unwrap();
    for path in [rate512.clone(), rewritten] {
        let top = String::from_utf8(go(&["tool", "pprof", "-top", "-symbolize=none"], &path)).unwrap();
        let ty = top.lines().find_map(|l| l.strip_prefix("Type: ")).expect("go names the type").to_owned();
        let (types, samples) = parse_raw(&pprof_raw(&path));
        let index = types.split_whitespace().position(|t| t.split('/').next() == Some(ty.as_str())).unwrap();
        let want: i64 = samples.iter().map(|s| s.0[index]).sum();
        assert!(want > 0);
        let folded = heapconv_ok(&["convert", path.to_str().unwrap(), "--to", "folded", "-o", "-"], 0);
        let total: i64 = String::from_utf8(folded.stdout)
            .unwrap()
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap())
            .sum();
        assert_eq!(total, want, "{ty}");
        let top = heapconv_ok(&["top", "--json", path.to_str().unwrap()], 0);
        let j: serde_json::Value = serde_json::from_slice(&top.stdout).unwrap();
        assert_eq!(j["sample_type"], ty.as_str());
        assert_eq!(j["total"].as_i64(), Some(want), "{ty}");
    }
}

/// The merged pprof bytes of `path` read the old way (model tables, [`Merger::add_flat`]) and
/// the way `merge` reads pprof inputs (no tables, [`Merger::add_pprof`]), or their errors.
fn merged_both_ways(path: &Path) -> (Result<Vec<u8>, String>, Result<Vec<u8>, String>) {
    let load = LoadOptions { drop_empty_stacks: true, ..LoadOptions::default() };
    let old = load_input(path, &load).map_err(|e| e.to_string()).and_then(|l| {
        let mut m = Merger::new(MergeOptions::default(), 1);
        m.add_flat(&l.flat[0], false).map_err(|e| e.to_string())?;
        let f = m.finish().map_err(|e| e.to_string())?;
        encode_merged(&f, Format::Pprof).map_err(|e| e.to_string())
    });
    let bytes = std::fs::read(path).unwrap();
    let lean = heapconv::decode::pprof::decode_pprof_lean(&bytes, &path.display().to_string())
        .map_err(|e| e.to_string())
        .and_then(|l| {
            let mut m = Merger::new(MergeOptions::default(), 1);
            let parts = heapconv::merge::PprofParts {
                profile: &l.profile,
                strings: &l.strings,
                mappings: &l.mappings,
                frames: &l.frames,
                lines: &l.lines,
            };
            m.add_pprof(&parts, 0).map_err(|e| e.to_string())?;
            let f = m.finish().map_err(|e| e.to_string())?;
            encode_merged(&f, Format::Pprof).map_err(|e| e.to_string())
        });
    (old, lean)
}

#[test]
fn pprof_read_without_tables_merges_as_with_them() {
    let dir = tmp();
    // Everything the lean reader must treat as the model does: a string written twice (label
    // key "bytes" at 5 and 11, its unit given only on a later sample), identical mappings, a
    // mapping only an unused location has (another start), a location written twice, samples
    // without locations or with only a `[no stack]` one, a zero sample, inline lines.
    let st = ["", "space", "bytes", "f", "f.c", "bytes", "g", "lib.so", "[no stack]", "k", "v", "bytes", "h"];
    let map = |id, start| pp::Mapping {
        id,
        memory_start: start,
        memory_limit: start + 0x1000,
        filename: 7,
        ..Default::default()
    };
    let loc = |id, mapping_id, address, lines: Vec<(u64, i64)>| pp::Location {
        id,
        mapping_id,
        address,
        line: lines.into_iter().map(|(function_id, line)| pp::Line { function_id, line, column: 0 }).collect(),
        ..Default::default()
    };
    let num = |key, num, num_unit| pp::Label { key, num, num_unit, ..Default::default() };
    let sample = |location_id: Vec<u64>, value, label| pp::Sample { location_id, value: vec![value], label };
    let p = pp::Profile {
        sample_type: vec![pp::ValueType { r#type: 1, unit: 2 }],
        mapping: vec![map(1, 0x1000), map(2, 0x1000), map(3, 0x800)],
        function: vec![
            pp::Function { id: 1, name: 3, system_name: 3, filename: 4, start_line: 0 },
            pp::Function { id: 2, name: 6, ..Default::default() },
            pp::Function { id: 3, name: 8, ..Default::default() },
            pp::Function { id: 4, name: 12, filename: 4, ..Default::default() },
        ],
        location: vec![
            loc(1, 1, 0x1010, vec![(1, 3), (4, 9)]),
            loc(2, 2, 0x1020, vec![(2, 0)]),
            loc(3, 0, 0, vec![(3, 0)]),
            loc(4, 1, 0x1010, vec![(1, 3), (4, 9)]),
            loc(5, 3, 0x900, vec![(2, 0)]),
            loc(6, 9, 0x30, vec![]),
        ],
        sample: vec![
            sample(vec![1, 2], 5, vec![num(5, 64, 0)]),
            sample(vec![4, 2], 7, vec![num(11, 64, 0), pp::Label { key: 9, str: 10, ..Default::default() }]),
            sample(vec![], 3, vec![]),
            sample(vec![3], 4, vec![]),
            sample(vec![5, 2], 0, vec![]),
            sample(vec![6, 1], 2, vec![num(5, 32, 2)]),
        ],
        string_table: st.iter().map(|s| (*s).to_owned()).collect(),
        ..Default::default()
    };
    let path = write(dir.path(), "odd.pb", &p.encode_to_vec());
    let (old, lean) = merged_both_ways(&path);
    assert!(old.is_ok(), "{old:?}");
    assert_eq!(old, lean);
    // The real profiles of the test data, and damaged ones (errors and all).
    let pb = heapconv_ok(&["convert", s(&data("inline_q_chain.pftrace")), "--pid", "300", "--to", "pprof"], 0).stdout;
    let mut whole = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(pb.as_slice()), &mut whole).unwrap();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut same_output = 0;
    for round in 0..600 {
        let base = if round % 2 == 0 { &whole } else { &p.encode_to_vec() };
        let mut b = base.clone();
        if round >= 2 {
            if round % 3 == 0 {
                let i = next(b.len());
                b[i] = next(256) as u8;
            } else {
                b.truncate(next(b.len()));
            }
        }
        let path = write(dir.path(), "damaged.pb", &b);
        let (old, lean) = merged_both_ways(&path);
        if old.is_ok() {
            same_output += 1;
        }
        match (&old, &lean) {
            (Ok(_), Ok(_)) => assert_eq!(old, lean, "round {round}"),
            // Errors of the decoder are the same; the lean reader may fail where the old way
            // fails later (a merged profile of nothing), never the other way round.
            (Err(_), Err(_)) => {}
            _ => panic!("round {round}: {old:?} vs {lean:?}"),
        }
    }
    assert!(same_output > 20, "some inputs merge ({same_output})");
}
