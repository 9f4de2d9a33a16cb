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
/// by how a front end spells it: the command line writes it out after the message, in its
/// flags' words (so the message reads on with it: a hint's text starts where the context ends).
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

    /// This error with its hint written out at the end of its context in `words` (a front
    /// end's words for the setting: its flags), and no hint left: for messages that are
    /// passed on as text.
    pub fn with_hint_written(mut self, words: impl FnOnce(&Hint) -> String) -> Self {
        if let Some(h) = self.hint.take() {
            self.context.push_str(&words(&h));
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
