//! pprof-style filters: which samples and which frames a profile keeps, with the meaning
//! `go tool pprof` gives its options (`internal/driver/driver_focus.go` and `profile/filter.go`,
//! `profile/prune.go` of github.com/google/pprof), so that for a pprof input every filter's
//! totals equal `go tool pprof -proto` with the same flag.
//!
//! A frame (pprof: a location) has *lines*, innermost first: the functions of a symbolized
//! frame, else its name as one line (an empty name for an unsymbolized frame), as heapconv's
//! pprof output writes it. (A pprof location without any line, as Go writes unsymbolized
//! addresses, is decoded as such a frame: for it, `show` matching its mapping keeps it where
//! go would remove it, and an expression that matches the empty string matches it.) A regular expression (unanchored, RE2 syntax as go's) *matches a frame* when it
//! matches the function name or the file of one of its lines, or the path of its mapping.
//! The filters apply in go's order:
//!
//! 1. `focus`, `ignore`, `hide`, `show` (together, go's `FilterSamplesByName`): a sample is
//!    kept when one of its frames matches `focus` (every frame does without `focus`) and none
//!    matches `ignore`. `hide` removes the matching lines of each frame (all of them when the
//!    mapping matches), `show` keeps only the matching lines (all of them when the mapping
//!    matches); a frame left with no line by either is removed from the stacks, and a sample
//!    left with no frame is dropped. With any of the four given, samples without frames
//!    are dropped.
//! 2. `show_from`: in each sample, frames above (rootward of) the root-most matching frame
//!    are removed, and in that frame the lines outside the outermost matching line; samples
//!    with no matching frame are dropped. A frame matched by its mapping keeps all its lines.
//! 3. `tag_focus`, `tag_ignore` (go's `FilterSamplesByTag`): samples whose labels match
//!    `tag_focus` are kept, then those matching `tag_ignore` dropped (see [`TagFilter`]).
//! 4. `tag_show`, `tag_hide` (go's `FilterTagsByName`): every sample keeps only the labels,
//!    string and numeric, whose key matches `tag_show` (all without it) and does not match
//!    `tag_hide`; samples themselves are kept.
//! 5. `prune_from`: in each sample, frames below (leafward of) the leaf-most frame that has a
//!    line whose function name, simplified as go does (`f(int) const` -> `f`), matches are
//!    removed, and in that frame the lines inside the innermost matching line.
//!
//! Then heapconv's own two, which `go tool pprof` has no flag for:
//!
//! 6. `drop_allocator_frames`: the allocator's own frames at the leaf end of every stack are
//!    removed, so that the leaf is the code that asked for memory ([`ALLOCATOR_FRAMES`]: the
//!    C allocator, C++ `operator new`, ART's allocation entry points). A line is an
//!    allocator's when its simplified function name matches the whole expression; innermost
//!    lines are removed while they match, frame after frame, but the root-most frame of a
//!    stack is always kept, so no sample loses its value.
//! 7. `invert`: every stack is reversed, leaf first: a callers view, rooted at the
//!    functions that allocated.
//!
//! Filters change which samples there are, what their stacks hold and which labels they
//! carry, never a sample's values.

use std::sync::Arc;

use regex::Regex;
use rustc_hash::FxHashMap as HashMap;

use crate::error::{Error, ErrorKind, Result};
use crate::model::{FlatProfile, Frame, FrameId, Profile, StackId, StringId, Tables};

/// The allocator frames `drop_allocator_frames` removes: a simplified function name (argument
/// list cut as go's `simplifyFunc` does) matching this whole expression. The C allocator and
/// its Android and glibc spellings (`malloc`, `calloc`, `realloc`, `reallocarray`, `free`,
/// `posix_memalign`, `aligned_alloc`, `memalign`, `valloc`, `pvalloc`, with `__libc_`, `je_`,
/// `scudo_`, `tc_` or `__wrap_` prefixes), C++ `operator new`/`new[]`/`delete`, scudo's and
/// jemalloc's internals, and ART's allocation entry points (`art::gc::Heap::Alloc…`,
/// `art::mirror::…::Alloc…`, `artAlloc…FromCode…`, `art_quick_alloc_…`).
pub const ALLOCATOR_FRAMES: &str = concat!(
    r"(__libc_|je_|scudo_|tc_|__wrap_)?(malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc)",
    r"|operator new|operator new\[\]|operator delete|operator delete\[\]",
    r"|scudo::Allocator<.*>::.*|je_.*alloc.*|imalloc.*|ialloc.*",
    r"|art::gc::Heap::Alloc.*|art::gc::Heap::AllocateInternalWithGc.*|art::gc::Heap::AllocLargeObject.*",
    r"|art::mirror::.*::Alloc.*|art::mirror::Object::Alloc.*",
    r"|artAlloc.*FromCode.*|art_quick_alloc_.*",
);

/// The name pprof's decoder gives the one frame of a sample that has no locations.
const NO_STACK: &str = "[no stack]";

/// A filter on sample labels, go's `-tagfocus`/`-tagignore` syntax: `[KEY=]VALUES`.
/// VALUES is either a numeric range (`32kb`, `:64kb`, `4mb:`, `12kb:64mb`, `100`; units of
/// bytes `b`, `kb`, `mb`, `gb`, `tb`, `pb` in powers of 1024, or of time `ns`, `us`, `ms`,
/// `s`, `m`, `h`) matched against numeric labels (those of KEY, or any), or comma-separated
/// regular expressions: with KEY, one of them matching one of the sample's values of KEY;
/// without, each of them matching `key:value` of some string label.
#[derive(Debug, Clone)]
pub struct TagFilter {
    key: Option<String>,
    test: TagTest,
}

#[derive(Debug, Clone)]
enum TagTest {
    Range { lo: Option<f64>, hi: Option<f64>, family: UnitFamily },
    Regexes(Vec<Regex>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnitFamily {
    Bytes,
    Time,
    Plain,
}

/// The family and size in base units of a unit name (case-insensitive), as go's
/// `measurement` package knows them; `None` for units it does not scale.
fn unit_scale(unit: &str) -> Option<(UnitFamily, f64)> {
    let u = unit.to_ascii_lowercase();
    let k = 1024f64;
    Some(match u.as_str() {
        "b" | "byte" | "bytes" => (UnitFamily::Bytes, 1.0),
        "kb" | "kib" | "kbyte" | "kilobyte" | "kilobytes" => (UnitFamily::Bytes, k),
        "mb" | "mib" | "mbyte" | "megabyte" | "megabytes" => (UnitFamily::Bytes, k * k),
        "gb" | "gib" | "gbyte" | "gigabyte" | "gigabytes" => (UnitFamily::Bytes, k * k * k),
        "tb" | "tib" | "tbyte" | "terabyte" | "terabytes" => (UnitFamily::Bytes, k * k * k * k),
        "pb" | "pib" | "pbyte" | "petabyte" | "petabytes" => (UnitFamily::Bytes, k * k * k * k * k),
        "ns" | "nanosecond" | "nanoseconds" => (UnitFamily::Time, 1.0),
        "us" | "µs" | "microsecond" | "microseconds" => (UnitFamily::Time, 1e3),
        "ms" | "millisecond" | "milliseconds" => (UnitFamily::Time, 1e6),
        "s" | "sec" | "second" | "seconds" => (UnitFamily::Time, 1e9),
        "m" | "min" | "minute" | "minutes" => (UnitFamily::Time, 60e9),
        "h" | "hour" | "hours" => (UnitFamily::Time, 3600e9),
        "" => (UnitFamily::Plain, 1.0),
        _ => return None,
    })
}

/// go's `([+-]?[[:digit:]]+)([[:alpha:]]+)?`: the matches in `s`, at most two, as (text,
/// number, unit).
fn range_parts(s: &str) -> Vec<(usize, usize, i64, String)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() && out.len() < 2 {
        let start = i;
        let mut j = i;
        if matches!(b[j], b'+' | b'-') {
            j += 1;
        }
        let digits = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == digits {
            i += 1;
            continue;
        }
        let num_end = j;
        while j < b.len() && b[j].is_ascii_alphabetic() {
            j += 1;
        }
        let Ok(n) = s[start..num_end].parse::<i64>() else { return Vec::new() };
        out.push((start, j, n, s[num_end..j].to_owned()));
        i = j;
    }
    out
}

impl TagFilter {
    /// Parses go's syntax (see [`TagFilter`]).
    pub fn parse(spec: &str) -> Result<TagFilter> {
        let (key, value) = match spec.split_once('=') {
            Some((k, v)) => (Some(k.to_owned()), v),
            None => (None, spec),
        };
        if let Some(test) = Self::parse_range(value) {
            return Ok(TagFilter { key, test });
        }
        let res = value
            .split(',')
            .map(|r| {
                Regex::new(r).map_err(|e| Error::new(ErrorKind::Usage, format!("a tag filter's expression {r:?}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(TagFilter { key, test: TagTest::Regexes(res) })
    }

    fn parse_range(value: &str) -> Option<TagTest> {
        let parts = range_parts(value);
        let (s0, e0, v0, u0) = parts.first()?.clone();
        let (fam, scale) = unit_scale(&u0)?;
        let a = v0 as f64 * scale;
        let m0 = &value[s0..e0];
        if parts.len() == 1 {
            let (lo, hi) = if value == m0 {
                (Some(a), Some(a))
            } else if value == format!("{m0}:") {
                (Some(a), None)
            } else if value == format!(":{m0}") {
                (None, Some(a))
            } else {
                return None;
            };
            return Some(TagTest::Range { lo, hi, family: fam });
        }
        let (s1, e1, v1, u1) = parts[1].clone();
        if value != format!("{m0}:{}", &value[s1..e1]) {
            return None;
        }
        // go scales the second bound to the first's unit; a bound without a unit is in it.
        let (fam1, scale1) = if u1.is_empty() { (fam, scale) } else { unit_scale(&u1)? };
        if fam1 != fam {
            return None;
        }
        Some(TagTest::Range { lo: Some(a), hi: Some(v1 as f64 * scale1), family: fam })
    }

    /// Whether a sample with these labels (numeric: key, value, unit; string: key, value)
    /// matches.
    fn matches(&self, num: &[(&str, i64, &str)], strs: &[(&str, &str)]) -> bool {
        match &self.test {
            TagTest::Range { lo, hi, family } => num.iter().any(|&(k, v, unit)| {
                if self.key.as_deref().is_some_and(|want| want != k) {
                    return false;
                }
                // A label without a unit: `bytes` is in bytes (as go guesses), others plain.
                let unit = if unit.is_empty() && k == "bytes" { "bytes" } else { unit };
                let Some((fam, scale)) = unit_scale(unit) else { return false };
                if fam != *family {
                    return false;
                }
                let x = v as f64 * scale;
                lo.is_none_or(|l| x >= l) && hi.is_none_or(|h| x <= h)
            }),
            TagTest::Regexes(res) => match &self.key {
                Some(want) => {
                    let vals: Vec<&str> = strs.iter().filter(|(k, _)| k == want).map(|(_, v)| *v).collect();
                    !vals.is_empty() && res.iter().any(|r| vals.iter().any(|v| r.is_match(v)))
                }
                None => res.iter().all(|r| strs.iter().any(|(k, v)| r.is_match(&format!("{k}:{v}")))),
            },
        }
    }
}

/// A sample's labels: numeric (key, value), string (key, value).
type SampleLabels = (Vec<(StringId, i64)>, Vec<(StringId, StringId)>);

/// Which samples and frames a profile keeps (see the module docs); the default keeps all.
#[derive(Debug, Clone, Default)]
pub struct FilterOptions {
    /// Keep samples with a frame matching this. Default: none.
    pub focus: Option<Regex>,
    /// Drop samples with a frame matching this. Default: none.
    pub ignore: Option<Regex>,
    /// Remove the lines (and frames) matching this. Default: none.
    pub hide: Option<Regex>,
    /// Keep only the lines (and frames) matching this. Default: none.
    pub show: Option<Regex>,
    /// Remove the frames above the root-most frame matching this. Default: none.
    pub show_from: Option<Regex>,
    /// Remove the frames below the leaf-most frame matching this. Default: none.
    pub prune_from: Option<Regex>,
    /// Keep samples whose labels match. Default: none.
    pub tag_focus: Option<TagFilter>,
    /// Drop samples whose labels match. Default: none.
    pub tag_ignore: Option<TagFilter>,
    /// Keep only the labels whose key matches this (go's `-tagshow`). Default: none.
    pub tag_show: Option<Regex>,
    /// Remove the labels whose key matches this (go's `-taghide`). Default: none.
    pub tag_hide: Option<Regex>,
    /// Remove the allocator's frames at the leaf end of stacks ([`ALLOCATOR_FRAMES`]).
    /// Default: false.
    pub drop_allocator_frames: bool,
    /// Reverse every stack (leaf first: a callers view). Default: false.
    pub invert: bool,
}

impl FilterOptions {
    /// True when nothing is filtered.
    pub fn is_empty(&self) -> bool {
        self.focus.is_none()
            && self.ignore.is_none()
            && self.hide.is_none()
            && self.show.is_none()
            && self.show_from.is_none()
            && self.prune_from.is_none()
            && self.tag_focus.is_none()
            && self.tag_ignore.is_none()
            && self.tag_show.is_none()
            && self.tag_hide.is_none()
            && !self.drop_allocator_frames
            && !self.invert
    }

    /// Whether a label with this key stays (`tag_show` and `tag_hide`, go's `FilterTagsByName`).
    pub fn keeps_label(&self, key: &str) -> bool {
        self.tag_show.as_ref().is_none_or(|r| r.is_match(key))
            && !self.tag_hide.as_ref().is_some_and(|r| r.is_match(key))
    }

    /// A sample's labels (numeric, string) without those `tag_show`/`tag_hide` remove.
    fn kept_labels(&self, tables: &Tables, num: &[(StringId, i64)], strs: &[(StringId, StringId)]) -> SampleLabels {
        let keep = |k: StringId| self.keeps_label(tables.strings.get(k));
        (num.iter().filter(|l| keep(l.0)).copied().collect(), strs.iter().filter(|l| keep(l.0)).copied().collect())
    }

    /// A regular expression of a filter, compiled as go's `regexp.Compile` would (unanchored).
    pub fn regex(what: &str, re: &str) -> Result<Regex> {
        Regex::new(re).map_err(|e| Error::new(ErrorKind::Usage, format!("the {what} expression {re:?}: {e}")))
    }
}

/// go's `simplifyFunc`: a function name without its argument list (cut at the first `(` that
/// does not begin `(anonymous namespace)` or `operator()`), and without a leading `.`.
pub fn simplify_func(f: &str) -> &str {
    let name = f.strip_prefix('.').unwrap_or(f);
    let mut i = 0;
    while let Some(k) = name[i..].find(['(', 'o']) {
        let at = i + k;
        let rest = &name[at..];
        if rest.starts_with("(anonymous namespace)") {
            i = at + "(anonymous namespace)".len();
        } else if rest.starts_with("operator()") {
            i = at + "operator()".len();
        } else if rest.starts_with('(') {
            return &name[..at];
        } else {
            i = at + 1;
        }
    }
    name
}

/// What the filters make of one frame.
#[derive(Debug, Clone)]
struct FrameFate {
    /// Some(true): matches focus; Some(false): matches ignore; None: neither.
    focus: Option<bool>,
    /// Removed from stacks by hide or show.
    hidden: bool,
    /// Matches show_from.
    show_from: bool,
    /// Matches prune_from.
    prune_from: bool,
    /// How many of its innermost (kept) lines are the allocator's.
    alloc_lines: usize,
    /// The lines kept (indices into the frame's lines, innermost first).
    kept: Vec<usize>,
    /// The frame after the filters changed its lines (before dropping allocator lines).
    frame: FrameId,
    /// The frame without its allocator lines, when some but not all of them are.
    trimmed: Option<FrameId>,
    /// The sample's lone "no stack" frame: a sample without locations.
    no_stack: bool,
}

struct Filterer<'a> {
    opts: &'a FilterOptions,
    allocator: Option<Regex>,
    src: &'a Tables,
    out: Option<Tables>,
    fates: HashMap<FrameId, FrameFate>,
}

impl<'a> Filterer<'a> {
    fn new(src: &'a Tables, opts: &'a FilterOptions) -> Self {
        let allocator = opts
            .drop_allocator_frames
            .then(|| Regex::new(&format!("^(?:{ALLOCATOR_FRAMES})$")).expect("the allocator expression compiles"));
        Filterer { opts, allocator, src, out: None, fates: HashMap::default() }
    }

    /// The (function, file) of each line of a frame: its lines, or its name (which may be
    /// empty) as one line, which is how heapconv's pprof output writes a frame without lines.
    fn lines(&self, f: &Frame) -> Vec<(&'a str, &'a str)> {
        let s = &self.src.strings;
        if !f.lines.is_empty() {
            f.lines.iter().map(|l| (s.get(l.function), s.get(l.file))).collect()
        } else {
            vec![(s.get(f.name), "")]
        }
    }

    fn fate(&mut self, id: FrameId) -> &FrameFate {
        if !self.fates.contains_key(&id) {
            let fate = self.compute(id);
            self.fates.insert(id, fate);
        }
        &self.fates[&id]
    }

    fn compute(&mut self, id: FrameId) -> FrameFate {
        let src = self.src;
        let f = src.frame(id);
        let lines = self.lines(f);
        let mapping = f.mapping.map(|m| src.strings.get(src.mapping(m).path));
        let line_matches = |re: &Regex, i: usize| re.is_match(lines[i].0) || re.is_match(lines[i].1);
        let mapping_matches = |re: &Regex| mapping.is_some_and(|m| re.is_match(m));
        let matches = |re: &Regex| (0..lines.len()).any(|i| line_matches(re, i)) || mapping_matches(re);
        let o = self.opts;
        let no_stack =
            f.mapping.is_none() && f.lines.is_empty() && f.rel_pc == 0 && src.strings.get(f.name) == NO_STACK;
        let focus = if o.ignore.as_ref().is_some_and(&matches) {
            Some(false)
        } else if o.focus.as_ref().is_none_or(&matches) {
            Some(true)
        } else {
            None
        };
        let mut kept: Vec<usize> = (0..lines.len()).collect();
        let mut hidden = false;
        if let Some(re) = &o.hide {
            if matches(re) {
                if mapping_matches(re) {
                    kept.clear();
                } else {
                    kept.retain(|&i| !line_matches(re, i));
                }
                hidden |= kept.is_empty();
            }
        }
        if let Some(re) = &o.show {
            if !mapping_matches(re) {
                kept.retain(|&i| line_matches(re, i));
            }
            hidden |= kept.is_empty();
        }
        let mut show_from = false;
        if let Some(re) = &o.show_from {
            if mapping_matches(re) {
                show_from = true;
            } else if let Some(k) = kept.iter().rposition(|&i| line_matches(re, i)) {
                kept.truncate(k + 1);
                show_from = true;
            }
        }
        let mut prune_from = false;
        if let Some(re) = &o.prune_from {
            if let Some(k) = kept.iter().position(|&i| !lines[i].0.is_empty() && re.is_match(simplify_func(lines[i].0)))
            {
                kept.drain(..k);
                prune_from = true;
            }
        }
        let alloc_lines = match &self.allocator {
            Some(re) => kept.iter().take_while(|&&i| re.is_match(simplify_func(lines[i].0))).count(),
            None => 0,
        };
        let frame = self.with_lines(id, &kept);
        let trimmed = (alloc_lines > 0 && alloc_lines < kept.len()).then(|| self.with_lines(id, &kept[alloc_lines..]));
        FrameFate { focus, hidden, show_from, prune_from, alloc_lines, kept, frame, trimmed, no_stack }
    }

    /// Frame `id` with only the lines `kept` (itself when nothing is removed).
    fn with_lines(&mut self, id: FrameId, kept: &[usize]) -> FrameId {
        let f = self.src.frame(id);
        if f.lines.is_empty() || kept.len() == f.lines.len() {
            return id;
        }
        let mut g = f.clone();
        g.lines = kept.iter().map(|&i| f.lines[i].clone()).collect();
        self.out.get_or_insert_with(|| self.src.clone()).intern_frame_exact(g)
    }

    /// The filtered stack of a sample (leaf first), or `None` when the sample is dropped.
    fn stack(&mut self, frames: &[FrameId], num: &[(&str, i64, &str)], strs: &[(&str, &str)]) -> Option<Vec<FrameId>> {
        let o = self.opts;
        let name_filters = o.focus.is_some() || o.ignore.is_some() || o.hide.is_some() || o.show.is_some();
        let per_frame = name_filters || o.show_from.is_some() || o.prune_from.is_some() || self.allocator.is_some();
        let mut locs: Vec<FrameId> = frames.to_vec();
        if per_frame {
            for &f in frames {
                self.fate(f);
            }
            // A sample without locations (go drops it when matching names).
            if (name_filters || o.show_from.is_some()) && locs.len() == 1 && self.fates[&locs[0]].no_stack {
                locs.clear();
            }
        }
        if name_filters {
            let mut focused = false;
            for f in &locs {
                match self.fates[f].focus {
                    Some(true) => focused = true,
                    Some(false) => return None,
                    None => {}
                }
            }
            if !focused {
                return None;
            }
            locs.retain(|f| !self.fates[f].hidden);
            if locs.is_empty() {
                return None;
            }
        }
        if o.show_from.is_some() {
            let k = locs.iter().rposition(|f| self.fates[f].show_from)?;
            locs.truncate(k + 1);
        }
        if o.tag_focus.as_ref().is_some_and(|t| !t.matches(num, strs))
            || o.tag_ignore.as_ref().is_some_and(|t| t.matches(num, strs))
        {
            return None;
        }
        if o.prune_from.is_some() {
            if let Some(k) = locs.iter().position(|f| self.fates[f].prune_from) {
                locs.drain(..k);
            }
        }
        let mut out = locs;
        if per_frame {
            // Allocator frames at the leaf end, decided on the frames' filtered lines.
            let mut start = 0;
            let mut trimmed = None;
            if self.allocator.is_some() {
                while start + 1 < out.len() {
                    let fate = &self.fates[&out[start]];
                    if fate.alloc_lines == 0 {
                        break;
                    }
                    if fate.alloc_lines < fate.kept.len() {
                        trimmed = fate.trimmed;
                        break;
                    }
                    start += 1;
                }
            }
            out = out[start..].iter().map(|f| self.fates[f].frame).collect();
            if let (Some(t), Some(first)) = (trimmed, out.first_mut()) {
                *first = t;
            }
        }
        if o.invert {
            out.reverse();
        }
        Some(out)
    }
}

fn num_labels<'s>(
    tables: &'s Tables,
    labels: &[(StringId, i64)],
    unit: impl Fn(StringId) -> Option<StringId>,
) -> Vec<(&'s str, i64, &'s str)> {
    labels.iter().map(|&(k, v)| (tables.strings.get(k), v, unit(k).map_or("", |u| tables.strings.get(u)))).collect()
}

fn str_labels<'s>(tables: &'s Tables, labels: &[(StringId, StringId)]) -> Vec<(&'s str, &'s str)> {
    labels.iter().map(|&(k, v)| (tables.strings.get(k), tables.strings.get(v))).collect()
}

/// A frame-list profile filtered (see the module docs); the profile itself when nothing is
/// filtered.
pub fn filter_flat(p: FlatProfile, opts: &FilterOptions) -> FlatProfile {
    if opts.is_empty() {
        return p;
    }
    let mut fl = Filterer::new(&p.tables, opts);
    let mut kept: Vec<(Vec<FrameId>, usize)> = Vec::new();
    for i in 0..p.sample_count() {
        let num = num_labels(&p.tables, p.sample_labels(i), |k| p.num_label_unit(k));
        let strs = str_labels(&p.tables, p.sample_str_labels(i));
        if let Some(s) = fl.stack(p.sample(i).0, &num, &strs) {
            kept.push((s, i));
        }
    }
    let tables = fl.out.take().map_or_else(|| p.tables.clone(), Arc::new);
    let mut q = FlatProfile::new(tables, p.header.meta.clone(), p.header.sample_types.clone());
    q.header.default_sample_type = p.header.default_sample_type;
    for &(k, u) in p.num_label_units() {
        q.set_num_label_unit(k, u);
    }
    let tag_names = opts.tag_show.is_some() || opts.tag_hide.is_some();
    for (s, i) in kept {
        if tag_names {
            let (num, strs) = opts.kept_labels(&q.tables, p.sample_labels(i), p.sample_str_labels(i));
            q.push_sample(&s, p.sample(i).1, &num, &strs);
        } else {
            q.push_sample(&s, p.sample(i).1, p.sample_labels(i), p.sample_str_labels(i));
        }
    }
    q
}

/// Stacks of `tables` (of samples without labels) filtered (see the module docs): each one's
/// filtered stack, interned in a copy of the tables when the filters made new frames or
/// stacks, or `None` when its sample would be dropped. The tables themselves and the stacks
/// unchanged when nothing is filtered.
pub fn filter_stacks(
    tables: &Arc<Tables>,
    stacks: &[StackId],
    opts: &FilterOptions,
) -> (Arc<Tables>, Vec<Option<StackId>>) {
    if opts.is_empty() {
        return (Arc::clone(tables), stacks.iter().map(|&s| Some(s)).collect());
    }
    let mut fl = Filterer::new(tables, opts);
    let mut buf = Vec::new();
    let kept: Vec<Option<Vec<FrameId>>> = stacks
        .iter()
        .map(|&s| {
            tables.stack_frames_leaf_first(s, &mut buf);
            fl.stack(&buf, &[], &[])
        })
        .collect();
    let mut out = fl.out.take().unwrap_or_else(|| (**tables).clone());
    let ids = kept
        .into_iter()
        .map(|s| {
            let root_first: Vec<FrameId> = s?.into_iter().rev().collect();
            out.intern_stack(&root_first)
        })
        .collect();
    (Arc::new(out), ids)
}

/// A profile with a stack tree filtered (see the module docs), its stacks interned in a copy
/// of its tables; the profile itself when nothing is filtered.
pub fn filter_profile(p: Profile, opts: &FilterOptions) -> Profile {
    if opts.is_empty() {
        return p;
    }
    let mut fl = Filterer::new(&p.tables, opts);
    let mut buf = Vec::new();
    let mut kept: Vec<(Vec<FrameId>, usize)> = Vec::new();
    for i in 0..p.sample_count() {
        p.tables.stack_frames_leaf_first(p.sample(i).0, &mut buf);
        let num = num_labels(&p.tables, p.sample_labels(i), |k| p.num_label_unit(k));
        let strs = str_labels(&p.tables, p.sample_str_labels(i));
        if let Some(s) = fl.stack(&buf, &num, &strs) {
            kept.push((s, i));
        }
    }
    let mut tables = fl.out.take().unwrap_or_else(|| (*p.tables).clone());
    let mut stacks: HashMap<Vec<FrameId>, Option<StackId>> = HashMap::default();
    let mut ids = Vec::with_capacity(kept.len());
    for (s, _) in &kept {
        let id = *stacks.entry(s.clone()).or_insert_with(|| {
            let root_first: Vec<FrameId> = s.iter().rev().copied().collect();
            tables.intern_stack(&root_first)
        });
        ids.push(id);
    }
    let mut q = Profile::new(Arc::new(tables), p.header.meta.clone(), p.header.sample_types.clone());
    q.header.default_sample_type = p.header.default_sample_type;
    for &(k, u) in p.num_label_units() {
        q.set_num_label_unit(k, u);
    }
    let tag_names = opts.tag_show.is_some() || opts.tag_hide.is_some();
    for ((_, i), id) in kept.into_iter().zip(ids) {
        if let Some(id) = id {
            if tag_names {
                let (num, strs) = opts.kept_labels(&q.tables, p.sample_labels(i), p.sample_str_labels(i));
                q.push_sample_with_all_labels(id, p.sample(i).1, &num, &strs);
            } else {
                q.push_sample_with_all_labels(id, p.sample(i).1, p.sample_labels(i), p.sample_str_labels(i));
            }
        }
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Line, ProfileMeta, ValueKind, ValueType};

    /// A profile of stacks of named frames (root first) with values.
    fn flat(stacks: &[(&[&str], i64)]) -> FlatProfile {
        let mut t = Tables::default();
        let mut rows = Vec::new();
        for (names, v) in stacks {
            let ids: Vec<FrameId> = names
                .iter()
                .rev()
                .map(|n| {
                    let s = t.strings.intern(n);
                    t.intern_frame(None, 0, s)
                })
                .collect();
            rows.push((ids, *v));
        }
        let mut p = FlatProfile::new(
            Arc::new(t),
            ProfileMeta::default(),
            vec![ValueType::new("space", "bytes", ValueKind::UnreleasedSize)],
        );
        for (ids, v) in rows {
            p.push_sample(&ids, &[v], &[], &[]);
        }
        p
    }

    fn names(p: &FlatProfile) -> Vec<(String, i64)> {
        (0..p.sample_count())
            .map(|i| {
                let (f, v) = p.sample(i);
                let n: Vec<&str> = f.iter().rev().map(|&id| p.tables.strings.get(p.tables.frame(id).name)).collect();
                (n.join(";"), v[0])
            })
            .collect()
    }

    fn re(s: &str) -> Option<Regex> {
        Some(Regex::new(s).unwrap())
    }

    #[test]
    fn show_from_keeps_the_stack_below_the_root_most_match_as_go_documents() {
        // go's example: frames [A, B, C, B] (A the root).
        let p = || flat(&[(&["A", "B", "C", "B"], 1), (&["A", "D"], 2)]);
        let f = |r: &str| names(&filter_flat(p(), &FilterOptions { show_from: re(r), ..Default::default() }));
        assert_eq!(f("A"), [("A;B;C;B".to_owned(), 1), ("A;D".to_owned(), 2)]);
        assert_eq!(f("B"), [("B;C;B".to_owned(), 1)]);
        assert_eq!(f("C"), [("C;B".to_owned(), 1)]);
        assert!(f("E").is_empty());
    }

    #[test]
    fn focus_ignore_hide_show_prune_from() {
        let p = || flat(&[(&["main", "a", "malloc"], 1), (&["main", "b", "malloc"], 2), (&["main", "b", "c"], 4)]);
        let f = |o: FilterOptions| names(&filter_flat(p(), &o));
        assert_eq!(f(FilterOptions { focus: re("^b$"), ..Default::default() }).len(), 2);
        assert_eq!(
            f(FilterOptions { focus: re("b"), ignore: re("^c"), ..Default::default() }),
            [("main;b;malloc".to_owned(), 2)]
        );
        assert_eq!(
            f(FilterOptions { hide: re("malloc"), ..Default::default() }),
            [("main;a".to_owned(), 1), ("main;b".to_owned(), 2), ("main;b;c".to_owned(), 4)]
        );
        assert_eq!(
            f(FilterOptions { show: re("^(a|b)$"), ..Default::default() }),
            [("a".to_owned(), 1), ("b".to_owned(), 2), ("b".to_owned(), 4)]
        );
        assert_eq!(
            f(FilterOptions { prune_from: re("^b"), ..Default::default() }),
            [("main;a;malloc".to_owned(), 1), ("main;b".to_owned(), 2), ("main;b".to_owned(), 4)]
        );
        assert_eq!(f(FilterOptions { invert: true, ..Default::default() })[0], ("malloc;a;main".to_owned(), 1));
    }

    #[test]
    fn allocator_frames_are_dropped_at_the_leaf_only_and_the_root_stays() {
        let p = flat(&[
            (&["main", "Parser::parse()", "operator new(unsigned long)", "malloc"], 1),
            (&["malloc"], 2),
            (&["free_list_walk", "je_malloc"], 4),
            (&["art::gc::Heap::AllocObject<true>(art::Thread*)", "x"], 8),
            (
                &[
                    "Java.main",
                    "artAllocObjectFromCodeInitializedRegionTLAB",
                    "art::gc::Heap::AllocLargeObject<false, art::mirror::SetLengthVisitor>(art::Thread*)",
                ],
                16,
            ),
        ]);
        let got = names(&filter_flat(p, &FilterOptions { drop_allocator_frames: true, ..Default::default() }));
        assert_eq!(
            got,
            [
                ("main;Parser::parse()".to_owned(), 1),
                ("malloc".to_owned(), 2),
                ("free_list_walk".to_owned(), 4),
                ("art::gc::Heap::AllocObject<true>(art::Thread*);x".to_owned(), 8),
                ("Java.main".to_owned(), 16),
            ]
        );
    }

    #[test]
    fn hide_and_show_remove_inlined_lines_of_a_frame() {
        let mut t = Tables::default();
        let mut line = |n: &str| {
            let s = t.strings.intern(n);
            Line { function: s, system_name: s, file: StringId::EMPTY, line: 1, column: 0 }
        };
        // One frame: inner (innermost) inlined into outer.
        let lines = vec![line("inner"), line("outer")];
        let root = line("main");
        let f = t.intern_frame_exact(Frame {
            mapping: None,
            rel_pc: 1,
            raw_name: StringId::EMPTY,
            name: StringId::EMPTY,
            lines,
        });
        let r = t.intern_frame_exact(Frame {
            mapping: None,
            rel_pc: 2,
            raw_name: StringId::EMPTY,
            name: StringId::EMPTY,
            lines: vec![root],
        });
        let mut p = FlatProfile::new(
            Arc::new(t),
            ProfileMeta::default(),
            vec![ValueType::new("n", "count", ValueKind::TotalCount)],
        );
        p.push_sample(&[f, r], &[3], &[], &[]);
        let fn_names = |q: &FlatProfile| -> Vec<String> {
            q.sample(0)
                .0
                .iter()
                .flat_map(|&id| q.tables.frame(id).lines.iter().map(|l| q.tables.strings.get(l.function).to_owned()))
                .collect()
        };
        let q = filter_flat(p.clone(), &FilterOptions { hide: re("inner"), ..Default::default() });
        assert_eq!(fn_names(&q), ["outer", "main"]);
        let q = filter_flat(p.clone(), &FilterOptions { show: re("inner|main"), ..Default::default() });
        assert_eq!(fn_names(&q), ["inner", "main"]);
        let q = filter_flat(p.clone(), &FilterOptions { prune_from: re("outer"), ..Default::default() });
        assert_eq!(fn_names(&q), ["outer", "main"]);
        let q = filter_flat(p, &FilterOptions { show_from: re("inner"), ..Default::default() });
        assert_eq!(fn_names(&q), ["inner"]);
    }

    #[test]
    fn simplify_func_cuts_argument_lists_as_go_does() {
        assert_eq!(simplify_func("operator new(unsigned long)"), "operator new");
        assert_eq!(simplify_func("(anonymous namespace)::f(int)"), "(anonymous namespace)::f");
        assert_eq!(simplify_func("S::operator()(int) const"), "S::operator()");
        assert_eq!(simplify_func(".main"), "main");
        assert_eq!(simplify_func("runtime.main"), "runtime.main");
    }

    #[test]
    fn tag_show_and_hide_remove_labels_by_key_and_keep_samples() {
        let mut p = flat(&[(&["main", "a"], 1), (&["main", "b"], 2)]);
        let mut t = (*p.tables).clone();
        let (thread, main, bytes, request, get) = (
            t.strings.intern("thread"),
            t.strings.intern("main"),
            t.strings.intern("bytes"),
            t.strings.intern("request"),
            t.strings.intern("GET"),
        );
        let frames: Vec<Vec<FrameId>> = (0..2).map(|i| p.sample(i).0.to_vec()).collect();
        let mut q = FlatProfile::new(Arc::new(t), p.header.meta.clone(), p.header.sample_types.clone());
        q.push_sample(&frames[0], &[1], &[(bytes, 64)], &[(thread, main), (request, get)]);
        q.push_sample(&frames[1], &[2], &[], &[(thread, main)]);
        p = q;
        let keys = |q: &FlatProfile| -> Vec<Vec<String>> {
            (0..q.sample_count())
                .map(|i| {
                    let n = q.sample_labels(i).iter().map(|l| l.0);
                    let s = q.sample_str_labels(i).iter().map(|l| l.0);
                    n.chain(s).map(|k| q.tables.strings.get(k).to_owned()).collect()
                })
                .collect()
        };
        let show = filter_flat(p.clone(), &FilterOptions { tag_show: re("^(thread|bytes)$"), ..Default::default() });
        assert_eq!(keys(&show), [vec!["bytes", "thread"], vec!["thread"]]);
        let hide = filter_flat(p.clone(), &FilterOptions { tag_hide: re("thr"), ..Default::default() });
        assert_eq!(keys(&hide), [vec!["bytes", "request"], vec![]]);
        assert_eq!(names(&hide), [("main;a".to_owned(), 1), ("main;b".to_owned(), 2)]);
        let both = filter_profile(
            p.to_profile(),
            &FilterOptions { tag_show: re("e"), tag_hide: re("^b"), ..Default::default() },
        );
        assert_eq!(both.sample_count(), 2);
        let k: Vec<&str> = both.sample_str_labels(0).iter().map(|l| both.tables.strings.get(l.0)).collect();
        assert_eq!((k, both.sample_labels(0).len()), (vec!["thread", "request"], 0));
    }

    #[test]
    fn tag_filters_parse_go_ranges_and_regexes() {
        let t = TagFilter::parse("bytes=1kb:8kb").unwrap();
        assert!(t.matches(&[("bytes", 4096, "")], &[]));
        assert!(!t.matches(&[("bytes", 65536, "")], &[]));
        // A number without a unit is not a byte count, as in go (which then matches nothing).
        let t = TagFilter::parse("bytes=4096").unwrap();
        assert!(!t.matches(&[("bytes", 4096, "bytes")], &[]));
        let t = TagFilter::parse("bytes=4kb").unwrap();
        assert!(t.matches(&[("bytes", 4096, "bytes")], &[]));
        let t = TagFilter::parse(":64").unwrap();
        assert!(t.matches(&[("n", 3, "")], &[]));
        let t = TagFilter::parse("thread=^main$").unwrap();
        assert!(t.matches(&[], &[("thread", "main")]));
        assert!(!t.matches(&[], &[("thread", "mainx")]));
        let t = TagFilter::parse("thread:ma,^t").unwrap();
        assert!(t.matches(&[], &[("thread", "main")]));
        assert!(!t.matches(&[], &[("x", "main")]));
    }
}
