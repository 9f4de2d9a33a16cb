//! `convert` of a trace's heapprofd dumps: through the stack tree, or as frame lists for folded
//! stacks and flame graphs, with the HTML timelines and the streamed outputs.

use super::*;

/// `convert` of a trace (`recognised`: sniffing knew it as one; else it may be no trace at all).
pub(super) fn convert_trace(
    inp: Input,
    recognised: bool,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    if opts.java_heap {
        return convert_heap_graphs(inp, input, dest, formats, opts);
    }
    if let Some(run) = convert_trace_flat(&inp, input, dest, formats, opts) {
        return run;
    }
    // A trace without heapprofd dumps may hold Java heap graphs: those are converted then.
    let again = inp.reopen();
    let name = inp.name.clone();
    let (profiles, report, symbols) = select_heapprofd(inp, &opts.selection())?;
    if report.dumps.is_empty() && report.damage.is_none() {
        if let (Some(again), true) = (again, report.packet_kinds.get("heap_graph").is_some_and(|&n| n > 0)) {
            return convert_heap_graphs(again?, input, dest, formats, opts);
        }
        return Err(no_heapprofd(&name));
    }
    if profiles.is_empty() {
        if !recognised {
            return Err(Error::new(
                ErrorKind::Malformed,
                format!(
                    "{}: neither a Perfetto trace nor a DDM allocation-record capture (a bare .alloc blob starting 0F 09 08, a REAL chunk or JDWP packets){}",
                    input.display(),
                    report.damage.as_deref().map(|d| format!("; as a trace: {d}")).unwrap_or_default()
                ),
            ));
        }
        return Err(Error::new(
            ErrorKind::NoData,
            format!(
                "{}: no dump matches the selection (see `heapconv inspect`){}",
                input.display(),
                report.damage.as_deref().map(|d| format!("; the input is damaged: {d}")).unwrap_or_default()
            ),
        ));
    }
    let profiles: Vec<Profile> = if opts.common.filter.is_empty() {
        profiles
    } else {
        profiles.into_iter().map(|p| filter_profile(p, &opts.common.filter)).collect()
    };
    let mut outputs = Vec::new();
    for &format in formats {
        outputs.extend(trace_outputs(&profiles, &report, symbols.as_ref(), input, dest, &opts.in_format(format))?);
    }
    let profiles = profiles.iter().map(ProfileTotals::of).collect();
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols, profiles, converted, warnings: Vec::new() })
}

/// The profiles of a trace written in `opts.common.format` to `dest` (or, for folded stacks, written
/// as they are encoded): the outputs, in order.
pub(super) fn trace_outputs(
    profiles: &[Profile],
    report: &TraceReport,
    symbols: Option<&SymbolizeReport>,
    input: &Path,
    dest: &Destination,
    opts: &ConvertOptions,
) -> Result<Outputs> {
    use rayon::prelude::*;
    let outputs: Outputs = if opts.common.format.is_report() {
        let mut doc = convert_json(report, profiles, &summary_options(opts)).into_bytes();
        if let Some(sym) = symbols {
            // The symbolization report joins the document (the encoder does not know the stage).
            let mut v: serde_json::Value = serde_json::from_slice(&doc).expect("our own JSON");
            v["symbolization"] = serde_json::to_value(sym).expect("report serializes");
            doc = serde_json::to_vec_pretty(&v).expect("serializes");
            doc.push(b'\n');
        }
        match dest {
            Destination::Stdout => vec![(None, doc)],
            Destination::File(p) => vec![(Some(p.clone()), doc)],
            Destination::Dir(d) => vec![(Some(d.join(format!("{}.json", stem(input)))), doc)],
        }
    } else {
        if let Some(outs) = html_timelines(dest, profiles, opts) {
            let outs = outs?;
            write_outputs(input, dest, &outs)?;
            return Ok(outs);
        }
        if profiles.len() > 1 && !matches!(dest, Destination::Dir(_)) {
            let matched: Vec<String> = profiles.iter().map(|p| p.header.meta.describe()).collect();
            return Err(several_profiles(&matched));
        }
        let path_of = |n: usize, p: &Profile| match dest {
            Destination::Stdout => None,
            Destination::File(f) => Some(f.clone()),
            Destination::Dir(d) => Some(d.join(heap_dump_name(n + 1, p, opts.common.format.extension()))),
        };
        if opts.common.format == Format::Folded {
            // Written as they are made: the text of a big profile is never held whole.
            return stream_outputs(input, dest, profiles, opts, &path_of);
        }
        let encoded: Vec<Result<Vec<u8>>> = profiles.par_iter().map(|p| encode_one(p, opts)).collect();
        let mut outs = Vec::new();
        for (n, (p, bytes)) in profiles.iter().zip(encoded).enumerate() {
            outs.push((path_of(n, p), bytes?));
        }
        outs
    };
    write_outputs(input, dest, &outputs)?;
    Ok(outputs)
}

/// `convert` of a trace's dumps to folded stacks or a flame graph without the stack tree: the
/// trace is decoded with callstacks as frame lists ([`decode_heapprofd_frames`]), and the
/// dumps selected become [`FlatProfile`]s, written by the frame-list encoders. The same bytes
/// as the stack-tree path, at a fraction of its work: building the tree of every callstack of
/// the trace (millions of nodes) for one dump's lines was most of it.
///
/// `None` (the caller goes on with the stack-tree path) for other formats, with filters or
/// symbolization, and for traces that this path would not convert the same way: one that
/// cannot be read twice, one without heapprofd dumps (its heap graphs are converted), one
/// where no dump matches (the caller words the error).
pub(super) fn convert_trace_flat(
    inp: &Input,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Option<Result<ConvertRun>> {
    if !formats.iter().all(|f| matches!(f, Format::Folded | Format::Svg))
        || !opts.common.filter.is_empty()
        || opts.common.symbols.options().is_some()
    {
        return None;
    }
    let mut inp = match inp.reopen()? {
        Ok(i) => i,
        Err(e) => return Some(Err(e)),
    };
    let (profiles, report) = match select_flat(&mut inp, opts) {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    if profiles.is_empty() {
        return None;
    }
    Some(write_flat(profiles, report, input, dest, formats, opts))
}

/// Decodes a trace with frame lists and keeps the dumps `opts` selects (as
/// [`select_heapprofd`] keeps them), in time order.
pub(super) fn select_flat(inp: &mut Input, opts: &ConvertOptions) -> Result<(Vec<FlatProfile>, TraceReport)> {
    use std::collections::BTreeMap;
    let mut decode = opts.common.decode.clone();
    decode.pids = opts.common.select.pids.clone();
    decode.include_unchanged = true;
    let mut kept: BTreeMap<(u64, String), Vec<ListDump>> = BTreeMap::new();
    let mut order: Vec<(u64, String)> = Vec::new();
    let deob = opts.common.symbols.proguard.open_for_trace(inp, decode.max_packet_bytes)?;
    // Only the names of the frames of the dumps kept are shown: those alone are demangled, after
    // decoding (deobfuscation reads names as interning gives them, so it keeps them eager).
    decode.deferred_names = !deob.is_some();
    let mut session = deob.session();
    let mut clock = crate::timing::Phases::start("convert");
    let (report, mut tables, lists) = decode_heapprofd_frames(
        inp,
        &decode,
        &mut |_, _| {},
        &mut |t, r| symbolize_hook(&mut None, &mut session, t, r),
        &mut |d: ListDump| {
            let meta = &d.header.meta;
            if opts.common.select.heap.as_deref().is_some_and(|h| h != meta.heap) {
                return Ok(());
            }
            if let DumpSelect::Nth(n) = opts.common.select.dump
                && meta.dump_index + 1 != n
            {
                return Ok(());
            }
            let key = (meta.pid.unwrap_or(0), meta.heap.clone());
            let slot = kept.entry(key.clone()).or_default();
            if slot.is_empty() {
                order.push(key);
            }
            if opts.common.select.dump == DumpSelect::Last {
                slot.clear();
            }
            slot.push(d);
            Ok(())
        },
    )?;
    clock.done("decode");
    if decode.deferred_names {
        let used = kept.values().flatten().flat_map(|d| d.stacks.iter().flat_map(|&s| lists.frames(s).iter().copied()));
        std::sync::Arc::make_mut(&mut tables).settle_names(used);
    }
    clock.done("names");
    let mut out = Vec::new();
    for key in order {
        for d in kept.remove(&key).unwrap_or_default() {
            out.push(flat_of(d, &tables, &lists));
        }
    }
    out.sort_by_key(|p| p.header.meta.timestamp.unwrap_or(i64::MIN));
    clock.done("frame lists");
    Ok((out, report))
}

/// A dump of frame lists as a [`FlatProfile`] (frames leaf first, each row its own span).
pub(super) fn flat_of(d: ListDump, tables: &std::sync::Arc<crate::model::Tables>, lists: &StackLists) -> FlatProfile {
    let n: usize = d.stacks.iter().map(|&s| lists.frames(s).len()).sum();
    let mut frames = Vec::with_capacity(n);
    let mut spans = Vec::with_capacity(d.stacks.len());
    for &s in &d.stacks {
        let f = lists.frames(s);
        spans.push((frames.len() as u32, f.len() as u32));
        frames.extend(f.iter().rev());
    }
    let ListDump { header, values, .. } = d;
    let default = header.default_sample_type;
    let mut p =
        FlatProfile::from_spans(std::sync::Arc::clone(tables), header.meta, header.sample_types, frames, spans, values);
    p.header.default_sample_type = default;
    p
}

/// Writes the flat profiles of [`convert_trace_flat`] in each of `formats` as `convert_trace`
/// writes profiles.
pub(super) fn write_flat(
    profiles: Vec<FlatProfile>,
    report: TraceReport,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    if profiles.len() > 1 && !matches!(dest, Destination::Dir(_)) {
        let matched: Vec<String> = profiles.iter().map(|p| p.header.meta.describe()).collect();
        return Err(several_profiles(&matched));
    }
    if let Destination::Dir(d) = dest {
        ensure_dir(d)?;
    }
    let mut outputs = Vec::new();
    for &format in formats {
        outputs.extend(write_flat_in(&profiles, input, dest, &opts.in_format(format))?);
    }
    let profiles = profiles.iter().map(ProfileTotals::of_flat).collect();
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols: None, profiles, converted, warnings: Vec::new() })
}

/// [`write_flat`] in `opts.common.format`: the outputs, in order.
pub(super) fn write_flat_in(
    profiles: &[FlatProfile],
    input: &Path,
    dest: &Destination,
    opts: &ConvertOptions,
) -> Result<Outputs> {
    use rayon::prelude::*;
    let inputs = [input.to_path_buf()];
    let eopts = opts.encode_options();
    let ext = opts.common.format.extension();
    let written: Vec<Result<(Option<PathBuf>, Vec<u8>)>> = profiles
        .par_iter()
        .enumerate()
        .map(|(n, p)| {
            let path = match dest {
                Destination::Stdout => None,
                Destination::File(f) => Some(f.clone()),
                Destination::Dir(d) => Some(d.join(heap_dump_name_of(n + 1, &p.header.meta, ext))),
            };
            if opts.common.format != Format::Folded {
                return Ok((path, encode_flat(p, opts.common.format, &eopts)?));
            }
            // Folded stacks are written as they are made: the text is never held whole.
            match &path {
                Some(path) => {
                    let mut f = AtomicFile::create(path, &inputs)?;
                    encode_flat_to(p, opts.common.format, &eopts, &mut f, &path.display().to_string())?;
                    f.commit()?;
                }
                None => {
                    check_not_input(Path::new("-"), &inputs)?;
                    encode_flat_to(p, opts.common.format, &eopts, &mut std::io::stdout().lock(), "standard output")?;
                }
            }
            Ok((path, Vec::new()))
        })
        .collect();
    let outputs: Outputs = written.into_iter().collect::<Result<_>>()?;
    if opts.common.format != Format::Folded {
        write_outputs(input, dest, &outputs)?;
    }
    Ok(outputs)
}

/// `--to html` of several dumps of one process and heap: one report per (pid, heap) with a
/// timeline of its dumps (a single dump gets its usual report and name). `None` when no
/// (pid, heap) has several dumps, or when there are several reports and `dest` is not a
/// directory (the caller then says so).
pub(super) fn html_timelines(
    dest: &Destination,
    profiles: &[Profile],
    opts: &ConvertOptions,
) -> Option<Result<Outputs>> {
    use rayon::prelude::*;
    if opts.common.format != Format::Html {
        return None;
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (n, p) in profiles.iter().enumerate() {
        let key = |q: &Profile| (q.header.meta.pid, q.header.meta.heap.clone());
        match groups.iter_mut().find(|g| key(&profiles[g[0]]) == key(p)) {
            Some(g) => g.push(n),
            None => groups.push(vec![n]),
        }
    }
    if groups.len() == profiles.len() || (groups.len() > 1 && !matches!(dest, Destination::Dir(_))) {
        return None;
    }
    let eopts = opts.encode_options();
    let outs: Vec<Result<(Option<PathBuf>, Vec<u8>)>> = groups
        .par_iter()
        .map(|g| {
            let first = &profiles[g[0]];
            let path = match dest {
                Destination::Stdout => None,
                Destination::File(f) => Some(f.clone()),
                Destination::Dir(d) if g.len() == 1 => Some(d.join(heap_dump_name(g[0] + 1, first, "html"))),
                Destination::Dir(d) => Some(d.join(format!(
                    "heap_dump.timeline.{}.{}.html",
                    first.header.meta.pid.unwrap_or(0),
                    first.header.meta.heap
                ))),
            };
            let bytes = if g.len() == 1 {
                encode_one(first, opts)?
            } else {
                let dumps: Vec<&Profile> = g.iter().map(|&n| &profiles[n]).collect();
                encode_html_timeline(&dumps, &eopts)?
            };
            Ok((path, bytes))
        })
        .collect();
    Some(outs.into_iter().collect())
}

/// Writes each profile to its output (`path_of`; `None` is standard output) as it is encoded,
/// in parallel; what is returned names the outputs with no bytes (they are written).
pub(super) fn stream_outputs(
    input: &Path,
    dest: &Destination,
    profiles: &[Profile],
    opts: &ConvertOptions,
    path_of: &(dyn Fn(usize, &Profile) -> Option<PathBuf> + Sync),
) -> Result<Vec<(Option<PathBuf>, Vec<u8>)>> {
    use rayon::prelude::*;
    let inputs = [input.to_path_buf()];
    if let Destination::Dir(d) = dest {
        ensure_dir(d)?;
    }
    let eopts = opts.encode_options();
    let written: Vec<Result<Option<PathBuf>>> = profiles
        .par_iter()
        .enumerate()
        .map(|(n, p)| match path_of(n, p) {
            Some(path) => {
                let mut f = AtomicFile::create(&path, &inputs)?;
                encode_to(p, opts.common.format, &eopts, &mut f, &path.display().to_string())?;
                f.commit()?;
                Ok(Some(path))
            }
            None => {
                check_not_input(Path::new("-"), &inputs)?;
                encode_to(p, opts.common.format, &eopts, &mut std::io::stdout().lock(), "standard output")?;
                Ok(None)
            }
        })
        .collect();
    written.into_iter().map(|w| w.map(|path| (path, Vec::new()))).collect()
}
