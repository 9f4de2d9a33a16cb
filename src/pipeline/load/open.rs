//! Opening an input and telling what it is by its first bytes ([`open_input`]), and the errors
//! for an input a command does not read.

use crate::decode::{Input, InputKind, sniff};
use crate::error::{Error, ErrorKind, Result};
use std::path::Path;

/// True for a path named `*.alloc` (or `*.alloc.gz`): it must be a DDM capture.
pub(crate) fn is_alloc_file(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    name.ends_with(".alloc") || name.ends_with(".alloc.gz")
}

/// An input opened and recognized.
pub(crate) enum Opened {
    /// A Perfetto trace, or something that is neither a trace nor a DDM capture (the trace
    /// decoder then says what is wrong, as it always has).
    Trace(Input, InputKind),
    /// A DDM capture, read whole (gzip undone).
    Ddm { name: String, bytes: Vec<u8> },
    /// An HPROF heap dump, opened from its start.
    Hprof(Input),
}

/// Opens `path` (`-` for stdin) and tells a DDM capture from anything else by its first
/// (decompressed) bytes. With `want_ddm`, anything else is an error.
pub(crate) fn open_input(path: &Path, max_gzip: u64, ddm_max: u64, want_ddm: bool) -> Result<Opened> {
    use std::io::Read;
    const HEAD: u64 = 64;
    let name = path.display().to_string();
    let too_big = |name: &str| {
        Error::new(
            ErrorKind::LimitExceeded,
            format!("{name}: more than the limit of {ddm_max} bytes for a DDM capture"),
        )
    };
    let read_err = |e: std::io::Error| Error::io(format!("reading {name}"), e);
    if name == "-" {
        // Standard input can be read only once: it is read whole, then handed to the decoder
        // that its first bytes call for.
        let mut raw = Vec::new();
        std::io::stdin().lock().read_to_end(&mut raw).map_err(read_err)?;
        let gz = raw.starts_with(&[0x1f, 0x8b]);
        let mut head = Vec::new();
        if gz {
            let _ = flate2::read::MultiGzDecoder::new(raw.as_slice()).take(HEAD).read_to_end(&mut head);
        } else {
            head.extend_from_slice(&raw[..raw.len().min(HEAD as usize)]);
        }
        let kind = sniff(&head);
        if kind.is_ddm() || (want_ddm && kind == InputKind::Unknown) {
            let bytes = if gz {
                let mut v = Vec::new();
                flate2::read::MultiGzDecoder::new(raw.as_slice())
                    .take(ddm_max.saturating_add(1))
                    .read_to_end(&mut v)
                    .map_err(read_err)?;
                v
            } else {
                raw
            };
            if bytes.len() as u64 > ddm_max {
                return Err(too_big(&name));
            }
            return Ok(Opened::Ddm { name, bytes });
        }
        if kind == InputKind::Hprof && !want_ddm {
            return Ok(Opened::Hprof(Input::from_bytes(&name, raw, max_gzip)?));
        }
        not_ddm(&name, kind, &head, want_ddm)?;
        return Ok(Opened::Trace(Input::from_bytes(&name, raw, max_gzip)?, kind));
    }
    let mut input = Input::open(path, max_gzip)?;
    let mut head = Vec::new();
    input.reader().take(HEAD).read_to_end(&mut head).map_err(read_err)?;
    let kind = sniff(&head);
    if kind.is_ddm() || (want_ddm && kind == InputKind::Unknown) {
        // (An unknown kind where a capture is required: the DDM decoder says what is wrong.)
        let mut bytes = head;
        if let Some(size) = input.file_size.filter(|_| !input.gzipped) {
            bytes.reserve(usize::try_from(size.min(ddm_max)).unwrap_or(0));
        }
        let left = ddm_max.saturating_add(1).saturating_sub(bytes.len() as u64);
        input.reader().take(left).read_to_end(&mut bytes).map_err(read_err)?;
        if bytes.len() as u64 > ddm_max {
            return Err(too_big(&name));
        }
        return Ok(Opened::Ddm { name, bytes });
    }
    let hprof = kind == InputKind::Hprof && !want_ddm;
    if !hprof {
        not_ddm(&name, kind, &head, want_ddm)?;
    }
    let again = input.reopen().ok_or_else(|| Error::new(ErrorKind::Io, format!("{name}: cannot be read twice")))??;
    Ok(if hprof { Opened::Hprof(again) } else { Opened::Trace(again, kind) })
}

/// The error for an input that is not a DDM capture, when one is required or when it is a
/// kind heapconv does not read.
pub(crate) fn not_ddm(name: &str, kind: InputKind, head: &[u8], want_ddm: bool) -> Result<()> {
    if kind == InputKind::Hprof {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!("{name} is an HPROF heap dump; heapconv reads Perfetto traces and DDM allocation records"),
        ));
    }
    if !want_ddm {
        return Ok(());
    }
    let what = match kind {
        InputKind::PerfettoTrace => "a Perfetto trace".to_owned(),
        InputKind::Pprof | InputKind::LegacyHeap => "a pprof profile (`heapconv merge` combines several)".to_owned(),
        InputKind::Empty => "empty".to_owned(),
        InputKind::Zstd => "zstd-compressed".to_owned(),
        _ => format!(
            "neither a bare blob (starting 0F 09 08), a REAL chunk nor JDWP packets; it starts {}",
            head.iter().take(8).map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" ")
        ),
    };
    Err(Error::new(
        ErrorKind::Malformed,
        format!(
            "{name}: not a DDM allocation-record capture: {what} (several inputs, or a file named *.alloc, must be DDM captures)"
        ),
    ))
}

/// Refuses a pprof input where a command needs a Perfetto trace, with an error that says
/// which commands take pprof. Standard input and unreadable files pass (the command reports
/// those itself).
pub fn refuse_pprof(path: &Path, command: &str) -> Result<()> {
    use std::io::Read;
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let Ok(mut input) = Input::open(path, 1 << 20) else { return Ok(()) };
    let mut head = Vec::new();
    let _ = input.reader().take(64).read_to_end(&mut head);
    if crate::decode::sniff(&head).is_pprof() {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{} is a pprof profile; `heapconv {command}` reads Perfetto traces (convert, merge, diff, top and inspect take pprof)",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// The error for an input a command that reads heapprofd traces does not read.
pub(crate) fn not_a_trace(input: &Path, what: &str, command: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("{} is {what}; {command} reads the dumps of a heapprofd trace (a Perfetto trace)", input.display()),
    )
}

/// True when `path` is a DDM allocation-record capture, by its content (standard input, `-`,
/// counts as one: it is looked at only when read).
pub fn is_ddm_capture(path: &Path) -> bool {
    path.as_os_str() == "-" || crate::decode::sniff_file(path).is_ok_and(|k| k.is_ddm())
}
