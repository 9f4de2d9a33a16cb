//! Top tables (`heapconv top`): flat and cumulative values per function, mapping or stack,
//! with percentages of the total, as text (the columns of `go tool pprof -top`) or JSON.
//!
//! * **By function**: a sample's value is *flat* for the innermost function of its leaf frame
//!   (the first line of the leaf location, as pprof counts it) and *cumulative* for every
//!   function anywhere in its stack, inlined ones included, counted once per sample.
//! * **By mapping**: the same with each frame's mapping (`[no mapping]` for frames without
//!   one).
//! * **By stack**: one row per distinct stack (frames as the other outputs label them);
//!   flat = cumulative = its value.
//!
//! A function row is marked as `go tool pprof -top` marks it: `(inline)` when every call into
//! it (from another function, in some sample) was inlined into its caller (the caller is an
//! outer line of the same location), `(partial-inline)` when some were; as in go, a call seen
//! twice in one sample counts as its outermost occurrence. go computes the marks on the graph
//! it shows, so they equal ours with `-nodefraction=0 -edgefraction=0` (its default cuts can
//! drop a caller, and with it a mark).
//!
//! Rows are sorted as `go tool pprof -top` sorts them: by |flat| (largest first), then by
//! name, then by |cumulative|. Percentages are of the sum of |values| (pprof's total).

use std::collections::HashMap;

use serde::Serialize;

use super::labels::{frame_labels, go_function_label, human_bytes, stack_labels};
use crate::model::annotate::Annotation;
use crate::model::profile::saturating_sum;
use crate::model::{FrameId, Profile, StackId};

/// What a top table groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopBy {
    /// Functions (frame labels, one per inlined function).
    #[default]
    Function,
    /// Mappings (loaded files).
    Mapping,
    /// Whole stacks.
    Stack,
}

impl TopBy {
    fn noun(self) -> &'static str {
        match self {
            TopBy::Function => "functions",
            TopBy::Mapping => "mappings",
            TopBy::Stack => "stacks",
        }
    }
}

/// Options of the top table.
#[derive(Debug, Clone, Default)]
pub struct TopOptions {
    /// What to group by. Default: functions.
    pub by: TopBy,
    /// Rows to keep (0: all). Default: 0.
    pub count: usize,
    /// Which sample value (index into the profile's sample types). Default: 0.
    pub value_index: usize,
    /// Name unsymbolized frames as `go tool pprof -top` does (one `[binary]` row per mapping,
    /// `<unknown>` without one) rather than one row per address. Default: false.
    pub go_names: bool,
}

/// One row of a top table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TopRow {
    /// Function name, mapping path, or the stack's frames leaf first joined by ` < `.
    pub name: String,
    /// The stack's frames, leaf first (rows by stack only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<Vec<String>>,
    /// `inline` when every call into the function was inlined, `partial-inline` when some
    /// were (rows by function only; absent otherwise), as `go tool pprof -top` marks rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline: Option<&'static str>,
    /// Value where it is the leaf.
    pub flat: i64,
    /// `flat` as % of the total.
    pub flat_percent: f64,
    /// Running sum of `flat` down to this row, as % of the total.
    pub sum_percent: f64,
    /// Value of every sample whose stack contains it.
    pub cum: i64,
    /// `cum` as % of the total.
    pub cum_percent: f64,
}

/// A top table.
#[derive(Debug, Clone, Serialize)]
pub struct TopTable {
    /// The profile it was made from.
    pub profile: String,
    /// Sample type shown.
    pub sample_type: String,
    /// Its unit.
    pub unit: String,
    /// `functions`, `mappings` or `stacks`.
    pub by: &'static str,
    /// Sum of |values| over all samples.
    pub total: i64,
    /// Rows before the cut to `count`.
    pub rows_total: usize,
    /// Sum of `flat` of the rows shown.
    pub shown_flat: i64,
    /// Rows, largest first.
    pub rows: Vec<TopRow>,
}

/// Makes the top table of a profile.
pub fn top_table(profile: &Profile, opts: &TopOptions) -> TopTable {
    let tables = &profile.tables;
    let idx = opts.value_index.min(profile.header.sample_types.len().saturating_sub(1));
    let total = saturating_sum(profile.samples().map(|(_, v)| v.get(idx).copied().unwrap_or(0).saturating_abs()));
    let mut rows: Vec<TopRow> = Vec::new();
    match opts.by {
        TopBy::Function | TopBy::Mapping => {
            // Label ids per frame, outermost first; the last one is the innermost.
            let mut names: Vec<String> = Vec::new();
            let mut name_index: HashMap<String, u32> = HashMap::new();
            let mut frame_ids: Vec<Option<Vec<u32>>> = vec![None; tables.frames().len()];
            let mut flat: Vec<i64> = Vec::new();
            let mut cum: Vec<i64> = Vec::new();
            let mut stamp: Vec<usize> = Vec::new();
            let mut buf = Vec::new();
            // Calls between functions: (caller, callee) -> inlined in every sample it was seen in
            // (by function only); `path`: a sample's (label, inlined into its caller) leaf first.
            let mut calls: HashMap<(u32, u32), bool> = HashMap::new();
            let mut path: Vec<(u32, bool)> = Vec::new();
            let mut seen_calls: std::collections::HashSet<(u32, u32)> = std::collections::HashSet::new();
            let track_calls = opts.by == TopBy::Function;
            for (i, (stack, values)) in profile.samples().enumerate() {
                let v = values.get(idx).copied().unwrap_or(0);
                if v == 0 {
                    continue;
                }
                let mut cur = Some(stack);
                let mut leaf = true;
                while let Some(s) = cur {
                    let node = tables.stack_node(s);
                    let f: FrameId = node.frame;
                    if frame_ids[f.0 as usize].is_none() {
                        buf.clear();
                        match opts.by {
                            TopBy::Function if opts.go_names => go_function_label(tables, s, &mut buf),
                            TopBy::Function => frame_labels(tables, s, Annotation::None, &mut buf),
                            _ => buf.push(match tables.frame(f).mapping {
                                Some(m) => tables.strings.get(tables.mapping(m).path).to_owned(),
                                None => "[no mapping]".to_owned(),
                            }),
                        }
                        let ids = buf
                            .drain(..)
                            .map(|n| {
                                *name_index.entry(n.clone()).or_insert_with(|| {
                                    names.push(n);
                                    flat.push(0);
                                    cum.push(0);
                                    stamp.push(usize::MAX);
                                    (names.len() - 1) as u32
                                })
                            })
                            .collect();
                        frame_ids[f.0 as usize] = Some(ids);
                    }
                    let ids = frame_ids[f.0 as usize].as_ref().expect("filled above");
                    if leaf {
                        if let Some(&inner) = ids.last() {
                            flat[inner as usize] = flat[inner as usize].saturating_add(v);
                        }
                        leaf = false;
                    }
                    for &id in ids {
                        if stamp[id as usize] != i {
                            stamp[id as usize] = i;
                            cum[id as usize] = cum[id as usize].saturating_add(v);
                        }
                    }
                    if track_calls {
                        // Innermost first: every label but the outermost was inlined into the
                        // next one out.
                        let n = ids.len();
                        path.extend(ids.iter().rev().enumerate().map(|(j, &id)| (id, j + 1 < n)));
                    }
                    cur = node.parent;
                }
                if track_calls {
                    // go walks a sample from the root; a call seen again in it is not counted.
                    seen_calls.clear();
                    let mut caller: Option<u32> = None;
                    for &(id, inlined) in path.iter().rev() {
                        if let Some(c) = caller.filter(|&c| c != id)
                            && seen_calls.insert((c, id))
                        {
                            calls.entry((c, id)).and_modify(|e| *e &= inlined).or_insert(inlined);
                        }
                        caller = Some(id);
                    }
                    path.clear();
                }
            }
            // Per callee: (some call inlined, some call not).
            let mut marks: Vec<(bool, bool)> = vec![(false, false); names.len()];
            for (&(_, callee), &inlined) in &calls {
                let m = &mut marks[callee as usize];
                if inlined {
                    m.0 = true;
                } else {
                    m.1 = true;
                }
            }
            for (k, name) in names.into_iter().enumerate() {
                if flat[k] != 0 || cum[k] != 0 {
                    let mut r = row(name, None, flat[k], cum[k]);
                    r.inline = match marks[k] {
                        (true, true) => Some("partial-inline"),
                        (true, false) => Some("inline"),
                        _ => None,
                    };
                    rows.push(r);
                }
            }
        }
        TopBy::Stack => {
            let mut by_text: HashMap<String, (Vec<String>, i64)> = HashMap::new();
            let mut labels_of: HashMap<StackId, String> = HashMap::new();
            let mut nodes = Vec::new();
            for (stack, values) in profile.samples() {
                let v = values.get(idx).copied().unwrap_or(0);
                if v == 0 {
                    continue;
                }
                let key = labels_of
                    .entry(stack)
                    .or_insert_with(|| {
                        let mut l = stack_labels(tables, stack, false, &mut nodes);
                        l.reverse();
                        let key = l.join(" < ");
                        by_text.entry(key.clone()).or_insert((l, 0));
                        key
                    })
                    .clone();
                let e = &mut by_text.get_mut(&key).expect("inserted").1;
                *e = e.saturating_add(v);
            }
            for (name, (frames, v)) in by_text {
                rows.push(row(name, Some(frames), v, v));
            }
        }
    }
    rows.sort_by(|a, b| {
        b.flat
            .unsigned_abs()
            .cmp(&a.flat.unsigned_abs())
            .then_with(|| a.name.cmp(&b.name))
            .then(b.cum.unsigned_abs().cmp(&a.cum.unsigned_abs()))
    });
    let rows_total = rows.len();
    if opts.count > 0 {
        rows.truncate(opts.count);
    }
    let pct = |v: i64| if total == 0 { 0.0 } else { (v.unsigned_abs() as f64) * 100.0 / total as f64 };
    let mut sum = 0i64;
    for r in &mut rows {
        sum = sum.saturating_add(r.flat);
        r.flat_percent = round2(pct(r.flat));
        r.sum_percent = round2(pct(sum));
        r.cum_percent = round2(pct(r.cum));
    }
    let ty = profile.header.sample_types.get(idx);
    TopTable {
        profile: profile.header.meta.describe(),
        sample_type: ty.map(|t| t.name.clone()).unwrap_or_default(),
        unit: ty.map(|t| t.unit.clone()).unwrap_or_default(),
        by: opts.by.noun(),
        total,
        rows_total,
        shown_flat: sum,
        rows,
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn row(name: String, frames: Option<Vec<String>>, flat: i64, cum: i64) -> TopRow {
    TopRow { name, frames, inline: None, flat, flat_percent: 0.0, sum_percent: 0.0, cum, cum_percent: 0.0 }
}

/// The table as text, in `go tool pprof -top`'s columns (values in B/KiB/MiB/GiB for bytes).
pub fn top_text(t: &TopTable) -> String {
    let bytes = t.unit == "bytes";
    let fmt = |v: i64| if bytes { human_bytes(v) } else { v.to_string() };
    let pct = |v: i64| if t.total == 0 { 0.0 } else { v as f64 * 100.0 / t.total as f64 };
    let mut out = String::new();
    out.push_str(&format!("Profile: {}\n", t.profile));
    out.push_str(&format!("Type: {} ({}), by {}\n", t.sample_type, t.unit, t.by));
    out.push_str(&format!(
        "Showing {} of {} {}, accounting for {} ({:.2}%) of {} total\n",
        t.rows.len(),
        t.rows_total,
        t.by,
        fmt(t.shown_flat),
        pct(t.shown_flat),
        fmt(t.total)
    ));
    out.push_str(&format!("{:>10} {:>6} {:>6} {:>10} {:>6}\n", "flat", "flat%", "sum%", "cum", "cum%"));
    for r in &t.rows {
        out.push_str(&format!(
            "{:>10} {:>5.2}% {:>5.2}% {:>10} {:>5.2}%  {}{}\n",
            fmt(r.flat),
            r.flat_percent,
            r.sum_percent,
            fmt(r.cum),
            r.cum_percent,
            r.name,
            r.inline.map(|m| format!(" ({m})")).unwrap_or_default()
        ));
    }
    out
}

/// The table as pretty JSON (exact values), with a final newline.
pub fn top_json(t: &TopTable) -> String {
    let mut s = serde_json::to_string_pretty(t).expect("a top table serializes");
    s.push('\n');
    s
}
