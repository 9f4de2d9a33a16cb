//! The one error type of the library.
//!
//! Every error carries a [`ErrorKind`], a context string that says where it happened (file,
//! byte offset, record) and, where there is one, the underlying cause.

use std::fmt;

/// What went wrong, broadly. The binary maps kinds to exit codes.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Reading or writing a file failed.
    Io,
    /// The input ends in the middle of a record.
    Truncated,
    /// The input is not what its format says (bad varint, bad wire type, bad index…).
    Malformed,
    /// The input is well-formed but uses something heapconv does not support.
    Unsupported,
    /// A limit that protects memory or time was hit (expansion cap, nesting…).
    LimitExceeded,
    /// The request itself makes no sense (bad option value, nothing to convert…).
    Usage,
    /// The input holds no profile of the kind asked for.
    NoData,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ErrorKind::Io => "I/O error",
            ErrorKind::Truncated => "truncated input",
            ErrorKind::Malformed => "malformed input",
            ErrorKind::Unsupported => "unsupported input",
            ErrorKind::LimitExceeded => "limit exceeded",
            ErrorKind::Usage => "invalid request",
            ErrorKind::NoData => "no profile data",
        };
        f.write_str(s)
    }
}

/// A setting the caller can change to get past an error, named by what it means rather than
/// by how a front end spells it. The command line says it in its flags' words: after the
/// message (the first four, whose text starts where the context ends), or as the whole message
/// (the others, which carry what the message needs).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hint {
    /// The input is larger than the pprof size limit
    /// ([`PprofDecodeOptions::max_bytes`](crate::decode::pprof::PprofDecodeOptions::max_bytes));
    /// a larger limit reads it.
    PprofSizeLimit,
    /// The inputs of a merge have different sample types; choosing types every input has
    /// ([`MergeOptions::sample_types`](crate::merge::MergeOptions::sample_types): names, or
    /// meanings: `total-count`, `total-size`, `unreleased-count`, `unreleased-size`) merges
    /// them.
    SampleTypes,
    /// Several outputs match where one output was asked for: choosing with the settings `by`
    /// keeps one; when `or_directory`, writing into a directory writes them all. `matched`
    /// names what matched, one line each (the message ends with it).
    ChooseOne {
        /// The settings that choose.
        by: &'static [Selector],
        /// Whether a directory as the destination writes every output.
        or_directory: bool,
        /// What matched, one line each.
        matched: String,
    },
    /// No dump of the input matches the settings `by` (what the input holds can be listed:
    /// `pipeline::inspect`).
    NoMatch {
        /// The settings that chose.
        by: &'static [Selector],
    },
    /// A sample type *name* was asked for an input that is not a pprof profile (other inputs
    /// show a value kind, such as unreleased size).
    SampleTypeIsForPprof {
        /// The input's name.
        input: String,
    },
    /// Stack filters were asked with the JSON report of a Java heap, which lists classes and
    /// retainers rather than stacks (its dominator tree in a profile format can be filtered).
    FiltersNotForHeapReport {
        /// The input's name.
        input: String,
    },
    /// A selection of processes, heap or dump was asked for a DDM capture, which has one
    /// profile.
    SelectionNotForDdm,
    /// A growth limit in bytes was asked for a comparison whose sample type is not in bytes
    /// (a percentage works for any type).
    GrowthSizeNeedsBytes {
        /// The sample type compared.
        sample_type: String,
        /// Its unit.
        unit: String,
    },
    /// A dump was selected for a view across dumps, which chooses its dumps itself (a delta
    /// by its times).
    ViewChoosesItsDumps {
        /// The view's name (`peak`, `delta`, `leaks`).
        view: &'static str,
    },
    /// A view across dumps makes several outputs where one was asked: selecting one process
    /// and heap (and, when `by_times`, the pair of dumps of a delta) keeps one; writing into a
    /// directory writes them all.
    ViewOutputs {
        /// The view's name (`peak`, `delta`, `leaks`).
        view: &'static str,
        /// How many outputs it makes.
        outputs: usize,
        /// Whether the pair of dumps of a delta can be chosen too.
        by_times: bool,
        /// The outputs, one line each.
        matched: String,
    },
    /// The leaks view was asked to compare fewer than 2 dumps.
    LeakDumpsBelowTwo {
        /// The number asked.
        dumps: usize,
    },
    /// The older end of a delta is after its newer end.
    FromAfterUntil {
        /// The older end's time.
        from: i64,
        /// The newer end's time.
        until: i64,
    },
}

/// A setting that chooses what a command takes from an input (the fields of
/// `pipeline::Selection`, and the dump timestamps of `profile` and `hprof`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    /// The processes.
    Pid,
    /// The heap.
    Heap,
    /// Which dump of each (pid, heap), or of a file holding several heap dumps.
    Dump,
    /// The dumps' timestamps.
    Timestamps,
}

/// The library's error: a kind, a human-readable context, an optional source and an optional
/// [`Hint`] (not part of the message).
#[derive(Debug, thiserror::Error)]
#[error("{kind}: {context}")]
pub struct Error {
    kind: ErrorKind,
    context: String,
    hint: Option<Hint>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// A new error of `kind`, saying where and what in `context`.
    pub fn new(kind: ErrorKind, context: impl Into<String>) -> Self {
        Error { kind, context: context.into(), hint: None, source: None }
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Attaches the setting that would get past this error.
    pub fn with_hint(mut self, hint: Hint) -> Self {
        self.hint = Some(hint);
        self
    }

    /// The setting that would get past this error, if there is one.
    pub fn hint(&self) -> Option<&Hint> {
        self.hint.as_ref()
    }

    /// This error with its hint written into its context by `words` (a front end's words for
    /// the setting, its flags: given the hint and the context, the new context), and no hint
    /// left: for messages that are passed on as text.
    pub fn with_hint_written(mut self, words: impl FnOnce(&Hint, &str) -> String) -> Self {
        if let Some(h) = self.hint.take() {
            self.context = words(&h, &self.context);
        }
        self
    }

    /// An I/O error while doing `what` (for example "reading trace.pftrace").
    ///
    /// Running out of memory while reading (a buffer that could not grow: a decompression
    /// bomb, or an input larger than the memory) is [`ErrorKind::LimitExceeded`] and says so,
    /// rather than an I/O error.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::OutOfMemory {
            let what = what.into();
            return Error::new(
                ErrorKind::LimitExceeded,
                format!(
                    "{what}: ran out of memory (the input expands to more than the machine's memory or the \
                     process's address-space limit allow)"
                ),
            )
            .with_source(source);
        }
        Error::new(ErrorKind::Io, what).with_source(source)
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Where and what, without the kind.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// Prefixes the context with more context ("in trace.pftrace: …").
    pub fn within(mut self, outer: impl fmt::Display) -> Self {
        self.context = format!("{outer}: {}", self.context);
        self
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
