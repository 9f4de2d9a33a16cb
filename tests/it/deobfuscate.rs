//! Deobfuscation with ProGuard/R8 mapping files: heapconv's frames against ProGuard's own
//! ReTrace on a map ProGuard wrote for a real program, heap dumps of that program, and
//! heapprofd Java frames of a trace.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use heapconv::decode::hprof::{HprofDumpSelect, HprofReadOptions, read_hprof_dump};
use heapconv::model::heap::HeapDump;
use heapconv::symbolize::proguard::{Deobfuscator, ProguardMap, Retracer, deobfuscate_heap_dump};

/// What the fixture program left: ProGuard's map, the stack traces it printed (obfuscated),
/// and its heap dump.
struct Obfuscated {
    map: PathBuf,
    stacks: PathBuf,
    hprof: PathBuf,
}

/// Compiles tests/data/proguard/DeobApp.java, obfuscates it with ProGuard (optimizations on:
/// methods get inlined, so the map has inline chains), runs it. `None` without ProGuard.
fn obfuscated_app(dir: &Path) -> Option<(Obfuscated, String)> {
    let cp = proguard_classpath()?;
    let classes = dir.join("classes");
    let st = Command::new("javac")
        .args(["--release", "8", "-d"])
        .arg(&classes)
        .arg(data("proguard/DeobApp.java"))
        .status()
        .expect("javac runs");
    assert!(st.success(), "javac failed");
    let jar = dir.join("app.jar");
    let st = Command::new("jar").arg("cf").arg(&jar).arg("-C").arg(&classes).arg(".").status().expect("jar runs");
    assert!(st.success(), "jar failed");
    let out = dir.join("app-obf.jar");
    let map = dir.join("mapping.txt");
    // ProGuard 6.2 cannot read JDK 17's own classes: no library jars, warnings ignored (the
    // program only calls the JDK).
    let conf = format!(
        "-injars {}\n-outjars {}\n-keep public class com.example.deob.DeobApp {{ public static void main(java.lang.String[]); }}\n\
         -keepattributes SourceFile,LineNumberTable\n-printmapping {}\n-dontwarn\n-ignorewarnings\n",
        jar.display(),
        out.display(),
        map.display()
    );
    let conf_path = dir.join("app.pro");
    std::fs::write(&conf_path, conf).unwrap();
    let o = Command::new("java")
        .args(["-cp", &cp, "proguard.ProGuard"])
        .arg(format!("@{}", conf_path.display()))
        .output()
        .expect("proguard runs");
    assert!(o.status.success(), "proguard failed: {}", String::from_utf8_lossy(&o.stderr));
    let stacks = dir.join("stacks.txt");
    let hprof = dir.join("app.hprof");
    let o = Command::new("java")
        .args(["-XX:+UseSerialGC", "-Xmx64m", "-Xshare:off", "-cp"])
        .arg(&out)
        .arg("com.example.deob.DeobApp")
        .arg(&stacks)
        .arg(&hprof)
        .output()
        .expect("java runs");
    assert!(o.status.success(), "obfuscated program failed: {}", String::from_utf8_lossy(&o.stderr));
    Some((Obfuscated { map, stacks, hprof }, cp))
}

/// One `at class.method(File:line)` of a stack trace: (class, method, line).
fn parse_at(line: &str) -> Option<(String, String, u32)> {
    let rest = line.trim_start().strip_prefix("at ")?;
    let open = rest.find('(')?;
    let (qualified, loc) = (&rest[..open], &rest[open + 1..rest.len() - 1]);
    let dot = qualified.rfind('.')?;
    let line = loc.rsplit_once(':').and_then(|(_, n)| n.parse().ok()).unwrap_or(0);
    Some((qualified[..dot].to_owned(), qualified[dot + 1..].to_owned(), line))
}

/// ReTrace's frames per input frame: the input is one frame per block, each block headed by
/// a `java.lang.Throwable: frame N` line, so the output splits at those lines again.
fn retrace_blocks(
    cp: &str,
    map: &Path,
    frames: &[(String, String, u32)],
    dir: &Path,
) -> Vec<Vec<(String, String, u32)>> {
    let mut text = String::new();
    for (i, (c, m, l)) in frames.iter().enumerate() {
        text.push_str(&format!("java.lang.Throwable: frame {i}\n\tat {c}.{m}(SourceFile:{l})\n"));
    }
    let input = dir.join("frames.txt");
    std::fs::write(&input, text).unwrap();
    let o = Command::new("java")
        .args(["-cp", cp, "proguard.retrace.ReTrace"])
        .arg(map)
        .arg(&input)
        .output()
        .expect("ReTrace runs");
    assert!(o.status.success(), "ReTrace failed: {}", String::from_utf8_lossy(&o.stderr));
    let mut blocks: Vec<Vec<(String, String, u32)>> = Vec::new();
    for line in String::from_utf8(o.stdout).unwrap().lines() {
        if line.starts_with("java.lang.Throwable: frame ") {
            blocks.push(Vec::new());
        } else if let Some(f) = parse_at(line) {
            blocks.last_mut().expect("a block").push(f);
        }
    }
    blocks
}

/// Every frame the map can be asked about with a line: each obfuscated line of each method
/// range, plus the lines of the program's own stack traces.
fn frames_of_map(map_text: &str, stacks: &str) -> Vec<(String, String, u32)> {
    let mut out = Vec::new();
    let mut class = String::new();
    for line in map_text.lines() {
        if !line.starts_with(' ') {
            if let Some((_, obf)) = line.trim_end_matches(':').split_once(" -> ") {
                class = obf.to_owned();
            }
            continue;
        }
        let t = line.trim();
        let Some((lhs, obf)) = t.split_once(" -> ") else { continue };
        let mut parts = lhs.splitn(3, ':');
        let (Some(a), Some(b)) =
            (parts.next().and_then(|s| s.parse::<u32>().ok()), parts.next().and_then(|s| s.parse::<u32>().ok()))
        else {
            continue;
        };
        for l in a..=b {
            out.push((class.clone(), obf.to_owned(), l));
        }
    }
    out.extend(stacks.lines().filter_map(parse_at));
    out.sort();
    out.dedup();
    out
}

#[test]
fn frames_equal_proguard_retrace_on_a_real_proguard_map() {
    let dir = tempfile::tempdir().unwrap();
    let Some((app, cp)) = obfuscated_app(dir.path()) else { return };
    let map_text = std::fs::read_to_string(&app.map).unwrap();
    assert!(map_text.contains("-> main"), "the map has inline chains into main:\n{map_text}");
    let frames = frames_of_map(&map_text, &std::fs::read_to_string(&app.stacks).unwrap());
    assert!(frames.len() > 20, "{} frames", frames.len());
    let expected = retrace_blocks(&cp, &app.map, &frames, dir.path());
    assert_eq!(expected.len(), frames.len());
    let map = ProguardMap::open(&app.map, None).unwrap();
    let r = Retracer::new(&map);
    let mut chains = 0;
    for (f, want) in frames.iter().zip(&expected) {
        let got: Vec<(String, String, u32)> = match r.frame(&f.0, &f.1, Some(f.2)) {
            Some(t) => t.frames.into_iter().map(|o| (o.class, o.method, o.line)).collect(),
            None => vec![f.clone()],
        };
        assert_eq!(&got, want, "frame {f:?}");
        chains += usize::from(got.len() > 1);
    }
    assert!(chains >= 3, "inline chains checked: {chains}");
}

/// The real program's stack traces, deobfuscated, name the source's methods and lines.
#[test]
fn real_stack_traces_name_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let Some((app, _)) = obfuscated_app(dir.path()) else { return };
    let stacks = std::fs::read_to_string(&app.stacks).unwrap();
    let map = ProguardMap::open(&app.map, None).unwrap();
    let r = Retracer::new(&map);
    let mut names = Vec::new();
    for (c, m, l) in stacks.lines().filter_map(parse_at) {
        for o in r.frame(&c, &m, Some(l)).unwrap().frames {
            names.push(format!("{}.{}:{}", o.class, o.method, o.line));
        }
    }
    // Lines of tests/data/proguard/DeobApp.java.
    assert_eq!(
        names,
        [
            "com.example.deob.Inventory.totalValue:73",
            "com.example.deob.Tracer.capture:99",
            "com.example.deob.DeobApp.main:22",
            "com.example.deob.Cache.lookup:91",
            "com.example.deob.Tracer.capture:101",
            "com.example.deob.DeobApp.main:22",
            "com.example.deob.Tracer.deeper:108",
            "com.example.deob.Tracer.capture:102",
            "com.example.deob.DeobApp.main:22",
        ]
    );
}

fn class(d: &HeapDump, name: &str) -> usize {
    d.classes.iter().position(|c| c.name == name).unwrap_or_else(|| panic!("no class {name}"))
}

/// The obfuscated program's heap dump: classes, instance fields (on references, found through
/// the declaring class) and static fields get their source names.
#[test]
fn hprof_of_an_obfuscated_program_gets_source_names() {
    let dir = tempfile::tempdir().unwrap();
    let Some((app, _)) = obfuscated_app(dir.path()) else { return };
    let bytes = std::fs::read(&app.hprof).unwrap();
    let (mut d, _) =
        read_hprof_dump(&bytes[..], "app.hprof", &HprofReadOptions::default(), HprofDumpSelect::Last).unwrap();
    assert!(d.classes.iter().any(|c| c.name == "com.example.deob.b"), "Inventory is obfuscated as b");
    let deob = Deobfuscator::open(&[heapconv::symbolize::proguard::MapSpec::parse(app.map.to_str().unwrap())]).unwrap();
    {
        let mut s = deob.session();
        deobfuscate_heap_dump(&mut d, &mut s, 0);
    }
    let inv = class(&d, "com.example.deob.Inventory");
    let item = class(&d, "com.example.deob.Item");
    class(&d, "com.example.deob.Cache");
    assert!(d.classes.iter().all(|c| !c.name.starts_with("com.example.deob.") || c.name.len() > 18));
    // An Inventory's firstItem is an Item whose `next` is an Item.
    let o = d.obj_class.iter().position(|&c| c as usize == inv).unwrap() as u32;
    let first = d.refs(o).find(|&(f, _)| d.field_name(f) == "firstItem").map(|(_, t)| t).expect("firstItem");
    assert_eq!(d.obj_class[first as usize] as usize, item);
    let next = d.refs(first).find(|&(f, _)| d.field_name(f) == "next").map(|(_, t)| t).expect("next");
    assert_eq!(d.obj_class[next as usize] as usize, item);
    // The static KEEP of DeobApp (the class keeps its name, its field does not).
    let app_class = class(&d, "com.example.deob.DeobApp");
    assert!(d.classes[app_class].static_refs.iter().any(|&(f, _)| d.field_name(f) == "KEEP"));
    let rep = deob.report();
    assert!(rep.maps[0].counts.deobfuscated >= 8, "{rep:?}");
}

/// `top` and `convert` of the dump with `--proguard-map` show source names and say which map
/// did it; a map that names nothing of the input is a warning.
#[test]
fn cli_deobfuscates_an_hprof_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let Some((app, _)) = obfuscated_app(dir.path()) else { return };
    let (hprof, map) = (app.hprof.to_str().unwrap(), app.map.to_str().unwrap());
    let out = heapconv_ok(&["top", hprof, "-n", "0", "--proguard-map", map], 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("com.example.deob.Inventory"), "{stdout}");
    assert!(!stdout.contains("com.example.deob.b\n"), "{stdout}");
    assert!(stderr.contains(&format!("with {map} ")) && stderr.contains("heap dump classes and fields"), "{stderr}");
    let plain = heapconv_ok(&["top", hprof, "-n", "0"], 0);
    assert!(String::from_utf8_lossy(&plain.stdout).contains("com.example.deob.b"));
    // A map of another program matches nothing.
    let other = dir.path().join("other.txt");
    std::fs::write(&other, "org.other.Thing -> zz.q:\n    int count -> a\n").unwrap();
    let out = heapconv_ok(&["top", hprof, "-n", "0", "--proguard-map", other.to_str().unwrap()], 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("matched nothing in the input"), "{stderr}");
}

/// `hprof-conv --proguard-map`: the dump is written with source class and field names (read
/// back with heapconv's hprof reader), and the run says which map did it.
#[test]
fn hprof_conv_writes_a_deobfuscated_dump() {
    let dir = tempfile::tempdir().unwrap();
    let Some((app, _)) = obfuscated_app(dir.path()) else { return };
    let out = dir.path().join("deob.hprof");
    let (hprof, map) = (app.hprof.to_str().unwrap(), app.map.to_str().unwrap());
    let run = heapconv_ok(&["hprof-conv", hprof, out.to_str().unwrap(), "--proguard-map", map], 0);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains(&format!("with {map} ")) && stderr.contains("heap dump classes and fields"), "{stderr}");
    let bytes = std::fs::read(&out).unwrap();
    assert!(bytes.starts_with(b"JAVA PROFILE 1.0.2\0"));
    let (d, _) =
        read_hprof_dump(&bytes[..], "deob.hprof", &HprofReadOptions::default(), HprofDumpSelect::Last).unwrap();
    assert!(!d.classes.iter().any(|c| c.name == "com.example.deob.b"), "Inventory is no longer b");
    let inv = class(&d, "com.example.deob.Inventory");
    let item = class(&d, "com.example.deob.Item");
    let o = d.obj_class.iter().position(|&c| c as usize == inv).unwrap() as u32;
    let first = d.refs(o).find(|&(f, _)| d.field_name(f) == "firstItem").map(|(_, t)| t).expect("firstItem");
    assert_eq!(d.obj_class[first as usize] as usize, item);
    let app_class = class(&d, "com.example.deob.DeobApp");
    assert!(d.classes[app_class].static_refs.iter().any(|&(f, _)| d.field_name(f) == "KEEP"));
    // Without a map, a standard-format dump is refused as before; -z with a map is a usage error.
    heapconv_ok(&["hprof-conv", hprof, dir.path().join("x.hprof").to_str().unwrap()], 1);
    heapconv_ok(&["hprof-conv", "-z", hprof, dir.path().join("y.hprof").to_str().unwrap(), "--proguard-map", map], 2);
}

/// `--mapping-dir`: a Gradle tree with two modules and variants gives the `release` map of the
/// first module (in path order) to the hprof and warns with the candidates; the only Gradle
/// map is used without a warning; hprof-conv takes the option too.
#[test]
fn mapping_dir_finds_gradle_maps() {
    let dir = tempfile::tempdir().unwrap();
    let Some((app, _)) = obfuscated_app(dir.path()) else { return };
    let hprof = app.hprof.to_str().unwrap();
    let tree = dir.path().join("project");
    let other = "org.other.Thing -> zz.q:\n    int count -> a\n";
    for (module, variant, text) in [
        ("app", "debug", other.to_owned()),
        ("app", "release", std::fs::read_to_string(&app.map).unwrap()),
        ("feature", "release", other.to_owned()),
    ] {
        let d = tree.join(module).join("build/outputs/mapping").join(variant);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("mapping.txt"), text).unwrap();
    }
    let out = heapconv_ok(&["top", hprof, "-n", "0", "--mapping-dir", tree.to_str().unwrap()], 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("com.example.deob.Inventory"), "{stdout}");
    let used = tree.join("app/build/outputs/mapping/release/mapping.txt");
    assert!(stderr.contains(&format!("3 Gradle mapping files; used {} (variant release)", used.display())), "{stderr}");
    for c in ["app/build/outputs/mapping/debug", "feature/build/outputs/mapping/release"] {
        assert!(stderr.contains(&tree.join(c).join("mapping.txt").display().to_string()), "{stderr}");
    }
    // One Gradle map: used, no warning; hprof-conv writes the deobfuscated dump.
    std::fs::remove_dir_all(tree.join("feature")).unwrap();
    std::fs::remove_dir_all(tree.join("app/build/outputs/mapping/debug")).unwrap();
    let conv = dir.path().join("conv.hprof");
    let out = heapconv_ok(&["hprof-conv", hprof, conv.to_str().unwrap(), "--mapping-dir", tree.to_str().unwrap()], 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Gradle mapping files"), "{stderr}");
    let bytes = std::fs::read(&conv).unwrap();
    let (d, _) =
        read_hprof_dump(&bytes[..], "conv.hprof", &HprofReadOptions::default(), HprofDumpSelect::Last).unwrap();
    class(&d, "com.example.deob.Inventory");
}

/// `--mapping-dir`: maps named by package (`<package>.txt`, `<package>/mapping.txt`) apply to
/// that package's frames; a file of another name is not a map; an empty tree is a warning.
#[test]
fn mapping_dir_finds_maps_named_by_package() {
    let trace = data("art_frames.pftrace");
    let map = std::fs::read_to_string(data("proguard/art_frames.map")).unwrap();
    for layout in ["com.example.feed.txt", "com.example.feed/mapping.txt"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(layout);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &map).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a map").unwrap();
        let out = heapconv_ok(
            &[
                "convert",
                trace.to_str().unwrap(),
                "--to",
                "folded",
                "-o",
                "-",
                "--mapping-dir",
                dir.path().to_str().unwrap(),
            ],
            0,
        );
        let folded = String::from_utf8_lossy(&out.stdout);
        assert!(folded.contains(";com.real.feed.FeedController.refreshAll [aot];"), "{layout}: {folded}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("Java frames of com.example.feed"), "{stderr}");
    }
    let empty = tempfile::tempdir().unwrap();
    let out = heapconv_ok(
        &[
            "convert",
            trace.to_str().unwrap(),
            "--to",
            "folded",
            "-o",
            "-",
            "--mapping-dir",
            empty.path().to_str().unwrap(),
        ],
        0,
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no mapping file found"));
}

/// heapprofd Java frames: the package comes from the frame's mapping path
/// (`/data/app/~~…/com.example.feed-…/`), inline chains become lines, a JIT frame (no package)
/// takes the only map, ambiguous methods are named `a | b`; PERFETTO_PROGUARD_MAP works as
/// traceconv reads it.
#[test]
fn heapprofd_java_frames_in_every_output() {
    let trace = data("art_frames.pftrace");
    let map = data("proguard/art_frames.map");
    let spec = format!("com.example.feed={}", map.display());
    let out =
        heapconv_ok(&["convert", trace.to_str().unwrap(), "--to", "folded", "-o", "-", "--proguard-map", &spec], 0);
    let folded = String::from_utf8_lossy(&out.stdout);
    assert!(folded.contains(";com.real.feed.FeedController.refreshAll [aot];"), "{folded}");
    assert!(folded.contains(";com.real.feed.FeedController.parseAll [interp];"), "{folded}");
    assert!(folded.contains(";com.real.feed.HotLoop.spin | com.real.feed.HotLoop.spinFast [jit];"), "{folded}");
    assert!(!folded.contains("com.example.feed.Feed."), "{folded}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Java frames of com.example.feed"), "{stderr}");
    // The environment variable, traceconv's syntax.
    let env = Command::new(env!("CARGO_BIN_EXE_heapconv"))
        .args(["convert", trace.to_str().unwrap(), "--to", "folded", "-o", "-"])
        .env("PERFETTO_PROGUARD_MAP", &spec)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&env.stdout), folded);
    // pprof: the frame names are the deobfuscated ones.
    let pb = tempfile::tempdir().unwrap();
    let path = pb.path().join("p.pb.gz");
    heapconv_ok(&["convert", trace.to_str().unwrap(), "-o", path.to_str().unwrap(), "--proguard-map", &spec], 0);
    let p = read_pprof(&path);
    assert!(
        p.string_table.iter().any(|s| s == "com.real.feed.FeedController.refreshAll [aot]"),
        "{:?}",
        p.string_table
    );
    // Without a package for the map, and a package that is not the trace's.
    let wrong = format!("org.other={}", map.display());
    let out =
        heapconv_ok(&["convert", trace.to_str().unwrap(), "--to", "folded", "-o", "-", "--proguard-map", &wrong], 0);
    let folded = String::from_utf8_lossy(&out.stdout);
    assert!(folded.contains("com.example.feed.Feed.refresh [aot]"), "{folded}");
}

/// DDM allocation records: allocated classes and every frame (class, method, file, line), an
/// inline chain expanded into its frames, in folded text and in pprof lines.
#[test]
fn ddm_capture_frames_and_classes() {
    let alloc = data("ddm/art.alloc");
    let map = data("proguard/ddm_art.map");
    let (a, m) = (alloc.to_str().unwrap(), map.to_str().unwrap());
    let out = heapconv_ok(&["convert", a, "--to", "folded", "-o", "-", "--proguard-map", m], 0);
    let folded = String::from_utf8_lossy(&out.stdout);
    assert!(
        folded.contains(
            ";com.real.app.HomeActivity.onCreate(HomeActivity.java:120);com.real.app.Views.inflate(Views.java:7);int[] 1024"
        ),
        "{folded}"
    );
    assert!(
        folded.contains(";com.real.app.ImageCache.store(ImageCache.java:52);com.example.app.Cache$Node 16"),
        "{folded}"
    );
    assert!(!folded.contains("com.example.app.MainActivity"), "{folded}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ddm.pb.gz");
    heapconv_ok(&["convert", a, "-o", path.to_str().unwrap(), "--proguard-map", m], 0);
    let p = read_pprof(&path);
    let s = |i: i64| p.string_table[i as usize].as_str();
    let lines: Vec<(String, i64)> = p
        .location
        .iter()
        .flat_map(|l| &l.line)
        .map(|l| {
            let f = p.function.iter().find(|f| f.id == l.function_id).unwrap();
            (format!("{} {}", s(f.name), s(f.filename)), l.line)
        })
        .collect();
    assert!(lines.contains(&("com.real.app.Views.inflate Views.java".to_owned(), 7)), "{lines:?}");
    assert!(lines.contains(&("com.real.app.HomeActivity.title HomeActivity.java".to_owned(), 14)), "{lines:?}");
}

/// DDM allocation records with an R8 outline: the outline frame (`Cache.put` at position 52)
/// is dropped, and its caller `Loader.run`, which has no line, takes the call site the
/// outline's position names (obfuscated line 9, original line 77).
#[test]
fn ddm_capture_outline_frame_moves_the_callers_line() {
    let alloc = data("ddm/art.alloc");
    let map = data("proguard/ddm_outline.map");
    let (a, m) = (alloc.to_str().unwrap(), map.to_str().unwrap());
    let out = heapconv_ok(&["convert", a, "--to", "folded", "-o", "-", "--proguard-map", m], 0);
    let folded = String::from_utf8_lossy(&out.stdout);
    assert!(folded.contains("\ncom.real.app.Loader.run(Loader.java:77);com.example.app.Cache$Node 16"), "{folded}");
    // The outline frame itself is gone from every stack (its class still names `Cache.grow`,
    // a method the map does not list, in the other stack).
    assert!(!folded.contains("outline0") && !folded.contains(".put("), "{folded}");
}

/// Heap graphs: `heapconv hprof --proguard-map PACKAGE=FILE` writes a dump with the source's
/// class and field names (the process's package picks the map); `convert` shows them; a map
/// for another package leaves the names.
#[test]
fn heap_graph_hprof_written_deobfuscated() {
    let trace = data("heapgraph/shapes.pftrace");
    let spec = format!("com.example.shapes={}", data("proguard/shapes.map").display());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shapes.hprof");
    let t = trace.to_str().unwrap();
    let run = heapconv_ok(&["hprof", t, "-o", out.to_str().unwrap(), "--proguard-map", &spec], 0);
    assert!(String::from_utf8_lossy(&run.stderr).contains("heap dump classes and fields of com.example.shapes"));
    let bytes = std::fs::read(&out).unwrap();
    let (d, _) =
        read_hprof_dump(&bytes[..], "shapes.hprof", &HprofReadOptions::default(), HprofDumpSelect::Last).unwrap();
    let node = class(&d, "com.real.shapes.TreeNode");
    let leaf = class(&d, "com.real.shapes.Leaf");
    let names = |c: usize| -> Vec<&str> { d.classes[c].fields.iter().map(|f| d.field_name(f.name)).collect() };
    assert!(names(node).contains(&"nextNode") && names(node).contains(&"children"), "{:?}", names(node));
    assert!(names(leaf).contains(&"tallies"), "{:?}", names(leaf));
    assert!(d.classes[node].static_refs.iter().any(|&(f, _)| d.field_name(f) == "ROOT"));
    assert!(!d.classes.iter().any(|c| c.name == "com.example.Node"));
    let folded = heapconv_ok(&["convert", t, "--to", "folded", "-o", "-", "--proguard-map", &spec], 0);
    assert!(String::from_utf8_lossy(&folded.stdout).contains("com.real.shapes.TreeNode [ROOT_JNI_LOCAL] 24"));
    let other = format!("org.other={}", data("proguard/shapes.map").display());
    let plain = heapconv_ok(&["convert", t, "--to", "folded", "-o", "-", "--proguard-map", &other], 0);
    assert!(String::from_utf8_lossy(&plain.stdout).contains("com.example.Node [ROOT_JNI_LOCAL] 24"));
    assert!(String::from_utf8_lossy(&plain.stderr).contains("matched nothing"));
}

/// `heapconv deobfuscate` writes DeobfuscationMapping packets that Google's Perfetto schema
/// (PyPI `perfetto`) reads: package, classes, fields, methods with R8 line ranges, a method
/// inlined from another class fully qualified; the trace plus the packets is still a trace.
#[test]
fn deobfuscate_writes_perfetto_deobfuscation_mapping_packets() {
    let Some((py, _)) = perfetto_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mapping.pb");
    let feed = format!("com.example.feed={}", data("proguard/art_frames.map").display());
    let shapes = format!("com.example.shapes={}", data("proguard/shapes.map").display());
    let trace = data("art_frames.pftrace");
    heapconv_ok(
        &[
            "deobfuscate",
            trace.to_str().unwrap(),
            "--proguard-map",
            &feed,
            "--proguard-map",
            &shapes,
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let script = r#"
import sys, json
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as p
t = p.Trace(); t.ParseFromString(open(sys.argv[1], "rb").read())
out = []
for pk in t.packet:
    m = pk.deobfuscation_mapping
    out.append([m.package_name, [[c.obfuscated_name, c.deobfuscated_name,
        [[f.obfuscated_name, f.deobfuscated_name] for f in c.obfuscated_members],
        [[f.obfuscated_name, f.deobfuscated_name, f.obfuscated_line_start, f.obfuscated_line_end,
          f.source_line_start, f.source_line_end] for f in c.obfuscated_methods]] for c in m.obfuscated_classes]])
print(json.dumps(out))
"#;
    let o = Command::new(&py).arg("-c").arg(script).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let want = serde_json::json!([
        [
            "com.example.feed",
            [
                [
                    "com.example.feed.Feed",
                    "com.real.feed.FeedController",
                    [],
                    [
                        ["refresh", "refreshAll", 1, 5, 30, 34],
                        ["parse", "com.real.feed.Parser.parseOne", 1, 1, 12, 12],
                        ["parse", "parseAll", 1, 1, 50, 50]
                    ]
                ],
                [
                    "com.example.feed.Hot",
                    "com.real.feed.HotLoop",
                    [],
                    [["loop", "spin", 0, 0, 0, 0], ["loop", "spinFast", 0, 0, 0, 0]]
                ]
            ]
        ],
        [
            "com.example.shapes",
            [
                [
                    "com.example.Node",
                    "com.real.shapes.TreeNode",
                    [["next", "nextNode"], ["items", "children"], ["sRoot", "ROOT"]],
                    []
                ],
                ["com.example.Sub", "com.real.shapes.Leaf", [["counts", "tallies"]], []]
            ]
        ]
    ]);
    assert_eq!(got, want);
}

/// `cat trace mapping > t2`: the name `heapconv deobfuscate` wrote for `--proguard-map`.
fn with_mapping_packets(dir: &Path, trace: &Path, specs: &[String]) -> PathBuf {
    let packets = dir.join("mapping.pb");
    let mut args = vec!["deobfuscate".to_owned(), trace.display().to_string()];
    for s in specs {
        args.extend(["--proguard-map".to_owned(), s.clone()]);
    }
    args.extend(["-o".to_owned(), packets.display().to_string()]);
    heapconv_ok(&args.iter().map(String::as_str).collect::<Vec<_>>(), 0);
    let mut both = std::fs::read(trace).unwrap();
    both.extend(std::fs::read(&packets).unwrap());
    let cat = dir.join(format!("with-mapping-{}.pftrace", specs.len()));
    std::fs::write(&cat, both).unwrap();
    cat
}

/// DeobfuscationMapping packets already in a trace are applied as trace processor applies
/// them: heapprofd Java frames (package from the mapping path) and heap graph classes and
/// fields come out as with the same map given as `--proguard-map`.
#[test]
fn mapping_packets_in_a_trace_apply_like_map_files() {
    let dir = tempfile::tempdir().unwrap();
    let folded = |t: &Path, extra: &[&str]| -> String {
        let mut args = vec!["convert", t.to_str().unwrap(), "--to", "folded", "-o", "-"];
        args.extend_from_slice(extra);
        String::from_utf8(heapconv_ok(&args, 0).stdout).unwrap()
    };
    // heapprofd frames.
    let trace = data("art_frames.pftrace");
    let feed = format!("com.example.feed={}", data("proguard/art_frames.map").display());
    let cat = with_mapping_packets(dir.path(), &trace, std::slice::from_ref(&feed));
    let from_packets = folded(&cat, &[]);
    let from_map = folded(&trace, &["--proguard-map", &feed]);
    assert_eq!(from_packets, from_map);
    assert!(from_packets.contains(";com.real.feed.FeedController.refreshAll [aot];"), "{from_packets}");
    assert!(from_packets.contains(";com.real.feed.HotLoop.spin | com.real.feed.HotLoop.spinFast [jit];"));
    assert!(!from_packets.contains("com.example.feed.Feed."), "{from_packets}");
    // pprof too.
    let pb = dir.path().join("p.pb.gz");
    heapconv_ok(&["convert", cat.to_str().unwrap(), "-o", pb.to_str().unwrap()], 0);
    assert!(read_pprof(&pb).string_table.iter().any(|s| s == "com.real.feed.FeedController.refreshAll [aot]"));
    // Java heap graph: classes and fields.
    let graph = data("heapgraph/shapes.pftrace");
    let shapes = format!("com.example.shapes={}", data("proguard/shapes.map").display());
    let gdir = tempfile::tempdir().unwrap();
    let gcat = with_mapping_packets(gdir.path(), &graph, &[feed.clone(), shapes.clone()]);
    let from_packets = folded(&gcat, &[]);
    assert_eq!(from_packets, folded(&graph, &["--proguard-map", &shapes]));
    assert!(from_packets.contains("com.real.shapes.TreeNode [ROOT_JNI_LOCAL] 24"), "{from_packets}");
    let out = gdir.path().join("shapes.hprof");
    heapconv_ok(&["hprof", gcat.to_str().unwrap(), "-o", out.to_str().unwrap()], 0);
    let bytes = std::fs::read(&out).unwrap();
    let (d, _) =
        read_hprof_dump(&bytes[..], "shapes.hprof", &HprofReadOptions::default(), HprofDumpSelect::Last).unwrap();
    let node = class(&d, "com.real.shapes.TreeNode");
    let names: Vec<&str> = d.classes[node].fields.iter().map(|f| d.field_name(f.name)).collect();
    assert!(names.contains(&"nextNode") && names.contains(&"children"), "{names:?}");
}

/// Several packets for one package: every one applies, and a class or member named again takes
/// the later packet's name (trace processor applies the packets in order, each overwriting).
#[test]
fn later_mapping_packets_overwrite_earlier_ones() {
    use heapconv::model::deobfuscation::{DeobfuscationTable, ObfuscatedClass, ObfuscatedMember};
    use heapconv::symbolize::proguard::MapSpec;
    let m = |o: &str, d: &str| ObfuscatedMember {
        obfuscated: o.into(),
        deobfuscated: d.into(),
        obfuscated_lines: None,
        source_lines: None,
    };
    let t = |classes: Vec<ObfuscatedClass>| DeobfuscationTable { package: "com.app".into(), classes };
    let c = |o: &str, d: &str, methods: Vec<ObfuscatedMember>| ObfuscatedClass {
        obfuscated: o.into(),
        deobfuscated: d.into(),
        fields: vec![m("f", "field")],
        methods,
    };
    let tables = vec![
        t(vec![c("a.a", "com.Old", vec![m("x", "first"), m("y", "keep")]), c("a.b", "com.Other", vec![])]),
        t(vec![c("a.a", "com.New", vec![m("x", "second")])]),
    ];
    let no_specs: [MapSpec; 0] = [];
    let d = Deobfuscator::with_trace_tables(&no_specs, "t", tables).unwrap();
    assert_eq!(d.maps().len(), 1);
    let s = d.session();
    let i = d.pick(Some("com.app")).unwrap();
    let r = s.retracer(i);
    assert_eq!(r.class_name("a.a").as_deref(), Some("com.New"));
    assert_eq!(r.class_name("a.b").as_deref(), Some("com.Other"));
    let f = r.frame("a.a", "x", None).unwrap();
    assert_eq!((f.frames[0].class.as_str(), f.frames[0].method.as_str(), f.frames.len()), ("com.New", "second", 1));
    assert_eq!(r.frame("a.a", "y", None).unwrap().frames[0].method, "keep");
    assert_eq!(r.field_names("a.a", "f"), Some(vec!["field".to_owned()]));
}
