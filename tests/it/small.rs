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

#[test]
fn semicolons_in_function_names_stay_semicolons_in_the_flame_graph() {
    let dir = tempfile::tempdir().unwrap();
    let name = "main.Map[go.shape.int;go.shape.string]";
    let f = dir.path().join("generic.pb");
    std::fs::write(&f, small_pprof(&[("alloc_space", "bytes")], name)).unwrap();
    let o = heapconv_ok(&["convert", f.to_str().unwrap(), "--to", "svg"], 0);
    let svg = String::from_utf8(o.stdout).unwrap();
    assert!(svg.contains("<title>main.Map[go.shape.int;go.shape.string] (7 B, 7 bytes, 100.00%)</title>"), "{svg}");
    assert!(!svg.contains("go.shape.int:go.shape.string"));
    assert!(!svg.contains('\u{E03B}'));
    // Folded stacks escape it, and read back as one frame.
    let o = heapconv_ok(&["convert", f.to_str().unwrap(), "--to", "folded"], 0);
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "main;main.Map[go.shape.int\\;go.shape.string] 7\n");
}

#[test]
fn a_failed_merge_names_the_same_inputs_on_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (file, ty, unit) in
        [("a.pb", "cpu", "nanoseconds"), ("b.pb", "alloc_space", "bytes"), ("c.pb", "contentions", "count")]
    {
        let p = dir.path().join(file);
        std::fs::write(&p, small_pprof(&[(ty, unit)], "f")).unwrap();
        paths.push(p.to_str().unwrap().to_owned());
    }
    let out = dir.path().join("m.pb.gz");
    let want = format!(
        "heapconv: error: invalid request: cannot merge {}: its sample types [alloc_space/bytes] differ from [cpu/nanoseconds] (of {})",
        paths[1], paths[0]
    );
    for _ in 0..5 {
        let o = heapconv_ok(&["merge", &paths[0], &paths[1], &paths[2], "-o", out.to_str().unwrap()], 2);
        let err = String::from_utf8(o.stderr).unwrap();
        assert!(err.starts_with(&want), "{err}");
    }
}

#[test]
fn top_says_the_unit_of_the_dump_time() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = android_sample(4, true);
    let p = dir.path().join("a.hprof");
    std::fs::write(&p, &bytes).unwrap();
    let o = heapconv_ok(&["top", p.to_str().unwrap()], 0);
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().next().unwrap(), "a, JAVA PROFILE 1.0.3, dumped 2023-11-14 22:13:20.123 UTC");
    // The JSON keeps the number the file holds (ms since the epoch).
    let o = heapconv_ok(&["top", p.to_str().unwrap(), "--json"], 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["timestamp"], 1_700_000_000_123_i64);
    // Heap graphs: trace-clock nanoseconds.
    let trace = data("traceconv/cases/heap_graph_small.pftrace");
    let o = heapconv_ok(&["top", trace.to_str().unwrap()], 0);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.lines().next().unwrap().ends_with(", dump at 500 ns"), "{text}");
}

#[test]
fn help_lists_every_input_heapconv_reads() {
    let o = heapconv_ok(&["--help"], 0);
    let text = String::from_utf8(o.stdout).unwrap();
    let about = text.lines().next().unwrap();
    for want in ["Perfetto traces", "heapprofd", "Java heap graphs", "DDM allocation records", "HPROF", "pprof"] {
        assert!(about.contains(want), "{want:?} missing in {about}");
    }
    for want in [
        "HPROF heap dump (JAVA PROFILE 1.0.1, 1.0.2, 1.0.3): convert, top, inspect, hprof-conv",
        "pprof (gzip'd or not): convert, merge, diff, top, inspect",
        "legacy text heap profile (gperftools, old Go: `heap profile: …`): convert, merge, diff, top, inspect",
        "DDM allocation records (.alloc): convert, merge, diff, top, inspect",
        "Perfetto trace, Java heap graphs: convert, top, inspect, hprof",
        "convert and top read a Java heap (heap graph or HPROF dump) as a dominator or shortest-path tree",
    ] {
        assert!(text.contains(want), "{want:?} missing in\n{text}");
    }
    let o = heapconv_ok(&["convert", "--help"], 0);
    let text = String::from_utf8(o.stdout).unwrap();
    for want in ["an HPROF heap dump", "a pprof profile", "Java heap graphs", "DDM allocation records"] {
        assert!(text.contains(want), "{want:?} missing in\n{text}");
    }
}

#[test]
fn inspect_of_no_known_format_says_so_with_the_file_size() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("text.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b"hello world, this is no profile\n").unwrap();
    let bytes = e.finish().unwrap();
    std::fs::write(&gz, &bytes).unwrap();
    let o = heapconv_ok(&["inspect", gz.to_str().unwrap()], 1);
    let err = String::from_utf8(o.stderr).unwrap();
    let want = format!(
        "heapconv: error: malformed input: {}: not a format heapconv reads ({} bytes, gzip; not a Perfetto trace, DDM allocation records, an HPROF heap dump or a pprof profile)",
        gz.display(),
        bytes.len()
    );
    assert!(err.starts_with(&want), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn go_tags_of_a_ddm_capture_is_the_thread_table() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("art.pb.gz");
    let numbered = dir.path().join("art-numbered.pb.gz");
    let art = data("ddm/art.alloc");
    heapconv_ok(&["convert", art.to_str().unwrap(), "-o", out.to_str().unwrap()], 0);
    heapconv_ok(&["convert", art.to_str().unwrap(), "-o", numbered.to_str().unwrap(), "--allocation-label"], 0);
    let tags = |extra: &[&str], path: &std::path::Path| {
        let o = std::process::Command::new("go")
            .args(["tool", "pprof", "-tags"])
            .args(extra)
            .arg(path)
            .output()
            .expect("go runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    // By default the only label is the thread: -tags is the thread table alone (the README's
    // command), however many records the capture holds.
    let threads = ["thread: Total 5.2kB", "4.1kB (78.55%): 12401", "1.0kB (20.24%): 12345", "64.0B ( 1.21%): 12367"];
    let all = tags(&[], &out);
    let lines: Vec<&str> = all.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    assert_eq!(lines, threads, "{all}");
    // --allocation-label adds the allocation numbers: one line per record (7), before the
    // threads; -tagshow=thread shows the thread table alone again.
    let all = tags(&[], &numbered);
    let lines: Vec<&str> = all.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    assert_eq!(lines[0], "allocation: Total 5.2kB", "{all}");
    assert_eq!(lines.iter().position(|l| l.starts_with("thread:")), Some(8), "{all}");
    let shown = tags(&["-tagshow=thread"], &numbered);
    let lines: Vec<&str> = shown.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    assert_eq!(lines, threads, "{shown}");
}
