//! Writes a synthetic heapprofd trace, as heapprofd writes them, for benchmarks and tests
//! (formerly `heapconv synth`; same flags, same bytes):
//!
//! ```sh
//! cargo run --release -p heapconv-testdata --bin synth -- -o t.pftrace --callstacks 300000 --depth 30
//! ```
//!
//! Exit codes: 0 written; 1 the file could not be written; 2 bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
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
    /// Distinct callstacks.
    #[arg(long, default_value_t = 1000)]
    callstacks: usize,
    /// Typical stack depth.
    #[arg(long, default_value_t = 30)]
    depth: usize,
    /// Dumps per process.
    #[arg(long, default_value_t = 4)]
    dumps: usize,
    /// Processes.
    #[arg(long, default_value_t = 2)]
    processes: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Wrap packets in compressed_packets bundles.
    #[arg(long)]
    compress: bool,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let opts = SynthOptions {
        callstacks: a.callstacks,
        depth: a.depth,
        dumps: a.dumps,
        processes: a.processes,
        seed: a.seed,
        compress: a.compress,
        ..Default::default()
    };
    let mut buf = Vec::new();
    let written = write_synthetic_trace(&opts, &mut buf)
        .map_err(|e| heapconv::Error::io("generating the synthetic trace", e))
        .and_then(|summary| heapconv::output::write_atomic(&a.output, &buf, &[]).map(|()| summary));
    match written {
        Ok(summary) => {
            if !a.quiet {
                eprintln!(
                    "wrote {} ({} bytes, {} packets, {} samples)",
                    a.output.display(),
                    summary.bytes,
                    summary.packets,
                    summary.samples
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
