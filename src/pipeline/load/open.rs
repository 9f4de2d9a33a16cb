//! What an input is and which commands read it: the table of input types ([`InputType`], each
//! with the kinds sniffing tells apart, [`InputKind`]) and of commands ([`Command`], each with
//! the types it reads); opening an input into a typed value (`open_input`, `Opened`); and the
//! errors for an input a command does not read, worded from the table.
//!
//! A new input kind is its decoder, its sniffing rule (a row of [`InputKind::ALL`]), a row here
//! ([`InputType`], [`Command::reads`]) and where it is loaded (`Opened`).

use crate::decode::{Input, InputKind, sniff};
use crate::error::{Error, ErrorKind, Result};
use std::path::Path;

/// What heapconv reads an input as: the rows of the input table (the `--help` matrix lists
/// them with the commands that read each, [`InputType::commands`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputType {
    /// The heapprofd dumps (native allocations) of a Perfetto trace.
    Heapprofd,
    /// The Java heap graphs of a Perfetto trace.
    HeapGraphs,
    /// DDM allocation records (a `.alloc` blob, a `REAL` chunk or JDWP packets).
    Ddm,
    /// An HPROF heap dump.
    Hprof,
    /// A pprof profile.
    Pprof,
    /// A legacy text heap profile (gperftools, old Go), read as the pprof profile `go tool
    /// pprof` makes of it.
    LegacyHeap,
}

impl InputType {
    /// Every input type, in the order help texts list them.
    pub const ALL: [InputType; 6] = [
        InputType::Heapprofd,
        InputType::HeapGraphs,
        InputType::Ddm,
        InputType::Hprof,
        InputType::Pprof,
        InputType::LegacyHeap,
    ];

    /// The row's name in the help's input matrix.
    pub fn label(self) -> &'static str {
        match self {
            InputType::Heapprofd => "Perfetto trace, heapprofd dumps",
            InputType::HeapGraphs => "Perfetto trace, Java heap graphs",
            InputType::Ddm => "DDM allocation records (.alloc)",
            InputType::Hprof => "HPROF heap dump (JAVA PROFILE 1.0.1, 1.0.2, 1.0.3)",
            InputType::Pprof => "pprof (gzip'd or not)",
            InputType::LegacyHeap => "legacy text heap profile (gperftools, old Go: `heap profile: …`)",
        }
    }

    /// What an input of this type is, as errors say it (`x is a pprof profile`).
    pub fn what(self) -> &'static str {
        match self {
            InputType::Heapprofd | InputType::HeapGraphs => "a Perfetto trace",
            InputType::Ddm => "a DDM allocation-record capture",
            InputType::Hprof => "an HPROF heap dump",
            InputType::Pprof | InputType::LegacyHeap => "a pprof profile",
        }
    }

    /// The kinds, as sniffing tells them ([`crate::decode::sniff`]), that are of this type.
    pub fn kinds(self) -> &'static [InputKind] {
        match self {
            InputType::Heapprofd | InputType::HeapGraphs => &[InputKind::PerfettoTrace],
            InputType::Ddm => &[InputKind::DdmAllocBlob, InputKind::DdmChunk, InputKind::Jdwp],
            InputType::Hprof => &[InputKind::Hprof],
            InputType::Pprof => &[InputKind::Pprof],
            InputType::LegacyHeap => &[InputKind::LegacyHeap],
        }
    }

    /// The commands that read an input of this type, in the order of [`Command::ALL`].
    pub fn commands(self) -> Vec<Command> {
        Command::ALL.into_iter().filter(|c| c.reads().contains(&self)).collect()
    }
}

/// The commands that read profiles and heap dumps, with what each reads (`deobfuscate` and
/// `addr2line` read mapping files and ELF files, no input of the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// `profile`.
    Profile,
    /// `convert`.
    Convert,
    /// `merge`.
    Merge,
    /// `diff`.
    Diff,
    /// `top`.
    Top,
    /// `timeline`.
    Timeline,
    /// `inspect`.
    Inspect,
    /// `symbolize`.
    Symbolize,
    /// `hprof`.
    Hprof,
    /// `hprof-conv`.
    HprofConv,
}

impl Command {
    /// Every command of the table, in the order help texts list them.
    pub const ALL: [Command; 10] = [
        Command::Profile,
        Command::Convert,
        Command::Merge,
        Command::Diff,
        Command::Top,
        Command::Timeline,
        Command::Inspect,
        Command::Symbolize,
        Command::Hprof,
        Command::HprofConv,
    ];

    /// The command's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Command::Profile => "profile",
            Command::Convert => "convert",
            Command::Merge => "merge",
            Command::Diff => "diff",
            Command::Top => "top",
            Command::Timeline => "timeline",
            Command::Inspect => "inspect",
            Command::Symbolize => "symbolize",
            Command::Hprof => "hprof",
            Command::HprofConv => "hprof-conv",
        }
    }

    /// The input types the command reads.
    pub fn reads(self) -> &'static [InputType] {
        use InputType::*;
        match self {
            Command::Profile | Command::Timeline | Command::Symbolize => &[Heapprofd],
            Command::Convert | Command::Top | Command::Inspect => &InputType::ALL,
            Command::Merge | Command::Diff => &[Heapprofd, Ddm, Pprof, LegacyHeap],
            Command::Hprof => &[HeapGraphs],
            Command::HprofConv => &[Hprof],
        }
    }
}

/// Which kinds of input a command takes from a directory. Files named explicitly (as paths,
/// by a pattern or in an `--inputs-from` list) are always taken, whatever they hold, so that
/// a wrong file fails loudly instead of being skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// `convert`: Perfetto traces, DDM allocation-record captures, HPROF heap dumps, pprof.
    Convertible,
    /// `profile`, `symbolize`, `hprof`: Perfetto traces.
    Traces,
    /// `hprof-conv`: HPROF heap dumps.
    HeapDumps,
    /// `merge`, `top`: Perfetto traces, DDM captures, pprof.
    Mergeable,
}

impl Wanted {
    /// The input types a directory scan takes.
    pub fn types(self) -> &'static [InputType] {
        match self {
            Wanted::Convertible => Command::Convert.reads(),
            Wanted::Traces => &[InputType::Heapprofd, InputType::HeapGraphs],
            Wanted::HeapDumps => Command::HprofConv.reads(),
            Wanted::Mergeable => Command::Merge.reads(),
        }
    }

    /// True when a directory scan takes a file of this kind.
    pub fn accepts(self, kind: InputKind) -> bool {
        self.types().iter().any(|t| t.kinds().contains(&kind))
    }
}

/// `items` as a sentence's list: `a`, `a and b`, `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What a command that reads one Java heap makes of an input, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeapSource {
    /// An HPROF heap dump.
    Hprof,
    /// A Perfetto trace, or an input sniffing did not recognise: the trace decoder looks for
    /// heap graphs in it.
    Trace,
    /// Any other kind.
    Other,
}

/// [`HeapSource`] of an input that starts with `head`.
pub(crate) fn heap_source(head: &[u8]) -> HeapSource {
    match sniff(head) {
        InputKind::Hprof => HeapSource::Hprof,
        InputKind::PerfettoTrace | InputKind::Unknown => HeapSource::Trace,
        _ => HeapSource::Other,
    }
}

/// True for a path named `*.alloc` (or `*.alloc.gz`): it must be a DDM capture.
pub(crate) fn is_alloc_file(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    name.ends_with(".alloc") || name.ends_with(".alloc.gz")
}

/// An input opened and recognized, by the loader its kind calls for.
pub(crate) enum Opened {
    /// A Perfetto trace (its heapprofd dumps or heap graphs), or an input that is empty or
    /// compressed inside its gzip, from its start (the trace decoder says what is wrong).
    Trace(Input, InputKind),
    /// An input sniffing did not recognise, from its start: the trace decoder tries it, and
    /// commands word their errors for an input that may be no trace at all.
    Unknown(Input),
    /// A DDM capture, read whole (gzip undone).
    Ddm { name: String, bytes: Vec<u8> },
    /// An HPROF heap dump, from its start.
    Hprof(Input),
    /// A pprof profile or a legacy text heap profile, from its start.
    Pprof(Input, InputKind),
}

impl Opened {
    /// The opened value a kind calls for, for an input that is neither a DDM capture nor (where
    /// one is read as such) an HPROF heap dump.
    fn of_kind(input: Input, kind: InputKind) -> Opened {
        match kind {
            InputKind::Unknown => Opened::Unknown(input),
            k if k.is_pprof() => Opened::Pprof(input, k),
            k => Opened::Trace(input, k),
        }
    }

    /// The input type, for errors that say what an input is (`None` for a trace or an input
    /// not recognised).
    fn refused_type(&self) -> Option<InputType> {
        match self {
            Opened::Trace(..) | Opened::Unknown(_) => None,
            Opened::Ddm { .. } => Some(InputType::Ddm),
            Opened::Hprof(_) => Some(InputType::Hprof),
            Opened::Pprof(..) => Some(InputType::Pprof),
        }
    }

    /// The input as a trace to read heapprofd dumps from, and whether sniffing recognised it
    /// (`false`: it may be no trace at all); for an input of another type, the error
    /// `not_a_trace` makes for `command`.
    pub(crate) fn into_heapprofd_trace(self, input: &Path, command: &str) -> Result<(Input, bool)> {
        if let Some(t) = self.refused_type() {
            return Err(not_a_trace(input, t.what(), command));
        }
        match self {
            Opened::Trace(inp, _) => Ok((inp, true)),
            Opened::Unknown(inp) => Ok((inp, false)),
            Opened::Ddm { .. } | Opened::Hprof(_) | Opened::Pprof(..) => unreachable!("refused above"),
        }
    }
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
        return Ok(Opened::of_kind(Input::from_bytes(&name, raw, max_gzip)?, kind));
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
    Ok(if hprof { Opened::Hprof(again) } else { Opened::of_kind(again, kind) })
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
        InputKind::PerfettoTrace => InputType::Heapprofd.what().to_owned(),
        k if k.is_pprof() => format!("{} (`heapconv merge` combines several)", InputType::Pprof.what()),
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
        let takers: Vec<&str> = InputType::Pprof.commands().into_iter().map(Command::name).collect();
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{} is {}; `heapconv {command}` reads Perfetto traces ({} take pprof)",
                path.display(),
                InputType::Pprof.what(),
                and_list(&takers)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The sets of kinds a directory scan took before the table (hand-written per `Wanted`).
    fn scanned_before(wanted: Wanted, kind: InputKind) -> bool {
        let trace = kind == InputKind::PerfettoTrace;
        match wanted {
            Wanted::Convertible => trace || kind.is_ddm() || kind == InputKind::Hprof || kind.is_pprof(),
            Wanted::Traces => trace,
            Wanted::HeapDumps => kind == InputKind::Hprof,
            Wanted::Mergeable => trace || kind.is_ddm() || kind.is_pprof(),
        }
    }

    #[test]
    fn directory_scans_take_the_kinds_they_took() {
        for wanted in [Wanted::Convertible, Wanted::Traces, Wanted::HeapDumps, Wanted::Mergeable] {
            for kind in InputKind::ALL {
                assert_eq!(wanted.accepts(kind), scanned_before(wanted, kind), "{wanted:?} {kind:?}");
            }
        }
    }

    #[test]
    fn every_kind_a_command_reads_is_in_one_row_at_most() {
        for kind in InputKind::ALL {
            let rows: Vec<InputType> = InputType::ALL.into_iter().filter(|t| t.kinds().contains(&kind)).collect();
            match kind {
                // A trace holds heapprofd dumps, heap graphs or both.
                InputKind::PerfettoTrace => assert_eq!(rows, [InputType::Heapprofd, InputType::HeapGraphs]),
                InputKind::Empty | InputKind::Gzip | InputKind::Zstd | InputKind::Unknown => assert!(rows.is_empty()),
                _ => assert_eq!(rows.len(), 1, "{kind:?}"),
            }
        }
    }

    #[test]
    fn refusals_name_the_commands_of_the_table() {
        let takers: Vec<&str> = InputType::Pprof.commands().into_iter().map(Command::name).collect();
        assert_eq!(and_list(&takers), "convert, merge, diff, top and inspect");
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b"]), "a and b");
        assert_eq!(InputType::Hprof.commands(), [Command::Convert, Command::Top, Command::Inspect, Command::HprofConv]);
    }

    #[test]
    fn heap_commands_tell_hprof_from_traces() {
        assert_eq!(heap_source(b"JAVA PROFILE 1.0.2\0"), HeapSource::Hprof);
        assert_eq!(heap_source(&[0x0a, 0x10, 0x08]), HeapSource::Trace);
        assert_eq!(heap_source(b"this is not a trace\n"), HeapSource::Trace, "not recognised: the trace decoder tries");
        assert_eq!(heap_source(b""), HeapSource::Other);
        assert_eq!(heap_source(b"REAL\0\0\0\0"), HeapSource::Other);
    }

    #[test]
    fn inputs_open_as_the_value_their_kind_calls_for() {
        let open = |bytes: &[u8]| {
            let dir = std::env::temp_dir().join(format!("heapconv-open-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("{}.bin", bytes.len()));
            std::fs::write(&path, bytes).unwrap();
            let opened = open_input(&path, 1 << 20, 1 << 20, false);
            let _ = std::fs::remove_file(&path);
            opened
        };
        assert!(matches!(open(&[0x0a, 0x10, 0x08]), Ok(Opened::Trace(_, InputKind::PerfettoTrace))));
        assert!(matches!(open(b"JAVA PROFILE 1.0.2\0\0\0\0\x04"), Ok(Opened::Hprof(_))));
        assert!(matches!(open(b"REAL\0\0\0\0"), Ok(Opened::Ddm { .. })));
        assert!(matches!(
            open(&[0x5a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x60, 0x01]),
            Ok(Opened::Pprof(_, InputKind::Pprof))
        ));
        assert!(matches!(open(b"this is not a trace\n"), Ok(Opened::Unknown(_))));
        let refused = open(b"REAL\0\0\0\0").unwrap().into_heapprofd_trace(Path::new("x.alloc"), "`heapconv timeline`");
        assert_eq!(
            refused.err().map(|e| e.context().to_owned()).as_deref(),
            Some(
                "x.alloc is a DDM allocation-record capture; `heapconv timeline` reads the dumps of a heapprofd trace (a Perfetto trace)"
            )
        );
    }
}
