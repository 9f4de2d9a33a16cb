//! Golden outputs: folded stacks, the JSON summary, `inspect` text and a stable text dump of
//! the pprof for the sample trace and a few fixtures. `HEAPCONV_BLESS=1 cargo test` rewrites
//! them; a missing golden file fails the test.

mod common;

use std::fmt::Write;

use common::*;

fn check(name: &str, got: &str) {
    check_golden(name, got);
}

/// A stable text rendering of a pprof: ids replaced by what they point to.
fn pprof_text(p: &pp::Profile) -> String {
    let s = |i: i64| p.string_table[i as usize].as_str();
    let mut out = String::new();
    let types: Vec<String> = p.sample_type.iter().map(|t| format!("{}/{}", s(t.r#type), s(t.unit))).collect();
    writeln!(out, "sample_types: {}", types.join(", ")).unwrap();
    writeln!(out, "default_sample_type: {}", s(p.default_sample_type)).unwrap();
    if let Some(pt) = &p.period_type {
        writeln!(out, "period: {} {}/{}", p.period, s(pt.r#type), s(pt.unit)).unwrap();
    }
    for c in &p.comment {
        writeln!(out, "comment: {}", s(*c)).unwrap();
    }
    for m in &p.mapping {
        writeln!(
            out,
            "mapping {}: {:#x}-{:#x} off {:#x} {} [{}] fn={} file={} line={} inline={}",
            m.id,
            m.memory_start,
            m.memory_limit,
            m.file_offset,
            s(m.filename),
            s(m.build_id),
            m.has_functions,
            m.has_filenames,
            m.has_line_numbers,
            m.has_inline_frames
        )
        .unwrap();
    }
    for smp in &p.sample {
        let vals: Vec<String> = smp.value.iter().map(|v| v.to_string()).collect();
        writeln!(out, "sample {}", vals.join(" ")).unwrap();
        for lid in &smp.location_id {
            let loc = p.location.iter().find(|l| l.id == *lid).unwrap();
            for line in &loc.line {
                let f = p.function.iter().find(|f| f.id == line.function_id).unwrap();
                writeln!(
                    out,
                    "  {:#x} m{} {} | {} | {}:{}",
                    loc.address,
                    loc.mapping_id,
                    s(f.name),
                    s(f.system_name),
                    s(f.filename),
                    line.line
                )
                .unwrap();
            }
        }
    }
    out
}

fn stdout(args: &[&str]) -> String {
    String::from_utf8(heapconv_ok(args, 0).stdout).unwrap()
}

#[test]
fn sample_trace_outputs() {
    let input = root().join("examples/sample.pftrace");
    let i = input.to_str().unwrap();
    check("sample.inspect.txt", &stdout(&["inspect", i]).replace(i, "examples/sample.pftrace"));
    check("sample.folded", &stdout(&["convert", i, "--pid", "4242", "--to", "folded"]));
    check(
        "sample.total-count.folded",
        &stdout(&["convert", i, "--pid", "4242", "--to", "folded", "--view", "total-count"]),
    );
    check(
        "sample.json",
        &stdout(&["convert", i, "--pid", "4242", "--to", "json"]).replace(i, "examples/sample.pftrace"),
    );
    let dir = tempfile::tempdir().unwrap();
    heapconv_ok(&["profile", i, "-q", "-o", dir.path().to_str().unwrap()], 0);
    let p = read_pprof(&dir.path().join("heap_dump.5.4242.libc.malloc.pb.gz"));
    check("sample.heap_dump.5.4242.pprof.txt", &pprof_text(&p));
}

#[test]
fn fixture_outputs() {
    for (fixture, pid) in [("art_frames", "10"), ("names", "10"), ("data_loss", "12")] {
        let input = data(&format!("{fixture}.pftrace"));
        let i = input.to_str().unwrap();
        check(&format!("{fixture}.folded"), &stdout(&["convert", i, "--pid", pid, "--to", "folded"]));
        let dir = tempfile::tempdir().unwrap();
        heapconv_ok(
            &["convert", i, "--pid", pid, "--to", "pprof", "-o", dir.path().join("p.pb.gz").to_str().unwrap()],
            0,
        );
        let text =
            pprof_text(&read_pprof(&dir.path().join("p.pb.gz"))).replace(i, &format!("tests/data/{fixture}.pftrace"));
        check(&format!("{fixture}.pprof.txt"), &text);
    }
}
