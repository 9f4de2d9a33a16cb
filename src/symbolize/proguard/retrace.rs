//! Retracing: obfuscated frames to original ones through a map's class tables, one at a time
//! or in parallel batches, with R8's outline and rewrite-frame rules.

use super::*;

/// One original frame: what an obfuscated frame stands for. Its names borrow from the map's
/// text where they can (`'a`: the [`Retracer`], or the class being answered in a batch);
/// [`OriginalFrame::into_owned`] keeps one past that.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct OriginalFrame<'a> {
    /// Original class name, fully qualified.
    pub class: Cow<'a, str>,
    /// Original method name.
    pub method: Cow<'a, str>,
    /// Source file, when the map says (or, as retrace does, derived from the class name).
    pub file: Option<Cow<'a, str>>,
    /// Original line; 0 when unknown.
    pub line: u32,
}

impl OriginalFrame<'_> {
    /// This frame with names of its own.
    pub fn into_owned(self) -> OriginalFrame<'static> {
        OriginalFrame {
            class: Cow::Owned(self.class.into_owned()),
            method: Cow::Owned(self.method.into_owned()),
            file: self.file.map(|f| Cow::Owned(f.into_owned())),
            line: self.line,
        }
    }
}

/// What an obfuscated frame deobfuscates to (names borrowed as in [`OriginalFrame`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retraced<'a> {
    /// The original frames. When `ambiguous` is false they are one call chain, innermost
    /// (inlined) first; when true they are alternatives, each a candidate for the whole frame.
    /// Empty only in [`Retracer::stack`]'s answer for an outline frame (to be dropped).
    pub frames: Vec<OriginalFrame<'a>>,
    /// Whether the map could not tell which of several methods the frame is (no line, or a
    /// map without line ranges, and several original methods share the obfuscated name).
    pub ambiguous: bool,
    /// Whether only the class was found: the method kept its obfuscated name.
    pub class_only: bool,
}

impl Retraced<'_> {
    /// This answer with names of its own.
    pub fn into_owned(self) -> Retraced<'static> {
        Retraced {
            frames: self.frames.into_iter().map(OriginalFrame::into_owned).collect(),
            ambiguous: self.ambiguous,
            class_only: self.class_only,
        }
    }
}

/// One obfuscated frame to deobfuscate: `class.method` at obfuscated line `line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameQuery<'a> {
    /// Obfuscated class name, fully qualified.
    pub class: &'a str,
    /// Obfuscated method name.
    pub method: &'a str,
    /// Obfuscated line; `None` (or 0) when the frame has none.
    pub line: Option<u32>,
}

/// Counts of what a [`Retracer`] did, for the run's report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RetraceReport {
    /// The mapping file.
    pub map: String,
    /// The package it was given for, if any.
    pub package: Option<String>,
    /// Classes in the map.
    pub classes_in_map: u64,
    /// Classes whose members were read (the input named them).
    pub classes_read: u64,
    /// Names looked up (class, field and frame lookups).
    pub lookups: u64,
    /// Lookups the map answered.
    pub deobfuscated: u64,
    /// Member lines skipped because they do not parse.
    pub skipped_lines: u64,
    /// The first skipped line, `file:line`.
    pub first_skipped: Option<String>,
    /// Of `deobfuscated`, how many were frames, classes and fields.
    pub deobfuscated_by_kind: KindCounts,
}

/// Names deobfuscated per kind (see [`RetraceReport::deobfuscated_by_kind`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    /// Frames (a method, or an inline chain, answered for a frame).
    pub frames: u64,
    /// Class names.
    pub classes: u64,
    /// Field names.
    pub fields: u64,
}

impl RetraceReport {
    /// Adds the counts of `n` (another run of the same map) to these: lookups and answers
    /// summed, the larger skipped-line count kept, the first skipped line kept if set.
    pub fn add_counts(&mut self, n: &RetraceReport) {
        self.classes_read += n.classes_read;
        self.lookups += n.lookups;
        self.deobfuscated += n.deobfuscated;
        self.deobfuscated_by_kind.frames += n.deobfuscated_by_kind.frames;
        self.deobfuscated_by_kind.classes += n.deobfuscated_by_kind.classes;
        self.deobfuscated_by_kind.fields += n.deobfuscated_by_kind.fields;
        self.skipped_lines = self.skipped_lines.max(n.skipped_lines);
        if self.first_skipped.is_none() {
            self.first_skipped = n.first_skipped.clone();
        }
    }
}

/// Deobfuscates names with one [`ProguardMap`], reading each class's members when the class
/// is first asked about. Shareable across threads.
pub struct Retracer<'m> {
    map: &'m ProguardMap,
    /// Tables kept for the run by the one-at-a-time lookups.
    tables: Vec<OnceLock<Box<ClassTable>>>,
    /// Whether a class was read (its counts are in the report) yet.
    read: Vec<AtomicBool>,
    lookups: AtomicU64,
    deobfuscated: AtomicU64,
    /// Of `deobfuscated`: class names and field names (the rest are frames).
    classes_hit: AtomicU64,
    fields_hit: AtomicU64,
    classes_read: AtomicU64,
    skipped: AtomicU64,
    first_skipped: AtomicU32,
    /// The `sourceFile` of classes frames were inlined from, by class (read once each).
    source_files: Vec<OnceLock<Option<Box<str>>>>,
}

impl<'m> Retracer<'m> {
    /// A retracer over `map`; nothing is read yet.
    pub fn new(map: &'m ProguardMap) -> Self {
        Retracer {
            map,
            tables: (0..map.entries.len()).map(|_| OnceLock::new()).collect(),
            read: (0..map.entries.len()).map(|_| AtomicBool::new(false)).collect(),
            lookups: AtomicU64::new(0),
            deobfuscated: AtomicU64::new(0),
            classes_hit: AtomicU64::new(0),
            fields_hit: AtomicU64::new(0),
            classes_read: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            first_skipped: AtomicU32::new(u32::MAX),
            source_files: (0..map.entries.len()).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The map this retracer reads.
    pub fn map(&self) -> &'m ProguardMap {
        self.map
    }

    fn count(&self, hit: bool) {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        if hit {
            self.deobfuscated.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts class `idx` as read (once) with what its parse skipped.
    fn note_read(&self, idx: u32, t: &ClassTable) {
        if !self.read[idx as usize].swap(true, Ordering::Relaxed) {
            self.classes_read.fetch_add(1, Ordering::Relaxed);
            self.skipped.fetch_add(u64::from(t.skipped), Ordering::Relaxed);
            if let Some(l) = t.first_skipped {
                self.first_skipped.fetch_min(l, Ordering::Relaxed);
            }
        }
    }

    /// Class `idx`'s table, read now and kept for the run.
    fn table(&self, idx: u32) -> &ClassTable {
        self.tables[idx as usize].get_or_init(|| {
            let t = self.map.parse_class(idx);
            self.note_read(idx, &t);
            Box::new(t)
        })
    }

    fn lookup_class(&self, obfuscated: &str) -> Option<u32> {
        self.map.classes.get(obfuscated).copied()
    }

    /// The original name of an obfuscated class name as a heap dump or frame spells it: a
    /// plain name (`a.b`), an array of one (`a.b[]`, `a.b[][]`), or `java.lang.Class<a.b>` (heap
    /// graphs' class objects). `None` when the map does not name the class.
    pub fn class_name(&self, obfuscated: &str) -> Option<String> {
        let hit = self.class_name_uncounted(obfuscated);
        self.count(hit.is_some());
        if hit.is_some() {
            self.classes_hit.fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    fn class_name_uncounted(&self, obfuscated: &str) -> Option<String> {
        if let Some(inner) = obfuscated.strip_prefix("java.lang.Class<").and_then(|s| s.strip_suffix('>')) {
            return self.class_name_uncounted(inner).map(|c| format!("java.lang.Class<{c}>"));
        }
        let base = obfuscated.trim_end_matches("[]");
        let dims = &obfuscated[base.len()..];
        let idx = self.lookup_class(base)?;
        Some(format!("{}{dims}", self.map.original(idx)))
    }

    /// The original name(s) of field `field` of obfuscated class `class`: one name, or every
    /// candidate when the map gives the obfuscated name to several fields. `None` when the map
    /// names neither the class nor the field.
    pub fn field_names(&self, class: &str, field: &str) -> Option<Vec<String>> {
        let hit = self.lookup_class(class).and_then(|idx| {
            let names = self.table(idx).fields(field);
            (!names.is_empty()).then(|| names.into_iter().map(str::to_owned).collect::<Vec<_>>())
        });
        self.count(hit.is_some());
        if hit.is_some() {
            self.fields_hit.fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    /// Deobfuscates the frame `class.method` at obfuscated line `line` (`None` or 0: no line).
    /// `None` when the map does not name the class.
    pub fn frame(&self, class: &str, method: &str, line: Option<u32>) -> Option<Retraced<'_>> {
        let hit = self.lookup_class(class).map(|idx| self.answer(self.table(idx), idx, method, line.unwrap_or(0)));
        self.count(hit.as_ref().is_some_and(|r| !r.class_only));
        hit
    }

    /// [`Retracer::frame`] for a frame that carries its residual (obfuscated) method descriptor,
    /// such as `(I)V`, when several methods share the obfuscated name: candidates whose
    /// `residualsignature` metadata names another descriptor are left out, and so are those
    /// without it whose original signature (when it has only primitives and `java.*` types, which
    /// R8 never renames) spells another one; unless none would remain.
    pub fn frame_typed(&self, class: &str, method: &str, descriptor: &str, line: Option<u32>) -> Option<Retraced<'_>> {
        let hit = self.lookup_class(class).map(|idx| {
            let t = self.table(idx);
            let all = self.answer(t, idx, method, line.unwrap_or(0));
            if !all.ambiguous {
                return all;
            }
            let keep: Vec<(String, String)> = t
                .lines_of(method)
                .iter()
                .filter(|m| m.residual_is(t, descriptor))
                .map(|m| t.original_of(m, self.map.original(idx)))
                .collect();
            let frames: Vec<OriginalFrame<'_>> = all
                .frames
                .iter()
                .filter(|f| keep.iter().any(|(c, n)| *c == f.class && *n == f.method))
                .cloned()
                .collect();
            if frames.is_empty() || frames.len() == all.frames.len() {
                return all;
            }
            Retraced { ambiguous: frames.len() > 1, frames, class_only: false }
        });
        self.count(hit.as_ref().is_some_and(|r| !r.class_only));
        hit
    }

    /// The `sourceFile` of the class whose original name is `class`, when the map names it
    /// and records one (read once per class).
    fn source_file_by_original(&self, class: &str) -> Option<&str> {
        let idx = self.map.by_original(class)?;
        self.source_files[idx as usize].get_or_init(|| self.map.source_file_of(idx).map(Into::into)).as_deref()
    }

    /// The answer for `method` at `line` (0: none) of class `idx`, from its table `t`.
    fn answer<'a>(&'a self, t: &'a ClassTable, idx: u32, method: &str, line: u32) -> Retraced<'a> {
        let original = self.map.original(idx);
        let mut frames = t.remap(original, method, line);
        // R8's retrace: a frame of a method inlined from another class takes the source file
        // that class's own mapping records (`getSourceFileOrLookup`), when it records one.
        for f in frames.iter_mut().filter(|f| f.class != original && f.file.is_some()) {
            if let Some(file) = self.source_file_by_original(&f.class) {
                f.file = Some(Cow::Borrowed(file));
            }
        }
        let lines = t.lines_of(method);
        let class_only = lines.is_empty();
        let lined = lines.iter().any(|m| m.lined);
        if frames.is_empty() {
            // An outline asked about on its own: the class is known, its caller is not.
            frames.push(OriginalFrame { class: original.into(), method: method.to_owned().into(), file: None, line });
        }
        let chain = line > 0 && lined;
        Retraced { ambiguous: !chain && frames.len() > 1, frames, class_only }
    }

    /// Deobfuscates a batch of frames: the answer of [`Retracer::frame`] for each, in order.
    /// Each distinct frame is answered once; classes are read in parallel and not kept (a
    /// class this retracer already keeps is not read again).
    pub fn frames(&self, queries: &[FrameQuery<'_>]) -> Vec<Option<Retraced<'static>>> {
        self.frames_impl(queries, false, |_, r| r.into_owned())
    }

    /// [`Retracer::frames`] for frames whose line was not written by R8 for this map's ranges
    /// alone (a profiler's sample line): a frame with a line that no obfuscated range of its
    /// method holds, when the method has ranges, is answered as a frame without a line (every
    /// candidate, as trace processor falls back to), instead of the class-only answer.
    pub fn frames_at_lines(&self, queries: &[FrameQuery<'_>]) -> Vec<Option<Retraced<'static>>> {
        self.frames_impl(queries, true, |_, r| r.into_owned())
    }

    /// The answer for `method` at `line`, or, with `fallback`, at no line when `line` is
    /// in none of the method's ranges.
    fn answer_at<'a>(&'a self, t: &'a ClassTable, idx: u32, method: &str, line: u32, fallback: bool) -> Retraced<'a> {
        if fallback && line > 0 && t.has_ranges(method) && !t.has_range_at(method, line) {
            return self.answer(t, idx, method, 0);
        }
        self.answer(t, idx, method, line)
    }

    /// [`Retracer::frames`], each answer turned into `T` by `f` (called once per query, in
    /// parallel) so a caller can keep less than a [`Retraced`] per frame. The answer `f` is
    /// given borrows its names from the class being answered: nothing is copied unless `f`
    /// copies it.
    pub fn frames_with<T: Send>(
        &self,
        queries: &[FrameQuery<'_>],
        f: impl Fn(&FrameQuery<'_>, Retraced<'_>) -> T + Sync,
    ) -> Vec<Option<T>> {
        self.frames_impl(queries, false, f)
    }

    fn frames_impl<T: Send>(
        &self,
        queries: &[FrameQuery<'_>],
        fallback: bool,
        f: impl Fn(&FrameQuery<'_>, Retraced<'_>) -> T + Sync,
    ) -> Vec<Option<T>> {
        let mut keyed: Vec<(u32, u32)> = Vec::with_capacity(queries.len());
        let mut misses = 0u64;
        for (qi, q) in queries.iter().enumerate() {
            match self.lookup_class(q.class) {
                Some(idx) => keyed.push((idx, qi as u32)),
                None => misses += 1,
            }
        }
        self.lookups.fetch_add(misses, Ordering::Relaxed);
        keyed.par_sort_unstable();
        let mut groups: Vec<Range<usize>> = Vec::new();
        let mut start = 0;
        for i in 1..=keyed.len() {
            if i == keyed.len() || keyed[i].0 != keyed[start].0 {
                if i > start {
                    groups.push(start..i);
                }
                start = i;
            }
        }
        // Runs of classes next to one another in the file are read with one read.
        const RUN: usize = 32;
        const MAX_BLOCK: u64 = 8 << 20;
        let runs: Vec<&[Range<usize>]> = groups.chunks(RUN).collect();
        let answered: Vec<Vec<(u32, T)>> = runs
            .par_iter()
            // One read buffer and one table's buffers per thread, for its runs' classes in turn.
            .map_init(
                || (Vec::new(), ClassTable::default(), Vec::<&str>::new()),
                |(buf, scratch, wanted), run| {
                    let first = keyed[run[0].start].0;
                    let last = keyed[run[run.len() - 1].start].0;
                    let span =
                        self.map.entries[first as usize].section.start..self.map.entries[last as usize].section.end;
                    // The run's block, when it is valid UTF-8 (a map nearly always is), becomes
                    // the table's text and each class is parsed in place; otherwise each class
                    // is copied into the table on its own (`refill`: its lines are checked).
                    let block_read = span.end - span.start <= MAX_BLOCK && self.map.read_into(span.clone(), buf);
                    let mut in_place = false;
                    if block_read {
                        match String::from_utf8(std::mem::take(buf)) {
                            Ok(text) => {
                                // The table's previous text becomes the next read buffer.
                                *buf = scratch.replace_text(text).into_bytes();
                                in_place = true;
                            }
                            Err(e) => *buf = e.into_bytes(),
                        }
                    }
                    let mut out: Vec<(u32, T)> = Vec::new();
                    for g in run.iter() {
                        let idx = keyed[g.start].0;
                        let t: &ClassTable = match self.tables[idx as usize].get() {
                            Some(t) => t,
                            None => {
                                let e = &self.map.entries[idx as usize];
                                let at = (e.section.start - span.start) as usize..(e.section.end - span.start) as usize;
                                if in_place {
                                    // Only the lines of the names asked about are kept.
                                    wanted.clear();
                                    for &(_, qi) in &keyed[g.clone()] {
                                        let m = queries[qi as usize].method;
                                        if !wanted.iter().any(|w| members::same(w, m)) {
                                            wanted.push(m);
                                        }
                                    }
                                    scratch.parse_in_place(at, e.line, Some(wanted));
                                } else if block_read {
                                    scratch.refill(&buf[at], e.line);
                                } else {
                                    scratch.refill(&self.map.section(idx), e.line);
                                }
                                self.note_read(idx, scratch);
                                &*scratch
                            }
                        };
                        self.answer_group(t, idx, &keyed[g.clone()], queries, fallback, &f, &mut out);
                    }
                    out
                },
            )
            .collect();
        let mut result: Vec<Option<T>> = (0..queries.len()).map(|_| None).collect();
        for (qi, t) in answered.into_iter().flatten() {
            result[qi as usize] = Some(t);
        }
        result
    }

    /// Answers the queries `items` (all of class `idx`, table `t`), each distinct frame once.
    #[allow(clippy::too_many_arguments)]
    fn answer_group<T>(
        &self,
        t: &ClassTable,
        idx: u32,
        items: &[(u32, u32)],
        queries: &[FrameQuery<'_>],
        fallback: bool,
        f: &(impl Fn(&FrameQuery<'_>, Retraced<'_>) -> T + Sync),
        out: &mut Vec<(u32, T)>,
    ) {
        // Equal frames together: sorted by (line, hash of the method name, query), integers
        // only; a run of equal frames is checked by name too (a hash shared by two names
        // only splits runs).
        let mut order: Vec<(u32, u64, u32)> = items
            .iter()
            .map(|&(_, qi)| {
                let q = &queries[qi as usize];
                (q.line.unwrap_or(0), members::name_key(q.method), qi)
            })
            .collect();
        order.sort_unstable();
        let mut hits = 0u64;
        let mut i = 0;
        while i < order.len() {
            let (line, hash, first) = order[i];
            let method = queries[first as usize].method;
            let r = self.answer_at(t, idx, method, line, fallback);
            let mut j = i + 1;
            while j < order.len()
                && (order[j].0, order[j].1) == (line, hash)
                && members::same(queries[order[j].2 as usize].method, method)
            {
                j += 1;
            }
            if !r.class_only {
                hits += (j - i) as u64;
            }
            for &(_, _, qi) in &order[i + 1..j] {
                out.push((qi, f(&queries[qi as usize], r.clone())));
            }
            out.push((first, f(&queries[first as usize], r)));
            i = j;
        }
        self.lookups.fetch_add(items.len() as u64, Ordering::Relaxed);
        self.deobfuscated.fetch_add(hits, Ordering::Relaxed);
    }

    /// Whether `class.method` is an R8 outline (its frames are dropped, their position moving
    /// the caller's line; see [`Retracer::stack`]).
    pub fn is_outline(&self, class: &str, method: &str) -> bool {
        self.lookup_class(class).is_some_and(|idx| self.table(idx).is_outline(method))
    }

    /// The obfuscated line of the call site of an outline: `class.method` at obfuscated line
    /// `line` called an outline that was at position `position`; `None` when the map has no
    /// `outlineCallsite` entry for it.
    pub fn outline_callsite(&self, class: &str, method: &str, line: u32, position: u32) -> Option<u32> {
        let idx = self.lookup_class(class)?;
        self.table(idx).outline_callsite(method, line, position)
    }

    /// Deobfuscates one call stack, innermost frame first, as R8's retrace does a stack trace:
    /// each frame's answer as [`Retracer::frame`]'s, except that an outline frame answers with
    /// no frames (it is to be dropped) and the frame below it (its caller) is looked up at
    /// the line its `outlineCallsite` metadata gives for the outline's position.
    pub fn stack(&self, frames: &[FrameQuery<'_>]) -> Vec<Option<Retraced<'_>>> {
        let mut out = Vec::with_capacity(frames.len());
        let mut carried: Option<u32> = None;
        for q in frames {
            let Some(idx) = self.lookup_class(q.class) else {
                carried = None;
                self.count(false);
                out.push(None);
                continue;
            };
            let t = self.table(idx);
            let mut line = q.line.unwrap_or(0);
            if t.is_outline(q.method) {
                carried = Some(line);
                self.count(true);
                out.push(Some(Retraced { frames: Vec::new(), ambiguous: false, class_only: false }));
                continue;
            }
            if let Some(pos) = carried.take() {
                if let Some(l) = t.outline_callsite(q.method, line, pos) {
                    line = l;
                }
            }
            let r = self.answer(t, idx, q.method, line);
            self.count(!r.class_only);
            out.push(Some(r));
        }
        out
    }

    /// [`Retracer::stack`] for the stack of a thrown exception, `thrown` being its class as
    /// the stack trace names it (obfuscated, `a.b.c`): R8's `rewriteFrame` rules of the
    /// innermost frame apply (`throws(<descriptor>)` conditions, `removeInnerFrames(n)`
    /// actions: that many inlined frames are dropped from the innermost frame's chain, as
    /// retrace does for a null check R8 moved into the caller). heapconv's inputs record no
    /// exceptions (allocations, heap dumps), so the converters call [`Retracer::stack`]; this
    /// is for a caller that has one.
    pub fn stack_thrown(&self, frames: &[FrameQuery<'_>], thrown: &str) -> Vec<Option<Retraced<'_>>> {
        let mut out = self.stack(frames);
        let descriptor = format!("L{};", thrown.replace('.', "/"));
        let top = out.iter().position(|r| r.as_ref().is_none_or(|r| !r.frames.is_empty()));
        if let (Some(i), Some(q)) = (top, top.and_then(|i| frames.get(i))) {
            let Some(idx) = self.lookup_class(q.class) else { return out };
            let n = self.table(idx).inner_frames_removed(q.method, q.line.unwrap_or(0), &descriptor);
            if let Some(Some(r)) = out.get_mut(i)
                && n > 0
                && !r.ambiguous
            {
                let keep = r.frames.len().saturating_sub(n).max(1);
                let drop = r.frames.len() - keep;
                r.frames.drain(..drop);
            }
        }
        out
    }

    /// What this retracer did so far.
    pub fn report(&self) -> RetraceReport {
        let first = self.first_skipped.load(Ordering::Relaxed);
        let deobfuscated = self.deobfuscated.load(Ordering::Relaxed);
        let classes = self.classes_hit.load(Ordering::Relaxed);
        let fields = self.fields_hit.load(Ordering::Relaxed);
        RetraceReport {
            map: self.map.name.clone(),
            package: self.map.package.clone(),
            classes_in_map: self.map.entries.len() as u64,
            classes_read: self.classes_read.load(Ordering::Relaxed),
            lookups: self.lookups.load(Ordering::Relaxed),
            deobfuscated,
            skipped_lines: self.skipped.load(Ordering::Relaxed),
            first_skipped: (first != u32::MAX).then(|| format!("{}:{first}", self.map.name)),
            deobfuscated_by_kind: KindCounts { frames: deobfuscated.saturating_sub(classes + fields), classes, fields },
        }
    }
}

/// Splits a Java frame name `package.Class.method` into class and method at the last `.`
/// (heapprofd and DDM name Java frames so); `None` when there is no `.`.
pub fn split_java_frame(name: &str) -> Option<(&str, &str)> {
    let dot = name.rfind('.')?;
    let (class, method) = (&name[..dot], &name[dot + 1..]);
    (!class.is_empty() && !method.is_empty()).then_some((class, method))
}
