//! Shared by the commands: opening an input (a path or `-`, gzip undone) and telling what it is
//! by its first bytes, then decoding it into the model: the heapprofd dumps a selection keeps,
//! the Java heap graphs a selection keeps, or any input as profiles for `merge`, `diff` and
//! `top` ([`load_input`], [`merge_inputs`]).
//!
//! One file per concern:
//!
//! | file | what it does |
//! |---|---|
//! | `open` | opens an input and tells what it is: the table of input kinds and the commands that read them, the typed `Opened` value, the errors for an input a command does not read |
//! | `trace` | reads the heapprofd dumps of a Perfetto trace that a selection keeps, after a pre-pass for its maps and symbols |
//! | `heap` | reads the Java heap dumps of a trace (heap graphs) or of an HPROF file that a selection keeps |
//! | `ddm` | how DDM allocation records become a profile, and their deobfuscation |
//! | `profiles` | any input as profiles for `merge`, `diff` and `top`, and the merge of many inputs |
//! | `sources` | where symbols and ProGuard/R8 maps come from |

mod ddm;
mod heap;
mod open;
mod profiles;
mod sources;
mod trace;

pub use crate::decode::hprof::ObjectSize;
pub(crate) use ddm::deobfuscate_capture;
pub use ddm::{DdmChoices, EntryOrder};
pub(crate) use heap::{for_selected_heap_graphs, for_selected_hprof_dumps};
pub use open::{Command, InputType, Wanted, is_ddm_capture, refuse_pprof};
pub(crate) use open::{HeapSource, Opened, heap_source, is_alloc_file, open_input};
pub use profiles::{
    InputInfo, LoadOptions, LoadedInput, load_input, merge_inputs, merge_options, pick_sample_type, pprof_warnings,
};
pub use sources::{DiscoveredMaps, ProguardMaps, SymbolSources, discover_mapping_files};
pub use trace::decode_options;
pub(crate) use trace::{HeapprofdSelection, prepare_trace, select_heapprofd, select_heapprofd_dumps, symbolize_hook};
