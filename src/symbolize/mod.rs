//! The symbolize stage: native frames (mapping + `rel_pc`) get function names, source files,
//! lines and inline chains from the DWARF of files found in symbol directories, in pure Rust
//! (gimli/addr2line over memory-mapped files), with no llvm-symbolizer.
//!
//! Each unique address of a file is looked up once; files are symbolized in parallel, each
//! opened once per run, lazily. A missing symbol is not an error: the frame stays as it
//! was and the per-mapping report says why (no build id, no file found, build-id mismatch, no
//! debug info, address outside any function).

pub mod elf;
pub mod java_frames;
pub mod locate;
pub mod proguard;

mod attribution;
mod lookup;
mod symbolizer;

pub use attribution::{Attribution, attribute, attribute_lists};
use lookup::*;
pub use lookup::{ResolvedLine, symbolize_addresses};
pub use symbolizer::Symbolizer;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

use rayon::prelude::*;
use serde::Serialize;

use crate::model::{FrameId, Line, MappingId, Tables};
use locate::{Located, SymbolIndex, hex};

/// Options of the symbolize stage.
#[derive(Debug, Clone, Default)]
pub struct SymbolizeOptions {
    /// Directories searched recursively for binaries and debug files. Default: none.
    pub symbol_dirs: Vec<PathBuf>,
    /// Use a file found by path even when its build id differs (or the trace has none).
    /// Default: false.
    pub ignore_build_id: bool,
    /// Look files up only by path, as traceconv's `PERFETTO_SYMBOLIZER_MODE=find` does, not
    /// in the build-id index. Default: false.
    pub find_only: bool,
}

/// Why a mapping's frames are (or are not) symbolized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MappingOutcome {
    /// Symbolized from DWARF.
    Symbolized,
    /// Only function names, from the symbol table (no DWARF found).
    SymbolTableOnly,
    /// The trace records no build id for the mapping (and `ignore_build_id` is off).
    NoBuildId,
    /// No file with this build id in the symbol directories.
    NoFileFound,
    /// Files were found at the mapping's path, but their build ids differ.
    BuildIdMismatch,
    /// The file has neither DWARF nor a symbol table.
    NoDebugInfo,
    /// The file was found but no frame's address lies inside a known function.
    AddressOutsideFunctions,
    /// Every frame already had symbols (from ModuleSymbols in the trace).
    AlreadySymbolized,
    /// No symbol directory was given: only the names already in the input count (see
    /// [`input_coverage`]).
    NoSymbolDirectory,
}

/// The report for one mapping.
#[derive(Debug, Clone, Serialize)]
pub struct MappingReport {
    /// Mapping path as the trace names it.
    pub path: String,
    /// Build id, hex.
    pub build_id: String,
    /// Frames in the mapping.
    pub frames: u64,
    /// Frames symbolized.
    pub symbolized: u64,
    /// MappingOutcome.
    pub outcome: MappingOutcome,
    /// The file whose symbols were used.
    pub file: Option<String>,
    /// Paths looked at.
    pub tried: Vec<String>,
    /// Files rejected because their build id (or debuglink CRC) differs.
    pub mismatched: Vec<String>,
    /// Bytes (unreleased, or allocated for heaps without frees) of the stacks that pass through
    /// this mapping, in the profiles attributed (see [`SymbolizeReport::attribute`]).
    pub bytes: i64,
    #[serde(skip)]
    mapping: u32,
}

/// The symbolization report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SymbolizeReport {
    /// Per mapping, in mapping order.
    pub mappings: Vec<MappingReport>,
    /// Native frames seen.
    pub frames: u64,
    /// Native frames symbolized.
    pub frames_symbolized: u64,
    /// ELF files in the build-id index.
    pub indexed_files: usize,
    /// Problems while indexing the symbol directories.
    pub problems: Vec<String>,
    /// Bytes of the attributed profiles.
    pub bytes: i64,
    /// Bytes of stacks whose every frame in a mapping with a build id has symbols.
    pub bytes_symbolized: i64,
    /// Names from the input count as symbols (no symbol directory was given).
    #[serde(skip)]
    names_count: bool,
}

/// True when a native frame has a symbol: source lines, or a function name the input gave.
fn frame_has_symbol(f: &crate::model::Frame) -> bool {
    !f.lines.is_empty() || f.name != crate::model::StringId(0)
}

/// Symbolization coverage of the frames the input already named, without looking anything
/// up: every frame with a mapping (a native frame) counts, and it counts as symbolized when it
/// has source lines or a function name from the input (interned by heapprofd, a pprof
/// `Function`, ModuleSymbols). Mappings are reported with [`MappingOutcome::AlreadySymbolized`]
/// when all their frames have symbols, else [`MappingOutcome::NoSymbolDirectory`]. This is what
/// `--min-symbolized` gates on when no symbol directory is given, and what it gates on for
/// pprof inputs (which are never symbolized again).
/// `profiles` (which use `tables`) give the byte figures.
pub fn input_coverage(tables: &Tables, profiles: &[&crate::model::Profile]) -> SymbolizeReport {
    let mut s = Symbolizer {
        opts: SymbolizeOptions::default(),
        index: SymbolIndex::build(&[]),
        mappings: BTreeMap::new(),
        open: BTreeMap::new(),
        background: Vec::new(),
        prefetch_located: (0, Vec::new()),
        prefetch_files: Vec::new(),
    };
    s.count_only(tables, 0..tables.frames().len());
    let mut r = s.report(tables);
    for p in profiles {
        r.attribute(&attribute(p));
    }
    r
}

impl SymbolizeReport {
    /// Adds the bytes of an [`Attribution`] to the report (typically of the last dump of each
    /// process and heap).
    pub fn attribute(&mut self, a: &Attribution) {
        self.bytes += a.total;
        self.bytes_symbolized += if self.names_count { a.named } else { a.symbolized };
        for m in &mut self.mappings {
            m.bytes += a.per_mapping.get(&m.mapping).copied().unwrap_or(0);
        }
    }

    /// True when the report counts the symbols the input already had, with no symbol
    /// directory to look in (see [`input_coverage`]).
    pub fn names_only(&self) -> bool {
        self.names_count
    }

    /// Share of bytes on fully symbolized stacks, in percent (100 when there are none).
    pub fn byte_percent(&self) -> f64 {
        if self.bytes == 0 { 100.0 } else { 100.0 * self.bytes_symbolized as f64 / self.bytes as f64 }
    }
}

impl SymbolizeReport {
    /// Share of frames symbolized, in percent (100 when there are none).
    pub fn frame_percent(&self) -> f64 {
        if self.frames == 0 { 100.0 } else { 100.0 * self.frames_symbolized as f64 / self.frames as f64 }
    }
}
