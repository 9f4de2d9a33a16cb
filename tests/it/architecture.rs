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
        // The varints of the wire format, shared by decode and encode, stand on nothing.
        (
            "wire",
            vec!["model", "decode", "symbolize", "merge", "encode", "analysis", "pipeline", "proto", "output", "error"],
        ),
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

/// The command line (`src/main.rs`, `src/cli/`) speaks to the library through the pipeline,
/// the model and the error type only: nothing below the pipeline.
#[test]
fn the_cli_uses_only_the_pipeline_the_model_and_errors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![root.join("main.rs")];
    rust_files(&root.join("cli"), &mut files);
    assert!(files.len() >= 5, "the command line's files were found");
    let allowed = ["pipeline", "model", "Error", "ErrorKind", "Result", "{Error", "{Error,"];
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (at, _) in text.match_indices("heapconv::") {
            let rest = &text[at + "heapconv::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '{').collect();
            assert!(
                allowed.contains(&name.as_str()) || name.starts_with("{Error"),
                "{} uses heapconv::{name}: the command line imports only the pipeline, the model and the error type",
                file.display()
            );
        }
        for stage in ["decode", "encode", "symbolize", "analysis", "merge", "output", "timing", "proto", "wire"] {
            assert!(
                !text.contains(&format!("heapconv::{stage}")),
                "{} reaches below the pipeline into {stage}",
                file.display()
            );
        }
    }
    let main = std::fs::read_to_string(root.join("main.rs")).unwrap();
    assert!(main.lines().count() < 150, "main.rs only starts the command line");
}

/// The command files of the pipeline do not import each other; they share the layer of
/// `select`, `load`, `reports`, `outcome` and `batch` (a file or a folder each), which imports
/// no command file.
#[test]
fn pipeline_command_files_do_not_import_each_other() {
    let shared = ["select", "load", "reports", "outcome", "batch", "mod"];
    let commands = [
        "convert",
        "profile",
        "views",
        "timeline",
        "merge",
        "diff",
        "top",
        "hprof",
        "hprof_conv",
        "inspect",
        "symbolize",
        "deobfuscate",
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/pipeline");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let mut seen = 0;
    for path in files {
        // A room is a file of src/pipeline, or a folder there (its files are the room's).
        let rel = path.strip_prefix(&dir).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        let room = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            shared.contains(&room.as_str()) || commands.contains(&room.as_str()),
            "{}: a new room in src/pipeline is either a command or part of the shared layer (add it here)",
            rel.display()
        );
        if rel == Path::new("mod.rs") {
            continue;
        }
        seen += 1;
        for c in commands.iter().filter(|c| **c != room) {
            for needle in [
                format!("super::{c}::"),
                format!("pipeline::{c}::"),
                format!("super::{c}}}"),
                format!("use super::{c};"),
            ] {
                assert!(
                    !text.contains(&needle),
                    "src/pipeline/{} imports the command file {c}.rs ({needle})",
                    rel.display()
                );
            }
        }
    }
    assert!(seen >= commands.len(), "the pipeline's files were found");
}

/// Input kinds are one table (`decode::InputKind`, with `pipeline::load`'s table of what each
/// command reads): the commands take typed inputs from `load` and do not match kinds again, so
/// at most two files of the pipeline name `InputKind`.
#[test]
fn input_kinds_are_named_in_at_most_two_pipeline_files() {
    let mut files = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/pipeline"), &mut files);
    let naming: Vec<String> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().contains("InputKind"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(naming.len() <= 2, "InputKind is named in {} pipeline files: {naming:?}", naming.len());
}

/// Functions of `(path, name, lines)` over `most` lines in the Rust files under `dir` (a
/// function runs from its `fn` line to the first line that closes it at its indentation).
fn long_functions(dir: &Path, most: usize) -> Vec<(String, String, usize)> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let mut long = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.trim_start();
            let indent = &line[..line.len() - code.len()];
            let code = ["pub(crate) ", "pub(super) ", "pub "].iter().find_map(|p| code.strip_prefix(p)).unwrap_or(code);
            let Some(rest) = code.strip_prefix("fn ") else { continue };
            if line.trim_end().ends_with(';') || line.trim_end().ends_with('}') {
                continue;
            }
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let close = format!("{indent}}}");
            let end = lines[i..].iter().position(|l| *l == close).map_or(lines.len(), |n| i + n);
            if end + 1 - i > most {
                long.push((f.display().to_string(), name, end + 1 - i));
            }
        }
    }
    long
}

/// The pipeline reads as steps: no function in `src/pipeline/` is over 150 lines.
#[test]
fn no_pipeline_function_is_over_150_lines() {
    let long = long_functions(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/pipeline"), 150);
    assert!(long.is_empty(), "split by step: {long:?}");
}

/// Files by concern: no file in `src/` is over 1,000 lines.
#[test]
fn no_source_file_is_over_1000_lines() {
    let mut files = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    let long: Vec<(String, usize)> = files
        .iter()
        .map(|f| (f.display().to_string(), std::fs::read_to_string(f).unwrap().lines().count()))
        .filter(|(_, n)| *n > 1000)
        .collect();
    assert!(long.is_empty(), "split by concern: {long:?}");
}

/// One list of output formats: `encode::Format`, defined once, and no other `enum Format`
/// anywhere in the crate.
#[test]
fn encode_has_the_one_output_format_enum() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let defining: Vec<String> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().contains("pub enum Format {"))
        .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    assert_eq!(defining, ["encode/mod.rs"], "the output formats are listed once, in encode");
}
