//! The `top` report as text and JSON.

use std::fmt::Write as _;

use super::HeapTop;

fn fmt_bytes(v: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if v >= size {
            let x = v as f64 / size as f64;
            let digits = if x >= 100.0 {
                0
            } else if x >= 10.0 {
                1
            } else {
                2
            };
            return format!("{x:.digits$} {unit}");
        }
    }
    format!("{v} B")
}

/// The `top` report for people: totals, a class table by retained size, and the largest
/// retainers with their paths from a GC root.
pub fn top_text(top: &HeapTop) -> String {
    let mut s = String::new();
    let who = match (&top.process_name, top.pid) {
        (Some(n), Some(p)) => format!("{n} (pid {p})"),
        (None, Some(p)) => format!("pid {p}"),
        (Some(n), None) => n.clone(),
        (None, None) => "unknown process".to_owned(),
    };
    let _ = write!(s, "{who}, {}", top.source);
    if let Some(t) = top.timestamp {
        let _ = write!(s, ", dump at {t}");
    }
    s.push('\n');
    for why in &top.incomplete {
        let _ = writeln!(s, "INCOMPLETE: {why}");
    }
    let _ = writeln!(
        s,
        "{} objects, {} reachable from {} roots, {} unreachable; shallow {} ({} reachable), native {} ({} reachable){}",
        top.objects,
        top.reachable_objects,
        top.roots,
        top.objects - top.reachable_objects,
        fmt_bytes(top.shallow),
        fmt_bytes(top.reachable_shallow),
        fmt_bytes(top.native),
        fmt_bytes(top.reachable_native),
        if top.dangling_refs > 0 { format!("; {} dangling references", top.dangling_refs) } else { String::new() },
    );
    let whole = top.reachable_shallow.saturating_add(top.reachable_native).max(1) as f64;
    let _ = writeln!(s, "\nClasses by retained size ({} of {}):", top.classes.len(), top.class_count);
    let _ = writeln!(
        s,
        "{:>12} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10}  class",
        "retained", "%", "ret.native", "shallow", "native", "instances", "reachable"
    );
    for c in &top.classes {
        let all = c.retained.saturating_add(c.retained_native);
        let _ = writeln!(
            s,
            "{:>12} {:>6.2}% {:>12} {:>12} {:>12} {:>10} {:>10}  {}",
            fmt_bytes(c.retained),
            100.0 * all as f64 / whole,
            fmt_bytes(c.retained_native),
            fmt_bytes(c.shallow),
            fmt_bytes(c.native),
            c.instances,
            c.reachable_instances,
            c.name
        );
    }
    let _ = writeln!(s, "\nLargest retainers, with the shortest path from a GC root:");
    for (i, r) in top.retainers.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:>3}. {} retained (+{} native), {} shallow: {} @{:#x}",
            i + 1,
            fmt_bytes(r.retained),
            fmt_bytes(r.retained_native),
            fmt_bytes(r.shallow),
            r.class,
            r.id
        );
        if let Some(p) = &r.path {
            let _ = writeln!(s, "     {}", p.text());
        }
    }
    s
}

/// The `top` report as pretty JSON (the fields of [`HeapTop`]), newline-terminated.
pub fn top_json(top: &HeapTop) -> String {
    let mut s = serde_json::to_string_pretty(top).expect("the report serializes");
    s.push('\n');
    s
}
