//! The batch front end: many inputs per command, output names, order and thread independence,
//! shards that partition the inputs, bad inputs that do not stop a batch, and the summary.
//!
//! Inputs are small synthetic heapprofd traces written by `heapconv_testdata::heapprofd` (the
//! generator behind the test-data crate's `synth` binary, which writes traces as heapprofd
//! does), plus fixtures of
//! `tests/data` (a DDM capture, a truncated trace, heap graph traces).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::{data, decode_pprof, heapconv, heapconv_ok, s, stderr_of};
use serde_json::Value;

/// Writes a small synthetic trace (one process, two dumps) to `path`.
fn synth(path: &Path, seed: u64) {
    let opts = heapconv_testdata::heapprofd::SynthOptions {
        callstacks: 20 + (seed as usize % 7) * 5,
        depth: 8,
        dumps: 2,
        processes: 1 + (seed as usize % 2),
        seed,
        ..Default::default()
    };
    let mut buf = Vec::new();
    heapconv_testdata::heapprofd::write_synthetic_trace(&opts, &mut buf).unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, buf).unwrap();
}

/// A tree of inputs: 12 traces (some in subdirectories, one gzipped), a DDM capture, a
/// README and a hidden file (neither is an input).
fn tree(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for i in 0..12u64 {
        let rel = match i % 3 {
            0 => format!("t{i:02}.pftrace"),
            1 => format!("run1/t{i:02}.pftrace"),
            _ => format!("run2/deep/t{i:02}.perfetto-trace"),
        };
        let p = root.join(rel);
        synth(&p, i + 1);
        files.push(p);
    }
    let gz = root.join("run1/zipped.pftrace.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, &std::fs::read(&files[0]).unwrap()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    files.push(gz);
    let alloc = root.join("run2/art.alloc");
    std::fs::copy(data("ddm/art.alloc"), &alloc).unwrap();
    files.push(alloc);
    std::fs::write(root.join("README.md"), "# captures of the nightly run\n").unwrap();
    std::fs::write(root.join("run1/.hidden.pftrace"), std::fs::read(&files[0]).unwrap()).unwrap();
    files.sort();
    files
}

/// Every file under `dir`: relative path -> bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out
}

fn summary(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A summary without what legitimately differs between two runs: wall-clock times and the
/// output directory's name.
fn comparable(mut v: Value) -> Value {
    v.as_object_mut().unwrap().remove("wall_clock");
    v.as_object_mut().unwrap().remove("output_dir");
    for r in v["results"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("wall_clock");
    }
    v
}

#[test]
fn a_directory_converts_every_input_under_names_from_its_relative_path() {
    let tmp = tempfile::tempdir().unwrap();
    let inp = tmp.path().join("in");
    let files = tree(&inp);
    let out = tmp.path().join("out");
    let sum = tmp.path().join("summary.json");
    let o = heapconv_ok(&["convert", s(&inp), "-o", s(&out), "--summary-json", s(&sum)], 0);
    // Not a terminal, no -v, every input ok: silence.
    assert_eq!(stderr_of(&o), "");
    // -v: a line per input and the counts.
    let o = heapconv_ok(&["convert", s(&inp), "-o", s(&out), "-v"], 0);
    assert!(stderr_of(&o).contains("14 input(s): 14 ok, 0 partial, 0 failed"), "{}", stderr_of(&o));
    assert_eq!(stderr_of(&o).lines().filter(|l| l.starts_with("ok ")).count(), 14, "{}", stderr_of(&o));
    let got = contents(&out);
    let names: BTreeSet<&str> = got.keys().map(|k| k.rsplit_once('/').map_or(k.as_str(), |x| x.0)).collect();
    // Traces: a directory per trace; the DDM capture: one file; the gzipped trace keeps its
    // stem; README.md and .hidden.pftrace are not inputs.
    let want: BTreeSet<&str> = [
        "t00",
        "t03",
        "t06",
        "t09",
        "run1/t01",
        "run1/t04",
        "run1/t07",
        "run1/t10",
        "run1/zipped",
        "run2/deep/t02",
        "run2/deep/t05",
        "run2/deep/t08",
        "run2/deep/t11",
        "run2",
    ]
    .into();
    assert_eq!(names, want, "{:?}", got.keys().collect::<Vec<_>>());
    assert!(got.contains_key("run2/art.pb.gz"));
    // Each output is byte for byte what the single-input command writes into a directory.
    for (trace, key) in [(&files[0], "run1/t01"), (&files[13], "t09")] {
        let single = tmp.path().join("single");
        let _ = std::fs::remove_dir_all(&single);
        heapconv_ok(&["convert", s(trace), "-o", &format!("{}/", s(&single))], 0);
        for (name, bytes) in contents(&single) {
            assert_eq!(got[&format!("{key}/{name}")], bytes, "{key}/{name}");
        }
    }
    assert_eq!(files[0].file_name().unwrap(), "t01.pftrace");
    assert_eq!(files[13].file_name().unwrap(), "t09.pftrace");
    // The gzipped copy of t00 converts to the same bytes.
    let under = |dir: &str| -> Vec<(String, Vec<u8>)> {
        got.iter().filter_map(|(k, v)| k.strip_prefix(&format!("{dir}/")).map(|n| (n.to_owned(), v.clone()))).collect()
    };
    assert_eq!(under("t00").len(), 2, "two processes");
    assert_eq!(under("run1/zipped"), under("t00"));
    // The summary: real totals, sizes that are the files' sizes.
    let v = summary(&sum);
    assert_eq!(v["schema"], "heapconv-batch-summary/1");
    assert_eq!((v["inputs"].as_u64(), v["ok"].as_u64(), v["exit_code"].as_u64()), (Some(14), Some(14), Some(0)));
    let results = v["results"].as_array().unwrap();
    let rels: Vec<&str> = results.iter().map(|r| r["rel"].as_str().unwrap()).collect();
    let mut sorted = rels.clone();
    sorted.sort();
    assert_eq!(rels, sorted, "results are in the order of relative paths");
    let art = results.iter().find(|r| r["key"] == "run2/art").unwrap();
    assert_eq!(art["kind"], "ddm-alloc-blob");
    assert_eq!(art["profiles"][0]["totals"], serde_json::json!({"total-count": 7, "total-size": 5296}));
    for r in results {
        assert_eq!(r["status"], "ok");
        assert!(r["wall_clock"]["elapsed_s"].as_f64().unwrap() >= 0.0);
        for f in r["outputs"].as_array().unwrap() {
            let path = f["path"].as_str().unwrap();
            assert_eq!(f["bytes"].as_u64().unwrap(), got[path].len() as u64, "{path}");
        }
    }
    // The totals of a trace's profile are those of the pprof written.
    let t00 = results.iter().find(|r| r["key"] == "t00").unwrap();
    assert_eq!(t00["kind"], "perfetto-trace");
    let first = got.keys().find(|k| k.starts_with("t00/heap_dump.1.")).unwrap();
    let p = decode_pprof(&got[first]);
    for (i, ty) in p.sample_type.iter().enumerate() {
        let name = &p.string_table[ty.r#type as usize];
        let key = match name.as_str() {
            "alloc_objects" | "Total malloc count" => "total-count",
            "alloc_space" | "Total malloc size" => "total-size",
            "objects" | "Unreleased malloc count" => "unreleased-count",
            _ => "unreleased-size",
        };
        let total: i64 = p.sample.iter().map(|x| x.value[i]).sum();
        assert_eq!(t00["profiles"][0]["totals"][key].as_i64(), Some(total), "{name}");
    }
    assert!(t00["profiles"][0]["totals"]["unreleased-size"].as_i64().unwrap() > 0);
}

#[test]
fn order_and_threads_do_not_change_outputs_or_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let inp = tmp.path().join("in");
    let files = tree(&inp);
    // Run 1: the directory, one thread.
    let (o1, s1) = (tmp.path().join("o1"), tmp.path().join("s1.json"));
    heapconv_ok(&["convert", s(&inp), "-o", s(&o1), "--summary-json", s(&s1), "-j", "1"], 0);
    // Run 2: the same files through a pattern, four threads.
    let (o2, s2) = (tmp.path().join("o2"), tmp.path().join("s2.json"));
    let pattern = format!("{}/**/[!R]*", s(&inp));
    heapconv_ok(&["convert", &pattern, "-o", s(&o2), "--summary-json", s(&s2), "-j", "4"], 0);
    assert_eq!(contents(&o1), contents(&o2));
    assert_eq!(comparable(summary(&s1)), comparable(summary(&s2)));
    // Explicit files in two orders (in a list, reversed), times left out of the summary.
    let list = tmp.path().join("list.txt");
    let mut rev = files.clone();
    rev.reverse();
    std::fs::write(&list, rev.iter().map(|p| format!("{}\n", p.display())).collect::<String>()).unwrap();
    let (o3, s3) = (tmp.path().join("o3"), tmp.path().join("s3.json"));
    let (o4, s4) = (tmp.path().join("o4"), tmp.path().join("s4.json"));
    let mut args: Vec<&str> = vec!["convert", "-o", s(&o3), "--summary-json", s(&s3), "--summary-no-times", "-j", "3"];
    args.extend(files.iter().map(|p| s(p)));
    heapconv_ok(&args, 0);
    heapconv_ok(
        &[
            "convert",
            "--inputs-from",
            s(&list),
            "-o",
            s(&o4),
            "--summary-json",
            s(&s4),
            "--summary-no-times",
            "-j",
            "1",
        ],
        0,
    );
    assert_eq!(contents(&o3), contents(&o4));
    let (v3, v4) = (summary(&s3), summary(&s4));
    assert!(v3.get("wall_clock").is_none() && v3["results"][0].get("wall_clock").is_none());
    assert_eq!(comparable(v3.clone()), comparable(v4));
    // Plain files are named after their file names (their root is their own directory).
    let keys: Vec<&str> = v3["results"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert!(keys.contains(&"t01") && keys.contains(&"t02") && keys.contains(&"zipped") && keys.contains(&"art"));
    // The same pprof bytes as in the directory run.
    let (c1, c3) = (contents(&o1), contents(&o3));
    let t01: Vec<(&String, &Vec<u8>)> = c3.iter().filter(|(k, _)| k.starts_with("t01/")).collect();
    assert_eq!(t01.len(), 1);
    assert_eq!(&c1[&format!("run1/{}", t01[0].0)], t01[0].1, "{}", t01[0].0);
}

#[test]
fn shards_partition_the_inputs_and_their_outputs_make_the_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let inp = tmp.path().join("in");
    for i in 0..24u64 {
        synth(&inp.join(format!("c{}/trace_{i:02}.pftrace", i % 4)), 100 + i);
    }
    let all = tmp.path().join("all");
    let all_sum = tmp.path().join("all.json");
    heapconv_ok(&["convert", s(&inp), "-o", s(&all), "--summary-json", s(&all_sum), "--summary-no-times"], 0);
    let whole = contents(&all);
    assert_eq!(whole.len(), 24 + 12, "processes alternate between 1 and 2");
    let whole_results: BTreeMap<String, Value> = summary(&all_sum)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["input"].as_str().unwrap().to_owned(), r.clone()))
        .collect();
    for n in 1..=4u32 {
        let mut union = BTreeMap::new();
        let mut seen: BTreeMap<String, Value> = BTreeMap::new();
        let mut sizes = Vec::new();
        for k in 1..=n {
            let out = tmp.path().join(format!("s{n}_{k}"));
            let sum = tmp.path().join(format!("s{n}_{k}.json"));
            let shard = format!("{k}/{n}");
            heapconv_ok(
                &[
                    "convert",
                    s(&inp),
                    "-o",
                    s(&out),
                    "--shard",
                    &shard,
                    "--summary-json",
                    s(&sum),
                    "--summary-no-times",
                ],
                0,
            );
            let v = summary(&sum);
            assert_eq!(v["shard"], serde_json::json!({"index": k, "count": n}));
            assert_eq!(v["inputs_listed"], 24);
            sizes.push(v["inputs"].as_u64().unwrap());
            for r in v["results"].as_array().unwrap() {
                let input = r["input"].as_str().unwrap().to_owned();
                assert!(seen.insert(input, r.clone()).is_none(), "an input in two shards of {n}");
            }
            for (name, bytes) in contents(&out) {
                assert!(union.insert(name, bytes).is_none(), "two shards of {n} wrote the same file");
            }
        }
        assert_eq!(seen, whole_results, "shards of {n}: every input exactly once, with the same result");
        assert_eq!(union, whole, "shards of {n}: the outputs of the whole run");
        assert_eq!(sizes.iter().sum::<u64>(), 24);
        if n == 4 {
            assert!(sizes.iter().all(|&c| c > 0), "24 inputs over 4 shards: {sizes:?}");
        }
    }
    // More shards than inputs: an empty shard is not an error.
    let o = heapconv_ok(
        &["convert", s(&inp.join("c0/trace_00.pftrace")), "-o", s(&tmp.path().join("e")), "--shard", "2/50", "-v"],
        0,
    );
    assert!(
        stderr_of(&o).contains("0 input(s) (shard 2/50 of 1)")
            || stderr_of(&o).contains("1 input(s) (shard 2/50 of 1)")
    );
    for bad in ["0/3", "4/3", "1/0", "x"] {
        let o = heapconv(&["convert", s(&inp), "-o", s(&tmp.path().join("bad")), "--shard", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
    }
}

#[test]
fn a_bad_input_does_not_stop_the_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let inp = tmp.path().join("in");
    for (i, name) in ["a", "b", "d", "e"].iter().enumerate() {
        synth(&inp.join(format!("{name}.pftrace")), 7 + i as u64);
    }
    // c: the first 40 bytes of a trace (a trace by its content, with no dump in it).
    let head = std::fs::read(inp.join("a.pftrace")).unwrap()[..40].to_vec();
    std::fs::write(inp.join("c.pftrace"), head).unwrap();
    // c2: a trace that ends inside a dump chain (what was complete converts: partial).
    std::fs::copy(data("continuous_recycle.trunc-midchain.pftrace"), inp.join("c2.pftrace")).unwrap();
    let out = tmp.path().join("out");
    let sum = tmp.path().join("s.json");
    let o = heapconv(&["convert", s(&inp), "-o", s(&out), "--to", "svg", "--summary-json", s(&sum), "-j", "2"]);
    assert_eq!(o.status.code(), Some(1), "a failed input: exit code 1");
    let err = stderr_of(&o);
    assert!(err.contains("heapconv: error: no profile data:") && err.contains("c.pftrace"), "{err}");
    assert!(err.contains("the input is damaged"), "{err}");
    assert!(err.contains("c2.pftrace: partial result: 1 dump(s) never finished"), "{err}");
    assert!(err.contains("6 input(s): 4 ok, 1 partial, 1 failed"), "{err}");
    let got = contents(&out);
    for name in ["a", "b", "d", "e"] {
        let svg = got.iter().find(|(k, _)| k.starts_with(&format!("{name}/"))).map(|x| x.1).unwrap();
        let svg = String::from_utf8_lossy(svg);
        assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"), "{name}");
    }
    assert!(got.keys().any(|k| k.starts_with("c2/heap_dump.1.10.libc.malloc")), "{:?}", got.keys());
    assert!(!got.keys().any(|k| k.starts_with("c/")), "nothing written for c");
    let v = summary(&sum);
    let c = v["results"].as_array().unwrap().iter().find(|r| r["key"] == "c").unwrap();
    assert_eq!(c["status"], "failed");
    assert_eq!(c["error_kind"], "no-data");
    assert!(c["error"].as_str().unwrap().contains("no dump matches the selection"), "{c}");
    assert_eq!(c["outputs"], serde_json::json!([]));
    let c2 = v["results"].as_array().unwrap().iter().find(|r| r["key"] == "c2").unwrap();
    assert_eq!(c2["status"], "partial");
    assert!(c2["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("never finished")));
    assert_eq!(
        (v["failed"].as_u64(), v["partial"].as_u64(), v["outcome"].as_str()),
        (Some(1), Some(1), Some("failed"))
    );
    // Without the failed input: partial only, exit code 3.
    std::fs::remove_file(inp.join("c.pftrace")).unwrap();
    heapconv_ok(&["convert", s(&inp), "-o", s(&tmp.path().join("out2")), "-q"], 3);
    // A named file that is no input at all, and one that does not exist, among good ones.
    let text = tmp.path().join("notes.txt");
    std::fs::write(&text, "not a trace\n").unwrap();
    let missing = tmp.path().join("missing.pftrace");
    let o = heapconv(&[
        "convert",
        s(&inp.join("a.pftrace")),
        s(&text),
        s(&missing),
        "-o",
        &format!("{}/", s(&tmp.path().join("out3"))),
        "--summary-json",
        s(&sum),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = summary(&sum);
    let by_key: BTreeMap<&str, &Value> =
        v["results"].as_array().unwrap().iter().map(|r| (r["key"].as_str().unwrap(), r)).collect();
    assert_eq!(by_key["a"]["status"], "ok");
    assert_eq!(by_key["notes.txt"]["status"], "failed");
    assert!(by_key["notes.txt"]["error"].as_str().unwrap().contains("neither a Perfetto trace nor"), "{v}");
    assert_eq!(by_key["missing"]["error_kind"], "io");
    assert_eq!(by_key["missing"]["kind"], Value::Null);
    assert!(tmp.path().join("out3/a").is_dir());
}

#[test]
fn lists_patterns_and_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let inp = tmp.path().join("in");
    tree(&inp);
    let run = |args: &[&str], out: &str| -> (std::process::Output, BTreeSet<String>) {
        let out = tmp.path().join(out);
        let mut a = vec!["convert", "--to", "json", "-o", s(&out)];
        a.extend_from_slice(args);
        let o = heapconv(&a);
        (o, contents(&out).into_keys().collect())
    };
    // Patterns: `*` does not cross directories, `**` does, classes work.
    let (o, got) = run(&[&format!("{}/run1/*.pftrace", s(&inp))], "p1");
    assert_eq!(o.status.code(), Some(0), "{}", stderr_of(&o));
    assert_eq!(got, ["t01.json", "t04.json", "t07.json", "t10.json"].map(String::from).into());
    let (_, got) = run(&[&format!("{}/**/t0[0-4]*", s(&inp))], "p2");
    assert_eq!(
        got,
        ["t00.json", "run1/t01.json", "run1/t04.json", "run2/deep/t02.json", "t03.json"].map(String::from).into()
    );
    // A pattern that matches nothing is a usage error, before anything is written.
    let (o, got) = run(&[&format!("{}/*.nothing", s(&inp))], "p3");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("matches no input") && got.is_empty());
    // A list: comments, blank lines, a directory and a file; `-` reads it from standard input.
    let list = format!("# nightly\n\n{}\r\n{}\n", inp.join("run2").display(), inp.join("t00.pftrace").display());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_heapconv"))
        .args(["convert", "--inputs-from", "-", "--to", "json", "-o", s(&tmp.path().join("l1"))])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), list.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr_of(&o));
    let got: BTreeSet<String> = contents(&tmp.path().join("l1")).into_keys().collect();
    assert_eq!(
        got,
        ["art.json", "deep/t02.json", "deep/t05.json", "deep/t08.json", "deep/t11.json", "t00.json"]
            .map(String::from)
            .into()
    );
    // An empty directory is a usage error; standard input is not one input among many.
    std::fs::create_dir_all(tmp.path().join("empty")).unwrap();
    let (o, _) = run(&[s(&tmp.path().join("empty"))], "e1");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("no input found in this directory"), "{}", stderr_of(&o));
    let (o, _) = run(&["-", s(&inp)], "e2");
    assert_eq!(o.status.code(), Some(2));
    // -v names the files of directories that were not taken.
    let (o, _) = run(&["-v", s(&inp.join("run1"))], "v1");
    assert!(!stderr_of(&o).contains("README"), "README.md is not in run1");
    let (o, _) = run(&["-v", s(&inp)], "v2");
    let err = stderr_of(&o);
    assert!(err.contains(&format!("skipped {}", inp.join("README.md").display())), "{err}");
    assert!(!err.contains(".hidden"), "hidden files are not even looked at: {err}");
    assert!(err.lines().filter(|l| l.starts_with("ok ")).count() == 14, "{err}");
}

#[test]
fn outputs_never_overwrite_inputs_and_the_output_directory_is_not_scanned() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("captures");
    synth(&dir.join("a.pftrace"), 1);
    synth(&dir.join("b.pftrace"), 2);
    // The output directory inside the input directory: a second run does not take the
    // first run's outputs (pprof files, which `convert` reads) as inputs.
    let out = dir.join("converted");
    let sum = tmp.path().join("s.json");
    for _ in 0..2 {
        heapconv_ok(&["convert", s(&dir), "-o", s(&out), "--summary-json", s(&sum), "-q"], 0);
        assert_eq!(summary(&sum)["inputs"], 2);
    }
    let o = heapconv(&["convert", s(&out), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("output directory"), "{}", stderr_of(&o));
    // hprof-conv into the directory of its inputs: `x.hprof` would be written over itself.
    let hp = tmp.path().join("hp");
    heapconv_ok(&["hprof", s(&data("heapgraph/two_pids.pftrace")), "--android", "-o", &format!("{}/", s(&hp))], 0);
    let before = contents(&hp);
    assert_eq!(before.len(), 3);
    let first = hp.join("java_heap_dump.1.50.hprof");
    let o = heapconv(&["hprof-conv", s(&first), s(&hp.join("java_heap_dump.2.60.hprof")), "-o", s(&hp)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr_of(&o).contains("could overwrite the input"), "{}", stderr_of(&o));
    assert_eq!(contents(&hp), before, "inputs untouched");
    // Into another directory it works, and names follow the inputs.
    let conv = tmp.path().join("conv");
    heapconv_ok(&["hprof-conv", s(&hp), "-o", s(&conv), "-q"], 0);
    let got = contents(&conv);
    assert_eq!(got.keys().cloned().collect::<Vec<_>>(), before.keys().cloned().collect::<Vec<_>>());
    for (name, bytes) in &got {
        assert!(bytes.starts_with(b"JAVA PROFILE 1.0.2\0"), "{name}");
        let single = tmp.path().join("single.hprof");
        heapconv_ok(&["hprof-conv", s(&hp.join(name)), s(&single)], 0);
        assert_eq!(&std::fs::read(&single).unwrap(), bytes, "{name}: the same bytes as one at a time");
    }
    // Two arguments without -o still mean INPUT OUTPUT; one is a usage error.
    let o = heapconv(&["hprof-conv", s(&first)]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn every_converting_command_takes_many_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let a = data("heaps_and_procs.pftrace");
    let b = data("continuous_recycle.pftrace.gz");
    // profile: each trace's files as `profile -o DIR` names them, under DIR/<name>/.
    let out = tmp.path().join("prof");
    heapconv_ok(&["profile", s(&a), s(&b), "-o", s(&out), "-q"], 0);
    let got = contents(&out);
    let single = tmp.path().join("single");
    heapconv_ok(&["profile", s(&a), "-o", s(&single), "-q"], 0);
    let one = contents(&single);
    assert_eq!(one.len(), 5);
    for (name, bytes) in &one {
        assert_eq!(&got[&format!("heaps_and_procs/{name}")], bytes, "{name}");
    }
    assert_eq!(got.keys().filter(|k| k.starts_with("continuous_recycle/")).count(), 4);
    // profile --java-heap and hprof: heap graph traces.
    let hg = [data("heapgraph/two_pids.pftrace"), data("heapgraph/shapes.pftrace")];
    let out = tmp.path().join("jh");
    heapconv_ok(&["profile", "--java-heap", s(&hg[0]), s(&hg[1]), "-o", s(&out), "-q"], 0);
    let got: Vec<String> = contents(&out).into_keys().collect();
    assert!(got.iter().any(|k| k.starts_with("two_pids/java_heap_dump.1.50")), "{got:?}");
    let out = tmp.path().join("hprof");
    heapconv_ok(&["hprof", s(&hg[0]), s(&hg[1]), "-o", s(&out), "-q"], 0);
    let got: Vec<String> = contents(&out).into_keys().collect();
    assert_eq!(
        got,
        [
            "shapes/java_heap_dump.1.123.hprof",
            "two_pids/java_heap_dump.1.50.hprof",
            "two_pids/java_heap_dump.2.60.hprof",
            "two_pids/java_heap_dump.3.50.hprof"
        ]
    );
    // A heap graph trace has no heapprofd data: `profile` fails for it, not for the others.
    let sum = tmp.path().join("p.json");
    let o = heapconv(&["profile", s(&a), s(&hg[0]), "-o", s(&tmp.path().join("mixed")), "--summary-json", s(&sum)]);
    assert_eq!(o.status.code(), Some(1));
    let v = summary(&sum);
    assert_eq!((v["ok"].as_u64(), v["failed"].as_u64()), (Some(1), Some(1)));
    let ok = v["results"].as_array().unwrap().iter().find(|r| r["status"] == "ok").unwrap();
    assert_eq!(ok["outputs"].as_array().unwrap().len(), 5);
    assert_eq!(ok["profiles"].as_array().unwrap().len(), 5);
    assert!(ok["profiles"][0]["profile"].as_str().unwrap().starts_with("pid 10, heap libc.malloc, dump 1"));
}

#[test]
fn symbolize_batches_gate_on_coverage_per_input() {
    let tmp = tempfile::tempdir().unwrap();
    let traces = data("symbolize");
    let syms = crate::common::root().join("symbols");
    let out = tmp.path().join("syms");
    let sum = tmp.path().join("s.json");
    let o = heapconv(&[
        "symbolize",
        s(&traces),
        "-o",
        s(&out),
        "--symbol-dir",
        s(&syms),
        "--min-symbolized",
        "80",
        "--summary-json",
        s(&sum),
        "--summary-no-times",
    ]);
    let v = summary(&sum);
    let results = v["results"].as_array().unwrap();
    assert!(results.len() >= 3, "{v}");
    let below: Vec<&Value> = results.iter().filter(|r| r["gate"]["passed"] == false).collect();
    assert!(!below.is_empty() && below.len() < results.len(), "some pass, some do not: {v}");
    assert_eq!(o.status.code(), Some(4), "no input failed, a gate did: exit code 4");
    for r in results {
        let c = &r["symbolization"];
        let (f, sy) = (c["frames"].as_u64().unwrap(), c["frames_symbolized"].as_u64().unwrap());
        assert!(f > 0 && sy <= f);
        let pct = (100.0 * sy as f64 / f as f64 * 1000.0).round() / 1000.0;
        assert_eq!(c["frame_percent"].as_f64().unwrap(), pct);
        assert_eq!(r["gate"]["passed"].as_bool().unwrap(), pct >= 80.0);
        assert_eq!(r["outputs"][0]["path"], format!("{}.symbols.pftrace", r["key"].as_str().unwrap()));
        // The same bytes as `symbolize` of that one trace.
        let one = tmp.path().join("one");
        let _ = heapconv(&["symbolize", r["input"].as_str().unwrap(), "-o", s(&one), "--symbol-dir", s(&syms), "-q"]);
        assert_eq!(
            std::fs::read(&one).unwrap(),
            std::fs::read(out.join(r["outputs"][0]["path"].as_str().unwrap())).unwrap()
        );
    }
    let err = stderr_of(&o);
    assert_eq!(err.matches("is below --min-symbolized 80%").count(), below.len(), "{err}");
}

#[test]
fn merge_and_top_take_directories_patterns_and_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let inp = tmp.path().join("in");
    let files = tree(&inp);
    let explicit = tmp.path().join("explicit.pb.gz");
    // The DDM capture's sample types are two of the traces' four.
    let types = ["--sample-types", "total-count,total-size"];
    let mut args: Vec<&str> = vec!["merge", "-o", s(&explicit), types[0], types[1]];
    args.extend(files.iter().map(|p| s(p)));
    heapconv_ok(&args, 0);
    let by_dir = tmp.path().join("dir.pb.gz");
    heapconv_ok(&["merge", s(&inp), "-o", s(&by_dir), "-j", "2", types[0], types[1]], 0);
    assert_eq!(std::fs::read(&explicit).unwrap(), std::fs::read(&by_dir).unwrap());
    let list = tmp.path().join("list");
    std::fs::write(&list, format!("{}\n{}\n", inp.join("run1").display(), inp.join("run2").display())).unwrap();
    let by_list = tmp.path().join("list.pb.gz");
    heapconv_ok(
        &["merge", "--inputs-from", s(&list), s(&inp.join("t0[0369].pftrace")), "-o", s(&by_list), types[0], types[1]],
        0,
    );
    assert_eq!(std::fs::read(&explicit).unwrap(), std::fs::read(&by_list).unwrap());
    let top_dir = heapconv_ok(&["top", s(&inp), "--json", types[0], types[1]], 0).stdout;
    let mut args: Vec<&str> = vec!["top", "--json", types[0], types[1]];
    args.extend(files.iter().map(|p| s(p)));
    assert_eq!(heapconv_ok(&args, 0).stdout, top_dir);
}

#[test]
fn several_ddm_captures_still_merge_and_batch_converts_each() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (data("ddm/art.alloc"), data("ddm/dalvik.alloc"));
    // As before: several captures make one profile.
    let merged = heapconv_ok(&["convert", s(&a), s(&b), "--to", "folded"], 0).stdout;
    let out = tmp.path().join("m/");
    heapconv_ok(&["convert", s(&a), s(&b), "--to", "folded", "-o", s(&out)], 0);
    assert_eq!(std::fs::read(out.join("art.folded")).unwrap(), merged);
    // --batch: each on its own.
    let out = tmp.path().join("b");
    heapconv_ok(&["convert", s(&a), s(&b), "--to", "folded", "-o", s(&out), "--batch", "-q"], 0);
    let got = contents(&out);
    assert_eq!(got.keys().collect::<Vec<_>>(), ["art.folded", "dalvik.folded"]);
    assert_eq!(got["art.folded"], heapconv_ok(&["convert", s(&a), "--to", "folded"], 0).stdout);
    // A trace among captures, to a directory: a batch (it used to be an error).
    let out = tmp.path().join("mixed/");
    heapconv_ok(&["convert", s(&a), s(&data("names.pftrace")), "--to", "folded", "-o", s(&out), "-q"], 0);
    let got: Vec<String> = contents(&out).into_keys().collect();
    assert_eq!(got, ["art.folded", "names/heap_dump.1.10.libc.malloc.folded"]);
}

/// Runs `heapconv ARGS` with standard error on a pseudo-terminal (util-linux `script`), and
/// returns what the terminal showed; `None` when `script` is missing.
fn on_a_terminal(args: &[&str]) -> Option<String> {
    let quoted: Vec<String> =
        std::iter::once(env!("CARGO_BIN_EXE_heapconv")).chain(args.iter().copied()).map(|a| format!("'{a}'")).collect();
    let o = std::process::Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    assert!(o.status.success(), "script: {}", stderr_of(&o));
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn a_progress_bar_on_a_terminal_silence_in_ci() {
    let tmp = tempfile::tempdir().unwrap();
    let inp = tmp.path().join("in");
    for i in 0..6 {
        synth(&inp.join(format!("t{i}.pftrace")), 40 + i);
    }
    let out = tmp.path().join("out");
    let Some(tty) = on_a_terminal(&["convert", s(&inp), "-o", s(&out), "-j", "1"]) else { return };
    // indicatif's bar: `[====>   ] K/6` redrawn in place (carriage return, erase line), then
    // cleared, and the line of counts.
    assert!(tty.contains("/6 ") && tty.contains("[=") && tty.contains("\r\x1b[2K"), "{tty:?}");
    assert!(tty.contains("6 input(s): 6 ok, 0 partial, 0 failed"), "{tty:?}");
    // -q on a terminal: nothing.
    let tty = on_a_terminal(&["convert", s(&inp), "-o", s(&tmp.path().join("out2")), "-q"]).unwrap();
    assert_eq!(tty, "");
    // Not a terminal: silence; the same outputs.
    let o = heapconv_ok(&["convert", s(&inp), "-o", s(&tmp.path().join("out3"))], 0);
    assert_eq!(stderr_of(&o), "");
    assert_eq!(contents(&out), contents(&tmp.path().join("out3")));
}

#[test]
fn the_summary_always_has_symbolization_coverage() {
    let tmp = tempfile::tempdir().unwrap();
    let sum = tmp.path().join("s.json");
    let names = data("names.pftrace");
    let alloc = data("ddm/art.alloc");
    heapconv_ok(
        &["convert", s(&names), s(&alloc), "--batch", "-o", s(&tmp.path().join("o")), "--summary-json", s(&sum)],
        0,
    );
    let v = summary(&sum);
    let by_kind = |k: &str| v["results"].as_array().unwrap().iter().find(|r| r["kind"] == k).unwrap().clone();
    // names.pftrace: 8 native frames, 5 of them named by the trace; no --symbol-dir given.
    let c = &by_kind("perfetto-trace")["symbolization"];
    assert_eq!((c["frames"].as_u64(), c["frames_symbolized"].as_u64()), (Some(8), Some(5)), "{c}");
    assert_eq!(c["frame_percent"], 62.5);
    // A DDM capture has no native frames.
    assert!(by_kind("ddm-alloc-blob")["symbolization"].is_null());
}
