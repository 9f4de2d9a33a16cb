//! The `top` report of a Java heap ([`HeapTop`], computed by `analysis::heap`) as text for
//! people and as JSON.

use std::fmt::Write as _;

use super::labels::human_bytes;
use crate::model::heap_report::HeapTop;

/// The `top` report for people: totals, a class table by retained size, and the largest
/// retainers with their paths from a GC root.
pub fn heap_top_text(top: &HeapTop) -> String {
    let mut s = String::new();
    let who = match (&top.process_name, top.pid) {
        (Some(n), Some(p)) => format!("{n} (pid {p})"),
        (None, Some(p)) => format!("pid {p}"),
        (Some(n), None) => n.clone(),
        (None, None) => "unknown process".to_owned(),
    };
    let _ = write!(s, "{who}, {}", top.source);
    match top.timestamp {
        Some(t) if top.timestamp_is_epoch_ms => {
            let _ = write!(s, ", dumped {}", super::summary::utc_text(u64::try_from(t).unwrap_or(0)));
        }
        Some(t) => {
            let _ = write!(s, ", dump at {t} ns");
        }
        None => {}
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
        human_bytes(top.shallow),
        human_bytes(top.reachable_shallow),
        human_bytes(top.native),
        human_bytes(top.reachable_native),
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
            human_bytes(c.retained),
            100.0 * all as f64 / whole,
            human_bytes(c.retained_native),
            human_bytes(c.shallow),
            human_bytes(c.native),
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
            human_bytes(r.retained),
            human_bytes(r.retained_native),
            human_bytes(r.shallow),
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
pub fn heap_top_json(top: &HeapTop) -> String {
    let mut s = serde_json::to_string_pretty(top).expect("the report serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::heap_report::{ClassStats, PathStep, Retainer, RootPath};

    fn top() -> HeapTop {
        let step = |object, class: &str, via: Option<&str>| PathStep {
            object,
            id: 0x100 * u64::from(object + 1),
            class: class.to_owned(),
            via: via.map(str::to_owned),
        };
        HeapTop {
            source: "test".to_owned(),
            pid: Some(7),
            process_name: Some("app".to_owned()),
            timestamp: Some(42),
            timestamp_is_epoch_ms: false,
            incomplete: vec![],
            objects: 8,
            reachable_objects: 7,
            roots: 2,
            shallow: 1350,
            native: 50,
            reachable_shallow: 350,
            reachable_native: 50,
            dangling_refs: 0,
            class_count: 2,
            classes: vec![ClassStats {
                class: 0,
                name: "Node".to_owned(),
                instances: 5,
                reachable_instances: 5,
                shallow: 50,
                native: 0,
                retained: 350,
                retained_native: 50,
            }],
            retainers: vec![Retainer {
                object: 2,
                id: 0x300,
                class: "Node".to_owned(),
                root_kind: None,
                shallow: 10,
                native: 0,
                retained: 2048,
                retained_native: 50,
                path: Some(RootPath {
                    root_kind: "ROOT_JAVA_FRAME".to_owned(),
                    length: 2,
                    elided: 0,
                    elided_after: 0,
                    steps: vec![step(6, "Node", Some(".next")), step(2, "Node", None)],
                }),
            }],
        }
    }

    #[test]
    fn text_has_totals_classes_and_paths() {
        let text = heap_top_text(&top());
        assert!(text.starts_with("app (pid 7), test, dump at 42 ns\n"), "{text}");
        assert!(
            text.contains("8 objects, 7 reachable from 2 roots, 1 unreachable; shallow 1.32 KiB (350 B reachable)"),
            "{text}"
        );
        assert!(text.contains("  1. 2.00 KiB retained (+50 B native), 10 B shallow: Node @0x300\n"), "{text}");
        assert!(text.contains("     [ROOT_JAVA_FRAME] Node.next -> Node\n"), "{text}");
    }

    #[test]
    fn json_has_the_report_fields() {
        let json: serde_json::Value = serde_json::from_str(&heap_top_json(&top())).unwrap();
        assert_eq!(json["classes"][0]["name"], "Node");
        assert_eq!(json["classes"][0]["retained"], 350);
        assert_eq!(json["retainers"][0]["path"]["steps"][0]["via"], ".next");
        assert_eq!(json["retainers"][0]["path"]["steps"][1]["via"], serde_json::Value::Null);
    }
}
