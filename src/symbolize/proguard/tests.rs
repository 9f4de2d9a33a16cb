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

fn frame(class: &str, method: &str, line: u32) -> OriginalFrame {
    OriginalFrame { class: class.into(), method: method.into(), file: None, line }
}

fn strip_files(mut r: Retraced) -> Retraced {
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
        (chain.frames[0].class.as_str(), chain.frames[0].method.as_str(), chain.frames[0].line),
        ("com.example.app.Helper", "inlined", 7)
    );
    assert_eq!((chain.frames[1].method.as_str(), chain.frames[1].line), ("onCreate", 23));
    assert_eq!(chain.frames[1].file.as_deref(), Some("MainActivity.java"));
}

#[test]
fn ambiguous_methods_are_alternatives() {
    let map = map();
    let r = Retracer::new(&map);
    let alt = strip_files(r.frame("a.a", "c", None).unwrap());
    assert!(alt.ambiguous);
    let names: Vec<_> = alt.frames.iter().map(|f| f.method.as_str()).collect();
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
