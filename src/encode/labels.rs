//! Frame labels for the text outputs (folded stacks, flame graphs, summaries), shared by the
//! encoders so that they all name a frame the same way:
//!
//! * a symbolized frame expands to one label per inlined function (outermost first when going
//!   root to leaf);
//! * a named frame is its demangled name;
//! * an unnamed native frame is `<mapping basename>+0x<rel_pc>` (`libfoo.so+0x1f2c`); when
//!   `rel_pc` is an absolute address inside its mapping (pprof locations), the number is the
//!   file offset instead, `address - start + offset` (`libc-2.31.so+0x23d0a`), as go's pprof
//!   tools name it;
//! * an unnamed frame with no mapping is `[unknown]+0x<rel_pc>`;
//! * [`go_function_label`]: `go tool pprof -top`'s name of an unnamed frame, `[<basename>]`
//!   (all of a mapping's unsymbolized addresses are one function), or `<unknown>`;
//! * with annotations on, ` [jit]`, ` [aot]`… follows named frames as in pprof.

use crate::model::annotate::{Annotation, AnnotationState, annotate_node};
use crate::model::mapping::basename;
use crate::model::{FrameId, Profile, StackId, Tables};

/// Labels of the frame at `node`, appended root-to-leaf to `out`.
pub fn frame_labels(tables: &Tables, node: StackId, annotation: Annotation, out: &mut Vec<String>) {
    frame_id_labels(tables, tables.stack_node(node).frame, annotation, out);
}

/// Labels of frame `frame` (as [`frame_labels`] names the frame of a stack node), appended
/// root-to-leaf to `out`: for stacks kept as frame lists rather than tree nodes.
pub fn frame_id_labels(tables: &Tables, frame: FrameId, annotation: Annotation, out: &mut Vec<String>) {
    let frame = tables.frame(frame);
    let suffix = match annotation {
        Annotation::None => String::new(),
        a => format!(" [{}]", a.label()),
    };
    if !frame.lines.is_empty() {
        for l in frame.lines.iter().rev() {
            out.push(format!("{}{suffix}", tables.strings.get(l.function)));
        }
        return;
    }
    let name = tables.strings.get(frame.name);
    if !name.is_empty() {
        out.push(format!("{name}{suffix}"));
        return;
    }
    let base = frame.mapping.map(|m| basename(tables.strings.get(tables.mapping(m).path))).unwrap_or("");
    let base = if base.is_empty() { "[unknown]" } else { base };
    let pc = match frame.mapping.map(|m| tables.mapping(m)) {
        // An absolute address (pprof): the file offset is what symbolizers and go print.
        Some(m) if m.start != 0 && frame.rel_pc >= m.start && frame.rel_pc < m.end => {
            frame.rel_pc - m.start + m.exact_offset
        }
        _ => frame.rel_pc,
    };
    out.push(format!("{base}+{pc:#x}"));
}

/// The name the pprof decoder gives the one frame of a sample without locations
/// (`decode::pprof::NO_STACK`).
const PPROF_NO_STACK: &str = "[no stack]";

/// The label of the frame at `node` as `go tool pprof -top` (function granularity) names it:
/// [`frame_labels`] for a frame with a name or lines; else `[<mapping basename>]`, one row for
/// all of a mapping's unsymbolized addresses (a mapping named `[vdso]` gives `[[vdso]]`, as go
/// prints it); else `<unknown>`. Nothing for the lone frame the pprof decoder gives a sample
/// without locations (`[no stack]`, without mapping, address or lines): go shows no row for
/// such samples (its total counts them).
pub fn go_function_label(tables: &Tables, node: StackId, out: &mut Vec<String>) {
    let frame = tables.frame(tables.stack_node(node).frame);
    if frame.mapping.is_none()
        && frame.lines.is_empty()
        && frame.rel_pc == 0
        && tables.stack_node(node).parent.is_none()
        && tables.strings.get(frame.name) == PPROF_NO_STACK
    {
        return;
    }
    if !frame.lines.is_empty() || !tables.strings.get(frame.name).is_empty() {
        frame_labels(tables, node, Annotation::None, out);
        return;
    }
    let base = frame.mapping.map(|m| basename(tables.strings.get(tables.mapping(m).path))).unwrap_or("");
    out.push(if base.is_empty() { "<unknown>".to_owned() } else { format!("[{base}]") });
}

/// Labels of a whole stack, root first, with annotations when `annotations` is true.
pub fn stack_labels(tables: &Tables, stack: StackId, annotations: bool, nodes: &mut Vec<StackId>) -> Vec<String> {
    tables.stack_nodes_root_first(stack, nodes);
    let mut out = Vec::with_capacity(nodes.len());
    let mut state = AnnotationState::Initial;
    for &n in nodes.iter() {
        let (next, a) = annotate_node(tables, state, n);
        state = next;
        frame_labels(tables, n, if annotations { a } else { Annotation::None }, &mut out);
    }
    out
}

/// One entry per sample: its labels root first and its value at `index`, skipping zeros.
pub fn labelled_samples(profile: &Profile, index: usize, annotations: bool) -> Vec<(Vec<String>, i64)> {
    let mut nodes = Vec::new();
    profile
        .samples()
        .filter(|(_, v)| v[index] != 0)
        .map(|(s, v)| (stack_labels(&profile.tables, s, annotations, &mut nodes), v[index]))
        .collect()
}

/// Formats a byte count for people: `512 B`, `1.5 KiB`, `12.0 MiB`, `3.25 GiB`.
pub fn human_bytes(v: impl Into<i128>) -> String {
    let v: i128 = v.into();
    let neg = v < 0;
    let a = v.unsigned_abs() as f64;
    let (n, unit) = if a >= (1u64 << 30) as f64 {
        (a / (1u64 << 30) as f64, "GiB")
    } else if a >= (1u64 << 20) as f64 {
        (a / (1u64 << 20) as f64, "MiB")
    } else if a >= 1024.0 {
        (a / 1024.0, "KiB")
    } else {
        return format!("{v} B");
    };
    let digits = if n >= 100.0 {
        0
    } else if n >= 10.0 {
        1
    } else {
        2
    };
    format!("{}{n:.digits$} {unit}", if neg { "-" } else { "" })
}

/// True for the units [`human_value`] scales (bytes and times), false for counts and others.
pub fn is_scaled_unit(unit: &str) -> bool {
    human_value(1, unit) != format!("1 {unit}") && !unit.is_empty()
}

/// Formats a value in its pprof unit for people: bytes as [`human_bytes`] does; time units
/// (`nanoseconds`, `microseconds`, `milliseconds`, `seconds`, and their short forms) as
/// `9.09 s`, `480 ms`, `12.5 µs` or `800 ns`; anything else as the number and its unit.
pub fn human_value(v: i64, unit: &str) -> String {
    let ns_per = match unit {
        "bytes" | "byte" | "B" => return human_bytes(v),
        "nanoseconds" | "nanosecond" | "ns" => 1.0,
        "microseconds" | "microsecond" | "us" => 1e3,
        "milliseconds" | "millisecond" | "ms" => 1e6,
        "seconds" | "second" | "s" => 1e9,
        "" => return v.to_string(),
        _ => return format!("{v} {unit}"),
    };
    let ns = v.unsigned_abs() as f64 * ns_per;
    let (n, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    let digits = if unit == "ns" || n >= 100.0 {
        0
    } else if n >= 10.0 {
        1
    } else {
        2
    };
    format!("{}{n:.digits$} {unit}", if v < 0 { "-" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::{human_bytes, human_value};

    #[test]
    fn human_values_in_their_units() {
        assert_eq!(human_value(9_093_000_000, "nanoseconds"), "9.09 s");
        assert_eq!(human_value(480_000_000, "nanoseconds"), "480 ms");
        assert_eq!(human_value(-12_500, "nanoseconds"), "-12.5 µs");
        assert_eq!(human_value(800, "nanoseconds"), "800 ns");
        assert_eq!(human_value(3, "seconds"), "3.00 s");
        assert_eq!(human_value(1536, "bytes"), "1.50 KiB");
        assert_eq!(human_value(42, "count"), "42 count");
        assert_eq!(human_value(42, ""), "42");
    }

    #[test]
    fn human_bytes_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.50 KiB");
        assert_eq!(human_bytes(12 << 20), "12.0 MiB");
        assert_eq!(human_bytes(300 << 20), "300 MiB");
        assert_eq!(human_bytes(-2048), "-2.00 KiB");
        assert_eq!(human_bytes(3i64 << 30), "3.00 GiB");
        assert_eq!(human_bytes(u64::MAX), "17179869184 GiB");
        assert_eq!(human_bytes(i64::MIN), "-8589934592 GiB");
    }
}
