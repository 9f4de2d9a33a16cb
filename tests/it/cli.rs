//! The command line as a user meets it: filters, stdin, exit codes, damaged and hostile
//! inputs, refusing to overwrite inputs, and data-loss flags surfacing in every output.

use crate::common::*;
use serde_json::Value;

#[test]
fn pid_and_timestamp_filters_select_dumps() {
    let input = data("heaps_and_procs.pftrace");
    let out = tempfile::tempdir().unwrap();
    heapconv_ok(&["profile", input.to_str().unwrap(), "-q", "--pid", "20", "-o", out.path().to_str().unwrap()], 0);
    assert_eq!(file_names(out.path()), ["heap_dump.1.20.libc.malloc.pb.gz"]);

    // Timestamps are trace-clock values: in clock_offsets the dumps at raw 8.5 s and 20 s are
    // 9.5 s and 25 s after conversion through the clock snapshots.
    let input = data("clock_offsets.pftrace");
    let out = tempfile::tempdir().unwrap();
    heapconv_ok(
        &[
            "profile",
            input.to_str().unwrap(),
            "-q",
            "--raw",
            "--timestamps",
            "9500000000,25000000000,8500000000",
            "-o",
            out.path().to_str().unwrap(),
        ],
        0,
    );
    assert_eq!(file_names(out.path()), ["heap_dump.1.10.libc.malloc.pb", "heap_dump.2.10.libc.malloc.pb"]);
    let p = read_pprof(&out.path().join("heap_dump.2.10.libc.malloc.pb"));
    let comments: Vec<&str> = p.comment.iter().map(|&i| p.string_table[i as usize].as_str()).collect();
    assert!(comments[0].contains("at 25000000000 ns"), "{comments:?}");
}

#[test]
fn nothing_matching_writes_nothing_and_creates_no_directory() {
    let input = data("heaps_and_procs.pftrace");
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("never");
    let o = heapconv_ok(&["profile", input.to_str().unwrap(), "--pid", "999", "-o", target.to_str().unwrap()], 0);
    assert!(stderr_of(&o).contains("No profile matched"));
    assert!(!target.exists());
}

#[test]
fn a_single_output_in_a_missing_folder_creates_the_folder() {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("new/deeper/trace.folded");
    heapconv_ok(
        &["convert", data("art_frames.pftrace").to_str().unwrap(), "--to", "folded", "-o", target.to_str().unwrap()],
        0,
    );
    let text = std::fs::read_to_string(&target).unwrap();
    let want = heapconv_ok(&["convert", data("art_frames.pftrace").to_str().unwrap(), "--to", "folded", "-o", "-"], 0);
    assert_eq!(text.as_bytes(), &want.stdout[..]);
    assert!(!text.is_empty());
    // Only the output is there: no temporary file left beside it.
    assert_eq!(file_names(&out.path().join("new/deeper")), vec!["trace.folded".to_owned()]);
}

#[test]
fn reads_standard_input_including_gzip() {
    for name in ["continuous_recycle.pftrace", "continuous_recycle.pftrace.gz"] {
        let bytes = std::fs::read(data(name)).unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_heapconv"))
            .args(["convert", "-", "--to", "folded", "--view", "total-count"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}");
        let text = String::from_utf8(o.stdout).unwrap();
        let total: i64 = text.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<i64>().unwrap()).sum();
        let exp: Value = serde_json::from_str(&std::fs::read_to_string(data("expected.json")).unwrap()).unwrap();
        let last = exp["continuous_recycle"].as_array().unwrap().last().unwrap();
        let want: i64 = last["samples"].as_array().unwrap().iter().map(|s| s["total_count"].as_i64().unwrap()).sum();
        assert_eq!(total, want, "{name}");
    }
}

#[test]
fn truncated_traces_give_partial_results_with_file_offset_and_packet() {
    for (name, complete_dumps) in [
        // The only dump's chain is cut: nothing complete, nothing written, still exit 3.
        ("interned_chain_spill.trunc-midpacket.pftrace", 0),
        ("interned_chain_spill.trunc-midvarint.pftrace", 0),
        ("interned_chain_spill.trunc-tag.pftrace", 0),
        ("interned_chain_spill.zlib.trunc-zlib.pftrace", 0),
        ("continuous_recycle.trunc-gzip.pftrace", 0),
        // Cut on a packet boundary inside the last dump's chain: the 3 changed dumps before it.
        ("continuous_recycle.trunc-midchain.pftrace", 3),
    ] {
        let input = data(name);
        let out = tempfile::tempdir().unwrap();
        let o = heapconv(&["profile", input.to_str().unwrap(), "-o", out.path().to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(3), "{name}: {}", stderr_of(&o));
        let err = stderr_of(&o);
        if name.contains("midchain") {
            assert!(err.contains("never finished"), "{name}: {err}");
        } else {
            assert!(err.contains(name) && err.contains("at byte ") && err.contains("packet "), "{name}: {err}");
        }
        // Dumps complete before the damage are written; anything after is not.
        let report: Value =
            serde_json::from_slice(&heapconv(&["inspect", "--json", input.to_str().unwrap()]).stdout).unwrap();
        let changed = report["dumps"].as_array().unwrap().iter().filter(|d| d["changed"] == true).count();
        assert_eq!(changed, complete_dumps, "{name}");
        assert_eq!(file_names(out.path()).len(), complete_dumps, "{name}");
        assert!(file_names(out.path()).iter().all(|f| !f.ends_with(".tmp")));
    }
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "this is not a trace\n").unwrap();
    // inspect: no format heapconv reads is an error (exit 1), not a trace report.
    let o = heapconv(&["inspect", text.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr_of(&o).contains("not a format heapconv reads (20 bytes; not a Perfetto trace"), "{}", stderr_of(&o));
    let o = heapconv(&["profile", text.to_str().unwrap(), "-o", dir.path().join("o").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr_of(&o));
    assert!(!dir.path().join("o").exists());

    let empty = dir.path().join("empty.pftrace");
    std::fs::write(&empty, b"").unwrap();
    let o = heapconv(&["profile", empty.to_str().unwrap(), "-o", dir.path().join("o").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr_of(&o).contains("no heapprofd profile"), "{}", stderr_of(&o));

    let missing = dir.path().join("missing.pftrace");
    let o = heapconv(&["convert", missing.to_str().unwrap(), "--to", "folded"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr_of(&o).contains("missing.pftrace"));

    // A length prefix near 4 GiB is refused before anything is allocated.
    let huge = dir.path().join("huge.pftrace");
    std::fs::write(&huge, [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]).unwrap();
    let o = heapconv(&["inspect", huge.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stdout).contains("claims 4294967295 bytes"));
}

#[test]
fn compressed_bundles_are_capped() {
    let input = data("interned_chain_spill.zlib.pftrace");
    let o = heapconv(&["inspect", "--max-bundle-mib", "0", input.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stdout).contains("exceeds the limit"), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn never_overwrites_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.pftrace");
    std::fs::copy(data("heaps_and_procs.pftrace"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let o =
        heapconv(&["convert", input.to_str().unwrap(), "--pid", "20", "--to", "folded", "-o", input.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("it is an input"));
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

#[test]
fn several_matches_need_a_choice_or_a_directory() {
    let input = data("heaps_and_procs.pftrace");
    let dir = tempfile::tempdir().unwrap();
    let o = heapconv(&[
        "convert",
        input.to_str().unwrap(),
        "--to",
        "svg",
        "-o",
        dir.path().join("x.svg").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("profiles match"));
    let outdir = format!("{}/all/", dir.path().display());
    heapconv_ok(&["convert", input.to_str().unwrap(), "--to", "svg", "--dump", "all", "-o", &outdir], 0);
    // `convert --dump all` writes every dump, unchanged ones too (8), unlike `profile` (5).
    assert_eq!(file_names(&dir.path().join("all")).len(), 8);
}

#[test]
fn data_loss_reaches_every_output() {
    let input = data("data_loss.pftrace");
    let out = tempfile::tempdir().unwrap();
    let o = heapconv_ok(&["profile", input.to_str().unwrap(), "-o", out.path().to_str().unwrap()], 0);
    assert!(stderr_of(&o).contains("buffer_overran"), "{}", stderr_of(&o));
    let p = read_pprof(&out.path().join("heap_dump.2.12.libc.malloc.pb.gz"));
    let comments: Vec<&str> = p.comment.iter().map(|&i| p.string_table[i as usize].as_str()).collect();
    // This dump's chain also has an index gap (a ProfilePacket was lost).
    assert!(comments.contains(&"data loss: disconnected, buffer_overran, missing_packets"), "{comments:?}");

    let svg = heapconv_ok(&["convert", input.to_str().unwrap(), "--pid", "13", "--to", "svg"], 0).stdout;
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.contains("DATA LOSS: buffer_corrupted, hit_guardrail"), "subtitle names the loss");

    let json = heapconv_ok(&["convert", input.to_str().unwrap(), "--pid", "14", "--to", "json"], 0).stdout;
    let v: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        v["profiles"][0]["data_loss"],
        serde_json::json!(["buffer_overran", "client_error=HIT_TIMEOUT", "missing_packets"])
    );
}

#[test]
fn inspect_reports_sequences_dumps_and_problems() {
    let input = data("sequences.pftrace");
    let v: Value =
        serde_json::from_slice(&heapconv_ok(&["inspect", "--json", input.to_str().unwrap()], 0).stdout).unwrap();
    assert!(v["sequences"].as_object().unwrap().len() >= 2);
    assert_eq!(v["dumps"].as_array().unwrap().len(), 3);
    let text =
        String::from_utf8(heapconv_ok(&["inspect", data("no_clock.pftrace").to_str().unwrap()], 0).stdout).unwrap();
    assert!(text.contains("777000(raw)"), "{text}");
}

#[test]
fn special_files_are_written_in_place_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    // A named pipe stands for /dev/null or /dev/stdout: renaming a temporary file over it
    // would replace the pipe (or the device) with a plain file.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let st = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let input = data("heaps_and_procs.pftrace");
    let args = ["convert", input.to_str().unwrap(), "--pid", "20", "--to", "folded", "-o"];
    heapconv_ok(&[&args[..], &[fifo.to_str().unwrap()]].concat(), 0);
    // Checked before joining: had the pipe been replaced, the reader would never see a writer.
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the pipe was replaced");
    let through_pipe = reader.join().unwrap();

    let plain = dir.path().join("plain.folded");
    heapconv_ok(&[&args[..], &[plain.to_str().unwrap()]].concat(), 0);
    let expected = std::fs::read(&plain).unwrap();
    assert!(!expected.is_empty());
    assert_eq!(through_pipe, expected);
    // Nothing was left behind next to the pipe.
    assert_eq!(file_names(dir.path()), ["pipe", "plain.folded"]);
}

#[test]
fn convert_of_an_hprof_dump_shows_dominator_and_shortest_path_trees() {
    // An hprof written by `heapconv hprof` from traceconv's reference heap graph.
    let dir = tempfile::tempdir().unwrap();
    let hprof = dir.path().join("small.hprof");
    let trace = data("traceconv/cases/heap_graph_small.pftrace");
    heapconv_ok(&["hprof", trace.to_str().unwrap(), "-q", "-o", hprof.to_str().unwrap()], 0);
    let folded = |by: &str| {
        let o = heapconv_ok(&["convert", hprof.to_str().unwrap(), "--by", by, "--to", "folded"], 0);
        String::from_utf8(o.stdout).unwrap()
    };
    let dom = folded("dominator");
    let holder = "com.example.Holder [ROOT_JAVA_FRAME]";
    for line in [
        format!("{holder} 16"),
        format!("{holder};com.example.Cache 24"),
        format!("{holder};com.example.Cache;java.lang.Object[];com.example.Blob 2000"),
    ] {
        assert!(dom.lines().any(|l| l == line), "{line:?} missing from\n{dom}");
    }
    assert!(folded("shortest-path").lines().any(|l| l == format!("{holder};com.example.Cache 24")));
    // JSON is the top report: classes by retained size.
    let o = heapconv_ok(&["convert", hprof.to_str().unwrap(), "--to", "json"], 0);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["roots"], 2);
    // The weak referent (a Blob) is not reachable, as in the heap graph: Holder retains the
    // most (16 + 24 + an 8-byte array in hprof + two Blobs).
    assert_eq!(v["reachable_objects"], 6);
    assert_eq!(v["classes"][0]["name"], "com.example.Holder");
    assert_eq!(v["classes"][0]["retained"], 2048);
    let names: Vec<&str> = v["classes"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(&names[..4], ["com.example.Holder", "com.example.Cache", "java.lang.Object[]", "com.example.Blob"]);
    assert_eq!(v["classes"][3]["shallow"], 4000);
    assert_eq!(v["classes"][3]["reachable_instances"], 2);
    assert_eq!(v["classes"][3]["retained"], 2000);
}

/// `profile -` reads standard input once (the pre-pass reads it as it comes, keeping the bytes
/// for the decoder): the same files as from the path, plain and gzip, and the same error for a
/// cut gzip stream.
#[test]
fn profile_from_standard_input_equals_the_file_run() {
    use std::io::Write;
    for (name, file_code, code) in [
        ("continuous_recycle.pftrace", 0, 0),
        ("continuous_recycle.pftrace.gz", 0, 0),
        ("heaps_and_procs.pftrace.gz", 0, 0),
        ("interned_chain_spill.zlib.pftrace", 0, 0),
        ("continuous_recycle.trunc-gzip.pftrace", 3, 1),
    ] {
        let (from_file, from_stdin) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let f = heapconv_ok(
            &["profile", data(name).to_str().unwrap(), "-o", from_file.path().to_str().unwrap()],
            file_code,
        );
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_heapconv"))
            .args(["profile", "-", "-o", from_stdin.path().to_str().unwrap()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&std::fs::read(data(name)).unwrap()).unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{name}");
        let (a, b) = (file_names(from_file.path()), file_names(from_stdin.path()));
        assert_eq!(a, b, "{name}");
        assert_eq!(a.is_empty(), code != 0, "{name}");
        for n in &a {
            let read = |d: &std::path::Path| std::fs::read(d.join(n)).unwrap();
            assert!(read(from_file.path()) == read(from_stdin.path()), "{name}: {n}");
        }
        if code != 0 {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("reading -") && err.contains("deflate"), "{name}: {err}");
            assert!(String::from_utf8_lossy(&f.stderr).contains("the compressed stream is damaged"), "{name}");
        }
    }
}

/// Every file under `dir` (one level of subdirectories too), by path relative to it, with its
/// bytes.
fn tree_bytes(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut all = std::collections::BTreeMap::new();
    for name in file_names(dir) {
        let path = dir.join(&name);
        if path.is_dir() {
            for (inner, bytes) in tree_bytes(&path) {
                all.insert(format!("{name}/{inner}"), bytes);
            }
        } else {
            all.insert(name, std::fs::read(&path).unwrap());
        }
    }
    all
}

/// `convert --to A,B,... -o DIR/` writes, from one decode, the files that one run per format
/// writes into DIR: the same names and bytes, for every kind of input (a trace's dumps on the
/// stack-tree path and on the frame-list path of folded stacks and flame graphs, several dumps
/// and one, a trace's Java heap graphs, DDM captures merged, a pprof profile).
#[test]
fn a_list_of_formats_writes_what_one_run_per_format_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let pprof = tmp.path().join("pprof");
    let sample = root().join("examples/sample.pftrace");
    heapconv_ok(&["profile", sample.to_str().unwrap(), "-q", "-o", pprof.to_str().unwrap()], 0);
    let pprof_input = pprof.join(&file_names(&pprof)[0]);
    let ddm = [data("ddm/ddmlib_basic1.alloc"), data("ddm/ddmlib_basic2.alloc")];
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![sample.display().to_string(), "--pid".into(), "4242".into()], "pprof,folded,svg,html"),
        (vec![data("heaps_and_procs.pftrace").display().to_string()], "folded,svg"),
        (
            vec![data("heaps_and_procs.pftrace").display().to_string(), "--dump".into(), "all".into()],
            "svg,json,pprof,folded,html,speedscope",
        ),
        (vec![data("heapgraph/references.pftrace").display().to_string()], "pprof,json,folded"),
        (ddm.iter().map(|p| p.display().to_string()).collect(), "pprof,folded,svg,json"),
        (vec![pprof_input.display().to_string()], "folded,pprof,svg,json"),
    ];
    for (n, (args, list)) in cases.iter().enumerate() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let together = tmp.path().join(format!("{n}-list/"));
        let mut cmd = vec!["convert", "-q"];
        cmd.extend(&args);
        cmd.extend(["--to", list, "-o", together.to_str().unwrap()]);
        heapconv_ok(&cmd, 0);
        let mut separate = std::collections::BTreeMap::new();
        for format in list.split(',') {
            let one = tmp.path().join(format!("{n}-{format}/"));
            let mut cmd = vec!["convert", "-q"];
            cmd.extend(&args);
            cmd.extend(["--to", format, "-o", one.to_str().unwrap()]);
            heapconv_ok(&cmd, 0);
            let got = tree_bytes(&one);
            assert!(!got.is_empty(), "{args:?} --to {format} wrote nothing");
            separate.extend(got);
        }
        let together = tree_bytes(&together);
        let names = |m: &std::collections::BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(names(&together), names(&separate), "{args:?} --to {list}: the same files");
        for (name, bytes) in &separate {
            assert!(together[name] == *bytes, "{args:?} --to {list}: {name} has other bytes");
        }
    }
}

/// A list of formats writes a file per format, so it needs a directory: standard output, a
/// file, a view across dumps and a batch are usage errors (exit 2) that write nothing.
#[test]
fn a_list_of_formats_needs_an_output_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let sample = root().join("examples/sample.pftrace");
    let sample = sample.to_str().unwrap();
    let file = tmp.path().join("out.pb");
    let dir = tmp.path().join("dir/");
    let batch_dir = tmp.path().join("batch/");
    for (args, says) in [
        (vec!["convert", sample, "--to", "pprof,svg"], "give -o an existing directory"),
        (vec!["convert", sample, "--to", "pprof,svg", "-o", "-"], "give -o an existing directory"),
        (vec!["convert", sample, "--to", "folded,svg", "-o", file.to_str().unwrap()], "give -o an existing directory"),
        (
            vec!["convert", sample, "--to", "pprof", "--to", "svg", "-o", file.to_str().unwrap()],
            "--to pprof,svg writes a file per format",
        ),
        (
            vec!["convert", sample, "--to", "pprof,svg", "--view", "peak", "-o", dir.to_str().unwrap()],
            "--view peak writes one format",
        ),
        (
            vec!["convert", sample, "--to", "pprof,svg", "--batch", "-o", batch_dir.to_str().unwrap()],
            "a batch writes one format",
        ),
    ] {
        let o = heapconv_ok(&args, 2);
        assert!(stderr_of(&o).contains(says), "{args:?}: {}", stderr_of(&o));
        assert!(o.stdout.is_empty(), "{args:?} wrote to standard output");
    }
    assert!(!file.exists() && !dir.exists() && !batch_dir.exists(), "nothing written");
    // The same format twice is written once.
    heapconv_ok(&["convert", sample, "-q", "--pid", "4242", "--to", "svg,svg", "-o", dir.to_str().unwrap()], 0);
    assert_eq!(file_names(&dir).len(), 1);
}
