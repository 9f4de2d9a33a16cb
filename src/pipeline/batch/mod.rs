//! The batch front end: one command over many inputs, as CI pipelines run it.
//!
//! * **Listing** ([`list_inputs`]): inputs are paths, directories (walked recursively; a file
//!   is taken when its *content* is a kind the command reads, see [`Wanted`] and
//!   [`crate::decode::sniff_file`]), glob patterns expanded here (`*`, `?`, `[a-z]`, `[!a]` matched by `globset`, and `**` for any
//!   number of directories), and lists of those read from files (`--inputs-from`). Every input
//!   gets a path relative to its *root* (the directory given, a pattern's leading directories
//!   without wildcards, or a plain file's own directory). The list is deduplicated (the same
//!   file reached twice counts once) and sorted by that relative path, so it does not depend
//!   on the order of the arguments.
//! * **Naming** ([`assign_keys`]): each input gets a key, its relative path with trace
//!   extensions taken off the file name (`run1/app.pftrace.gz` → `run1/app`); outputs go to
//!   `OUT/<key>.<ext>` (one file per input) or `OUT/<key>/` (one file per dump, named as the
//!   single-input command names them). Keys that collide (compared without case, for
//!   case-insensitive file systems) keep their extensions (`app.pftrace`, `app.pftrace.gz`),
//!   then get `~` and 8 hex digits of a hash of the whole path. Keys depend only on the full
//!   input list, never on a shard or on the number of threads.
//! * **Sharding** ([`Shard`]): input `i` belongs to shard `1 + h(rel_i) mod N`, `h` a fixed
//!   64-bit hash (FNV-1a, then SplitMix64's finalizer) of the relative path. Every input is in
//!   exactly one shard, an input's shard does not change when others are added or removed,
//!   and it is the same on every machine that sees the same tree.
//! * **Running** ([`run_batch`]): inputs are converted in parallel on rayon's threads; a
//!   failing input (or one that panics) is recorded and the others go on. Results come back
//!   in list order, so the summary ([`BatchSummary`]) does not depend on scheduling; only its
//!   `wall_clock` fields do, and they can be left out.
//!
//! One file per step: `list` (listing), `shard` (naming and sharding), `run` (running, and
//! what a run of one input returns), `summary` (the summary and what it says of each input).

mod list;
mod run;
mod shard;
mod summary;

pub use super::load::Wanted;
pub use list::{BatchInput, InputList, ListOptions, expand_args, is_pattern, list_inputs, read_list};
pub use run::{Done, RunOptions, error_text, file_for, report_warnings, report_warnings_of, run_batch};
pub use shard::{Shard, assign_keys};
pub use summary::{
    BatchClock, BatchSummary, Coverage, Gate, InputClock, InputResult, OutputFile, ProfileTotals, Status,
};

#[cfg(test)]
mod tests;
