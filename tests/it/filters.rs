//! pprof-style filters (issue 16): every filter on a pprof input gives what `go tool pprof
//! -proto` gives with the same flag, run live: the same samples (values, and frames with
//! their files, lines and mappings), so the same totals, sample count and `-top` rows. On two
//! pprof fixtures: a real Go heap profile (`tests/data/goheap/`, symbolized, with `bytes`
//! labels) and heapconv's pprof of `names.pftrace` (unsymbolized frames, several mappings,
//! `malloc` leaves). Then the other commands (merge, diff, top, views) and heapconv's own
//! `--drop-allocator-frames` and `--invert`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{RawSamples, data, have_go, heapconv_ok, parse_raw, pprof_raw};
use crate::merge::go_heap;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temp dir")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

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

fn totals(r: &RawSamples) -> Vec<i64> {
    let n = r.1.first().map_or(0, |s| s.0.len());
    (0..n).map(|i| r.1.iter().map(|s| s.0[i]).sum()).collect()
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
            assert_eq!(totals(&got), totals(&want), "{what}: totals");
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
    assert_eq!(totals(&raw(&h)), totals(&raw(&g)));
    assert_eq!(raw(&h).1, raw(&g).1);
    // top: the total is the filtered profile's.
    let out = heapconv_ok(&["top", "--json", "-n", "0", s(a), "--ignore", "allocLarge"], 0);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = dir.path().join("gt.pb.gz");
    go_proto(&["-ignore=allocLarge".into()], &[a], &g);
    let t = totals(&raw(&g));
    assert_eq!(j["total"].as_i64(), Some(t[3]), "inuse_space");
    let names: Vec<&str> = j["rows"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"main.allocSmall") && !names.contains(&"main.allocLarge"), "{names:?}");
    // diff: NEW minus BASE of the filtered profiles, as go's -diff_base.
    let h = dir.path().join("d.pb.gz");
    heapconv_ok(&["diff", s(a), s(b), "-o", s(&h), "--focus", "allocSmall"], 0);
    let g = dir.path().join("gd.pb.gz");
    go_proto(&["-focus=allocSmall".into(), format!("-diff_base={}", s(a))], &[b], &g);
    assert_eq!(totals(&raw(&h)), totals(&raw(&g)));
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
