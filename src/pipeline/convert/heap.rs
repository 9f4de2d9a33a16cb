//! `convert` of a Java heap: an HPROF heap dump, or a trace's heap graphs, as a dominator or
//! shortest-path tree in each format.

use super::*;

/// `convert` of an HPROF heap dump: the dominator tree (or the shortest-path tree) as pprof,
/// folded stacks or a flame graph, or the `top` report (classes by retained size, the largest
/// retainers and their paths from GC roots) as JSON. A damaged dump converts what was
/// complete and says so in the report. `opts.common.select.dump` picks the file's heap dump (the last by
/// default); `All` writes one output per dump, which needs a directory when the file holds
/// several, where they are named `STEM.N.EXT` (N the dump's 1-based number).
pub(super) fn convert_hprof(
    inp: Input,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    let name = inp.name.clone();
    let gzipped = inp.gzipped;
    let all = opts.common.select.dump == DumpSelect::All;
    let multi_ok = matches!(dest, Destination::Dir(_));
    let mut outputs = Vec::new();
    let mut profiles = Vec::new();
    let mut incomplete: Vec<String> = Vec::new();
    let mut several = false;
    let dumps = for_selected_hprof_dumps(
        inp,
        opts.common.select.dump,
        opts.object_size,
        &opts.common.symbols.proguard,
        &mut |n, dump, stats| {
            if all && stats.dumps.len() > 1 && !multi_ok {
                several = true;
                return Ok(());
            }
            if !dump.incomplete.is_empty() {
                let text = dump.incomplete.join("; ");
                incomplete.push(if stats.dumps.len() > 1 { format!("heap dump {n}: {text}") } else { text });
            }
            let mut kept = None;
            for &format in formats {
                let opts = &opts.in_format(format);
                let (bytes, totals) = heap_output(&dump, input, opts)?;
                if kept.is_none() {
                    kept = totals;
                }
                let ext = format.extension();
                let path = match dest {
                    Destination::Stdout => None,
                    Destination::File(f) => Some(f.clone()),
                    Destination::Dir(d) if all => Some(d.join(format!("{}.{n}.{ext}", stem(input)))),
                    Destination::Dir(d) => Some(d.join(format!("{}.{ext}", stem(input)))),
                };
                outputs.push((path, bytes));
            }
            profiles.extend(kept);
            Ok(())
        },
    )?;
    if several {
        let matched: Vec<String> = dumps.iter().map(describe_hprof_dump).collect();
        return Err(choose_one(format!("{name}: {} heap dumps", dumps.len()), &matched, &[Selector::Dump], true));
    }
    let mut report = TraceReport { source: name.clone(), gzipped, ..Default::default() };
    if !incomplete.is_empty() {
        report.damage = Some(incomplete.join("; "));
    }
    write_outputs(input, dest, &outputs)?;
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols: None, profiles, converted, warnings: Vec::new() })
}

/// The error for filters given with the JSON report of a Java heap, which lists classes and
/// retainers, not stacks.
pub(super) fn filters_not_for_heap_report(name: &str) -> Error {
    Error::new(
        ErrorKind::Usage,
        format!(
            "{name}: the JSON report of a Java heap lists classes and retainers, which stack filters do not apply \
             to; its dominator tree in a profile format can be filtered"
        ),
    )
    .with_hint(Hint::FiltersNotForHeapReport { input: name.to_owned() })
}

/// One Java heap as `convert` writes it: the tree `opts.heap_tree` names as a profile in
/// `opts.common.format` (with its totals), or, for JSON, the top report.
pub(super) fn heap_output(
    dump: &HeapDump,
    input: &Path,
    opts: &ConvertOptions,
) -> Result<(Vec<u8>, Option<ProfileTotals>)> {
    use crate::analysis::heap::{HeapTopOptions, RootedHeap};
    use crate::encode::heap_top::heap_top_json;
    let heap = RootedHeap::new(dump);
    if opts.common.format.is_report() {
        if !opts.common.filter.is_empty() {
            return Err(filters_not_for_heap_report(&stem(input)));
        }
        let spt = heap.shortest_path_tree();
        let dom = heap.dominators();
        return Ok((heap_top_json(&heap.heap_top(&spt, &dom, &HeapTopOptions::default())).into_bytes(), None));
    }
    // The HTML report carries the top report too (classes, largest retainers, paths from
    // roots), which needs both trees.
    let html = opts.common.format == Format::Html;
    let (spt, dom) = match opts.heap_tree {
        HeapTree::Dominator => (html.then(|| heap.shortest_path_tree()), Some(heap.dominators())),
        HeapTree::ShortestPath => (Some(heap.shortest_path_tree()), html.then(|| heap.dominators())),
    };
    let mut profile = match (opts.heap_tree, &spt, &dom) {
        (HeapTree::Dominator, _, Some(dom)) => heap.dominator_profile(dom),
        (HeapTree::ShortestPath, Some(spt), _) => heap.spt_profile(spt),
        _ => unreachable!("the tree shown is made above"),
    };
    // A heap dump without process name or pid (HPROF) is called by its file's name.
    let meta = &mut profile.header.meta;
    if meta.process_name.is_none() && meta.pid.is_none() {
        meta.process_name = Some(stem(input));
    }
    let profile = filter_profile(profile, &opts.common.filter);
    // With stack filters the report shows the filtered tree only: its class and retainer
    // tables (the top report) are of the whole heap, which filters do not apply to (as for
    // `--to json`).
    if let (true, true, Some(spt), Some(dom)) = (html, opts.common.filter.is_empty(), &spt, &dom) {
        let top = heap.heap_top(spt, dom, &HeapTopOptions { classes: 200, retainers: 50, ..Default::default() });
        return Ok((encode_heap_html(&profile, &top, &opts.encode_options())?, Some(ProfileTotals::of(&profile))));
    }
    Ok((encode_one(&profile, opts)?, Some(ProfileTotals::of(&profile))))
}

/// `convert` of a trace's Java heap graphs: per selected dump (`--pid`, `--dump`), the
/// dominator or shortest-path tree as pprof, folded stacks or a flame graph, or the top report
/// as JSON. Several dumps need a directory, where they are named `java_heap_dump.N.PID.EXT`
/// (N counting the files written from 1, in the order the dumps end in the trace). An
/// incomplete dump converts what it has and the run is partial.
pub(super) fn convert_heap_graphs(
    mut inp: Input,
    input: &Path,
    dest: &Destination,
    formats: &[Format],
    opts: &ConvertOptions,
) -> Result<ConvertRun> {
    use crate::analysis::heap::JAVA_HEAP_NAME;
    if let Some(h) = opts.common.select.heap.as_deref().filter(|h| *h != JAVA_HEAP_NAME) {
        return Err(Error::new(
            ErrorKind::NoData,
            format!("{}: no heap `{h}` in the Java heap graphs (their heap is `{JAVA_HEAP_NAME}`)", input.display()),
        ));
    }
    let mut outputs: Vec<(Option<PathBuf>, Vec<u8>)> = Vec::new();
    let mut described: Vec<String> = Vec::new();
    let mut incomplete: Vec<String> = Vec::new();
    let mut profiles = Vec::new();
    let multi_ok = matches!(dest, Destination::Dir(_));
    let mut report = for_selected_heap_graphs(
        &mut inp,
        &opts.common.decode,
        &opts.common.select.pids,
        opts.common.select.dump,
        &opts.common.symbols.proguard,
        &mut |dump| {
            let describe = describe_heap_dump(dump.pid, dump.process_name.as_deref(), dump.timestamp);
            described.push(describe.clone());
            if !multi_ok && described.len() > 1 {
                // Only listed: the run ends in a usage error.
                return Ok(());
            }
            if !dump.incomplete.is_empty() {
                incomplete.push(format!("{describe}: {}", dump.incomplete.join("; ")));
            }
            let mut kept = None;
            for &format in formats {
                let (bytes, totals) = heap_output(&dump, input, &opts.in_format(format))?;
                if kept.is_none() {
                    kept = totals;
                }
                let path = match dest {
                    Destination::Stdout => None,
                    Destination::File(f) => Some(f.clone()),
                    Destination::Dir(d) => Some(d.join(format!(
                        "java_heap_dump.{}.{}.{}",
                        described.len(),
                        dump.pid.unwrap_or(0),
                        format.extension()
                    ))),
                };
                outputs.push((path, bytes));
            }
            profiles.extend(kept);
            Ok(())
        },
    )?;
    if described.is_empty() {
        return Err(no_heap_graph_match(input, &report));
    }
    if described.len() > 1 && !multi_ok {
        return Err(several_heap_graphs(&described, &[Selector::Pid, Selector::Dump]));
    }
    if !incomplete.is_empty() && report.damage.is_none() {
        report.damage = Some(format!("incomplete heap graph dump(s): {}", incomplete.join(" | ")));
    }
    write_outputs(input, dest, &outputs)?;
    let converted = opts.dump_filter(&report);
    Ok(ConvertRun { outputs, report, symbols: None, profiles, converted, warnings: Vec::new() })
}
