//! Helpers shared by the integration tests: running the binary, reading pprof back, and the
//! external oracles (`go tool pprof`), which are mandatory when `HEAPCONV_REQUIRE_ORACLES=1`
//! (as `.ci/run` sets) and otherwise skipped with a message when missing.

#![allow(dead_code, unreachable_pub)]

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use prost::Message;

pub use heapconv::proto::pprof as pp;

/// Repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/data/...`.
pub fn data(rel: &str) -> PathBuf {
    root().join("tests/data").join(rel)
}

/// Runs the heapconv binary.
pub fn heapconv(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_heapconv")).args(args).output().expect("heapconv runs")
}

/// Runs heapconv and asserts exit code `code`.
pub fn heapconv_ok(args: &[&str], code: i32) -> Output {
    exited(heapconv(args), args, code)
}

/// Runs heapconv in `dir` (input names in its outputs are then relative to it) and asserts
/// exit code `code`.
pub fn heapconv_in(dir: &Path, args: &[&str], code: i32) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_heapconv")).args(args).current_dir(dir).output().expect("heapconv runs");
    exited(out, args, code)
}

/// Asserts that the run of heapconv with `args` that gave `out` exited with `code` (showing
/// its output if not); gives `out` back.
fn exited(out: Output, args: &[&str], code: i32) -> Output {
    assert_eq!(
        out.status.code(),
        Some(code),
        "heapconv {args:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A fresh temporary directory, removed when dropped.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temp dir")
}

/// A path as an argument (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A run's standard error, as text.
pub fn stderr_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The names of the entries of `dir`, sorted (temporary files included: a test can check that
/// none is left behind).
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A one-sample pprof (written with the generated protobuf types): one function `name` (leaf)
/// called from `main`, value 7, with the given sample types; each string is in the string table
/// once (a type `""` is string 0, as Go writes it).
pub fn small_pprof(types: &[(&str, &str)], name: &str) -> Vec<u8> {
    use prost::Message;
    let mut strings = vec![String::new(), "main".to_owned(), name.to_owned()];
    let mut index = |s: &str| -> i64 {
        if let Some(i) = strings.iter().position(|x| x == s) {
            return i as i64;
        }
        strings.push(s.to_owned());
        strings.len() as i64 - 1
    };
    let sample_type: Vec<pp::ValueType> =
        types.iter().map(|(t, u)| pp::ValueType { r#type: index(t), unit: index(u) }).collect();
    let function = vec![
        pp::Function { id: 1, name: 1, system_name: 1, ..Default::default() },
        pp::Function { id: 2, name: 2, system_name: 2, ..Default::default() },
    ];
    let line = |f: u64| vec![pp::Line { function_id: f, ..Default::default() }];
    let location = vec![
        pp::Location { id: 1, line: line(1), ..Default::default() },
        pp::Location { id: 2, line: line(2), ..Default::default() },
    ];
    let p = pp::Profile {
        sample_type,
        sample: vec![pp::Sample { location_id: vec![2, 1], value: vec![7; types.len()], ..Default::default() }],
        location,
        function,
        string_table: strings,
        ..Default::default()
    };
    p.encode_to_vec()
}

/// Reads a pprof file, gzip or not.
pub fn read_pprof(path: &Path) -> pp::Profile {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    decode_pprof(&bytes)
}

/// Decodes pprof bytes, gzip or not.
pub fn decode_pprof(bytes: &[u8]) -> pp::Profile {
    let raw = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut v = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut v).expect("gunzip");
        v
    } else {
        bytes.to_vec()
    };
    pp::Profile::decode(raw.as_slice()).expect("valid pprof")
}

/// One sample in a comparable form: values and, leaf first, (function name, system name,
/// mapping file name) per line of each location.
pub type NormSample = (Vec<i64>, Vec<(String, String, String)>);

/// Sample types and samples of a profile, sorted, independent of ids and their order.
pub fn normalize(p: &pp::Profile) -> (Vec<(String, String)>, Vec<NormSample>) {
    let s = |i: i64| p.string_table[i as usize].clone();
    let types = p.sample_type.iter().map(|t| (s(t.r#type), s(t.unit))).collect();
    let mut samples: Vec<NormSample> = p
        .sample
        .iter()
        .map(|smp| {
            let mut frames = Vec::new();
            for lid in &smp.location_id {
                let loc = p.location.iter().find(|l| l.id == *lid).expect("location exists");
                let map = p.mapping.iter().find(|m| m.id == loc.mapping_id).map(|m| s(m.filename)).unwrap_or_default();
                for line in &loc.line {
                    let f = p.function.iter().find(|f| f.id == line.function_id).expect("function exists");
                    frames.push((s(f.name), s(f.system_name), map.clone()));
                }
            }
            (smp.value.clone(), frames)
        })
        .collect();
    samples.sort();
    (types, samples)
}

/// Whether `go` is on PATH; when it is not, either fails (oracles required) or returns false.
pub fn have_go() -> bool {
    let ok = Command::new("go").arg("version").output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        if std::env::var("HEAPCONV_REQUIRE_ORACLES").as_deref() == Ok("1") {
            panic!("go (go tool pprof) is required (HEAPCONV_REQUIRE_ORACLES=1) but not found");
        }
        eprintln!("SKIPPED oracle check: `go` not found (install golang-go; .ci/run does)");
    }
    ok
}

/// `go tool pprof -raw FILE` output.
pub fn pprof_raw(path: &Path) -> String {
    let out = Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(path)
        .env("PPROF_BINARY_PATH", "/nonexistent")
        .output()
        .expect("go tool pprof runs");
    assert!(
        out.status.success(),
        "go tool pprof -raw {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A parsed `go tool pprof -raw` text: sample type line and, per sample, values and leaf-first
/// (function name, mapping file) pairs, sorted.
pub type RawSample = (Vec<i64>, Vec<(String, String)>);

/// All samples of a raw text, with the sample type line.
pub type RawSamples = (String, Vec<RawSample>);

/// The sum of each value column of parsed `go tool pprof -raw` samples.
pub fn raw_sums(r: &RawSamples) -> Vec<i64> {
    let mut totals = Vec::new();
    for (v, _) in &r.1 {
        totals.resize(v.len(), 0);
        for (t, x) in totals.iter_mut().zip(v) {
            *t += x;
        }
    }
    totals
}

/// Parses `go tool pprof -raw` output into a comparable form (location ids and order removed).
pub fn parse_raw(text: &str) -> RawSamples {
    let mut section = "";
    let mut types = String::new();
    let mut samples: Vec<(Vec<i64>, Vec<u64>)> = Vec::new();
    let mut locs: std::collections::HashMap<u64, Vec<(String, u64)>> = Default::default();
    let mut last_loc = 0u64;
    let mut maps: std::collections::HashMap<u64, String> = Default::default();
    for line in text.lines() {
        match line.trim_end() {
            "Samples:" => {
                section = "types";
                continue;
            }
            "Locations" => {
                section = "locs";
                continue;
            }
            "Mappings" => {
                section = "maps";
                continue;
            }
            _ => {}
        }
        match section {
            "types" => {
                types = line.trim().trim_end_matches("[dflt]").to_owned();
                section = "samples";
            }
            "samples" => {
                let Some((vals, ids)) = line.split_once(':') else { continue };
                // Label lines (`bytes:[4096]`, Go's heap profiles) follow their sample.
                let Ok(vals) = vals.split_whitespace().map(|v| v.parse()).collect::<Result<Vec<i64>, _>>() else {
                    continue;
                };
                let ids = ids.split_whitespace().map(|v| v.parse().unwrap()).collect();
                samples.push((vals, ids));
            }
            "locs" => {
                // "     1: 0x0 M=2 name :0 s=0(sys)" or a continuation line for inlined frames.
                let t = line.trim_start();
                let (id, rest) = match t.split_once(": ") {
                    Some((id, rest)) if id.chars().all(|c| c.is_ascii_digit()) => (id.parse().unwrap(), rest),
                    _ => (last_loc, t),
                };
                last_loc = id;
                let mut rest = rest;
                if rest.starts_with("0x") {
                    rest = rest.split_once(' ').map(|x| x.1).unwrap_or("");
                }
                let mut map = 0u64;
                if let Some(r) = rest.strip_prefix("M=") {
                    let (m, r) = r.split_once(' ').unwrap_or((r, ""));
                    map = m.parse().unwrap();
                    rest = r;
                }
                let name = rest.rfind(" :").map(|i| &rest[..i]).unwrap_or(rest).to_owned();
                locs.entry(id).or_default().push((name, map));
            }
            "maps" => {
                let Some((id, rest)) = line.split_once(": ") else { continue };
                let mut parts = rest.split_whitespace();
                parts.next();
                maps.insert(id.parse().unwrap(), parts.next().unwrap_or("").to_owned());
            }
            _ => {}
        }
    }
    let mut out: Vec<RawSample> = samples
        .into_iter()
        .map(|(v, ids)| {
            let frames = ids
                .iter()
                .flat_map(|id| locs[id].iter().map(|(n, m)| (n.clone(), maps.get(m).cloned().unwrap_or_default())))
                .collect();
            (v, frames)
        })
        .collect();
    out.sort();
    (types, out)
}

/// The Python with Google's Perfetto schema (the venv `.ci/install-oracles.sh` makes) and the
/// independent encoder/decoder in `../shared/tools/`; `None` (or a panic when oracles are
/// required) when missing.
pub fn perfetto_python() -> Option<(PathBuf, PathBuf)> {
    let py = root().join("target/oracle-venv/bin/python");
    let tool = root().join("../shared/tools/perfetto_encode.py");
    if py.exists() && tool.exists() {
        return Some((py, tool));
    }
    if std::env::var("HEAPCONV_REQUIRE_ORACLES").as_deref() == Ok("1") {
        panic!("Python with the perfetto schema is required (HEAPCONV_REQUIRE_ORACLES=1): run .ci/install-oracles.sh");
    }
    eprintln!("SKIPPED oracle check: no target/oracle-venv or ../shared/tools/perfetto_encode.py");
    None
}

/// Compares `got` with `tests/golden/NAME`; `HEAPCONV_BLESS=1` rewrites the file instead. A
/// missing golden file fails.
pub fn check_golden(name: &str, got: &str) {
    let path = root().join("tests/golden").join(name);
    if std::env::var("HEAPCONV_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden file {}; run HEAPCONV_BLESS=1 cargo test", path.display()));
    if want != got {
        let first = want.lines().zip(got.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{name} differs from the golden file at line {}:\n  want: {:?}\n  got:  {:?}\n(HEAPCONV_BLESS=1 rewrites it)",
            first + 1,
            want.lines().nth(first),
            got.lines().nth(first)
        );
    }
}

/// A stable text rendering of a pprof: ids replaced by what they point to.
pub fn pprof_text(p: &pp::Profile) -> String {
    let s = |i: i64| p.string_table[i as usize].as_str();
    let mut out = String::new();
    let types: Vec<String> = p.sample_type.iter().map(|t| format!("{}/{}", s(t.r#type), s(t.unit))).collect();
    writeln!(out, "sample_types: {}", types.join(", ")).unwrap();
    writeln!(out, "default_sample_type: {}", s(p.default_sample_type)).unwrap();
    if let Some(pt) = &p.period_type {
        writeln!(out, "period: {} {}/{}", p.period, s(pt.r#type), s(pt.unit)).unwrap();
    }
    for c in &p.comment {
        writeln!(out, "comment: {}", s(*c)).unwrap();
    }
    for m in &p.mapping {
        writeln!(
            out,
            "mapping {}: {:#x}-{:#x} off {:#x} {} [{}] fn={} file={} line={} inline={}",
            m.id,
            m.memory_start,
            m.memory_limit,
            m.file_offset,
            s(m.filename),
            s(m.build_id),
            m.has_functions,
            m.has_filenames,
            m.has_line_numbers,
            m.has_inline_frames
        )
        .unwrap();
    }
    for smp in &p.sample {
        let vals: Vec<String> = smp.value.iter().map(|v| v.to_string()).collect();
        let labels: Vec<String> = smp.label.iter().map(|l| format!("{}={}", s(l.key), l.num)).collect();
        if labels.is_empty() {
            writeln!(out, "sample {}", vals.join(" ")).unwrap();
        } else {
            writeln!(out, "sample {} [{}]", vals.join(" "), labels.join(" ")).unwrap();
        }
        for lid in &smp.location_id {
            let loc = p.location.iter().find(|l| l.id == *lid).unwrap();
            for line in &loc.line {
                let f = p.function.iter().find(|f| f.id == line.function_id).unwrap();
                writeln!(
                    out,
                    "  {:#x} m{} {} | {} | {}:{}",
                    loc.address,
                    loc.mapping_id,
                    s(f.name),
                    s(f.system_name),
                    s(f.filename),
                    line.line
                )
                .unwrap();
            }
        }
    }
    out
}

/// Fails when oracles are required (`HEAPCONV_REQUIRE_ORACLES=1`), else says the check is
/// skipped.
fn missing_oracle(what: &str, install: &str) {
    if std::env::var("HEAPCONV_REQUIRE_ORACLES").as_deref() == Ok("1") {
        panic!("{what} is required (HEAPCONV_REQUIRE_ORACLES=1) but not found: {install}");
    }
    eprintln!("SKIPPED oracle check: {what} not found ({install})");
}

/// Android's `hprof-conv` (Debian package `hprof-conv`); `None` (or a panic when oracles are
/// required) when missing.
pub fn hprof_conv() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/lib/android-sdk/platform-tools/hprof-conv");
    if p.exists() {
        return Some(p);
    }
    if std::env::var("HEAPCONV_REQUIRE_ORACLES").as_deref() == Ok("1") {
        panic!(
            "hprof-conv is required (HEAPCONV_REQUIRE_ORACLES=1): apt-get install hprof-conv (.ci/install-oracles.sh does)"
        );
    }
    eprintln!("SKIPPED oracle check: hprof-conv not found (apt-get install hprof-conv)");
    None
}

/// Whether OpenJDK's `javac` and `java` are on PATH (to make real JVM heap dumps).
pub fn have_jdk() -> bool {
    let ok = ["javac", "java"]
        .iter()
        .all(|t| Command::new(t).arg("-version").output().map(|o| o.status.success()).unwrap_or(false));
    if !ok {
        missing_oracle("a JDK (javac, java)", "apt-get install openjdk-17-jdk-headless; .ci/install-oracles.sh does");
    }
    ok
}

/// Address-space limit (`RLIMIT_AS`) for [`heapconv_limited`] runs on hostile inputs: well
/// above what a normal run needs, far below what a decompression bomb or a length near 4 GiB
/// would take if it were believed.
pub const HOSTILE_MEMORY: u64 = 512 << 20;

/// CPU seconds (`RLIMIT_CPU`) for [`heapconv_limited`] runs: a hang is killed by SIGXCPU.
pub const HOSTILE_CPU_SECONDS: u64 = 60;

/// Runs heapconv with its address space limited to `memory` bytes (`RLIMIT_AS`, set in the
/// child between fork and exec) and its CPU time to [`HOSTILE_CPU_SECONDS`]. An allocation
/// beyond the limit fails in the child: heapconv must turn that into an error, and a `Vec` that
/// grows past it aborts the process (SIGABRT), which [`assert_clean_exit`] catches.
pub fn heapconv_limited(args: &[&str], memory: u64) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_heapconv"));
    cmd.args(args).env("RUST_BACKTRACE", "0");
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit,
    // which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let set = |what, n: u64| {
                let lim = libc::rlimit { rlim_cur: n as libc::rlim_t, rlim_max: n as libc::rlim_t };
                if libc::setrlimit(what, &lim) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
            };
            set(libc::RLIMIT_AS, memory)?;
            set(libc::RLIMIT_CPU, HOSTILE_CPU_SECONDS)
        });
    }
    cmd.output().expect("heapconv runs")
}

/// Asserts that a run ended by itself with exit code `code`: not killed by a signal (an abort
/// on a failed allocation, a CPU-time kill), no panic, and an error message when it failed.
pub fn assert_clean_exit(out: &Output, code: i32, what: &str) {
    use std::os::unix::process::ExitStatusExt;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), None, "{what}: killed by a signal\n{err}");
    assert_eq!(out.status.code(), Some(code), "{what}\n{err}");
    assert!(!err.contains("panicked") && !err.contains("memory allocation of"), "{what}: {err}");
    if code == 1 {
        assert!(err.contains("heapconv: error: "), "{what}: no error message\n{err}");
    }
}

/// ProGuard's jars (Debian `libproguard-java`): `proguard.jar` and `retrace.jar`, as a class
/// path; `None` (or a panic when oracles are required) when missing.
pub fn proguard_classpath() -> Option<String> {
    let (pg, rt) = ("/usr/share/java/proguard.jar", "/usr/share/java/retrace.jar");
    if Path::new(pg).exists() && Path::new(rt).exists() && have_jdk() {
        return Some(format!("{pg}:{rt}"));
    }
    missing_oracle("ProGuard and ReTrace", "apt-get install libproguard-java; .ci/install-oracles.sh does");
    None
}

/// Peak resident memory (KiB) of `heapconv ARGS`, read by Python's `resource` module from
/// the kernel's accounting of its one child.
pub(crate) fn peak_rss_kib(args: &[&str]) -> u64 {
    let script = "import resource, subprocess, sys\n\
                  subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n\
                  print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)";
    let out = Command::new("python3")
        .args(["-c", script, env!("CARGO_BIN_EXE_heapconv")])
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "heapconv {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("a number of KiB")
}

/// Compiles and runs tests/data/hprof/HeapFixture.java (a 1,000-node list in a static field,
/// a `WeakReference` to its second node, arrays and strings), which dumps its heap with
/// OpenJDK into `dir`; returns the dump. Needs a JDK ([`have_jdk`]).
pub fn jvm_dump(dir: &Path) -> Vec<u8> {
    let classes = dir.join("classes");
    let st =
        Command::new("javac").arg("-d").arg(&classes).arg(data("hprof/HeapFixture.java")).status().expect("javac runs");
    assert!(st.success(), "javac failed");
    let dump = dir.join("jvm.hprof");
    let out = Command::new("java")
        .args(["-XX:+UseSerialGC", "-Xmx64m", "-Xshare:off", "-cp"])
        .arg(&classes)
        .arg("HeapFixture")
        .arg(&dump)
        .output()
        .expect("java runs");
    assert!(out.status.success(), "java failed: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(&dump).unwrap()
}

/// The index of the object with id `id` in a heap dump.
pub fn obj(d: &heapconv::model::HeapDump, id: u64) -> heapconv::model::ObjIdx {
    d.obj_id.iter().position(|&i| i == id).unwrap_or_else(|| panic!("no object {id:#x}")) as heapconv::model::ObjIdx
}
