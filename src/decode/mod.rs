//! The decode stage: bytes in, model out.
//!
//! [`InputKind`] is the one list of what an input can be, each kind with its sniffing rule
//! ([`InputKind::sniffs`], tried in the order of [`InputKind::ALL`] by [`sniff`]); a decoder per
//! format turns its bytes into the model.

pub mod ddm_alloc_records;
pub mod hprof;
pub mod input;
pub mod legacy_heap;
pub mod perfetto;
pub mod pprof;
pub mod wire;

pub use input::{Input, sniff_file};

/// What an input is, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// Nothing at all.
    Empty,
    /// gzip (the kind of what it holds needs its decompressed bytes).
    Gzip,
    /// zstd.
    Zstd,
    /// A Perfetto trace (starts with a `packet` field).
    PerfettoTrace,
    /// A DDM allocation-record blob (an `.alloc` file).
    DdmAllocBlob,
    /// A DDM chunk (`REAL`, or `FAIL`).
    DdmChunk,
    /// JDWP packets (a DDM reply, possibly after the handshake).
    Jdwp,
    /// An HPROF heap dump (`JAVA PROFILE 1.0…`).
    Hprof,
    /// A pprof profile (`profile.proto`).
    Pprof,
    /// A legacy text heap profile (gperftools, old Go: `heap profile: …`), read as the pprof
    /// profile `go tool pprof` makes of it.
    LegacyHeap,
    /// None of these.
    Unknown,
}

impl InputKind {
    /// Every kind, in the order [`sniff`] tries their rules: the first whose rule matches the
    /// head is the input's kind (`Unknown`, last, matches anything).
    pub const ALL: [InputKind; 11] = [
        InputKind::Empty,
        InputKind::Gzip,
        InputKind::Zstd,
        InputKind::Hprof,
        InputKind::LegacyHeap,
        InputKind::Pprof,
        InputKind::PerfettoTrace,
        InputKind::DdmAllocBlob,
        InputKind::DdmChunk,
        InputKind::Jdwp,
        InputKind::Unknown,
    ];

    /// A short name for an input kind, as summaries write it.
    pub fn name(self) -> &'static str {
        match self {
            InputKind::PerfettoTrace => "perfetto-trace",
            InputKind::DdmAllocBlob => "ddm-alloc-blob",
            InputKind::DdmChunk => "ddm-chunk",
            InputKind::Jdwp => "ddm-jdwp",
            InputKind::Hprof => "hprof",
            InputKind::Pprof => "pprof",
            InputKind::LegacyHeap => "legacy-heap-profile",
            InputKind::Gzip => "gzip",
            InputKind::Zstd => "zstd",
            InputKind::Empty => "empty",
            InputKind::Unknown => "unknown",
        }
    }

    /// The kind's sniffing rule: true when `head`, an input's first bytes (16 or more), may be
    /// of this kind. Rules are tried in the order of [`InputKind::ALL`], so a rule may take for
    /// granted that the rules before it did not match.
    pub fn sniffs(self, head: &[u8]) -> bool {
        use ddm_alloc_records::{DdmKind, sniff_ddm};
        match self {
            InputKind::Empty => head.is_empty(),
            InputKind::Gzip => head.starts_with(&[0x1f, 0x8b]),
            InputKind::Zstd => head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]),
            InputKind::Hprof => head.starts_with(b"JAVA PROFILE 1.0"),
            InputKind::LegacyHeap => legacy_heap::looks_like_legacy_heap(head),
            // A pprof profile's fields are numbered 1 to 15; a trace holds only field 1. So: a
            // valid run of Profile fields with one other than 1 is a profile, whatever its first
            // field holds; a short head of field 1s only is a profile when the first is shaped
            // like a ValueType.
            InputKind::Pprof => pprof::looks_like_pprof(head),
            // A trace is a sequence of `packet = 1` fields, length-delimited: tag byte 0x0a. No
            // DDM framing starts with it (a blob's header is at least 15 bytes long).
            InputKind::PerfettoTrace => head.first() == Some(&0x0a),
            InputKind::DdmAllocBlob => sniff_ddm(head) == Some(DdmKind::Blob),
            InputKind::DdmChunk => sniff_ddm(head) == Some(DdmKind::Chunk),
            InputKind::Jdwp => sniff_ddm(head) == Some(DdmKind::Jdwp),
            InputKind::Unknown => true,
        }
    }

    /// True for the inputs read as pprof profiles: pprof, and legacy text heap profiles.
    pub fn is_pprof(self) -> bool {
        matches!(self, InputKind::Pprof | InputKind::LegacyHeap)
    }

    /// True for the framings of DDM allocation records.
    pub fn is_ddm(self) -> bool {
        matches!(self, InputKind::DdmAllocBlob | InputKind::DdmChunk | InputKind::Jdwp)
    }
}

/// Tells the input kinds heapconv knows apart by their first bytes (give it 16 or more): the
/// first of [`InputKind::ALL`] whose rule ([`InputKind::sniffs`]) matches.
pub fn sniff(head: &[u8]) -> InputKind {
    InputKind::ALL.into_iter().find(|k| k.sniffs(head)).unwrap_or(InputKind::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_apart() {
        assert_eq!(sniff(b""), InputKind::Empty);
        assert_eq!(sniff(&[0x1f, 0x8b, 8, 0]), InputKind::Gzip);
        assert_eq!(sniff(&[0x28, 0xb5, 0x2f, 0xfd]), InputKind::Zstd);
        assert_eq!(sniff(b"JAVA PROFILE 1.0.3\0"), InputKind::Hprof);
        assert_eq!(sniff(&[0x0a, 0x10, 0x08]), InputKind::PerfettoTrace);
        assert_eq!(sniff(&[0x0f, 0x09, 0x08, 0, 0, 0, 0, 0, 0x0f, 0, 0, 0, 0, 0, 0]), InputKind::DdmAllocBlob);
        assert_eq!(sniff(b"REAL\0\0\0\0"), InputKind::DdmChunk);
        assert_eq!(sniff(b"JDWP-Handshake"), InputKind::Jdwp);
        assert_eq!(sniff(b"this is not a trace\n"), InputKind::Unknown);
        assert_eq!(sniff(&[0x5a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x60, 0x01]), InputKind::Pprof);
        // An empty first sample type does not make a profile a trace.
        assert_eq!(sniff(&[0x0a, 0x00, 0x12, 0x06, 0x0a, 0x01, 0x01, 0x12, 0x01, 0x01, 0x32, 0x00]), InputKind::Pprof);
        assert_eq!(sniff(&[0x0a, 0x00, 0x0a, 0x03, 0x40, 0x01, 0x50]), InputKind::PerfettoTrace);
        assert!(InputKind::Jdwp.is_ddm() && !InputKind::Hprof.is_ddm());
    }

    /// An example of each kind: a fixture of `tests/data` where one exists, else made here.
    fn example(kind: InputKind) -> Vec<u8> {
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let file = |rel: &str| std::fs::read(data.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let gunzip = |bytes: Vec<u8>| {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(bytes.as_slice()), &mut out)
                .expect("a gzip fixture");
            out
        };
        match kind {
            InputKind::Empty => Vec::new(),
            InputKind::Gzip => file("heaps_and_procs.pftrace.gz"),
            // No zstd fixture: the frame magic and a frame header.
            InputKind::Zstd => vec![0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00, 0x01, 0x00],
            // The HPROF fixtures are written by tests; a header: format, id size, timestamp.
            InputKind::Hprof => [&b"JAVA PROFILE 1.0.2\0"[..], &[0, 0, 0, 4], &[0; 8]].concat(),
            InputKind::LegacyHeap => file("legacy-heap/gperftools.heap"),
            InputKind::Pprof => gunzip(file("pprof-odd/string-labels.pb.gz")),
            InputKind::PerfettoTrace => file("heaps_and_procs.pftrace"),
            InputKind::DdmAllocBlob => file("ddm/art.alloc"),
            InputKind::DdmChunk => file("ddm/art.real"),
            InputKind::Jdwp => file("ddm/art.jdwp"),
            InputKind::Unknown => file("README.md"),
        }
    }

    #[test]
    fn each_rule_recognises_an_example_of_its_kind() {
        for kind in InputKind::ALL {
            let bytes = example(kind);
            let head = &bytes[..bytes.len().min(64)];
            assert!(kind.sniffs(head), "{kind:?}: its rule does not match its example");
            assert_eq!(sniff(head), kind, "{kind:?}: an earlier rule takes its example");
        }
    }

    #[test]
    fn every_kind_is_in_the_table_once_with_a_name_of_its_own() {
        let mut names: Vec<&str> = InputKind::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), InputKind::ALL.len());
        assert_eq!(InputKind::ALL.last(), Some(&InputKind::Unknown), "Unknown matches anything: it goes last");
    }
}
