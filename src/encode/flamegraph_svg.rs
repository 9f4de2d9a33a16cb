//! Memory flame graphs as SVG, drawn by inferno from the profile's folded stacks.
//!
//! The graph labels itself: the title names the process, pid, heap, dump and the value shown;
//! the subtitle gives dump time, sampling interval, total and any data-loss flags; tooltips show
//! byte values in B/KiB/MiB/GiB next to the exact count, not "samples". Search (Ctrl-F) is
//! inferno's. Frame labels follow [`super::labels`]; a `;` inside a label (Go generics:
//! `main.Map[go.shape.int;go.shape.string]`) is passed to inferno, whose input has no escape
//! for it, as a private-use character and put back in the SVG it draws.

use super::folded::{FoldedOptions, FoldedStacks, common_prefix};
use super::labels::{human_bytes, human_value};
use crate::error::{Error, ErrorKind, Result};
use crate::model::profile::saturating_sum;
use crate::model::{FlatProfile, Profile, ProfileHeader};

/// Options of the flame graph encoder.
#[derive(Debug, Clone)]
pub struct SvgOptions {
    /// Which sample value to draw (index into the profile's sample types). Default: 0.
    pub value_index: usize,
    /// Append ART annotations to frame names. Default: false.
    pub annotations: bool,
    /// Title; `None` derives one from the profile. Default: `None`.
    pub title: Option<String>,
    /// Image width in pixels. Default: 1200.
    pub width: usize,
    /// Draw an icicle graph (roots at the top). Default: false.
    pub inverted: bool,
    /// Hide frames narrower than this many pixels. Default: 0.1.
    pub min_width: f64,
}

impl Default for SvgOptions {
    fn default() -> Self {
        SvgOptions { value_index: 0, annotations: false, title: None, width: 1200, inverted: false, min_width: 0.1 }
    }
}

/// Stands for `;` in inferno's input (which splits frames at `;`), and is turned back into `;`
/// in the SVG inferno draws: a private-use character, which no function name holds.
const SEMICOLON: char = '\u{E03B}';

fn sanitize(label: &str) -> String {
    if !label.bytes().any(|b| matches!(b, b';' | b'\n' | b'\r')) {
        return label.to_owned();
    }
    label.replace(';', &SEMICOLON.to_string()).replace(['\n', '\r'], " ")
}

/// Renders a profile as a flame graph SVG.
///
/// Frames that inferno would not draw (narrower than `min_width` percent of the total) are not
/// written out for it: each run of stacks under the same undrawn frame becomes one line, so a
/// big profile costs inferno what it draws. The SVG is the same as for all the stacks.
pub fn encode_svg(profile: &Profile, opts: &SvgOptions) -> Result<Vec<u8>> {
    render(&profile.header, opts, true, |fo| FoldedStacks::of(profile, fo, sanitize))
}

/// [`encode_svg`] of a profile with frame lists: the same SVG as for
/// [`FlatProfile::to_profile`], without building its stack tree.
pub fn encode_svg_flat(profile: &FlatProfile, opts: &SvgOptions) -> Result<Vec<u8>> {
    render(&profile.header, opts, true, |fo| FoldedStacks::of_flat(profile, fo, sanitize))
}

fn render(
    header: &ProfileHeader,
    opts: &SvgOptions,
    prune: bool,
    stacks_of: impl FnOnce(&FoldedOptions) -> FoldedStacks,
) -> Result<Vec<u8>> {
    let ty = header
        .sample_types
        .get(opts.value_index)
        .ok_or_else(|| Error::new(ErrorKind::Usage, format!("value index {} out of range", opts.value_index)))?;
    let bytes = ty.kind.is_bytes() || ty.unit == "bytes";
    let mut clock = crate::timing::Phases::start("svg");
    let stacks = stacks_of(&FoldedOptions { value_index: opts.value_index, annotations: opts.annotations });
    clock.done("fold");
    let negative = (0..stacks.len()).any(|i| stacks.line_value(i) < 0);
    let order = stacks.positive_in_line_order();
    clock.done("line order");
    // inferno adds the drawn values up again in `usize`: refuse what no real profile holds.
    let total = order.iter().try_fold(0i64, |t, &i| t.checked_add(stacks.line_value(i))).ok_or_else(|| {
        Error::new(
            ErrorKind::LimitExceeded,
            format!("the {} values sum past 2^63: too large to draw as a flame graph", ty.name),
        )
    })?;

    let meta = &header.meta;
    let mut fo = inferno::flamegraph::Options::default();
    fo.title = opts.title.clone().unwrap_or_else(|| format!("{}: {}", meta.describe(), ty.name));
    let mut sub = Vec::new();
    if let Some(t) = meta.timestamp {
        sub.push(format!("dump at {t} ns{}", if meta.timestamp_converted { "" } else { " (raw clock)" }));
    }
    if let Some(i) = meta.sampling_interval {
        sub.push(format!("sampling every {}", human_bytes(i64::try_from(i).unwrap_or(i64::MAX))));
    }
    sub.push(format!("total {}", human_value(total, if bytes { "bytes" } else { &ty.unit })));
    if negative {
        sub.push("negative values not drawn".to_owned());
    }
    let loss = meta.flags.data_loss();
    if !loss.is_empty() {
        sub.push(format!("DATA LOSS: {}", loss.join(", ")));
    }
    fo.subtitle = Some(sub.join(" · "));
    fo.count_name = if bytes { "bytes".to_owned() } else { ty.unit.clone() };
    fo.name_type = "Function:".to_owned();
    fo.colors = inferno::flamegraph::Palette::Basic(inferno::flamegraph::color::BasicPalette::Mem);
    fo.deterministic = true;
    fo.hash = true;
    fo.image_width = Some(opts.width);
    fo.min_width = opts.min_width;
    if opts.inverted {
        fo.direction = inferno::flamegraph::Direction::Inverted;
    }
    let failed = |e| Error::new(ErrorKind::Io, "drawing the flame graph").with_source(e);
    let mut out = Vec::new();
    if order.is_empty() {
        // inferno refuses empty input; draw an explicit empty graph instead.
        let empty = ["[no data] 1"];
        fo.count_name = "(empty)".to_owned();
        inferno::flamegraph::from_lines(&mut fo, empty.iter().copied(), &mut out).map_err(failed)?;
    } else {
        let pruned = if prune { pruned_lines(&stacks, &order, opts.min_width) } else { None };
        clock.done("prune");
        let mut drawn = false;
        if let Some(lines) = pruned {
            // In inferno's order already (it checks that and refuses otherwise).
            fo.no_sort = true;
            drawn = inferno::flamegraph::from_lines(&mut fo, lines.iter().map(|s| s.as_str()), &mut out).is_ok();
            fo.no_sort = false;
        }
        if !drawn {
            out.clear();
            let text: Vec<String> = order.iter().map(|&i| stacks.line_text(i, stacks.line_value(i))).collect();
            inferno::flamegraph::from_lines(&mut fo, text.iter().map(|s| s.as_str()), &mut out).map_err(failed)?;
        }
    }
    clock.done("draw");
    if stacks.labels().any(|k| k.contains(SEMICOLON)) {
        out = String::from_utf8_lossy(&out).replace(SEMICOLON, ";").into_bytes();
    }
    if bytes {
        out = humanize_titles(&out);
    }
    Ok(out)
}

/// True for a label inferno reads back as it is wherever it stands in a line: not empty, no
/// space around it or before a digit or `.` (a sample count to inferno), no `#` first (a
/// comment line).
fn plain_label(l: &str) -> bool {
    !l.is_empty()
        && l.trim() == l
        && !l.starts_with('#')
        && !l.as_bytes().windows(2).any(|w| w[0] == b' ' && (w[1].is_ascii_digit() || w[1] == b'.'))
}

/// The lines to give inferno (in its order) so that it draws exactly the frames it would draw
/// from all the stacks, or `None` when nothing would be left out or the labels are not all
/// plain (see [`plain_label`]).
///
/// inferno makes a frame of each run of consecutive lines (sorted by text) that share a prefix
/// of frames, and drops those narrower than `min_width` percent of the total. A frame's
/// ancestors are at least as wide, so along each line the dropped frames are the deepest ones,
/// from the first dropped one (U) down. Each run of consecutive lines under the same U is
/// given as one line: the run's first stack with the run's sum. Frames above U keep their
/// extent (the same lines, the same times), U keeps its own (still dropped), and the frames
/// below U in the new line are as narrow as U (dropped). The new line sorts where the run did:
/// it differs from its neighbours where the run's first line did, before its count (a count
/// could only decide against a label with a space and a digit, which is not plain).
fn pruned_lines(stacks: &FoldedStacks, order: &[usize], min_width: f64) -> Option<Vec<String>> {
    if !stacks.labels().all(plain_label) || order.iter().any(|&i| stacks.line_path(i).is_empty()) {
        return None;
    }
    let n = order.len();
    let timemax = saturating_sum(order.iter().map(|&i| stacks.line_value(i))) as u64;
    // As inferno computes it.
    let widthpertime_pct = 100.0 / timemax as f64;
    let minwidth_time = min_width / widthpertime_pct;
    // Per line: the depth of its first dropped frame (0 is inferno's "all" frame), and the
    // number of frames it shares with the line before.
    let mut first_dropped = vec![u32::MAX; n];
    let mut shared = vec![0usize; n];
    // Open frames by depth: (start time, first line).
    let mut open: Vec<(u64, usize)> = Vec::new();
    let mut time = 0u64;
    let mut close = |open: &mut Vec<(u64, usize)>, keep: usize, time: u64, end: usize| {
        while open.len() > keep {
            let depth = (open.len() - 1) as u32;
            let (start, first) = open.pop().expect("an open frame");
            if ((time - start) as f64) < minwidth_time {
                for f in &mut first_dropped[first..end] {
                    *f = (*f).min(depth);
                }
            }
        }
    };
    for (j, &i) in order.iter().enumerate() {
        let path = stacks.line_path(i);
        let s = if j == 0 { 0 } else { 1 + common_prefix(stacks.line_path(order[j - 1]), path) };
        shared[j] = s;
        close(&mut open, s, time, j);
        while open.len() <= path.len() {
            open.push((time, j));
        }
        time += stacks.line_value(i) as u64;
    }
    close(&mut open, 0, time, n);

    let mut lines = Vec::new();
    // The run under one dropped frame: (its first line, sum, the frame's depth).
    let mut run: Option<(usize, i64, u32)> = None;
    for j in 0..n {
        let (i, k) = (order[j], first_dropped[j]);
        let v = stacks.line_value(i);
        if let Some((_, sum, depth)) = &mut run {
            if k == *depth && (k as usize) < shared[j] {
                *sum = sum.saturating_add(v);
                continue;
            }
        }
        if let Some((first, sum, _)) = run.take() {
            lines.push(stacks.line_text(first, sum));
        }
        if k == u32::MAX {
            lines.push(stacks.line_text(i, v));
        } else {
            run = Some((i, v, k));
        }
    }
    if let Some((first, sum, _)) = run {
        lines.push(stacks.line_text(first, sum));
    }
    (lines.len() < n).then_some(lines)
}

/// Rewrites `(1,234,567 bytes, 12.34%)` in tooltips to `(1.18 MiB, 1,234,567 bytes, 12.34%)`.
fn humanize_titles(svg: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(svg);
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    let mut rest: &str = &s;
    const PAT: &str = " bytes, ";
    while let Some(i) = rest.find(PAT) {
        let head = &rest[..i];
        let start = head.rfind('(').map(|p| p + 1).unwrap_or(head.len());
        let digits = &head[start..];
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b',') {
            let n: i64 = digits.replace(',', "").parse().unwrap_or(0);
            out.push_str(&head[..start]);
            out.push_str(&human_bytes(n));
            out.push_str(", ");
            out.push_str(digits);
        } else {
            out.push_str(head);
        }
        out.push_str(PAT);
        rest = &rest[i + PAT.len()..];
    }
    out.push_str(rest);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{ProfileMeta, Tables, ValueKind, ValueType};

    /// A profile of many stacks over labels that are prefixes of one another (where the order
    /// of a stack's text and of its frames differ), with values from 1 to 1,000,000 so that
    /// most frames are narrower than inferno's 0.1%.
    fn skewed_profile(extra: &[&str]) -> Profile {
        let mut names: Vec<String> =
            ["foo", "foo.bar", "foo::x", "foo(int)", "lib.so+0x1234", "lib.so+0x12345", "a b", "zeta"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        names.extend(extra.iter().map(|s| s.to_string()));
        let mut tables = Tables::default();
        let frames: Vec<_> = names
            .iter()
            .map(|n| {
                let id = tables.strings.intern(n);
                tables.intern_frame(None, 0, id)
            })
            .collect();
        let mut x: u64 = 12345;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut stacks = Vec::new();
        for _ in 0..3000 {
            let depth = 1 + next(7) as usize;
            let path: Vec<_> =
                (0..depth).map(|d| frames[(next(if d < 2 { 3 } else { names.len() as u64 })) as usize]).collect();
            let value = [1, 10, 100, 1000, 1_000_000][next(5) as usize] as i64;
            stacks.push((tables.intern_stack(&path).unwrap(), value));
        }
        let types = vec![ValueType::new("space", "bytes", ValueKind::UnreleasedSize)];
        let mut p = Profile::new(Arc::new(tables), ProfileMeta::default(), types);
        for (s, v) in stacks {
            p.push_sample(s, &[v]);
        }
        p
    }

    #[test]
    fn pruned_input_draws_the_same_svg() {
        let p = skewed_profile(&[]);
        for opts in [
            SvgOptions::default(),
            SvgOptions { inverted: true, width: 800, ..SvgOptions::default() },
            SvgOptions { min_width: 2.0, ..SvgOptions::default() },
        ] {
            let stacks = FoldedStacks::of(&p, &FoldedOptions { value_index: 0, annotations: false }, sanitize);
            let order = stacks.positive_in_line_order();
            let pruned = pruned_lines(&stacks, &order, opts.min_width).expect("something is pruned");
            assert!(pruned.len() < order.len() * 4 / 5, "{} of {} lines left", pruned.len(), order.len());
            let full = render(&p.header, &opts, false, |fo| FoldedStacks::of(&p, fo, sanitize)).unwrap();
            let got = render(&p.header, &opts, true, |fo| FoldedStacks::of(&p, fo, sanitize)).unwrap();
            assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(full).unwrap());
        }
    }

    #[test]
    fn labels_inferno_reads_otherwise_are_not_pruned() {
        for odd in ["foo 12", " lead", "trail ", "# comment", "x .5"] {
            let p = skewed_profile(&[odd]);
            let stacks = FoldedStacks::of(&p, &FoldedOptions::default(), sanitize);
            assert!(pruned_lines(&stacks, &stacks.positive_in_line_order(), 0.1).is_none(), "{odd:?}");
            assert_eq!(
                render(&p.header, &SvgOptions::default(), true, |fo| FoldedStacks::of(&p, fo, sanitize)).unwrap(),
                render(&p.header, &SvgOptions::default(), false, |fo| FoldedStacks::of(&p, fo, sanitize)).unwrap()
            );
        }
    }

    #[test]
    fn totals_past_2_pow_63_are_refused() {
        // Found by `cargo fuzz run pprof_reader`: values whose sum passes 2^63 wrapped (release)
        // or panicked (debug) here, and inferno adds them up again in `usize`.
        let mut tables = Tables::default();
        let name = tables.strings.intern("f");
        let f = tables.intern_frame(None, 0, name);
        let s = tables.intern_stack(&[f]).unwrap();
        let g = tables.strings.intern("g");
        let g = tables.intern_frame(None, 0, g);
        let t = tables.intern_stack(&[g]).unwrap();
        let types = vec![ValueType::new("space", "bytes", ValueKind::UnreleasedSize)];
        let mut p = Profile::new(Arc::new(tables), ProfileMeta::default(), types);
        p.push_sample(s, &[i64::MAX - 1]);
        p.push_sample(t, &[2]);
        assert_eq!(p.total(0), i64::MAX);
        let e = encode_svg(&p, &SvgOptions::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::LimitExceeded);
        assert!(e.to_string().contains("sum past 2^63"), "{e}");
        // One below the limit is drawn.
        let mut q = Profile::new(p.tables.clone(), ProfileMeta::default(), p.header.sample_types.clone());
        q.push_sample(s, &[i64::MAX - 2]);
        q.push_sample(t, &[2]);
        assert!(encode_svg(&q, &SvgOptions::default()).is_ok());
    }

    #[test]
    fn titles_get_units() {
        let got =
            humanize_titles(b"<title>malloc (1,572,864 bytes, 50.00%)</title><title>all (10 bytes, 100%)</title>");
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "<title>malloc (1.50 MiB, 1,572,864 bytes, 50.00%)</title><title>all (10 B, 10 bytes, 100%)</title>"
        );
    }
}
