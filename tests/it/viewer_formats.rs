//! The viewers' formats (issue 16): `--to speedscope` validated against the JSON schema the npm
//! package `speedscope` ships (Python `jsonschema`, both installed by `.ci/install-oracles.sh`),
//! `--to dhat` and `--to chrome-heap` read back by readers written here from their
//! specifications (Valgrind's `dhat/dh_main.c` format notes, the Chrome DevTools Protocol's
//! `HeapProfiler.SamplingHeapProfile`), every value compared stack by stack with the input as
//! heapconv's library reads it; on a trace, a real Go heap profile and a diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{data, heapconv_ok, root, tmp};
use crate::merge::go_heap;
use heapconv::encode::labels::labelled_samples;
use heapconv::model::{Profile, ValueKind};
use heapconv::pipeline::load::{LoadOptions, load_input};

/// Per stack (labels root first, joined by `;`), its value.
type Stacks = BTreeMap<String, i64>;

/// The input as the library reads it (no annotations): one profile.
fn input_profile(path: &Path) -> Profile {
    let opts = LoadOptions { annotations: false, ..LoadOptions::default() };
    let mut loaded = load_input(path, &opts).expect("the input loads");
    if let Some(f) = loaded.flat.pop() {
        return f.to_profile();
    }
    assert_eq!(loaded.profiles.len(), 1, "one dump");
    loaded.profiles.pop().unwrap()
}

fn stacks_of(p: &Profile, index: usize) -> Stacks {
    let mut m = Stacks::new();
    for (labels, v) in labelled_samples(p, index, false) {
        *m.entry(labels.join(";")).or_default() += v;
    }
    m
}

fn stacks_of_kind(p: &Profile, kind: ValueKind) -> Stacks {
    p.value_index(kind).map(|i| stacks_of(p, i)).unwrap_or_default()
}

fn convert(input: &Path, to: &str, out: &Path) -> Value {
    heapconv_ok(&["convert", "--no-annotations", "--to", to, input.to_str().unwrap(), "-o", out.to_str().unwrap()], 0);
    serde_json::from_slice(&std::fs::read(out).unwrap()).expect("JSON")
}

/// Validates a file against speedscope's schema with Python `jsonschema`; `false` (or a
/// panic when oracles are required) when the validator or the schema is missing.
fn speedscope_valid(file: &Path) -> bool {
    let py = root().join("target/oracle-venv/bin/python");
    let pylib = root().join("target/oracle-py");
    let schema = root().join("target/oracle-npm/speedscope-1.25.0/package/dist/release/file-format-schema.json");
    let have = schema.exists()
        && Command::new(&py)
            .arg("-c")
            .arg("import jsonschema")
            .env("PYTHONPATH", &pylib)
            .output()
            .is_ok_and(|o| o.status.success());
    if !have {
        if std::env::var("HEAPCONV_REQUIRE_ORACLES").as_deref() == Ok("1") {
            panic!(
                "speedscope's schema and Python jsonschema are required (HEAPCONV_REQUIRE_ORACLES=1): run .ci/install-oracles.sh"
            );
        }
        eprintln!(
            "SKIPPED oracle check: speedscope schema or jsonschema missing (.ci/install-oracles.sh installs them)"
        );
        return false;
    }
    let script = "import json, sys, jsonschema\n\
                  schema = json.load(open(sys.argv[1]))\n\
                  doc = json.load(open(sys.argv[2]))\n\
                  jsonschema.Draft7Validator.check_schema(schema)\n\
                  jsonschema.validate(doc, schema, cls=jsonschema.Draft7Validator)\n\
                  print('valid')\n";
    let out =
        Command::new(&py).arg("-c").arg(script).arg(&schema).arg(file).env("PYTHONPATH", &pylib).output().unwrap();
    assert!(
        out.status.success() && out.stdout == b"valid\n",
        "{} is not a valid speedscope file: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

/// Reads a speedscope file: per profile, its name, unit and stacks (frame names root first).
fn read_speedscope(doc: &Value) -> Vec<(String, String, Stacks)> {
    assert_eq!(doc["$schema"], "https://www.speedscope.app/file-format-schema.json");
    let frames: Vec<&str> =
        doc["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    let profiles = doc["profiles"].as_array().unwrap();
    let active = doc["activeProfileIndex"].as_u64().unwrap() as usize;
    assert!(active < profiles.len());
    profiles
        .iter()
        .map(|p| {
            assert_eq!(p["type"], "sampled");
            let samples = p["samples"].as_array().unwrap();
            let weights = p["weights"].as_array().unwrap();
            assert_eq!(samples.len(), weights.len(), "one weight per sample");
            let mut m = Stacks::new();
            let mut sum = 0;
            for (s, w) in samples.iter().zip(weights) {
                let names: Vec<&str> =
                    s.as_array().unwrap().iter().map(|i| frames[i.as_u64().unwrap() as usize]).collect();
                let w = w.as_i64().unwrap();
                assert!(w > 0, "weights are positive");
                sum += w;
                *m.entry(names.join(";")).or_default() += w;
            }
            assert_eq!(p["endValue"].as_i64().unwrap() - p["startValue"].as_i64().unwrap(), sum, "end - start = total");
            (p["name"].as_str().unwrap().to_owned(), p["unit"].as_str().unwrap().to_owned(), m)
        })
        .collect()
}

/// The function name of a DHAT `ftbl` entry, as the format writes it: `0x<hex>: <function>
/// (<file>[:<line>[:<column>]])` or `0x<hex>: <function> (in <object>)`; anything else is a
/// name on its own (`[root]`, `???`).
fn dhat_function(entry: &str) -> &str {
    let Some(rest) = entry.strip_prefix("0x") else { return entry };
    let Some((hex, rest)) = rest.split_once(": ") else { return entry };
    if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) || !rest.ends_with(')') {
        return entry;
    }
    match rest.rfind(" (") {
        Some(k) => &rest[..k],
        None => entry,
    }
}

/// Reads a DHAT file (dhatFileVersion 2 with block lifetimes): per field (`tb`, `tbk`, `mb`,
/// `mbk`, `gb`, `gbk`, `eb`, `ebk`), per stack of function names root first, the sum.
fn read_dhat(doc: &Value) -> BTreeMap<&'static str, Stacks> {
    assert_eq!(doc["dhatFileVersion"], 2);
    for k in ["mode", "verb", "tu", "Mtu", "cmd"] {
        assert!(doc[k].is_string(), "{k} is a mandatory string");
    }
    assert_eq!(doc["bklt"], true);
    assert_eq!(doc["bkacc"], false);
    for k in ["pid", "te", "tg", "tuth"] {
        assert!(doc[k].is_u64(), "{k} is a mandatory integer with bklt");
    }
    let ftbl: Vec<&str> = doc["ftbl"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert_eq!(ftbl[0], "[root]");
    const FIELDS: [&str; 8] = ["tb", "tbk", "mb", "mbk", "gb", "gbk", "eb", "ebk"];
    let mut out: BTreeMap<&'static str, Stacks> = FIELDS.iter().map(|f| (*f, Stacks::new())).collect();
    for pp in doc["pps"].as_array().unwrap() {
        assert!(pp["tl"].is_u64(), "tl with bklt");
        assert!(pp.get("rb").is_none() && pp.get("acc").is_none(), "no access fields without bkacc");
        // fs: indices into ftbl, leaf first.
        let names: Vec<&str> = pp["fs"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .map(|i| {
                let i = i.as_u64().unwrap() as usize;
                assert!(i > 0 && i < ftbl.len(), "a frame index points into ftbl past [root]");
                dhat_function(ftbl[i])
            })
            .collect();
        let key = names.join(";");
        for f in FIELDS {
            let v = pp[f].as_i64().unwrap_or_else(|| panic!("{f} is a mandatory integer"));
            assert!(v >= 0);
            if v != 0 {
                *out.get_mut(f).unwrap().entry(key.clone()).or_default() += v;
            }
        }
        // Live bytes never exceed their maximum.
        assert!(pp["gb"].as_i64() <= pp["mb"].as_i64() && pp["eb"].as_i64() <= pp["mb"].as_i64());
    }
    out
}

/// Reads a `.heapprofile` (CDP `HeapProfiler.SamplingHeapProfile`): per stack of function
/// names root first (the root excluded), its self size, after checking that ids are unique,
/// each sample names a node, sample sizes add up to each node's `selfSize`, and ordinals are
/// unique.
fn read_heapprofile(doc: &Value) -> Stacks {
    let head = &doc["head"];
    assert_eq!(head["callFrame"]["functionName"], "(root)");
    let mut self_sizes: BTreeMap<u64, (String, i64)> = BTreeMap::new();
    let mut todo: Vec<(&Value, String)> = vec![(head, String::new())];
    while let Some((n, path)) = todo.pop() {
        let cf = &n["callFrame"];
        for k in ["functionName", "scriptId", "url"] {
            assert!(cf[k].is_string(), "callFrame.{k} is a string");
        }
        for k in ["lineNumber", "columnNumber"] {
            assert!(cf[k].as_i64().unwrap() >= -1, "callFrame.{k} is 0-based or -1");
        }
        let id = n["id"].as_u64().unwrap();
        let size = n["selfSize"].as_i64().unwrap();
        assert!(size >= 0);
        assert!(self_sizes.insert(id, (path.clone(), size)).is_none(), "node id {id} is unique");
        for c in n["children"].as_array().unwrap() {
            let name = c["callFrame"]["functionName"].as_str().unwrap();
            let p = if path.is_empty() { name.to_owned() } else { format!("{path};{name}") };
            todo.push((c, p));
        }
    }
    let mut at_node: BTreeMap<u64, i64> = BTreeMap::new();
    let mut ordinals = std::collections::BTreeSet::new();
    for s in doc["samples"].as_array().unwrap() {
        let id = s["nodeId"].as_u64().unwrap();
        assert!(self_sizes.contains_key(&id), "sample names node {id}");
        *at_node.entry(id).or_default() += s["size"].as_i64().unwrap();
        assert!(ordinals.insert(s["ordinal"].as_u64().unwrap()), "ordinals are unique");
    }
    let mut out = Stacks::new();
    for (id, (path, size)) in self_sizes {
        assert_eq!(at_node.get(&id).copied().unwrap_or(0), size, "node {id}: samples add up to selfSize");
        if size != 0 {
            *out.entry(path).or_default() += size;
        }
    }
    out
}

/// Every viewer format of one input, checked against the input stack by stack.
fn check_all(input: &Path, shown: usize) {
    let dir = tmp();
    let want = input_profile(input);
    let types = &want.header.sample_types;

    let out = dir.path().join("p.speedscope.json");
    let doc = convert(input, "speedscope", &out);
    speedscope_valid(&out);
    let got = read_speedscope(&doc);
    assert_eq!(got.len(), types.len(), "one profile per sample type");
    assert_eq!(doc["activeProfileIndex"].as_u64(), Some(shown as u64));
    for (i, (name, unit, stacks)) in got.iter().enumerate() {
        assert_eq!(name, &types[i].name);
        assert_eq!(unit, if types[i].unit == "bytes" { "bytes" } else { "none" });
        assert_eq!(stacks, &stacks_of(&want, i), "{name}");
        assert!(!stacks.is_empty());
    }

    let out = dir.path().join("p.dhat.json");
    let got = read_dhat(&convert(input, "dhat", &out));
    let unreleased = stacks_of_kind(&want, ValueKind::UnreleasedSize);
    let unreleased_n = stacks_of_kind(&want, ValueKind::UnreleasedCount);
    assert_eq!(got["tb"], stacks_of_kind(&want, ValueKind::TotalSize));
    assert_eq!(got["tbk"], stacks_of_kind(&want, ValueKind::TotalCount));
    for (b, n) in [("eb", "ebk"), ("gb", "gbk"), ("mb", "mbk")] {
        assert_eq!(got[b], unreleased, "{b}");
        assert_eq!(got[n], unreleased_n, "{n}");
    }
    assert!(!got["tb"].is_empty() && !got["eb"].is_empty());

    let out = dir.path().join("p.heapprofile");
    let got = read_heapprofile(&convert(input, "chrome-heap", &out));
    assert_eq!(got, stacks_of(&want, shown));
    assert!(!got.is_empty());
}

#[test]
fn viewer_formats_of_a_trace_hold_every_value_of_every_stack() {
    // names.pftrace: one dump, four sample types, unreleased size shown.
    check_all(&data("names.pftrace"), 3);
}

#[test]
fn viewer_formats_of_a_go_heap_profile_hold_every_value_of_every_stack() {
    let Some((a, _)) = go_heap() else { return };
    // inuse_space, the last type, is go's default.
    check_all(a, 3);
}

#[test]
fn speedscope_of_every_dump_in_a_directory_is_valid() {
    let dir = tmp();
    let out = format!("{}/", dir.path().display());
    heapconv_ok(
        &[
            "convert",
            "--to",
            "speedscope",
            "--dump",
            "all",
            data("heaps_and_procs.pftrace").to_str().unwrap(),
            "-o",
            &out,
        ],
        0,
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() > 1, "{files:?}");
    for f in &files {
        assert!(f.to_str().unwrap().ends_with(".speedscope.json"), "{}", f.display());
        if !speedscope_valid(f) {
            return;
        }
    }
}

#[test]
fn a_diff_as_speedscope_holds_base_and_new_and_dhat_and_heapprofile_refuse_it() {
    let Some((a, b)) = go_heap() else { return };
    let dir = tmp();
    let out = dir.path().join("d.speedscope.json");
    heapconv_ok(
        &["diff", "--to", "speedscope", a.to_str().unwrap(), b.to_str().unwrap(), "-o", out.to_str().unwrap()],
        0,
    );
    speedscope_valid(&out);
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let got = read_speedscope(&doc);
    let (base, new) = (input_profile(a), input_profile(b));
    let n = base.header.sample_types.len();
    assert_eq!(got.len(), 2 * n);
    for i in 0..n {
        let t = &base.header.sample_types[i].name;
        assert_eq!(got[i].0, format!("BASE: {t}"));
        assert_eq!(got[n + i].0, format!("NEW: {t}"));
        assert_eq!(got[i].2, stacks_of(&base, i), "BASE {t}");
        assert_eq!(got[n + i].2, stacks_of(&new, i), "NEW {t}");
    }
    // The compared type (inuse_space) opens first, on NEW.
    assert_eq!(doc["activeProfileIndex"].as_u64(), Some((n + 3) as u64));
    for to in ["dhat", "chrome-heap"] {
        let o = dir.path().join(format!("d.{to}"));
        let r =
            heapconv_ok(&["diff", "--to", to, a.to_str().unwrap(), b.to_str().unwrap(), "-o", o.to_str().unwrap()], 1);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(&format!("{to} has no form for a comparison")), "{err}");
        assert!(!o.exists());
    }
}

#[test]
fn dhat_refuses_a_profile_without_allocations() {
    use heapconv::encode::{EncodeOptions, Format, encode};
    use heapconv::model::{ProfileMeta, Tables, ValueType};
    let mut t = Tables::default();
    let name = t.strings.intern("f");
    let f = t.intern_frame(None, 0, name);
    let s = t.intern_stack(&[f]).unwrap();
    let mut p = Profile::new(
        std::sync::Arc::new(t),
        ProfileMeta::default(),
        vec![ValueType::new("cpu", "nanoseconds", ValueKind::Other)],
    );
    p.push_sample(s, &[5]);
    let err = encode(&p, Format::Dhat, &EncodeOptions::default()).unwrap_err();
    assert!(err.to_string().contains("no allocation size or count (sample types: cpu/nanoseconds)"), "{err}");
    // speedscope writes time in its unit.
    let doc: Value =
        serde_json::from_slice(&encode(&p, Format::Speedscope, &EncodeOptions::default()).unwrap()).unwrap();
    assert_eq!(doc["profiles"][0]["unit"], "nanoseconds");
    assert_eq!(doc["shared"]["frames"][0]["name"], "f");
}

#[test]
fn chrome_heap_refuses_a_cpu_profile_and_a_count_naming_the_sample_types() {
    let dir = tmp();
    let out = dir.path().join("p.heapprofile");
    let run = |input: &Path, extra: &[&str], code: i32| -> String {
        let args =
            [&["convert", "--to", "chrome-heap", input.to_str().unwrap(), "-o", out.to_str().unwrap()][..], extra];
        let r = heapconv_ok(&args.concat(), code);
        String::from_utf8_lossy(&r.stderr).into_owned()
    };
    // A CPU profile's shape (pprof-odd): nothing in bytes.
    let err = run(&data("pprof-odd/empty-stack.pb.gz"), &[], 1);
    assert!(
        err.contains(
            "a sampling heap profile (.heapprofile) holds sizes in bytes, and the type shown, cpu/nanoseconds, is not one \
             (sample types: samples/count, cpu/nanoseconds); this is not a memory profile"
        ),
        "{err}"
    );
    assert!(!out.exists());
    // Real Go CPU and goroutine profiles.
    if let Some(go) = crate::pprof_real::go_profiles() {
        for (name, shown) in [("cpu", "cpu/nanoseconds"), ("goroutine", "goroutine/count")] {
            let err = run(&go.join(format!("{name}.pb.gz")), &[], 1);
            assert!(err.contains(&format!("the type shown, {shown}, is not one")), "{name}: {err}");
            assert!(err.contains("this is not a memory profile"), "{name}: {err}");
        }
    }
    // A memory profile shown as a count: refused with the size to show instead; sizes work.
    let Some((a, _)) = go_heap() else { return };
    let err = run(a, &["--sample-type", "alloc_objects"], 1);
    assert!(
        err.contains("the type shown, alloc_objects/count, is not one") && err.contains("such as alloc_space"),
        "{err}"
    );
    run(a, &["--sample-type", "alloc_space"], 0);
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(read_heapprofile(&doc), stacks_of(&input_profile(a), 1));
}

/// speedscope's web app (`dist/release` of the pinned npm package whose tarball
/// `.ci/install-oracles.sh` keeps in `target/oracle-npm/`), unpacked into `dir`; `None` (a
/// panic when oracles are required) when the tarball is missing.
fn speedscope_app(dir: &Path) -> Option<PathBuf> {
    let tgz = root().join("target/oracle-npm/speedscope-1.25.0/speedscope-1.25.0.tgz");
    if !tgz.is_file() {
        if std::env::var("HEAPCONV_REQUIRE_ORACLES").as_deref() == Ok("1") {
            panic!("{} is required (HEAPCONV_REQUIRE_ORACLES=1): run .ci/install-oracles.sh", tgz.display());
        }
        eprintln!("SKIPPED browser check: no {} (run .ci/install-oracles.sh)", tgz.display());
        return None;
    }
    let st = Command::new("tar").arg("xzf").arg(&tgz).arg("-C").arg(dir).arg("package/dist/release").status().unwrap();
    assert!(st.success(), "tar xzf {}", tgz.display());
    Some(dir.join("package/dist/release"))
}

#[test]
fn speedscope_output_opens_in_the_speedscope_app() {
    let dir = tmp();
    let Some((core, chromium)) = crate::html::browser() else { return };
    let Some(app) = speedscope_app(dir.path()) else { return };
    let input = data("names.pftrace");
    let out = dir.path().join("names.speedscope.json");
    let doc = convert(&input, "speedscope", &out);
    let run = Command::new("node")
        .arg(root().join("tests/browser/check_speedscope.mjs"))
        .arg(&app)
        .arg(&out)
        .env("PLAYWRIGHT_CORE", core)
        .env("CHROMIUM", chromium)
        .output()
        .expect("node runs");
    assert!(run.status.success(), "check_speedscope.mjs: {}", String::from_utf8_lossy(&run.stderr));
    let page: Value = serde_json::from_slice(&run.stdout).expect("check_speedscope.mjs prints JSON");
    assert_eq!(page["errors"], serde_json::json!([]), "{page}");
    assert_eq!(page["requests"], serde_json::json!([]), "{page}");
    // The document's name is the page's title; the shown profile, 4th of 4, is unreleased size.
    let name = doc["name"].as_str().unwrap();
    assert_eq!(name, "/system/bin/namesd (pid 10), heap libc.malloc, dump 1 at 100 ns");
    assert_eq!(page["title"].as_str().unwrap(), format!("{name} - speedscope"));
    let text = page["text"].as_str().unwrap();
    assert!(text.contains("Unreleased malloc size (4/4)"), "{text}");
    // The sandwich table: every frame of the input by name, and malloc (every leaf) holding the
    // total, 1800 bytes (speedscope prints 1.76 KB).
    let want = stacks_of(&input_profile(&input), 3);
    let total: i64 = want.values().sum();
    assert_eq!(total, 1800);
    let rows: Vec<&str> = text.lines().map(|l| l.trim()).collect();
    for stack in want.keys() {
        for frame in stack.split(';') {
            assert!(rows.contains(&frame), "{frame} not in the app's table: {text}");
        }
    }
    let at = rows.iter().position(|&r| r == "malloc").unwrap();
    assert_eq!(&rows[at - 2..at], ["1.76 KB (100%)", "1.76 KB (100%)"], "{text}");
}
