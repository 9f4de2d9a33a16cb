//! Offline symbolization against llvm-symbolizer's answers (`symbols/truth.json`, made by
//! `symbols/make_truth.py` with llvm-symbolizer 14 on the committed binaries) and, when
//! llvm-symbolizer is installed, against llvm-symbolizer run live; and `heapconv symbolize`
//! on traces that reference those binaries (`tests/data/symbolize/`), including ModuleSymbols
//! output read back, the symbolized pprof, and the per-mapping report.

use std::collections::BTreeMap;

use crate::common::*;
use heapconv::symbolize::symbolize_addresses;
use serde_json::Value;

fn truth() -> Value {
    serde_json::from_str(&std::fs::read_to_string(root().join("symbols/truth.json")).unwrap()).unwrap()
}

/// (function, file, line) innermost first, from llvm-symbolizer JSON `Symbol` entries.
fn llvm_lines(sym: &Value) -> Vec<(String, String, u64)> {
    sym.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["FunctionName"].as_str().unwrap().to_owned(),
                s["FileName"].as_str().unwrap().to_owned(),
                s["Line"].as_u64().unwrap(),
            )
        })
        .filter(|l| !(l.0.is_empty() || l.0 == "??") || !l.1.is_empty())
        .collect()
}

#[test]
fn every_truth_address_matches_llvm_symbolizer() {
    let t = truth();
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for (name, b) in t["binaries"].as_object().unwrap() {
        // heapconv reads the file with DWARF: the debug file when there is one.
        let (file, key) = match b["debug_file"].as_str() {
            Some(d) => (root().join("symbols").join(d), "Symbol_debug_file"),
            None => (root().join("symbols").join(b["path"].as_str().unwrap()), "Symbol"),
        };
        let mut addrs = Vec::new();
        let mut want = Vec::new();
        for f in b["functions"].as_array().unwrap() {
            for a in f["addresses"].as_array().unwrap() {
                addrs.push(a["address"].as_u64().unwrap());
                let sym = if a.get(key).is_some() { &a[key] } else { &a["Symbol"] };
                want.push(llvm_lines(sym));
            }
        }
        let got = symbolize_addresses(&file, &addrs);
        for ((addr, want), got) in addrs.iter().zip(&want).zip(&got) {
            let got: Vec<(String, String, u64)> =
                got.iter().map(|l| (l.function.clone(), l.file.clone(), u64::from(l.line))).collect();
            checked += 1;
            if &got != want {
                mismatches.push(format!("{name} {addr:#x}:\n  llvm:     {want:?}\n  heapconv: {got:?}"));
            }
        }
    }
    assert!(checked > 500, "truth.json has the addresses");
    assert!(mismatches.is_empty(), "{} of {checked} addresses differ:\n{}", mismatches.len(), mismatches.join("\n"));
}

type SymLines = Vec<(String, String, u64)>;

fn decode_symbols(bytes: &[u8]) -> BTreeMap<(String, u64), SymLines> {
    use prost::Message;
    // Concatenated Trace messages are one Trace whose packets add up.
    let trace = heapconv::proto::perfetto::Trace::decode(bytes).expect("ModuleSymbols output decodes");
    let mut out = BTreeMap::new();
    for p in trace.packet {
        let ms = p.module_symbols.expect("only module_symbols packets");
        let path = ms.path.unwrap_or_default();
        for a in ms.address_symbols {
            let lines = a
                .lines
                .iter()
                .map(|l| {
                    (
                        l.function_name.clone().unwrap_or_default(),
                        l.source_file_name.clone().unwrap_or_default(),
                        u64::from(l.line_number.unwrap_or(0)),
                    )
                })
                .collect();
            out.insert((path.clone(), a.address.unwrap_or(0)), lines);
        }
    }
    out
}

fn expected_traces() -> serde_json::Map<String, Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(data("symbolize/expected.json")).unwrap()).unwrap();
    v["traces"].as_object().unwrap().clone()
}

fn symbolize(trace: &str, dirs: &[&std::path::Path], extra: &[&str]) -> (Vec<u8>, Value, std::process::Output) {
    symbolize_env(trace, dirs, extra, &[])
}

/// `heapconv symbolize` on a trace of tests/data/symbolize with extra environment variables:
/// the ModuleSymbols bytes, the JSON report and the process output.
fn symbolize_env(
    trace: &str,
    dirs: &[&std::path::Path],
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Vec<u8>, Value, std::process::Output) {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().join("syms");
    let input = data(&format!("symbolize/{trace}.pftrace"));
    let mut args = vec![
        "symbolize".to_owned(),
        input.display().to_string(),
        "-o".into(),
        o.display().to_string(),
        "--json".into(),
    ];
    for d in dirs {
        args.push("--symbol-dir".into());
        args.push(d.display().to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_heapconv"))
        .args(&args)
        .envs(env.iter().copied())
        .output()
        .expect("heapconv runs");
    let report: Value = serde_json::from_slice(&run.stderr).unwrap_or(Value::Null);
    (std::fs::read(&o).unwrap_or_default(), report, run)
}

#[test]
fn traces_symbolize_as_llvm_symbolizer_says() {
    let symbols = root().join("symbols");
    for (name, t) in expected_traces() {
        let (bytes, report, run) = symbolize(&name, &[&symbols], &[]);
        assert_eq!(run.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&run.stderr));
        let got = decode_symbols(&bytes);
        let paths: BTreeMap<u64, String> = t["mappings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["iid"].as_u64().unwrap(), m["path"].as_str().unwrap().to_owned()))
            .collect();
        let mut symbolized = 0;
        for f in t["frames"].as_array().unwrap() {
            let path = &paths[&f["mapping"].as_u64().unwrap()];
            let key = (path.clone(), f["rel_pc"].as_u64().unwrap());
            if f["symbolized"] == true {
                let want_v = if f.get("lines_debug_file").is_some() { &f["lines_debug_file"] } else { &f["lines"] };
                let want: Vec<(String, String, u64)> = want_v
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| {
                        (
                            l["function_name"].as_str().unwrap().to_owned(),
                            l["source_file_name"].as_str().unwrap().to_owned(),
                            l["line_number"].as_u64().unwrap(),
                        )
                    })
                    .collect();
                assert_eq!(got.get(&key), Some(&want), "{name}: {} {:#x} ({})", path, key.1, f["what"]);
                symbolized += 1;
            } else {
                assert!(!got.contains_key(&key), "{name}: {} {:#x} must stay unsymbolized", path, key.1);
            }
        }
        assert!(symbolized > 0, "{name}");
        // The report says why the rest is not symbolized.
        for m in report["mappings"].as_array().unwrap() {
            let outcome = m["outcome"].as_str().unwrap();
            match m["path"].as_str().unwrap() {
                p if p.ends_with("bionic/libc.so") => assert_eq!(outcome, "no_file_found", "{name}"),
                "/data/local/tmp/libplugin.so" => assert_eq!(outcome, "no_build_id", "{name}"),
                p => assert_eq!(outcome, "symbolized", "{name}: {p}"),
            }
        }
    }
}

#[test]
fn module_symbols_are_byte_identical_to_traceconv_symbolize() {
    let dir = data("traceconv/symbolize");
    let out = tempfile::tempdir().unwrap();
    let o = out.path().join("syms");
    heapconv_ok(
        &[
            "symbolize",
            dir.join("symbolize_widget.pftrace").to_str().unwrap(),
            "-q",
            "--symbol-dir",
            dir.join("symbols").to_str().unwrap(),
            "-o",
            o.to_str().unwrap(),
        ],
        0,
    );
    assert_eq!(std::fs::read(&o).unwrap(), std::fs::read(dir.join("symbolize_widget.symbols")).unwrap());
}

#[test]
fn symbols_appended_to_a_trace_are_applied_as_traceconv_does() {
    let dir = data("traceconv/symbolize");
    let tmp = tempfile::tempdir().unwrap();
    let joined = tmp.path().join("symbolized.pftrace");
    let mut bytes = std::fs::read(dir.join("symbolize_widget.pftrace")).unwrap();
    bytes.extend(std::fs::read(dir.join("symbolize_widget.symbols")).unwrap());
    std::fs::write(&joined, &bytes).unwrap();
    let out = tmp.path().join("out");
    heapconv_ok(&["profile", joined.to_str().unwrap(), "--raw", "-q", "-o", out.to_str().unwrap()], 0);
    let ours = read_pprof(&out.join("heap_dump.1.10.libc.malloc.pb"));
    let theirs = read_pprof(&dir.join("symbolized.heap_dump.1.10.libc.malloc.pb"));
    assert_eq!(with_lines(&ours), with_lines(&theirs));
    // Also from standard input, where the symbols cannot be read ahead: they come after the
    // dump, so they do not apply, and heapconv says nothing was lost but symbols.
}

/// Samples with, per location line, (function, system name, file, line).
type LineSample = (Vec<i64>, Vec<(String, String, String, i64)>);

fn with_lines(p: &pp::Profile) -> Vec<LineSample> {
    let s = |i: i64| p.string_table[i as usize].clone();
    let mut v: Vec<_> = p
        .sample
        .iter()
        .map(|smp| {
            let mut lines = Vec::new();
            for lid in &smp.location_id {
                let loc = p.location.iter().find(|l| l.id == *lid).unwrap();
                for l in &loc.line {
                    let f = p.function.iter().find(|f| f.id == l.function_id).unwrap();
                    lines.push((s(f.name), s(f.system_name), s(f.filename), l.line));
                }
            }
            (smp.value.clone(), lines)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn profile_with_symbol_dir_gets_inline_frames_and_files() {
    let input = data("symbolize/sym_basic.pftrace");
    let tmp = tempfile::tempdir().unwrap();
    let o = heapconv_ok(
        &[
            "profile",
            input.to_str().unwrap(),
            "--symbol-dir",
            root().join("symbols").to_str().unwrap(),
            "-o",
            tmp.path().to_str().unwrap(),
        ],
        0,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("symbolized 33 of 39 native frames"), "{err}");
    let name = std::fs::read_dir(tmp.path()).unwrap().next().unwrap().unwrap().path();
    let p = read_pprof(&name);
    let lines = with_lines(&p);
    let all: Vec<&(String, String, String, i64)> = lines.iter().flat_map(|(_, l)| l).collect();
    assert!(all.iter().any(|l| l.0 == "widget_new" && l.2 == "/src/widget.c" && l.3 > 0));
    assert!(p.location.iter().any(|l| l.line.len() >= 3), "inline chains become several lines of one location");
    // Mappings fully symbolized say so to pprof.
    assert!(p.mapping.iter().any(|m| m.has_inline_frames && m.has_line_numbers));
    // The folded output expands inline frames into separate frames, outermost first.
    let folded = String::from_utf8(
        heapconv_ok(
            &[
                "convert",
                input.to_str().unwrap(),
                "--to",
                "folded",
                "--symbol-dir",
                root().join("symbols").to_str().unwrap(),
                "-q",
            ],
            0,
        )
        .stdout,
    )
    .unwrap();
    assert!(folded.lines().any(|l| l.contains("app::Session::run();") && l.contains("widget_new")), "{folded}");
}

#[test]
fn coverage_gate_fails_with_its_own_exit_code() {
    let input = data("symbolize/sym_basic.pftrace");
    let tmp = tempfile::tempdir().unwrap();
    let dir = root().join("symbols");
    let args = |pct: &str| {
        vec![
            "profile".to_owned(),
            input.display().to_string(),
            "-o".into(),
            tmp.path().display().to_string(),
            "--symbol-dir".into(),
            dir.display().to_string(),
            "--min-symbolized".into(),
            pct.into(),
        ]
    };
    let run = |pct: &str| {
        let a = args(pct);
        heapconv(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>())
    };
    let o = run("90");
    assert_eq!(o.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&o.stderr).contains("84.6% is below --min-symbolized 90%"));
    assert_eq!(run("80").status.code(), Some(0));
}

#[test]
fn wrong_build_ids_are_rejected_and_reported() {
    // A directory holding a libwidget.so whose build id is not the one the trace names.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(root().join("symbols/libwidget.so"), tmp.path().join("libwidget.so")).unwrap();
    let (bytes, report, run) = symbolize("sym_mismatch", &[tmp.path()], &[]);
    assert_eq!(run.status.code(), Some(0));
    assert!(decode_symbols(&bytes).is_empty(), "nothing symbolized from the wrong build");
    let m = &report["mappings"][0];
    assert_eq!(m["outcome"], "build_id_mismatch");
    assert!(m["mismatched"][0].as_str().unwrap().ends_with("libwidget.so"));
    // --ignore-build-id uses it anyway (and warns).
    let (bytes, _, run) = symbolize("sym_mismatch", &[tmp.path()], &["--ignore-build-id"]);
    assert!(String::from_utf8_lossy(&run.stderr).contains("--ignore-build-id"));
    assert!(!decode_symbols(&bytes).is_empty());
}

#[test]
fn debuglink_crc_is_checked_and_mirrors_are_found() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(root().join("symbols/libgadget.so"), tmp.path().join("libgadget.so")).unwrap();
    std::fs::create_dir(tmp.path().join(".debug")).unwrap();
    // A file with the debuglink's name but other content: its CRC differs, so it is rejected.
    std::fs::copy(root().join("symbols/libwidget.so"), tmp.path().join(".debug/libgadget.so.debug")).unwrap();
    let (_, report, _) = symbolize("sym_basic", &[tmp.path()], &[]);
    let g = report["mappings"].as_array().unwrap().iter().find(|m| m["path"] == "/system/lib64/libgadget.so").unwrap();
    assert_ne!(g["outcome"], "symbolized");
    assert!(
        g["mismatched"].as_array().unwrap().iter().any(|p| p.as_str().unwrap().ends_with(".debug/libgadget.so.debug"))
    );

    // The real debug file, only under a /usr/lib/debug mirror of the device path.
    let root2 = tempfile::tempdir().unwrap();
    let mirror = root2.path().join("usr/lib/debug/system/lib64");
    std::fs::create_dir_all(&mirror).unwrap();
    std::fs::copy(root().join("symbols/.debug/libgadget.so.debug"), mirror.join("libgadget.so.debug")).unwrap();
    let (_, report, _) = symbolize("sym_basic", &[root2.path()], &[]);
    let g = report["mappings"].as_array().unwrap().iter().find(|m| m["path"] == "/system/lib64/libgadget.so").unwrap();
    assert_eq!(g["outcome"], "symbolized");
    assert_eq!(g["symbolized"], g["frames"]);
}

#[test]
fn symlink_loops_end() {
    // symbols/loop/self -> . : indexing symbols/ terminates and says it skipped the loop.
    assert!(root().join("symbols/loop/self").is_symlink());
    let (_, report, run) = symbolize("sym_basic", &[&root().join("symbols")], &[]);
    assert_eq!(run.status.code(), Some(0));
    assert!(report["problems"].as_array().unwrap().iter().any(|p| p.as_str().unwrap().contains("already visited")));
}

#[test]
fn live_llvm_symbolizer_agrees() {
    // With llvm-symbolizer installed (CI installs Debian's llvm), compare live, not only with
    // the recorded truth.
    let Some(bin) = llvm_symbolizer() else { return };
    let t = truth();
    let mut n = 0;
    for (name, b) in t["binaries"].as_object().unwrap() {
        let file = match b["debug_file"].as_str() {
            Some(d) => root().join("symbols").join(d),
            None => root().join("symbols").join(b["path"].as_str().unwrap()),
        };
        let addrs: Vec<u64> = b["functions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| f["addresses"].as_array().unwrap().iter().map(|a| a["address"].as_u64().unwrap()))
            .collect();
        for (addr, (want, got)) in addrs.iter().zip(agree_with_llvm(&bin, &file, &addrs)) {
            assert_eq!(got, want, "{name} {addr:#x}");
            n += 1;
        }
    }
    assert!(n > 500);
}

/// Per address, llvm-symbolizer's frames and heapconv's, both as (function, file, line)
/// innermost first.
type Frames = Vec<(String, String, u64)>;
fn agree_with_llvm(bin: &str, file: &std::path::Path, addrs: &[u64]) -> Vec<(Frames, Frames)> {
    let input: String = addrs.iter().map(|a| format!("{a:#x}\n")).collect();
    let mut child = std::process::Command::new(bin)
        .args(["--inlines", "--output-style=JSON"])
        .arg(format!("--obj={}", file.display()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Written from a thread: llvm-symbolizer answers as it reads, and a full pipe each way
    // would block both.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(input.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), addrs.len(), "{}: one JSON line per address", file.display());
    let ours = symbolize_addresses(file, addrs);
    text.lines()
        .zip(ours)
        .map(|(line, got)| {
            let v: Value = serde_json::from_str(line).unwrap();
            let got = got.iter().map(|l| (l.function.clone(), l.file.clone(), u64::from(l.line))).collect();
            (llvm_lines(&v["Symbol"]), got)
        })
        .collect()
}

/// The llvm-symbolizer binary, or None (a failure when oracles are required).
fn llvm_symbolizer() -> Option<String> {
    let which = std::process::Command::new("sh")
        .args(["-c", "command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer 2>/dev/null | head -1"])
        .output()
        .unwrap();
    let bin = String::from_utf8_lossy(&which.stdout).lines().next().unwrap_or("").trim().to_owned();
    if bin.is_empty() {
        if std::env::var("HEAPCONV_REQUIRE_ORACLES").as_deref() == Ok("1") {
            panic!("llvm-symbolizer is required (HEAPCONV_REQUIRE_ORACLES=1) but not found");
        }
        eprintln!("SKIPPED live check: llvm-symbolizer not found (install Debian llvm; .ci/run does)");
        return None;
    }
    Some(bin)
}

#[test]
fn live_llvm_symbolizer_agrees_on_every_address() {
    // Not only addresses inside functions: every other byte of every loaded section of every
    // committed binary (code without DWARF, padding between functions, .rodata, .eh_frame,
    // .data, .bss), the 64 bytes past each section, and addresses far past the end. A trace's
    // rel_pc can land anywhere, and traceconv names such frames as llvm-symbolizer does: by
    // DWARF, else by the symbol table, where data symbols end the function before them and a
    // local symbol's file comes from the STT_FILE symbol before it.
    use object::{Object, ObjectSection};
    let Some(bin) = llvm_symbolizer() else { return };
    let files = [
        "libwidget.so",
        "liboffset.so",
        "app-pie",
        "app-nopie",
        "mismatch/libwidget.so",
        ".debug/libgadget.so.debug",
        "buildid-tree/.build-id/00/146fe13acbe0a85809cbd1ffab79cc832cb1a8.debug",
    ];
    let mut total = 0;
    let mut by_symbol_table = 0;
    for name in files {
        let file = root().join("symbols").join(name);
        let bytes = std::fs::read(&file).unwrap();
        let obj = object::File::parse(bytes.as_slice()).unwrap();
        let mut addrs = std::collections::BTreeSet::new();
        let mut hi = 0;
        for sec in obj.sections() {
            if sec.address() == 0 || sec.size() == 0 {
                continue;
            }
            hi = hi.max(sec.address() + sec.size());
            addrs.extend((sec.address()..sec.address() + sec.size() + 64).step_by(2));
        }
        addrs.extend([hi + 0x1000, hi + 0x10_0000, 0xffff_ffff]);
        let addrs: Vec<u64> = addrs.into_iter().collect();
        for (addr, (want, got)) in addrs.iter().zip(agree_with_llvm(&bin, &file, &addrs)) {
            assert_eq!(got, want, "{name} {addr:#x}");
            total += 1;
            by_symbol_table += usize::from(want.len() == 1 && want[0].2 == 0 && !want[0].0.is_empty());
        }
    }
    eprintln!("{total} addresses agree, {by_symbol_table} of them named by the symbol table alone");
    // 22,487 addresses in the seven files (LLVM 14); thousands lie outside any DWARF function.
    assert!(total > 20_000, "{total}");
    assert!(by_symbol_table > 1_000, "{by_symbol_table}");
}

#[test]
fn google_schema_reads_our_module_symbols() {
    let Some((py, tool)) = perfetto_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("syms.pftrace");
    heapconv_ok(
        &[
            "symbolize",
            data("symbolize/sym_basic.pftrace").to_str().unwrap(),
            "-q",
            "--symbol-dir",
            root().join("symbols").to_str().unwrap(),
            "-o",
            o.to_str().unwrap(),
        ],
        0,
    );
    let out = std::process::Command::new(py).arg(tool).arg("--decode").arg(&o).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("module_symbols {").count(), 4, "one per symbolized mapping:\n{text}");
    assert!(text.contains("path: \"/data/app/com.example-1/lib/arm64/libwidget.so\""));
    assert!(text.contains("function_name: \"widget_new\""));
    assert!(text.contains("source_file_name: \"/src/widget.c\""));
}

#[test]
fn report_attributes_bytes_to_mappings() {
    // Expected from the trace's own description: bytes per mapping = unreleased bytes of the
    // callstacks through it; symbolized bytes = those whose every frame in a mapping with a
    // build id is symbolized (expected.json says which frames are).
    let t = &expected_traces()["sym_basic"];
    let frames: BTreeMap<u64, (u64, bool)> = t["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["iid"].as_u64().unwrap(), (f["mapping"].as_u64().unwrap(), f["symbolized"] == true)))
        .collect();
    let has_id: BTreeMap<u64, bool> = t["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["iid"].as_u64().unwrap(), !m["build_id"].as_str().unwrap().is_empty()))
        .collect();
    let path: BTreeMap<u64, String> = t["mappings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["iid"].as_u64().unwrap(), m["path"].as_str().unwrap().to_owned()))
        .collect();
    let mut total = 0i64;
    let mut symbolized = 0i64;
    let mut per: BTreeMap<String, i64> = BTreeMap::new();
    let mut by_stack: BTreeMap<Vec<u64>, i64> = BTreeMap::new();
    for c in t["callstacks"].as_array().unwrap() {
        let v = c["self_allocated"].as_i64().unwrap() - c["self_freed"].as_i64().unwrap();
        let ids: Vec<u64> = c["frame_ids_root_first"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        *by_stack.entry(ids).or_default() += v;
    }
    for (ids, v) in by_stack {
        if v == 0 {
            continue;
        }
        total += v;
        let mut maps: Vec<u64> = ids.iter().map(|i| frames[i].0).collect();
        maps.sort();
        maps.dedup();
        for m in maps {
            *per.entry(path[&m].clone()).or_default() += v;
        }
        if ids.iter().all(|i| frames[i].1 || !has_id[&frames[i].0]) {
            symbolized += v;
        }
    }
    let (_, report, _) = symbolize("sym_basic", &[&root().join("symbols")], &[]);
    assert_eq!(report["bytes"].as_i64(), Some(total));
    assert_eq!(report["bytes_symbolized"].as_i64(), Some(symbolized));
    for m in report["mappings"].as_array().unwrap() {
        assert_eq!(m["bytes"].as_i64(), per.get(m["path"].as_str().unwrap()).copied(), "{}", m["path"]);
    }
}

#[test]
fn perfetto_binary_path_and_json_report() {
    let input = data("symbolize/sym_basic.pftrace");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_heapconv"))
        .args(["convert", input.to_str().unwrap(), "--to", "json"])
        .env("PERFETTO_BINARY_PATH", format!("/nonexistent:{}", root().join("symbols").display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["symbolization"]["frames_symbolized"], 33);
    assert_eq!(v["symbolization"]["frames"], 39);
    // The top functions are now real names from DWARF.
    let names: Vec<&str> =
        v["profiles"][0]["top_functions"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"main"), "{names:?}");

    // inspect shows ModuleSymbols packets in a trace and the frames they name.
    let dir = data("traceconv/symbolize");
    let tmp = tempfile::tempdir().unwrap();
    let joined = tmp.path().join("t.pftrace");
    let mut bytes = std::fs::read(dir.join("symbolize_widget.pftrace")).unwrap();
    bytes.extend(std::fs::read(dir.join("symbolize_widget.symbols")).unwrap());
    std::fs::write(&joined, bytes).unwrap();
    let text = String::from_utf8(heapconv_ok(&["inspect", joined.to_str().unwrap()], 0).stdout).unwrap();
    assert!(text.contains("symbols in the trace: 1 ModuleSymbols packet(s), applied to 5 frame(s)"), "{text}");
}

/// `PERFETTO_SYMBOLIZER_MODE=find`: no build-id index, only the paths traceconv's find mode
/// tries (`tests/data/symbolize/expected.json` names the file each mapping must resolve to).
#[test]
fn find_mode_paths() {
    let symbols = root().join("symbols");
    let tree = root().join("symbols/buildid-tree");
    for (name, t) in expected_traces() {
        for (dirs, field) in [
            (vec![symbols.as_path(), tree.as_path()], "find_symbols_and_buildid_tree"),
            (vec![symbols.as_path()], "find_symbols_only"),
        ] {
            let (_, report, run) = symbolize_env(&name, &dirs, &[], &[("PERFETTO_SYMBOLIZER_MODE", "find")]);
            assert_eq!(run.status.code(), Some(0), "{name}");
            for m in t["mappings"].as_array().unwrap() {
                let path = m["path"].as_str().unwrap();
                let Some(r) = report["mappings"].as_array().unwrap().iter().find(|r| r["path"] == path) else {
                    continue;
                };
                match m[field].as_str() {
                    Some(want) => {
                        let used = r["file"].as_str().unwrap_or("");
                        // The binary found by path; its DWARF may come from its debuglink.
                        let debug = want.replace("symbols/libgadget.so", "symbols/.debug/libgadget.so.debug");
                        assert!(
                            used.ends_with(&want.replacen("symbols/", "", 1))
                                || used.ends_with(&debug.replacen("symbols/", "", 1)),
                            "{name} {field}: {path} used {used:?}, want {want}"
                        );
                        assert_eq!(r["outcome"], "symbolized", "{name} {field}: {path}");
                    }
                    None => assert_ne!(r["outcome"], "symbolized", "{name} {field}: {path} must not be found by path"),
                }
            }
        }
    }
}

/// The frames-only scan `symbolize` starts its lookups from (callstacks and samples skipped)
/// finds exactly the frames in mappings that the decoder finds: same mapping (path, build id,
/// offsets, load bias) and `rel_pc`, on every trace of the symbolization fixtures and others.
#[test]
fn frames_only_scan_finds_the_decoders_frames() {
    use heapconv::decode::Input;
    use heapconv::decode::perfetto::{DecodeOptions, decode_heapprofd_frames, scan_frames};
    use heapconv::model::Tables;
    type Key = (String, Vec<u8>, u64, u64, u64, u64);
    fn keys(t: &Tables) -> std::collections::BTreeSet<Key> {
        t.frames()
            .iter()
            .filter_map(|f| {
                let m = t.mapping(f.mapping?);
                Some((
                    t.strings.get(m.path).to_owned(),
                    m.build_id.to_vec(),
                    m.exact_offset,
                    m.start_offset,
                    m.load_bias,
                    f.rel_pc,
                ))
            })
            .collect()
    }
    let mut traces: Vec<_> = std::fs::read_dir(data("symbolize")).unwrap().map(|e| e.unwrap().path()).collect();
    traces.extend(std::fs::read_dir(data("")).unwrap().map(|e| e.unwrap().path()));
    traces.retain(|p| p.extension().is_some_and(|e| e == "pftrace" || e == "gz"));
    traces.sort();
    let opts = DecodeOptions::default();
    let mut checked = 0;
    for t in &traces {
        let mut inp = Input::open(t, 1 << 30).unwrap();
        let scan = scan_frames(&mut inp, &opts);
        let mut inp = Input::open(t, 1 << 30).unwrap();
        let Ok((report, tables, _)) =
            decode_heapprofd_frames(&mut inp, &opts, &mut |_, _| {}, &mut |_, _| {}, &mut |_| Ok(()))
        else {
            continue;
        };
        // A damaged trace stops both readers, each at its own point, and the scan does not
        // follow lost packets or invalid incremental state as the decoder does (it only hints).
        if report.damage.is_some() || !report.problems.is_empty() {
            continue;
        }
        assert!(scan.complete(), "{}: {:?}", t.display(), scan.stopped);
        assert_eq!(keys(&scan.tables), keys(&tables), "{}", t.display());
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} traces checked of {}", traces.len());
}

/// Frames prefetched one batch at a time (each later batch going to the file's running lookup
/// thread through its channel) symbolize exactly as without any prefetch.
#[test]
fn prefetch_in_many_batches_changes_no_answer() {
    use heapconv::decode::Input;
    use heapconv::decode::perfetto::{DecodeOptions, scan_frames};
    use heapconv::symbolize::{SymbolizeOptions, Symbolizer};
    let opts = SymbolizeOptions { symbol_dirs: vec![root().join("symbols")], ..Default::default() };
    for trace in ["sym_basic", "sym_load_bias", "sym_apk_nopie"] {
        let path = data(&format!("symbolize/{trace}.pftrace"));
        let scan = scan_frames(&mut Input::open(&path, 1 << 30).unwrap(), &DecodeOptions::default());
        let n = scan.tables.frames().len();
        assert!(n > 2, "{trace}");
        let (mut plain_t, mut batched_t) = (scan.tables.clone(), scan.tables.clone());
        let mut plain = Symbolizer::new(opts.clone());
        plain.symbolize(&mut plain_t, 0..n);
        let mut batched = Symbolizer::new(opts.clone());
        for i in 0..n {
            batched.prefetch(&batched_t, i..i + 1);
        }
        batched.symbolize(&mut batched_t, 0..n);
        assert_eq!(plain_t.frames(), batched_t.frames(), "{trace}");
        assert!(plain_t.frames().iter().any(|f| !f.lines.is_empty()), "{trace}");
        let (a, b) = (plain.report(&plain_t), batched.report(&batched_t));
        assert_eq!((a.frames, a.frames_symbolized), (b.frames, b.frames_symbolized), "{trace}");
    }
}
