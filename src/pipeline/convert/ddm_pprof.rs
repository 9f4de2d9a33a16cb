//! `convert` of DDM allocation-record captures (merged into one profile) and of a pprof profile.

use super::*;

/// Converts DDM captures, merged into one profile, in each of `formats`. The captures are
/// decoded once; the profile is made once per frame-label style the formats need.
pub(super) fn convert_ddm(
    inputs: &[(String, Vec<u8>)],
    paths: &[PathBuf],
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    if !opts.common.select.pids.is_empty()
        || opts.common.select.heap.is_some()
        || opts.common.select.dump != DumpSelect::Last
    {
        return Err(Error::new(
            ErrorKind::Usage,
            "a selection of processes, heap and dump is for heapprofd dumps; a DDM allocation-record capture has one \
             profile",
        )
        .with_hint(Hint::SelectionNotForDdm));
    }
    let mut captures =
        inputs.iter().map(|(name, bytes)| decode_alloc_records(bytes, name, &opts.ddm)).collect::<Result<Vec<_>>>()?;
    let deob = opts.common.symbols.proguard.open()?;
    for c in &mut captures {
        crate::pipeline::load::deobfuscate_capture(deob.as_deref(), &mut c.records);
    }
    // pprof gets one sample per allocation with file and line per frame; the text outputs
    // label frames `class.method(File.java:12)` and need only one sample per stack.
    let style = |format: Format| {
        let mut ddm = opts.ddm.clone();
        ddm.lines = format.keeps_lines();
        ddm.per_allocation = format.keeps_lines();
        ddm
    };
    let mut made: [Option<Profile>; 2] = [None, None];
    let mut outputs = Vec::new();
    let mut first: Option<(TraceReport, ProfileTotals)> = None;
    for &format in formats {
        let opts = &opts.in_format(format);
        let ddm = style(format);
        let profile = made[usize::from(format.keeps_lines())]
            .get_or_insert_with(|| filter_profile(alloc_records_profile(&captures, &ddm), &opts.common.filter));
        let mut report = TraceReport {
            source: profile.header.meta.source.clone(),
            bytes: inputs.iter().map(|(_, b)| b.len() as u64).sum(),
            ..Default::default()
        };
        for c in &captures {
            for p in &c.problems {
                report.problem(None, None, format!("{}: {p}", c.source));
            }
        }
        let bytes = ddm_output(&captures, profile, &report, &ddm, opts)?;
        let path = match dest {
            Destination::Stdout => None,
            Destination::File(f) => Some(f.clone()),
            Destination::Dir(d) => Some(d.join(format!("{}.{}", stem(&paths[0]), format.extension()))),
        };
        if let Destination::Dir(d) = dest {
            ensure_dir(d)?;
        }
        match &path {
            Some(p) => write_atomic(p, &bytes, paths)?,
            None => check_not_input(Path::new("-"), paths)?,
        }
        outputs.push((path, bytes));
        first.get_or_insert_with(|| (report, ProfileTotals::of(profile)));
    }
    let (report, totals) = first.ok_or_else(|| Error::new(ErrorKind::Usage, "no output format given"))?;
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols: None, profiles: vec![totals], converted, warnings: Vec::new() })
}

/// The bytes of the profile of DDM captures in `opts.common.format` (`ddm` the options it was made
/// with): the JSON summary with each capture's report, a flame graph with a title, or the
/// format's encoding.
pub(super) fn ddm_output(
    captures: &[AllocCapture],
    profile: &Profile,
    report: &TraceReport,
    ddm: &DdmOptions,
    opts: &ConvertOptions,
) -> Result<Vec<u8>> {
    Ok(match opts.common.format {
        Format::Json => {
            let doc = convert_json(report, std::slice::from_ref(profile), &summary_options(opts));
            let mut v: serde_json::Value = serde_json::from_str(&doc).expect("our own JSON");
            let ddm_reports: Vec<DdmInspect> = captures.iter().map(|c| ddm_inspect(c, ddm)).collect();
            v["ddm"] = serde_json::to_value(ddm_reports).expect("report serializes");
            let mut doc = serde_json::to_vec_pretty(&v).expect("serializes");
            doc.push(b'\n');
            doc
        }
        Format::Svg => {
            let index = profile
                .value_index(opts.common.value)
                .or_else(|| profile.value_index(ValueKind::TotalSize))
                .unwrap_or(0);
            let title = format!(
                "{}: Java allocations (DDM allocation records), {}",
                profile.header.meta.process_name.as_deref().unwrap_or(""),
                profile.header.sample_types[index].name
            );
            // The flame graph of Java frames gets a title and no ART annotations.
            let eopts = EncodeOptions {
                shown: Shown::Index(index),
                annotations: false,
                title: Some(title),
                ..Default::default()
            };
            encode(profile, Format::Svg, &eopts)?
        }
        _ => encode_one(profile, opts)?,
    })
}

/// Converts one pprof input (`convert` on a pprof file): decoded once, then encoded in each of
/// `formats` with the names it has (annotations are not added again).
pub(super) fn convert_pprof(
    mut inp: Input,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    let flat = read_pprof(&mut inp, &PprofDecodeOptions::default())?;
    let warnings = crate::pipeline::load::pprof_warnings(&input.display().to_string(), &flat);
    let flat = filter_flat(flat, &opts.common.filter);
    // The pprof convention (`default_sample_type`, else the last type), or the type asked for.
    let index = pick_sample_type(&flat.header, opts.sample_type.as_deref())?;
    let inputs = [input.to_path_buf()];
    let mut outputs = Vec::new();
    for &format in formats {
        // Names are written as the input has them (annotations are not added again).
        let eopts = EncodeOptions { annotations: false, shown: Shown::Index(index), ..opts.encode_options() };
        let bytes = encode_flat(&flat, format, &eopts)?;
        let path = match dest {
            Destination::Stdout => None,
            Destination::File(f) => Some(f.clone()),
            Destination::Dir(d) => {
                crate::output::ensure_dir(d)?;
                Some(d.join(format!("{}.{}", stem(input), format.extension())))
            }
        };
        match &path {
            Some(p) => crate::output::write_atomic(p, &bytes, &inputs)?,
            None => crate::output::check_not_input(Path::new("-"), &inputs)?,
        }
        outputs.push((path, bytes));
    }
    let report = TraceReport { source: input.display().to_string(), ..Default::default() };
    let profiles = vec![ProfileTotals::of_flat(&flat)];
    let symbols = opts.common.symbols.options().map(|_| pprof_coverage(&flat));
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols, profiles, converted, warnings })
}
