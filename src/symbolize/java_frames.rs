//! Java frames of a Perfetto trace deobfuscated the way trace processor does it
//! (`deobfuscation_tracker.cc`), with the maps of a [`Deobfuscator`](super::proguard::Deobfuscator):
//!
//! * a frame is Java when its name has a `.`; its package is told by its mapping's path
//!   (`/data/app/<package>-…/`, [`package_of_mapping_path`]); a frame in a `/memfd:` mapping
//!   (ART's JIT cache) takes every map given for a package, a later one winning; a frame whose
//!   mapping tells no package gets the package of the profiled process (its uid's app id in
//!   the trace's `packages_list`, [`FrameRules::guessed_package`]);
//! * a `DeobfuscationMapping` packet without a package applies to heap graphs only
//!   ([`FrameRules::heap_graph_only`]); a map file given without a package applies to frames
//!   whose package is not told otherwise (heapconv's rule: traceconv would drop it);
//! * when the profiled processes are of several packages, a frame whose mapping tells no
//!   package takes the package of the process of the first allocation that holds it
//!   ([`FrameRules::frame_packages`], trace processor's `GuessPackages`); frames no allocation
//!   holds stay obfuscated;
//! * a frame with a line (ModuleSymbols gave it lines: the first non-zero line number, as
//!   trace processor takes it; or the frame carried its own `Frame.line_number`, which
//!   ModuleSymbols lines replace, as in trace processor) is looked up at that line: the
//!   mapped range holding it gives the inline chain, innermost first, each frame with its
//!   original file and line as `retrace` prints them, and the frame's lines become that
//!   chain; when no range holds the line, or the frame has no line (or only a source file of
//!   its own), every candidate is named as below (its symbolized lines, which name the
//!   obfuscated method, are dropped). A line number 0 is no line (trace processor would look
//!   up a frame's own explicit 0);
//! * a frame whose obfuscated method stands for several originals, and that has no line to
//!   choose between them, is named by the distinct originals sorted and joined by `" | "`.

use std::collections::HashMap;
use std::ops::Range;

use super::proguard::{FrameQuery, Retraced, Session, package_of_mapping_path, split_java_frame};
use crate::model::{Line, StringId, Tables};

/// Which map applies to which Java frame, beyond its mapping's path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameRules {
    /// The package of frames whose mapping tells none: the package of the trace's profiled
    /// processes when they all have the same one in `packages_list`. Default: none.
    pub guessed_package: Option<String>,
    /// The packages of the profiled processes when they differ (frames whose mapping tells no
    /// package then stay obfuscated: heapconv cannot tell which process a frame is of).
    /// Default: empty.
    pub several_packages: Vec<String>,
    /// Maps (indexes into the deobfuscator's maps) that apply to heap graphs only: the trace's
    /// `DeobfuscationMapping` packets without a package. Default: none.
    pub heap_graph_only: Vec<usize>,
    /// The maps given for a package (files and packets): (index, package), in the order
    /// given; the ones a `/memfd:` frame takes. Default: none.
    pub packaged: Vec<(usize, String)>,
    /// When the profiled processes are of several packages: the package of each Java frame
    /// whose mapping tells none, by the first allocation that holds it (the trace decoder's
    /// `scan_frame_packages`), keyed by (mapping path, `rel_pc`, function name). Default: empty.
    pub frame_packages: HashMap<(String, u64, String), String>,
}

/// Whether a frame's lines are the one line it carried itself (Perfetto's `Frame.source_path_iid`
/// and `line_number`, [`Tables::intern_frame_with_line`]): one line naming the frame.
fn is_own_line(f: &crate::model::Frame) -> bool {
    matches!(&f.lines[..], [l] if l.function == f.name && l.system_name == f.raw_name)
}

/// The map for a frame whose package is `pkg` (`None`: not told), noting what it is used for.
fn pick(session: &mut Session<'_>, rules: &FrameRules, pkg: Option<&str>, what: &str) -> Option<usize> {
    let i = session.for_package(pkg, what)?;
    (!rules.heap_graph_only.contains(&i)).then_some(i)
}

/// Deobfuscates the Java frames among `range` of `tables` (see the module documentation).
/// Frames that already have lines are left alone unless they are Java frames with a line
/// number (ModuleSymbols). Each map is asked once, in one batch
/// ([`Retracer::frames_at_lines`](super::proguard::Retracer::frames_at_lines)), for all the
/// frames it may answer; a `/memfd:` frame asks its maps in turn, the last given first, until
/// one names its class.
pub fn deobfuscate_java_frames(
    tables: &mut Tables,
    range: Range<usize>,
    session: &mut Session<'_>,
    rules: &FrameRules,
) {
    // Each Java frame with the maps to ask, in order, and what each is used for.
    struct Todo {
        frame: usize,
        name: String,
        line: Option<u32>,
        maps: Vec<(usize, String)>,
        answer: Option<Retraced<'static>>,
    }
    let mut todo: Vec<Todo> = Vec::new();
    for i in range {
        let f = &tables.frames()[i];
        // A frame with lines is Java only when they carry a line number to look up, or when its
        // one line is its own (a source file without a line, from the frame itself).
        let line = if f.lines.is_empty() {
            None
        } else {
            match f.lines.iter().map(|l| l.line).find(|&l| l > 0) {
                Some(l) => Some(l),
                None if is_own_line(f) => None,
                None => continue,
            }
        };
        let name = tables.strings.get(f.name).to_owned();
        let Some((class, method)) = split_java_frame(&name) else { continue };
        if class.contains(['(', ' ', ':', '<']) || method.contains(['(', ' ', ':']) {
            continue;
        }
        let path = f.mapping.map(|m| tables.strings.get(tables.mapping(m).path).to_owned()).unwrap_or_default();
        let by_process = if rules.frame_packages.is_empty() || package_of_mapping_path(&path).is_some() {
            None
        } else {
            let key = (path.clone(), f.rel_pc, tables.strings.get(f.raw_name).to_owned());
            rules.frame_packages.get(&key)
        };
        let maps: Vec<(usize, String)> = if let Some(p) = package_of_mapping_path(&path) {
            pick(session, rules, Some(p), &format!("Java frames of {p}"))
                .map(|mi| (mi, String::new()))
                .into_iter()
                .collect()
        } else if path.starts_with("/memfd:") && !rules.packaged.is_empty() {
            // Every map of a package applies; trace processor applies them in turn, so the
            // last that names the class wins.
            rules.packaged.iter().rev().map(|(mi, p)| (*mi, format!("Java frames in memfd (JIT) of {p}"))).collect()
        } else if let Some(p) = by_process {
            pick(session, rules, Some(p), &format!("Java frames of {p} (package of their process, from packages_list)"))
                .map(|mi| (mi, String::new()))
                .into_iter()
                .collect()
        } else if let Some(g) = &rules.guessed_package {
            pick(session, rules, Some(g), &format!("Java frames of {g} (package from packages_list)"))
                .map(|mi| (mi, String::new()))
                .into_iter()
                .collect()
        } else if !rules.several_packages.is_empty() {
            Vec::new()
        } else {
            pick(session, rules, None, "Java frames").map(|mi| (mi, String::new())).into_iter().collect()
        };
        todo.push(Todo { frame: i, name, line, maps, answer: None });
    }
    // Rounds: round k asks each unanswered frame's k-th map, one batch per map.
    let rounds = todo.iter().map(|t| t.maps.len()).max().unwrap_or(0);
    for k in 0..rounds {
        let mut maps: Vec<usize> =
            todo.iter().filter(|t| t.answer.is_none()).filter_map(|t| t.maps.get(k).map(|m| m.0)).collect();
        maps.sort_unstable();
        maps.dedup();
        for mi in maps {
            let which: Vec<usize> = (0..todo.len())
                .filter(|&j| todo[j].answer.is_none() && todo[j].maps.get(k).is_some_and(|m| m.0 == mi))
                .collect();
            let queries: Vec<FrameQuery<'_>> = which
                .iter()
                .map(|&j| {
                    let (class, method) = split_java_frame(&todo[j].name).unwrap_or_default();
                    FrameQuery { class, method, line: todo[j].line }
                })
                .collect();
            let answers = session.retracer(mi).frames_at_lines(&queries);
            drop(queries);
            for (j, r) in which.into_iter().zip(answers) {
                if r.is_some() && !todo[j].maps[k].1.is_empty() {
                    let p = rules.packaged.iter().find(|(m, _)| *m == mi).map(|(_, p)| p.clone());
                    let what = todo[j].maps[k].1.clone();
                    session.for_package(p.as_deref(), &what);
                }
                todo[j].answer = r;
            }
        }
    }
    let full = |o: &super::proguard::OriginalFrame<'_>| format!("{}.{}", o.class, o.method);
    for t in todo {
        let i = t.frame;
        let Some(r) = t.answer else {
            if t.line.is_some() {
                // A symbolized frame no map knows (native code, a name with a dot): alone.
                continue;
            }
            let class = split_java_frame(&t.name).map_or(&t.name[..], |(c, _)| c);
            session.left_obfuscated_as(class, &t.name);
            continue;
        };
        let lined = t.line.is_some();
        if lined && r.class_only {
            // The method is not in the map: the symbolized lines stay.
            continue;
        }
        if r.ambiguous || (!lined && r.frames.len() == 1) {
            // Trace processor: the distinct names, sorted, joined by " | ".
            let mut names: Vec<String> = r.frames.iter().map(full).collect();
            names.sort();
            names.dedup();
            let id = tables.strings.intern(&names.join(" | "));
            let fr = &mut tables.frames_mut()[i];
            fr.name = id;
            fr.lines.clear();
            continue;
        }
        let raw = tables.frames()[i].raw_name;
        let lines: Vec<Line> = r
            .frames
            .iter()
            .map(|o| Line {
                function: tables.strings.intern(&full(o)),
                system_name: raw,
                file: o.file.as_deref().map_or(StringId(0), |s| tables.strings.intern(s)),
                line: o.line,
                column: 0,
            })
            .collect();
        let outer = tables.strings.intern(&full(&r.frames[r.frames.len() - 1]));
        let fr = &mut tables.frames_mut()[i];
        fr.name = outer;
        fr.lines = lines;
    }
}
