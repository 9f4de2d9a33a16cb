//! Trace processor's and R8 retrace's rules for heapprofd Java frames, end to end through the
//! CLI: traces written here as text protos (encoded at test time with the Perfetto schema),
//! maps written here; the cases follow Perfetto's deobfuscation diff tests (package of the
//! frame's process, inline chains chosen by a symbolized line, R8 retrace compatibility).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// Encodes `text` (a TracePacket stream as text proto) into `dir/name.pftrace`; `None` (the
/// test is skipped, unless oracles are required) without the Perfetto schema.
fn encode(dir: &Path, name: &str, text: &str) -> Option<PathBuf> {
    let (py, tool) = perfetto_python()?;
    let src = dir.join(format!("{name}.textproto"));
    std::fs::write(&src, text).unwrap();
    let out = dir.join(format!("{name}.pftrace"));
    let st = Command::new(py).arg(tool).arg(&src).arg(&out).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    Some(out)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Folded stacks of `trace` (`args` added), lines sorted.
fn folded(trace: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["convert", trace.to_str().unwrap(), "--to", "folded", "-o", "-"];
    all.extend_from_slice(args);
    let out = heapconv_ok(&all, 0);
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
    v.sort();
    v
}

/// `stack value` with every frame annotated as traceconv annotates frames of an `.apk` or
/// `.jar` (`[interp]`).
fn interp(line: &str) -> String {
    let (stack, value) = line.rsplit_once(' ').unwrap();
    let frames: Vec<String> = stack.split(';').map(|f| format!("{f} [interp]")).collect();
    format!("{} {value}", frames.join(";"))
}

/// `trace` with the `DeobfuscationMapping` packets `heapconv deobfuscate` writes for `specs`
/// appended (`cat trace mapping`).
fn with_packets(dir: &Path, trace: &Path, specs: &[&str]) -> PathBuf {
    let packets = dir.join("packets.pb");
    let mut args = vec!["deobfuscate", trace.to_str().unwrap()];
    for s in specs {
        args.extend(["--proguard-map", s]);
    }
    args.extend(["-o", packets.to_str().unwrap()]);
    heapconv_ok(&args, 0);
    let mut bytes = std::fs::read(trace).unwrap();
    bytes.extend(std::fs::read(&packets).unwrap());
    let out = dir.join("with-packets.pftrace");
    std::fs::write(&out, bytes).unwrap();
    out
}

/// Two app processes of different packages (uid 10071 and, for user 10, 1010072), each
/// profiled on its own sequence; their Java frames sit in mappings whose paths name no package
/// (`/system/priv-app/…`, `/system/framework/…`), and the same obfuscated names mean different
/// classes in each app. `zz.c` in the shared jar is one frame for both; the first allocation
/// that holds it is process 302's (301's sample with it allocated nothing).
const TWO_APPS: &str = r#"
packet { timestamp: 1 clock_snapshot { clocks { clock_id: 6 timestamp: 0 } clocks { clock_id: 4 timestamp: 0 } } }
packet { timestamp: 2 process_tree {
  processes { pid: 301 ppid: 1 uid: 10071 cmdline: "org.alpha" }
  processes { pid: 302 ppid: 1 uid: 1010072 cmdline: "org.beta" } } }
packet { timestamp: 3 packages_list {
  packages { name: "org.alpha" uid: 10071 } packages { name: "org.beta" uid: 10072 } } }
packet {
  trusted_packet_sequence_id: 7 timestamp: 10 incremental_state_cleared: true
  interned_data {
    function_names { iid: 1 str: "qx.a" } function_names { iid: 2 str: "qy.b" } function_names { iid: 3 str: "zz.c" }
    mapping_paths { iid: 1 str: "system" } mapping_paths { iid: 2 str: "priv-app" } mapping_paths { iid: 3 str: "Alpha" }
    mapping_paths { iid: 4 str: "Alpha.apk" } mapping_paths { iid: 5 str: "framework" } mapping_paths { iid: 6 str: "shared.jar" }
    build_ids { iid: 1 str: "" }
    mappings { iid: 11 build_id: 1 start: 4096 end: 8192 path_string_ids: 1 path_string_ids: 2 path_string_ids: 3 path_string_ids: 4 }
    mappings { iid: 12 build_id: 1 start: 65536 end: 131072 path_string_ids: 1 path_string_ids: 5 path_string_ids: 6 }
    frames { iid: 21 function_name_id: 1 mapping_id: 11 rel_pc: 16 }
    frames { iid: 22 function_name_id: 2 mapping_id: 11 rel_pc: 32 }
    frames { iid: 23 function_name_id: 3 mapping_id: 12 rel_pc: 48 }
    callstacks { iid: 31 frame_ids: 23 frame_ids: 21 frame_ids: 22 }
    callstacks { iid: 32 frame_ids: 21 frame_ids: 22 }
  }
  profile_packet { index: 0 process_dumps { pid: 301 timestamp: 10 heap_name: "libc.malloc"
    samples { callstack_id: 31 self_allocated: 0 alloc_count: 0 }
    samples { callstack_id: 32 self_allocated: 100 alloc_count: 1 } } }
}
packet {
  trusted_packet_sequence_id: 8 timestamp: 11 incremental_state_cleared: true
  interned_data {
    function_names { iid: 1 str: "qx.a" } function_names { iid: 2 str: "qy.b" } function_names { iid: 3 str: "zz.c" }
    mapping_paths { iid: 1 str: "system" } mapping_paths { iid: 2 str: "priv-app" } mapping_paths { iid: 3 str: "Beta" }
    mapping_paths { iid: 4 str: "Beta.apk" } mapping_paths { iid: 5 str: "framework" } mapping_paths { iid: 6 str: "shared.jar" }
    build_ids { iid: 1 str: "" }
    mappings { iid: 11 build_id: 1 start: 4096 end: 8192 path_string_ids: 1 path_string_ids: 2 path_string_ids: 3 path_string_ids: 4 }
    mappings { iid: 12 build_id: 1 start: 65536 end: 131072 path_string_ids: 1 path_string_ids: 5 path_string_ids: 6 }
    frames { iid: 21 function_name_id: 1 mapping_id: 11 rel_pc: 16 }
    frames { iid: 22 function_name_id: 2 mapping_id: 11 rel_pc: 32 }
    frames { iid: 23 function_name_id: 3 mapping_id: 12 rel_pc: 48 }
    callstacks { iid: 31 frame_ids: 23 frame_ids: 21 frame_ids: 22 }
  }
  profile_packet { index: 0 process_dumps { pid: 302 timestamp: 11 heap_name: "libc.malloc"
    samples { callstack_id: 31 self_allocated: 200 alloc_count: 2 } } }
}
"#;

const ALPHA_MAP: &str = "org.alpha.Cart -> qx:\n    void add() -> a\norg.alpha.Till -> qy:\n    void ring() -> b\n\
org.alpha.Shared -> zz:\n    void shared() -> c\n";
const BETA_MAP: &str = "org.beta.Feed -> qx:\n    void load() -> a\norg.beta.Post -> qy:\n    void send() -> b\n\
org.beta.Common -> zz:\n    void common() -> c\n";

/// Trace processor's `GuessPackages`: a frame whose mapping names no package takes the package
/// of the process of the first allocation that holds it, so two apps in one trace each get
/// their own map (before: both stayed obfuscated); the same through `DeobfuscationMapping`
/// packets, and in pprof.
#[test]
fn frames_take_the_package_of_their_process() {
    let dir = tempfile::tempdir().unwrap();
    let Some(trace) = encode(dir.path(), "two-apps", TWO_APPS) else { return };
    let alpha = format!("org.alpha={}", write(dir.path(), "alpha.map", ALPHA_MAP));
    let beta = format!("org.beta={}", write(dir.path(), "beta.map", BETA_MAP));
    let maps = ["--proguard-map", &alpha, "--proguard-map", &beta];
    let pid = |p: &str, t: &Path| {
        let mut a = vec!["--pid", p];
        a.extend_from_slice(&maps);
        folded(t, &a)
    };
    let alpha_stack = [interp("org.alpha.Cart.add;org.alpha.Till.ring 100")];
    let beta_stack = [interp("org.beta.Common.common;org.beta.Feed.load;org.beta.Post.send 200")];
    assert_eq!(pid("301", &trace), alpha_stack);
    assert_eq!(pid("302", &trace), beta_stack);
    // Without maps: the obfuscated names.
    assert_eq!(folded(&trace, &["--pid", "302"]), [interp("zz.c;qx.a;qy.b 200")]);
    // The same maps as packets in the trace.
    let cat = with_packets(dir.path(), &trace, &[&alpha, &beta]);
    assert_eq!(folded(&cat, &["--pid", "301"]), alpha_stack);
    assert_eq!(folded(&cat, &["--pid", "302"]), beta_stack);
    // pprof: the functions are the process's own.
    let pb = dir.path().join("301.pb.gz");
    let mut args = vec!["convert", trace.to_str().unwrap(), "--pid", "301", "-o", pb.to_str().unwrap()];
    args.extend_from_slice(&maps);
    heapconv_ok(&args, 0);
    let p = read_pprof(&pb);
    assert!(p.string_table.iter().any(|s| s == "org.alpha.Cart.add [interp]"), "{:?}", p.string_table);
    assert!(!p.string_table.iter().any(|s| s.starts_with("org.beta.")), "{:?}", p.string_table);
}

/// One obfuscated method (`r.a`) whose lines are three inline depths; heapprofd frames of it
/// at three addresses, symbolized by ModuleSymbols at obfuscated lines 1, 2 and 9 (9 in no
/// range), and one address without symbols. R8 retrace compatibility cases (Perfetto's
/// r8_retrace_compat) as more frames of the same app: horizontal and vertical class merging,
/// an overload by return type, a removed argument.
const INLINE: &str = r#"
packet { timestamp: 1 clock_snapshot { clocks { clock_id: 6 timestamp: 0 } clocks { clock_id: 4 timestamp: 0 } } }
packet { timestamp: 2 process_tree { processes { pid: 100 ppid: 1 uid: 10001 cmdline: "com.acme.app" } } }
packet { timestamp: 3 packages_list { packages { name: "com.acme.app" uid: 10001 } } }
packet {
  trusted_packet_sequence_id: 1 timestamp: 10 incremental_state_cleared: true
  interned_data {
    function_names { iid: 1 str: "r.a" } function_names { iid: 2 str: "h.a" } function_names { iid: 3 str: "h.b" }
    function_names { iid: 4 str: "h.c" } function_names { iid: 5 str: "s.a" } function_names { iid: 6 str: "s.b" }
    function_names { iid: 7 str: "v.a" } function_names { iid: 8 str: "v.b" } function_names { iid: 9 str: "m.a" }
    mapping_paths { iid: 1 str: "data" } mapping_paths { iid: 2 str: "app" } mapping_paths { iid: 3 str: "com.acme.app-Q1w2==" }
    mapping_paths { iid: 4 str: "base.apk" }
    build_ids { iid: 1 str: "acme-build" }
    mappings { iid: 11 build_id: 1 start: 4096 end: 1048576 path_string_ids: 1 path_string_ids: 2 path_string_ids: 3 path_string_ids: 4 }
    frames { iid: 21 function_name_id: 1 mapping_id: 11 rel_pc: 4096 }
    frames { iid: 22 function_name_id: 1 mapping_id: 11 rel_pc: 8192 }
    frames { iid: 23 function_name_id: 1 mapping_id: 11 rel_pc: 12288 }
    frames { iid: 24 function_name_id: 1 mapping_id: 11 rel_pc: 16384 }
    frames { iid: 25 function_name_id: 2 mapping_id: 11 rel_pc: 20480 }
    frames { iid: 26 function_name_id: 3 mapping_id: 11 rel_pc: 20484 }
    frames { iid: 27 function_name_id: 4 mapping_id: 11 rel_pc: 20488 }
    frames { iid: 28 function_name_id: 5 mapping_id: 11 rel_pc: 20492 }
    frames { iid: 29 function_name_id: 6 mapping_id: 11 rel_pc: 20496 }
    frames { iid: 30 function_name_id: 7 mapping_id: 11 rel_pc: 20500 }
    frames { iid: 31 function_name_id: 8 mapping_id: 11 rel_pc: 20504 }
    frames { iid: 32 function_name_id: 9 mapping_id: 11 rel_pc: 20508 }
    callstacks { iid: 41 frame_ids: 21 } callstacks { iid: 42 frame_ids: 22 } callstacks { iid: 43 frame_ids: 23 }
    callstacks { iid: 44 frame_ids: 24 } callstacks { iid: 45 frame_ids: 25 } callstacks { iid: 46 frame_ids: 26 }
    callstacks { iid: 47 frame_ids: 27 } callstacks { iid: 48 frame_ids: 28 } callstacks { iid: 49 frame_ids: 29 }
    callstacks { iid: 50 frame_ids: 30 } callstacks { iid: 51 frame_ids: 31 } callstacks { iid: 52 frame_ids: 32 }
  }
  profile_packet { index: 0 process_dumps { pid: 100 timestamp: 10 heap_name: "libc.malloc"
    samples { callstack_id: 41 self_allocated: 1 alloc_count: 1 } samples { callstack_id: 42 self_allocated: 2 alloc_count: 1 }
    samples { callstack_id: 43 self_allocated: 4 alloc_count: 1 } samples { callstack_id: 44 self_allocated: 8 alloc_count: 1 }
    samples { callstack_id: 45 self_allocated: 16 alloc_count: 1 } samples { callstack_id: 46 self_allocated: 32 alloc_count: 1 }
    samples { callstack_id: 47 self_allocated: 64 alloc_count: 1 } samples { callstack_id: 48 self_allocated: 128 alloc_count: 1 }
    samples { callstack_id: 49 self_allocated: 256 alloc_count: 1 } samples { callstack_id: 50 self_allocated: 512 alloc_count: 1 }
    samples { callstack_id: 51 self_allocated: 1024 alloc_count: 1 } samples { callstack_id: 52 self_allocated: 2048 alloc_count: 1 } } }
}
packet { module_symbols { path: "/data/app/com.acme.app-Q1w2==/base.apk" build_id: "acme-build"
  address_symbols { address: 4096 lines { function_name: "r.a" source_file_name: "SourceFile" line_number: 1 } }
  address_symbols { address: 8192 lines { function_name: "r.a" source_file_name: "SourceFile" line_number: 2 } }
  address_symbols { address: 12288 lines { function_name: "r.a" source_file_name: "SourceFile" line_number: 9 } } } }
"#;

const INLINE_MAP: &str = "# compiler: R8\n\
com.acme.Render -> r:\n# {\"id\":\"sourceFile\",\"fileName\":\"Render.java\"}\n\
\x20   1:1:void layout():54:54 -> a\n    1:1:void draw():50 -> a\n\
\x20   2:2:void measure():59:59 -> a\n    2:2:void layout():55 -> a\n    2:2:void draw():50 -> a\n\
com.acme.A -> h:\n    1:1:void com.acme.B.baz():51:51 -> a\n    2:2:void baz():51:51 -> a\n\
\x20   1:8:void com.acme.B.bar():46:46 -> b\n    1:8:void foo():46:46 -> c\n\
com.acme.Supplier -> s:\n    1:1:java.lang.Object get():10:10 -> a\n    1:1:java.lang.String get():10:10 -> b\n\
com.acme.Base -> R8$$REMOVED$$CLASS$$0:\n\
com.acme.Leaf -> v:\n    1:3:void bar():47:47 -> a\n    1:8:void com.acme.Base.bar():52:52 -> b\n\
com.acme.Main -> m:\n    1:1:void test(java.lang.Object):42:42 -> a\n\
\x20     # {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"()V\"}\n";

/// A frame with a symbolized line takes the inline chain of the range holding it, innermost
/// first with original lines and files, as retrace prints them (Perfetto's inline_positions
/// case); a line in no range, or no line, gives the candidates as retrace shows them; the
/// R8 retrace compatibility cases name their frames as trace processor does. Map files and
/// `DeobfuscationMapping` packets agree; pprof carries the chain as lines.
#[test]
fn symbolized_lines_choose_the_inline_chain() {
    let dir = tempfile::tempdir().unwrap();
    let Some(trace) = encode(dir.path(), "inline", INLINE) else { return };
    let map = format!("com.acme.app={}", write(dir.path(), "inline.map", INLINE_MAP));
    let want: Vec<String> = [
        "com.acme.A.baz | com.acme.B.baz 16",
        "com.acme.A.foo 64",
        "com.acme.B.bar 32",
        "com.acme.Base.bar 1024",
        "com.acme.Leaf.bar 512",
        "com.acme.Main.test 2048",
        // Line 9 (no range holds it) and no line: the outermost method of every range.
        "com.acme.Render.draw 12",
        "com.acme.Render.draw;com.acme.Render.layout 1",
        "com.acme.Render.draw;com.acme.Render.layout;com.acme.Render.measure 2",
        // An overload by return type: both obfuscated names are one original method.
        "com.acme.Supplier.get 384",
    ]
    .into_iter()
    .map(interp)
    .collect();
    let got = folded(&trace, &["--proguard-map", &map]);
    assert_eq!(got, want);
    let cat = with_packets(dir.path(), &trace, &[&map]);
    assert_eq!(folded(&cat, &[]), want);
    // pprof: the chain as one location's lines, innermost first, with files and lines.
    let pb = dir.path().join("p.pb.gz");
    heapconv_ok(&["convert", trace.to_str().unwrap(), "-o", pb.to_str().unwrap(), "--proguard-map", &map], 0);
    let p = read_pprof(&pb);
    let s = |i: i64| p.string_table[i as usize].clone();
    let chains: Vec<Vec<(String, String, i64)>> = p
        .location
        .iter()
        .filter(|l| l.line.len() > 1)
        .map(|l| {
            l.line
                .iter()
                .map(|ln| {
                    let f = p.function.iter().find(|f| f.id == ln.function_id).unwrap();
                    (s(f.name), s(f.filename), ln.line)
                })
                .collect()
        })
        .collect();
    let r = |m: &str, l| (format!("com.acme.Render.{m} [interp]"), "Render.java".to_owned(), l);
    assert!(chains.contains(&vec![r("layout", 54), r("draw", 50)]), "{chains:?}");
    assert!(chains.contains(&vec![r("measure", 59), r("layout", 55), r("draw", 50)]), "{chains:?}");
}

/// The lines of each location of `p`, each as (function name, function file, line), innermost
/// first.
fn pprof_lines(p: &pp::Profile) -> Vec<Vec<(String, String, i64)>> {
    let s = |i: i64| p.string_table[i as usize].clone();
    p.location
        .iter()
        .map(|l| {
            l.line
                .iter()
                .map(|ln| {
                    let f = p.function.iter().find(|f| f.id == ln.function_id).unwrap();
                    (s(f.name), s(f.filename), ln.line)
                })
                .collect()
        })
        .collect()
}

/// Frames that carry their own source file and line (`Frame.source_path_iid`, an iid of
/// `InternedData.source_paths`, and `Frame.line_number`, as producers that symbolize online
/// write them): a native frame with both, a Java frame with a line only, two frames without
/// a mapping that differ only in their line (two frames, as trace processor keys them), and a
/// second definition of the native frame (same mapping, rel_pc and name) with another line
/// (the first definition wins, as in trace processor).
const OWN_LINES: &str = r#"
packet { timestamp: 1 clock_snapshot { clocks { clock_id: 6 timestamp: 0 } clocks { clock_id: 4 timestamp: 0 } } }
packet {
  trusted_packet_sequence_id: 1 timestamp: 10 incremental_state_cleared: true
  interned_data {
    function_names { iid: 1 str: "_ZN3foo3barEv" } function_names { iid: 2 str: "com.example.Main.run" }
    function_names { iid: 3 str: "dummy" }
    mapping_paths { iid: 1 str: "system" } mapping_paths { iid: 2 str: "lib64" } mapping_paths { iid: 3 str: "libfoo.so" }
    mapping_paths { iid: 4 str: "data" } mapping_paths { iid: 5 str: "app" } mapping_paths { iid: 6 str: "com.example-1" }
    mapping_paths { iid: 7 str: "base.apk" }
    build_ids { iid: 1 str: "foo-build" } build_ids { iid: 2 str: "" }
    source_paths { iid: 1 str: "foo/bar.cc" } source_paths { iid: 2 str: "dummy.c" }
    mappings { iid: 11 build_id: 1 start: 4096 end: 8192 path_string_ids: 1 path_string_ids: 2 path_string_ids: 3 }
    mappings { iid: 12 build_id: 2 start: 65536 end: 131072 path_string_ids: 4 path_string_ids: 5 path_string_ids: 6 path_string_ids: 7 }
    frames { iid: 21 function_name_id: 1 mapping_id: 11 rel_pc: 16 source_path_iid: 1 line_number: 42 }
    frames { iid: 22 function_name_id: 2 mapping_id: 12 rel_pc: 32 line_number: 7 }
    frames { iid: 23 function_name_id: 3 source_path_iid: 2 line_number: 3 }
    frames { iid: 24 function_name_id: 3 source_path_iid: 2 line_number: 4 }
    frames { iid: 25 function_name_id: 1 mapping_id: 11 rel_pc: 16 source_path_iid: 1 line_number: 99 }
    callstacks { iid: 31 frame_ids: 22 frame_ids: 21 }
    callstacks { iid: 32 frame_ids: 23 } callstacks { iid: 33 frame_ids: 24 } callstacks { iid: 34 frame_ids: 25 }
  }
  profile_packet { index: 0 process_dumps { pid: 7 timestamp: 10 heap_name: "libc.malloc"
    samples { callstack_id: 31 self_allocated: 100 alloc_count: 1 } samples { callstack_id: 32 self_allocated: 10 alloc_count: 1 }
    samples { callstack_id: 33 self_allocated: 20 alloc_count: 1 } samples { callstack_id: 34 self_allocated: 1 alloc_count: 1 } } }
}
"#;

/// A frame's own file and line reach pprof (`Line.line`, the function's `filename`), the
/// viewers' JSON (speedscope's frame `file` and `line`) and the folded names (unchanged: a
/// line names its frame); without them the same frames have no line.
#[test]
fn frames_carry_their_own_lines() {
    let dir = tempfile::tempdir().unwrap();
    let Some(trace) = encode(dir.path(), "own-lines", OWN_LINES) else { return };
    let pb = dir.path().join("p.pb.gz");
    heapconv_ok(&["convert", trace.to_str().unwrap(), "--no-annotations", "-o", pb.to_str().unwrap()], 0);
    let p = read_pprof(&pb);
    let mut got = pprof_lines(&p);
    got.sort();
    let l = |f: &str, file: &str, line| vec![(f.to_owned(), file.to_owned(), line)];
    assert_eq!(
        got,
        [
            l("com.example.Main.run", "", 7),
            l("dummy", "dummy.c", 3),
            l("dummy", "dummy.c", 4),
            l("foo::bar()", "foo/bar.cc", 42),
        ]
    );
    // The second definition of the native frame is the first one, line 42.
    assert_eq!(p.sample.iter().filter(|s| s.location_id.len() == 1 && s.value[1] == 1).count(), 1);
    let one = p.sample.iter().find(|s| s.value[1] == 1).unwrap();
    let loc = p.location.iter().find(|l| l.id == one.location_id[0]).unwrap();
    assert_eq!(loc.line[0].line, 42);
    assert_eq!(
        folded(&trace, &["--no-annotations"]),
        ["com.example.Main.run;foo::bar() 100", "dummy 30", "foo::bar() 1"]
    );
    // speedscope: frames with their file and line.
    let out =
        heapconv_ok(&["convert", trace.to_str().unwrap(), "--no-annotations", "--to", "speedscope", "-o", "-"], 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let frames = v["shared"]["frames"].as_array().unwrap();
    let find = |name: &str, line: u64| {
        frames
            .iter()
            .find(|f| f["name"] == name && f["line"] == line)
            .unwrap_or_else(|| panic!("{name}:{line} in {frames:?}"))
    };
    assert_eq!(find("foo::bar()", 42)["file"], "foo/bar.cc");
    assert_eq!(find("dummy", 3)["file"], "dummy.c");
    assert_eq!(find("dummy", 4)["file"], "dummy.c");
    // Without a source file, speedscope's `file` is the mapping's path, as for any frame.
    assert_eq!(find("com.example.Main.run", 7)["file"], "/data/app/com.example-1/base.apk");
    // A source path never defined: reported, and the frame keeps its line without a file.
    let bad = OWN_LINES
        .replace(
            "    callstacks { iid: 31 frame_ids: 22 frame_ids: 21 }",
            "    frames { iid: 26 function_name_id: 3 mapping_id: 11 rel_pc: 64 source_path_iid: 9 line_number: 5 }\n    \
             callstacks { iid: 31 frame_ids: 22 frame_ids: 21 } callstacks { iid: 35 frame_ids: 26 }",
        )
        .replace(
            "samples { callstack_id: 34 self_allocated: 1 alloc_count: 1 }",
            "samples { callstack_id: 34 self_allocated: 1 alloc_count: 1 } \
             samples { callstack_id: 35 self_allocated: 1000 alloc_count: 1 }",
        );
    let Some(bad) = encode(dir.path(), "bad-source-path", &bad) else { return };
    let out = heapconv_ok(&["inspect", bad.to_str().unwrap()], 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sequence 1: frame 26 names source path string 9 that was never defined"), "{text}");
    heapconv_ok(&["convert", bad.to_str().unwrap(), "--no-annotations", "-o", pb.to_str().unwrap()], 0);
    assert!(pprof_lines(&read_pprof(&pb)).contains(&l("dummy", "", 5)));
    // The same trace without the fields: no lines anywhere.
    let plain = OWN_LINES
        .replace(" source_path_iid: 1", "")
        .replace(" source_path_iid: 2", "")
        .replace(" line_number: 42", "")
        .replace(" line_number: 7", "")
        .replace(" line_number: 3", "")
        .replace(" line_number: 4", "")
        .replace(" line_number: 99", "");
    let Some(plain) = encode(dir.path(), "no-lines", &plain) else { return };
    heapconv_ok(&["convert", plain.to_str().unwrap(), "--no-annotations", "-o", pb.to_str().unwrap()], 0);
    let p = read_pprof(&pb);
    assert!(pprof_lines(&p).iter().flatten().all(|(_, file, line)| file.is_empty() && *line == 0));
}

/// A Java frame's own `line_number` chooses the inline chain exactly as a ModuleSymbols line
/// does ([`symbolized_lines_choose_the_inline_chain`]'s trace with the lines in the frames);
/// a frame with both takes the ModuleSymbols line (trace processor replaces the frame's symbol
/// with it); a frame with only a source file of its own is deobfuscated as one without a line.
#[test]
fn frame_line_numbers_choose_the_inline_chain() {
    let dir = tempfile::tempdir().unwrap();
    let text = INLINE
        .replace(
            "mapping_paths { iid: 4 str: \"base.apk\" }",
            "mapping_paths { iid: 4 str: \"base.apk\" } source_paths { iid: 1 str: \"SourceFile\" }",
        )
        .replace("rel_pc: 4096 }", "rel_pc: 4096 line_number: 1 }")
        .replace("rel_pc: 8192 }", "rel_pc: 8192 line_number: 2 }")
        .replace("rel_pc: 12288 }", "rel_pc: 12288 line_number: 9 }")
        .replace("rel_pc: 16384 }", "rel_pc: 16384 source_path_iid: 1 line_number: 9 }")
        .replace("rel_pc: 20508 }", "rel_pc: 20508 source_path_iid: 1 }");
    let (head, _) = text.split_once("packet { module_symbols").unwrap();
    let text = format!(
        "{head}packet {{ module_symbols {{ path: \"/data/app/com.acme.app-Q1w2==/base.apk\" build_id: \"acme-build\"\n  \
         address_symbols {{ address: 16384 lines {{ function_name: \"r.a\" source_file_name: \"SourceFile\" line_number: 2 }} }} }} }}\n"
    );
    let Some(trace) = encode(dir.path(), "inline-own", &text) else { return };
    let map = format!("com.acme.app={}", write(dir.path(), "inline.map", INLINE_MAP));
    let want: Vec<String> = [
        "com.acme.A.baz | com.acme.B.baz 16",
        "com.acme.A.foo 64",
        "com.acme.B.bar 32",
        "com.acme.Base.bar 1024",
        "com.acme.Leaf.bar 512",
        "com.acme.Main.test 2048",
        // Line 9 (no range holds it): the outermost method of every range.
        "com.acme.Render.draw 4",
        "com.acme.Render.draw;com.acme.Render.layout 1",
        // Own line 2, and own line 9 replaced by the ModuleSymbols line 2.
        "com.acme.Render.draw;com.acme.Render.layout;com.acme.Render.measure 10",
        "com.acme.Supplier.get 384",
    ]
    .into_iter()
    .map(interp)
    .collect();
    assert_eq!(folded(&trace, &["--proguard-map", &map]), want);
    let cat = with_packets(dir.path(), &trace, &[&map]);
    assert_eq!(folded(&cat, &[]), want);
    // pprof: the chains with original files and lines.
    let pb = dir.path().join("p.pb.gz");
    heapconv_ok(&["convert", trace.to_str().unwrap(), "-o", pb.to_str().unwrap(), "--proguard-map", &map], 0);
    let chains = pprof_lines(&read_pprof(&pb));
    let r = |m: &str, l| (format!("com.acme.Render.{m} [interp]"), "Render.java".to_owned(), l);
    assert!(chains.contains(&vec![r("layout", 54), r("draw", 50)]), "{chains:?}");
    assert!(chains.contains(&vec![r("measure", 59), r("layout", 55), r("draw", 50)]), "{chains:?}");
    // Without a map: the frames' own lines (and the ModuleSymbols one) in pprof.
    heapconv_ok(&["convert", trace.to_str().unwrap(), "-o", pb.to_str().unwrap()], 0);
    let chains = pprof_lines(&read_pprof(&pb));
    let own = |l| vec![("r.a [interp]".to_owned(), String::new(), l)];
    assert!(chains.contains(&own(1)) && chains.contains(&own(2)) && chains.contains(&own(9)), "{chains:?}");
    assert!(chains.contains(&vec![("r.a [interp]".to_owned(), "SourceFile".to_owned(), 2)]), "{chains:?}");
    assert!(!chains.iter().flatten().any(|(_, f, l)| f == "SourceFile" && *l == 9), "{chains:?}");
}

/// [`TWO_APPS`] in the old layout (Android Q): strings, mappings, frames and callstacks inline
/// in each `ProfilePacket`, strings in one namespace; the package guess reads them too.
const TWO_APPS_INLINE: &str = r#"
packet { timestamp: 1 clock_snapshot { clocks { clock_id: 6 timestamp: 0 } clocks { clock_id: 4 timestamp: 0 } } }
packet { timestamp: 2 process_tree {
  processes { pid: 301 ppid: 1 uid: 10071 cmdline: "org.alpha" }
  processes { pid: 302 ppid: 1 uid: 1010072 cmdline: "org.beta" } } }
packet { timestamp: 3 packages_list {
  packages { name: "org.alpha" uid: 10071 } packages { name: "org.beta" uid: 10072 } } }
packet {
  trusted_packet_sequence_id: 7 timestamp: 10
  profile_packet {
    strings { iid: 1 str: "qx.a" } strings { iid: 2 str: "qy.b" } strings { iid: 3 str: "zz.c" }
    strings { iid: 4 str: "system" } strings { iid: 5 str: "priv-app" } strings { iid: 6 str: "Alpha" }
    strings { iid: 7 str: "Alpha.apk" } strings { iid: 8 str: "framework" } strings { iid: 9 str: "shared.jar" }
    strings { iid: 10 str: "" }
    mappings { iid: 11 build_id: 10 start: 4096 end: 8192 path_string_ids: 4 path_string_ids: 5 path_string_ids: 6 path_string_ids: 7 }
    mappings { iid: 12 build_id: 10 start: 65536 end: 131072 path_string_ids: 4 path_string_ids: 8 path_string_ids: 9 }
    frames { iid: 21 function_name_id: 1 mapping_id: 11 rel_pc: 16 }
    frames { iid: 22 function_name_id: 2 mapping_id: 11 rel_pc: 32 }
    frames { iid: 23 function_name_id: 3 mapping_id: 12 rel_pc: 48 }
    callstacks { iid: 31 frame_ids: 23 frame_ids: 21 frame_ids: 22 }
    callstacks { iid: 32 frame_ids: 21 frame_ids: 22 }
    index: 0 process_dumps { pid: 301 timestamp: 10 heap_name: "libc.malloc"
    samples { callstack_id: 31 self_allocated: 0 alloc_count: 0 }
    samples { callstack_id: 32 self_allocated: 100 alloc_count: 1 } } }
}
packet {
  trusted_packet_sequence_id: 8 timestamp: 11
  profile_packet {
    strings { iid: 1 str: "qx.a" } strings { iid: 2 str: "qy.b" } strings { iid: 3 str: "zz.c" }
    strings { iid: 4 str: "system" } strings { iid: 5 str: "priv-app" } strings { iid: 6 str: "Beta" }
    strings { iid: 7 str: "Beta.apk" } strings { iid: 8 str: "framework" } strings { iid: 9 str: "shared.jar" }
    strings { iid: 10 str: "" }
    mappings { iid: 11 build_id: 10 start: 4096 end: 8192 path_string_ids: 4 path_string_ids: 5 path_string_ids: 6 path_string_ids: 7 }
    mappings { iid: 12 build_id: 10 start: 65536 end: 131072 path_string_ids: 4 path_string_ids: 8 path_string_ids: 9 }
    frames { iid: 21 function_name_id: 1 mapping_id: 11 rel_pc: 16 }
    frames { iid: 22 function_name_id: 2 mapping_id: 11 rel_pc: 32 }
    frames { iid: 23 function_name_id: 3 mapping_id: 12 rel_pc: 48 }
    callstacks { iid: 31 frame_ids: 23 frame_ids: 21 frame_ids: 22 }
    index: 0 process_dumps { pid: 302 timestamp: 11 heap_name: "libc.malloc"
    samples { callstack_id: 31 self_allocated: 200 alloc_count: 2 } } }
}
"#;

/// Trace processor's `GuessPackages` on a trace of the old layout: each process's frames take
/// its package's map (before: the guess read interned data only, and both stayed obfuscated).
#[test]
fn frames_of_the_old_layout_take_the_package_of_their_process() {
    let dir = tempfile::tempdir().unwrap();
    let Some(trace) = encode(dir.path(), "two-apps-inline", TWO_APPS_INLINE) else { return };
    let alpha = format!("org.alpha={}", write(dir.path(), "alpha.map", ALPHA_MAP));
    let beta = format!("org.beta={}", write(dir.path(), "beta.map", BETA_MAP));
    let pid = |p: &str, t: &Path| folded(t, &["--pid", p, "--proguard-map", &alpha, "--proguard-map", &beta]);
    let alpha_stack = [interp("org.alpha.Cart.add;org.alpha.Till.ring 100")];
    let beta_stack = [interp("org.beta.Common.common;org.beta.Feed.load;org.beta.Post.send 200")];
    assert_eq!(pid("301", &trace), alpha_stack);
    assert_eq!(pid("302", &trace), beta_stack);
    assert_eq!(folded(&trace, &["--pid", "302"]), [interp("zz.c;qx.a;qy.b 200")]);
    let cat = with_packets(dir.path(), &trace, &[&alpha, &beta]);
    assert_eq!(folded(&cat, &["--pid", "301"]), alpha_stack);
    assert_eq!(folded(&cat, &["--pid", "302"]), beta_stack);
}
