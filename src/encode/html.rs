//! A self-contained HTML report: one file with its data, script and styles inline (no network,
//! opens from `file://`), drawing an interactive flame graph of a profile or of two profiles
//! compared.
//!
//! **What the page holds.** A header (input, process, pid, heap, dump and time, sampling
//! interval, the total of every sample type, data-loss flags, symbolization coverage with the
//! mappings left unsymbolized, how much was pruned); a flame graph (or icicle) drawn on a
//! canvas, with click to zoom, reset, search with the matched share and tooltips giving exact
//! values and percentages; a selector of the sample type shown; sortable tables of functions
//! (self and cumulative, counted once per stack), of mappings and of stacks, whose rows
//! highlight their frames in the graph. A Java heap's report adds its classes by retained
//! size and its largest retainers, each with its path from a GC root
//! ([`encode_heap_html`]); several dumps of one process and heap make one report with a
//! timeline of their totals, a click on a dump showing it ([`encode_html_timeline`]). A diff (`BASE` and `NEW`) colours frames by their inclusive change
//! (growth red, shrinkage blue), shows before/after/delta/% in tooltips and sorts its table by
//! what grew most.
//!
//! **Why a renderer of our own.** The graph is drawn by ~600 lines of plain JavaScript on one
//! `<canvas>` (`html/report.js`): a frame is a rectangle filled in one pass over the nodes in
//! pre-order, skipping whole subtrees narrower than half a pixel, so a redraw costs what is
//! visible, not what the profile holds. An SVG or DOM renderer (d3-flame-graph and the like)
//! creates one element per frame: at the 300 000-callstack size of the benchmark that is
//! hundreds of thousands of elements, seconds of layout and hundreds of megabytes in the
//! browser, plus a vendored library several times the size of this script.
//!
//! **Data encoding.** Frames are merged by label into one tree (as folded stacks name them,
//! see [`super::labels`]), written in pre-order with children sorted by name, as parallel
//! arrays in a JSON document: `parent` as the distance back to the parent, `name` and `map` as
//! indexes into one string table, and the node's **self** value per series (the page adds them
//! up). Nodes whose cumulative value is below `prune_below` percent of the total in every
//! series are merged, with their subtrees, into one `[other]` node per parent; the header
//! says how many nodes and how much value that merged. Per function name and per mapping,
//! `functions` and `mappings` hold the self and cumulative values of the whole tree, computed
//! before pruning: the tables show them, and a search matching one function name reports its
//! exact share from them even when some of its frames were merged into `[other]` (a search
//! matching several names is exact when they were all kept, else shown as the range that
//! holds the true share). The JSON is placed in a
//! `<script type="application/json">` with every `<` escaped, so no label can end it.

use std::fmt::Write as _;

use rustc_hash::FxHashMap as HashMap;
use serde_json::{Value, json};

use super::labels::frame_labels;
use crate::error::{Error, ErrorKind, Result};
use crate::model::annotate::{Annotation, AnnotationState, annotate_node};
use crate::model::heap_report::HeapTop;
use crate::model::mapping::basename;
use crate::model::profile::saturating_sum;
use crate::model::{Profile, ProfileMeta, StackId};

const SCRIPT: &str = include_str!("html/report.js");
const STYLE: &str = include_str!("html/report.css");
const BODY: &str = include_str!("html/body.html");

/// The label of the node that stands for the pruned children of a parent.
pub const OTHER: &str = "[other]";

/// Options of the HTML report.
#[derive(Debug, Clone)]
pub struct HtmlOptions {
    /// The sample type shown first (index into the sample types). Default: 0.
    pub value_index: usize,
    /// Append ART annotations to frame names. Default: false.
    pub annotations: bool,
    /// Title; `None` derives one from the profile. Default: `None`.
    pub title: Option<String>,
    /// Nodes below this percentage of the total (in every sample type) are merged into an
    /// `[other]` node per parent. Default: 0.01 (%).
    pub prune_below: f64,
}

/// The default of [`HtmlOptions::prune_below`], in percent.
pub const DEFAULT_PRUNE_BELOW: f64 = 0.01;

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions { value_index: 0, annotations: false, title: None, prune_below: DEFAULT_PRUNE_BELOW }
    }
}

/// Frames merged by label into one tree; node 0 is the root (`all`), and a node's parent has a
/// smaller index.
struct LabelTree {
    parent: Vec<u32>,
    name: Vec<u32>,
    map: Vec<u32>,
    /// Self values, `series` per node.
    values: Vec<i64>,
    series: usize,
    index: HashMap<(u32, u32), u32>,
    strings: Vec<String>,
    string_index: HashMap<String, u32>,
    /// Native frames seen, and of them those with neither name nor lines, per mapping name.
    native_frames: u64,
    unsymbolized: HashMap<u32, u64>,
}

impl LabelTree {
    fn new(series: usize) -> Self {
        let mut t = LabelTree {
            parent: Vec::new(),
            name: Vec::new(),
            map: Vec::new(),
            values: Vec::new(),
            series,
            index: HashMap::default(),
            strings: Vec::new(),
            string_index: HashMap::default(),
            native_frames: 0,
            unsymbolized: HashMap::default(),
        };
        t.intern("");
        let all = t.intern("all");
        t.push(0, all, 0);
        t
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.string_index.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_owned());
        self.string_index.insert(s.to_owned(), i);
        i
    }

    fn push(&mut self, parent: u32, name: u32, map: u32) -> u32 {
        let id = self.parent.len() as u32;
        self.parent.push(parent);
        self.name.push(name);
        self.map.push(map);
        self.values.extend(std::iter::repeat_n(0, self.series));
        id
    }

    fn child(&mut self, parent: u32, name: u32, map: u32) -> u32 {
        // One hash per lookup, found or made.
        let next = self.parent.len() as u32;
        let c = *self.index.entry((parent, name)).or_insert(next);
        if c == next {
            self.push(parent, name, map);
        }
        c
    }

    /// Adds the samples of `profile` as series `first..first + types`, with BASE values scaled
    /// by `scale[type]` (1 but for normalized diffs).
    fn add(&mut self, profile: &Profile, first: usize, scale: &[f64], annotations: bool) {
        let tables = &profile.tables;
        const UNSET: u32 = u32::MAX;
        // Per stack node: the tree node it ends at, and the annotation state below it.
        let mut memo: Vec<u32> = vec![UNSET; tables.stack_count()];
        let mut states: Vec<AnnotationState> = vec![AnnotationState::Initial; tables.stack_count()];
        let mut seen_frame = vec![false; tables.frames().len()];
        let mut chain: Vec<StackId> = Vec::new();
        let mut labels: Vec<String> = Vec::new();
        // (frame, annotation) -> its labels' range in `label_ids` and its mapping, made once.
        const ANNOTATIONS: usize = Annotation::ALL.len();
        let mut label_cache: Vec<(u32, u32, u32)> = vec![(UNSET, 0, 0); tables.frames().len() * ANNOTATIONS];
        let mut label_ids: Vec<u32> = Vec::new();
        let types = profile.header.sample_types.len();
        if self.parent.len() == 1 {
            // About one tree node per stack node (more with inlined frames, fewer when labels
            // merge): reserved once rather than grown by doubling.
            let guess = tables.stack_count().min(profile.samples().len().saturating_mul(64));
            self.parent.reserve(guess);
            self.name.reserve(guess);
            self.map.reserve(guess);
            self.values.reserve(guess * self.series);
            self.index.reserve(guess);
        }
        for (stack, values) in profile.samples() {
            if values.iter().all(|&v| v == 0) {
                continue;
            }
            chain.clear();
            let mut cur = Some(stack);
            while let Some(s) = cur {
                if memo[s.0 as usize] != UNSET {
                    break;
                }
                chain.push(s);
                cur = tables.stack_node(s).parent;
            }
            let (mut node, mut state) = match cur {
                Some(s) => (memo[s.0 as usize], states[s.0 as usize]),
                None => (0, AnnotationState::Initial),
            };
            for &s in chain.iter().rev() {
                let (next, a) = annotate_node(tables, state, s);
                state = next;
                let a = if annotations { a } else { Annotation::None };
                let fid = tables.stack_node(s).frame;
                // A frame's labels (and mapping) are made once per annotation it shows with.
                let key = fid.0 as usize * ANNOTATIONS + a.index();
                let (start, end, map) = match label_cache[key] {
                    (start, end, map) if start != UNSET => (start as usize, end as usize, map),
                    _ => {
                        labels.clear();
                        frame_labels(tables, s, a, &mut labels);
                        let frame = tables.frame(fid);
                        let map_name =
                            frame.mapping.map(|m| basename(tables.strings.get(tables.mapping(m).path))).unwrap_or("");
                        let map = self.intern(map_name);
                        let start = label_ids.len();
                        for l in &labels {
                            let id = self.intern(l);
                            label_ids.push(id);
                        }
                        label_cache[key] = (start as u32, label_ids.len() as u32, map);
                        (start, label_ids.len(), map)
                    }
                };
                if !seen_frame[fid.0 as usize] {
                    seen_frame[fid.0 as usize] = true;
                    let frame = tables.frame(fid);
                    if frame.mapping.is_some() {
                        self.native_frames += 1;
                        if frame.lines.is_empty() && tables.strings.get(frame.name).is_empty() {
                            *self.unsymbolized.entry(map).or_default() += 1;
                        }
                    }
                }
                for &name in &label_ids[start..end] {
                    node = self.child(node, name, map);
                }
                memo[s.0 as usize] = node;
                states[s.0 as usize] = state;
            }
            let base = node as usize * self.series + first;
            for t in 0..types {
                let v = values[t];
                self.values[base + t] += if scale[t] == 1.0 { v } else { (v as f64 * scale[t]).round() as i64 };
            }
        }
    }
}

/// What the walk of [`emit`] has still to write: a tree node below an output parent, or the
/// `[other]` node of an output parent with its values.
enum Pending {
    Node(u32, u32),
    Other(u32, Vec<i64>),
}

/// Per key (a function name or a mapping, as string ids of the tree), the self and the
/// cumulative value per series over the whole tree before pruning, a key counted once per
/// stack (recursion does not count twice): what the page's tables show and its search share
/// is made exact with.
struct KeyTotals {
    self_: Vec<i64>,
    cum: Vec<i64>,
    seen: Vec<bool>,
}

/// The whole tree's children, as ranges of one array (`kids[offsets[i]..offsets[i + 1]]`),
/// each sorted by label.
struct Children {
    offsets: Vec<u32>,
    kids: Vec<u32>,
}

impl Children {
    fn of(tree: &LabelTree) -> Self {
        let n = tree.parent.len();
        let mut offsets = vec![0u32; n + 1];
        for i in 1..n {
            offsets[tree.parent[i] as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut kids = vec![0u32; n.saturating_sub(1)];
        for i in 1..n {
            let p = tree.parent[i] as usize;
            kids[fill[p] as usize] = i as u32;
            fill[p] += 1;
        }
        // Labels compared once, by their rank in text order.
        let mut by_text: Vec<u32> = (0..tree.strings.len() as u32).collect();
        by_text.sort_unstable_by(|&a, &b| tree.strings[a as usize].cmp(&tree.strings[b as usize]));
        let mut rank = vec![0u32; tree.strings.len()];
        for (r, &id) in by_text.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        for i in 0..n {
            let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
            if b - a > 1 {
                kids[a..b].sort_unstable_by_key(|&c| rank[tree.name[c as usize] as usize]);
            }
        }
        Children { offsets, kids }
    }

    fn of_node(&self, i: usize) -> &[u32] {
        &self.kids[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// Totals per function name and per mapping over the whole tree (see [`KeyTotals`]), from the
/// cumulative values `cum` (`series` per node).
fn key_totals(tree: &LabelTree, children: &Children, cum: &[i64], series: usize) -> [KeyTotals; 2] {
    let keys = tree.strings.len();
    let s = series;
    let mut out =
        [0, 1].map(|_| KeyTotals { self_: vec![0; keys * s], cum: vec![0; keys * s], seen: vec![false; keys] });
    let mut on_stack = [vec![0u32; keys], vec![0u32; keys]];
    // Depth-first: (node, index of its next child).
    let mut walk: Vec<(u32, u32)> = Vec::new();
    let mut own = vec![0i64; s];
    for &c in children.of_node(0) {
        walk.push((c, 0));
        let mut enter = true;
        while let Some(&mut (node, ref mut next)) = walk.last_mut() {
            let i = node as usize;
            if enter {
                own.copy_from_slice(&cum[i * s..(i + 1) * s]);
                for &c in children.of_node(i) {
                    for v in 0..s {
                        own[v] = own[v].saturating_sub(cum[c as usize * s + v]);
                    }
                }
                for (which, key) in [tree.name[i], tree.map[i]].into_iter().enumerate() {
                    let (t, k) = (&mut out[which], key as usize);
                    t.seen[k] = true;
                    let first = on_stack[which][k] == 0;
                    for v in 0..s {
                        t.self_[k * s + v] = t.self_[k * s + v].saturating_add(own[v]);
                        if first {
                            t.cum[k * s + v] = t.cum[k * s + v].saturating_add(cum[i * s + v]);
                        }
                    }
                    on_stack[which][k] += 1;
                }
            }
            let kids = children.of_node(i);
            if (*next as usize) < kids.len() {
                let c = kids[*next as usize];
                *next += 1;
                walk.push((c, 0));
                enter = true;
            } else {
                on_stack[0][tree.name[i] as usize] -= 1;
                on_stack[1][tree.map[i] as usize] -= 1;
                walk.pop();
                enter = false;
            }
        }
    }
    out
}

/// The tree as the page reads it (see the module docs): pruned, in pre-order, with a string
/// table of the names it uses, and the exact totals per function and per mapping.
fn emit(mut tree: LabelTree, prune_below: f64) -> Value {
    // The (parent, name) index is not needed any more: its memory goes before the rest is made.
    tree.index = HashMap::default();
    let n = tree.parent.len();
    let s = tree.series;
    // Self values become cumulative ones in place; a node's self value is its cumulative one
    // less its children's.
    let mut cum = std::mem::take(&mut tree.values);
    for i in (1..n).rev() {
        let p = tree.parent[i] as usize;
        for k in 0..s {
            cum[p * s + k] = cum[p * s + k].saturating_add(cum[i * s + k]);
        }
    }
    let self_of = |i: usize, k: usize, kids: &[u32]| {
        cum[i * s + k].saturating_sub(saturating_sum(kids.iter().map(|&c| cum[c as usize * s + k])))
    };
    let thresholds: Vec<f64> = (0..s).map(|k| cum[k].unsigned_abs() as f64 * prune_below / 100.0).collect();
    let keep = |i: usize| {
        (0..s).any(|k| {
            let v = cum[i * s + k].unsigned_abs() as f64;
            v > 0.0 && v >= thresholds[k]
        })
    };
    let children = Children::of(&tree);
    let mut size = vec![1u32; n];
    for i in (1..n).rev() {
        size[tree.parent[i] as usize] += size[i];
    }

    let mut strings: Vec<&str> = vec!["", OTHER];
    let mut string_index: HashMap<&str, u32> = HashMap::default();
    string_index.insert("", 0);
    string_index.insert(OTHER, 1);
    let mut out_parent: Vec<u32> = Vec::new();
    let mut out_name: Vec<u32> = Vec::new();
    let mut out_map: Vec<u32> = Vec::new();
    let mut out_self: Vec<Vec<i64>> = vec![Vec::new(); s];
    let mut pruned_nodes = 0u64;
    let mut pruned_values = vec![0i64; s];
    let mut todo: Vec<Pending> = vec![Pending::Node(0, 0)];
    let mut kept: Vec<u32> = Vec::new();
    let mut pruned: Vec<u32> = Vec::new();
    while let Some(item) = todo.pop() {
        let me = out_parent.len() as u32;
        match item {
            Pending::Other(p, vals) => {
                out_parent.push(me - p);
                out_name.push(1);
                out_map.push(0);
                for (k, v) in vals.into_iter().enumerate() {
                    out_self[k].push(v);
                }
            }
            Pending::Node(node, p) => {
                let i = node as usize;
                out_parent.push(me - p);
                for (field, out) in [(tree.name[i], &mut out_name), (tree.map[i], &mut out_map)] {
                    let text = tree.strings[field as usize].as_str();
                    let next = strings.len() as u32;
                    let id = *string_index.entry(text).or_insert(next);
                    if id == next {
                        strings.push(text);
                    }
                    out.push(id);
                }
                let kids = children.of_node(i);
                for (k, col) in out_self.iter_mut().enumerate() {
                    col.push(self_of(i, k, kids));
                }
                kept.clear();
                pruned.clear();
                for &c in kids {
                    if keep(c as usize) { kept.push(c) } else { pruned.push(c) }
                }
                if !pruned.is_empty() {
                    let mut vals = vec![0i64; s];
                    for &c in &pruned {
                        pruned_nodes += u64::from(size[c as usize]);
                        for k in 0..s {
                            vals[k] += cum[c as usize * s + k];
                        }
                    }
                    for k in 0..s {
                        pruned_values[k] += vals[k];
                    }
                    // Written after the kept children: pushed first, popped last.
                    todo.push(Pending::Other(me, vals));
                }
                for &c in kept.iter().rev() {
                    todo.push(Pending::Node(c, me));
                }
            }
        }
    }
    // Exact totals per function and mapping (names only in pruned frames join the strings).
    let totals = key_totals(&tree, &children, &cum, s);
    let mut tables = Vec::new();
    for t in &totals {
        let mut ids = Vec::new();
        let mut self_cols: Vec<Vec<i64>> = vec![Vec::new(); s];
        let mut cum_cols: Vec<Vec<i64>> = vec![Vec::new(); s];
        for k in 0..tree.strings.len() {
            let (sv, cv) = (&t.self_[k * s..(k + 1) * s], &t.cum[k * s..(k + 1) * s]);
            if !t.seen[k] || (sv.iter().all(|&v| v == 0) && cv.iter().all(|&v| v == 0)) {
                continue;
            }
            let text = tree.strings[k].as_str();
            let next = strings.len() as u32;
            let id = *string_index.entry(text).or_insert(next);
            if id == next {
                strings.push(text);
            }
            ids.push(id);
            for v in 0..s {
                self_cols[v].push(sv[v]);
                cum_cols[v].push(cv[v]);
            }
        }
        tables.push(json!({ "key": ids, "self": self_cols, "cum": cum_cols }));
    }
    let mut unsym: Vec<(&str, u64)> =
        tree.unsymbolized.iter().map(|(&m, &c)| (tree.strings[m as usize].as_str(), c)).collect();
    unsym.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let unsym_frames: u64 = unsym.iter().map(|x| x.1).sum();
    let [functions, mappings]: [Value; 2] = tables.try_into().expect("two key tables");
    json!({
        "strings": strings,
        "nodes": { "parent": out_parent, "name": out_name, "map": out_map, "self": out_self },
        "functions": functions,
        "mappings": mappings,
        "totals": (0..s).map(|k| cum[k]).collect::<Vec<_>>(),
        "pruned": { "below_percent": prune_below, "nodes": pruned_nodes, "values": pruned_values },
        "symbols": {
            "native_frames": tree.native_frames,
            "unsymbolized_frames": unsym_frames,
            "unsymbolized_mappings": unsym.iter().map(|(m, c)| json!({
                "mapping": if m.is_empty() { "[unnamed mapping]" } else { m },
                "frames": c,
            })).collect::<Vec<_>>(),
        },
    })
}

/// The header's facts about where a profile came from.
fn meta_json(meta: &ProfileMeta) -> Value {
    json!({
        "source": meta.source,
        "process": meta.process_name,
        "pid": meta.pid,
        "heap": if meta.heap.is_empty() { None } else { Some(&meta.heap) },
        "dump": meta.dump_index + 1,
        "timestamp_ns": meta.timestamp,
        "timestamp_converted": meta.timestamp_converted,
        "sampling_interval": meta.sampling_interval,
        "dump_at_max": meta.flags.dump_at_max,
        "data_loss": meta.flags.data_loss(),
        "title": meta.title,
        "describe": meta.describe(),
    })
}

fn types_json(profile: &Profile) -> Vec<Value> {
    profile
        .header
        .sample_types
        .iter()
        .map(|t| json!({"name": t.name, "unit": if t.kind.is_bytes() { "bytes" } else { t.unit.as_str() }}))
        .collect()
}

/// One profile's document as the page reads it (see the module docs).
fn profile_doc(profile: &Profile, opts: &HtmlOptions) -> Result<Value> {
    let types = profile.header.sample_types.len();
    check_index(opts.value_index, types)?;
    let mut tree = LabelTree::new(types);
    tree.add(profile, 0, &vec![1.0; types], opts.annotations);
    let mut doc = emit(tree, opts.prune_below);
    let title = opts.title.clone().unwrap_or_else(|| profile.header.meta.describe());
    doc["kind"] = json!("profile");
    doc["title"] = json!(title);
    doc["meta"] = meta_json(&profile.header.meta);
    doc["types"] = json!(types_json(profile));
    doc["shown"] = json!(opts.value_index);
    Ok(doc)
}

/// Renders a profile as an HTML report (see the module docs).
pub fn encode_html(profile: &Profile, opts: &HtmlOptions) -> Result<Vec<u8>> {
    let doc = profile_doc(profile, opts)?;
    let title = doc["title"].as_str().unwrap_or_default().to_owned();
    Ok(page(&title, &doc))
}

/// Renders a Java heap's tree (dominator or shortest-path, as `profile` holds it) as an HTML
/// report with the heap's `top` report beside it: tables of the classes by retained size and of
/// the largest retainers, and for a chosen one its path from a GC root.
pub fn encode_heap_html(profile: &Profile, top: &HeapTop, opts: &HtmlOptions) -> Result<Vec<u8>> {
    let mut doc = profile_doc(profile, opts)?;
    doc["heap"] = serde_json::to_value(top).expect("the heap report serializes");
    let title = doc["title"].as_str().unwrap_or_default().to_owned();
    Ok(page(&title, &doc))
}

/// Renders several dumps of one process and heap (in time order) as one HTML report: a
/// timeline chart of every dump's totals above the flame graph and tables of the dump chosen
/// on it (the last one at first). Each dump is pruned on its own.
pub fn encode_html_timeline(profiles: &[&Profile], opts: &HtmlOptions) -> Result<Vec<u8>> {
    let Some(last) = profiles.last() else {
        return Err(Error::new(ErrorKind::NoData, "no dump to report"));
    };
    let docs = profiles.iter().map(|p| profile_doc(p, opts)).collect::<Result<Vec<Value>>>()?;
    let m = &last.header.meta;
    let title = opts.title.clone().unwrap_or_else(|| {
        let who = match (&m.process_name, m.pid) {
            (Some(n), Some(p)) => format!("{n} (pid {p})"),
            (None, Some(p)) => format!("pid {p}"),
            (Some(n), None) => n.clone(),
            (None, None) => "unknown process".to_owned(),
        };
        format!("{who}, heap {}: {} dumps", m.heap, profiles.len())
    });
    let doc = json!({ "kind": "timeline", "title": title, "dumps": docs, "chosen": profiles.len() - 1 });
    Ok(page(&title, &doc))
}

/// Names and scaling of a comparison in the HTML report.
#[derive(Debug, Clone)]
pub struct HtmlDiffOptions {
    /// What the report draws first and how it prunes.
    pub html: HtmlOptions,
    /// Scale BASE's values of each type to NEW's total before comparing. Default: false.
    pub normalize: bool,
    /// Name of BASE. Default: `BASE`.
    pub base_name: String,
    /// Name of NEW. Default: `NEW`.
    pub new_name: String,
}

impl Default for HtmlDiffOptions {
    fn default() -> Self {
        HtmlDiffOptions {
            html: HtmlOptions::default(),
            normalize: false,
            base_name: "BASE".to_owned(),
            new_name: "NEW".to_owned(),
        }
    }
}

/// Renders two profiles with the same sample types compared (NEW against BASE) as an HTML
/// report: frame widths are NEW's values (BASE's at the press of a button), colours the
/// inclusive change.
pub fn encode_diff_html(base: &Profile, new: &Profile, opts: &HtmlDiffOptions) -> Result<Vec<u8>> {
    let types = new.header.sample_types.len();
    check_index(opts.html.value_index, types)?;
    if base.header.sample_types.len() != types {
        return Err(Error::new(ErrorKind::Usage, "the two profiles compared have different sample types"));
    }
    let scale: Vec<f64> = (0..types)
        .map(|t| {
            let (b, n) = (base.total(t), new.total(t));
            if opts.normalize && b != 0 { n as f64 / b as f64 } else { 1.0 }
        })
        .collect();
    let mut tree = LabelTree::new(2 * types);
    tree.add(base, 0, &scale, opts.html.annotations);
    tree.add(new, types, &vec![1.0; types], opts.html.annotations);
    let mut doc = emit(tree, opts.html.prune_below);
    let title = opts.html.title.clone().unwrap_or_else(|| format!("{} \u{2192} {}", opts.base_name, opts.new_name));
    doc["kind"] = json!("diff");
    doc["title"] = json!(title);
    doc["meta"] = meta_json(&new.header.meta);
    doc["base_meta"] = meta_json(&base.header.meta);
    doc["base_name"] = json!(opts.base_name);
    doc["new_name"] = json!(opts.new_name);
    doc["normalized"] = json!(opts.normalize);
    doc["types"] = json!(types_json(new));
    doc["shown"] = json!(opts.html.value_index);
    Ok(page(&title, &doc))
}

fn check_index(index: usize, types: usize) -> Result<()> {
    if index >= types {
        return Err(Error::new(ErrorKind::Usage, format!("value index {index} out of range")));
    }
    Ok(())
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The whole page: styles, the body's skeleton, the data and the script.
fn page(title: &str, doc: &Value) -> Vec<u8> {
    let data = serde_json::to_string(doc).expect("a report serializes").replace('<', "\\u003c");
    let mut out = String::with_capacity(data.len() + SCRIPT.len() + STYLE.len() + BODY.len() + 512);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    // Nothing is fetched: no network, no other file.
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n",
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<meta name=\"generator\" content=\"heapconv\">\n");
    let _ = writeln!(out, "<title>{}</title>", html_escape(title));
    let _ = write!(out, "<style>\n{STYLE}</style>\n</head>\n<body>\n{BODY}");
    let _ = writeln!(out, "<script type=\"application/json\" id=\"heapconv-data\">{data}</script>");
    let _ = write!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
    out.into_bytes()
}

/// One input of a batch, as the batch's `index.html` lists it.
#[derive(Debug, Clone, Default)]
pub struct IndexRow {
    /// The input's path.
    pub input: String,
    /// `ok`, `partial` or `failed`.
    pub status: String,
    /// Its reports, relative to the index.
    pub links: Vec<String>,
    /// Per profile converted: its description and totals by meaning (`unreleased-size`, …).
    pub profiles: Vec<(String, Vec<(String, i64)>)>,
    /// Why it failed, or what it warned about.
    pub note: Option<String>,
}

/// The `index.html` of a batch of reports: a table linking each input's reports with their
/// totals (no script; self-contained).
pub fn encode_index(title: &str, rows: &[IndexRow]) -> Vec<u8> {
    let mut body = String::new();
    let _ = writeln!(body, "<h1>{}</h1>\n<table id=\"hc-index\">", html_escape(title));
    body.push_str("<thead><tr><th>Input</th><th>Status</th><th>Profile</th><th>Totals</th></tr></thead>\n<tbody>\n");
    for r in rows {
        let n = r.profiles.len().max(r.links.len()).max(1);
        for k in 0..n {
            body.push_str("<tr>");
            if k == 0 {
                let _ = write!(
                    body,
                    "<td rowspan=\"{n}\">{}</td><td rowspan=\"{n}\" class=\"st-{}\">{}{}</td>",
                    html_escape(&r.input),
                    html_escape(&r.status),
                    html_escape(&r.status),
                    r.note
                        .as_deref()
                        .map(|x| format!("<div class=\"note\">{}</div>", html_escape(x)))
                        .unwrap_or_default()
                );
            }
            let name = r.profiles.get(k).map(|p| p.0.as_str()).unwrap_or("");
            // A report per profile: the link is named by its profile. Otherwise (a timeline
            // report holds several dumps) by its file, and the profiles are listed beside.
            let paired = r.links.len() == r.profiles.len();
            match r.links.get(k) {
                Some(href) => {
                    let label = if name.is_empty() || !paired { href.as_str() } else { name };
                    let _ = write!(body, "<td><a href=\"{}\">{}</a>", html_escape(href), html_escape(label));
                    if !paired && !name.is_empty() {
                        let _ = write!(body, " {}", html_escape(name));
                    }
                    body.push_str("</td>");
                }
                None => {
                    let _ = write!(body, "<td>{}</td>", html_escape(name));
                }
            }
            let totals: Vec<String> = r
                .profiles
                .get(k)
                .map(|p| {
                    p.1.iter()
                        .map(|(key, v)| {
                            let shown =
                                if key.ends_with("-size") { super::labels::human_bytes(*v) } else { v.to_string() };
                            format!("{} {}", html_escape(key), shown)
                        })
                        .collect()
                })
                .unwrap_or_default();
            let _ = writeln!(body, "<td>{}</td></tr>", totals.join(" &middot; "));
        }
    }
    body.push_str("</tbody>\n</table>\n");
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    let _ = writeln!(out, "<title>{}</title>", html_escape(title));
    let _ = write!(out, "<style>\n{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{Tables, ValueKind, ValueType};

    #[test]
    fn index_names_a_timeline_report_by_its_file_and_lists_its_dumps() {
        let row = |links: &[&str], profiles: &[&str]| IndexRow {
            input: "t.pftrace".to_owned(),
            status: "ok".to_owned(),
            links: links.iter().map(|s| s.to_string()).collect(),
            profiles: profiles.iter().map(|p| (p.to_string(), vec![("unreleased-size".to_owned(), 2048)])).collect(),
            note: None,
        };
        // One report per dump: each link is named by its dump.
        let one = String::from_utf8(encode_index("b", &[row(&["a.html", "b.html"], &["dump 1", "dump 2"])])).unwrap();
        assert!(one.contains("<a href=\"a.html\">dump 1</a></td>"), "{one}");
        assert!(one.contains("<a href=\"b.html\">dump 2</a></td>"), "{one}");
        // One timeline report of two dumps: the link is named by its file, each dump listed.
        let tl = String::from_utf8(encode_index("b", &[row(&["tl.html"], &["dump 1", "dump 2"])])).unwrap();
        assert!(tl.contains("<a href=\"tl.html\">tl.html</a> dump 1</td>"), "{tl}");
        assert!(tl.contains("<td>dump 2</td>"), "{tl}");
        assert!(!tl.contains(">dump 1</a>"), "{tl}");
    }

    fn profile(stacks: &[(&[&str], i64)]) -> Profile {
        let mut t = Tables::default();
        let mut ids = Vec::new();
        for (names, v) in stacks {
            let frames: Vec<_> = names
                .iter()
                .map(|n| {
                    let s = t.strings.intern(n);
                    t.intern_frame(None, 0, s)
                })
                .collect();
            ids.push((t.intern_stack(&frames).unwrap(), *v));
        }
        let types = vec![
            ValueType::new("space", "bytes", ValueKind::UnreleasedSize),
            ValueType::new("objects", "count", ValueKind::UnreleasedCount),
        ];
        let mut p = Profile::new(Arc::new(t), ProfileMeta::default(), types);
        for (s, v) in ids {
            p.push_sample(s, &[v, 1]);
        }
        p
    }

    fn data(html: &[u8]) -> Value {
        let s = std::str::from_utf8(html).unwrap();
        let start = s.find("id=\"heapconv-data\">").unwrap() + "id=\"heapconv-data\">".len();
        let end = start + s[start..].find("</script>").unwrap();
        serde_json::from_str(&s[start..end]).unwrap()
    }

    fn names(d: &Value) -> Vec<String> {
        let strings = d["strings"].as_array().unwrap();
        d["nodes"]["name"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| strings[i.as_u64().unwrap() as usize].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn tree_in_preorder_with_self_values_and_parent_distances() {
        let p = profile(&[(&["main", "b"], 30), (&["main", "a"], 10), (&["main"], 5), (&["other"], 1)]);
        let d = data(&encode_html(&p, &HtmlOptions { prune_below: 0.0, ..Default::default() }).unwrap());
        assert_eq!(names(&d), ["all", "main", "a", "b", "other"]);
        assert_eq!(d["nodes"]["parent"], json!([0, 1, 1, 2, 4]));
        assert_eq!(d["nodes"]["self"][0], json!([0, 5, 10, 30, 1]));
        assert_eq!(d["nodes"]["self"][1], json!([0, 1, 1, 1, 1]));
        assert_eq!(d["totals"], json!([46, 4]));
        assert_eq!(d["pruned"]["nodes"], json!(0));
    }

    #[test]
    fn small_nodes_merge_into_other_per_parent() {
        // 1 of 10 000 is 0.01 %: kept at the default; 1 of 100 000 is not.
        let p = profile(&[
            (&["main", "big"], 99_990),
            (&["main", "tiny1"], 4),
            (&["main", "tiny2"], 5),
            (&["main", "x", "y"], 1),
        ]);
        let mut p = p;
        // Make the count series small too, so that only values decide.
        let (t, m, ty, d, s, mut v) = p.clone().into_parts();
        for c in v.chunks_mut(2) {
            c[1] = 0;
        }
        v[1] = 1;
        p = Profile::from_parts(t, m, ty, d, s, v);
        let d = data(&encode_html(&p, &HtmlOptions::default()).unwrap());
        assert_eq!(names(&d), ["all", "main", "big", "[other]"]);
        assert_eq!(d["nodes"]["self"][0], json!([0, 0, 99_990, 10]));
        assert_eq!(d["pruned"]["nodes"], json!(4));
        assert_eq!(d["pruned"]["values"], json!([10, 0]));
    }

    #[test]
    fn function_totals_are_exact_when_frames_are_pruned() {
        // `leaf` under the pruned `tiny` is still counted; `main` recursing counts once.
        let p = profile(&[
            (&["main", "big", "leaf"], 99_990),
            (&["main", "tiny", "leaf"], 9),
            (&["main", "main", "leaf"], 1),
        ]);
        // Counts only on the first stack, so that sizes alone decide what is pruned.
        let (t, m, ty, dd, st, mut v) = p.into_parts();
        for c in v.chunks_mut(2).skip(1) {
            c[1] = 0;
        }
        let p = Profile::from_parts(t, m, ty, dd, st, v);
        let d = data(&encode_html(&p, &HtmlOptions { prune_below: 1.0, ..Default::default() }).unwrap());
        assert_eq!(names(&d), ["all", "main", "big", "leaf", "[other]"]);
        let strings = d["strings"].as_array().unwrap();
        let f = &d["functions"];
        let row = |n: &str| {
            let k =
                f["key"].as_array().unwrap().iter().position(|k| strings[k.as_u64().unwrap() as usize] == n).unwrap();
            (f["self"][0][k].as_i64().unwrap(), f["cum"][0][k].as_i64().unwrap(), f["cum"][1][k].as_i64().unwrap())
        };
        assert_eq!(row("leaf"), (100_000, 100_000, 1));
        assert_eq!(row("main"), (0, 100_000, 1));
        assert_eq!(row("tiny"), (0, 9, 0));
        assert_eq!(d["mappings"]["key"], json!([0]));
        assert_eq!(d["mappings"]["cum"][0], json!([100_000]));
        assert_eq!(d["pruned"]["values"], json!([10, 0]));
    }

    #[test]
    fn timeline_holds_every_dump() {
        let a = profile(&[(&["main", "a"], 10)]);
        let b = profile(&[(&["main", "a"], 10), (&["main", "b"], 30)]);
        let d = data(&encode_html_timeline(&[&a, &b], &HtmlOptions::default()).unwrap());
        assert_eq!(d["kind"], "timeline");
        assert_eq!(d["chosen"], 1);
        assert_eq!(d["dumps"][0]["totals"], json!([10, 1]));
        assert_eq!(d["dumps"][1]["totals"], json!([40, 2]));
        assert_eq!(d["title"], "unknown process, heap : 2 dumps");
    }

    #[test]
    fn diff_has_base_then_new_series_and_escapes_script_ends() {
        let base = profile(&[(&["main", "</script><b>"], 10)]);
        let new = profile(&[(&["main", "</script><b>"], 25), (&["main", "fresh"], 5)]);
        let html = encode_diff_html(&base, &new, &HtmlDiffOptions::default()).unwrap();
        let text = String::from_utf8(html.clone()).unwrap();
        assert_eq!(text.matches("</script>").count(), 2, "only the two script elements end");
        let d = data(&html);
        assert_eq!(d["kind"], "diff");
        assert_eq!(names(&d), ["all", "main", "</script><b>", "fresh"]);
        assert_eq!(d["nodes"]["self"][0], json!([0, 0, 10, 0]));
        assert_eq!(d["nodes"]["self"][2], json!([0, 0, 25, 5]));
        assert_eq!(d["totals"], json!([10, 1, 30, 2]));
    }

    #[test]
    fn index_links_reports_with_totals() {
        let rows = [
            IndexRow {
                input: "a<b>.pftrace".into(),
                status: "ok".into(),
                links: vec!["a.html".into()],
                profiles: vec![(
                    "app (pid 1)".into(),
                    vec![("unreleased-size".into(), 2048), ("total-count".into(), 3)],
                )],
                note: None,
            },
            IndexRow {
                input: "bad.pftrace".into(),
                status: "failed".into(),
                note: Some("truncated".into()),
                ..Default::default()
            },
        ];
        let html = String::from_utf8(encode_index("heapconv convert: 2 inputs", &rows)).unwrap();
        assert!(
            html.contains(
                "<td><a href=\"a.html\">app (pid 1)</a></td><td>unreleased-size 2.00 KiB &middot; total-count 3</td>"
            ),
            "{html}"
        );
        assert!(html.contains("a&lt;b&gt;.pftrace"));
        assert!(html.contains("class=\"st-failed\">failed<div class=\"note\">truncated</div>"));
    }

    #[test]
    fn deterministic() {
        let p = profile(&[(&["z"], 1), (&["a", "b"], 2), (&["m"], 3)]);
        assert_eq!(
            encode_html(&p, &HtmlOptions::default()).unwrap(),
            encode_html(&p, &HtmlOptions::default()).unwrap()
        );
    }
}
