//! Deobfuscation with ProGuard/R8 mapping files: heapconv's frames against ProGuard's own
//! ReTrace on a map ProGuard wrote for a real program, heap dumps of that program, and
//! heapprofd Java frames of a trace.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use heapconv::decode::hprof::walk::{HprofStream, SubRecord};
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
    // heapconv's member-line reader reads the real map as its oracle, the `proguard` crate, does.
    let lines = heapconv::symbolize::proguard::member_lines_as_the_crate_reads_them(&map_text).unwrap();
    assert!(lines > 20, "{lines} lines");
    let frames = frames_of_map(&map_text, &std::fs::read_to_string(&app.stacks).unwrap());
    assert!(frames.len() > 20, "{} frames", frames.len());
    let expected = retrace_blocks(&cp, &app.map, &frames, dir.path());
    assert_eq!(expected.len(), frames.len());
    let map = ProguardMap::open(&app.map, None).unwrap();
    let r = Retracer::new(&map);
    let mut chains = 0;
    for (f, want) in frames.iter().zip(&expected) {
        let got: Vec<(String, String, u32)> = match r.frame(&f.0, &f.1, Some(f.2)) {
            Some(t) => t.frames.into_iter().map(|o| (o.class.into_owned(), o.method.into_owned(), o.line)).collect(),
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

/// Every value of a dump, by id, as its bytes: instances (class id, field bytes), object and
/// primitive arrays, and each class dump's constants and static values (names left out).
#[derive(Debug, Default, PartialEq, Eq)]
struct Values {
    instances: BTreeMap<u64, (u64, Vec<u8>)>,
    object_arrays: BTreeMap<u64, (u64, Vec<u64>)>,
    primitive_arrays: BTreeMap<u64, (u8, Vec<u8>)>,
    statics: BTreeMap<u64, (u64, Vec<(u8, u64)>)>,
}

/// A dump read with heapconv's streaming reader: its values, and its names as
/// (class name as the file spells it → (static field names, instance field names)).
type Names = BTreeMap<String, (Vec<String>, Vec<String>)>;

fn walk(bytes: &[u8]) -> (Values, Names) {
    let mut s = HprofStream::new(bytes, "t.hprof").unwrap();
    let id = usize::from(s.header().id_size);
    let be = |b: &[u8]| b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x));
    let mut v = Values::default();
    let mut strings: HashMap<u64, String> = HashMap::new();
    let mut class_names: HashMap<u64, u64> = HashMap::new();
    let mut fields: HashMap<u64, (Vec<u64>, Vec<u64>)> = HashMap::new();
    while let Some(r) = s.next_record().unwrap() {
        match r.tag {
            0x01 => {
                let b = s.body().unwrap();
                strings.insert(be(&b[..id]), String::from_utf8_lossy(&b[id..]).into_owned());
            }
            0x02 => {
                let b = s.body().unwrap();
                class_names.insert(be(&b[4..4 + id]), be(&b[8 + id..8 + 2 * id]));
            }
            _ => {
                while let Some(sr) = s.next_sub().unwrap() {
                    match sr.record {
                        SubRecord::Class(c) => {
                            let statics = c.statics().map(|f| (f.ty as u8, f.value)).collect();
                            v.statics.insert(c.id, (c.super_id, statics));
                            fields.insert(
                                c.id,
                                (c.statics().map(|f| f.name).collect(), c.fields().map(|f| f.0).collect()),
                            );
                        }
                        SubRecord::Instance(o) => {
                            v.instances.insert(o.id, (o.class_id, o.data.to_vec()));
                        }
                        SubRecord::ObjectArray(a) => {
                            v.object_arrays.insert(a.id, (a.class_id, a.ids().collect()));
                        }
                        SubRecord::PrimitiveArray(a) => {
                            let (aid, ty) = (a.id, a.ty as u8);
                            let data = match a.data {
                                Some(d) => d.to_vec(),
                                None => {
                                    let mut d = Vec::new();
                                    s.copy_payload(&mut d).unwrap();
                                    d
                                }
                            };
                            v.primitive_arrays.insert(aid, (ty, data));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    let name = |sid: &u64| strings.get(sid).cloned().unwrap_or_default();
    let names = class_names
        .iter()
        .map(|(cid, sid)| {
            let (st, fs) = fields.get(cid).cloned().unwrap_or_default();
            (name(sid), (st.iter().map(name).collect(), fs.iter().map(name).collect()))
        })
        .collect();
    (v, names)
}

/// The values of int field `field` (after the deobfuscated names) in every instance of `class`
/// (a class whose superclass declares no fields).
fn int_field(bytes: &[u8], class: &str, field: &str) -> Vec<i32> {
    let id = HprofStream::new(bytes, "t.hprof").unwrap().header().id_size;
    let (v, names) = walk(bytes);
    let (_, fields) = &names[class];
    // The class id: the one whose dump has these field names.
    let mut s2 = HprofStream::new(bytes, "t.hprof").unwrap();
    let mut layout = None;
    let mut class_id = None;
    let mut strings: HashMap<u64, String> = HashMap::new();
    let mut by_name: HashMap<String, u64> = HashMap::new();
    let be = |b: &[u8]| b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x));
    let n = usize::from(id);
    while let Some(r) = s2.next_record().unwrap() {
        match r.tag {
            0x01 => {
                let b = s2.body().unwrap();
                strings.insert(be(&b[..n]), String::from_utf8_lossy(&b[n..]).into_owned());
            }
            0x02 => {
                let b = s2.body().unwrap();
                by_name.insert(strings[&be(&b[8 + n..8 + 2 * n])].clone(), be(&b[4..4 + n]));
            }
            _ => {
                while let Some(sr) = s2.next_sub().unwrap() {
                    if let SubRecord::Class(c) = sr.record {
                        if Some(&c.id) == by_name.get(class) {
                            class_id = Some(c.id);
                            layout = Some(c.fields().map(|(_, t)| t).collect::<Vec<_>>());
                        }
                    }
                }
            }
        }
    }
    let (class_id, layout) = (class_id.expect("class dumped"), layout.unwrap());
    let k = fields.iter().position(|f| f == field).unwrap_or_else(|| panic!("{class} has no {field}: {fields:?}"));
    let at: usize = layout[..k].iter().map(|t| usize::from(t.size(id))).sum();
    let mut out: Vec<i32> = v
        .instances
        .values()
        .filter(|(c, _)| *c == class_id)
        .map(|(_, d)| i32::from_be_bytes(d[at..at + 4].try_into().unwrap()))
        .collect();
    out.sort();
    out
}

/// `hprof-conv --proguard-map`: the dump is rewritten as it streams by with source class and
/// field names (read back with heapconv's readers), and every value is the input's, byte for
/// byte: instance fields, statics, object and primitive arrays. The output is the input plus
/// the new STRING records; standard input works; `-z` is accepted.
#[test]
fn hprof_conv_writes_a_deobfuscated_dump() {
    let dir = tempfile::tempdir().unwrap();
    let Some((app, _)) = obfuscated_app(dir.path()) else { return };
    let out = dir.path().join("deob.hprof");
    let (hprof, map) = (app.hprof.to_str().unwrap(), app.map.to_str().unwrap());
    let run = heapconv_ok(&["hprof-conv", hprof, out.to_str().unwrap(), "--proguard-map", map], 0);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains(&format!("with {map} ")) && stderr.contains("heap dump classes, fields and stack frames"),
        "{stderr}"
    );
    let input = std::fs::read(&app.hprof).unwrap();
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
    // The values: the same as the input's, and the prices the program set, under their names.
    let (vin, nin) = walk(&input);
    let (vout, nout) = walk(&bytes);
    assert_eq!(vin, vout, "values differ");
    assert!(vin.primitive_arrays.len() > 100 && vin.instances.len() > 1000, "a real heap");
    // Three Items of the Inventory (0, 10, 20), four of the Cache (0 to 3).
    assert_eq!(int_field(&bytes, "com/example/deob/Item", "itemPrice"), [0, 0, 1, 2, 3, 10, 20]);
    assert_eq!(int_field(&bytes, "com/example/deob/Inventory", "itemCount"), [3]);
    // (ProGuard removed itemName, never read; HotSpot lists fields in its own order.)
    let mut item_fields = nout["com/example/deob/Item"].1.clone();
    item_fields.sort();
    assert_eq!(item_fields, ["itemPrice", "next"]);
    assert!(nin.contains_key("com/example/deob/b") && !nout.contains_key("com/example/deob/b"));
    assert_eq!(nin["java/lang/String"], nout["java/lang/String"]);
    // STRING records were added (and STACK_FRAMEs for an inline chain): every other record is
    // the input's, in order.
    let summary: serde_json::Value = {
        let o = heapconv_ok(&["inspect", out.to_str().unwrap(), "--json"], 0);
        serde_json::from_slice(&o.stdout).unwrap()
    };
    assert!(summary.to_string().contains("STRING"), "{summary}");
    let added = bytes.len() - input.len();
    assert!(added > 0 && added < 4096, "{added} bytes added");
    // From standard input, and with -z (a HotSpot dump has no zygote heap: the same bytes).
    let piped = Command::new(env!("CARGO_BIN_EXE_heapconv"))
        .args(["hprof-conv", "-", "-", "-z", "--proguard-map", map])
        .stdin(std::fs::File::open(&app.hprof).unwrap())
        .output()
        .unwrap();
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    assert!(piped.stdout == bytes, "stdin + -z differs from the file run");
    // Without a map, a standard-format dump is refused as before.
    heapconv_ok(&["hprof-conv", hprof, dir.path().join("x.hprof").to_str().unwrap()], 1);
}

/// One frame of an hprof `STACK_TRACE`: (class, method, source file, line), the class as a
/// Java name.
type HprofFrame = (String, String, String, i32);

/// The `STACK_TRACE`s of an hprof file, each frame resolved through its `STACK_FRAME`,
/// `LOAD_CLASS` and `STRING` records (innermost frame first, as the file lists them).
fn stack_traces(bytes: &[u8]) -> Vec<Vec<HprofFrame>> {
    let names = heapconv::decode::hprof::scan_hprof_names(bytes, "t.hprof").unwrap();
    let class_of: HashMap<u64, u64> = names.load_classes.iter().copied().collect();
    let text = |sid: u64| names.strings.get(&sid).cloned().unwrap_or_default();
    let frames: HashMap<u64, HprofFrame> = names
        .frames
        .iter()
        .map(|f| {
            let class = names.class_serials.get(&f.class_serial).and_then(|c| class_of.get(c)).copied();
            let class = heapconv::decode::hprof::java_class_name(&class.map(text).unwrap_or_default());
            (f.id, (class, text(f.method), text(f.source), f.line))
        })
        .collect();
    let id = usize::from(names.id_size);
    let be = |b: &[u8]| b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x));
    let mut s = HprofStream::new(bytes, "t.hprof").unwrap();
    let mut out = Vec::new();
    while let Some(r) = s.next_record().unwrap() {
        if r.tag == 0x05 {
            let b = s.body().unwrap();
            let n = be(&b[8..12]) as usize;
            assert_eq!(b.len(), 12 + n * id, "a STACK_TRACE's length");
            out.push(b[12..].chunks(id).map(|f| frames[&be(f)].clone()).collect());
        } else {
            while s.next_sub().unwrap().is_some() {}
        }
    }
    out
}

/// `hprof-conv --proguard-map` renames the methods of the dump's stack frames (HotSpot writes
/// one `STACK_TRACE` per thread): each obfuscated frame becomes what ProGuard's ReTrace prints
/// for it (an inline chain becomes several frames, each with its class, method and line), every
/// other frame is kept; `top --json` and `hprof --json` carry the report with its per-kind
/// counts.
#[test]
fn hprof_conv_renames_stack_frames_as_retrace_does() {
    let dir = tempfile::tempdir().unwrap();
    let Some((app, cp)) = obfuscated_app(dir.path()) else { return };
    let out = dir.path().join("deob.hprof");
    let (hprof, map) = (app.hprof.to_str().unwrap(), app.map.to_str().unwrap());
    let run = heapconv_ok(&["hprof-conv", hprof, out.to_str().unwrap(), "--proguard-map", map], 0);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("heap dump classes, fields and stack frames"), "{stderr}");
    let input = std::fs::read(&app.hprof).unwrap();
    let before = stack_traces(&input);
    let after = stack_traces(&std::fs::read(&out).unwrap());
    assert_eq!(before.len(), after.len(), "one STACK_TRACE per thread, as before");
    // The main thread's frames, as the dump holds them and as ReTrace deobfuscates them.
    let main = before.iter().position(|t| t.iter().any(|f| f.1 == "main")).expect("the main thread");
    let queries: Vec<(String, String, u32)> =
        before[main].iter().map(|f| (f.0.clone(), f.1.clone(), f.3.max(0) as u32)).collect();
    assert!(queries.iter().any(|q| q.0 == "com.example.deob.d"), "an obfuscated frame: {queries:?}");
    let retraced = retrace_blocks(&cp, &app.map, &queries, dir.path());
    let mut expected: Vec<(String, String, i32)> = Vec::new();
    for (f, want) in before[main].iter().zip(&retraced) {
        if f.0.starts_with("com.example.deob.") {
            expected.extend(want.iter().map(|(c, m, l)| (c.clone(), m.clone(), *l as i32)));
        } else {
            expected.push((f.0.clone(), f.1.clone(), f.3));
        }
    }
    let got: Vec<(String, String, i32)> = after[main]
        .iter()
        .map(|(c, m, _, l)| match m.rsplit_once('.') {
            Some((c2, m2)) => (c2.to_owned(), m2.to_owned(), *l),
            None => (c.clone(), m.clone(), *l),
        })
        .collect();
    assert_eq!(got, expected, "the main thread's frames");
    // tests/data/proguard/DeobApp.java: dumpFrom (renamed `a`), dumpVia (inlined into main).
    let names: Vec<String> = got.iter().map(|(c, m, l)| format!("{c}.{m}:{l}")).collect();
    for want in [
        "com.example.deob.Tracer.dumpFrom:123",
        "com.example.deob.Tracer.dumpVia:118",
        "com.example.deob.DeobApp.main:31",
    ] {
        assert!(names.contains(&want.to_owned()), "{want} in {names:?}");
    }
    // The other threads (JDK frames only) are unchanged.
    for (k, (b, a)) in before.iter().zip(&after).enumerate() {
        if k != main {
            assert_eq!(b, a, "thread {k}");
        }
    }
    // The values are the input's.
    assert_eq!(walk(&input).0, walk(&std::fs::read(&out).unwrap()).0, "values differ");
    // `top --json` has the report: frames are not read by `top` (classes and fields are).
    let top = heapconv_ok(&["top", hprof, "--json", "--proguard-map", map], 0);
    let doc: serde_json::Value = serde_json::from_slice(&top.stdout).unwrap();
    let d = &doc["deobfuscation"];
    assert_eq!(d["maps"][0]["map"], map, "{d}");
    assert!(d["maps"][0]["deobfuscated_by_kind"]["classes"].as_u64().unwrap() >= 4, "{d}");
    assert!(d["maps"][0]["deobfuscated_by_kind"]["fields"].as_u64().unwrap() >= 4, "{d}");
    assert_eq!(d["maps"][0]["deobfuscated_by_kind"]["frames"], 0, "{d}");
    let kinds = &d["maps"][0]["deobfuscated_by_kind"];
    let sum: u64 = ["frames", "classes", "fields"].iter().map(|k| kinds[k].as_u64().unwrap()).sum();
    assert_eq!(d["maps"][0]["deobfuscated"].as_u64(), Some(sum), "{d}");
    let stderr = String::from_utf8_lossy(&top.stderr);
    assert!(stderr.contains(&format!("{} classes, ", kinds["classes"])), "{stderr}");
    // Without a map: no key, the bytes of before.
    let plain = heapconv_ok(&["top", hprof, "--json"], 0);
    let plain_doc: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(plain_doc.get("deobfuscation").is_none());
    let mut doc = doc;
    doc.as_object_mut().unwrap().remove("deobfuscation");
    assert_eq!(doc["classes"].as_array().unwrap().len(), plain_doc["classes"].as_array().unwrap().len());
}

/// An Android dump with a thread's stack trace (frames of `com.example.Node`, spliced in after
/// the header as ART writes them): Android's `hprof-conv` converts it, and `hprof-conv
/// --proguard-map` writes the same values with the frames renamed: a method at a line, and an
/// inline chain whose outer method comes from a class the dump does not load (qualified).
#[test]
fn hprof_conv_renames_the_frames_of_an_android_dump() {
    let dir = tempfile::tempdir().unwrap();
    let (sample, _) = heapconv_testdata::hprof::android_sample(4, false);
    let names = heapconv::decode::hprof::scan_hprof_names(&sample[..], "a").unwrap();
    let node = names.load_classes.iter().find(|(_, n)| names.strings[n] == "com.example.Node").unwrap().0;
    let serial = *names.class_serials.iter().find(|(_, c)| **c == node).unwrap().0;
    let rec = |tag: u8, body: Vec<u8>| {
        let mut r = vec![tag, 0, 0, 0, 0];
        r.extend_from_slice(&(body.len() as u32).to_be_bytes());
        r.extend(body);
        r
    };
    let next = names.strings.keys().max().unwrap() + 1;
    let mut add = Vec::new();
    for (sid, text) in [(next, "a"), (next + 1, "b"), (next + 2, "SourceFile"), (next + 3, "()V")] {
        let mut b = (sid as u32).to_be_bytes().to_vec();
        b.extend_from_slice(text.as_bytes());
        add.extend(rec(0x01, b));
    }
    for (fid, method, line) in [(0x71u32, next, 2i32), (0x72, next + 1, 7), (0x73, next, -3)] {
        let mut b = Vec::new();
        for v in [fid, method as u32, (next + 3) as u32, (next + 2) as u32, serial] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(&line.to_be_bytes());
        add.extend(rec(0x04, b));
    }
    let mut trace = Vec::new();
    for v in [1u32, 1, 3, 0x71, 0x72, 0x73] {
        trace.extend_from_slice(&v.to_be_bytes());
    }
    add.extend(rec(0x05, trace));
    let head = "JAVA PROFILE 1.0.3".len() + 1 + 12;
    let mut bytes = sample[..head].to_vec();
    bytes.extend(add);
    bytes.extend_from_slice(&sample[head..]);
    let inp = dir.path().join("a.hprof");
    std::fs::write(&inp, &bytes).unwrap();
    let map = dir.path().join("m.txt");
    std::fs::write(
        &map,
        "com.real.TreeNode -> com.example.Node:\n    1:5:void build():20:24 -> a\n    6:9:void inner():3:3 -> b\n    6:9:void com.real.Util.helper():44 -> b\n",
    )
    .unwrap();
    let ours = dir.path().join("ours.hprof");
    heapconv_ok(
        &["hprof-conv", inp.to_str().unwrap(), ours.to_str().unwrap(), "--proguard-map", map.to_str().unwrap()],
        0,
    );
    let ours = std::fs::read(&ours).unwrap();
    let mut conv = std::io::Cursor::new(Vec::new());
    heapconv::decode::hprof::hprof_conv(&bytes[..], "a", &mut conv, &Default::default()).unwrap();
    let plain = conv.into_inner();
    if let Some(oracle) = hprof_conv() {
        let theirs = dir.path().join("theirs.hprof");
        assert!(Command::new(oracle).arg(&inp).arg(&theirs).status().unwrap().success());
        assert!(std::fs::read(&theirs).unwrap() == plain, "hprof-conv's output");
    }
    assert_eq!(walk(&plain).0, walk(&ours).0, "values differ from hprof-conv's");
    let before = stack_traces(&plain);
    let k = before.iter().position(|t| t.len() == 3).expect("the spliced trace");
    assert_eq!(before[k].iter().map(|f| f.1.as_str()).collect::<Vec<_>>(), ["a", "b", "a"]);
    let after = stack_traces(&ours);
    assert_eq!(after.len(), before.len());
    let got: Vec<(&str, &str, &str, i32)> =
        after[k].iter().map(|(c, m, f, l)| (c.as_str(), m.as_str(), f.as_str(), *l)).collect();
    assert_eq!(
        got[..3],
        [
            ("com.real.TreeNode", "build", "TreeNode.java", 21),
            ("com.real.TreeNode", "inner", "TreeNode.java", 3),
            ("com.real.TreeNode", "com.real.Util.helper", "Util.java", 44),
        ]
    );
    // A native frame (line -3) asks without a line: the method's only candidate.
    assert_eq!((got[3].0, got[3].1), ("com.real.TreeNode", "build"), "{got:?}");
    // The sample's own trace keeps its frames (`Node.run`, a method the map does not name),
    // its class renamed as every use of the class is.
    for (j, (b, a)) in before.iter().zip(&after).enumerate() {
        if j != k {
            let renamed: Vec<HprofFrame> = b
                .iter()
                .map(|f| {
                    let c = if f.0 == "com.example.Node" { "com.real.TreeNode".to_owned() } else { f.0.clone() };
                    (c, f.1.clone(), f.2.clone(), f.3)
                })
                .collect();
            assert_eq!(*a, renamed);
        }
    }
}

/// An Android dump (1.0.3, 4-byte ids, zygote and image heaps): `hprof-conv --proguard-map`
/// writes what Android's `hprof-conv` writes, values for values, with `com.example.Node` and
/// its fields renamed; its `next`, whose string `FinalizerReference.next` shares, is renamed
/// in Node only; with `-z` the same objects are left out as by `hprof-conv -z`.
#[test]
fn hprof_conv_deobfuscates_an_android_dump_like_hprof_conv_converts_it() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = heapconv_testdata::hprof::android_sample(4, false);
    let inp = dir.path().join("a.hprof");
    std::fs::write(&inp, &bytes).unwrap();
    let map = dir.path().join("m.txt");
    std::fs::write(
        &map,
        "com.real.TreeNode -> com.example.Node:\n    com.real.TreeNode nextNode -> next\n    java.lang.String title -> label\n    int liveCount -> sCount\n",
    )
    .unwrap();
    for z in [false, true] {
        let ours = dir.path().join(format!("ours{z}.hprof"));
        let mut args = vec!["hprof-conv", inp.to_str().unwrap(), ours.to_str().unwrap(), "--proguard-map"];
        args.push(map.to_str().unwrap());
        if z {
            args.push("-z");
        }
        heapconv_ok(&args, 0);
        let ours = std::fs::read(&ours).unwrap();
        assert!(ours.starts_with(b"JAVA PROFILE 1.0.2\0"));
        let mut conv = std::io::Cursor::new(Vec::new());
        let opts = heapconv::decode::hprof::HprofConvOptions { app_only: z, ..Default::default() };
        heapconv::decode::hprof::hprof_conv(&bytes[..], "a", &mut conv, &opts).unwrap();
        let plain = conv.into_inner();
        if let Some(oracle) = hprof_conv() {
            let theirs = dir.path().join(format!("theirs{z}.hprof"));
            let mut cmd = Command::new(oracle);
            if z {
                cmd.arg("-z");
            }
            assert!(cmd.arg(&inp).arg(&theirs).status().unwrap().success());
            assert!(std::fs::read(&theirs).unwrap() == plain, "hprof-conv's output");
        }
        let (vp, np) = walk(&plain);
        let (vo, no) = walk(&ours);
        assert_eq!(vp, vo, "-z {z}: values differ from hprof-conv's");
        assert_eq!(no["com.real.TreeNode"].1, ["nextNode", "value", "title"]);
        assert_eq!(no["java.lang.ref.FinalizerReference"].1, ["next"]);
        assert!(no["com.real.TreeNode"].0.contains(&"liveCount".to_owned()), "{:?}", no["com.real.TreeNode"]);
        assert_eq!(no["com.real.TreeNode[]"], np["com.example.Node[]"]);
        assert_eq!(no["java.lang.ref.Reference"], np["java.lang.ref.Reference"]);
        assert!(!no.contains_key("com.example.Node"));
    }
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
    let run = heapconv_ok(&["hprof", t, "-o", out.to_str().unwrap(), "--proguard-map", &spec, "--json"], 0);
    assert!(String::from_utf8_lossy(&run.stderr).contains("heap dump classes and fields of com.example.shapes"));
    // `--json`: each file written, with the run's deobfuscation report (the batch summary's).
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let d = &doc[0]["deobfuscation"];
    assert_eq!(d["maps"][0]["package"], "com.example.shapes", "{d}");
    assert!(
        d["maps"][0]["used_for"][0].as_str().unwrap().starts_with("heap dump classes and fields of com.example.shapes"),
        "{d}"
    );
    let kinds = &d["maps"][0]["deobfuscated_by_kind"];
    assert!(kinds["classes"].as_u64().unwrap() >= 2 && kinds["fields"].as_u64().unwrap() >= 3, "{d}");
    assert_eq!(kinds["frames"], 0, "{d}");
    let plain = heapconv_ok(&["hprof", t, "-o", dir.path().join("plain.hprof").to_str().unwrap(), "--json"], 0);
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(plain[0].get("deobfuscation").is_none(), "{plain}");
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
    let run = heapconv_ok(&["hprof", gcat.to_str().unwrap(), "-o", out.to_str().unwrap(), "--json"], 0);
    // The report names the trace's packets as the map used (no map was given).
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("(DeobfuscationMapping packets for com.example.shapes)"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let used = doc[0]["deobfuscation"]["maps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["package"] == "com.example.shapes")
        .cloned()
        .unwrap_or_default();
    assert!(
        used["map"].as_str().unwrap_or_default().ends_with("(DeobfuscationMapping packets for com.example.shapes)"),
        "{doc}"
    );
    assert!(used["deobfuscated_by_kind"]["classes"].as_u64().unwrap_or(0) >= 2, "{doc}");
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
    assert_eq!((&*f.frames[0].class, &*f.frames[0].method, f.frames.len()), ("com.New", "second", 1));
    assert_eq!(r.frame("a.a", "y", None).unwrap().frames[0].method, "keep");
    assert_eq!(r.field_names("a.a", "f"), Some(vec!["field".to_owned()]));
}

/// `art_frames` made again by the independent encoder (Google's schema) with a
/// `packages_list` (the process's uid 10101 is `com.example.feed`) and `Feed.refresh` in a
/// mapping whose path names no package (`/data/dalvik-cache/arm64/base.odex`).
fn packaged_trace(dir: &Path) -> Option<PathBuf> {
    let (py, tool) = perfetto_python()?;
    let text = std::fs::read_to_string(data("art_frames.textproto")).unwrap();
    let m4 = "path_string_ids: 15 path_string_ids: 16 path_string_ids: 17 path_string_ids: 18 path_string_ids: 19 path_string_ids: 11 path_string_ids: 20 }";
    assert!(text.contains(m4));
    let text =
        text.replacen(m4, "path_string_ids: 15 path_string_ids: 24 path_string_ids: 11 path_string_ids: 20 }", 1);
    let text = text.replacen(
        "packet { timestamp: 50 process_tree",
        "packet { timestamp: 40 packages_list { packages { name: \"org.other\" uid: 10200 } packages { name: \"com.example.feed\" uid: 10101 } } }\npacket { timestamp: 50 process_tree",
        1,
    );
    let src = dir.join("guess.textproto");
    std::fs::write(&src, text).unwrap();
    let out = dir.join("guess.pftrace");
    let st = Command::new(py).arg(tool).arg(&src).arg(&out).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    Some(out)
}

fn feed_names(folded: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(folded);
    let mut v: Vec<String> = text
        .split([';', '\n'])
        .filter(|f| f.contains(".Feed") || f.contains("HotLoop") || f.contains(".Hot."))
        .map(|f| f.trim_end_matches(|c: char| c.is_ascii_digit() || c == ' ').to_owned())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Java frames of a trace, as trace processor deobfuscates them: a frame whose mapping names
/// no package takes the package `packages_list` gives the profiled process (two maps given
/// by package: the right one applies); a JIT frame (`/memfd:`) takes the maps of every
/// package; ambiguous names are sorted and joined by " | "; a `DeobfuscationMapping` packet
/// without a package leaves frames alone (heap graphs only), one with a package applies, in
/// a `compressed_packets` bundle and on standard input too; the batch summary says which map
/// did what.
#[test]
fn trace_frames_take_maps_as_trace_processor_applies_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(trace) = packaged_trace(dir.path()) else { return };
    let t = trace.to_str().unwrap();
    let map = data("proguard/art_frames.map");
    let feed = format!("com.example.feed={}", map.display());
    let other = dir.path().join("other.map");
    std::fs::write(&other, "com.real.other.X -> a.b:\n    void y() -> c\n").unwrap();
    let other = format!("org.other={}", other.display());
    let folded = |args: &[&str]| {
        let mut all = vec!["convert", t, "--to", "folded", "-o", "-"];
        all.extend_from_slice(args);
        feed_names(&heapconv_ok(&all, 0).stdout)
    };
    assert_eq!(
        folded(&["--proguard-map", &other, "--proguard-map", &feed]),
        [
            "com.real.feed.FeedController.parseAll [interp]",
            "com.real.feed.FeedController.refreshAll [aot]",
            "com.real.feed.HotLoop.spin | com.real.feed.HotLoop.spinFast [jit]",
        ]
    );
    // Sorted, not in the map's order.
    let zeta = dir.path().join("zeta.map");
    std::fs::write(
        &zeta,
        "com.real.feed.HotLoop -> com.example.feed.Hot:\n    void zeta() -> loop\n    void alpha() -> loop\n",
    )
    .unwrap();
    let zeta_spec = format!("com.example.feed={}", zeta.display());
    assert!(
        folded(&["--proguard-map", &zeta_spec])
            .contains(&"com.real.feed.HotLoop.alpha | com.real.feed.HotLoop.zeta [jit]".to_owned())
    );
    // Packets: without a package, frames stay; with one, they change (plain, bundled, stdin).
    let plain = [
        "com.example.feed.Feed.parse [interp]",
        "com.example.feed.Feed.refresh [aot]",
        "com.example.feed.Hot.loop [jit]",
    ];
    let nopkg = dir.path().join("nopkg.pb");
    heapconv_ok(&["deobfuscate", t, "--proguard-map", map.to_str().unwrap(), "-o", nopkg.to_str().unwrap()], 0);
    let pkg = dir.path().join("pkg.pb");
    heapconv_ok(&["deobfuscate", t, "--proguard-map", &feed, "-o", pkg.to_str().unwrap()], 0);
    let joined = |name: &str, tail: &[u8]| {
        let mut b = std::fs::read(&trace).unwrap();
        b.extend_from_slice(tail);
        let p = dir.path().join(name);
        std::fs::write(&p, b).unwrap();
        p
    };
    let cat_nopkg = joined("nopkg.pftrace", &std::fs::read(&nopkg).unwrap());
    let out = heapconv_ok(&["convert", cat_nopkg.to_str().unwrap(), "--to", "folded", "-o", "-"], 0);
    assert_eq!(feed_names(&out.stdout), plain);
    let deob = [
        "com.real.feed.FeedController.parseAll [interp]",
        "com.real.feed.FeedController.refreshAll [aot]",
        "com.real.feed.HotLoop.spin | com.real.feed.HotLoop.spinFast [jit]",
    ];
    let packets = std::fs::read(&pkg).unwrap();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut z, &packets).unwrap();
    let z = z.finish().unwrap();
    let varint = |mut n: usize, out: &mut Vec<u8>| loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    };
    let mut inner = Vec::new();
    varint(50 << 3 | 2, &mut inner);
    varint(z.len(), &mut inner);
    inner.extend_from_slice(&z);
    let mut bundle = vec![0x0a];
    varint(inner.len(), &mut bundle);
    bundle.extend_from_slice(&inner);
    for (name, tail) in [("pkg.pftrace", packets.clone()), ("bundle.pftrace", bundle)] {
        let p = joined(name, &tail);
        let out = heapconv_ok(&["convert", p.to_str().unwrap(), "--to", "folded", "-o", "-"], 0);
        assert_eq!(feed_names(&out.stdout), deob, "{name}");
        let piped = Command::new(env!("CARGO_BIN_EXE_heapconv"))
            .args(["convert", "-", "--to", "folded", "-o", "-"])
            .stdin(std::fs::File::open(&p).unwrap())
            .output()
            .unwrap();
        assert_eq!(feed_names(&piped.stdout), deob, "{name} on standard input");
        let piped = Command::new(env!("CARGO_BIN_EXE_heapconv"))
            .args(["profile", "-", "-o", dir.path().join(format!("{name}.d")).to_str().unwrap()])
            .stdin(std::fs::File::open(&p).unwrap())
            .output()
            .unwrap();
        assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    }
    // The batch summary: which map did what, and what stayed obfuscated.
    let batch = dir.path().join("in");
    std::fs::create_dir(&batch).unwrap();
    std::fs::copy(&trace, batch.join("guess.pftrace")).unwrap();
    let summary = dir.path().join("summary.json");
    heapconv_ok(
        &[
            "convert",
            batch.to_str().unwrap(),
            "-o",
            dir.path().join("out").to_str().unwrap(),
            "--summary-json",
            summary.to_str().unwrap(),
            "--proguard-map",
            &feed,
            "--proguard-map",
            &other,
        ],
        0,
    );
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    let d = &s["deobfuscation"];
    let used: Vec<&str> = d["maps"][0]["used_for"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(used.contains(&"Java frames of com.example.feed (package from packages_list)"), "{d}");
    assert!(used.contains(&"Java frames in memfd (JIT) of com.example.feed"), "{d}");
    assert_eq!(d["maps"][0]["deobfuscated"], 3, "{d}");
    assert_eq!(d["maps"][1]["deobfuscated"], 0, "{d}");
    // The frames no map named are framework ones (`android.os.Looper.loop`…): not counted
    // (`Deobfuscator::worth_reporting`).
    assert_eq!(d["left_obfuscated"], 0, "{d}");
    assert!(d["left_examples"].as_array().unwrap().is_empty(), "{d}");
    // Without maps, no key.
    let plain_summary = dir.path().join("plain.json");
    heapconv_ok(
        &[
            "convert",
            batch.to_str().unwrap(),
            "-o",
            dir.path().join("out2").to_str().unwrap(),
            "--summary-json",
            plain_summary.to_str().unwrap(),
        ],
        0,
    );
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&plain_summary).unwrap()).unwrap();
    assert!(s.get("deobfuscation").is_none());
}

/// `heapconv hprof --android --proguard-map`: Android's own `hprof-conv` takes the
/// deobfuscated Android dump, and what it writes reads back with the source names.
#[test]
fn android_hprof_conv_accepts_a_deobfuscated_android_dump() {
    let Some(oracle) = hprof_conv() else { return };
    let trace = data("heapgraph/shapes.pftrace");
    let spec = format!("com.example.shapes={}", data("proguard/shapes.map").display());
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("shapes.hprof");
    heapconv_ok(
        &["hprof", trace.to_str().unwrap(), "--android", "-o", ours.to_str().unwrap(), "--proguard-map", &spec],
        0,
    );
    assert!(std::fs::read(&ours).unwrap().starts_with(b"JAVA PROFILE 1.0.3\0"));
    let theirs = dir.path().join("std.hprof");
    let o = Command::new(oracle).arg(&ours).arg(&theirs).output().unwrap();
    assert!(o.status.success(), "hprof-conv: {}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&theirs).unwrap();
    assert!(bytes.starts_with(b"JAVA PROFILE 1.0.2\0"));
    let (d, _) = read_hprof_dump(&bytes[..], "std.hprof", &HprofReadOptions::default(), HprofDumpSelect::Last).unwrap();
    class(&d, "com.real.shapes.TreeNode");
    assert!(!d.classes.iter().any(|c| c.name == "com.example.Node"));
    // And heapconv's own hprof-conv writes the same bytes as Android's.
    let again = dir.path().join("again.hprof");
    heapconv_ok(&["hprof-conv", ours.to_str().unwrap(), again.to_str().unwrap()], 0);
    assert!(std::fs::read(&again).unwrap() == bytes);
}
