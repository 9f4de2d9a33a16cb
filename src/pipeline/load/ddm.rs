//! DDM allocation records: the choices that make them a profile ([`DdmChoices`]) and their
//! deobfuscation ([`deobfuscate_capture`]).

use crate::decode::ddm_alloc_records::{AllocRecords, DdmOptions};
use crate::symbolize::proguard::Deobfuscator;

/// Deobfuscates a DDM capture with the map given without a package (or the only map): the
/// allocated classes and every frame's class, method, file and line; a frame that stands for
/// an inline chain becomes the chain's frames, innermost first (a stack is cut at 255 frames,
/// the format's limit); an R8 outline frame is dropped and its caller's line moved to the
/// outline's call site. Names past the format's 65,535 strings per table stay as they were.
pub(crate) fn deobfuscate_capture(deob: Option<&Deobfuscator>, r: &mut AllocRecords) {
    use crate::decode::ddm_alloc_records::{StackFrame, java_name};
    let Some(d) = deob else { return };
    let mut s = d.session();
    let Some(mi) = s.for_package(None, "DDM allocated classes and frames") else { return };
    let rt = s.retracer(mi);
    fn descriptor(java: &str) -> String {
        let base = java.trim_end_matches("[]");
        let dims = (java.len() - base.len()) / 2;
        format!("{}L{};", "[".repeat(dims), base.replace('.', "/"))
    }
    fn intern(table: &mut Vec<String>, index: &mut HashMap<String, u16>, name: String) -> Option<u16> {
        if let Some(&i) = index.get(&name) {
            return Some(i);
        }
        let i = u16::try_from(table.len()).ok()?;
        table.push(name.clone());
        index.insert(name, i);
        Some(i)
    }
    use std::collections::HashMap;
    let old_classes: Vec<String> = r.class_names.iter().map(|c| java_name(c)).collect();
    let mut class_ix: HashMap<String, u16> = HashMap::new();
    let mut method_ix: HashMap<String, u16> = HashMap::new();
    let mut file_ix: HashMap<String, u16> = HashMap::new();
    let mut left = Vec::new();
    for (i, java) in old_classes.iter().enumerate() {
        match rt.class_name(java) {
            Some(n) => r.class_names[i] = descriptor(&n),
            None => left.push(java.clone()),
        }
    }
    let mut memo: HashMap<StackFrame, Vec<StackFrame>> = HashMap::new();
    let mut outlines: HashMap<(u16, u16), bool> = HashMap::new();
    let mut frames: Vec<StackFrame> = Vec::with_capacity(r.frames.len());
    for e in &mut r.entries {
        let start = e.first_frame as usize;
        let end = (start + usize::from(e.depth)).min(r.frames.len());
        let first = frames.len();
        // An R8 outline frame is dropped; its line is the position that moves its caller's.
        let mut carried: Option<u32> = None;
        for f in &r.frames[start..end] {
            let (class, method) = (&old_classes[usize::from(f.class)], &r.method_names[usize::from(f.method)]);
            if *outlines.entry((f.class, f.method)).or_insert_with(|| rt.is_outline(class, method)) {
                carried = Some(f.line.max(0) as u32);
                continue;
            }
            let mut at = *f;
            if let Some(pos) = carried.take() {
                if let Some(l) = rt.outline_callsite(class, method, f.line.max(0) as u32, pos) {
                    at.line = i16::try_from(l).unwrap_or(f.line);
                }
            }
            let f = &at;
            let expanded = memo.entry(*f).or_insert_with(|| {
                let class = &old_classes[usize::from(f.class)];
                let method = &r.method_names[usize::from(f.method)];
                let line = (f.line > 0).then_some(f.line as u32);
                let Some(t) = rt.frame(class, method, line) else { return vec![*f] };
                let mut out = Vec::new();
                for o in t.frames.iter().take(if t.ambiguous { 1 } else { usize::MAX }) {
                    let c = intern(&mut r.class_names, &mut class_ix, descriptor(&o.class));
                    let m = if t.ambiguous {
                        let all: Vec<&str> = t.frames.iter().map(|o| &*o.method).collect();
                        intern(&mut r.method_names, &mut method_ix, all.join(" | "))
                    } else {
                        intern(&mut r.method_names, &mut method_ix, o.method.to_string())
                    };
                    let fi = match &o.file {
                        Some(file) => intern(&mut r.file_names, &mut file_ix, file.to_string()),
                        None => Some(f.file),
                    };
                    let (Some(c), Some(m), Some(fi)) = (c, m, fi) else { return vec![*f] };
                    let l = if o.line > 0 {
                        o.line as u16 as i16
                    } else if f.line < 0 {
                        f.line
                    } else {
                        -1
                    };
                    out.push(StackFrame { class: c, method: m, file: fi, line: l });
                }
                out
            });
            frames.extend_from_slice(expanded);
        }
        let depth = (frames.len() - first).min(255);
        frames.truncate(first + depth);
        e.first_frame = first as u32;
        e.depth = depth as u8;
    }
    r.frames = frames;
    for n in left {
        s.left_obfuscated(&n);
    }
}

/// Which way the entries of a DDM capture run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EntryOrder {
    /// Guessed from the capture.
    #[default]
    Auto,
    /// The first entry is the most recent allocation.
    NewestFirst,
    /// The first entry is the oldest allocation.
    OldestFirst,
}

/// How DDM allocation records become a profile: the choices a user makes, mapped onto the
/// decoder's options by [`DdmChoices::options`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DdmChoices {
    /// Which way the entries run.
    pub order: EntryOrder,
    /// Keep only the N most recent allocations of each capture.
    pub recent: Option<usize>,
    /// The VM's stack depth limit (default: the deepest stack of each capture).
    pub max_depth: Option<usize>,
    /// Leave out the `[truncated]` root frames.
    pub no_truncation_marks: bool,
    /// Leave out the leaf frame naming the allocated class.
    pub no_alloc_class_frame: bool,
    /// Label each sample with its allocation number (`allocation`).
    pub allocation_label: bool,
}

impl DdmChoices {
    /// The decoder's options.
    pub fn options(&self) -> DdmOptions {
        use crate::decode::ddm_alloc_records::OrderChoice;
        DdmOptions {
            order: match self.order {
                EntryOrder::Auto => OrderChoice::Auto,
                EntryOrder::NewestFirst => OrderChoice::NewestFirst,
                EntryOrder::OldestFirst => OrderChoice::OldestFirst,
            },
            recent: self.recent,
            max_depth: self.max_depth,
            truncation_marks: !self.no_truncation_marks,
            alloc_class_frame: !self.no_alloc_class_frame,
            allocation_label: self.allocation_label,
            ..DdmOptions::default()
        }
    }
}
