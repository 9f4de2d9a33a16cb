//! pprof-style filters (issue 16): every filter on a pprof input gives what `go tool pprof
//! -proto` gives with the same flag, run live: the same samples (values, and frames with
//! their files, lines and mappings), so the same totals, sample count and `-top` rows. On two
//! pprof fixtures: a real Go heap profile (`tests/data/goheap/`, symbolized, with `bytes`
//! labels) and heapconv's pprof of `names.pftrace` (unsymbolized frames, several mappings,
//! `malloc` leaves). Then the other commands (merge, diff, top, views) and heapconv's own
//! `--drop-allocator-frames` and `--invert`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{RawSamples, data, have_go, heapconv_ok, parse_raw, pprof_raw, raw_sums, s, tmp};
use crate::merge::go_heap;

/// `go tool pprof -proto ARGS INPUTS` written to `out`.
fn go_proto(args: &[String], inputs: &[&Path], out: &Path) {
    let o = Command::new("go")
        .args(["tool", "pprof", "-proto"])
        .args(args)
        .args(inputs)
        .env("PPROF_TMPDIR", std::env::temp_dir())
        .env("PPROF_BINARY_PATH", "/nonexistent")
        .output()
        .unwrap();
    assert!(o.status.success(), "go tool pprof {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(out, o.stdout).unwrap();
}

fn raw(path: &Path) -> RawSamples {
    parse_raw(&pprof_raw(path))
}

/// The filters tried on each fixture: (heapconv flag, go flag, value).
const CASES: [(&str, &str, &str); 17] = [
    ("--focus", "-focus", "allocSmall|Parcel"),
    ("--focus", "-focus", r"main\.go|libmycrate"),
    ("--ignore", "-ignore", "allocLarge|mycrate"),
    ("--focus", "-focus", "heapfixture$|namesd$"),
    ("--hide", "-hide", r"runtime\.|libbinder"),
    ("--hide", "-hide", "heapfixture|libc.so"),
    ("--show", "-show", r"main\.|mycrate|^main$"),
    ("--show", "-show", r"proc\.go|libbinder"),
    ("--show-from", "-show_from", r"main\.main|mycrate::util::allocate"),
    ("--show-from", "-show_from", "libmycrate"),
    ("--prune-from", "-prune_from", r"main\.main|Parcel::write|mycrate::util"),
    ("--tag-focus", "-tagfocus", "bytes=4kb"),
    // A number without a unit is not a byte count: go matches nothing, and so do we.
    ("--tag-focus", "-tagfocus", "bytes=4096"),
    ("--tag-focus", "-tagfocus", "1kb:8kb"),
    ("--tag-ignore", "-tagignore", "bytes=:1kb"),
    ("--tag-focus", "-tagfocus", "64kb:"),
    ("--focus", "-focus", "no such function"),
];

/// The two pprof fixtures: the Go heap profile and heapconv's pprof of names.pftrace.
fn fixtures(dir: &Path) -> Option<Vec<PathBuf>> {
    let (go, _) = go_heap()?;
    let names = dir.join("names.pb.gz");
    heapconv_ok(&["convert", s(&data("names.pftrace")), "-o", s(&names)], 0);
    Some(vec![go.clone(), names])
}

#[test]
fn every_filter_on_a_pprof_input_gives_what_go_tool_pprof_proto_gives() {
    if !have_go() {
        return;
    }
    let dir = tmp();
    let Some(inputs) = fixtures(dir.path()) else { return };
    let mut matched_something = 0;
    for input in &inputs {
        let all = raw(input);
        for (k, (ours, go, value)) in CASES.iter().enumerate() {
            let h = dir.path().join(format!("h{k}.pb.gz"));
            let g = dir.path().join(format!("g{k}.pb.gz"));
            heapconv_ok(&["convert", s(input), "--to", "pprof", "-o", s(&h), ours, value], 0);
            go_proto(&[format!("{go}={value}")], &[input], &g);
            let (got, want) = (raw(&h), raw(&g));
            let what = format!("{} {ours} {value:?}", input.display());
            assert_eq!(got.1.len(), want.1.len(), "{what}: sample count");
            assert_eq!(raw_sums(&got), raw_sums(&want), "{what}: totals");
            assert_eq!(got.1, want.1, "{what}: samples");
            if got.1 != all.1 && !got.1.is_empty() {
                matched_something += 1;
            }
        }
    }
    // The cases do filter (neither everything nor nothing) on most inputs.
    assert!(matched_something >= 17, "{matched_something}");
}

#[test]
fn filters_combine_as_in_go_tool_pprof() {
    if !have_go() {
        return;
    }
    let dir = tmp();
    let Some(inputs) = fixtures(dir.path()) else { return };
    for input in &inputs {
        let h = dir.path().join("h.pb.gz");
        let g = dir.path().join("g.pb.gz");
        let ours = [
            "--focus",
            "main|malloc",
            "--ignore",
            "allocLarge|util::inner",
            "--hide",
            r"runtime\.goexit|libc",
            "--show-from",
            r"main\.main|^main$",
            "--prune-from",
            "allocSmall|Parcel",
        ];
        heapconv_ok(&[&["convert", s(input), "-o", s(&h)][..], &ours[..]].concat(), 0);
        let go: Vec<String> = ours.chunks(2).map(|c| format!("-{}={}", c[0][2..].replace('-', "_"), c[1])).collect();
        go_proto(&go, &[input], &g);
        assert_eq!(raw(&h).1, raw(&g).1, "{}", input.display());
    }
}

#[test]
fn merge_diff_and_top_filter_as_go_tool_pprof_does() {
    if !have_go() {
        return;
    }
    let Some((a, b)) = go_heap() else { return };
    let dir = tmp();
    // merge: go merges the inputs it is given.
    let h = dir.path().join("m.pb.gz");
    heapconv_ok(&["merge", s(a), s(b), "-o", s(&h), "--focus", "allocSmall", "--hide", r"runtime\."], 0);
    let g = dir.path().join("gm.pb.gz");
    go_proto(&["-focus=allocSmall".into(), r"-hide=runtime\.".into()], &[a, b], &g);
    assert_eq!(raw_sums(&raw(&h)), raw_sums(&raw(&g)));
    assert_eq!(raw(&h).1, raw(&g).1);
    // top: the total is the filtered profile's.
    let out = heapconv_ok(&["top", "--json", "-n", "0", s(a), "--ignore", "allocLarge"], 0);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = dir.path().join("gt.pb.gz");
    go_proto(&["-ignore=allocLarge".into()], &[a], &g);
    let t = raw_sums(&raw(&g));
    assert_eq!(j["total"].as_i64(), Some(t[3]), "inuse_space");
    let names: Vec<&str> = j["rows"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"main.allocSmall") && !names.contains(&"main.allocLarge"), "{names:?}");
    // diff: NEW minus BASE of the filtered profiles, as go's -diff_base.
    let h = dir.path().join("d.pb.gz");
    heapconv_ok(&["diff", s(a), s(b), "-o", s(&h), "--focus", "allocSmall"], 0);
    let g = dir.path().join("gd.pb.gz");
    go_proto(&["-focus=allocSmall".into(), format!("-diff_base={}", s(a))], &[b], &g);
    assert_eq!(raw_sums(&raw(&h)), raw_sums(&raw(&g)));
}

#[test]
fn allocator_frames_are_dropped_and_stacks_inverted() {
    let dir = tmp();
    let t = data("names.pftrace");
    let plain = dir.path().join("p.folded");
    heapconv_ok(&["convert", s(&t), "--to", "folded", "-o", s(&plain)], 0);
    let dropped = dir.path().join("d.folded");
    heapconv_ok(&["convert", s(&t), "--to", "folded", "-o", s(&dropped), "--drop-allocator-frames"], 0);
    let inverted = dir.path().join("i.folded");
    heapconv_ok(&["convert", s(&t), "--to", "folded", "-o", s(&inverted), "--invert"], 0);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let sum = |text: &str| -> i64 { text.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<i64>().unwrap()).sum() };
    let (plain, dropped, inverted) = (read(&plain), read(&dropped), read(&inverted));
    // Every stack of names.pftrace ends in malloc; dropping it keeps every value.
    assert!(plain.lines().all(|l| l.rsplit_once(' ').unwrap().0.ends_with(";malloc")), "{plain}");
    assert!(!dropped.contains("malloc"), "{dropped}");
    assert_eq!(sum(&dropped), sum(&plain));
    assert!(dropped.lines().any(|l| l.starts_with("main;mycrate::util::allocate ")), "{dropped}");
    // Inverted: leaf first.
    assert!(inverted.lines().all(|l| l.starts_with("malloc;") && l.rsplit_once(' ').unwrap().0.ends_with(";main")));
    assert_eq!(sum(&inverted), sum(&plain));
}

#[test]
fn views_and_viewer_formats_take_filters_and_bad_expressions_are_usage_errors() {
    let dir = tmp();
    let t = data("continuous_recycle.pftrace");
    let out = dir.path().join("peak.folded");
    heapconv_ok(&["convert", s(&t), "--view", "peak", "--to", "folded", "-o", s(&out)], 0);
    let all = std::fs::read_to_string(&out).unwrap();
    let first = all.lines().next().unwrap().rsplit_once(' ').unwrap().0.split(';').next_back().unwrap().to_owned();
    heapconv_ok(
        &[
            "convert",
            s(&t),
            "--view",
            "peak",
            "--to",
            "folded",
            "-o",
            s(&out),
            "--focus",
            &format!("^{}$", regex::escape(&first)),
        ],
        0,
    );
    let focused = std::fs::read_to_string(&out).unwrap();
    assert!(!focused.is_empty() && focused.lines().all(|l| l.contains(&first)), "{focused}");
    assert!(focused.len() <= all.len());
    let out = dir.path().join("x.speedscope.json");
    heapconv_ok(
        &["convert", s(&data("names.pftrace")), "--to", "speedscope", "-o", s(&out), "--show-from", "mycrate"],
        0,
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let frames = doc["shared"]["frames"].as_array().unwrap();
    assert!(frames.iter().all(|f| f["name"] != "main"), "{frames:?}");
    let r = heapconv_ok(&["convert", s(&data("names.pftrace")), "-o", "-", "--to", "folded", "--focus", "("], 2);
    assert!(String::from_utf8_lossy(&r.stderr).contains("--focus"), "{}", String::from_utf8_lossy(&r.stderr));
}

/// A sample of `go tool pprof -raw`: values, leaf-first function names, and labels
/// (`key:[values]`, string and numeric, sorted).
type Labelled = (Vec<i64>, Vec<String>, Vec<String>);

/// The samples of a pprof with their labels, sorted (go's `-raw` text, parsed).
fn labelled(path: &Path) -> Vec<Labelled> {
    let text = pprof_raw(path);
    let mut section = "";
    let mut samples: Vec<(Vec<i64>, Vec<u64>, Vec<String>)> = Vec::new();
    let mut locs: std::collections::HashMap<u64, Vec<String>> = Default::default();
    let mut last_loc = 0u64;
    for line in text.lines() {
        match line.trim() {
            "Samples:" => section = "types",
            "Locations" => section = "locs",
            "Mappings" => section = "maps",
            t if section == "types" => {
                assert!(!t.is_empty());
                section = "samples";
            }
            t if section == "samples" => {
                let parsed = t.split_once(": ").and_then(|(v, ids)| {
                    let v = v.split_whitespace().map(|x| x.parse().ok()).collect::<Option<Vec<i64>>>()?;
                    let ids = ids.split_whitespace().map(|x| x.parse().ok()).collect::<Option<Vec<u64>>>()?;
                    Some((v, ids))
                });
                match parsed {
                    Some((v, ids)) if !t.contains('[') => samples.push((v, ids, Vec::new())),
                    _ => {
                        let labels = &mut samples.last_mut().expect("a label line follows a sample").2;
                        labels.extend(t.split("] ").map(|l| format!("{}]", l.trim_end_matches(']'))));
                    }
                }
            }
            t if section == "locs" => {
                // "     1: 0x401000 M=1 main.f :1 s=0", a continuation line for an inlined
                // function, or an address without a name.
                let (id, rest) = match t.split_once(": ") {
                    Some((id, rest)) if id.chars().all(|c| c.is_ascii_digit()) => (id.parse().unwrap(), rest),
                    _ => (last_loc, t),
                };
                last_loc = id;
                let name = rest.split_whitespace().find(|w| !w.starts_with("0x") && !w.starts_with("M=")).unwrap_or("");
                locs.entry(id).or_default().push(name.to_owned());
            }
            _ => {}
        }
    }
    let mut out: Vec<Labelled> = samples
        .into_iter()
        .map(|(v, ids, mut labels)| {
            labels.sort();
            (v, ids.iter().flat_map(|id| locs[id].clone()).collect(), labels)
        })
        .collect();
    out.sort();
    out
}

/// Label filters on a pprof with string labels (and numeric ones): (heapconv args, go args).
const LABEL_CASES: [(&[&str], &[&str]); 14] = [
    (&["--tag-focus", "thread=main"], &["-tagfocus=thread=main"]),
    (&["--tag-focus", "thread=^worker"], &["-tagfocus=thread=^worker"]),
    (&["--tag-focus", "thread=io,worker-2"], &["-tagfocus=thread=io,worker-2"]),
    (&["--tag-ignore", "request=GET"], &["-tagignore=request=GET"]),
    (&["--tag-focus", "request:GET,thread:main"], &["-tagfocus=request:GET,thread:main"]),
    (&["--tag-focus", "bytes=1kb:64kb"], &["-tagfocus=bytes=1kb:64kb"]),
    (&["--tag-ignore", "object_id=5:10"], &["-tagignore=object_id=5:10"]),
    (&["--tag-show", "thread"], &["-tagshow=thread"]),
    (&["--tag-show", "^(request|bytes)$"], &["-tagshow=^(request|bytes)$"]),
    (&["--tag-hide", "^(thread|bytes)$"], &["-taghide=^(thread|bytes)$"]),
    (&["--tag-hide", "."], &["-taghide=."]),
    (&["--tag-show", "e", "--tag-hide", "request"], &["-tagshow=e", "-taghide=request"]),
    // tag-focus sees the labels tag-hide removes afterwards, as in go.
    (&["--tag-focus", "thread=main", "--tag-hide", "thread"], &["-tagfocus=thread=main", "-taghide=thread"]),
    (&["--tag-show", "no such key"], &["-tagshow=no such key"]),
];

#[test]
fn label_filters_on_string_labels_give_what_go_tool_pprof_proto_gives() {
    if !have_go() {
        return;
    }
    let dir = tmp();
    let input = data("pprof-odd/string-labels.pb.gz");
    let all = labelled(&input);
    assert_eq!(all.len(), 6);
    assert!(all.iter().any(|s| s.2.contains(&"thread:[main io]".to_owned())), "{all:?}");
    for (k, (ours, go)) in LABEL_CASES.iter().enumerate() {
        let h = dir.path().join(format!("h{k}.pb.gz"));
        let g = dir.path().join(format!("g{k}.pb.gz"));
        heapconv_ok(&[&["convert", s(&input), "--to", "pprof", "-o", s(&h)][..], ours].concat(), 0);
        go_proto(&go.iter().map(|a| a.to_string()).collect::<Vec<_>>(), &[&input], &g);
        let (got, want) = (labelled(&h), labelled(&g));
        assert_eq!(got, want, "{ours:?}");
        assert!(!want.is_empty() && want != all, "{ours:?} filters something: {want:?}");
    }
}

#[test]
fn tag_show_and_hide_on_go_heap_labels_and_on_every_command() {
    if !have_go() {
        return;
    }
    let Some((a, b)) = go_heap() else { return };
    let dir = tmp();
    let input = data("pprof-odd/string-labels.pb.gz");
    // convert of a real Go heap profile (numeric `bytes` labels).
    let h = dir.path().join("h.pb.gz");
    let g = dir.path().join("g.pb.gz");
    heapconv_ok(&["convert", s(a), "-o", s(&h), "--tag-hide", "bytes"], 0);
    go_proto(&["-taghide=bytes".into()], &[a], &g);
    let (got, want) = (labelled(&h), labelled(&g));
    assert_eq!(got, want);
    assert!(want.iter().all(|s| s.2.is_empty()) && labelled(a).iter().any(|s| !s.2.is_empty()));
    // merge: go merges its inputs, then filters.
    heapconv_ok(&["merge", s(&input), s(&input), "-o", s(&h), "--tag-show", "request|bytes"], 0);
    go_proto(&["-tagshow=request|bytes".into()], &[&input, &input], &g);
    assert_eq!(labelled(&h), labelled(&g));
    // diff: NEW minus BASE of the filtered profiles (labels kept by the filter).
    heapconv_ok(&["diff", s(a), s(b), "-o", s(&h), "--tag-hide", "bytes"], 0);
    let d = labelled(&h);
    assert!(!d.is_empty() && d.iter().all(|s| s.2.iter().all(|l| !l.starts_with("bytes:"))), "{d:?}");
    // top: totals unchanged, as labels are not samples.
    let top = |extra: &[&str]| -> serde_json::Value {
        let out = heapconv_ok(&[&["top", "--json", "-n", "0", s(&input)][..], extra].concat(), 0);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(top(&["--tag-hide", "."])["total"], top(&[])["total"]);
    assert_eq!(top(&["--tag-focus", "thread=main"])["total"].as_i64(), Some(1024 + 10));
    // A bad expression is a usage error naming the flag.
    let r = heapconv_ok(&["convert", s(&input), "-o", "-", "--to", "folded", "--tag-show", "("], 2);
    assert!(String::from_utf8_lossy(&r.stderr).contains("--tag-show"), "{}", String::from_utf8_lossy(&r.stderr));
}

/// The `pruned` object of an HTML report (`{"below_percent", "nodes", "values"}`), read from
/// the page's embedded data, no browser needed.
fn pruned_of(report: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(report).unwrap();
    let at = html.find("\"pruned\":").expect("a report says what it pruned");
    let rest = &html[at + "\"pruned\":".len()..];
    let end = rest.find('}').expect("the pruned object ends") + 1;
    serde_json::from_str(&rest[..end]).expect("the pruned object is JSON")
}

#[test]
fn prune_below_reaches_merge_and_view_reports() {
    let dir = tmp();
    let html = |name: &str, args: &[&str]| -> serde_json::Value {
        let out = dir.path().join(name);
        heapconv_ok(&[args, &["--to", "html", "-o", s(&out)][..]].concat(), 0);
        pruned_of(&out)
    };
    let trace = data("art_frames.pftrace");
    let views = data("views/views.pftrace");
    let sel = ["--pid", "10", "--heap", "libc.malloc"];
    // (what, args): each run at the default (0.01%), at 60% and at 0.
    let runs: Vec<(&str, Vec<&str>)> = vec![
        ("merge", vec!["merge", s(&trace), s(&trace)]),
        ("convert", vec!["convert", s(&trace)]),
        ("peak", [&["convert", s(&views), "--view", "peak"][..], &sel].concat()),
        ("leaks", [&["convert", s(&views), "--view", "leaks"][..], &sel].concat()),
        ("delta", [&["convert", s(&views), "--view", "delta", "--from", "4250000000"][..], &sel].concat()),
    ];
    let mut pruned_more = 0;
    for (what, args) in &runs {
        let default = html(&format!("{what}.html"), args);
        let sixty = html(&format!("{what}.60.html"), &[&args[..], &["--prune-below", "60"]].concat());
        let zero = html(&format!("{what}.0.html"), &[&args[..], &["--prune-below", "0"]].concat());
        assert_eq!(default["below_percent"], serde_json::json!(0.01), "{what}");
        assert_eq!(sixty["below_percent"], serde_json::json!(60.0), "{what}");
        assert_eq!(zero["nodes"], serde_json::json!(0), "{what}: 0 keeps every frame");
        let n = |v: &serde_json::Value| v["nodes"].as_u64().unwrap();
        assert!(n(&sixty) >= n(&default), "{what}: {sixty} vs {default}");
        if n(&sixty) > n(&default) {
            pruned_more += 1;
        }
    }
    assert_eq!(pruned_more, runs.len(), "60% prunes more than 0.01% in every report");
    // merge of art_frames twice: the one 16-byte stack of convert's test, twice.
    let m = html("m.html", &["merge", s(&trace), s(&trace), "--prune-below", "30"]);
    assert_eq!(m["values"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).max(), Some(32), "{m}");
}

#[test]
fn leak_suspects_json_lists_the_suspects_the_filters_keep() {
    let dir = tmp();
    let views = data("views/views.pftrace");
    let json = |extra: &[&str]| -> serde_json::Value {
        let out = dir.path().join("l.json");
        let base = ["convert", s(&views), "--view", "leaks", "--value", "total-size", "--to", "json", "-o", s(&out)];
        heapconv_ok(&[&base[..], &["--pid", "10", "--heap", "libc.malloc"], extra].concat(), 0);
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
    };
    let series = |v: &serde_json::Value| v["view"]["series"][0].clone();
    let frames = |x: &serde_json::Value| -> Vec<String> {
        x["frames"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_owned()).collect()
    };
    let all = series(&json(&[]));
    let suspects = all["suspects"].as_array().unwrap();
    assert_eq!(suspects.len(), 3);
    let fill = suspects.iter().find(|x| frames(x).contains(&"Cache::fill()".to_owned())).unwrap().clone();
    let fill_last = fill["values"].as_array().unwrap().last().unwrap().as_i64().unwrap();

    // --focus: only the suspects it keeps, the total theirs, the profile too.
    let doc = json(&["--focus", r"Cache::fill"]);
    let v = series(&doc);
    let list = v["suspects"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{v}");
    assert_eq!(list[0]["values"], fill["values"]);
    assert_eq!(list[0]["growth"], fill["growth"]);
    assert_eq!(v["total"].as_i64(), Some(fill_last));
    assert_ne!(all["total"], v["total"]);
    // --hide and --invert change the frames listed, not the values.
    let v = series(&json(&["--hide", "^malloc$"]));
    let list = v["suspects"].as_array().unwrap();
    assert_eq!(list.len(), 3);
    assert!(list.iter().all(|x| !frames(x).contains(&"malloc".to_owned())), "{v}");
    assert_eq!(v["total"], all["total"]);
    let v = series(&json(&["--invert"]));
    for (x, y) in v["suspects"].as_array().unwrap().iter().zip(suspects) {
        let mut f = frames(y);
        f.reverse();
        assert_eq!(frames(x), f);
        assert_eq!(x["values"], y["values"]);
    }
    // Nothing matched: no suspect listed, total 0.
    let v = series(&json(&["--focus", "no such function"]));
    assert_eq!((v["suspects"].as_array().unwrap().len(), v["total"].as_i64()), (0, Some(0)));
}

#[test]
fn a_java_heaps_class_report_refuses_filters_and_its_tree_takes_them() {
    let dir = tmp();
    let trace = data("heapgraph/shapes.pftrace");
    // convert --to json: the class report; top: the class table.
    let out = dir.path().join("h.json");
    let r = heapconv_ok(&["convert", s(&trace), "--to", "json", "-o", s(&out), "--focus", "Bitmap"], 2);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("--to json of a Java heap writes its class report") && err.contains("--focus"), "{err}");
    assert!(!out.exists());
    let r = heapconv_ok(&["top", s(&trace), "--tag-hide", "x"], 2);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("a Java heap is shown by class") && err.contains("stack filters"), "{err}");
    // Without filters both work; the dominator tree takes filters.
    heapconv_ok(&["convert", s(&trace), "--to", "json", "-o", s(&out)], 0);
    heapconv_ok(&["top", s(&trace)], 0);
    let all = heapconv_ok(&["convert", s(&trace), "--to", "folded", "-o", "-"], 0).stdout;
    let kept =
        heapconv_ok(&["convert", s(&trace), "--to", "folded", "-o", "-", "--ignore", "java.lang.String"], 0).stdout;
    let (all, kept) = (String::from_utf8(all).unwrap(), String::from_utf8(kept).unwrap());
    assert!(all.contains("java.lang.String") && !kept.contains("java.lang.String") && !kept.is_empty(), "{kept}");
}
