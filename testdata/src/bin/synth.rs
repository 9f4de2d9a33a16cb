//! Writes a synthetic heapprofd trace, as heapprofd writes them, for benchmarks and tests
//! (formerly `heapconv synth`; same flags, same bytes):
//!
//! ```sh
//! cargo run --release -p heapconv-testdata --bin synth -- -o t.pftrace --callstacks 300000 --depth 30
//! ```
//!
//! The frame family of issue #15 (heapprofd-like traces with many distinct frames): `--shape
//! issue15` is the issue's trace (2 processes × 4 dumps, 300k callstacks of ~29 frames, ~5.5M
//! stack-tree nodes, ~200k frames, ~160k function names, 120 mappings); any flag given with it
//! moves one axis:
//!
//! ```sh
//! synth -o base.pftrace --shape issue15
//! synth -o f1m.pftrace --shape issue15 --frames 1000000
//! synth -o custom.pftrace --frames 60000 --callstacks 100000 --mappings 10 --names shared
//! ```
//!
//! Exit codes: 0 written; 1 the file could not be written; 2 bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use heapconv_testdata::heapprofd::{SynthOptions, write_synthetic_trace};

/// Write a synthetic heapprofd trace (for benchmarks and tests), as heapprofd writes them.
#[derive(Parser, Debug)]
#[command(name = "synth")]
struct Args {
    /// Print more (accepted for compatibility; nothing more is printed).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
    /// Output file.
    #[arg(short, long)]
    output: PathBuf,
    /// A preset shape; the other flags given override its values.
    #[arg(long, value_enum)]
    shape: Option<Shape>,
    /// Distinct callstacks [default: 1000; issue15: 300000].
    #[arg(long)]
    callstacks: Option<usize>,
    /// Typical stack depth [default: 30; issue15: 29].
    #[arg(long)]
    depth: Option<usize>,
    /// Dumps per process [default: 4].
    #[arg(long)]
    dumps: Option<usize>,
    /// Processes [default: 2].
    #[arg(long)]
    processes: Option<usize>,
    /// Distinct frames to aim for: selects the frame-family generator (issue #15) [issue15: 200000].
    #[arg(long)]
    frames: Option<usize>,
    /// Application functions [default: 2000; with --frames: 84% of the frames].
    #[arg(long)]
    functions: Option<usize>,
    /// Mappings in all, libc.so and libc++.so included (at least 3) [default: 22; issue15: 120].
    #[arg(long)]
    mappings: Option<usize>,
    /// Function names (with --frames): one per function, or shared by several functions.
    #[arg(long, value_enum)]
    names: Option<Names>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Wrap packets in compressed_packets bundles.
    #[arg(long)]
    compress: bool,
}

/// Preset shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Shape {
    /// Issue #15's trace: 300k callstacks of ~29 frames, 200k frames, 120 mappings, 2 × 4 dumps.
    Issue15,
}

/// How function names are given out by the frame-family generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Names {
    /// One name per function.
    Unique,
    /// A pool of a quarter as many names as functions (the same name in several libraries).
    Shared,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let d = SynthOptions::default();
    let issue15 = a.shape == Some(Shape::Issue15);
    let frames = a.frames.or(issue15.then_some(200_000));
    let functions = a.functions.unwrap_or(match frames {
        Some(fr) => fr / 25 * 21,
        None => d.functions,
    });
    let mappings = a.mappings.unwrap_or(if issue15 { 120 } else { d.mappings + 2 });
    let opts = SynthOptions {
        callstacks: a.callstacks.unwrap_or(if issue15 { 300_000 } else { d.callstacks }),
        depth: a.depth.unwrap_or(if issue15 { 29 } else { d.depth }),
        dumps: a.dumps.unwrap_or(d.dumps),
        processes: a.processes.unwrap_or(d.processes),
        seed: a.seed,
        compress: a.compress,
        functions,
        mappings: mappings.saturating_sub(2).max(1),
        frames,
        shared_names: a.names == Some(Names::Shared),
        ..d
    };
    let mut buf = Vec::new();
    let written = write_synthetic_trace(&opts, &mut buf)
        .map_err(|e| heapconv::Error::io("generating the synthetic trace", e))
        .and_then(|summary| heapconv::output::write_atomic(&a.output, &buf, &[]).map(|()| summary));
    match written {
        Ok(summary) => {
            if !a.quiet {
                eprintln!(
                    "wrote {} ({} bytes, {} packets, {} samples, {} frames, {} function names, {} mappings, {} stack-tree nodes)",
                    a.output.display(),
                    summary.bytes,
                    summary.packets,
                    summary.samples,
                    summary.frames,
                    summary.function_names,
                    summary.mappings,
                    summary.stack_nodes
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("synth: error: {e}");
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                eprintln!("  caused by: {s}");
                src = s.source();
            }
            ExitCode::from(1)
        }
    }
}
