//! Data flows one way: `model` imports no stage, and no stage imports another stage (decode,
//! symbolize, merge, analysis, encode); only the pipeline (and the binary) calls the stages in
//! order. Reports an analysis computes and an encoder renders are model types. Generated
//! protobuf types stay in `decode` and `encode`. A module may be a file (`src/merge.rs`) or a
//! folder (`src/merge/`).

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn sources(module: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let dir = root.join(module);
    if dir.is_dir() {
        rust_files(&dir, &mut files);
    } else {
        files.push(root.join(format!("{module}.rs")));
    }
    files.into_iter().map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap())).collect()
}

#[test]
fn stages_do_not_reach_into_each_other() {
    let rules: Vec<(&str, Vec<&str>)> = vec![
        ("model", vec!["decode", "symbolize", "merge", "encode", "analysis", "pipeline", "proto", "output"]),
        ("decode", vec!["symbolize", "merge", "encode", "analysis", "pipeline"]),
        ("symbolize", vec!["decode", "merge", "encode", "analysis", "pipeline", "proto", "output"]),
        ("merge", vec!["decode", "symbolize", "encode", "analysis", "pipeline", "proto", "output"]),
        ("encode", vec!["decode", "symbolize", "merge", "analysis", "pipeline"]),
        ("analysis", vec!["decode", "symbolize", "merge", "encode", "pipeline", "proto", "output"]),
    ];
    let mut checked = 0;
    for (module, forbidden) in rules {
        for (file, text) in sources(module) {
            for f in &forbidden {
                let needle = format!("crate::{f}");
                assert!(!text.contains(&needle), "{file} uses {needle}: stages must not import each other");
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "the source tree was found");
}
