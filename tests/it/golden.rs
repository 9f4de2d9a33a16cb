//! Golden outputs: folded stacks, the JSON summary, `inspect` text and a stable text dump of
//! the pprof for the sample trace and a few fixtures. `HEAPCONV_BLESS=1 cargo test` rewrites
//! them; a missing golden file fails the test.

use crate::common::*;

fn check(name: &str, got: &str) {
    check_golden(name, got);
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
