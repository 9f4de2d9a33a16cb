//! Differences between two profiles (BASE and NEW, made by one merge so that they share their
//! frames): differential folded stacks, a differential flame graph and a JSON report of what
//! grew.
//!
//! * **Folded**: inferno's (and FlameGraph's `difffolded.pl`) differential format, one line per
//!   distinct stack: `root;…;leaf BEFORE AFTER`, frames escaped as in [`super::folded`], lines
//!   sorted, stacks with both values 0 left out.
//! * **Flame graph**: drawn by inferno from those lines: frame widths are NEW's values. inferno
//!   colours only the leaf frame of each stack by its change; heapconv then recolours and
//!   retitles **every** frame by its inclusive change (the sum over the stacks below it), so a
//!   parent whose children grew shows as grown: red for growth, blue for shrinkage, paler for
//!   smaller changes. Tooltips read `name (before X, after Y, delta +Z, +P%)`. Stacks that
//!   vanished in NEW have no width, and are counted in their parents' "before".
//! * **JSON**: totals and the stacks and functions (cumulative, counted once per stack) that
//!   grew most, each with before, after, delta and delta %.
//!
//! **Normalization** is explicit: with `normalize`, BASE's values are scaled by NEW's total
//! over BASE's total (of the sample type shown) before comparing, so the graph shows where the
//! *share* changed rather than the absolute growth. Without it (the default), values are
//! compared as they are.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::folded::escape_frame;
use super::labels::{human_value, is_scaled_unit, labelled_samples};
use crate::error::{Error, ErrorKind, Result};
use crate::model::Profile;
use crate::model::profile::saturating_sum;

/// Options of the diff outputs.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Which sample value (index into the sample types, the same in both profiles). Default: 0.
    pub value_index: usize,
    /// Scale BASE to NEW's total before comparing. Default: false.
    pub normalize: bool,
    /// Name of BASE, for titles. Default: `BASE`.
    pub base_name: String,
    /// Name of NEW, for titles. Default: `NEW`.
    pub new_name: String,
    /// How many stacks and functions the JSON report lists. Default: 20.
    pub top: usize,
    /// Image width in pixels. Default: 1200.
    pub width: usize,
    /// HTML report: nodes below this percentage of the total are merged into `[other]`.
    /// Default: [`super::html::DEFAULT_PRUNE_BELOW`].
    pub prune_below: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            value_index: 0,
            normalize: false,
            base_name: "BASE".to_owned(),
            new_name: "NEW".to_owned(),
            top: 20,
            width: 1200,
            prune_below: super::html::DEFAULT_PRUNE_BELOW,
        }
    }
}

/// The factor that scales BASE's values of the shown type to NEW's total (1 without
/// normalization or when BASE's total is 0).
pub fn normalize_factor(base: &Profile, new: &Profile, opts: &DiffOptions) -> f64 {
    let (b, n) = (base.total(opts.value_index), new.total(opts.value_index));
    if opts.normalize && b != 0 { n as f64 / b as f64 } else { 1.0 }
}

fn scale(v: i64, f: f64) -> i64 {
    if f == 1.0 { v } else { (v as f64 * f).round() as i64 }
}

/// Per distinct stack (frames root first): (before, after), normalized as asked.
fn stack_pairs(base: &Profile, new: &Profile, opts: &DiffOptions) -> BTreeMap<Vec<String>, (i64, i64)> {
    let f = normalize_factor(base, new, opts);
    let mut out: BTreeMap<Vec<String>, (i64, i64)> = BTreeMap::new();
    for (labels, v) in labelled_samples(base, opts.value_index, false) {
        let e = &mut out.entry(labels).or_default().0;
        *e = e.saturating_add(v);
    }
    for (labels, v) in labelled_samples(new, opts.value_index, false) {
        let e = &mut out.entry(labels).or_default().1;
        *e = e.saturating_add(v);
    }
    for v in out.values_mut() {
        v.0 = scale(v.0, f);
    }
    out.retain(|_, v| *v != (0, 0));
    out
}

/// Differential folded stacks: `stack BEFORE AFTER` per line (see the module docs).
pub fn diff_folded(base: &Profile, new: &Profile, opts: &DiffOptions) -> String {
    let mut lines: Vec<String> = stack_pairs(base, new, opts)
        .into_iter()
        .map(|(frames, (b, a))| {
            let stack: Vec<String> = frames.iter().map(|l| escape_frame(l)).collect();
            format!("{} {b} {a}", stack.join(";"))
        })
        .collect();
    lines.sort();
    let mut out = String::new();
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

fn change(before: i64, after: i64, unit: &str) -> String {
    let d = after - before;
    // Counts stay plain numbers here; bytes and times read as people read them.
    let fmt = |v: i64| if is_scaled_unit(unit) { human_value(v, unit) } else { v.to_string() };
    let sign = if d > 0 { "+" } else { "" };
    let pct = if before != 0 {
        format!("{:+.2}%", d as f64 * 100.0 / before as f64)
    } else if after != 0 {
        "new".to_owned()
    } else {
        "0.00%".to_owned()
    };
    format!("before {}, after {}, delta {sign}{}, {pct}", fmt(before), fmt(after), fmt(d))
}

/// One frame of the flame graph, as heapconv lays it out (inferno's layout, replayed).
struct Node {
    name: String,
    depth: usize,
    before: i64,
    after: i64,
}

fn sanitize(label: &str) -> String {
    label.replace(';', ":").replace(['\n', '\r'], " ")
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A differential flame graph (see the module docs), titled `BASE -> NEW`.
pub fn diff_svg(base: &Profile, new: &Profile, opts: &DiffOptions) -> Result<Vec<u8>> {
    let ty = new
        .header
        .sample_types
        .get(opts.value_index)
        .ok_or_else(|| Error::new(ErrorKind::Usage, format!("value index {} out of range", opts.value_index)))?;
    let bytes = ty.kind.is_bytes() || ty.unit == "bytes";
    let mut pairs: Vec<(Vec<String>, i64, i64)> = Vec::new();
    let mut clamped = false;
    let mut merged: BTreeMap<Vec<String>, (i64, i64)> = BTreeMap::new();
    for (frames, (b, a)) in stack_pairs(base, new, opts) {
        let frames: Vec<String> = frames.iter().map(|f| sanitize(f)).collect();
        let e = merged.entry(frames).or_default();
        e.0 += b;
        e.1 += a;
    }
    for (frames, (b, a)) in merged {
        if b < 0 || a < 0 {
            clamped = true;
        }
        pairs.push((frames, b.max(0), a.max(0)));
    }
    let mut lines: Vec<String> = pairs.iter().map(|(f, b, a)| format!("{} {b} {a}", f.join(";"))).collect();
    // Sorted as inferno sorts them (by the whole line), which fixes the layout replayed below.
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by(|&x, &y| lines[x].trim().cmp(lines[y].trim()));
    lines = order.iter().map(|&i| lines[i].trim().to_owned()).collect();
    let pairs: Vec<&(Vec<String>, i64, i64)> = order.iter().map(|&i| &pairs[i]).collect();

    // Replay inferno's layout: a frame starts where the first line of its subtree starts, in
    // units of NEW's values; every frame gets the inclusive before/after of its subtree.
    let total_before = saturating_sum(pairs.iter().map(|p| p.1));
    let total_after = saturating_sum(pairs.iter().map(|p| p.2));
    let mut all: Vec<Node> = vec![Node { name: "all".to_owned(), depth: 0, before: total_before, after: total_after }];
    let mut starts: Vec<u64> = vec![0];
    // Open frames: (name, index in `all`).
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut time = 0u64;
    for (frames, b, a) in &pairs {
        let shared = open.iter().zip(frames.iter()).take_while(|(o, f)| o.0 == **f).count();
        open.truncate(shared);
        for f in &frames[shared..] {
            all.push(Node { name: f.clone(), depth: open.len() + 1, before: 0, after: 0 });
            starts.push(time);
            open.push((f.clone(), all.len() - 1));
        }
        for (_, i) in &open {
            all[*i].before += b;
            all[*i].after += a;
        }
        time += *a as u64;
    }
    // Frames with no width are not drawn (and may share a start with a drawn one).
    let mut nodes: HashMap<(usize, u64), Node> = HashMap::new();
    for (n, start) in all.into_iter().zip(starts) {
        if n.after > 0 || n.depth == 0 {
            nodes.insert((n.depth, start), n);
        }
    }

    let mut fo = inferno::flamegraph::Options::default();
    fo.title = format!("{} -> {}", opts.base_name, opts.new_name);
    let unit = if bytes { "bytes" } else { ty.unit.as_str() };
    let fmt = |v: i64| human_value(v, unit);
    let mut sub = vec![
        format!("{}: {}", ty.name, change(total_before, total_after, unit)),
        "width: NEW; colour: change of each frame with everything below it (red grew, blue shrank)".to_owned(),
    ];
    if opts.normalize {
        sub.push(format!("BASE scaled to NEW's total ({})", fmt(total_after)));
    } else {
        sub.push("not normalized".to_owned());
    }
    if clamped {
        sub.push("negative values drawn as 0".to_owned());
    }
    fo.subtitle = Some(sub.join(" · "));
    fo.count_name = if bytes { "bytes".to_owned() } else { ty.unit.clone() };
    fo.name_type = "Function:".to_owned();
    fo.deterministic = true;
    fo.hash = true;
    fo.no_sort = true;
    fo.image_width = Some(opts.width);
    fo.min_width = 0.1;
    let frame_height = fo.frame_height;
    let mut svg = Vec::new();
    if total_after == 0 {
        fo.count_name = "(empty)".to_owned();
        let empty = ["[NEW has no values] 1"];
        inferno::flamegraph::from_lines(&mut fo, empty.iter().copied(), &mut svg)
            .map_err(|e| Error::new(ErrorKind::Io, "drawing the flame graph").with_source(e))?;
        return Ok(svg);
    }
    inferno::flamegraph::from_lines(&mut fo, lines.iter().map(|s| s.as_str()), &mut svg)
        .map_err(|e| Error::new(ErrorKind::Io, "drawing the flame graph").with_source(e))?;
    let delta_max = nodes.values().filter(|n| n.depth > 0).map(|n| (n.after - n.before).unsigned_abs()).max();
    Ok(retitle(&svg, &nodes, frame_height, delta_max.unwrap_or(1).max(1), unit))
}

/// Rewrites the title and fill of every frame of inferno's SVG from `nodes`, found by their
/// depth (from `y`) and start (`fg:x`).
fn retitle(
    svg: &[u8],
    nodes: &HashMap<(usize, u64), Node>,
    frame_height: usize,
    delta_max: u64,
    unit: &str,
) -> Vec<u8> {
    let text = String::from_utf8_lossy(svg);
    let attr = |g: &str, name: &str| -> Option<u64> {
        let pat = format!(" {name}=\"");
        let i = g.find(&pat)? + pat.len();
        let j = g[i..].find('"')? + i;
        g[i..j].parse().ok()
    };
    // The root frame ("all") has the largest y: depths count up from it.
    let mut y_root = 0u64;
    let mut rest: &str = &text;
    while let Some(i) = rest.find("<rect ") {
        let tail = &rest[i..];
        let end = tail.find("/>").unwrap_or(tail.len());
        let rect = &tail[..end];
        if rect.contains("fg:x=\"0\"") {
            if let Some(y) = attr(rect, "y") {
                y_root = y_root.max(y);
            }
        }
        rest = &tail[end..];
    }
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut rest: &str = &text;
    while let Some(i) = rest.find("<title>") {
        let (head, tail) = rest.split_at(i);
        out.push_str(head);
        let Some(t_end) = tail.find("</title>") else {
            rest = tail;
            break;
        };
        let after_title = &tail[t_end + "</title>".len()..];
        let rect_end = after_title.find("/>").unwrap_or(0);
        let rect = &after_title[..rect_end];
        let key = match (attr(rect, "y"), attr(rect, "fg:x")) {
            (Some(y), Some(x)) if rect.trim_start().starts_with("<rect") && y <= y_root => {
                Some((((y_root - y) / frame_height as u64) as usize, x))
            }
            _ => None,
        };
        match key.and_then(|k| nodes.get(&k)) {
            Some(n) => {
                out.push_str("<title>");
                out.push_str(&xml_escape(&n.name));
                out.push_str(" (");
                out.push_str(&change(n.before, n.after, unit));
                out.push_str(")</title>");
                let fill = color(n.after - n.before, delta_max);
                match rect.find(" fill=\"") {
                    Some(f) => {
                        let v = f + " fill=\"".len();
                        let v_end = rect[v..].find('"').map_or(v, |e| v + e);
                        out.push_str(&rect[..v]);
                        out.push_str(&fill);
                        out.push_str(&rect[v_end..]);
                    }
                    None => out.push_str(rect),
                }
                rest = &after_title[rect_end..];
            }
            None => {
                out.push_str(&tail[..t_end + "</title>".len()]);
                rest = after_title;
            }
        }
    }
    out.push_str(rest);
    out.into_bytes()
}

/// Red for growth, blue for shrinkage, white for no change; deeper for larger changes.
fn color(delta: i64, max: u64) -> String {
    let share = (delta.unsigned_abs() as f64 / max as f64).clamp(0.0, 1.0);
    let pale = (220.0 * (1.0 - share)).round() as u8;
    match delta.signum() {
        1 => format!("rgb(255,{pale},{pale})"),
        -1 => format!("rgb({pale},{pale},255)"),
        _ => "rgb(250,250,250)".to_owned(),
    }
}

/// One entry of the diff report.
#[derive(Debug, Clone, Serialize)]
pub struct Growth {
    /// Function name (functions), or the stack's frames leaf first joined by ` < ` (stacks).
    pub name: String,
    /// The stack's frames, leaf first (stacks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<Vec<String>>,
    /// Value in BASE (normalized when asked).
    pub before: i64,
    /// Value in NEW.
    pub after: i64,
    /// `after - before`.
    pub delta: i64,
    /// `delta` as % of `before`; `None` when `before` is 0.
    pub delta_percent: Option<f64>,
}

impl Growth {
    fn new(name: String, frames: Option<Vec<String>>, before: i64, after: i64) -> Growth {
        let delta = after - before;
        let delta_percent = (before != 0).then(|| ((delta as f64 * 100.0 / before as f64) * 100.0).round() / 100.0);
        Growth { name, frames, before, after, delta, delta_percent }
    }
}

/// The diff report: totals, and what grew most.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    /// BASE's name.
    pub base: String,
    /// NEW's name.
    pub new: String,
    /// The sample type compared.
    pub sample_type: String,
    /// Its unit.
    pub unit: String,
    /// Whether BASE was scaled to NEW's total.
    pub normalized: bool,
    /// The factor BASE's values were multiplied by.
    pub base_factor: f64,
    /// Totals.
    pub total: Growth,
    /// Stacks that grew most (delta > 0), largest growth first.
    pub stacks: Vec<Growth>,
    /// Functions whose cumulative value grew most (delta > 0), largest growth first.
    pub functions: Vec<Growth>,
}

/// Computes the diff report.
pub fn diff_report(base: &Profile, new: &Profile, opts: &DiffOptions) -> DiffReport {
    let pairs = stack_pairs(base, new, opts);
    let (mut tb, mut ta) = (0i64, 0i64);
    let mut functions: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    let mut stacks = Vec::new();
    for (frames, &(b, a)) in &pairs {
        tb += b;
        ta += a;
        let mut seen: Vec<&str> = frames.iter().map(|s| s.as_str()).collect();
        seen.sort_unstable();
        seen.dedup();
        for f in seen {
            let e = functions.entry(f).or_default();
            e.0 += b;
            e.1 += a;
        }
        if a > b {
            let leaf_first: Vec<String> = frames.iter().rev().cloned().collect();
            stacks.push(Growth::new(leaf_first.join(" < "), Some(leaf_first), b, a));
        }
    }
    let rank = |v: &mut Vec<Growth>| {
        v.sort_by(|x, y| y.delta.cmp(&x.delta).then_with(|| x.name.cmp(&y.name)));
        v.truncate(opts.top);
    };
    rank(&mut stacks);
    let mut funcs: Vec<Growth> = functions
        .into_iter()
        .filter(|(_, (b, a))| a > b)
        .map(|(n, (b, a))| Growth::new(n.to_owned(), None, b, a))
        .collect();
    rank(&mut funcs);
    let ty = new.header.sample_types.get(opts.value_index);
    DiffReport {
        base: opts.base_name.clone(),
        new: opts.new_name.clone(),
        sample_type: ty.map(|t| t.name.clone()).unwrap_or_default(),
        unit: ty.map(|t| t.unit.clone()).unwrap_or_default(),
        normalized: opts.normalize,
        base_factor: normalize_factor(base, new, opts),
        total: Growth::new("total".to_owned(), None, tb, ta),
        stacks,
        functions: funcs,
    }
}

/// The diff report as pretty JSON with a final newline.
pub fn diff_json(report: &DiffReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report serializes");
    s.push('\n');
    s
}
