//! Data flows one way: `model` imports no stage, and no stage imports another stage; only
//! `pipeline.rs` (and the binary) calls the stages in order. Generated protobuf types stay in
//! `decode` and `encode`.

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
        ("model", vec!["decode", "symbolize", "merge", "encode", "pipeline", "proto", "output"]),
        ("decode", vec!["symbolize", "merge", "encode", "pipeline"]),
        ("encode", vec!["decode", "symbolize", "merge", "pipeline"]),
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

/// Test-data generators are not the product: `heapconv-testdata` is a dev-dependency only, and
/// no source file of the product names it.
#[test]
fn the_product_does_not_depend_on_the_test_data_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let deps = manifest.split("\n[dependencies]\n").nth(1).expect("a [dependencies] table");
    let deps = deps.split("\n[").next().unwrap();
    assert!(!deps.contains("heapconv-testdata"), "heapconv-testdata is a dev-dependency only");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(files.len() >= 10, "the source tree was found");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains("heapconv_testdata"), "{} uses the test-data crate", f.display());
    }
}
