//! The decode stage: bytes in, model out.

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
            _ => "unknown",
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

/// Tells the input kinds heapconv knows apart by their first bytes (give it 16 or more).
pub fn sniff(head: &[u8]) -> InputKind {
    use ddm_alloc_records::{DdmKind, sniff_ddm};
    if head.is_empty() {
        return InputKind::Empty;
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return InputKind::Gzip;
    }
    if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return InputKind::Zstd;
    }
    if head.starts_with(b"JAVA PROFILE 1.0") {
        return InputKind::Hprof;
    }
    if legacy_heap::looks_like_legacy_heap(head) {
        return InputKind::LegacyHeap;
    }
    // A pprof profile's fields are numbered 1 to 15; a trace holds only field 1. So: a valid
    // run of Profile fields with one other than 1 is a profile, whatever its first field holds;
    // a short head of field 1s only is a profile when the first is shaped like a ValueType.
    if pprof::looks_like_pprof(head) {
        return InputKind::Pprof;
    }
    // A trace is a sequence of `packet = 1` fields, length-delimited: tag byte 0x0a. No DDM
    // framing starts with it (a blob's header is at least 15 bytes long).
    if head[0] == 0x0a {
        return InputKind::PerfettoTrace;
    }
    match sniff_ddm(head) {
        Some(DdmKind::Blob) => InputKind::DdmAllocBlob,
        Some(DdmKind::Chunk) => InputKind::DdmChunk,
        Some(DdmKind::Jdwp) => InputKind::Jdwp,
        None => InputKind::Unknown,
    }
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
}
