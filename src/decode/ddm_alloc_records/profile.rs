//! DDM allocation records as the model's profile: Java names of VM descriptors, frame labels,
//! the sample types, labels and heap name of a DDM profile, and the profile of one or more
//! captures (one sample per record, newest or oldest first as the capture says).

use super::*;

/// A VM class descriptor as a Java name: `Ljava/lang/String;` is `java.lang.String`, `[I` is
/// `int[]`, `[[Lfoo/Bar;` is `foo.Bar[][]`. Anything else is returned as written.
pub fn java_name(descriptor: &str) -> String {
    let body = descriptor.trim_start_matches('[');
    let dims = descriptor.len() - body.len();
    let base = if body.len() >= 2 && body.starts_with('L') && body.ends_with(';') {
        body[1..body.len() - 1].replace('/', ".")
    } else if dims > 0 {
        match body {
            "Z" => "boolean",
            "B" => "byte",
            "C" => "char",
            "S" => "short",
            "I" => "int",
            "J" => "long",
            "F" => "float",
            "D" => "double",
            _ => return descriptor.to_owned(),
        }
        .to_owned()
    } else {
        return descriptor.to_owned();
    };
    let mut s = base;
    for _ in 0..dims {
        s.push_str("[]");
    }
    s
}

/// The line number a raw value stands for: `None` for -1 (no information) and -2 (native);
/// values below -2 are ART's 16-bit cut of lines from 32768 on, read as unsigned.
pub fn source_line(raw: i16) -> Option<u32> {
    match raw {
        -1 | -2 => None,
        l if l < 0 => Some(u32::from(l as u16)),
        l => Some(l as u32),
    }
}

/// The label of a method frame, as Android prints a stack trace element:
/// `class.method(File.java:12)`, `(File.java)` without a line, `(Unknown Source:12)` or
/// `(Unknown Source)` without a file, `(Native Method)` for line -2.
pub fn frame_label(class: &str, method: &str, file: &str, line: i16) -> String {
    let mut s = String::new();
    push_frame_label(&mut s, class, method, file, line);
    s
}

fn push_frame_label(s: &mut String, class: &str, method: &str, file: &str, line: i16) {
    use std::fmt::Write;
    s.push_str(class);
    s.push('.');
    s.push_str(method);
    s.push('(');
    match (line, source_line(line)) {
        (-2, _) => s.push_str("Native Method"),
        (_, None) => s.push_str(if file.is_empty() { "Unknown Source" } else { file }),
        (_, Some(l)) => {
            s.push_str(if file.is_empty() { "Unknown Source" } else { file });
            let _ = write!(s, ":{l}");
        }
    }
    s.push(')');
}

/// Label of the root frame added to stacks that reach the depth limit.
pub const TRUNCATED_FRAME: &str = "[truncated]";
/// Label of the only frame of an allocation recorded without a stack (and without the
/// allocated-class frame).
pub const NO_STACK: &str = "[no stack]";
/// Label key of the thread id of each sample.
pub const THREAD_LABEL: &str = "thread";
/// Label key of the allocation number of each sample (1 for the oldest of its capture).
pub const ALLOCATION_LABEL: &str = "allocation";
/// The heap name profiles of DDM captures carry.
pub const HEAP_NAME: &str = "ddm-alloc-records";

/// The sample types of a DDM profile: `alloc_objects`/count and `alloc_space`/bytes.
pub fn sample_types() -> Vec<ValueType> {
    vec![
        ValueType::new("alloc_objects", "count", ValueKind::TotalCount),
        ValueType::new("alloc_space", "bytes", ValueKind::TotalSize),
    ]
}

/// Makes one profile of one or more captures (merged: one set of tables, samples appended in
/// the order of the captures). Each sample is one allocation: stack root (outermost method)
/// first, then the allocated class as leaf frame; values 1 and the size; label `thread` (and
/// `allocation`, 1 for the oldest allocation of its capture, with
/// [`DdmOptions::allocation_label`]). Samples of a capture are in the
/// order the allocations happened. (With [`DdmOptions::per_allocation`] off, one sample per
/// stack instead.)
pub fn alloc_records_profile(captures: &[AllocCapture], opts: &DdmOptions) -> Profile {
    let mut tables = Tables::default();
    let thread_key = tables.strings.intern(THREAD_LABEL);
    let alloc_key = if opts.allocation_label { tables.strings.intern(ALLOCATION_LABEL) } else { thread_key };
    let label_count = if opts.allocation_label { 2 } else { 1 };
    let mut special: HashMap<&'static str, FrameId> = HashMap::default();
    let mut special_frame = |tables: &mut Tables, label: &'static str| -> FrameId {
        *special.entry(label).or_insert_with(|| {
            let s = tables.strings.intern(label);
            tables.intern_frame(None, 0, s)
        })
    };
    let total: usize = captures.iter().map(|c| c.records.entries.len()).sum();
    // (stack, values, labels) per allocation.
    type Sample = (StackId, [i64; 2], [(StringId, i64); 2]);
    let mut samples: Vec<Sample> = Vec::with_capacity(total);
    let mut stack: Vec<FrameId> = Vec::with_capacity(260);
    for cap in captures {
        let r = &cap.records;
        let mut frames = FrameMaker::new(r, opts.lines);
        // Most allocations come from a few sites: the stack of each distinct (frames, class)
        // is built once.
        let mut stacks: HashMap<(&[StackFrame], u16), StackId> = HashMap::default();
        let limit = opts.max_depth.unwrap_or(usize::from(cap.max_depth()));
        // The kept entries (the most recent ones), walked in file order (memory order), their
        // samples then put in the order the allocations happened.
        let n = r.entries.len();
        let keep = opts.recent.map_or(n, |k| k.min(n));
        let (range, newest_first) = match cap.order {
            EntryOrder::NewestFirst => (0..keep, true),
            EntryOrder::OldestFirst => (n - keep..n, false),
        };
        let start = samples.len();
        for i in range {
            let e = &r.entries[i];
            let number = if newest_first { n - i } else { i + 1 } as u64;
            let labels = [(thread_key, i64::from(e.thread)), (alloc_key, i64::try_from(number).unwrap_or(i64::MAX))];
            let values = [1, i64::from(e.size)];
            let key = (r.entry_frames(e), e.class);
            if let Some(&sid) = stacks.get(&key) {
                samples.push((sid, values, labels));
                continue;
            }
            stack.clear();
            let depth = usize::from(e.depth);
            if opts.truncation_marks && depth > 0 && depth >= limit {
                stack.push(special_frame(&mut tables, TRUNCATED_FRAME));
            }
            for f in r.entry_frames(e).iter().rev() {
                stack.push(frames.method(&mut tables, f));
            }
            if opts.alloc_class_frame {
                stack.push(frames.class(&mut tables, e.class));
            }
            if stack.is_empty() {
                stack.push(special_frame(&mut tables, NO_STACK));
            }
            let sid = tables.intern_stack(&stack).expect("a stack with frames");
            stacks.insert(key, sid);
            samples.push((sid, values, labels));
        }
        if newest_first {
            samples[start..].reverse();
        }
    }
    let names: Vec<&str> = captures.iter().map(|c| c.source.as_str()).collect();
    let meta = ProfileMeta {
        source: names.join(", "),
        process_name: Some(match names.len() {
            0 => "no capture".to_owned(),
            1 => names[0].rsplit('/').next().unwrap_or(names[0]).to_owned(),
            n => format!("{} DDM captures", n),
        }),
        heap: HEAP_NAME.to_owned(),
        changed: true,
        ..Default::default()
    };
    let mut p = Profile::new(Arc::new(tables), meta, sample_types());
    p.header.default_sample_type = 1;
    if opts.per_allocation {
        for (stack, values, labels) in &samples {
            p.push_sample_with_labels(*stack, values, &labels[..label_count]);
        }
    } else {
        // Summed per stack, in the order each stack first allocated.
        let mut index: HashMap<StackId, usize> = HashMap::default();
        let mut sums: Vec<(StackId, [i64; 2])> = Vec::new();
        for (stack, values, _) in &samples {
            let i = *index.entry(*stack).or_insert_with(|| {
                sums.push((*stack, [0, 0]));
                sums.len() - 1
            });
            sums[i].1[0] += values[0];
            sums[i].1[1] += values[1];
        }
        for (stack, values) in &sums {
            p.push_sample(*stack, values);
        }
    }
    p
}

/// Makes the frames of one capture's records, each once.
struct FrameMaker<'a> {
    r: &'a AllocRecords,
    lines: bool,
    java: Vec<String>,
    methods: HashMap<u64, FrameId>,
    classes: Vec<Option<FrameId>>,
    functions: HashMap<u32, (StringId, StringId)>,
    files: Vec<Option<StringId>>,
    label: String,
}

impl<'a> FrameMaker<'a> {
    fn new(r: &'a AllocRecords, lines: bool) -> Self {
        FrameMaker {
            r,
            lines,
            java: r.class_names.iter().map(|d| java_name(d)).collect(),
            methods: HashMap::default(),
            classes: vec![None; r.class_names.len()],
            functions: HashMap::default(),
            files: vec![None; r.file_names.len()],
            label: String::new(),
        }
    }

    /// The frame of a method (with its line as [`Line`] when `lines`).
    fn method(&mut self, tables: &mut Tables, f: &StackFrame) -> FrameId {
        let key = f.packed();
        if let Some(&id) = self.methods.get(&key) {
            return id;
        }
        let (c, m, fi) = (usize::from(f.class), usize::from(f.method), usize::from(f.file));
        let (class, method, file) = (&self.java[c], &self.r.method_names[m], &self.r.file_names[fi]);
        self.label.clear();
        push_frame_label(&mut self.label, class, method, file, f.line);
        let label = tables.strings.intern(&self.label);
        let id = tables.intern_frame(None, 0, label);
        if self.lines && tables.frame(id).lines.is_empty() {
            let fkey = (u32::from(f.class) << 16) | u32::from(f.method);
            let (function, system_name) = match self.functions.get(&fkey) {
                Some(&v) => v,
                None => {
                    let v = (
                        tables.strings.intern(&format!("{class}.{method}")),
                        tables.strings.intern(&format!("{}.{method}", self.r.class_names[c])),
                    );
                    self.functions.insert(fkey, v);
                    v
                }
            };
            let file = *self.files[fi].get_or_insert_with(|| tables.strings.intern(file));
            let line = source_line(f.line).unwrap_or(0);
            tables.frames_mut()[id.0 as usize].lines.push(Line { function, system_name, file, line, column: 0 });
        }
        self.methods.insert(key, id);
        id
    }

    /// The leaf frame naming an allocated class.
    fn class(&mut self, tables: &mut Tables, class: u16) -> FrameId {
        let c = usize::from(class);
        if let Some(id) = self.classes[c] {
            return id;
        }
        let label = tables.strings.intern(&self.java[c]);
        let id = tables.intern_frame(None, 0, label);
        if self.lines && tables.frame(id).lines.is_empty() {
            let system_name = tables.strings.intern(&self.r.class_names[c]);
            tables.frames_mut()[id.0 as usize].lines.push(Line {
                function: label,
                system_name,
                file: StringId::EMPTY,
                line: 0,
                column: 0,
            });
        }
        self.classes[c] = Some(id);
        id
    }
}

/// Decodes captures and makes their merged profile: [`decode_alloc_records`] on each input,
/// then [`alloc_records_profile`].
pub fn decode_ddm(inputs: &[(&str, &[u8])], opts: &DdmOptions) -> Result<(Profile, Vec<AllocCapture>)> {
    let captures =
        inputs.iter().map(|(name, bytes)| decode_alloc_records(bytes, name, opts)).collect::<Result<Vec<_>>>()?;
    Ok((alloc_records_profile(&captures, opts), captures))
}
