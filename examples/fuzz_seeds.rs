//! Writes the generated seeds of a fuzz target into a directory, for `fuzz/seed.sh`:
//!
//! ```sh
//! cargo run --release --example fuzz_seeds -- hprof_reader DIR
//! ```
//!
//! `hprof_reader` is the only target with generated seeds (there are no hprof fixtures; see
//! `hprof_seeds` in `fuzz/src/lib.rs`, which `tests/it/fuzz_replay.rs` replays too).

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../fuzz/src/lib.rs"]
mod drivers;

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, dir] = args.as_slice() else {
        eprintln!("usage: fuzz_seeds TARGET DIR");
        std::process::exit(2);
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let seeds = match target.as_str() {
        "hprof_reader" => drivers::hprof_seeds(&root),
        other => {
            eprintln!("fuzz_seeds: {other} has no generated seeds");
            std::process::exit(2);
        }
    };
    std::fs::create_dir_all(dir).expect("seed directory");
    for (name, bytes) in &seeds {
        std::fs::write(PathBuf::from(dir).join(name), bytes).expect("seed file");
    }
    eprintln!("fuzz_seeds: {} {target} seeds in {dir}", seeds.len());
}
