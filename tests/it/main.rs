//! heapconv's integration tests, built as one test binary (one link, one process start).
//! Each module is one area; `common` holds the shared helpers and oracles.

mod architecture;
mod batch;
mod cli;
mod common;
mod ddm;
mod deobfuscate;
mod deobfuscate_rules;
mod filters;
mod fixtures;
mod flame_lists;
mod fuzz_replay;
mod golden;
mod heap_analysis;
mod heap_graph;
mod hostile;
mod hprof;
mod html;
mod merge;
mod parity;
mod pprof_real;
mod profile_memory;
mod small;
mod symbolize;
mod traceconv_parity;
mod viewer_formats;
mod views;
