//! One class's members as a compact table, and the lookup rules of R8's `retrace` over it.
//!
//! Each line is parsed with the [`proguard`] crate's line grammar
//! ([`ProguardRecord::try_parse`], R8 JSON metadata included); what is kept is a flat table of
//! byte spans into the class's own section text (a copy of its lines), a few dozen bytes a
//! member line. The crate's own mapper keeps several hash maps of owned and cloned records per
//! class (about eight times the map's bytes when every class is read): its rules are
//! reproduced here over the flat table instead, and a unit test compares the two on maps of
//! every shape the rules distinguish.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use proguard::ProguardRecord;

use super::OriginalFrame;
use super::line;

/// A byte range of a [`ClassTable`]'s text; `NONE` for absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Span {
    start: u32,
    len: u32,
}

impl Span {
    const NONE: Span = Span { start: u32::MAX, len: 0 };

    fn is_none(self) -> bool {
        self.start == u32::MAX
    }
}

/// One method line (`[a:b:]type [Class.]name(args)[:c[:d]] -> obfuscated`) of a class.
#[derive(Clone, Debug)]
pub(super) struct MethodLine {
    /// A hash of the obfuscated name: the table is sorted by it (then by the name).
    key: u64,
    pub(super) obfuscated: Span,
    /// Return type, as the line writes it (original names).
    ty: Span,
    original: Span,
    /// The receiver when the line names one (`Other.name(…)`), else `NONE`.
    class: Span,
    arguments: Span,
    /// Obfuscated range, normalized (start <= end).
    start: Option<u32>,
    end: Option<u32>,
    /// Original range, normalized; the obfuscated one when the line gives none.
    original_start: Option<u32>,
    original_end: Option<u32>,
    /// Whether the line, as written, has an obfuscated range ending past line 0.
    pub(super) lined: bool,
    synthesized: bool,
    pub(super) outline: bool,
    /// Index into [`ClassTable::callsites`], or `u32::MAX`.
    callsite: u32,
    /// `com.android.tools.r8.residualsignature`: the method's descriptor in the output.
    pub(super) residual: Span,
    /// Index into [`ClassTable::rewrites`] (`com.android.tools.r8.rewriteFrame` rules), or
    /// `u32::MAX`.
    pub(super) rewrite: u32,
}

/// A class's fields and methods, parsed from its section of the map.
#[derive(Debug, Default)]
pub(super) struct ClassTable {
    text: String,
    /// The class's original name (its class line's left side).
    own: Span,
    source_file: Span,
    synthesized: bool,
    /// `(obfuscated, original)` per field line, file order.
    fields: Vec<(Span, Span)>,
    /// Method lines, file order.
    pub(super) methods: Vec<MethodLine>,
    /// `outlineCallsite` position tables: (outline position, callsite line), sorted.
    callsites: Vec<Vec<(u32, u32)>>,
    /// `rewriteFrame` rules, per method line that has some: (conditions, actions) as written.
    pub(super) rewrites: Vec<Vec<(Vec<String>, Vec<String>)>>,
    /// Member lines that did not parse, and the 1-based map line of the first.
    pub(super) skipped: u32,
    pub(super) first_skipped: Option<u32>,
    /// Scratch of [`ClassTable::refill`]: each method line's own `(synthesized, outline)`,
    /// the sort keys, and the lines in sorted order before they take `methods`' place.
    line_flags: Vec<(bool, bool)>,
    order: Vec<(u64, u32)>,
    sorted: Vec<MethodLine>,
    /// Scratch of [`ClassTable::parse_in_place`] for some names: method lines of other names
    /// that `synthesized` or `outline` metadata marks, with the marks (they mark the kept
    /// lines of the same method too).
    dropped: Vec<(MethodLine, bool, bool)>,
}

impl Default for Span {
    fn default() -> Self {
        Span::NONE
    }
}

/// What was attached last, for the R8 metadata lines that follow it.
enum Attach {
    /// The class line (and metadata lines after it).
    Class,
    /// Method line `i` of the table.
    Method(usize),
    /// A method line left out of the table ([`ClassTable::parse_in_place`] for some names).
    Dropped,
    /// Something metadata does not attach to (a field, a `# key: value` comment).
    Nothing,
}

impl ClassTable {
    /// Parses the section `text` of a class (its class line first), whose class line is line
    /// `first_line` of the map.
    pub(super) fn parse(raw: &[u8], first_line: u32) -> ClassTable {
        let mut t = ClassTable::default();
        t.refill(raw, first_line);
        // A table kept for the run keeps no scratch.
        (t.line_flags, t.order, t.sorted, t.dropped) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        t
    }

    /// [`ClassTable::parse`] into this table, whose buffers are reused (a batch reads
    /// thousands of classes one after another: one set of buffers per thread).
    pub(super) fn refill(&mut self, raw: &[u8], first_line: u32) {
        let mut owned = std::mem::take(&mut self.text);
        owned.clear();
        match std::str::from_utf8(raw) {
            Ok(s) => owned.push_str(s),
            Err(_) => owned.push_str(&valid_lines(raw)),
        }
        self.text = owned;
        let len = self.text.len();
        self.parse_in_place(0..len, first_line, None);
    }

    /// Makes `text` this table's text (a block of several classes' sections, to be parsed
    /// in place one class at a time by [`ClassTable::parse_in_place`]); returns the old one.
    pub(super) fn replace_text(&mut self, text: String) -> String {
        std::mem::replace(&mut self.text, text)
    }

    /// Parses the class whose section is bytes `range` of this table's text (its class line
    /// first, line `first_line` of the map), in place: spans point into the text, which is
    /// kept as it is. With `wanted`, the table is for frames of those obfuscated method names
    /// only (a batch's): other method lines and fields are read (a line that does not parse
    /// is counted all the same) but not kept, except for the marks their metadata gives to
    /// lines of the same method.
    pub(super) fn parse_in_place(&mut self, range: Range<usize>, first_line: u32, wanted: Option<&[&str]>) {
        let owned = std::mem::take(&mut self.text);
        let mut dropped = std::mem::take(&mut self.dropped);
        dropped.clear();
        let mut last_dropped: Option<MethodLine> = None;
        let mut line_flags = std::mem::take(&mut self.line_flags);
        line_flags.clear();
        let mut fields = std::mem::take(&mut self.fields);
        fields.clear();
        let mut methods = std::mem::take(&mut self.methods);
        methods.clear();
        let mut callsites = std::mem::take(&mut self.callsites);
        callsites.clear();
        let mut attach = Attach::Nothing;
        // Sections start and end at line starts: `range` is on char boundaries.
        let text_str: &str = owned.get(range.clone()).unwrap_or_default();
        let text: &[u8] = text_str.as_bytes();
        // Lines are cut at `\n`; without a `\r` in the class, none holds a line break.
        let unbroken = memchr::memchr(b'\r', text).is_none();
        let base = owned.as_ptr() as usize;
        let span = |s: &str| Span { start: (s.as_ptr() as usize - base) as u32, len: s.len() as u32 };
        let mut rewrites = std::mem::take(&mut self.rewrites);
        rewrites.clear();
        let mut source_file = Span::NONE;
        let mut own = Span::NONE;
        let mut synthesized = false;
        let mut skipped = 0u32;
        let mut first_skipped = None;
        let mut pos = 0usize;
        let mut line_no = first_line;
        let mut first = true;
        while pos < text.len() {
            let end = memchr::memchr(b'\n', &text[pos..]).map_or(text.len(), |i| pos + i);
            // Lines end at `\n` (ASCII): each is a `str` of the class's text.
            let raw = &text_str[pos..end];
            let here = line_no;
            line_no = line_no.saturating_add(1);
            pos = end + 1;
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if first {
                first = false;
                attach = Attach::Class;
                own = span(line.split(" -> ").next().unwrap_or_default().trim());
                continue;
            }
            let trimmed = line.trim_ascii_start();
            if trimmed.is_empty() {
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix('#') {
                let rest = rest.trim_ascii_start();
                if !rest.starts_with('{') {
                    // A `# key: value` comment: metadata after it attaches to nothing.
                    attach = Attach::Nothing;
                    continue;
                }
                // R8 metadata; one that does not parse is passed over. The `sourceFile` line
                // R8 writes under nearly every class is read without the JSON parser.
                let meta = match line::source_file_fast(rest) {
                    Some(file_name) => Meta::SourceFile { file_name },
                    None => match serde_json::from_str::<Meta<'_>>(rest) {
                        Ok(m) => m,
                        Err(_) => continue,
                    },
                };
                match (&attach, meta) {
                    (Attach::Class, Meta::SourceFile { file_name }) => source_file = span(file_name),
                    (Attach::Class, Meta::Synthesized) => synthesized = true,
                    (Attach::Method(i), Meta::Synthesized) => line_flags[*i].0 = true,
                    (Attach::Method(i), Meta::Outline) => line_flags[*i].1 = true,
                    (Attach::Dropped, mark @ (Meta::Synthesized | Meta::Outline)) => {
                        if let Some(m) = &last_dropped {
                            let outline = matches!(mark, Meta::Outline);
                            dropped.push((m.clone(), !outline, outline));
                        }
                    }
                    (Attach::Method(i), Meta::OutlineCallsite { positions }) => {
                        let mut map: Vec<(u32, u32)> = positions
                            .iter()
                            .filter_map(|(k, &v)| Some((k.parse::<u32>().ok()?, u32::try_from(v).ok()?)))
                            .collect();
                        if !map.is_empty() {
                            map.sort_unstable();
                            methods[*i].callsite = callsites.len() as u32;
                            callsites.push(map);
                        }
                    }
                    (Attach::Method(i), Meta::RewriteFrame { conditions, actions }) => {
                        let m = &mut methods[*i];
                        if m.rewrite == u32::MAX {
                            m.rewrite = rewrites.len() as u32;
                            rewrites.push(Vec::new());
                        }
                        rewrites[m.rewrite as usize].push((conditions, actions));
                    }
                    (Attach::Method(i), Meta::ResidualSignature { signature }) => {
                        methods[*i].residual = span(signature);
                    }
                    _ => {}
                }
                continue;
            }
            let record = if unbroken { line::member_unbroken(line) } else { line::member(line) };
            match record {
                Some(ProguardRecord::R8Header(_) | ProguardRecord::Header { .. }) => attach = Attach::Nothing,
                Some(ProguardRecord::Field { original, obfuscated, .. }) => {
                    if wanted.is_none() {
                        fields.push((span(obfuscated), span(original)));
                    }
                    attach = Attach::Nothing;
                }
                Some(ProguardRecord::Method { ty, original, obfuscated, arguments, original_class, line_mapping }) => {
                    let lm = line_mapping;
                    let (mut start, mut end_) = lm.map_or((None, None), |l| (l.startline, l.endline));
                    let (mut os, mut oe) = match lm {
                        None => (None, None),
                        Some(l) => match l.original_startline {
                            Some(s) => (Some(s), l.original_endline),
                            None => (start, end_),
                        },
                    };
                    if let (Some(s), Some(e)) = (start, end_) {
                        if s > e {
                            (start, end_) = (Some(e), Some(s));
                        }
                    }
                    if let (Some(s), Some(e)) = (os, oe) {
                        if s > e {
                            (os, oe) = (Some(e), Some(s));
                        }
                    }
                    let narrow = |v: Option<usize>| v.map(u32::try_from).transpose();
                    let (Ok(start), Ok(end_), Ok(os), Ok(oe)) = (narrow(start), narrow(end_), narrow(os), narrow(oe))
                    else {
                        skipped += 1;
                        first_skipped.get_or_insert(here);
                        attach = Attach::Nothing;
                        continue;
                    };
                    let line = MethodLine {
                        key: 0,
                        obfuscated: span(obfuscated),
                        ty: span(ty),
                        original: span(original),
                        class: original_class.map_or(Span::NONE, span),
                        arguments: span(arguments),
                        start,
                        end: end_,
                        original_start: os,
                        original_end: oe,
                        lined: lm.is_some_and(|l| l.endline.unwrap_or(0) > 0),
                        synthesized: false,
                        outline: false,
                        callsite: u32::MAX,
                        residual: Span::NONE,
                        rewrite: u32::MAX,
                    };
                    if wanted.is_some_and(|w| !w.iter().any(|n| same(n, obfuscated))) {
                        last_dropped = Some(line);
                        attach = Attach::Dropped;
                        continue;
                    }
                    methods.push(MethodLine { key: name_key(obfuscated), ..line });
                    line_flags.push((false, false));
                    attach = Attach::Method(methods.len() - 1);
                }
                Some(ProguardRecord::Class { .. }) => attach = Attach::Nothing,
                None => {
                    // Lines that do not parse are transparent to metadata attachment, as in
                    // the crate (its record iterator drops them).
                    skipped += 1;
                    first_skipped.get_or_insert(here);
                }
            }
        }
        self.text = owned;
        self.fields = fields;
        self.own = own;
        self.source_file = source_file;
        self.synthesized = synthesized;
        self.callsites = callsites;
        self.rewrites = rewrites;
        self.skipped = skipped;
        self.first_skipped = first_skipped;
        // `synthesized` and `outline` belong to a method (receiver, name, arguments): every line
        // of that method in the class carries them.
        if line_flags.iter().any(|&(s, o)| s || o) || !dropped.is_empty() {
            let flags: Vec<(bool, bool)> = (0..methods.len())
                .map(|i| {
                    let mut f = (false, false);
                    let marked = methods.iter().zip(&line_flags).map(|(m, &(s, o))| (m, s, o));
                    for (m, s, o) in marked.chain(dropped.iter().map(|(m, s, o)| (m, *s, *o))) {
                        if (s || o) && self.same_method(&methods[i], m) {
                            f.0 |= s;
                            f.1 |= o;
                        }
                    }
                    f
                })
                .collect();
            for (m, (s, o)) in methods.iter_mut().zip(flags) {
                m.synthesized = s;
                m.outline = o;
            }
        }
        self.line_flags = line_flags;
        self.dropped = dropped;
        // Lookups go by obfuscated name: lines sorted by it, file order kept within a name.
        // Sorted by (hash, file position) as 16-byte keys, then moved into place once; by
        // name too only when two names share a hash.
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(methods.iter().enumerate().map(|(i, m)| (m.key, i as u32)));
        if !order.is_sorted() {
            order.sort_unstable();
            let mut sorted = std::mem::take(&mut self.sorted);
            sorted.clear();
            sorted.extend(order.iter().map(|&(_, i)| methods[i as usize].clone()));
            std::mem::swap(&mut methods, &mut sorted);
            self.sorted = sorted;
        }
        self.order = order;
        if methods.windows(2).any(|w| w[0].key == w[1].key && self.s(w[0].obfuscated) != self.s(w[1].obfuscated)) {
            methods.sort_by(|a, b| a.key.cmp(&b.key).then_with(|| self.s(a.obfuscated).cmp(self.s(b.obfuscated))));
        }
        self.methods = methods;
    }

    /// The text of span `s` (empty for `NONE`).
    pub(super) fn s(&self, s: Span) -> &str {
        if s.is_none() {
            return "";
        }
        // Spans come from `&str`s the parser cut from this text: always on char boundaries.
        self.text.get(s.start as usize..s.start as usize + s.len as usize).unwrap_or_default()
    }

    fn receiver<'a>(&'a self, m: &MethodLine, class: &'a str) -> &'a str {
        if m.class.is_none() { class } else { self.s(m.class) }
    }

    /// Whether two lines are of the same method (receiver, name, arguments), the receiver of a
    /// line without one being this class (its original name is the class line's).
    fn same_method(&self, a: &MethodLine, b: &MethodLine) -> bool {
        let own = self.own_name();
        self.receiver(a, own) == self.receiver(b, own)
            && self.s(a.original) == self.s(b.original)
            && self.s(a.arguments) == self.s(b.arguments)
    }

    /// The class's original name, from its class line.
    fn own_name(&self) -> &str {
        self.s(self.own)
    }

    /// The original names of field `obfuscated`, file order, each once.
    pub(super) fn fields(&self, obfuscated: &str) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for &(o, n) in &self.fields {
            if self.s(o) == obfuscated {
                let n = self.s(n);
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
        out
    }

    /// The lines of obfuscated method `method`, file order.
    pub(super) fn lines_of(&self, method: &str) -> &[MethodLine] {
        let key = name_key(method);
        let lo = self.methods.partition_point(|m| m.key < key);
        let n = self.methods[lo..].partition_point(|m| m.key == key);
        let same = &self.methods[lo..lo + n];
        match (same.first(), same.last()) {
            (Some(a), Some(b))
                if !self::same(self.s(a.obfuscated), method) || !self::same(self.s(b.obfuscated), method) =>
            {
                // Names sharing the hash: sorted by name within it.
                let a = same.partition_point(|m| self.s(m.obfuscated) < method);
                let n = same[a..].partition_point(|m| self.s(m.obfuscated) == method);
                &same[a..a + n]
            }
            _ => same,
        }
    }

    /// Whether obfuscated method `method` is an outline (R8 `com.android.tools.r8.outline`),
    /// judged, as retrace does, by its first line.
    pub(super) fn is_outline(&self, method: &str) -> bool {
        self.lines_of(method).first().is_some_and(|m| m.outline)
    }

    /// The line of the callsite of an outline, for the frame that called it: the outline ran
    /// at position `pos`, the caller `method` is at obfuscated line `line`; its line covering
    /// `line` (or without a range) maps `pos` in its `outlineCallsite` table.
    pub(super) fn outline_callsite(&self, method: &str, line: u32, pos: u32) -> Option<u32> {
        self.lines_of(method)
            .iter()
            .filter(|m| m.end.unwrap_or(0) == 0 || (line >= m.start.unwrap_or(0) && line <= m.end.unwrap_or(0)))
            .find_map(|m| {
                let table = self.callsites.get(m.callsite as usize)?;
                table.binary_search_by_key(&pos, |&(p, _)| p).ok().map(|i| table[i].1)
            })
    }

    fn frame<'a>(
        &'a self,
        m: &MethodLine,
        class: &'a str,
        line: Option<u32>,
        file: Option<Cow<'a, str>>,
    ) -> OriginalFrame<'a> {
        OriginalFrame {
            class: Cow::Borrowed(self.receiver(m, class)),
            method: Cow::Borrowed(self.s(m.original)),
            file,
            line: line.unwrap_or(0),
        }
    }

    /// The file of a frame for a line without a range: always derived from the class name.
    fn without_lines<'a>(&'a self, m: &MethodLine, class: &'a str, line: Option<u32>) -> OriginalFrame<'a> {
        let file = synthesize_source_file(self.receiver(m, class), self.outer_source_file()).map(Cow::Owned);
        self.frame(m, class, line, file)
    }

    fn outer_source_file(&self) -> Option<&str> {
        (!self.source_file.is_none()).then(|| self.s(self.source_file))
    }

    fn with_lines<'a>(&'a self, m: &MethodLine, class: &'a str, frame_line: u32) -> Option<OriginalFrame<'a>> {
        let end = m.end.unwrap_or(0);
        let start = m.start.unwrap_or(0);
        if end > 0 && (frame_line < start || frame_line > end) {
            return None;
        }
        let line = if m.original_end.is_none() || m.original_end == m.original_start {
            m.original_start.unwrap_or(0)
        } else {
            let l = u64::from(m.original_start.unwrap_or(0)) + u64::from(frame_line) - u64::from(start);
            u32::try_from(l).unwrap_or(0)
        };
        let receiver = self.receiver(m, class);
        // The source file of the receiver: this class's record when the line is this class's.
        let own_file = (receiver == self.own_name() && !self.source_file.is_none()).then(|| self.s(self.source_file));
        let file = match own_file {
            Some("R8$$SyntheticClass") => extract_class_name(receiver).map(Cow::Borrowed),
            Some(f) => Some(Cow::Borrowed(f)),
            None => synthesize_source_file(receiver, self.outer_source_file()).map(Cow::Owned),
        };
        Some(self.frame(m, class, Some(line), file))
    }

    /// The class-only answer: original class, obfuscated method, the frame's line.
    /// (The method name is copied: the map does not hold it.)
    fn class_only<'a>(class: &'a str, method: &str, line: u32) -> OriginalFrame<'a> {
        OriginalFrame {
            class: Cow::Borrowed(class),
            method: Cow::Owned(method.to_owned()),
            file: synthesize_source_file(class, None).map(Cow::Owned),
            line,
        }
    }

    /// The frames obfuscated method `method` at obfuscated line `line` (0: none) stands for,
    /// `class` being this class's original name: R8 retrace's rules for one frame (the
    /// `proguard` crate's `remap_stacktrace_typed` of a one-frame trace). Empty for an outline.
    pub(super) fn remap<'a>(&'a self, class: &'a str, method: &str, line: u32) -> Vec<OriginalFrame<'a>> {
        let entries = self.lines_of(method);
        let Some(first) = entries.first() else {
            return vec![Self::class_only(class, method, line)];
        };
        if first.outline {
            return Vec::new();
        }
        let mut out = Vec::new();
        let has_line_info = entries.iter().any(|m| m.end.unwrap_or(0) > 0);
        if line == 0 {
            let base: Vec<&MethodLine> = entries.iter().filter(|m| m.end.unwrap_or(0) == 0).collect();
            if !base.is_empty() {
                self.base_entries(class, &base, &mut out);
            } else {
                // No line to pick a range with: the outermost line (the last) of each range
                // group is a method that exists in the class. R8's retrace (and the crate)
                // report the first group's; when groups disagree, which one ran is exactly
                // what the missing line would tell, so every distinct one is a candidate,
                // sorted as trace processor lists them (Perfetto's R8 retrace compatibility
                // tests: a horizontally merged `baz` is `A.baz | B.baz`).
                let mut outer: Vec<&MethodLine> = Vec::new();
                let mut k = 0;
                while k < entries.len() {
                    let mut j = k;
                    while j + 1 < entries.len()
                        && entries[j + 1].start == entries[k].start
                        && entries[j + 1].end == entries[k].end
                    {
                        j += 1;
                    }
                    let m = &entries[j];
                    let name = (self.receiver(m, class), self.s(m.original));
                    if !outer.iter().any(|o| (self.receiver(o, class), self.s(o.original)) == name) {
                        outer.push(m);
                    }
                    k = j + 1;
                }
                if outer.len() > 1 {
                    outer.sort_by(|a, b| {
                        (self.receiver(a, class), self.s(a.original))
                            .cmp(&(self.receiver(b, class), self.s(b.original)))
                    });
                }
                for m in outer {
                    out.push(self.without_lines(m, class, Some(0)));
                }
            }
            return out;
        }
        for m in entries {
            let end = m.end.unwrap_or(0);
            if has_line_info && end == 0 {
                continue;
            }
            if end == 0 {
                let Some(os) = m.original_start else {
                    out.push(self.without_lines(m, class, Some(line)));
                    continue;
                };
                if let Some(oe) = m.original_end {
                    if oe > os && oe - os <= 65_535 {
                        for l in os..=oe {
                            out.push(self.without_lines(m, class, Some(l)));
                        }
                        continue;
                    }
                }
                out.push(self.without_lines(m, class, (os > 0).then_some(os)));
            } else if let Some(f) = self.with_lines(m, class, line) {
                out.push(f);
            }
        }
        if out.is_empty() && has_line_info {
            out.push(Self::class_only(class, method, line));
        }
        out
    }

    /// Lines without an obfuscated range, for a frame without a line.
    fn base_entries<'a>(&'a self, class: &'a str, base: &[&MethodLine], out: &mut Vec<OriginalFrame<'a>>) {
        let mut zero_has_range = false;
        let mut no_range = 0usize;
        let mut first_name: Option<&str> = None;
        let mut same_name = true;
        let mut all_lined = true;
        for m in base {
            if m.start.is_some() {
                if m.original_end.is_some() && m.original_end != m.original_start {
                    zero_has_range = true;
                }
            } else {
                no_range += 1;
                if m.original_start.is_none() {
                    all_lined = false;
                }
                let n = self.s(m.original);
                match first_name {
                    None => first_name = Some(n),
                    Some(f) if f != n => same_name = false,
                    _ => {}
                }
            }
        }
        let mut emitted = false;
        for m in base {
            if m.start.is_some() {
                let l = if zero_has_range { Some(0) } else { m.original_start.filter(|&s| s > 0) };
                out.push(self.without_lines(m, class, l));
            } else if same_name {
                if !emitted {
                    emitted = true;
                    let l = if no_range == 1 { m.original_start.or(Some(0)) } else { Some(0) };
                    out.push(self.without_lines(m, class, l));
                }
            } else {
                out.push(self.without_lines(m, class, Some(0)));
            }
        }
        if !same_name && all_lined {
            out.sort_by(|a, b| a.method.cmp(&b.method));
        }
    }
}

/// `bytes` (a class's section that is not all UTF-8) with each line that is not UTF-8
/// replaced by one that reads the same way: a comment stays a comment that is passed over
/// (`#{`), any other line becomes a member line that does not parse (skipped and counted).
fn valid_lines(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match std::str::from_utf8(line) {
            Ok(l) => out.push_str(l),
            Err(_) if line.trim_ascii_start().first() == Some(&b'#') => out.push_str("#{"),
            Err(_) => out.push_str("\t\u{1}"),
        }
    }
    out
}

/// The R8 metadata (`# {"id":…}` lines) the lookups use; others are `Other`.
#[derive(Debug, serde::Deserialize)]
#[serde(tag = "id")]
pub(super) enum Meta<'a> {
    #[serde(rename = "sourceFile", rename_all = "camelCase")]
    SourceFile { file_name: &'a str },
    #[serde(rename = "com.android.tools.r8.synthesized")]
    Synthesized,
    #[serde(rename = "com.android.tools.r8.outline")]
    Outline,
    #[serde(rename = "com.android.tools.r8.outlineCallsite")]
    OutlineCallsite {
        #[serde(borrow)]
        positions: HashMap<&'a str, u64>,
    },
    #[serde(rename = "com.android.tools.r8.residualsignature")]
    ResidualSignature { signature: &'a str },
    #[serde(rename = "com.android.tools.r8.rewriteFrame")]
    RewriteFrame {
        #[serde(default)]
        conditions: Vec<String>,
        #[serde(default)]
        actions: Vec<String>,
    },
    #[serde(other)]
    Other,
}

/// A hash of a member name (FNV-1a): orders a class's method lines without comparing text.
pub(super) fn name_key(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Whether two (short) names are equal, compared in place: member names are a few bytes,
/// where a call to `memcmp` costs more than the comparison.
#[inline]
pub(super) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// The simple name of a class without its inner classes (`a.b.Foo$Bar` -> `Foo`).
fn extract_class_name(full: &str) -> Option<&str> {
    full.split('.').next_back()?.split('$').next()
}

/// A source file name derived from a class name as retrace derives it: a `$`-segment ending
/// in `Kt` gives `<segment>.kt`; otherwise the outer class's name with the extension of
/// `reference` (the class's `sourceFile`), `.java` by default.
pub(super) fn synthesize_source_file(class: &str, reference: Option<&str>) -> Option<String> {
    let last = class.split('.').next_back()?;
    let mut segments = last.split('$');
    let base = segments.next()?;
    for seg in std::iter::once(base).chain(segments) {
        if let Some(k) = seg.strip_suffix("Kt").filter(|s| !s.is_empty()) {
            return Some(format!("{k}.kt"));
        }
    }
    if let Some(ext) = reference.and_then(|f| f.rfind('.').map(|p| &f[p..])) {
        return Some(format!("{base}{ext}"));
    }
    Some(format!("{base}.java"))
}

impl MethodLine {
    /// Whether this line may be the method with residual descriptor `descriptor`: its
    /// `residualsignature` says so; without one, the descriptor of its original signature
    /// does, when every type in it is one R8 never renames (primitives, `java.*`); a line with
    /// other types and no metadata may be it.
    pub(super) fn residual_is(&self, t: &ClassTable, descriptor: &str) -> bool {
        if !self.residual.is_none() {
            return t.s(self.residual) == descriptor;
        }
        let args = t.s(self.arguments);
        let mut d = String::from("(");
        for a in args.split(',').filter(|a| !a.is_empty()) {
            match type_descriptor(a.trim()) {
                Some(x) => d.push_str(&x),
                None => return true,
            }
        }
        d.push(')');
        match type_descriptor(t.s(self.ty)) {
            Some(x) => d.push_str(&x),
            None => return true,
        }
        d == descriptor
    }
}

/// The JVM descriptor of a Java type R8 never renames (`int[]` -> `[I`,
/// `java.lang.String` -> `Ljava/lang/String;`); `None` for any other class.
fn type_descriptor(ty: &str) -> Option<String> {
    let base = ty.trim_end_matches("[]");
    let dims = (ty.len() - base.len()) / 2;
    let code = match base {
        "void" => "V".to_owned(),
        "boolean" => "Z".to_owned(),
        "byte" => "B".to_owned(),
        "char" => "C".to_owned(),
        "short" => "S".to_owned(),
        "int" => "I".to_owned(),
        "long" => "J".to_owned(),
        "float" => "F".to_owned(),
        "double" => "D".to_owned(),
        c if c.starts_with("java.") => format!("L{};", c.replace('.', "/")),
        _ => return None,
    };
    Some(format!("{}{code}", "[".repeat(dims)))
}

impl ClassTable {
    /// `(class, method)` of line `m`, `class` being this class's original name.
    pub(super) fn original_of(&self, m: &MethodLine, class: &str) -> (String, String) {
        (self.receiver(m, class).to_owned(), self.s(m.original).to_owned())
    }
}

impl ClassTable {
    /// Whether a line of obfuscated method `method` has an obfuscated range (ending past 0)
    /// that holds `line`.
    pub(super) fn has_range_at(&self, method: &str, line: u32) -> bool {
        self.lines_of(method).iter().any(|m| {
            let (s, e) = (m.start.unwrap_or(0), m.end.unwrap_or(0));
            e > 0 && line >= s && line <= e
        })
    }

    /// Whether any line of obfuscated method `method` has an obfuscated range ending past 0.
    pub(super) fn has_ranges(&self, method: &str) -> bool {
        self.lines_of(method).iter().any(|m| m.end.unwrap_or(0) > 0)
    }
}

/// The `sourceFile` R8 recorded for a class: the `# {"id":"sourceFile",…}` among the comment
/// lines right after its class line (the start of its section, `head`); `None` without one.
pub(super) fn header_source_file(head: &[u8]) -> Option<String> {
    for line in head.split(|&b| b == b'\n').skip(1) {
        let line = line.strip_suffix(b"\r").unwrap_or(line).trim_ascii();
        if line.is_empty() {
            continue;
        }
        let rest = line.strip_prefix(b"#")?.trim_ascii_start();
        if !rest.starts_with(b"{") {
            continue;
        }
        let text = std::str::from_utf8(rest).ok()?;
        if let Ok(Meta::SourceFile { file_name }) = serde_json::from_str::<Meta<'_>>(text) {
            return Some(match file_name {
                "R8$$SyntheticClass" => return None,
                f => f.to_owned(),
            });
        }
    }
    None
}

impl ClassTable {
    /// How many inner frames R8's `rewriteFrame` rules remove from the inline chain of
    /// obfuscated method `method` at obfuscated line `line`, for a frame that threw
    /// `thrown` (a JVM descriptor, `Ljava/lang/NullPointerException;`): the rules of the lines
    /// whose range holds `line` whose every condition is `throws(<thrown>)` add up their
    /// `removeInnerFrames(n)` actions. Other conditions and actions are not known, and a rule
    /// with one does not apply (as R8's retrace ignores rules it cannot read).
    pub(super) fn inner_frames_removed(&self, method: &str, line: u32, thrown: &str) -> usize {
        let mut n = 0usize;
        for m in self.lines_of(method) {
            let (s, e) = (m.start.unwrap_or(0), m.end.unwrap_or(0));
            if m.rewrite == u32::MAX || (e > 0 && (line < s || line > e)) {
                continue;
            }
            for (conditions, actions) in &self.rewrites[m.rewrite as usize] {
                let holds = !conditions.is_empty()
                    && conditions
                        .iter()
                        .all(|c| c.strip_prefix("throws(").and_then(|c| c.strip_suffix(')')) == Some(thrown));
                let counts: Option<Vec<usize>> = actions
                    .iter()
                    .map(|a| a.strip_prefix("removeInnerFrames(")?.strip_suffix(')')?.parse().ok())
                    .collect();
                if let (true, Some(counts)) = (holds, counts) {
                    n += counts.iter().sum::<usize>();
                }
            }
        }
        n
    }
}
