//! Views across continuous dumps (`convert --view peak|delta|leaks`) and `heapconv timeline`,
//! on `tests/data/views/views.pftrace`, whose values are known by construction
//! (`tests/data/views/make_views.py`; encoded by the independent encoder in
//! `../shared/tools/`). Unreleased malloc size of pid 10 (com.example.leaky), per dump:
//!
//! | dump | Leaky::grow | Cache::fill | Burst::spike | Temp::churn | total   |
//! |------|-------------|-------------|--------------|-------------|---------|
//! | 1    | 4096        | 65536       | 262144       | 0           | 331776  |
//! | 2    | 8192        | 131072      | 1048576      | 0           | 1187840 |
//! | 3    | 12288       | 131072      | 2097152      | 0           | 2240512 |
//! | 4    | 16384       | 196608      | 0            | 0           | 212992  |
//! | 5    | 20480       | 262144      | 0            | 0           | 282624  |
//!
//! Temp::churn allocates 163840 bytes per interval and frees them all. pid 10's ART heap
//! allocates 5120 bytes per dump (no frees). pid 20 (com.example.steady): unreleased 40960,
//! 40960 (dump 2 identical to dump 1), 8192 (Steady::work freed its 32768). Trace clock =
//! raw + 250 ms: pid 10 dumps at 1.25 s .. 5.25 s, pid 20 at 1.75, 2.75, 3.75 s.
//!
//! pprof outputs are read back with `go tool pprof -raw`, SVGs parsed as XML.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;

const TRACE: &str = "tests/data/views/views.pftrace";

/// Runs heapconv from the repository root (so input names in outputs are relative).
fn run_ok(args: &[&str], code: i32) -> Output {
    heapconv_in(&root(), args, code)
}

/// Per leaf function (the frame under `malloc`, or the leaf), the values of a pprof file as
/// `go tool pprof -raw` reads them; `None` when go is missing (and oracles are not required).
fn raw_by_function(path: &Path) -> Option<(String, BTreeMap<String, Vec<i64>>)> {
    if !have_go() {
        return None;
    }
    let (types, samples) = parse_raw(&pprof_raw(path));
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (values, frames) in samples {
        let leaf = frames.iter().map(|f| f.0.as_str()).find(|n| *n != "malloc").unwrap_or("").to_owned();
        let e = out.entry(leaf).or_insert_with(|| vec![0; values.len()]);
        for (a, v) in e.iter_mut().zip(values) {
            *a += v;
        }
    }
    Some((types, out))
}

/// The comments of a pprof file.
fn comments(path: &Path) -> Vec<String> {
    let p = read_pprof(path);
    p.comment.iter().map(|&i| p.string_table[i as usize].clone()).collect()
}

fn default_type(path: &Path) -> String {
    let p = read_pprof(path);
    p.string_table[p.default_sample_type as usize].clone()
}

/// Column 3 (unreleased size) of libc.malloc profiles.
const US: usize = 3;

#[test]
fn timeline_csv_and_json_match_golden_files() {
    let csv = run_ok(&["timeline", TRACE], 0);
    let text = String::from_utf8(csv.stdout).unwrap();
    check_golden("timeline.views.csv", &text);
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][0], "pid");
    assert_eq!(rows.len(), 1 + 13, "a header and one row per dump");
    // pid 10 libc.malloc, dump 3: the peak.
    let peak = rows.iter().find(|r| r[0] == "10" && r[2] == "libc.malloc" && r[3] == "3").unwrap();
    assert_eq!(&peak[4..12], ["3250000000", "3000000000", "true", "2.000000000", "2240512", "13", "2732032", "43"]);
    // pid 20 dump 2 is identical to dump 1: present, changed = false.
    let same = rows.iter().find(|r| r[0] == "20" && r[3] == "2").unwrap();
    assert_eq!((same[8], same[12]), ("40960", "false"));

    let json = run_ok(&["timeline", TRACE, "--to", "json"], 0);
    let text = String::from_utf8(json.stdout).unwrap();
    check_golden("timeline.views.json", &text);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["format"], "heapconv-timeline");
    assert_eq!(v["version"], 1);
    assert_eq!(v["first_timestamp"], 1_250_000_000i64);
    let series = v["series"].as_array().unwrap();
    let shape: Vec<(u64, &str, usize)> = series
        .iter()
        .map(|s| (s["pid"].as_u64().unwrap(), s["heap"].as_str().unwrap(), s["points"].as_array().unwrap().len()))
        .collect();
    assert_eq!(shape, [(10, "com.android.art", 5), (10, "libc.malloc", 5), (20, "libc.malloc", 3)]);
    let malloc: Vec<i64> =
        series[1]["points"].as_array().unwrap().iter().map(|p| p["unreleased_size"].as_i64().unwrap()).collect();
    assert_eq!(malloc, [331776, 1187840, 2240512, 212992, 282624]);
    assert_eq!(series[2]["points"][0]["seconds"], 0.5);

    // Filters, and a file output.
    let dir = tmp();
    let out = dir.path().join("t.csv");
    run_ok(&["timeline", TRACE, "--pid", "20", "-o", s(&out)], 0);
    let filtered = std::fs::read_to_string(&out).unwrap();
    assert_eq!(filtered.lines().count(), 4);
    assert!(filtered.lines().skip(1).all(|l| l.starts_with("20,com.example.steady,libc.malloc,")));
    let art = run_ok(&["timeline", TRACE, "--heap", "com.android.art"], 0);
    assert_eq!(String::from_utf8(art.stdout).unwrap().lines().count(), 6);
    let none = run_ok(&["timeline", TRACE, "--pid", "99"], 1);
    assert!(stderr_of(&none).contains("no dump matches"), "{}", stderr_of(&none));
}

/// A parsed XML element.
#[derive(Debug, Default)]
struct Element {
    name: String,
    attrs: BTreeMap<String, String>,
    text: String,
    children: Vec<Element>,
}

impl Element {
    fn all<'a>(&'a self, name: &str, out: &mut Vec<&'a Element>) {
        if self.name == name {
            out.push(self);
        }
        for c in &self.children {
            c.all(name, out);
        }
    }

    fn find_all(&self, name: &str) -> Vec<&Element> {
        let mut v = Vec::new();
        self.all(name, &mut v);
        v
    }

    fn class(&self, class: &str) -> Vec<&Element> {
        let mut v = Vec::new();
        fn walk<'a>(e: &'a Element, class: &str, out: &mut Vec<&'a Element>) {
            if e.attrs.get("class").is_some_and(|c| c == class) {
                out.push(e);
            }
            for c in &e.children {
                walk(c, class, out);
            }
        }
        walk(self, class, &mut v);
        v
    }
}

/// Parses an SVG document with quick-xml into elements (fails on malformed XML).
fn parse_svg(bytes: &[u8]) -> Element {
    use quick_xml::events::Event;
    let text = std::str::from_utf8(bytes).expect("utf-8");
    let mut reader = quick_xml::Reader::from_str(text);
    let mut stack: Vec<Element> = vec![Element::default()];
    let element = |e: &quick_xml::events::BytesStart| {
        let mut el = Element { name: String::from_utf8(e.name().as_ref().to_vec()).unwrap(), ..Default::default() };
        for a in e.attributes() {
            let a = a.expect("well-formed attribute");
            el.attrs.insert(
                String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                a.normalized_value(quick_xml::XmlVersion::Explicit1_0).expect("attribute value").into_owned(),
            );
        }
        el
    };
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) => stack.push(element(&e)),
            Event::Empty(e) => {
                let el = element(&e);
                stack.last_mut().unwrap().children.push(el);
            }
            Event::End(_) => {
                let el = stack.pop().unwrap();
                stack.last_mut().expect("balanced tags").children.push(el);
            }
            Event::Text(t) => stack.last_mut().unwrap().text.push_str(&t.decode().unwrap()),
            Event::GeneralRef(r) => {
                let name = r.decode().unwrap();
                let c = match name.as_ref() {
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "quot" => "\"",
                    "apos" => "'",
                    other => panic!("unexpected entity &{other};"),
                };
                stack.last_mut().unwrap().text.push_str(c);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(stack.len(), 1, "every element closed");
    let mut doc = stack.pop().unwrap();
    assert_eq!(doc.children.len(), 1, "one root element");
    doc.children.pop().unwrap()
}

#[test]
fn timeline_svg_is_a_line_chart() {
    let out = run_ok(&["timeline", TRACE, "--to", "svg"], 0);
    let again = run_ok(&["timeline", TRACE, "--to", "svg"], 0);
    assert_eq!(out.stdout, again.stdout, "deterministic bytes");
    let svg = parse_svg(&out.stdout);
    assert_eq!(svg.name, "svg");
    assert_eq!(svg.attrs["xmlns"], "http://www.w3.org/2000/svg");
    let title = &svg.class("title")[0].text;
    assert_eq!(title, "tests/data/views/views.pftrace: unreleased size per process and heap");

    // One polyline per (pid, heap), one point (and marker) per dump, in time order.
    let series = svg.class("series");
    let keys: Vec<(&str, &str)> =
        series.iter().map(|g| (g.attrs["data-pid"].as_str(), g.attrs["data-heap"].as_str())).collect();
    assert_eq!(keys, [("10", "com.android.art"), ("10", "libc.malloc"), ("20", "libc.malloc")]);
    assert_eq!(svg.find_all("polyline").len(), 3);
    assert_eq!(svg.find_all("circle").len(), 13);
    let points = |g: &Element| -> Vec<(f64, f64)> {
        g.find_all("polyline")[0].attrs["points"]
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    };
    let malloc = points(series[1]);
    assert_eq!(malloc.len(), 5);
    assert!(malloc.windows(2).all(|w| w[1].0 > w[0].0), "x grows with time");
    // SVG y grows downwards: dump 3 (the peak) is the highest point.
    let top = malloc.iter().enumerate().min_by(|a, b| a.1.1.total_cmp(&b.1.1)).unwrap().0;
    assert_eq!(top, 2);
    assert_eq!(points(series[2]).len(), 3);
    // Tooltips give exact values.
    let tips: Vec<&str> = series[1].find_all("title").iter().map(|t| t.text.as_str()).collect();
    assert!(tips[2].contains("dump 3 at 3250000000 ns") && tips[2].contains("2240512 bytes"), "{}", tips[2]);

    // Axes with units, a legend naming every series.
    let y_ticks: Vec<&str> = svg.class("y-axis")[0].class("tick").iter().map(|t| t.text.as_str()).collect();
    assert_eq!(y_ticks, ["0.0 MiB", "0.5 MiB", "1.0 MiB", "1.5 MiB", "2.0 MiB", "2.5 MiB"]);
    let x_ticks: Vec<&str> = svg.class("x-axis")[0].class("tick").iter().map(|t| t.text.as_str()).collect();
    assert_eq!(x_ticks, ["0", "1", "2", "3", "4"]);
    let axis_titles: Vec<&str> = svg.class("axis-title").iter().map(|t| t.text.as_str()).collect();
    assert_eq!(axis_titles, ["unreleased size (MiB)", "time since the first dump (seconds)"]);
    let legend: Vec<&str> = svg.class("legend-label").iter().map(|t| t.text.as_str()).collect();
    assert_eq!(
        legend,
        [
            "com.example.leaky (pid 10), com.android.art — last 25.0 KiB",
            "com.example.leaky (pid 10), libc.malloc — last 276 KiB",
            "com.example.steady (pid 20), libc.malloc — last 8.00 KiB"
        ]
    );

    // Another value, another title.
    let counts = run_ok(&["timeline", TRACE, "--to", "svg", "--value", "total-count", "--title", "A & B"], 0);
    let svg = parse_svg(&counts.stdout);
    assert_eq!(svg.class("title")[0].text, "A & B");
    let y_ticks: Vec<&str> = svg.class("y-axis")[0].class("tick").iter().map(|t| t.text.as_str()).collect();
    assert_eq!(y_ticks, ["0", "20", "40", "60", "80"], "total count of pid 10 reaches 67");
}

#[test]
fn timeline_refuses_other_inputs_and_reports_damage() {
    let dir = tmp();
    let pb = dir.path().join("x.pb.gz");
    run_ok(&["convert", TRACE, "--pid", "20", "-o", s(&pb)], 0);
    let o = run_ok(&["timeline", s(&pb)], 1);
    assert!(stderr_of(&o).contains("is a pprof profile"), "{}", stderr_of(&o));
    // A trace cut inside its last dump chain: the complete dumps, exit code 3.
    let o = run_ok(&["timeline", "tests/data/continuous_recycle.trunc-midchain.pftrace"], 3);
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1 + 4, "dumps 1-4 of 5: {text}");
}

#[test]
fn peak_names_its_dump() {
    let dir = tmp();
    let out = run_ok(&["convert", TRACE, "--view", "peak", "-o", &format!("{}/", s(dir.path()))], 0);
    assert_eq!(
        file_names(dir.path()),
        ["heap_peak.10.com.android.art.pb.gz", "heap_peak.10.libc.malloc.pb.gz", "heap_peak.20.libc.malloc.pb.gz"]
    );
    let err = stderr_of(&out);
    assert!(err.contains("peak: com.example.leaky (pid 10), heap libc.malloc: dump 3 of 5 at 3250000000 ns"), "{err}");
    let malloc = dir.path().join("heap_peak.10.libc.malloc.pb.gz");
    let c = comments(&malloc);
    assert!(c[0].contains("dump 3 at 3250000000 ns"), "{c:?}");
    assert!(
        c.iter().any(|c| c == "view peak: dump 3 of 5 at 3250000000 ns has the highest Unreleased malloc size: 2.14 MiB (2240512 bytes); last dump 5 at 5250000000 ns: 276 KiB (282624 bytes)"),
        "{c:?}"
    );
    assert_eq!(default_type(&malloc), "Unreleased malloc size");
    // Ties go to the earliest dump (pid 20's dumps 1 and 2 are identical).
    let c = comments(&dir.path().join("heap_peak.20.libc.malloc.pb.gz"));
    assert!(c.iter().any(|c| c.starts_with("view peak: dump 1 of 3 at 1750000000 ns")), "{c:?}");
    // The ART heap has no unreleased values: its totals are used (the last dump).
    let c = comments(&dir.path().join("heap_peak.10.com.android.art.pb.gz"));
    assert!(c.iter().any(|c| c.starts_with("view peak: dump 5 of 5") && c.contains("reports no frees")), "{c:?}");

    if let Some((types, by_fn)) = raw_by_function(&malloc) {
        assert!(types.starts_with("Total malloc count/count"), "{types}");
        assert_eq!(by_fn["Burst::spike()"], [8, 2097152, 8, 2097152]);
        assert_eq!(by_fn["Leaky::grow()"], [3, 12288, 3, 12288]);
        assert_eq!(by_fn.values().map(|v| v[US]).sum::<i64>(), 2240512);
        assert_eq!(by_fn.values().map(|v| v[1]).sum::<i64>(), 2732032);
    }

    // By total count, the peak is the last dump (totals only grow).
    let total = dir.path().join("total.pb.gz");
    let o = run_ok(
        &[
            "convert",
            TRACE,
            "--view",
            "peak",
            "--value",
            "total-count",
            "--pid",
            "10",
            "--heap",
            "libc.malloc",
            "-o",
            s(&total),
        ],
        0,
    );
    assert!(stderr_of(&o).contains("dump 5 of 5"), "{}", stderr_of(&o));
    assert_eq!(default_type(&total), "Total malloc count");

    // The flame graph's title names the dump; JSON carries the attribution.
    let svg = run_ok(&["convert", TRACE, "--view", "peak", "--pid", "10", "--heap", "libc.malloc", "--to", "svg"], 0);
    let doc = parse_svg(&svg.stdout);
    let titles: Vec<&str> = doc.find_all("text").iter().map(|t| t.text.as_str()).collect();
    assert!(
        titles.contains(
            &"Peak Unreleased malloc size: com.example.leaky (pid 10), heap libc.malloc, dump 3 of 5 at 3250000000 ns"
        ),
        "{titles:?}"
    );
    let json = run_ok(&["convert", TRACE, "--view", "peak", "--to", "json"], 0);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["view"]["kind"], "peak");
    assert_eq!(v["view"]["value"], "unreleased-size");
    let series = v["view"]["series"].as_array().unwrap();
    assert_eq!(series.len(), 3);
    assert_eq!(series[1]["heap"], "libc.malloc");
    assert_eq!(series[1]["peak"]["dump"], 3);
    assert_eq!(series[1]["peak"]["timestamp"], 3_250_000_000i64);
    assert_eq!(series[1]["peak"]["total"], 2240512);
    assert_eq!(series[1]["last"]["total"], 282624);
    assert_eq!(series[0]["fallback_to_total"], true);
    assert_eq!(v["profiles"][1]["dump_index"], 2);
    assert_eq!(v["profiles"][1]["totals"]["unreleased_size"], 2240512);
}

#[test]
fn delta_between_consecutive_dumps() {
    let dir = tmp();
    let out = run_ok(&["convert", TRACE, "--view", "delta", "-o", &format!("{}/", s(dir.path()))], 0);
    let mut want: Vec<String> = Vec::new();
    for heap in ["com.android.art", "libc.malloc"] {
        for (a, b) in [(1, 2), (2, 3), (3, 4), (4, 5)] {
            want.push(format!("heap_delta.10.{heap}.{a}-{b}.pb.gz"));
        }
    }
    // pid 20: nothing changed from dump 1 to 2, so only 2-3 has an output.
    want.push("heap_delta.20.libc.malloc.2-3.pb.gz".to_owned());
    assert_eq!(file_names(dir.path()), want);
    let err = stderr_of(&out);
    assert!(err.contains("com.example.steady (pid 20), heap libc.malloc: dump 1 at 1750000000 ns -> dump 2 at 2750000000 ns: nothing changed; no output"), "{err}");

    let f = |name: &str| dir.path().join(name);
    let c = comments(&f("heap_delta.10.libc.malloc.3-4.pb.gz"));
    assert!(c[0].starts_with("heapconv: delta of com.example.leaky (pid 10), heap libc.malloc: dump 3 at 3250000000 ns -> dump 4 at 4250000000 ns"), "{c:?}");
    assert_eq!(default_type(&f("heap_delta.10.libc.malloc.3-4.pb.gz")), "Unreleased malloc size");
    if !have_go() {
        return;
    }
    // Per stack: NEW minus OLD, negative where the stack holds less.
    let (_, d34) = raw_by_function(&f("heap_delta.10.libc.malloc.3-4.pb.gz")).unwrap();
    assert_eq!(d34["Burst::spike()"], [0, 0, -8, -2097152]);
    assert_eq!(d34["Cache::fill()"], [1, 65536, 1, 65536]);
    assert_eq!(d34["Leaky::grow()"], [1, 4096, 1, 4096]);
    // Churn: 163840 bytes allocated in the interval, none held.
    assert_eq!(d34["Temp::churn()"], [10, 163840, 0, 0]);
    // Stacks with no change at all are left out (Cache::fill from dump 2 to 3).
    let (_, d23) = raw_by_function(&f("heap_delta.10.libc.malloc.2-3.pb.gz")).unwrap();
    assert!(!d23.contains_key("Cache::fill()"), "{d23:?}");
    // Totals: each pair is the difference of the dumps' totals, and they add up.
    let unreleased = [331776, 1187840, 2240512, 212992, 282624];
    let mut sum = 0;
    for (a, b) in [(1, 2), (2, 3), (3, 4), (4, 5)] {
        let (_, d) = raw_by_function(&f(&format!("heap_delta.10.libc.malloc.{a}-{b}.pb.gz"))).unwrap();
        let t: i64 = d.values().map(|v| v[US]).sum();
        assert_eq!(t, unreleased[b - 1] - unreleased[a - 1], "{a}-{b}");
        sum += t;
    }
    assert_eq!(sum, 282624 - 331776);
    let (_, steady) = raw_by_function(&f("heap_delta.20.libc.malloc.2-3.pb.gz")).unwrap();
    assert_eq!(steady, BTreeMap::from([("Steady::work()".to_owned(), vec![0, 0, -1, -32768])]));
    let (types, art) = raw_by_function(&f("heap_delta.10.com.android.art.4-5.pb.gz")).unwrap();
    assert!(types.starts_with("Total allocation count/count Total allocation size/bytes"), "{types}");
    assert_eq!(art["com.example.leaky.Loader.load [aot]"], [5, 5120]);
}

#[test]
fn delta_between_chosen_dumps() {
    let pair = ["--pid", "10", "--heap", "libc.malloc", "--from", "1250000000", "--until", "3250000000"];
    let dir = tmp();
    let pb = dir.path().join("d.pb.gz");
    let mut args = vec!["convert", TRACE, "--view", "delta", "-o", s(&pb)];
    args.extend_from_slice(&pair);
    let o = run_ok(&args, 0);
    assert!(
        stderr_of(&o).contains(
            "dump 1 at 1250000000 ns -> dump 3 at 3250000000 ns: Unreleased malloc size +1.82 MiB (+1908736 bytes)"
        ),
        "{}",
        stderr_of(&o)
    );
    if let Some((_, d)) = raw_by_function(&pb) {
        assert_eq!(d["Leaky::grow()"][US], 8192);
        assert_eq!(d["Cache::fill()"][US], 65536);
        assert_eq!(d["Burst::spike()"][US], 1835008);
        assert_eq!(d.values().map(|v| v[US]).sum::<i64>(), 2240512 - 331776);
    }

    // A bound between dumps takes the last dump at or before it; the newer end defaults to the
    // last dump. pid 20 has no dump before 1.25 s in the first case.
    let out = dir.path().join("all");
    run_ok(&["convert", TRACE, "--view", "delta", "--from", "3300000000", "-o", &format!("{}/", s(&out))], 0);
    assert_eq!(
        file_names(&out),
        [
            "heap_delta.10.com.android.art.3-5.pb.gz",
            "heap_delta.10.libc.malloc.3-5.pb.gz",
            "heap_delta.20.libc.malloc.2-3.pb.gz"
        ]
    );
    let o = run_ok(
        &["convert", TRACE, "--view", "delta", "--from", "3250000000", "--until", "3300000000", "--pid", "20"],
        1,
    );
    assert!(stderr_of(&o).contains("--from and --until both select dump 2 at 2750000000 ns"), "{}", stderr_of(&o));
    // Without --from, the older end is the first dump.
    let o = run_ok(&["convert", TRACE, "--view", "delta", "--until", "3250000000", "--pid", "20", "--to", "folded"], 0);
    assert!(
        stderr_of(&o)
            .contains("dump 1 at 1750000000 ns -> dump 2 at 2750000000 ns: Unreleased malloc size 0 B (0 bytes)"),
        "{}",
        stderr_of(&o)
    );
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "__start_thread;Steady::buffer();malloc 8192 8192\n__start_thread;Steady::work();malloc 32768 32768\n",
        "nothing changed: before = after"
    );
    let o = run_ok(&["convert", TRACE, "--view", "delta", "--from", "1300000000", "--to", "json"], 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let series = v["view"]["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "pid 20 has no dump at or before 1.3 s");
    assert!(
        stderr_of(&o)
            .contains("com.example.steady (pid 20), heap libc.malloc: no dump at or before 1300000000 ns; left out"),
        "{}",
        stderr_of(&o)
    );
    let malloc = &series[1];
    assert_eq!((malloc["from"]["dump"].as_u64(), malloc["to"]["dump"].as_u64()), (Some(1), Some(5)));
    assert_eq!(malloc["report"]["total"]["before"], 331776);
    assert_eq!(malloc["report"]["total"]["after"], 282624);
    assert_eq!(malloc["report"]["stacks"][0]["name"], "malloc < Cache::fill() < __start_thread");
    assert_eq!(malloc["report"]["stacks"][0]["delta"], 196608);
    assert!(v.get("profiles").is_none());

    // Differential folded stacks and flame graph, as `heapconv diff` makes them.
    let mut args = vec!["convert", TRACE, "--view", "delta", "--to", "folded"];
    args.extend_from_slice(&pair);
    let folded = String::from_utf8(run_ok(&args, 0).stdout).unwrap();
    assert_eq!(
        folded,
        "__start_thread;Burst::spike();malloc 262144 2097152\n\
         __start_thread;Cache::fill();malloc 65536 131072\n\
         __start_thread;Leaky::grow();malloc 4096 12288\n"
    );
    let mut args = vec!["convert", TRACE, "--view", "delta", "--to", "svg"];
    args.extend_from_slice(&pair);
    let svg = parse_svg(&run_ok(&args, 0).stdout);
    let texts: Vec<&str> = svg.find_all("text").iter().map(|t| t.text.as_str()).collect();
    assert!(
        texts.contains(
            &"com.example.leaky (pid 10), heap libc.malloc: dump 1 at 1250000000 ns -> dump 3 at 3250000000 ns"
        ),
        "{texts:?}"
    );
    let tips: Vec<&str> = svg.find_all("title").iter().map(|t| t.text.as_str()).collect();
    assert!(
        tips.iter().any(|t| t.starts_with("Burst::spike() (before 256 KiB, after 2.00 MiB, delta +1.75 MiB")),
        "{tips:?}"
    );

    // Bounds in the wrong order, or without --view delta, are usage errors.
    run_ok(&["convert", TRACE, "--view", "delta", "--from", "5", "--until", "4"], 2);
    run_ok(&["convert", TRACE, "--from", "5"], 2);
}

#[test]
fn leaks_grew_at_each_of_the_last_dumps() {
    let dir = tmp();
    let pb = dir.path().join("l.pb.gz");
    let sel = ["--pid", "10", "--heap", "libc.malloc"];
    let mut args = vec!["convert", TRACE, "--view", "leaks", "-o", s(&pb)];
    args.extend_from_slice(&sel);
    let o = run_ok(&args, 0);
    assert!(
        stderr_of(&o)
            .contains("2 stack(s) grew at each of dumps 3, 4, 5: 276 KiB (282624 bytes) at dump 5 at 5250000000 ns"),
        "{}",
        stderr_of(&o)
    );
    let c = comments(&pb);
    assert!(
        c.iter().any(|c| c.starts_with(
            "view leaks: 2 stack(s) whose Unreleased malloc size grew at each of the last 3 dumps (3, 4, 5)"
        )),
        "{c:?}"
    );
    if let Some((_, l)) = raw_by_function(&pb) {
        // Values are the last dump's, every sample type.
        assert_eq!(
            l,
            BTreeMap::from([
                ("Cache::fill()".to_owned(), vec![4, 262144, 4, 262144]),
                ("Leaky::grow()".to_owned(), vec![5, 20480, 5, 20480]),
            ])
        );
    }

    // Over the last 4 dumps Cache::fill was flat once (dump 2 to 3): only Leaky::grow.
    let k4 = dir.path().join("k4.pb.gz");
    let mut args = vec!["convert", TRACE, "--view", "leaks", "--leak-dumps", "4", "-o", s(&k4)];
    args.extend_from_slice(&sel);
    run_ok(&args, 0);
    if let Some((_, l)) = raw_by_function(&k4) {
        assert_eq!(l.keys().collect::<Vec<_>>(), ["Leaky::grow()"]);
    }

    // By total size, the churn grows too (it allocates every interval) and the burst does not.
    let mut args = vec!["convert", TRACE, "--view", "leaks", "--value", "total-size", "--to", "json"];
    args.extend_from_slice(&sel);
    let v: serde_json::Value = serde_json::from_slice(&run_ok(&args, 0).stdout).unwrap();
    let suspects = v["view"]["series"][0]["suspects"].as_array().unwrap();
    let leaves: Vec<&str> = suspects.iter().map(|x| x["frames"][1].as_str().unwrap()).collect();
    assert_eq!(leaves, ["Temp::churn()", "Cache::fill()", "Leaky::grow()"]);
    assert_eq!(suspects[0]["values"], serde_json::json!([491520, 655360, 819200]));
    assert_eq!(suspects[0]["growth"], 327680);
    let dumps: Vec<u64> =
        v["view"]["series"][0]["dumps"].as_array().unwrap().iter().map(|d| d["dump"].as_u64().unwrap()).collect();
    assert_eq!(dumps, [3, 4, 5]);

    // pid 20 has no suspect: an empty profile, and a note.
    let empty = dir.path().join("e.pb.gz");
    let o = run_ok(&["convert", TRACE, "--view", "leaks", "--pid", "20", "-o", s(&empty)], 0);
    assert!(stderr_of(&o).contains("0 stack(s) grew"), "{}", stderr_of(&o));
    assert_eq!(read_pprof(&empty).sample.len(), 0);

    // Too few dumps, or K below 2.
    let o = run_ok(&["convert", TRACE, "--view", "leaks", "--leak-dumps", "4", "--pid", "20"], 1);
    assert!(stderr_of(&o).contains("only 3 dump(s), 4 needed"), "{}", stderr_of(&o));
    run_ok(&["convert", TRACE, "--view", "leaks", "--leak-dumps", "1"], 2);
}

#[test]
fn views_need_one_trace_with_dumps() {
    // Several outputs need a directory.
    let o = run_ok(&["convert", TRACE, "--view", "peak", "--to", "folded"], 2);
    assert!(stderr_of(&o).contains("--view peak makes 3 outputs"), "{}", stderr_of(&o));
    // --dump picks one dump; the views pick their own.
    run_ok(&["convert", TRACE, "--view", "peak", "--dump", "2", "--pid", "20"], 2);
    // One input only.
    run_ok(&["convert", TRACE, TRACE, "--view", "peak"], 2);
    // A single-dump trace has no delta.
    let o = run_ok(&["convert", "tests/data/interned_chain_spill.pftrace", "--view", "delta", "--to", "folded"], 1);
    assert!(stderr_of(&o).contains("needs two dumps"), "{}", stderr_of(&o));
    // Not a trace.
    let o = run_ok(&["convert", "tests/data/ddm/art.alloc", "--view", "peak"], 1);
    assert!(stderr_of(&o).contains("reads the dumps of a heapprofd trace"), "{}", stderr_of(&o));
}

#[test]
fn value_keeps_the_old_view_names() {
    // `--value X` and the older `--view X` give the same bytes.
    let a = run_ok(
        &["convert", TRACE, "--pid", "10", "--heap", "libc.malloc", "--to", "folded", "--view", "total-count"],
        0,
    );
    let b = run_ok(
        &["convert", TRACE, "--pid", "10", "--heap", "libc.malloc", "--to", "folded", "--value", "total-count"],
        0,
    );
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(
        String::from_utf8(a.stdout).unwrap(),
        "__start_thread;Burst::spike();malloc 8\n__start_thread;Cache::fill();malloc 4\n__start_thread;Leaky::grow();malloc 5\n__start_thread;Temp::churn();malloc 50\n"
    );
    run_ok(&["convert", TRACE, "--view", "total-count", "--value", "total-size"], 2);
}

#[test]
fn views_are_deterministic() {
    for view in ["peak", "delta", "leaks"] {
        let d1 = tmp();
        let d2 = tmp();
        for d in [&d1, &d2] {
            run_ok(&["convert", TRACE, "--view", view, "-o", &format!("{}/", s(d.path()))], 0);
        }
        let names = file_names(d1.path());
        assert_eq!(names, file_names(d2.path()));
        for n in names {
            let (a, b): (PathBuf, PathBuf) = (d1.path().join(&n), d2.path().join(&n));
            assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "{view}: {n}");
        }
    }
}

/// Golden outputs of the three views on pid 10's libc.malloc series (values in the table at
/// the top of this file), and the `--from-time`/`--to-time` spellings of `--from`/`--until`.
#[test]
fn views_golden_outputs() {
    let sel = ["--pid", "10", "--heap", "libc.malloc"];
    let text = |args: &[&str]| -> String {
        let mut all = vec!["convert", TRACE];
        all.extend_from_slice(args);
        all.extend_from_slice(&sel);
        String::from_utf8(run_ok(&all, 0).stdout).unwrap()
    };
    // peak: dump 3 (2240512 bytes unreleased), whole.
    let peak = text(&["--view", "peak", "--to", "folded"]);
    assert!(peak.contains("Burst::spike();malloc 2097152"), "{peak}");
    check_golden("views.peak.folded", &peak);
    let dir = tmp();
    let pb = dir.path().join("peak.pb.gz");
    run_ok(&["convert", TRACE, "--view", "peak", "-o", s(&pb), "--pid", "10", "--heap", "libc.malloc"], 0);
    check_golden("views.peak.pprof.txt", &pprof_text(&read_pprof(&pb)));
    // delta from dump 1 to dump 3: Burst::spike +1835008, Cache::fill +65536, Leaky::grow +8192.
    let delta = text(&["--view", "delta", "--from", "1250000000", "--until", "3250000000", "--to", "folded"]);
    assert!(delta.contains("Burst::spike();malloc 262144 2097152"), "{delta}");
    check_golden("views.delta.folded", &delta);
    let json = text(&["--view", "delta", "--from", "1250000000", "--until", "3250000000", "--to", "json"]);
    check_golden("views.delta.json", &json);
    let alias = text(&["--view", "delta", "--from-time", "1250000000", "--to-time", "3250000000", "--to", "json"]);
    assert_eq!(alias, json, "--from-time/--to-time are --from/--until");
    // `--to T2` is refused with a hint.
    let o = run_ok(&["convert", TRACE, "--view", "delta", "--from", "1250000000", "--to", "3250000000"], 2);
    assert!(stderr_of(&o).contains("hint: --to names the output format; the newer dump of --view delta is --until T"));
    // leaks over the last 3 dumps (3, 4, 5): Leaky::grow and Cache::fill grew at each step;
    // Burst::spike was freed.
    let leaks = text(&["--view", "leaks", "--to", "folded"]);
    assert_eq!(leaks.lines().count(), 2, "{leaks}");
    assert!(leaks.contains("Leaky::grow();malloc 20480") && leaks.contains("Cache::fill();malloc 262144"), "{leaks}");
    check_golden("views.leaks.folded", &leaks);
    check_golden("views.leaks.json", &text(&["--view", "leaks", "--to", "json"]));
}

/// `convert DIR --view …` runs the view on every trace of the batch, each trace's files
/// named as one run names them, under `-o DIR/<key>/`.
#[test]
fn views_run_as_batches() {
    let tmp = tmp();
    let inp = tmp.path().join("in");
    std::fs::create_dir_all(&inp).unwrap();
    for name in ["a.pftrace", "b.pftrace"] {
        std::fs::copy(root().join(TRACE), inp.join(name)).unwrap();
    }
    std::fs::copy(data("ddm/art.alloc"), inp.join("c.alloc")).unwrap();
    let out = tmp.path().join("out");
    let sum = tmp.path().join("s.json");
    let o =
        run_ok(&["convert", s(&inp), "--view", "peak", "--to", "folded", "-o", s(&out), "--summary-json", s(&sum)], 0);
    assert_eq!(stderr_of(&o), "", "silence in CI");
    let files =
        ["heap_peak.10.com.android.art.folded", "heap_peak.10.libc.malloc.folded", "heap_peak.20.libc.malloc.folded"];
    assert_eq!(file_names(&out), ["a", "b"], "the DDM capture is not a trace: left out of the directory");
    // The same files as one run of the view writes.
    let single = tmp.path().join("single");
    run_ok(&["convert", TRACE, "--view", "peak", "--to", "folded", "-o", &format!("{}/", s(&single))], 0);
    assert_eq!(file_names(&single), files);
    for key in ["a", "b"] {
        assert_eq!(file_names(&out.join(key)), files);
        for f in files {
            assert_eq!(
                std::fs::read(out.join(key).join(f)).unwrap(),
                std::fs::read(single.join(f)).unwrap(),
                "{key}/{f}"
            );
        }
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&sum).unwrap()).unwrap();
    assert_eq!(v["inputs"], 2);
    let d = &v["results"][0]["details"];
    assert_eq!(d["view"], "peak");
    assert!(d["notes"][1].as_str().unwrap().contains("dump 3 of 5 at 3250000000 ns"), "{d}");
    // JSON: one document per trace.
    let out2 = tmp.path().join("out2");
    run_ok(&["convert", s(&inp), "--view", "leaks", "--to", "json", "-o", s(&out2)], 0);
    assert_eq!(file_names(&out2), ["a.json", "b.json"]);
    // Usage errors stop the batch before anything is read; a pprof input named by path fails.
    let o = run_ok(&["convert", s(&inp), "--view", "leaks", "--leak-dumps", "1", "-o", s(&tmp.path().join("o3"))], 2);
    assert!(stderr_of(&o).contains("--leak-dumps must be at least 2"));
    let pb = tmp.path().join("x.pb.gz");
    run_ok(&["convert", TRACE, "--pid", "20", "-o", s(&pb)], 0);
    let o = run_ok(&["convert", TRACE, s(&pb), "--view", "delta", "--batch", "-o", s(&tmp.path().join("o4"))], 1);
    let err = stderr_of(&o);
    assert!(err.contains("x.pb.gz is a pprof profile; `heapconv convert --view` reads Perfetto traces"), "{err}");
    assert!(err.contains("2 input(s): 1 ok, 0 partial, 1 failed"), "{err}");
}

/// `heapconv timeline DIR -o OUT` writes one timeline per trace, `OUT/<key>.csv`, the bytes
/// one run writes.
#[test]
fn timelines_run_as_batches() {
    let tmp = tmp();
    let inp = tmp.path().join("in");
    std::fs::create_dir_all(inp.join("sub")).unwrap();
    std::fs::copy(root().join(TRACE), inp.join("a.pftrace")).unwrap();
    std::fs::copy(root().join(TRACE), inp.join("sub/b.pftrace")).unwrap();
    std::fs::copy(data("ddm/art.alloc"), inp.join("c.alloc")).unwrap();
    let out = tmp.path().join("out");
    let sum = tmp.path().join("s.json");
    let o = run_ok(&["timeline", s(&inp), "-o", s(&out), "--summary-json", s(&sum)], 0);
    assert_eq!(stderr_of(&o), "");
    assert_eq!(file_names(&out), ["a.csv", "sub"]);
    let single = run_ok(&["timeline", TRACE], 0).stdout;
    assert_eq!(std::fs::read(out.join("a.csv")).unwrap(), single);
    assert_eq!(std::fs::read(out.join("sub/b.csv")).unwrap(), single);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&sum).unwrap()).unwrap();
    assert_eq!(v["command"], "timeline");
    assert_eq!(v["results"][0]["details"], serde_json::json!({"series": 3, "dumps": 13}));
    // SVG: one chart per trace; two traces given as paths are a batch too.
    let out2 = tmp.path().join("out2");
    run_ok(&["timeline", s(&inp.join("a.pftrace")), s(&inp.join("sub/b.pftrace")), "--to", "svg", "-o", s(&out2)], 0);
    assert_eq!(file_names(&out2), ["a.svg", "b.svg"]);
    let svg = std::fs::read(out2.join("b.svg")).unwrap();
    parse_svg(&svg);
}
