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
    if !label.bytes().any(|b| matches!(b, b'\\' | b';' | b'\n' | b'\r')) {
        return label.to_owned();
    }
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
    /// Per label `id`, at `2 * id` the rank of its text alone (a line that ends with it) and at
    /// `2 * id + 1` that of its text followed by `;` (a line that goes on after it), in one
    /// order of all these texts. Two lines compare as the keys of their labels at the first
    /// depth where they differ or one ends (when `ranked`; no label holds an unescaped `;`, so
    /// two keys never tie).
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
        build_lines(Stacks::Tree(profile), &profile.tables, opts, escape)
    }

    /// [`FoldedStacks::of`] of a profile with frame lists ([`FlatProfile`]): the same lines as
    /// for [`FlatProfile::to_profile`], without building its stack tree. Samples without
    /// frames are left out (as `to_profile` leaves them out).
    pub fn of_flat(profile: &FlatProfile, opts: &FoldedOptions, escape: fn(&str) -> String) -> FoldedStacks {
        build_lines(Stacks::Flat(profile), &profile.tables, opts, escape)
    }
}

/// The stacks [`build_lines`] reads.
#[derive(Clone, Copy)]
enum Stacks<'a> {
    Tree(&'a Profile),
    Flat(&'a FlatProfile),
}

impl Stacks<'_> {
    fn len(&self) -> usize {
        match self {
            Stacks::Tree(p) => p.samples().len(),
            Stacks::Flat(p) => p.sample_count(),
        }
    }

    /// Sample `i`'s value `value_index` and frames, leaf first (in `buf` or the profile's own);
    /// value 0 for a sample left out (no value, or no frames in a frame list).
    fn stack<'s>(&'s self, i: usize, value_index: usize, buf: &'s mut Vec<FrameId>) -> (i64, &'s [FrameId]) {
        match *self {
            Stacks::Tree(p) => {
                let (stack, values) = p.sample(i);
                let value = values[value_index];
                if value == 0 {
                    return (0, &[]);
                }
                p.tables.stack_frames_leaf_first(stack, buf);
                (value, buf)
            }
            Stacks::Flat(p) => {
                let (leaf_first, values) = p.sample(i);
                let value = values[value_index];
                if value == 0 || leaf_first.is_empty() {
                    return (0, &[]);
                }
                (value, leaf_first)
            }
        }
    }
}

/// Calls `f` with each frame of a stack (given leaf first), root first, its annotation and
/// its key in [`build_lines`]'s slots.
#[inline]
fn each_key(classes: Option<&[FrameClass]>, leaf_first: &[FrameId], mut f: impl FnMut(FrameId, Annotation, usize)) {
    let Some(classes) = classes else {
        for &frame in leaf_first.iter().rev() {
            f(frame, Annotation::None, frame.0 as usize);
        }
        return;
    };
    let mut state = AnnotationState::Initial;
    for &frame in leaf_first.iter().rev() {
        let (next, a) = annotate_with(state, classes[frame.0 as usize]);
        state = next;
        f(frame, a, frame.0 as usize * ANNOTATIONS + a.index());
    }
}

/// A (frame, annotation)'s labels in [`build_lines`]: the label's id for a frame of one label
/// (most), or the index of their range in `ranges` with [`SEVERAL`] set.
struct Slots {
    slot: Vec<u32>,
    /// Range of label ids in `seqs` of each (frame, annotation) of several labels.
    ranges: Vec<(u32, u32)>,
    seqs: Vec<u32>,
}

impl Slots {
    #[inline]
    fn put(&self, key: usize, mut out: impl FnMut(u32)) {
        let s = self.slot[key];
        if s & SEVERAL == 0 {
            out(s);
        } else {
            let (first, len) = self.ranges[(s & !SEVERAL) as usize];
            self.seqs[first as usize..(first + len) as usize].iter().for_each(|&id| out(id));
        }
    }
}

/// How many samples one task of [`build_lines`] turns into label ids.
const STACKS_PER_TASK: usize = 4096;

/// How many frames' labels one piece of [`build_lines`] makes before interning them (only one
/// piece's label texts are held at a time).
const FRAMES_PER_PIECE: usize = 16384;

/// Gathers the lines of [`FoldedStacks`]: the (frame, annotation) pairs the stacks use are
/// found in parallel pieces, their labels made once (in parallel) and interned in the order of
/// the pairs (label ids are only names: nothing is ordered by them); then the stacks become
/// label ids in parallel pieces (a pure lookup), their lines in sample order.
fn build_lines(src: Stacks<'_>, tables: &Tables, opts: &FoldedOptions, escape: fn(&str) -> String) -> FoldedStacks {
    use rayon::prelude::*;
    let mut clock = crate::timing::Phases::start("folded");
    let (n, vi) = (src.len(), opts.value_index);
    let classes = opts.annotations.then(|| classify_frames(tables));
    let classes = classes.as_deref();
    let per_frame = if opts.annotations { ANNOTATIONS } else { 1 };
    let keys = tables.frames().len() * per_frame;
    let tasks = n.div_ceil(STACKS_PER_TASK);
    // The (frame, annotation) pairs used (a bit per key), and each task's frames and lines.
    let (used, mut counts) = (0..tasks)
        .into_par_iter()
        .fold(
            || (vec![0u64; keys.div_ceil(64)], Vec::new(), Vec::new()),
            |(mut used, mut counts, mut buf), t| {
                let (mut frames, mut lines) = (0, 0);
                for i in t * STACKS_PER_TASK..((t + 1) * STACKS_PER_TASK).min(n) {
                    let (value, stack) = src.stack(i, vi, &mut buf);
                    if value == 0 {
                        continue;
                    }
                    frames += stack.len();
                    lines += 1;
                    each_key(classes, stack, |_, _, key| used[key / 64] |= 1 << (key % 64));
                }
                counts.push((t, frames, lines));
                (used, counts, buf)
            },
        )
        .map(|(used, counts, _)| (used, counts))
        .reduce(
            || (vec![0u64; keys.div_ceil(64)], Vec::new()),
            |(mut a, mut ac), (b, bc)| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                ac.extend(bc);
                (a, ac)
            },
        );
    counts.sort_unstable();
    let todo: Vec<usize> = (0..keys).filter(|&k| used[k / 64] & (1 << (k % 64)) != 0).collect();
    drop(used);
    clock.done("frames used");
    // The labels of each pair used, made in parallel and interned in the order of the keys.
    let mut slots = Slots { slot: vec![u32::MAX; keys], ranges: Vec::new(), seqs: Vec::new() };
    let mut labels = StringTable::default();
    let mut empty_used = false;
    for piece in todo.chunks(FRAMES_PER_PIECE) {
        let made: Vec<Vec<String>> = piece
            .par_iter()
            .map_init(Vec::new, |scratch, &key| {
                let (frame, annotation) = if opts.annotations {
                    (FrameId((key / ANNOTATIONS) as u32), Annotation::ALL[key % ANNOTATIONS])
                } else {
                    (FrameId(key as u32), Annotation::None)
                };
                scratch.clear();
                frame_id_labels(tables, frame, annotation, scratch);
                scratch.iter().map(|l| escape(l)).collect()
            })
            .collect();
        for (&key, made) in piece.iter().zip(made) {
            let first = slots.seqs.len() as u32;
            for l in &made {
                let id = labels.intern(l).0;
                assert!(id < SEVERAL, "fewer than 2^31 labels");
                empty_used |= id == 0;
                slots.seqs.push(id);
            }
            let len = slots.seqs.len() as u32 - first;
            if len == 1 {
                slots.slot[key] = slots.seqs.pop().expect("one label");
            } else {
                slots.slot[key] = slots.ranges.len() as u32 | SEVERAL;
                slots.ranges.push((first, len));
            }
        }
    }
    drop(todo);
    clock.done("labels");
    let slots = &slots;
    // Task `t`'s label ids, and its lines (where they start among the task's ids, length, value).
    let fill = |t: usize, buf: &mut Vec<FrameId>, ids: &mut dyn FnMut(u32), lines: &mut dyn FnMut(usize, u32, i64)| {
        let mut at = 0;
        for i in t * STACKS_PER_TASK..((t + 1) * STACKS_PER_TASK).min(n) {
            let (value, stack) = src.stack(i, vi, buf);
            if value == 0 {
                continue;
            }
            let mut len = 0u32;
            each_key(classes, stack, |_, _, key| {
                slots.put(key, |id| {
                    ids(id);
                    len += 1;
                })
            });
            lines(at, len, value);
            at += len as usize;
        }
    };
    let (mut ids, mut lines);
    if slots.ranges.is_empty() {
        // One label per frame: each task's ids are as many as its frames, written in place.
        ids = vec![0u32; counts.iter().map(|c| c.1).sum()];
        lines = vec![FoldedLine { start: 0, len: 0, value: 0 }; counts.iter().map(|c| c.2).sum()];
        let mut pieces = Vec::with_capacity(tasks);
        let (mut rest_ids, mut rest_lines, mut base): (&mut [u32], &mut [FoldedLine], usize) =
            (&mut ids, &mut lines, 0);
        for &(t, frames, n_lines) in &counts {
            let (a, b) = rest_ids.split_at_mut(frames);
            let (c, d) = rest_lines.split_at_mut(n_lines);
            pieces.push((t, a, c, base));
            (rest_ids, rest_lines, base) = (b, d, base + frames);
        }
        pieces.into_par_iter().for_each_init(Vec::new, |buf, (t, ids, lines, base)| {
            let mut at = 0;
            let mut line = 0;
            for i in t * STACKS_PER_TASK..((t + 1) * STACKS_PER_TASK).min(n) {
                let (value, stack) = src.stack(i, vi, buf);
                if value == 0 {
                    continue;
                }
                let start = at;
                each_key(classes, stack, |_, _, key| {
                    ids[at] = slots.slot[key];
                    at += 1;
                });
                lines[line] = FoldedLine { start: base + start, len: (at - start) as u32, value };
                line += 1;
            }
        });
    } else {
        let made: Vec<(Vec<u32>, Vec<FoldedLine>)> = (0..tasks)
            .into_par_iter()
            .map_init(Vec::new, |buf, t| {
                let (mut ids, mut lines) = (Vec::new(), Vec::new());
                fill(t, buf, &mut |id| ids.push(id), &mut |start, len, value| {
                    lines.push(FoldedLine { start, len, value })
                });
                (ids, lines)
            })
            .collect();
        ids = Vec::with_capacity(made.iter().map(|t| t.0.len()).sum());
        lines = Vec::with_capacity(made.iter().map(|t| t.1.len()).sum());
        for (t_ids, t_lines) in made {
            let base = ids.len();
            ids.extend_from_slice(&t_ids);
            lines.extend(t_lines.into_iter().map(|l| FoldedLine { start: l.start + base, ..l }));
        }
    }
    clock.done("stacks");
    finish(labels, empty_used, ids, lines)
}

/// Ranks the labels, sorts the lines by their text and merges those of identical labels.
fn finish(labels: StringTable, empty_used: bool, ids: Vec<u32>, lines: Vec<FoldedLine>) -> FoldedStacks {
    use rayon::prelude::*;
    let mut clock = crate::timing::Phases::start("folded");
    let texts: Vec<&[u8]> = (0..labels.len() as u32).map(|id| labels.get(StringId(id)).as_bytes()).collect();
    let text = |id: u32| texts[id as usize];
    // Ranks of each label's text alone (key `2 * id`: where a line ends with it; only for the
    // labels that end a line) and followed by `;` (key `2 * id + 1`: where a line goes on after
    // it), in one order: the order of two lines after the first label where they differ (see
    // `FoldedStacks::rank`).
    let mut ends = vec![false; labels.len()];
    for l in lines.iter().filter(|l| l.len > 0) {
        ends[ids[l.start + l.len as usize - 1] as usize] = true;
    }
    let keys: Vec<u32> = (0..2 * labels.len() as u32).filter(|&k| k % 2 == 1 || ends[k as usize / 2]).collect();
    drop(ends);
    // Sorted by the first 16 bytes of that text (zero-padded: a shorter text is a prefix of
    // the one it ties with, and first in either order) beside the key, the whole texts read
    // only on a tie.
    let mut keyed: Vec<(u128, u32)> = keys
        .into_par_iter()
        .map(|key| {
            let (l, goes_on) = (text(key / 2), key % 2 == 1);
            let mut head = [0u8; 16];
            let n = l.len().min(16);
            head[..n].copy_from_slice(&l[..n]);
            if n < 16 && goes_on {
                head[n] = b';';
            }
            (u128::from_be_bytes(head), key)
        })
        .collect();
    keyed.par_sort_unstable_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| cmp_label_keys(text(a.1 / 2), a.1 % 2 == 1, text(b.1 / 2), b.1 % 2 == 1))
    });
    let by_text: Vec<u32> = keyed.into_iter().map(|k| k.1).collect();
    // (Keys of labels that end no line are never read.)
    let mut rank = vec![0u32; 2 * labels.len()];
    for (r, &key) in by_text.iter().enumerate() {
        rank[key as usize] = r as u32;
    }
    // With an escape that leaves `;` in labels, one text with `;` could begin another: then
    // the ranks are not used.
    // (In text order, a label whose text with `;` begins another's comes right before it,
    // or before labels that begin with it too.)
    let used: Vec<u32> =
        by_text.into_iter().filter(|&key| key % 2 == 1 && (key / 2 != 0 || empty_used)).map(|k| k / 2).collect();
    let ranked = used.windows(2).all(|w| {
        let (a, b) = (text(w[0]), text(w[1]));
        !(b.starts_with(a) && b.get(a.len()) == Some(&b';'))
    });
    drop((used, texts));
    clock.done("label ranks");
    let mut stacks = FoldedStacks { labels, empty_used, rank, ranked, ids, lines: Vec::new() };
    let mut lines = if ranked {
        let order = stacks.order_by_ranks(&lines);
        order.into_iter().map(|i| lines[i as usize]).collect()
    } else {
        let mut lines = lines;
        lines.par_sort_unstable_by(|a, b| stacks.cmp_text(a, b, false));
        lines
    };
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

/// The order of two label keys of `FoldedStacks::rank`: the bytes of `a` (followed by `;` when
/// `a_on`) against those of `b` (followed by `;` when `b_on`).
fn cmp_label_keys(a: &[u8], a_on: bool, b: &[u8], b_on: bool) -> Ordering {
    let n = a.len().min(b.len());
    a[..n].cmp(&b[..n]).then_with(|| match a.len().cmp(&b.len()) {
        Ordering::Equal => a_on.cmp(&b_on),
        // `a` ended: before `b` unless its `;` comes after `b`'s next byte (or `a;` is `b`).
        Ordering::Less if a_on => match b';'.cmp(&b[n]) {
            Ordering::Equal if b.len() == n + 1 && !b_on => Ordering::Equal,
            Ordering::Equal => Ordering::Less,
            o => o,
        },
        Ordering::Less => Ordering::Less,
        Ordering::Greater if b_on => match a[n].cmp(&b';') {
            Ordering::Equal if a.len() == n + 1 && !a_on => Ordering::Equal,
            Ordering::Equal => Ordering::Greater,
            o => o,
        },
        Ordering::Greater => Ordering::Greater,
    })
}

/// A run of [`FoldedStacks::order_by_ranks`]'s order, `lo..hi`, of lines that share their
/// first `depth` labels and all go on after them.
#[derive(Debug, Clone, Copy)]
struct Segment {
    lo: usize,
    hi: usize,
    depth: usize,
}

/// Below this many lines, a segment is not split further before the parallel part.
const SEGMENT_SPLIT: usize = 2048;

/// How many labels two paths share at their start (compared eight at a time while they agree).
pub(crate) fn common_prefix(a: &[u32], b: &[u32]) -> usize {
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
            return self.rank[2 * pa[i] as usize + 1].cmp(&self.rank[2 * pb[i] as usize + 1]);
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

impl FoldedStacks {
    /// The order of `lines` by their text, from the label ranks alone (`self.ranked`): a most
    /// significant digit first sort, depth by depth, over the key of each line's label at the
    /// first depth where the lines of a run differ (see `FoldedStacks::rank`). Lines of
    /// identical labels end up next to each other, in any order.
    fn order_by_ranks(&self, lines: &[FoldedLine]) -> Vec<u32> {
        use rayon::prelude::*;
        let mut order: Vec<u32> = (0..lines.len() as u32).collect();
        // Lines without labels first ("" comes before any text).
        order.sort_by_key(|&i| lines[i as usize].len != 0);
        let lo = order.partition_point(|&i| lines[i as usize].len == 0);
        // Split breadth first until there are pieces enough for the threads, then sort the
        // pieces in parallel, each depth first.
        let mut big = vec![Segment { lo, hi: order.len(), depth: 0 }];
        let mut pieces = Vec::new();
        let mut keys = Vec::new();
        let want = rayon::current_num_threads() * 8;
        while let Some(seg) = big.pop() {
            if seg.hi - seg.lo <= SEGMENT_SPLIT.max(order.len() / want) {
                pieces.push(seg);
                continue;
            }
            self.split_segment(lines, &mut order, seg, &mut keys, &mut |s| big.push(s));
        }
        pieces.sort_by_key(|s| s.lo);
        let mut slices = Vec::with_capacity(pieces.len());
        let mut rest: &mut [u32] = &mut order;
        let mut at = 0;
        for s in &pieces {
            let (_, tail) = rest.split_at_mut(s.lo - at);
            let (piece, tail) = tail.split_at_mut(s.hi - s.lo);
            slices.push((piece, s.depth));
            rest = tail;
            at = s.hi;
        }
        slices.into_par_iter().for_each_init(Vec::new, |keys, (piece, depth)| {
            let mut todo = vec![Segment { lo: 0, hi: piece.len(), depth }];
            while let Some(seg) = todo.pop() {
                self.split_segment(lines, piece, seg, keys, &mut |s| todo.push(s));
            }
        });
        order
    }

    /// Sorts `seg` of `order` by the lines' labels at the first depth where they differ (or
    /// where one of them ends), and hands on each run of lines that go on after the same label.
    fn split_segment(
        &self,
        lines: &[FoldedLine],
        order: &mut [u32],
        seg: Segment,
        keys: &mut Vec<u64>,
        more: &mut dyn FnMut(Segment),
    ) {
        if seg.hi - seg.lo < 2 {
            return;
        }
        let run = &mut order[seg.lo..seg.hi];
        let path = |i: u32| self.path(&lines[i as usize]);
        let first = &path(run[0])[seg.depth..];
        // How many more labels every line shares with the first and goes on after.
        let mut same = first.len() - 1;
        for &i in &run[1..] {
            let p = &path(i)[seg.depth..];
            same = same.min(p.len() - 1);
            same = common_prefix(&first[..same], &p[..same]);
            if same == 0 {
                break;
            }
        }
        let depth = seg.depth + same;
        keys.clear();
        keys.extend(run.iter().map(|&i| {
            let p = path(i);
            let key = 2 * p[depth] as usize + usize::from(p.len() > depth + 1);
            (u64::from(self.rank[key]) << 32) | u64::from(i)
        }));
        keys.sort_unstable();
        let mut start = 0;
        for j in 0..keys.len() {
            run[j] = keys[j] as u32;
            let end = j + 1 == keys.len() || keys[j + 1] >> 32 != keys[j] >> 32;
            if end {
                if j > start && path(run[j]).len() > depth + 1 {
                    more(Segment { lo: seg.lo + start, hi: seg.lo + j + 1, depth: depth + 1 });
                }
                start = j + 1;
            }
        }
    }
}

/// Set in a [`build_lines`] slot that indexes a range of labels rather than naming one.
const SEVERAL: u32 = 1 << 31;

/// Number of [`Annotation`] values.
const ANNOTATIONS: usize = Annotation::ALL.len();

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
        let texts = ["", "a", "a;", "a;b", "a!", "a:", "ab", "b", "a<", "a;;", "\u{e9}", "z;a", "a b", ";"];
        for x in texts {
            for y in texts {
                for (x_on, y_on) in [(false, false), (false, true), (true, false), (true, true)] {
                    let key = |t: &str, on: bool| format!("{t}{}", if on { ";" } else { "" }).into_bytes();
                    let want = key(x, x_on).cmp(&key(y, y_on));
                    let got = cmp_label_keys(x.as_bytes(), x_on, y.as_bytes(), y_on);
                    assert_eq!(got, want, "{x:?} {x_on} {y:?} {y_on}");
                }
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
    fn rank_order_is_the_text_order_and_the_comparators() {
        // Labels that are prefixes of one another, with bytes before and after `;` (`!`, ` `,
        // `:`, `<`), "" and non-ASCII; the second set has a `;` that makes ranks unusable.
        let plain = ["a", "ab", "a!", "a b", "a:", "a<", "", "b", "\u{e9}", "a\\;x", "a\\\\"];
        let unranked = ["a", "a;b", "a!", "b", "a;"];
        for set in [&plain[..], &unranked[..]] {
            let mut labels = StringTable::default();
            let ids: Vec<u32> = set.iter().map(|l| labels.intern(l).0).collect();
            let empty_used = set.contains(&"");
            let mut x: u64 = 7;
            let mut next = |m: u64| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) % m
            };
            let (mut path_ids, mut lines) = (Vec::new(), Vec::new());
            for k in 0..3000 {
                // Short paths over few labels: many shared starts, stacks that are prefixes of
                // others, repeats; a few long ones.
                let len = if k % 97 == 0 { 40 + next(30) } else { 1 + next(5) } as usize;
                let start = path_ids.len();
                for d in 0..len {
                    let pick = if d < 2 { next(3) } else { next(set.len() as u64) };
                    path_ids.push(ids[pick as usize]);
                }
                lines.push(FoldedLine { start, len: len as u32, value: 1 + next(9) as i64 });
            }
            let text = |l: &FoldedLine| {
                path_ids[l.start..l.start + l.len as usize]
                    .iter()
                    .map(|&id| labels.get(StringId(id)))
                    .collect::<Vec<_>>()
                    .join(";")
            };
            let mut want: BTreeMap<String, i64> = BTreeMap::new();
            for l in &lines {
                *want.entry(text(l)).or_default() += l.value;
            }
            let stacks = finish(labels.clone(), empty_used, path_ids.clone(), lines.clone());
            assert_eq!(stacks.ranked, set == &plain[..]);
            let got: Vec<(String, i64)> = stacks.lines.iter().map(|l| (text(l), l.value)).collect();
            // In text order; with ranks, each text once (the labels of a text are one path).
            assert!(got.windows(2).all(|w| w[0].0 < w[1].0 || (!stacks.ranked && w[0].0 == w[1].0)));
            let mut merged: BTreeMap<String, i64> = BTreeMap::new();
            for (t, v) in &got {
                *merged.entry(t.clone()).or_default() += v;
            }
            assert_eq!(merged, want);
            assert_eq!(got.len() == merged.len(), stacks.ranked);
            // The rank order against the comparator it replaces, line by line.
            if stacks.ranked {
                let order = stacks.order_by_ranks(&lines);
                for w in order.windows(2) {
                    let (a, b) = (&lines[w[0] as usize], &lines[w[1] as usize]);
                    assert_ne!(stacks.cmp_text(a, b, false), Ordering::Greater, "{} {}", text(a), text(b));
                }
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
