//! Folded stacks (Brendan Gregg's "collapsed" format), one line per distinct stack:
//! `root;caller;…;leaf VALUE`.
//!
//! Escaping rule, so that every line splits back into the same frames: inside a frame label a
//! backslash is written `\\`, a semicolon `\;`, a line feed `\n` and a carriage return `\r`.
//! The value follows the last space of the line. Lines with value 0 are left out; stacks
//! whose labels are identical (frames that differ only by address) are summed into one line.
//! Lines are sorted by their text, so output is deterministic.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::io::Write;

use rayon::slice::ParallelSliceMut;

use super::labels::{frame_id_labels, labelled_samples};
use crate::model::annotate::{Annotation, AnnotationState, FrameClass, annotate_with, classify_frames};
use crate::model::{FlatProfile, FrameId, Profile, StringId, StringTable, Tables};

/// Options of the folded encoder.
#[derive(Debug, Clone, Default)]
pub struct FoldedOptions {
    /// Which sample value to write (index into the profile's sample types). Default: 0.
    pub value_index: usize,
    /// Append ART annotations to frame names. Default: false.
    pub annotations: bool,
}

/// Escapes one frame label (see the module docs).
pub fn escape_frame(label: &str) -> String {
    let mut s = String::with_capacity(label.len());
    for c in label.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            ';' => s.push_str("\\;"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            c => s.push(c),
        }
    }
    s
}

/// Splits a folded line back into frames and value (the inverse of [`encode_folded`]'s
/// escaping); `None` for a line that has no value.
pub fn parse_folded_line(line: &str) -> Option<(Vec<String>, i64)> {
    let (stack, value) = line.rsplit_once(' ')?;
    let value = value.trim().parse().ok()?;
    let mut frames = Vec::new();
    let mut cur = String::new();
    let mut chars = stack.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => cur.push('\n'),
                Some('r') => cur.push('\r'),
                Some(o) => cur.push(o),
                None => cur.push('\\'),
            },
            ';' => frames.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    frames.push(cur);
    Some((frames, value))
}

/// Folded lines (label text -> summed value), sorted.
pub fn folded_lines(profile: &Profile, opts: &FoldedOptions, escape: fn(&str) -> String) -> BTreeMap<String, i64> {
    let mut lines: BTreeMap<String, i64> = BTreeMap::new();
    for (labels, v) in labelled_samples(profile, opts.value_index, opts.annotations) {
        let key = labels.iter().map(|l| escape(l)).collect::<Vec<_>>().join(";");
        let e = lines.entry(key).or_default();
        *e = e.saturating_add(v);
    }
    lines
}

/// Encodes a profile as folded stacks.
pub fn encode_folded(profile: &Profile, opts: &FoldedOptions) -> String {
    let mut out = Vec::new();
    write_folded(profile, opts, &mut out).expect("writing to memory");
    String::from_utf8(out).expect("labels are text")
}

/// Writes a profile as folded stacks to `out`, line by line (the text is never held whole).
pub fn write_folded(profile: &Profile, opts: &FoldedOptions, out: &mut impl Write) -> std::io::Result<()> {
    FoldedStacks::of(profile, opts, escape_frame).write(out)
}

/// [`write_folded`] of a profile with frame lists: the same text as for
/// [`FlatProfile::to_profile`], without its stack tree.
pub fn write_folded_flat(profile: &FlatProfile, opts: &FoldedOptions, out: &mut impl Write) -> std::io::Result<()> {
    FoldedStacks::of_flat(profile, opts, escape_frame).write(out)
}

/// One line of [`FoldedStacks`]: a distinct label path and its summed value.
#[derive(Debug, Clone, Copy)]
struct FoldedLine {
    /// Where its label ids start in [`FoldedStacks::ids`].
    start: usize,
    /// How many labels it has.
    len: u32,
    value: i64,
}

/// A profile's folded stacks, aggregated and sorted, without their text: each distinct stack of
/// labels once with its summed value, the labels interned. What folded stacks and flame graphs
/// are written from; [`FoldedStacks::write`] streams the text.
#[derive(Debug, Default)]
pub struct FoldedStacks {
    /// Distinct labels, escaped, interned: a label's id is its id in this table (whose id 0,
    /// "", is a label only when `empty_used`).
    labels: StringTable,
    empty_used: bool,
    /// Per label, its rank in the order of the labels' text followed by `;` (no label holds an
    /// unescaped `;`, so two labels never tie).
    rank: Vec<u32>,
    /// The ranks decide (see [`FoldedStacks::of`]).
    ranked: bool,
    /// Label ids of every line, concatenated.
    ids: Vec<u32>,
    /// Lines (zero sums included), in the order of their text.
    lines: Vec<FoldedLine>,
}

impl FoldedStacks {
    /// Aggregates the samples of `profile` (value `opts.value_index`, zeros left out) by their
    /// labels, each label escaped by `escape`, sorted by text as [`folded_lines`] orders them.
    pub fn of(profile: &Profile, opts: &FoldedOptions, escape: fn(&str) -> String) -> FoldedStacks {
        let tables = &profile.tables;
        let mut b = LineBuilder::new(tables, opts.annotations, escape, profile.samples().len(), 0);
        let mut nodes = Vec::new();
        for (stack, values) in profile.samples() {
            let value = values[opts.value_index];
            if value == 0 {
                continue;
            }
            tables.stack_nodes_root_first(stack, &mut nodes);
            b.add(nodes.iter().map(|&n| tables.stack_node(n).frame), value);
        }
        b.finish()
    }

    /// [`FoldedStacks::of`] of a profile with frame lists ([`FlatProfile`]): the same lines as
    /// for [`FlatProfile::to_profile`], without building its stack tree. Samples without
    /// frames are left out (as `to_profile` leaves them out).
    pub fn of_flat(profile: &FlatProfile, opts: &FoldedOptions, escape: fn(&str) -> String) -> FoldedStacks {
        let frames = profile.all_frames().len();
        let mut b = LineBuilder::new(&profile.tables, opts.annotations, escape, profile.sample_count(), frames);
        for i in 0..profile.sample_count() {
            let (leaf_first, values) = profile.sample(i);
            let value = values[opts.value_index];
            if value == 0 || leaf_first.is_empty() {
                continue;
            }
            b.add(leaf_first.iter().rev().copied(), value);
        }
        b.finish()
    }
}

/// Gathers the lines of [`FoldedStacks`]: each frame's labels made (and interned) once per
/// annotation, each stack's label ids appended.
struct LineBuilder<'a> {
    tables: &'a Tables,
    annotations: bool,
    escape: fn(&str) -> String,
    classes: Vec<FrameClass>,
    /// (frame, annotation) (with annotations off, frame) -> its labels, `u32::MAX` until made:
    /// a frame of one label (most) has the label's id, a frame of several the index of their
    /// range in `ranges` with [`SEVERAL`] set.
    slot: Vec<u32>,
    /// Range of label ids in `seqs` of each (frame, annotation) made.
    ranges: Vec<(u32, u32)>,
    seqs: Vec<u32>,
    labels: StringTable,
    /// Whether "" (id 0 of `labels`) is a label.
    empty_used: bool,
    scratch: Vec<String>,
    ids: Vec<u32>,
    lines: Vec<FoldedLine>,
}

impl<'a> LineBuilder<'a> {
    /// `samples` and `frames`: how many stacks and frame references to expect (0: unknown).
    fn new(tables: &'a Tables, annotations: bool, escape: fn(&str) -> String, samples: usize, frames: usize) -> Self {
        let per_frame = if annotations { ANNOTATIONS } else { 1 };
        LineBuilder {
            tables,
            annotations,
            escape,
            classes: if annotations { classify_frames(tables) } else { Vec::new() },
            slot: vec![u32::MAX; tables.frames().len() * per_frame],
            ranges: Vec::new(),
            seqs: Vec::new(),
            labels: StringTable::default(),
            empty_used: false,
            scratch: Vec::new(),
            ids: Vec::with_capacity(frames),
            lines: Vec::with_capacity(samples),
        }
    }

    /// Adds one stack (its frames root first) with its value.
    fn add(&mut self, root_first: impl Iterator<Item = FrameId>, value: i64) {
        let start = self.ids.len();
        let mut state = AnnotationState::Initial;
        for frame in root_first {
            let (annotation, key) = if self.annotations {
                let (next, a) = annotate_with(state, self.classes[frame.0 as usize]);
                state = next;
                (a, frame.0 as usize * ANNOTATIONS + annotation_index(a))
            } else {
                (Annotation::None, frame.0 as usize)
            };
            let slot = self.slot[key];
            if slot != u32::MAX && slot & SEVERAL == 0 {
                self.ids.push(slot);
                continue;
            }
            if slot == u32::MAX {
                self.scratch.clear();
                frame_id_labels(self.tables, frame, annotation, &mut self.scratch);
                let first = self.seqs.len() as u32;
                for l in &self.scratch {
                    let l = (self.escape)(l);
                    let id = self.labels.intern(&l).0;
                    assert!(id < SEVERAL, "fewer than 2^31 labels");
                    self.empty_used |= id == 0;
                    self.seqs.push(id);
                }
                let len = self.seqs.len() as u32 - first;
                if len == 1 {
                    self.slot[key] = self.seqs[first as usize];
                    self.ids.push(self.seqs[first as usize]);
                    continue;
                }
                self.slot[key] = self.ranges.len() as u32 | SEVERAL;
                self.ranges.push((first, len));
            }
            let (first, len) = self.ranges[(self.slot[key] & !SEVERAL) as usize];
            self.ids.extend_from_slice(&self.seqs[first as usize..(first + len) as usize]);
        }
        let len = u32::try_from(self.ids.len() - start).expect("fewer than 2^32 labels in a stack");
        self.lines.push(FoldedLine { start, len, value });
    }

    /// Ranks the labels and sorts and merges the lines.
    fn finish(self) -> FoldedStacks {
        let mut clock = crate::timing::Phases::start("folded");
        let LineBuilder { labels, empty_used, ids, lines, slot, seqs, ranges, .. } = self;
        drop((slot, seqs, ranges));
        let text = |id: u32| labels.get(StringId(id));
        // Ranks of the labels in the order of their text followed by `;`: the order of two
        // lines that go on after the first label where they differ.
        // Sorted by the first 16 bytes of that text (zero-padded: a shorter text is a prefix of
        // the one it ties with, and first in either order) beside the id, the whole texts read
        // only on a tie.
        use rayon::prelude::*;
        let mut keyed: Vec<(u128, u32)> = (0..labels.len() as u32)
            .into_par_iter()
            .map(|id| {
                let l = text(id);
                let mut head = [0u8; 16];
                let n = l.len().min(16);
                head[..n].copy_from_slice(&l.as_bytes()[..n]);
                if n < 16 {
                    head[n] = b';';
                }
                (u128::from_be_bytes(head), id)
            })
            .collect();
        keyed.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| cmp_with_semicolon(text(a.1), text(b.1))));
        let by_text: Vec<u32> = keyed.into_iter().map(|k| k.1).collect();
        let mut rank = vec![0u32; labels.len()];
        for (r, &id) in by_text.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        // With an escape that leaves `;` in labels, one text with `;` could begin another: then
        // the ranks are not used.
        // (In text order, a label whose text with `;` begins another's comes right before it,
        // or before labels that begin with it too.)
        let used: Vec<u32> = by_text.into_iter().filter(|&id| id != 0 || empty_used).collect();
        let ranked = used.windows(2).all(|w| {
            let (a, b) = (text(w[0]).as_bytes(), text(w[1]).as_bytes());
            !(b.starts_with(a) && b.get(a.len()) == Some(&b';'))
        });
        drop(used);
        clock.done("label ranks");
        let mut stacks = FoldedStacks { labels, empty_used, rank, ranked, ids, lines };
        let mut lines = std::mem::take(&mut stacks.lines);
        lines.par_sort_unstable_by(|a, b| stacks.cmp_text(a, b, false));
        clock.done("line sort");
        // Stacks whose labels are identical are one line.
        lines.dedup_by(|b, a| {
            if stacks.path(a) == stacks.path(b) {
                a.value = a.value.saturating_add(b.value);
                true
            } else {
                false
            }
        });
        stacks.lines = lines;
        stacks
    }
}

/// The order of `a;` and `b;` (a label's text followed by `;`), compared as bytes.
fn cmp_with_semicolon(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len().min(b.len());
    a[..n].cmp(&b[..n]).then_with(|| match a.len().cmp(&b.len()) {
        Ordering::Equal => Ordering::Equal,
        // `a;` against `b`'s next byte; when that is `;` too, `a;` is a prefix of `b;…`.
        Ordering::Less => b';'.cmp(&b[n]).then(Ordering::Less),
        Ordering::Greater => a[n].cmp(&b';').then(Ordering::Greater),
    })
}

/// How many labels two paths share at their start (compared eight at a time while they agree).
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n && a[i..i + 8] == b[i..i + 8] {
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

impl FoldedStacks {
    fn path(&self, l: &FoldedLine) -> &[u32] {
        &self.ids[l.start..l.start + l.len as usize]
    }

    /// Compares the text of two lines: the labels joined by `;`, and with `with_value` a space
    /// and the value after them (the order of whole lines, as inferno sorts them).
    fn cmp_text(&self, a: &FoldedLine, b: &FoldedLine, with_value: bool) -> Ordering {
        let (pa, pb) = (self.path(a), self.path(b));
        let i = common_prefix(pa, pb);
        if self.ranked && i + 1 < pa.len() && i + 1 < pb.len() {
            // Both go on after their labels at `i` with `;`.
            return self.rank[pa[i] as usize].cmp(&self.rank[pb[i] as usize]);
        }
        if i == pa.len() && i == pb.len() && !with_value {
            return Ordering::Equal;
        }
        let (mut va, mut vb) = ([0u8; 20], [0u8; 20]);
        let ta: &[u8] = if with_value { decimal(a.value, &mut va) } else { &[] };
        let tb: &[u8] = if with_value { decimal(b.value, &mut vb) } else { &[] };
        self.rest(pa, i, ta).cmp(self.rest(pb, i, tb))
    }

    /// The bytes of a line's text after its first `i` labels (and the `;` after them).
    fn rest<'a>(&'a self, path: &'a [u32], i: usize, tail: &'a [u8]) -> impl Iterator<Item = u8> + 'a {
        let tail_sep: &[u8] = if tail.is_empty() { &[] } else { b" " };
        path[i..]
            .iter()
            .enumerate()
            .flat_map(move |(k, &id)| {
                let sep: &[u8] = if i + k > 0 { b";" } else { &[] };
                sep.iter().chain(self.labels.get(StringId(id)).as_bytes())
            })
            .chain(tail_sep)
            .chain(tail)
            .copied()
    }

    /// Labels of line `i` (in text order).
    pub(crate) fn line_path(&self, i: usize) -> &[u32] {
        self.path(&self.lines[i])
    }

    /// Summed value of line `i`.
    pub(crate) fn line_value(&self, i: usize) -> i64 {
        self.lines[i].value
    }

    /// Every distinct label, escaped.
    pub(crate) fn labels(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.labels.len() as u32).filter(|&id| id != 0 || self.empty_used).map(|id| self.labels.get(StringId(id)))
    }

    /// The lines with a positive value, in the order of their text followed by a space and
    /// the value (the order inferno sorts lines in).
    pub(crate) fn positive_in_line_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.lines.len()).filter(|&i| self.lines[i].value > 0).collect();
        // Nearly sorted already (the text order of the stacks alone differs only where a stack's
        // text is a prefix of another's): a stable sort finds the sorted runs, in parallel
        // pieces (rayon's is stable too: the same order).
        order.par_sort_by(|&a, &b| self.cmp_text(&self.lines[a], &self.lines[b], true));
        order
    }

    /// Line `i`'s labels joined by `;`, a space and `value`.
    pub(crate) fn line_text(&self, i: usize, value: i64) -> String {
        let mut out = Vec::new();
        let mut buf = [0u8; 20];
        self.write_stack(&self.lines[i], &mut out).expect("writing to memory");
        out.push(b' ');
        out.extend_from_slice(decimal(value, &mut buf));
        String::from_utf8(out).expect("labels are text")
    }

    /// Number of lines (distinct stacks), zero sums included.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when no sample had a value.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The lines' labels and values, in text order.
    pub fn lines(&self) -> impl Iterator<Item = (Vec<&str>, i64)> + '_ {
        self.lines.iter().map(|l| (self.path(l).iter().map(|&id| self.labels.get(StringId(id))).collect(), l.value))
    }

    /// Writes line `l`'s labels joined by `;`.
    fn write_stack(&self, l: &FoldedLine, out: &mut impl Write) -> std::io::Result<()> {
        for (k, &id) in self.path(l).iter().enumerate() {
            if k > 0 {
                out.write_all(b";")?;
            }
            out.write_all(self.labels.get(StringId(id)).as_bytes())?;
        }
        Ok(())
    }

    /// Writes the folded text (lines whose sum is 0 left out) to `out`, line by line.
    pub fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut buf = [0u8; 20];
        for l in self.lines.iter().filter(|l| l.value != 0) {
            self.write_stack(l, out)?;
            out.write_all(b" ")?;
            out.write_all(decimal(l.value, &mut buf))?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// Set in a [`LineBuilder`] slot that indexes a range of labels rather than naming one.
const SEVERAL: u32 = 1 << 31;

/// Number of [`Annotation`] values.
const ANNOTATIONS: usize = 6;

fn annotation_index(a: Annotation) -> usize {
    match a {
        Annotation::None => 0,
        Annotation::Interp => 1,
        Annotation::Jit => 2,
        Annotation::Aot => 3,
        Annotation::CommonFrame => 4,
        Annotation::CommonFrameInterp => 5,
    }
}

/// `v` in decimal, written at the end of `buf`.
fn decimal(v: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_compare_as_their_text_with_a_semicolon_and_paths_by_their_shared_start() {
        let texts = ["", "a", "a;", "a;b", "a!", "a:", "ab", "b", "a<", "a;;", "\u{e9}", "z;a"];
        for x in texts {
            for y in texts {
                let want = format!("{x};").into_bytes().cmp(&format!("{y};").into_bytes());
                assert_eq!(cmp_with_semicolon(x, y), want, "{x:?} {y:?}");
            }
        }
        let a: Vec<u32> = (0..20).collect();
        for k in 0..=20 {
            let mut b = a.clone();
            if k < 20 {
                b[k] = 99;
            }
            assert_eq!(common_prefix(&a, &b), k);
            assert_eq!(common_prefix(&a[..k.min(13)], &b), k.min(13));
        }
    }

    #[test]
    fn streamed_text_is_the_sorted_map_of_labels() {
        use std::sync::Arc;

        use crate::model::{ProfileMeta, Tables, ValueKind, ValueType};
        let names = ["foo", "foo.bar", "foo;x", "foo\\y", "foo bar", "a", "", "foo 1"];
        let mut tables = Tables::default();
        let frames: Vec<_> = names
            .iter()
            .map(|n| {
                let id = tables.strings.intern(n);
                tables.intern_frame(None, 0, id)
            })
            .collect();
        let mut stacks = Vec::new();
        for i in 0..400usize {
            let path: Vec<_> = (0..1 + i % 5).map(|d| frames[(i * 7 + d * 3 + i / 9) % names.len()]).collect();
            stacks.push((tables.intern_stack(&path).unwrap(), (i as i64 % 7) - 2));
        }
        let types = vec![ValueType::new("n", "count", ValueKind::TotalCount)];
        let mut p = Profile::new(Arc::new(tables), ProfileMeta::default(), types);
        for (s, v) in stacks {
            p.push_sample(s, &[v]);
        }
        let opts = FoldedOptions::default();
        let mut want = String::new();
        for (k, v) in folded_lines(&p, &opts, escape_frame) {
            if v != 0 {
                want.push_str(&format!("{k} {v}\n"));
            }
        }
        assert!(want.lines().count() > 20, "{want}");
        assert_eq!(encode_folded(&p, &opts), want);
        // The labels are those of the lines, "" among them only when a line has it.
        let labels_of = |stacks: &FoldedStacks| {
            let mut used: Vec<String> = stacks.lines().flat_map(|(l, _)| l).map(str::to_owned).collect();
            used.sort();
            used.dedup();
            let mut all: Vec<String> = stacks.labels().map(str::to_owned).collect();
            all.sort();
            (all, used)
        };
        let (all, used) = labels_of(&FoldedStacks::of(&p, &opts, escape_frame));
        assert_eq!(all, used);
        assert!(!all.contains(&String::new()));
        let blank_a: fn(&str) -> String = |l| if l == "a" { String::new() } else { escape_frame(l) };
        let (all, used) = labels_of(&FoldedStacks::of(&p, &opts, blank_a));
        assert_eq!(all, used);
        assert!(all.contains(&String::new()));
    }

    #[test]
    fn frame_lists_give_the_stack_trees_text() {
        use std::sync::Arc;

        use crate::model::{FlatProfile, Frame, FrameId, Line, ProfileMeta, StringId, Tables, ValueKind, ValueType};
        let mut tables = Tables::default();
        let mut frames: Vec<FrameId> = ["main", "a;b", "_ZN3foo3barEv", "c", ""]
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let id = tables.strings.intern(n);
                tables.intern_frame(None, 0x100 * i as u64, id)
            })
            .collect();
        // A symbolized frame with two inlined functions: two labels for one frame.
        let (f, g) = (tables.strings.intern("outer"), tables.strings.intern("inner"));
        let line = |function| Line { function, system_name: function, file: StringId::default(), line: 0, column: 0 };
        let name = tables.strings.intern("x");
        frames.push(tables.intern_frame_exact(Frame {
            mapping: None,
            rel_pc: 9,
            raw_name: name,
            name,
            lines: vec![line(g), line(f)],
        }));
        let types = vec![
            ValueType::new("n", "count", ValueKind::TotalCount),
            ValueType::new("s", "bytes", ValueKind::TotalSize),
        ];
        let mut flat = FlatProfile::new(Arc::new(tables), ProfileMeta::default(), types);
        for i in 0..300usize {
            let leaf_first: Vec<FrameId> =
                (0..i % 6).map(|d| frames[(i * 5 + d * 7 + i / 11) % frames.len()]).collect();
            flat.push_sample(&leaf_first, &[(i % 4) as i64 - 1, i as i64], &[], &[]);
        }
        let tree = flat.to_profile();
        for annotations in [false, true] {
            for value_index in [0, 1] {
                let opts = FoldedOptions { value_index, annotations };
                let mut got = Vec::new();
                write_folded_flat(&flat, &opts, &mut got).unwrap();
                let want = encode_folded(&tree, &opts);
                assert!(want.contains("outer;inner"), "{want}");
                assert_eq!(String::from_utf8(got).unwrap(), want);
            }
        }
    }

    #[test]
    fn escaping_round_trips() {
        let frames = ["a;b", "c\\d", "e\nf", "plain name (with) spaces"];
        let line = format!("{} 42", frames.iter().map(|f| escape_frame(f)).collect::<Vec<_>>().join(";"));
        let (back, v) = parse_folded_line(&line).unwrap();
        assert_eq!(back, frames);
        assert_eq!(v, 42);
    }
}
