use super::*;

const MAP: &str = "\
# compiler: R8
# compiler_version: 8.2.42
# pg_map_id: 1234567
com.example.app.MainActivity -> a.a:
# {\"id\":\"sourceFile\",\"fileName\":\"MainActivity.java\"}
    java.util.List items -> a
    int count -> b
    java.lang.String label -> b
    1:3:void onCreate(android.os.Bundle):20:22 -> a
    4:4:void com.example.app.Helper.inlined():7:7 -> a
    4:4:void onCreate(android.os.Bundle):23 -> a
    void unlined() -> c
    void other() -> c
com.example.app.Helper -> a.b:
    void <init>() -> <init>
";

fn map() -> ProguardMap {
    ProguardMap::from_bytes("mapping.txt", Some("com.example.app".into()), MAP.as_bytes().to_vec()).unwrap()
}

fn frame(class: &str, method: &str, line: u32) -> OriginalFrame<'static> {
    OriginalFrame { class: class.to_owned().into(), method: method.to_owned().into(), file: None, line }
}

fn strip_files(mut r: Retraced<'_>) -> Retraced<'_> {
    for f in &mut r.frames {
        f.file = None;
    }
    r
}

#[test]
fn classes_and_arrays() {
    let map = map();
    assert_eq!(map.class_count(), 2);
    let r = Retracer::new(&map);
    assert_eq!(r.class_name("a.a").as_deref(), Some("com.example.app.MainActivity"));
    assert_eq!(r.class_name("a.b[][]").as_deref(), Some("com.example.app.Helper[][]"));
    assert_eq!(r.class_name("java.lang.Class<a.b>").as_deref(), Some("java.lang.Class<com.example.app.Helper>"));
    assert_eq!(r.class_name("z.z"), None);
    // Only class lines were read so far.
    assert_eq!(r.report().classes_read, 0);
}

#[test]
fn fields_one_and_ambiguous() {
    let map = map();
    let r = Retracer::new(&map);
    assert_eq!(r.field_names("a.a", "a"), Some(vec!["items".to_string()]));
    assert_eq!(r.field_names("a.a", "b"), Some(vec!["count".to_string(), "label".to_string()]));
    assert_eq!(r.field_names("a.a", "zz"), None);
    assert_eq!(r.report().classes_read, 1);
}

#[test]
fn line_ranges_and_inline_chain() {
    let map = map();
    let r = Retracer::new(&map);
    let one = strip_files(r.frame("a.a", "a", Some(2)).unwrap());
    assert_eq!(one.frames, vec![frame("com.example.app.MainActivity", "onCreate", 21)]);
    assert!(!one.ambiguous && !one.class_only);
    let chain = r.frame("a.a", "a", Some(4)).unwrap();
    assert!(!chain.ambiguous);
    assert_eq!(chain.frames.len(), 2);
    assert_eq!(
        (chain.frames[0].class.as_ref(), chain.frames[0].method.as_ref(), chain.frames[0].line),
        ("com.example.app.Helper", "inlined", 7)
    );
    assert_eq!((chain.frames[1].method.as_ref(), chain.frames[1].line), ("onCreate", 23));
    assert_eq!(chain.frames[1].file.as_deref(), Some("MainActivity.java"));
}

#[test]
fn ambiguous_methods_are_alternatives() {
    let map = map();
    let r = Retracer::new(&map);
    let alt = strip_files(r.frame("a.a", "c", None).unwrap());
    assert!(alt.ambiguous);
    let names: Vec<_> = alt.frames.iter().map(|f| f.method.as_ref()).collect();
    assert_eq!(names, ["unlined", "other"], "file order, as retrace lists bare methods");
}

#[test]
fn unknown_method_keeps_its_name() {
    let map = map();
    let r = Retracer::new(&map);
    let c = r.frame("a.a", "zz", Some(9)).unwrap();
    assert!(c.class_only);
    assert_eq!(c.frames[0].class, "com.example.app.MainActivity");
    assert_eq!(c.frames[0].method, "zz");
    assert_eq!(r.frame("q.q", "a", None), None);
    let rep = r.report();
    assert_eq!((rep.lookups, rep.deobfuscated), (2, 0));
}

#[test]
fn malformed_class_line_names_file_and_line() {
    let err = ProguardMap::from_bytes("m.txt", None, b"a.B -> a:\n    int x -> a\nbroken line\n".to_vec()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Malformed);
    assert!(err.context().starts_with("m.txt:3: not a class line"), "{}", err.context());
    let err = ProguardMap::from_bytes("m.txt", None, b"    int x -> a\n".to_vec()).unwrap_err();
    assert!(err.context().starts_with("m.txt:1: a member line before"), "{}", err.context());
    let err = ProguardMap::from_bytes("m.txt", None, b"a.B -> a:\nc.D -> a:\n".to_vec()).unwrap_err();
    assert!(err.context().contains("m.txt:2: class a is mapped a second time (first at line 1)"), "{}", err.context());
}

#[test]
fn malformed_member_line_is_skipped_and_counted() {
    let map = ProguardMap::from_bytes(
        "m.txt",
        None,
        b"a.B -> a:\n    int x -> a\n    what is this\n    int y -> b\n".to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    assert_eq!(r.field_names("a", "b"), Some(vec!["y".to_string()]));
    let rep = r.report();
    assert_eq!(rep.skipped_lines, 1);
    assert_eq!(rep.first_skipped.as_deref(), Some("m.txt:3"));
}

#[test]
fn split_frames() {
    assert_eq!(split_java_frame("a.b.c"), Some(("a.b", "c")));
    assert_eq!(split_java_frame("nodot"), None);
}

/// The answer of the `proguard` crate's own mapper for one frame of class section `section`
/// (what this module returned before it had its own table).
fn crate_frame(section: &str, original: &str, class: &str, method: &str, line: u32) -> Vec<OriginalFrame<'static>> {
    use proguard::{ProguardMapper, ProguardMapping, StackFrame, StackTrace};
    let mapper = ProguardMapper::new(ProguardMapping::new(section.as_bytes()));
    let input = StackTrace::new(None, vec![StackFrame::new(class, method, line as usize)]);
    let out = mapper.remap_stacktrace_typed(&input);
    let mut frames: Vec<OriginalFrame<'static>> = out
        .frames()
        .iter()
        .map(|f| OriginalFrame {
            class: f.class().to_string().into(),
            method: f.method().to_string().into(),
            file: f.file().map(|s| s.to_string().into()),
            line: f.line().and_then(|l| u32::try_from(l).ok()).unwrap_or(0),
        })
        .collect();
    if frames.is_empty() {
        frames.push(OriginalFrame {
            class: original.to_owned().into(),
            method: method.to_owned().into(),
            file: None,
            line,
        });
    }
    frames
}

/// A random map section of every shape the rules tell apart: shared obfuscated names, line
/// ranges, inline chains, lines without ranges or with `0:0`, original lines only, inverted
/// ranges, receivers of other classes (Kotlin ones too), sourceFile, synthesized and outline
/// metadata, comments and bad lines between.
fn random_class(rng: &mut u64, k: usize) -> (String, String, String) {
    let mut next = |n: u64| {
        *rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*rng >> 33) % n
    };
    let original = if next(4) == 0 { format!("com.ex.File{k}Kt") } else { format!("com.ex.C{k}$Inner") };
    let obf = format!("o{k}");
    let mut s = format!("{original} -> {obf}:\n");
    match next(4) {
        0 => s.push_str(&format!("# {{\"id\":\"sourceFile\",\"fileName\":\"C{k}.kt\"}}\n")),
        1 => s.push_str("# {\"id\":\"sourceFile\",\"fileName\":\"R8$$SyntheticClass\"}\n"),
        2 => s.push_str("# {\"id\":\"com.android.tools.r8.synthesized\"}\n"),
        _ => {}
    }
    let names = ["a", "b", "c"];
    let methods = ["run", "go", "<init>", "lambda$x$0"];
    let mut start = 1u32;
    for _ in 0..next(9) + 1 {
        let obf_m = names[next(3) as usize];
        let receiver = match next(5) {
            0 => "com.ex.Other.".to_owned(),
            1 => "com.ex.UtilKt.".to_owned(),
            2 => format!("{original}."),
            _ => String::new(),
        };
        let m = methods[next(4) as usize];
        let args = if next(2) == 0 { "" } else { "int" };
        let n = next(4) as u32;
        let os = 10 + next(90) as u32;
        let line = match next(8) {
            0 => format!("    void {receiver}{m}({args}) -> {obf_m}\n"),
            1 => format!("    0:0:void {receiver}{m}({args}):{os}:{} -> {obf_m}\n", os + n),
            2 => format!("    void {receiver}{m}({args}):{os} -> {obf_m}\n"),
            3 => format!("    void {receiver}{m}({args}):{os}:{} -> {obf_m}\n", os + n),
            4 => {
                // An inline chain: two lines sharing the range.
                let l = format!(
                    "    {start}:{}:void com.ex.Other.inl():{os}:{os} -> {obf_m}\n    {start}:{}:void {m}({args}):{} -> {obf_m}\n",
                    start + n,
                    start + n,
                    os + 5
                );
                start += n + 1;
                l
            }
            5 => {
                let l = format!("    {}:{start}:void {receiver}{m}({args}):{}:{os} -> {obf_m}\n", start + n, os + n);
                start += n + 1;
                l
            }
            _ => {
                let l = format!("    {start}:{}:void {receiver}{m}({args}):{os}:{} -> {obf_m}\n", start + n, os + n);
                start += n + 1;
                l
            }
        };
        s.push_str(&line);
        match next(10) {
            0 => s.push_str("      # {\"id\":\"com.android.tools.r8.synthesized\"}\n"),
            1 => s.push_str("      # {\"id\":\"com.android.tools.r8.outline\"}\n"),
            2 => s.push_str("      # {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"()V\"}\n"),
            3 => s.push_str("    this is not a member\n"),
            4 => s.push_str("    int field -> a\n"),
            _ => {}
        }
    }
    (s, original, obf)
}

#[test]
fn own_table_answers_as_the_crate_mapper() {
    let mut rng = 17u64;
    let mut compared = 0;
    let mut widened = 0;
    for k in 0..400 {
        let (section, original, obf) = random_class(&mut rng, k);
        let map = ProguardMap::from_bytes("r.txt", None, section.clone().into_bytes()).unwrap();
        let r = Retracer::new(&map);
        for m in ["a", "b", "c", "zz"] {
            for line in 0..=20 {
                let ours = r.frame(&obf, m, (line > 0).then_some(line)).unwrap().frames;
                let theirs = crate_frame(&section, &original, &obf, m, line);
                compared += 1;
                if ours != theirs {
                    // The one deliberate difference: no line and several range groups whose
                    // outermost methods differ give every one of them, the crate's among them.
                    assert_eq!(line, 0, "{section}\n{m}:{line}: ours {ours:?}\ncrate {theirs:?}");
                    assert!(ours.len() > 1 && theirs.len() == 1, "{section}\n{m}: ours {ours:?}\ncrate {theirs:?}");
                    assert!(ours.iter().any(|o| o.class == theirs[0].class && o.method == theirs[0].method));
                    widened += 1;
                }
            }
        }
    }
    assert!(compared > 30_000 && widened > 0, "{compared} compared, {widened} widened");
}

#[test]
fn batch_answers_as_one_at_a_time() {
    let mut rng = 5u64;
    let mut text = String::new();
    for k in 0..300 {
        text.push_str(&random_class(&mut rng, k).0);
    }
    let map = ProguardMap::from_bytes("r.txt", None, text.into_bytes()).unwrap();
    let mut queries = Vec::new();
    let classes: Vec<String> = (0..302).map(|k| format!("o{k}")).collect();
    // The batch keeps only the lines of the names asked about: some classes are asked about
    // one name, some two, some all (and one the map lacks).
    let names: [&[&str]; 5] = [&["a", "b", "zz"], &["a"], &["b"], &["c"], &["c", "a"]];
    for (k, c) in classes.iter().enumerate() {
        for &m in names[k % names.len()] {
            for l in [None, Some(1), Some(3), Some(7), Some(3)] {
                queries.push(FrameQuery { class: c, method: m, line: l });
            }
        }
    }
    let batch = Retracer::new(&map);
    let got = batch.frames(&queries);
    let one = Retracer::new(&map);
    for (q, g) in queries.iter().zip(&got) {
        assert_eq!(*g, one.frame(q.class, q.method, q.line), "{q:?}");
    }
    let (a, b) = (batch.report(), one.report());
    assert_eq!(
        (a.lookups, a.deobfuscated, a.classes_read, a.skipped_lines),
        (b.lookups, b.deobfuscated, b.classes_read, b.skipped_lines)
    );
    assert_eq!(a.first_skipped, b.first_skipped);
    assert!(a.skipped_lines > 0);
}

#[test]
fn a_file_is_read_as_the_same_bytes_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mapping.txt");
    std::fs::write(&path, MAP).unwrap();
    let file = ProguardMap::open(&path, None).unwrap();
    let mem = map();
    assert_eq!(file.classes().collect::<Vec<_>>(), mem.classes().collect::<Vec<_>>());
    let (rf, rm) = (Retracer::new(&file), Retracer::new(&mem));
    for l in 0..6 {
        assert_eq!(rf.frame("a.a", "a", Some(l)), rm.frame("a.a", "a", Some(l)));
    }
    assert_eq!(rf.field_names("a.a", "b"), rm.field_names("a.a", "b"));
}

/// R8's retrace test `InlineInOutlineStackTrace`: an outline called from a method with an
/// inline chain; the outline frame goes, and its position (2) moves its caller from line 27
/// to the call site, line 5, in the inline range 4:5.
#[test]
fn outline_frame_moves_its_callers_line() {
    let text = "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.0\"}\n\
outline.Class -> a:\n    1:2:int outline():0 -> a\n# {\"id\":\"com.android.tools.r8.outline\"}\n\
some.Class -> b:\n    1:1:void foo.bar.Baz.qux():42:42 -> s\n\
\x20\x20\x20\x204:5:int foo.bar.baz.outlineCaller(int):98:99 -> s\n    4:5:int outlineCaller(int):24 -> s\n\
\x20\x20\x20\x2027:27:int outlineCaller(int):0:0 -> s\n\
# {\"id\":\"com.android.tools.r8.outlineCallsite\",\"positions\":{\"1\":4,\"2\":5}}\n";
    let map = ProguardMap::from_bytes("o.txt", None, text.as_bytes().to_vec()).unwrap();
    let r = Retracer::new(&map);
    assert!(r.is_outline("a", "a") && !r.is_outline("b", "s"));
    assert_eq!(r.outline_callsite("b", "s", 27, 2), Some(5));
    assert_eq!(r.outline_callsite("b", "s", 27, 3), None);
    let got = r.stack(&[
        FrameQuery { class: "a", method: "a", line: Some(2) },
        FrameQuery { class: "b", method: "s", line: Some(27) },
    ]);
    assert_eq!(got[0].as_ref().unwrap().frames, vec![], "the outline frame is dropped");
    let caller = got[1].as_ref().unwrap();
    assert!(!caller.ambiguous);
    let shown: Vec<(&str, &str, Option<&str>, u32)> =
        caller.frames.iter().map(|f| (f.class.as_ref(), f.method.as_ref(), f.file.as_deref(), f.line)).collect();
    assert_eq!(
        shown,
        [
            ("foo.bar.baz", "outlineCaller", Some("baz.java"), 99),
            ("some.Class", "outlineCaller", Some("Class.java"), 24)
        ]
    );
    // Position 1 is line 4: the first line of both ranges.
    let got = r.stack(&[
        FrameQuery { class: "a", method: "a", line: Some(1) },
        FrameQuery { class: "b", method: "s", line: Some(27) },
    ]);
    assert_eq!(got[1].as_ref().unwrap().frames[0].line, 98);
    // Without the outline below it, line 27 is the catch-all 0:0 line.
    let alone = r.stack(&[FrameQuery { class: "b", method: "s", line: Some(27) }]);
    assert_eq!(alone[0].as_ref().unwrap().frames[0].line, 0);
    // A frame the map does not know ends the carry.
    let got = r.stack(&[
        FrameQuery { class: "a", method: "a", line: Some(2) },
        FrameQuery { class: "zz", method: "q", line: Some(1) },
        FrameQuery { class: "b", method: "s", line: Some(27) },
    ]);
    assert_eq!(got[1], None);
    assert_eq!(got[2].as_ref().unwrap().frames[0].line, 0);
}

/// A heapprofd frame's name after deobfuscation, as `java_frames::deobfuscate_java_frames` spells it.
fn frame_name(r: &Retracer<'_>, class: &str, method: &str) -> String {
    let t = r.frame(class, method, None).unwrap();
    let names: Vec<String> = t.frames.iter().map(|f| format!("{}.{}", f.class, f.method)).collect();
    if t.ambiguous { names.join(" | ") } else { names.last().cloned().unwrap_or_default() }
}

/// Perfetto's R8 retrace compatibility diff tests (`test/trace_processor/diff_tests/...
/// r8_retrace_compat`), from R8's stack-sample retrace tests: the maps in their shape, the
/// names trace processor gives the frames.
#[test]
fn perfetto_r8_retrace_compat_cases() {
    // MethodWithInlinePositions: one obfuscated method, three inline depths by line.
    let map = ProguardMap::from_bytes(
        "p.txt",
        None,
        b"com.example.Main -> a:\n    1:1:void foo():54:54 -> a\n    1:1:void test():50 -> a\n\
\x20\x20\x20\x202:2:void bar():59:59 -> a\n    2:2:void foo():55 -> a\n    2:2:void test():50 -> a\n\
\x20\x20\x20\x203:3:void baz():64:64 -> a\n    3:3:void bar():60 -> a\n    3:3:void foo():55 -> a\n    3:3:void test():50 -> a\n"
            .to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    let chain = |l| {
        let t = r.frame("a", "a", Some(l)).unwrap();
        assert!(!t.ambiguous);
        t.frames.iter().map(|f| (format!("{}.{}", f.class, f.method), f.line)).collect::<Vec<_>>()
    };
    let m = |n: &str, l| (format!("com.example.Main.{n}"), l);
    assert_eq!(chain(1), [m("foo", 54), m("test", 50)]);
    assert_eq!(chain(2), [m("bar", 59), m("foo", 55), m("test", 50)]);
    assert_eq!(chain(3), [m("baz", 64), m("bar", 60), m("foo", 55), m("test", 50)]);
    assert_eq!(frame_name(&r, "a", "a"), "com.example.Main.test");

    // HorizontalClassMerging: B merged into A; `baz` of both is `a` (two range groups).
    let map = ProguardMap::from_bytes(
        "p.txt",
        None,
        b"com.example.A -> a:\n# {\"id\":\"sourceFile\",\"fileName\":\"T.java\"}\n    int $r8$classId -> a\n\
\x20\x20\x20\x20\x20\x20# {\"id\":\"com.android.tools.r8.synthesized\"}\n    1:1:void <init>(int):0:0 -> <init>\n\
\x20\x20\x20\x20\x20\x20# {\"id\":\"com.android.tools.r8.synthesized\"}\n    1:1:void com.example.B.baz():51:51 -> a\n\
\x20\x20\x20\x202:2:void baz():51:51 -> a\n    1:8:void com.example.B.bar():46:46 -> b\n    1:8:void foo():46:46 -> c\n\
com.example.I -> b:\n    void baz() -> a\n"
            .to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    assert_eq!(frame_name(&r, "a", "a"), "com.example.A.baz | com.example.B.baz");
    assert_eq!(frame_name(&r, "a", "b"), "com.example.B.bar");
    assert_eq!(frame_name(&r, "a", "c"), "com.example.A.foo");

    // MethodWithOverload: two return types, two obfuscated names, one original name.
    let map = ProguardMap::from_bytes(
        "p.txt",
        None,
        b"com.example.StringSupplier -> b:\n    1:1:java.lang.Object get():10:10 -> a\n\
\x20\x20\x20\x201:1:java.lang.String get():10:10 -> b\n"
            .to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    assert_eq!(frame_name(&r, "b", "a"), "com.example.StringSupplier.get");
    assert_eq!(frame_name(&r, "b", "b"), "com.example.StringSupplier.get");

    // MethodWithRemovedArgument (residualsignature) and StaticizedMethod.
    let map = ProguardMap::from_bytes(
        "p.txt",
        None,
        b"com.example.Main -> a:\n    1:1:void test(java.lang.Object):42:42 -> a\n\
\x20\x20\x20\x20\x20\x20# {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"()V\"}\n    1:1:void test():47:47 -> b\n"
            .to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    assert_eq!(frame_name(&r, "a", "a"), "com.example.Main.test");
    assert_eq!(frame_name(&r, "a", "b"), "com.example.Main.test");
    assert_eq!(r.report().skipped_lines, 0, "metadata lines are not bad lines");

    // VerticalClassMerging: A merged into B, A marked removed.
    let map = ProguardMap::from_bytes(
        "p.txt",
        None,
        b"com.example.A -> R8$$REMOVED$$CLASS$$0:\ncom.example.B -> a:\n    2:5:void <init>():42:42 -> <init>\n\
\x20\x20\x20\x206:6:void com.example.A.<init>():42:42 -> <init>\n\
\x20\x20\x20\x20\x20\x20# {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"(I)V\"}\n\
\x20\x20\x20\x201:3:void bar():47:47 -> a\n    4:11:void bar():48:48 -> a\n    1:8:void com.example.A.bar():52:52 -> b\n\
\x20\x20\x20\x201:8:void com.example.A.baz():57:57 -> c\n    1:8:void com.example.A.foo():47:47 -> d\n"
            .to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    let got: Vec<String> = ["a", "b", "c", "d"].iter().map(|m| frame_name(&r, "a", m)).collect();
    assert_eq!(got, ["com.example.B.bar", "com.example.A.bar", "com.example.A.baz", "com.example.A.foo"]);
}

/// `residualsignature`: a frame that carries its descriptor picks the candidate R8 says has it.
#[test]
fn residual_signature_narrows_ambiguous_candidates() {
    let map = ProguardMap::from_bytes(
        "r.txt",
        None,
        b"com.example.B -> a:\n    void <init>() -> <init>\n\
\x20\x20\x20\x20void com.example.A.<init>() -> <init>\n      # {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"(I)V\"}\n\
\x20\x20\x20\x20void other(int) -> <init>\n      # {\"id\":\"com.android.tools.r8.residualsignature\",\"signature\":\"(J)V\"}\n"
            .to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    let all = r.frame("a", "<init>", None).unwrap();
    assert!(all.ambiguous);
    assert_eq!(all.frames.len(), 3);
    let typed = |d: &str| {
        let t = r.frame_typed("a", "<init>", d, None).unwrap();
        (t.frames.iter().map(|f| format!("{}.{}", f.class, f.method)).collect::<Vec<_>>(), t.ambiguous)
    };
    // The metadata says which line is `(I)V`; the line without it is `()V` by its own signature.
    assert_eq!(typed("(I)V"), (vec!["com.example.A.<init>".to_owned()], false));
    assert_eq!(typed("()V"), (vec!["com.example.B.<init>".to_owned()], false));
    // A descriptor no line has leaves every candidate.
    assert_eq!(typed("(Z)V").0.len(), 3);
}

#[test]
fn left_obfuscated_counts_app_names_not_framework_ones() {
    let d = Deobfuscator::from_maps(vec![map()]);
    for yes in ["q.r", "a.zz", "com.example.app.NotInMap", "a.a$b", "x.y.ab1", "z[]", "java.lang.Class<a.q>"] {
        assert!(d.worth_reporting(yes), "{yes}");
    }
    for no in
        ["java.lang.String", "android.app.Activity", "kotlin.Unit", "int[]", "long", "com.other.Thing", "byte[][]"]
    {
        assert!(!d.worth_reporting(no), "{no}");
    }
    let mut s = d.session();
    s.left_obfuscated("java.util.HashMap");
    s.left_obfuscated("q.r");
    s.left_obfuscated_as("com.example.app.Gone", "com.example.app.Gone.run");
    drop(s);
    let rep = d.report();
    assert_eq!(rep.left_obfuscated, 2);
    assert_eq!(rep.left_examples, ["q.r", "com.example.app.Gone.run"]);
}

/// R8's retrace: a method inlined from another class takes the source file that class's own
/// section records (`# {"id":"sourceFile"}`), not one made from its name; a class without
/// such a record still gets the made-up name (R8's `InlineSourceFileStackTrace` shape).
#[test]
fn inlined_frame_takes_the_source_file_of_its_own_class() {
    let map = ProguardMap::from_bytes(
        "p.txt",
        None,
        b"org.shop.Cart -> k:\n# {\"id\":\"sourceFile\",\"fileName\":\"CartFile.kt\"}\n\
org.shop.Checkout -> m:\n# {\"id\":\"sourceFile\",\"fileName\":\"CheckoutFile.kt\"}\n\
\x20\x20\x20\x201:1:void org.shop.Cart.total():22:22 -> q\n\
\x20\x20\x20\x201:1:void org.shop.Basket.weigh():7:7 -> q\n\
\x20\x20\x20\x201:1:void pay(java.lang.String[]):32 -> q\n"
            .to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    let got: Vec<(String, Option<String>, u32)> = r
        .frame("m", "q", Some(1))
        .unwrap()
        .frames
        .into_iter()
        .map(|f| (format!("{}.{}", f.class, f.method), f.file.map(Cow::into_owned), f.line))
        .collect();
    let s = |n: &str, f: &str, l| (n.to_owned(), Some(f.to_owned()), l);
    assert_eq!(
        got,
        [
            s("org.shop.Cart.total", "CartFile.kt", 22),
            // No section for Basket: named after the class, with the caller's extension.
            s("org.shop.Basket.weigh", "Basket.kt", 7),
            s("org.shop.Checkout.pay", "CheckoutFile.kt", 32),
        ]
    );
    // The batch path answers the same.
    let q = [FrameQuery { class: "m", method: "q", line: Some(1) }];
    assert_eq!(Retracer::new(&map).frames(&q)[0].as_ref().unwrap().frames[0].file.as_deref(), Some("CartFile.kt"));
}

/// R8's `rewriteFrame`: for the stack of a thrown exception whose class the condition names,
/// `removeInnerFrames(n)` drops n inlined frames of the innermost frame; another exception, or
/// a stack without one, keeps them; the rule may sit on any line of the chain.
#[test]
fn rewrite_frame_removes_inner_frames_for_the_named_exception() {
    let map = ProguardMap::from_bytes(
        "p.txt",
        None,
        b"org.shop.Till -> t:\n\
\x20\x20\x20\x203:3:void org.shop.Drawer.open():23:23 -> o\n\
\x20\x20\x20\x203:3:void ring(org.shop.Drawer):7 -> o\n\
\x20\x20\x20\x20# {\"id\":\"com.android.tools.r8.rewriteFrame\",\"conditions\":[\"throws(Ljava/lang/NullPointerException;)\"],\"actions\":[\"removeInnerFrames(1)\"]}\n\
\x20\x20\x20\x201:4:void close():40:43 -> c\n\
my.Boom -> x:\n"
            .to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    let names = |v: Vec<Option<Retraced<'_>>>| -> Vec<Vec<String>> {
        v.into_iter()
            .map(|r| r.unwrap().frames.iter().map(|f| format!("{}.{}:{}", f.class, f.method, f.line)).collect())
            .collect()
    };
    let stack =
        [FrameQuery { class: "t", method: "o", line: Some(3) }, FrameQuery { class: "t", method: "c", line: Some(2) }];
    assert_eq!(
        names(r.stack_thrown(&stack, "java.lang.NullPointerException")),
        [vec!["org.shop.Till.ring:7".to_owned()], vec!["org.shop.Till.close:41".to_owned()]]
    );
    let full = [
        vec!["org.shop.Drawer.open:23".to_owned(), "org.shop.Till.ring:7".to_owned()],
        vec!["org.shop.Till.close:41".to_owned()],
    ];
    assert_eq!(names(r.stack_thrown(&stack, "java.lang.IllegalStateException")), full);
    assert_eq!(names(r.stack(&stack)), full);
    // Only the innermost frame: the same method lower in the stack keeps its chain.
    let lower = [FrameQuery { class: "t", method: "c", line: Some(2) }, stack[0]];
    assert_eq!(names(r.stack_thrown(&lower, "java.lang.NullPointerException"))[1].len(), 2);
}

/// A profiler's sample line outside every range of its method answers as no line (every
/// candidate, as retrace shows them) with `frames_at_lines`; inside a range, the chain.
#[test]
fn sample_line_outside_the_ranges_falls_back_to_no_line() {
    let map = ProguardMap::from_bytes(
        "p.txt",
        None,
        b"org.shop.Scan -> s:\n    1:1:void beep():5:5 -> b\n    1:1:void scan():9 -> b\n    2:3:void scanAll():20:21 -> b\n"
            .to_vec(),
    )
    .unwrap();
    let r = Retracer::new(&map);
    let q = |l| [FrameQuery { class: "s", method: "b", line: Some(l) }];
    let at = |l| {
        let a = r.frames_at_lines(&q(l))[0].clone().unwrap();
        (a.ambiguous, a.frames.iter().map(|f| format!("{}:{}", f.method, f.line)).collect::<Vec<_>>())
    };
    assert_eq!(at(1), (false, vec!["beep:5".to_owned(), "scan:9".to_owned()]));
    assert_eq!(at(3), (false, vec!["scanAll:21".to_owned()]));
    assert_eq!(at(7), (true, vec!["scan:0".to_owned(), "scanAll:0".to_owned()]));
    // `frames` keeps retrace's answer for a stack trace's line: the class only.
    assert_eq!(r.frames(&q(7))[0].as_ref().unwrap().frames[0].method, "b");
}

/// A batch keeps only the lines of the names it asks about; an `outline` mark on a line it
/// leaves out (`out` under `b`) still marks the kept line of the same method (under `c`), as
/// when every line is kept.
#[test]
fn batch_keeps_marks_of_lines_it_leaves_out() {
    let section = "com.ex.A -> a:\n    void out() -> b\n      # {\"id\":\"com.android.tools.r8.outline\"}\n    1:1:void out():5:5 -> c\n    2:2:void other():7:7 -> c\n";
    let map = ProguardMap::from_bytes("m.txt", None, section.as_bytes().to_vec()).unwrap();
    let q = [FrameQuery { class: "a", method: "c", line: Some(1) }];
    let batch = Retracer::new(&map).frames(&q);
    let one = Retracer::new(&map);
    assert!(one.is_outline("a", "c"));
    assert_eq!(batch[0], one.frame("a", "c", Some(1)));
    // The outline answers with the class and the method as asked (no caller to move to).
    let r = batch[0].clone().unwrap();
    assert_eq!((&*r.frames[0].class, &*r.frames[0].method), ("com.ex.A", "c"));
}
