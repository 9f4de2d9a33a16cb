//! `heapconv hprof-conv`: Android heap dumps (1.0.3) to the standard format (1.0.2).

use std::path::{Path, PathBuf};

use std::collections::HashMap;
use std::io::{Seek, Write};

use super::batch::{BatchInput, Done, file_for};
use crate::decode::Input;
use crate::decode::hprof::java_class_name;
use crate::decode::hprof::names::ClassFieldNames;
use crate::decode::hprof::{
    HprofConvOptions, HprofConvReport, HprofNames, NameRewrite, NoSeek, hprof_conv, hprof_conv_renamed,
    scan_hprof_names,
};
use crate::decode::perfetto::DecodeOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::output::AtomicFile;
use crate::symbolize::proguard::Session;

/// Options of `heapconv hprof-conv`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HprofConvRunOptions {
    /// Leave out the instances and arrays of the zygote and image heaps, as `hprof-conv -z`.
    /// Default: false.
    pub app_only: bool,
    /// ProGuard/R8 maps: the dump is written with deobfuscated class and field names (every
    /// other byte converted as without them, so values stay exact; any HPROF version is read,
    /// 1.0.3 becomes 1.0.2 and others keep theirs). Default: none.
    pub proguard: super::load::ProguardMaps,
}

impl HprofConvRunOptions {
    /// The converter's options.
    fn conv(&self) -> HprofConvOptions {
        HprofConvOptions { app_only: self.app_only, ..HprofConvOptions::default() }
    }
}

/// Runs `hprof-conv`: converts the Android heap dump `input` (`-`: standard input; gzip is
/// undone) to the standard format in `output` (`-`: standard output), written atomically.
pub fn run_hprof_conv(input: &Path, output: &Path, opts: &HprofConvRunOptions) -> Result<HprofConvReport> {
    if !opts.proguard.is_empty() {
        return run_deobfuscated(input, output, opts);
    }
    let mut inp = Input::open(input, DecodeOptions::default().max_gzip_bytes)?;
    let name = inp.name.clone();
    stream_to(output, &[input.to_path_buf()], &mut |out| hprof_conv(inp.reader(), &name, &mut { out }, &opts.conv()))
}

/// `hprof-conv --proguard-map`: the dump rewritten as it streams by, as `hprof-conv` converts
/// it, with deobfuscated class and field names (two passes: the names first, then the copy), so
/// every value stays exact, every dump of the file is written and `-z` applies.
fn run_deobfuscated(input: &Path, output: &Path, opts: &HprofConvRunOptions) -> Result<HprofConvReport> {
    let mut inp = Input::open(input, DecodeOptions::default().max_gzip_bytes)?;
    let name = inp.name.clone();
    let mut again = match inp.reopen() {
        Some(r) => r?,
        None => {
            // Standard input is read once: kept in memory for the second pass.
            let mut bytes = Vec::new();
            inp.reader().read_to_end(&mut bytes).map_err(|e| Error::io(format!("reading {name}"), e))?;
            let max = DecodeOptions::default().max_gzip_bytes;
            inp = Input::from_bytes(&name, bytes, max)?;
            inp.reopen().ok_or_else(|| Error::new(ErrorKind::Io, format!("{name}: cannot be read twice")))??
        }
    };
    let names = scan_hprof_names(inp.reader(), &name)?;
    let rewrite = deobfuscation_rewrite(&names, &opts.proguard)?;
    stream_to(output, &[input.to_path_buf()], &mut |out| {
        hprof_conv_renamed(again.reader(), &name, &mut { out }, &opts.conv(), &rewrite)
    })
}

/// The renames that deobfuscate the names `names` of a dump (read by [`scan_hprof_names`])
/// with the map given without a package (or the only map) of `maps`: class names, field names
/// and stack frames, as `hprof-conv --proguard-map` writes them with
/// [`crate::decode::hprof::hprof_conv_renamed`]. Empty without maps.
pub fn deobfuscation_rewrite(names: &HprofNames, maps: &super::load::ProguardMaps) -> Result<NameRewrite> {
    let Some(deob) = maps.open()? else { return Ok(NameRewrite::default()) };
    let mut session = deob.session();
    match session.for_package(None, "heap dump classes, fields and stack frames") {
        Some(i) => hprof_renames(names, &mut session, i),
        None => Ok(NameRewrite::default()),
    }
}

/// Writes what `write` streams to `output` (`-`: standard output, which cannot seek), through
/// an [`AtomicFile`] put in place only when `write` succeeds.
fn stream_to(
    output: &Path,
    inputs: &[PathBuf],
    write: &mut dyn FnMut(&mut dyn WriteSeek) -> Result<HprofConvReport>,
) -> Result<HprofConvReport> {
    if output.as_os_str() == "-" {
        let mut out = NoSeek(std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock()));
        let report = write(&mut out)?;
        out.flush().map_err(|e| Error::io("writing standard output", e))?;
        return Ok(report);
    }
    let mut file = AtomicFile::create(output, inputs)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, &mut file);
    let report = write(&mut out)?;
    out.flush().map_err(|e| Error::io(format!("writing {}", output.display()), e))?;
    drop(out);
    file.commit()?;
    Ok(report)
}

/// A writer the converter can patch record lengths in.
trait WriteSeek: Write + Seek {}
impl<T: Write + Seek> WriteSeek for T {}

/// Names a Java class or field that is part of the platform (never in an app's map): not
/// counted among the names left obfuscated.
fn is_platform(java: &str) -> bool {
    let base = java.trim_end_matches("[]");
    !base.contains('.') && matches!(base, "boolean" | "byte" | "char" | "short" | "int" | "long" | "float" | "double")
        || [
            "java.",
            "javax.",
            "jdk.",
            "sun.",
            "com.sun.",
            "android.",
            "androidx.",
            "dalvik.",
            "libcore.",
            "com.android.",
            "kotlin.",
            "org.apache.harmony.",
        ]
        .iter()
        .any(|p| base.starts_with(p))
}

/// The renames that deobfuscate a dump's names with map `map` of `session`: class names in the
/// spelling the file uses (HotSpot's `a/b/C` and `[La/b/C;`, or Android's `a.b.C[]`), and the
/// field names of each class, looked up in the class that declares them. A new name reuses a
/// `STRING` of the file that already spells it, or gets a new id past the largest one.
fn hprof_renames(names: &HprofNames, session: &mut Session<'_>, map: usize) -> Result<NameRewrite> {
    let rt = session.retracer(map);
    let slashes = names.load_classes.iter().any(|(_, n)| names.strings.get(n).is_some_and(|s| s.contains('/')));
    let mut by_text: HashMap<&str, u64> = HashMap::new();
    for (&id, text) in &names.strings {
        by_text.entry(text.as_str()).and_modify(|e| *e = (*e).min(id)).or_insert(id);
    }
    let mut next = names.strings.keys().copied().max().unwrap_or(0) + 1;
    let max_id = if names.id_size == 4 { u64::from(u32::MAX) } else { u64::MAX };
    let mut rewrite = NameRewrite::default();
    let mut added: HashMap<String, u64> = HashMap::new();
    let mut id_for = |text: String, rewrite: &mut NameRewrite| -> Result<u64> {
        if let Some(&id) = by_text.get(text.as_str()).or_else(|| added.get(&text)) {
            return Ok(id);
        }
        if next > max_id {
            return Err(Error::new(ErrorKind::LimitExceeded, "no string id is left for the deobfuscated names"));
        }
        let id = next;
        next += 1;
        added.insert(text.clone(), id);
        rewrite.new_strings.push((id, text));
        Ok(id)
    };
    let mut class_java: HashMap<u64, String> = HashMap::new();
    let mut class_orig: HashMap<u64, String> = HashMap::new();
    let mut left: Vec<(String, String)> = Vec::new();
    for &(cid, nid) in &names.load_classes {
        let Some(raw) = names.strings.get(&nid) else { continue };
        let java = java_class_name(raw);
        class_java.insert(cid, java.clone());
        let found = rt.class_name(&java);
        class_orig.insert(cid, found.clone().unwrap_or_else(|| java.clone()));
        match found {
            Some(orig) if orig != java => {
                let spelled = if raw.starts_with('[') {
                    let dims = raw.bytes().take_while(|&b| b == b'[').count();
                    format!("{}L{};", "[".repeat(dims), orig.trim_end_matches("[]").replace('.', "/"))
                } else if slashes {
                    orig.replace('.', "/")
                } else {
                    orig
                };
                let id = id_for(spelled, &mut rewrite)?;
                rewrite.class_names.insert(cid, id);
            }
            Some(_) => {}
            None if is_platform(&java) => {}
            None => left.push((java.clone(), java)),
        }
    }
    let mut classes: Vec<(&u64, &ClassFieldNames)> = names.classes.iter().collect();
    classes.sort_by_key(|c| *c.0);
    for (&cid, fields) in classes {
        let Some(java) = class_java.get(&cid) else { continue };
        let base = java.trim_end_matches("[]");
        let mut renamed = fields.clone();
        let mut changed = false;
        for slot in renamed.statics.iter_mut().chain(renamed.fields.iter_mut()) {
            let Some(old) = names.strings.get(slot) else { continue };
            let Some(v) = rt.field_names(base, old) else { continue };
            let new = v.join(" | ");
            if new != *old {
                *slot = id_for(new, &mut rewrite)?;
                changed = true;
            }
        }
        if changed {
            rewrite.class_fields.insert(cid, renamed);
        }
    }
    frame_renames(names, rt, (&class_java, &class_orig), &mut rewrite, &mut id_for, &mut left)?;
    for (class, name) in left {
        session.left_obfuscated_as(&class, &name);
    }
    Ok(rewrite)
}

/// The `STACK_FRAME` renames (see [`NameRewrite::frames`]): each frame of a class the map
/// names is looked up at its line; a method becomes its original name (candidates joined by
/// `" | "` when the map cannot tell which), an inline chain becomes one frame per method,
/// innermost first, with the original lines. A frame keeps its class serial unless its method
/// was inlined from another class the dump loads (then that class's serial); inlined from a
/// class the dump does not load, its method name is qualified (`pkg.Class.method`). The source
/// file is replaced only where the dump has none (or R8's `SourceFile`) or the method comes
/// from another class. Frames no map names are noted in `left` as `class class.method`.
fn frame_renames(
    names: &HprofNames,
    rt: &crate::symbolize::proguard::Retracer<'_>,
    (class_java, class_orig): (&HashMap<u64, String>, &HashMap<u64, String>),
    rewrite: &mut NameRewrite,
    id_for: &mut dyn FnMut(String, &mut NameRewrite) -> Result<u64>,
    left: &mut Vec<(String, String)>,
) -> Result<()> {
    use crate::decode::hprof::names::StackFrameNames;
    if names.frames.is_empty() {
        return Ok(());
    }
    // Original class name → serial, for the classes the dump loads.
    let mut serial_of: HashMap<String, u32> = HashMap::new();
    let mut serials: Vec<(&u32, &u64)> = names.class_serials.iter().collect();
    serials.sort();
    for (&serial, cid) in serials {
        if let Some(orig) = class_orig.get(cid) {
            serial_of.entry(orig.clone()).or_insert(serial);
        }
    }
    let max_id = if names.id_size == 4 { u64::from(u32::MAX) } else { u64::MAX };
    let mut next = names.frames.iter().map(|f| f.id).max().unwrap_or(0).saturating_add(1);
    for f in &names.frames {
        let Some(cid) = names.class_serials.get(&f.class_serial) else { continue };
        let (Some(class), Some(own)) = (class_java.get(cid), class_orig.get(cid)) else { continue };
        let Some(method) = names.strings.get(&f.method) else { continue };
        let line = u32::try_from(f.line).ok().filter(|&l| l > 0);
        let Some(r) = rt.frame(class, method, line) else {
            if !is_platform(class) {
                left.push((class.clone(), format!("{class}.{method}")));
            }
            continue;
        };
        if r.class_only || r.frames.is_empty() {
            continue;
        }
        let source = names.strings.get(&f.source).map(String::as_str);
        let source_missing = matches!(source, None | Some("" | "SourceFile" | "Unknown Source"));
        let mut out: Vec<StackFrameNames> = Vec::new();
        if r.ambiguous {
            let one_class = r.frames.iter().all(|o| o.class == *own);
            let joined = r
                .frames
                .iter()
                .map(|o| if one_class { o.method.to_string() } else { format!("{}.{}", o.class, o.method) })
                .collect::<Vec<_>>()
                .join(" | ");
            let mut g = *f;
            g.method = id_for(joined, rewrite)?;
            out.push(g);
        } else {
            for (k, o) in r.frames.iter().enumerate() {
                let mut g = *f;
                if k > 0 {
                    if next > max_id {
                        return Err(Error::new(ErrorKind::LimitExceeded, "no frame id is left for the inlined frames"));
                    }
                    g.id = next;
                    next += 1;
                }
                let foreign = o.class != *own;
                let text = match (foreign, serial_of.get(o.class.as_ref())) {
                    (false, _) => o.method.to_string(),
                    (true, Some(&serial)) => {
                        g.class_serial = serial;
                        o.method.to_string()
                    }
                    (true, None) => format!("{}.{}", o.class, o.method),
                };
                g.method = id_for(text, rewrite)?;
                if let Some(file) = o.file.as_ref().filter(|_| foreign || source_missing) {
                    g.source = id_for(file.to_string(), rewrite)?;
                }
                if o.line > 0 {
                    g.line = i32::try_from(o.line).unwrap_or(i32::MAX);
                }
                out.push(g);
            }
        }
        if out.len() > 1 || out.first().is_some_and(|g| g != f) {
            rewrite.frames.insert(f.id, out);
        }
    }
    Ok(())
}

/// `hprof-conv` of one heap dump: `OUT/<key>.hprof`.
pub fn hprof_conv_one(input: &BatchInput, out_dir: &Path, opts: &HprofConvRunOptions) -> Result<Done> {
    let out = file_for(out_dir, &input.key, "hprof")?;
    let r = run_hprof_conv(&input.path, &out, opts)?;
    let mut warnings = Vec::new();
    if r.nodata_zero_filled + r.nodata_emptied > 0 {
        warnings.push(format!(
            "{} PRIMITIVE_ARRAY_NODATA record(s) written as arrays of zeros and {} as empty arrays",
            r.nodata_zero_filled, r.nodata_emptied
        ));
    }
    let details = serde_json::json!({
        "bytes_in": r.bytes_in,
        "bytes_out": r.bytes_out,
        "records": r.records,
        "heap_dump_records": r.heap_dump_records,
        "sub_records": r.sub_records,
        "heap_infos_dropped": r.heap_infos_dropped,
        "roots_rewritten": r.roots_rewritten,
        "objects_dropped": r.objects_dropped,
    });
    Ok(Done { outputs: vec![out], warnings, data_loss: r.data_loss(), details: Some(details), ..Done::default() })
}
