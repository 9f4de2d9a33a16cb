//! Runs the stages in order for the command-line program: decode -> (symbolize, merge) ->
//! encode -> write. Each command is a plain struct of options and one function in a file of
//! its own, so the library can run exactly what the binary runs:
//!
//! | command | file |
//! |---|---|
//! | `profile` | [`profile`] |
//! | `convert` | [`convert`], and [`views`] for `--view peak\|delta\|leaks` |
//! | `timeline` | [`timeline`] |
//! | `merge`, `diff`, `top` | [`merge`], [`diff`], [`top`] |
//! | `hprof`, `hprof-conv` | [`hprof`], [`hprof_conv`] |
//! | `inspect`, `symbolize` | [`inspect`], [`symbolize`] |
//!
//! The command files do not import each other. They share a small layer: [`select`] (which
//! dumps, which destination, how outputs are named), [`load`] (the table of input types and the
//! commands that read them, opening an input into a typed value and decoding it into the model), [`reports`] (reports made of decoded inputs),
//! [`outcome`] (how a run ends: one precedence of exit codes for single runs and batches) and
//! [`batch`] (one command over many inputs: listing, naming, sharding, running, the summary;
//! the per-input work is given to it by the caller, each command file offering its own).

pub mod batch;
pub mod convert;
pub mod deobfuscate;
pub mod diff;
pub mod hprof;
pub mod hprof_conv;
pub mod inspect;
pub mod load;
pub mod merge;
pub mod outcome;
pub mod profile;
pub mod reports;
pub mod select;
pub mod symbolize;
pub mod timeline;
pub mod top;
pub mod views;

pub use crate::analysis::filter::{FilterOptions, TagFilter};
/// How a trace is decoded: the options every command that reads traces embeds.
pub use crate::decode::perfetto::DecodeOptions;
/// The output formats of profiles: the encode stage's one list, which every command that
/// writes profiles takes as it is (a new format there is a new format here).
pub use crate::encode::Format;
pub use outcome::RunOutcome;
pub use select::{Destination, DumpFilter, DumpSelect, Selection};
