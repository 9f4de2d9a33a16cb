//! The encode stage: model in, bytes out.
//!
//! [`Format`] is the one list of the profile output formats (`--to` of `convert`, `merge` and
//! `diff`), each with its name, file extension and binary-ness; [`encode`] (a profile with a
//! stack tree), [`encode_flat`] (a frame-list profile) and [`encode_diff`] (two profiles
//! compared) are the one dispatch over it. A new output format is one file here, one arm of
//! [`Format`] and one arm in each of those three functions; every command then writes it.

use std::borrow::Cow;

use crate::error::{Error, ErrorKind, Result};
use crate::model::{FlatProfile, Profile, TraceReport, ValueKind};

pub mod chrome_heap;
pub mod deobfuscation_mapping;
pub mod dhat;
pub mod diff;
pub mod flamegraph_svg;
pub mod folded;
pub mod heap_top;
pub mod hprof;
pub mod html;
pub mod labels;
pub mod module_symbols;
pub mod pprof;
pub mod pprof_gzip;
pub mod speedscope;
pub mod summary;
pub mod timeline;
pub mod top;
pub mod viewer_frames;

/// The output formats of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// pprof, gzip-compressed.
    Pprof,
    /// Folded stacks.
    Folded,
    /// Flame graph SVG.
    Svg,
    /// JSON summary.
    Json,
    /// Self-contained interactive HTML report (flame graph, tables).
    Html,
    /// speedscope's file format (one profile per sample type).
    Speedscope,
    /// DHAT's JSON (`dhatFileVersion` 2), which the Firefox Profiler imports.
    Dhat,
    /// Chrome DevTools' sampling heap profile (`.heapprofile`).
    ChromeHeap,
}

impl Format {
    /// Every format, in the order help texts list them.
    pub const ALL: [Format; 8] = [
        Format::Pprof,
        Format::Folded,
        Format::Svg,
        Format::Json,
        Format::Html,
        Format::Speedscope,
        Format::Dhat,
        Format::ChromeHeap,
    ];

    /// The name the command line gives the format (`--to NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Pprof => "pprof",
            Format::Folded => "folded",
            Format::Svg => "svg",
            Format::Json => "json",
            Format::Html => "html",
            Format::Speedscope => "speedscope",
            Format::Dhat => "dhat",
            Format::ChromeHeap => "chrome-heap",
        }
    }

    /// The format called `name` ([`Format::name`]).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// File extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Pprof => "pb.gz",
            Format::Folded => "folded",
            Format::Svg => "svg",
            Format::Json => "json",
            Format::Html => "html",
            Format::Speedscope => "speedscope.json",
            Format::Dhat => "dhat.json",
            Format::ChromeHeap => "heapprofile",
        }
    }

    /// True for a report of a whole run (one document for every dump of a trace, a Java
    /// heap's top report) rather than one output per profile.
    pub fn is_report(self) -> bool {
        match self {
            Format::Json => true,
            Format::Pprof | Format::Folded | Format::Svg | Format::Html => false,
            Format::Speedscope | Format::Dhat | Format::ChromeHeap => false,
        }
    }

    /// True when the format keeps a file and line per frame and a sample per allocation (so
    /// inputs that have them, DDM captures, are decoded with them).
    pub fn keeps_lines(self) -> bool {
        match self {
            Format::Pprof => true,
            Format::Folded | Format::Svg | Format::Json | Format::Html => false,
            Format::Speedscope | Format::Dhat | Format::ChromeHeap => false,
        }
    }

    /// True for formats that are not text.
    pub fn is_binary(self) -> bool {
        match self {
            Format::Pprof => true,
            Format::Folded | Format::Svg | Format::Json | Format::Html => false,
            Format::Speedscope | Format::Dhat | Format::ChromeHeap => false,
        }
    }
}

/// Which sample value an output shows (folded stacks, flame graphs), opens first (pprof) or
/// ranks by (the JSON summary's top lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// The profile's default sample type.
    Default,
    /// The first sample type of this kind; total size when the profile has none (a frame-list
    /// profile written as pprof keeps its default type then).
    Kind(ValueKind),
    /// The sample type at this index.
    Index(usize),
}

impl Shown {
    /// The index of the sample type shown in `profile`.
    fn index(self, profile: &Profile) -> usize {
        match self {
            Shown::Default => profile.header.default_sample_type,
            Shown::Kind(k) => profile.value_index(k).or_else(|| profile.value_index(ValueKind::TotalSize)).unwrap_or(0),
            Shown::Index(i) => i,
        }
    }

    /// The value the JSON summary ranks by.
    fn kind(self, profile: &Profile) -> ValueKind {
        match self {
            Shown::Kind(k) => k,
            Shown::Default | Shown::Index(_) => {
                profile.header.sample_types.get(self.index(profile)).map_or(ValueKind::UnreleasedSize, |t| t.kind)
            }
        }
    }
}

/// How [`encode`] writes a profile.
#[derive(Debug, Clone)]
pub struct EncodeOptions {
    /// The sample value shown. Default: the profile's default type.
    pub shown: Shown,
    /// ART frame annotations in frame names. Default: false (names as they are).
    pub annotations: bool,
    /// The flame graph's title. Default: none (the encoder's own).
    pub title: Option<String>,
    /// HTML report: nodes below this percentage of the total are merged into `[other]`.
    /// Default: [`html::DEFAULT_PRUNE_BELOW`].
    pub prune_below: f64,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions { shown: Shown::Default, annotations: false, title: None, prune_below: html::DEFAULT_PRUNE_BELOW }
    }
}

/// Encodes a profile in `format`.
pub fn encode(profile: &Profile, format: Format, opts: &EncodeOptions) -> Result<Vec<u8>> {
    let index = opts.shown.index(profile);
    let annotations = opts.annotations;
    Ok(match format {
        Format::Pprof => {
            let popts = pprof::PprofOptions { annotations, extras: true };
            if index == profile.header.default_sample_type {
                pprof_gzip::encode_pprof_gzip(profile, &popts)
            } else {
                let mut p = profile.clone();
                p.header.default_sample_type = index;
                pprof_gzip::encode_pprof_gzip(&p, &popts)
            }
        }
        Format::Folded => {
            folded::encode_folded(profile, &folded::FoldedOptions { value_index: index, annotations }).into_bytes()
        }
        Format::Svg => flamegraph_svg::encode_svg(
            profile,
            &flamegraph_svg::SvgOptions {
                value_index: index,
                annotations,
                title: opts.title.clone(),
                ..Default::default()
            },
        )?,
        Format::Json => {
            let value_index = match opts.shown {
                Shown::Kind(_) => None,
                Shown::Default | Shown::Index(_) => Some(index),
            };
            let sopts = summary::SummaryOptions {
                view: opts.shown.kind(profile),
                annotations,
                value_index,
                ..Default::default()
            };
            summary::convert_json(&TraceReport::default(), std::slice::from_ref(profile), &sopts).into_bytes()
        }
        Format::Html => html::encode_html(
            profile,
            &html::HtmlOptions {
                value_index: index,
                annotations,
                title: opts.title.clone(),
                prune_below: opts.prune_below,
            },
        )?,
        Format::Speedscope => {
            speedscope::encode_speedscope(profile, &speedscope::SpeedscopeOptions { active: index, annotations })?
        }
        Format::Dhat => dhat::encode_dhat(profile, &dhat::DhatOptions { annotations })?,
        Format::ChromeHeap => chrome_heap::encode_chrome_heap(
            profile,
            &chrome_heap::ChromeHeapOptions { value_index: index, annotations },
        )?,
    })
}

/// Several dumps of one process and heap, in time order, as one HTML report with a timeline
/// of their totals ([`html::encode_html_timeline`]).
pub fn encode_html_timeline(profiles: &[&Profile], opts: &EncodeOptions) -> Result<Vec<u8>> {
    let index = profiles.last().map_or(0, |p| opts.shown.index(p));
    html::encode_html_timeline(
        profiles,
        &html::HtmlOptions {
            value_index: index,
            annotations: opts.annotations,
            title: opts.title.clone(),
            prune_below: opts.prune_below,
        },
    )
}

/// A Java heap's tree with its `top` report (classes, largest retainers, their paths from GC
/// roots) as one HTML report ([`html::encode_heap_html`]).
pub fn encode_heap_html(
    profile: &Profile,
    top: &crate::model::heap_report::HeapTop,
    opts: &EncodeOptions,
) -> Result<Vec<u8>> {
    html::encode_heap_html(
        profile,
        top,
        &html::HtmlOptions {
            value_index: opts.shown.index(profile),
            annotations: opts.annotations,
            title: opts.title.clone(),
            prune_below: opts.prune_below,
        },
    )
}

/// Encodes a profile in `format` into `out`: as [`encode`], but folded stacks are written line
/// by line as they are made (their text, hundreds of megabytes for a big profile, is never held
/// whole). `what` names the output in an I/O error ("writing WHAT").
pub fn encode_to(
    profile: &Profile,
    format: Format,
    opts: &EncodeOptions,
    out: &mut dyn std::io::Write,
    what: &str,
) -> Result<()> {
    use std::io::Write;
    let written = match format {
        Format::Folded => {
            let fopts = folded::FoldedOptions { value_index: opts.shown.index(profile), annotations: opts.annotations };
            let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
            folded::write_folded(profile, &fopts, &mut w).and_then(|()| w.flush())
        }
        _ => out.write_all(&encode(profile, format, opts)?),
    };
    written.map_err(|e| crate::error::Error::io(format!("writing {what}"), e))
}

/// Encodes a frame-list profile (a pprof input, a merge) in `format`: pprof straight from its
/// frame lists, the other formats from its stack tree.
pub fn encode_flat(profile: &FlatProfile, format: Format, opts: &EncodeOptions) -> Result<Vec<u8>> {
    match format {
        Format::Pprof => {
            let popts = pprof::PprofOptions { annotations: opts.annotations, extras: true };
            let index = match opts.shown {
                Shown::Default => None,
                Shown::Kind(k) => profile.value_index(k),
                Shown::Index(i) => Some(i),
            };
            Ok(match index {
                Some(i) if i != profile.header.default_sample_type => {
                    let mut p = profile.clone();
                    p.header.default_sample_type = i;
                    pprof_gzip::encode_flat_pprof_gzip(&p, &popts)
                }
                _ => pprof_gzip::encode_flat_pprof_gzip(profile, &popts),
            })
        }
        // Folded stacks and flame graphs straight from the frame lists (no stack tree).
        Format::Folded => {
            let fopts =
                folded::FoldedOptions { value_index: flat_index(opts.shown, profile), annotations: opts.annotations };
            let mut out = Vec::new();
            folded::write_folded_flat(profile, &fopts, &mut out).expect("writing to memory");
            Ok(out)
        }
        Format::Svg => flamegraph_svg::encode_svg_flat(
            profile,
            &flamegraph_svg::SvgOptions {
                value_index: flat_index(opts.shown, profile),
                annotations: opts.annotations,
                title: opts.title.clone(),
                ..Default::default()
            },
        ),
        Format::Json | Format::Html | Format::Speedscope | Format::Dhat | Format::ChromeHeap => {
            encode(&profile.to_profile(), format, opts)
        }
    }
}

/// [`Shown::index`] of a profile with frame lists.
fn flat_index(shown: Shown, profile: &FlatProfile) -> usize {
    match shown {
        Shown::Default => profile.header.default_sample_type,
        Shown::Kind(k) => profile.value_index(k).or_else(|| profile.value_index(ValueKind::TotalSize)).unwrap_or(0),
        Shown::Index(i) => i,
    }
}

/// [`encode_flat`] into `out`, folded stacks written line by line as they are made (see
/// [`encode_to`]).
pub fn encode_flat_to(
    profile: &FlatProfile,
    format: Format,
    opts: &EncodeOptions,
    out: &mut dyn std::io::Write,
    what: &str,
) -> Result<()> {
    use std::io::Write;
    let written = match format {
        Format::Folded => {
            let fopts =
                folded::FoldedOptions { value_index: flat_index(opts.shown, profile), annotations: opts.annotations };
            let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
            folded::write_folded_flat(profile, &fopts, &mut w).and_then(|()| w.flush())
        }
        _ => out.write_all(&encode_flat(profile, format, opts)?),
    };
    written.map_err(|e| crate::error::Error::io(format!("writing {what}"), e))
}

/// The difference of two profiles, for a pprof output: NEW minus BASE per stack.
#[derive(Debug)]
pub enum NetProfile {
    /// With a stack tree.
    Tree(Profile),
    /// With frame lists.
    Flat(FlatProfile),
}

/// Two profiles compared, as [`encode_diff`] reads them: each made only when the format needs
/// it.
pub struct DiffSides<'a> {
    /// BASE and NEW with stack trees in one table (folded stacks, flame graphs, JSON).
    pub trees: &'a dyn Fn() -> [Cow<'a, Profile>; 2],
    /// NEW minus BASE per stack, ready to write (pprof).
    pub net: &'a dyn Fn() -> NetProfile,
    /// ART frame annotations in the names of the pprof output.
    pub annotations: bool,
    /// Fields added to the JSON report (the gate's verdict).
    pub json_extra: Vec<(&'static str, serde_json::Value)>,
}

/// Encodes the comparison of two profiles in `format`: pprof (NEW minus BASE, for
/// `go tool pprof -diff_base`-style reading), differential folded stacks (`stack BEFORE
/// AFTER`), a differential flame graph, or the JSON report of what grew.
pub fn encode_diff(format: Format, sides: &DiffSides<'_>, opts: &diff::DiffOptions) -> Result<Vec<u8>> {
    let popts = pprof::PprofOptions { annotations: sides.annotations, extras: true };
    Ok(match format {
        Format::Pprof => match (sides.net)() {
            NetProfile::Tree(p) => pprof_gzip::encode_pprof_gzip(&p, &popts),
            NetProfile::Flat(p) => pprof_gzip::encode_flat_pprof_gzip(&p, &popts),
        },
        Format::Folded => {
            let [base, new] = (sides.trees)();
            diff::diff_folded(&base, &new, opts).into_bytes()
        }
        Format::Svg => {
            let [base, new] = (sides.trees)();
            diff::diff_svg(&base, &new, opts)?
        }
        Format::Json => {
            let [base, new] = (sides.trees)();
            let report = diff::diff_report(&base, &new, opts);
            let mut v = serde_json::to_value(&report).expect("a report serializes");
            for (k, x) in &sides.json_extra {
                v[*k] = x.clone();
            }
            let mut s = serde_json::to_vec_pretty(&v).expect("serializes");
            s.push(b'\n');
            s
        }
        Format::Html => {
            let [base, new] = (sides.trees)();
            let hopts = html::HtmlDiffOptions {
                html: html::HtmlOptions {
                    value_index: opts.value_index,
                    prune_below: opts.prune_below,
                    ..Default::default()
                },
                normalize: opts.normalize,
                base_name: opts.base_name.clone(),
                new_name: opts.new_name.clone(),
            };
            html::encode_diff_html(&base, &new, &hopts)?
        }
        Format::Speedscope => {
            let [base, new] = (sides.trees)();
            let sopts = speedscope::SpeedscopeOptions { active: opts.value_index, annotations: sides.annotations };
            speedscope::encode_diff(&base, &new, &sopts)?
        }
        Format::Dhat | Format::ChromeHeap => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{} has no form for a comparison (its values cannot be negative); write pprof, folded, svg, json, html or speedscope",
                    format.name()
                ),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip_and_extensions_differ() {
        let mut exts = std::collections::BTreeSet::new();
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
            assert!(exts.insert(f.extension()), "{f:?}");
        }
        assert_eq!(Format::from_name("text"), None);
        assert_eq!(Format::ALL.iter().filter(|f| f.is_binary()).count(), 1);
    }
}
