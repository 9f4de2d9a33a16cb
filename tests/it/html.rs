//! `--to html`: the report opened in a real browser (Debian's `chromium`, headless, driven by
//! `tests/browser/check_report.mjs` with the npm package `playwright-core`, both installed by
//! `.ci/install-oracles.sh`). The page is acted on as a person would (search, click, sort) and
//! what it shows is compared with values heapconv's other outputs give for the same input.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{data, file_names, heapconv_ok, root};

/// Node, playwright-core and chromium, or `None` (a panic when oracles are required).
pub(crate) fn browser() -> Option<(PathBuf, PathBuf)> {
    let core = std::env::var_os("PLAYWRIGHT_CORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/browser/node_modules/playwright-core"));
    let chromium =
        std::env::var_os("CHROMIUM").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    if node && core.join("package.json").is_file() && chromium.is_file() {
        return Some((core, chromium));
    }
    let what = format!("node ({node}), playwright-core at {} and chromium at {}", core.display(), chromium.display());
    if std::env::var("HEAPCONV_REQUIRE_ORACLES").as_deref() == Ok("1") {
        panic!("{what} are required (HEAPCONV_REQUIRE_ORACLES=1): run .ci/install-oracles.sh");
    }
    eprintln!("SKIPPED browser check: {what} (run .ci/install-oracles.sh)");
    None
}

/// Opens `report` in chromium, plays `scenario` (see check_report.mjs) and returns what the
/// page showed.
fn open(report: &Path, scenario: Value) -> Option<Value> {
    let (core, chromium) = browser()?;
    let out = Command::new("node")
        .arg(root().join("tests/browser/check_report.mjs"))
        .arg(report)
        .arg(scenario.to_string())
        .env("PLAYWRIGHT_CORE", core)
        .env("CHROMIUM", chromium)
        .output()
        .expect("node runs");
    assert!(out.status.success(), "check_report.mjs failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let page: Value = serde_json::from_slice(&out.stdout).expect("check_report.mjs prints JSON");
    assert_eq!(page["errors"], json!([]), "console errors");
    assert_eq!(page["requests"], json!([]), "the report fetched something");
    Some(page)
}

/// Sum of the folded stacks (unreleased size, with annotations as `convert` names frames) whose
/// frames include one matching `pred`: each stack counted once, as the page's matched share.
fn folded_sum(input: &Path, extra: &[&str], pred: impl Fn(&str) -> bool) -> (i64, i64) {
    let mut args = vec!["convert", "--to", "folded", input.to_str().unwrap(), "-o", "-"];
    args.extend_from_slice(extra);
    let out = heapconv_ok(&args, 0);
    let (mut hit, mut total) = (0, 0);
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let (frames, v) = heapconv::encode::folded::parse_folded_line(line).unwrap();
        total += v;
        if frames.iter().any(|f| pred(f)) {
            hit += v;
        }
    }
    (hit, total)
}

fn tmp(name: &str) -> PathBuf {
    let dir = root().join("target/tmp-html");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn profile_report_searches_zooms_and_sorts_in_chromium() {
    let input = data("art_frames.pftrace");
    let report = tmp("art_frames.html");
    heapconv_ok(&["convert", "--to", "html", input.to_str().unwrap(), "-o", report.to_str().unwrap()], 0);
    let html = std::fs::read_to_string(&report).unwrap();
    // (The SVG namespace name of the timeline's chart is a name, never fetched.)
    let html = html.replace("'http://www.w3.org/2000/svg'", "");
    assert!(!html.contains("http://") && !html.contains("https://"), "no address in a self-contained report");
    // The README's picture is made here (HEAPCONV_SCREENSHOT=path writes it).
    let shot = std::env::var("HEAPCONV_SCREENSHOT").ok();
    let Some(page) = open(
        &report,
        json!({"search": "Feed\\.(parse|refresh)", "click": "com.example.feed.Feed.refresh [aot]", "sort": "self", "row": 0,
               "screenshot": shot}),
    ) else {
        return;
    };
    let title = "com.example.feed (pid 10), heap libc.malloc, dump 1 at 100 ns";
    assert_eq!(page["title"], title);
    assert_eq!(page["heading"], title);
    assert_eq!(
        page["totals"],
        "Total malloc count 11 · Total malloc size 2.60 KiB (2,660 bytes) · Unreleased malloc count 5 · \
         Unreleased malloc size 2.08 KiB (2,128 bytes)"
    );
    assert_eq!(page["symbols"], "94.74% of 19 native frames");
    assert_eq!(page["initial"]["type"], "Unreleased malloc size");
    assert_eq!(page["types"].as_array().unwrap().len(), 4);
    assert!(page["readyMs"].as_f64().unwrap() < 2000.0, "{}", page["readyMs"]);

    // Search: the frames named so are highlighted (drawn in the highlight colour), and the
    // share is that of the folded stacks through them.
    let re = |f: &str| f.contains("Feed.parse") || f.contains("Feed.refresh");
    let (hit, total) = folded_sum(&input, &[], re);
    assert_eq!(total, 2128);
    let search = &page["search"];
    assert_eq!(
        search["highlighted"],
        json!(["com.example.feed.Feed.parse [interp]", "com.example.feed.Feed.refresh [aot]"])
    );
    assert_eq!(search["state"]["matchedValue"], json!(hit));
    let share = format!("Matched: {:.2}% ", hit as f64 * 100.0 / total as f64);
    assert!(search["state"]["match"].as_str().unwrap().starts_with(&share), "{} vs {share}", search["state"]["match"]);
    assert_eq!(search["pixel"], json!([208, 0, 208]));

    // Hover shows exact values; a click zooms: the frame then spans the whole width.
    let tip = page["tooltip"].as_str().unwrap();
    assert!(tip.contains("com.example.feed.Feed.refresh [aot]") && tip.contains("2,048 bytes"), "{tip}");
    let before = page["clickBefore"]["w"].as_f64().unwrap();
    let after = &page["clickAfter"];
    assert_eq!(after["state"]["focus"], "com.example.feed.Feed.refresh [aot]");
    assert!(before < after["rect"]["w"].as_f64().unwrap());
    assert!((after["rect"]["w"].as_f64().unwrap() - after["rect"]["canvasWidth"].as_f64().unwrap()).abs() < 1.0);

    // The table: by cumulative value at first; sorted by self (largest first), then reversed.
    let table = &page["table"];
    assert_eq!(table["headers"], json!(["name", "self", "selfPct", "cum", "cumPct"]));
    assert_eq!(table["initial"][0][3], "2.08 KiB");
    assert_eq!(table["sorted"][0], json!(["malloc", "2.08 KiB", "100.00%", "2.08 KiB", "100.00%"]));
    assert_eq!(table["sortedClass"], "sorted");
    assert_eq!(table["reversed"][0][1], "0 B");
    // Clicking a row highlights that function's frames.
    let row_name = table["reversed"][0][0].as_str().unwrap();
    assert_eq!(page["row"]["highlighted"], json!([row_name]));
}

#[test]
fn diff_report_colours_and_ranks_growth_in_chromium() {
    let base = tmp("recycle.2.pb.gz");
    let new = tmp("recycle.5.pb.gz");
    let input = data("continuous_recycle.pftrace");
    for (dump, out) in [("2", &base), ("5", &new)] {
        heapconv_ok(&["convert", input.to_str().unwrap(), "--dump", dump, "-o", out.to_str().unwrap()], 0);
    }
    let report = tmp("recycle.diff.html");
    heapconv_ok(
        &["diff", "--to", "html", base.to_str().unwrap(), new.to_str().unwrap(), "-o", report.to_str().unwrap()],
        0,
    );
    let Some(page) = open(&report, json!({"search": "recv", "sort": "name"})) else {
        return;
    };
    assert!(
        page["title"].as_str().unwrap().ends_with("recycle.2.pb.gz \u{2192} ")
            || page["title"].as_str().unwrap().contains("\u{2192}")
    );
    assert_eq!(
        page["totals"],
        "Total malloc count 23 → 27 (+4) · Total malloc size 92.0 KiB → 108 KiB (+16.0 KiB) · Unreleased malloc count \
         17 → 4 (-13) · Unreleased malloc size 68.0 KiB → 16.0 KiB (-52.0 KiB)"
    );
    // What grew most comes first: the folded diff says Net::recv went 4096 -> 8192.
    assert_eq!(page["table"]["headers"], json!(["name", "before", "after", "delta", "deltaPct", "selfDelta"]));
    assert_eq!(
        page["table"]["initial"][0],
        json!(["news::Net::recv()", "4.00 KiB", "8.00 KiB", "+4.00 KiB", "+100.00%", "0 B"])
    );
    assert_eq!(page["table"]["initial"][4][0], "__start_thread");
    assert_eq!(page["search"]["highlighted"], json!(["news::Net::recv()"]));
    assert_eq!(page["search"]["state"]["matchedValue"], json!(8192));
    assert!(page["search"]["state"]["match"].as_str().unwrap().starts_with("Matched: 50.00% "));
    assert_eq!(page["table"]["sorted"][0][0], "__start_thread");
}

#[test]
fn heap_dump_report_shows_the_dominator_tree() {
    // A trace's Java heap graph: its dominator tree (widths are retained sizes).
    let input = data("heapgraph/cleaner.pftrace");
    let report = tmp("cleaner.html");
    heapconv_ok(&["convert", "--to", "html", input.to_str().unwrap(), "-o", report.to_str().unwrap()], 0);
    let (bitmap, total) = folded_sum(&input, &[], |f| f.starts_with("android.graphics.Bitmap"));
    let Some(page) =
        open(&report, json!({"search": "^android\\.graphics\\.Bitmap", "click": "sun.misc.Cleaner [ROOT_JAVA_FRAME]"}))
    else {
        return;
    };
    assert_eq!(page["initial"]["total"], json!(total));
    assert_eq!(page["search"]["state"]["matchedValue"], json!(bitmap));
    assert_eq!(page["clickAfter"]["state"]["focus"], "sun.misc.Cleaner [ROOT_JAVA_FRAME]");
    // Classes by retained size (cumulative, counted once per path): the largest first.
    assert_eq!(page["table"]["initial"][0][0], "android.graphics.Bitmap [ROOT_JAVA_FRAME]");
}

#[test]
fn filtered_heap_report_leaves_out_the_whole_heap_tables() {
    // The class and retainer tables are of the whole heap: with a stack filter the report
    // carries the filtered tree only (`--to json` refuses filters for the same reason).
    let input = data("heapgraph/cleaner.pftrace");
    let (full, focused) = (tmp("cleaner-full.html"), tmp("cleaner-focused.html"));
    heapconv_ok(&["convert", "--to", "html", input.to_str().unwrap(), "-o", full.to_str().unwrap()], 0);
    heapconv_ok(
        &["convert", "--to", "html", input.to_str().unwrap(), "-o", focused.to_str().unwrap(), "--focus", "Bitmap"],
        0,
    );
    let (full, focused) = (std::fs::read_to_string(full).unwrap(), std::fs::read_to_string(focused).unwrap());
    assert!(full.contains("\"heap\":{\"class_count\""), "the unfiltered report has the heap tables");
    assert!(!focused.contains("\"heap\":{"), "the filtered report has no whole-heap tables");
}

#[test]
fn prune_below_merges_small_frames_and_says_so() {
    let input = data("art_frames.pftrace");
    let report = tmp("art_frames.pruned.html");
    // A frame is kept while it holds the share in any sample type: at 30%, only the stack of
    // one allocation of 16 bytes (1 of 11, 16 of 2660, 1 of 5, 16 of 2128) is below it in all.
    heapconv_ok(
        &["convert", "--to", "html", "--prune-below", "30", input.to_str().unwrap(), "-o", report.to_str().unwrap()],
        0,
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("\"[other]\""));
    let Some(page) = open(&report, json!({})) else {
        return;
    };
    let pruned = page["pruned"].as_str().unwrap();
    assert_eq!(
        pruned,
        "Pruned: frames below 30% of the total are merged into [other] per parent: 2 nodes, Total malloc count 1 (9.09%), \
         Total malloc size 16 B (0.60%), Unreleased malloc count 1 (20.00%), Unreleased malloc size 16 B (0.75%)"
    );
    assert_eq!(page["initial"]["total"], json!(2128));
}

#[test]
fn batch_of_reports_gets_an_index_linking_them_with_totals() {
    let out = tmp("batch");
    let _ = std::fs::remove_dir_all(&out);
    let dir = format!("{}/", out.display());
    let (a, b) = (data("art_frames.pftrace"), data("continuous_recycle.pftrace"));
    heapconv_ok(&["convert", "--to", "html", a.to_str().unwrap(), b.to_str().unwrap(), "-o", &dir], 0);
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("<h1>heapconv convert: 2 input(s), 2 ok, 0 partial, 0 failed</h1>"), "{index}");
    for (href, name, totals) in [
        (
            "art_frames/heap_dump.1.10.libc.malloc.html",
            "com.example.feed (pid 10), heap libc.malloc, dump 1 at 100 ns",
            "total-count 11 &middot; total-size 2.60 KiB &middot; unreleased-count 5 &middot; unreleased-size 2.08 KiB",
        ),
        (
            "continuous_recycle/heap_dump.1.10.libc.malloc.html",
            "com.example.news (pid 10), heap libc.malloc, dump 5 at 5000 ns",
            "total-count 27 &middot; total-size 108 KiB &middot; unreleased-count 4 &middot; unreleased-size 16.0 KiB",
        ),
    ] {
        assert!(index.contains(&format!("<td><a href=\"{href}\">{name}</a></td><td>{totals}</td>")), "{index}");
        let report = std::fs::read_to_string(out.join(href)).unwrap();
        assert!(report.contains(&format!("<title>{name}</title>")));
    }
}

/// A synthetic heapprofd trace (one process, three dumps, a few thousand callstacks over a few
/// hundred functions: `heapconv_testdata::heapprofd`), written once per name.
fn synthetic(name: &str) -> PathBuf {
    let path = tmp(name);
    let opts = heapconv_testdata::heapprofd::SynthOptions {
        callstacks: 3000,
        depth: 12,
        dumps: 3,
        processes: 1,
        functions: 300,
        seed: 16,
        ..Default::default()
    };
    let mut buf = Vec::new();
    heapconv_testdata::heapprofd::write_synthetic_trace(&opts, &mut buf).unwrap();
    std::fs::write(&path, buf).unwrap();
    path
}

#[test]
fn search_share_is_exact_when_frames_are_pruned() {
    let input = synthetic("synth.prune.pftrace");
    let report = tmp("synth.prune.html");
    // At 2%, most of the profile is folded into [other] nodes.
    heapconv_ok(
        &["convert", "--to", "html", "--prune-below", "2", input.to_str().unwrap(), "-o", report.to_str().unwrap()],
        0,
    );
    let (malloc, total) = folded_sum(&input, &[], |f| f == "malloc");
    let Some(page) = open(&report, json!({"search": "^malloc$", "search2": "process|Buffer"})) else {
        return;
    };
    let pruned = page["pruned"].as_str().unwrap();
    assert!(pruned.contains("nodes,"), "{pruned}");
    assert_eq!(page["initial"]["total"], json!(total));
    // One function name: its share comes from the whole profile's table, exactly.
    let search = &page["search"]["state"];
    assert_eq!(search["matchedValue"], json!(malloc));
    assert_eq!(search["matchedHigh"], json!(malloc));
    let share = format!("Matched: {:.2}% ", malloc as f64 * 100.0 / total as f64);
    assert!(search["match"].as_str().unwrap().starts_with(&share), "{} vs {share}", search["match"]);
    // Several names: exact when what they match is drawn, else a range that holds the truth.
    let (several, _) = folded_sum(&input, &[], |f| f.contains("process") || f.contains("Buffer"));
    let s2 = &page["search2"]["state"];
    let (lo, hi) = (s2["matchedValue"].as_i64().unwrap(), s2["matchedHigh"].as_i64().unwrap());
    assert!(lo <= several && several <= hi, "{lo} <= {several} <= {hi}");
    assert!(lo > 0);
    // The table by function is the whole profile's, pruned or not: `malloc` (the leaf of most
    // stacks) is at the top with all of its share.
    assert_eq!(page["table"]["initial"][0][0], "malloc");
    assert_eq!(page["table"]["initial"][0][4], format!("{:.2}%", malloc as f64 * 100.0 / total as f64));
}

#[test]
fn timeline_of_all_dumps_switches_the_dump_shown() {
    let input = synthetic("synth.timeline.pftrace");
    let report = tmp("synth.timeline.html");
    // `--dump all` of one process and heap: one report, not one per dump.
    heapconv_ok(
        &["convert", "--to", "html", "--dump", "all", input.to_str().unwrap(), "-o", report.to_str().unwrap()],
        0,
    );
    let totals: Vec<i64> = (1..=3).map(|d| folded_sum(&input, &["--dump", &d.to_string()], |_| true).1).collect();
    let (malloc1, _) = folded_sum(&input, &["--dump", "1"], |f| f == "malloc");
    let Some(page) = open(&report, json!({"dump": 0, "search2": "^malloc$"})) else {
        return;
    };
    assert!(page["title"].as_str().unwrap().ends_with(", heap libc.malloc: 3 dumps"), "{}", page["title"]);
    let timeline = page["timeline"].as_array().unwrap();
    assert_eq!(timeline.iter().map(|d| d["total"].as_i64().unwrap()).collect::<Vec<_>>(), totals);
    assert_eq!(timeline.iter().map(|d| d["dump"].as_i64().unwrap()).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(timeline.iter().map(|d| d["chosen"].as_bool().unwrap()).collect::<Vec<_>>(), [false, false, true]);
    assert_eq!(page["initial"]["total"], json!(totals[2]));
    assert_eq!(page["timelineBars"], json!(3));
    // Clicking the first dump shows it: graph, header and table.
    let after = &page["afterDump"];
    assert_eq!(after["state"]["dump"], json!(0));
    assert_eq!(after["state"]["total"], json!(totals[0]));
    assert_eq!(after["timeline"][0]["chosen"], json!(true));
    assert_eq!(after["heading"], page["heading"]);
    assert_eq!(page["search2"]["state"]["matchedValue"], json!(malloc1));
    // The index of a batch names it too: `-o DIR/` writes one timeline report per process.
    let dir = tmp("timeline-dir");
    let _ = std::fs::remove_dir_all(&dir);
    heapconv_ok(
        &["convert", "--to", "html", "--dump", "all", input.to_str().unwrap(), "-o", &format!("{}/", dir.display())],
        0,
    );
    assert_eq!(file_names(&dir), ["heap_dump.timeline.1000.libc.malloc.html"]);
}

#[test]
fn icicle_value_switch_and_stack_table_in_chromium() {
    let input = data("art_frames.pftrace");
    let report = tmp("art_frames.controls.html");
    heapconv_ok(
        &["convert", "--to", "html", "--prune-below", "0", input.to_str().unwrap(), "-o", report.to_str().unwrap()],
        0,
    );
    // The largest stack of the folded output, leaf first, is the first row of "By stack".
    let folded = heapconv_ok(&["convert", "--to", "folded", input.to_str().unwrap(), "-o", "-"], 0);
    let mut lines: Vec<(Vec<String>, i64)> = String::from_utf8(folded.stdout)
        .unwrap()
        .lines()
        .map(|l| heapconv::encode::folded::parse_folded_line(l).unwrap())
        .collect();
    lines.sort_by_key(|l| std::cmp::Reverse(l.1));
    let top: Vec<String> = lines[0].0.iter().rev().cloned().collect();
    let Some(page) = open(&report, json!({"icicle": "all", "type": 0, "tab": "stack", "search": "Feed"})) else {
        return;
    };
    // Icicle: the root row moves from the bottom of the canvas to its top, and back.
    let ic = &page["icicle"];
    let top_y = ic["canvasTop"].as_f64().unwrap();
    assert_eq!(ic["pressed"], "true");
    assert_eq!(ic["state"]["icicle"], json!(true));
    assert!(ic["before"]["y"].as_f64().unwrap() > top_y + 18.0, "{ic}");
    assert!((ic["after"]["y"].as_f64().unwrap() - top_y).abs() < 1.0, "{ic}");
    assert_eq!(ic["back"]["y"], ic["before"]["y"]);
    // By stack: the largest stack first, with its value.
    assert_eq!(page["table"]["headers"], json!(["name", "self", "selfPct", "cum", "cumPct"]));
    // (The leaf and 7 callers are shown; the rest is counted.)
    assert_eq!(top.len(), 13);
    assert_eq!(page["table"]["initial"][0][0], format!("{} \u{2190} \u{2026} 5 more", top[..8].join(" \u{2190} ")));
    assert_eq!(page["table"]["initial"][0][1], heapconv::encode::labels::human_bytes(lines[0].1));
    // The value switch: widths, totals, table and the search share follow the type chosen.
    let (feed_count, count_total) = {
        let out = heapconv_ok(
            &["convert", "--to", "folded", "--value", "total-count", input.to_str().unwrap(), "-o", "-"],
            0,
        );
        let (mut hit, mut total) = (0, 0);
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let (frames, v) = heapconv::encode::folded::parse_folded_line(line).unwrap();
            total += v;
            if frames.iter().any(|f| f.contains("Feed")) {
                hit += v;
            }
        }
        (hit, total)
    };
    let at = &page["afterType"];
    assert_eq!(at["type"], "Total malloc count");
    assert_eq!(at["total"], json!(count_total));
    assert_eq!(count_total, 11);
    assert_eq!(at["matchedValue"], json!(feed_count));
    assert!(at["match"].as_str().unwrap().starts_with(&format!("Matched: {:.2}% ", feed_count as f64 * 100.0 / 11.0)));
    // Counts are shown as plain numbers, no bytes.
    assert!(!at["table"][0][1].as_str().unwrap().contains('B'), "{}", at["table"]);
}

#[test]
fn heap_report_lists_retainers_with_their_paths_from_gc_roots() {
    let input = data("heapgraph/references.pftrace");
    let top: Value = serde_json::from_slice(
        &heapconv_ok(&["convert", "--to", "json", input.to_str().unwrap(), "-o", "-"], 0).stdout,
    )
    .unwrap();
    // The retainer with the longest path (Payload, held through a field of its root).
    let (k, longest) = top["retainers"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .max_by_key(|(_, r)| r["path"]["length"].as_u64().unwrap_or(0))
        .unwrap();
    assert_eq!(longest["class"], "Payload");
    let steps = longest["path"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    let id = |v: &Value| format!("@0x{:x}", v["id"].as_u64().unwrap());
    let mut expected = vec![format!("[{}]", longest["path"]["root_kind"].as_str().unwrap())];
    for s in steps {
        let via = s["via"].as_str().map(|v| format!(" {v} \u{2192}")).unwrap_or_default();
        expected.push(format!("{} {}{via}", s["class"].as_str().unwrap(), id(s)));
    }
    // Both trees: dominator (retained sizes) and traceconv's shortest-path tree.
    for by in ["dominator", "shortest-path"] {
        let report = tmp(&format!("references.{by}.html"));
        heapconv_ok(
            &["convert", "--to", "html", "--by", by, input.to_str().unwrap(), "-o", report.to_str().unwrap()],
            0,
        );
        let (payload, total) = folded_sum(&input, &["--by", by], |f| f.starts_with("Payload"));
        let Some(page) = open(&report, json!({"tab": "retainers", "row": k, "search": "^Payload"})) else {
            return;
        };
        assert_eq!(page["tabs"], json!(["function", "mapping", "stack", "classes", "retainers"]));
        assert_eq!(page["initial"]["total"], json!(total), "{by}");
        assert_eq!(page["search"]["state"]["matchedValue"], json!(payload), "{by}");
        // The retainers as the JSON top report lists them, largest first.
        let rows: Vec<String> =
            page["table"]["initial"].as_array().unwrap().iter().map(|r| r[0].as_str().unwrap().to_owned()).collect();
        let want: Vec<String> = top["retainers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{} {}", r["class"].as_str().unwrap(), id(r)))
            .collect();
        assert_eq!(rows, want, "{by}");
        // A click on Payload shows its path from the GC root and highlights its frames.
        assert_eq!(page["row"]["path"], json!(expected), "{by}");
        assert_eq!(page["row"]["highlighted"], json!(["Payload"]), "{by}");
    }
}
