//! What the command line prints besides the outputs: warnings, notes, what the inputs held,
//! symbolization coverage, and progress (on a terminal only).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use heapconv::model::{DumpReport, TraceReport};
use heapconv::pipeline::load::{InputInfo, SymbolSources};
use heapconv::pipeline::reports::{SymbolizeReport, human_bytes};
use heapconv::{Error, ErrorKind};

/// How much to print.
pub(crate) struct Ui {
    /// `-v` count.
    pub(crate) verbose: u8,
    /// `-q`.
    pub(crate) quiet: bool,
}

impl Ui {
    pub(crate) fn warn(&self, msg: &str) {
        if !self.quiet {
            eprintln!("heapconv: warning: {msg}");
        }
    }

    pub(crate) fn info(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }

    /// A spinner on a terminal.
    pub(crate) fn progress_bar(&self) -> Option<indicatif::ProgressBar> {
        if self.quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_message("decoding");
        Some(pb)
    }

    /// Prints what the ProGuard/R8 maps did (nothing when none was given): per map, what it
    /// was used for and how many names it deobfuscated; a warning for a map that matched
    /// nothing; the names that stayed obfuscated.
    pub(crate) fn deobfuscation(&self, maps: &heapconv::pipeline::load::ProguardMaps) {
        let Some(r) = maps.report() else { return };
        for m in &r.maps {
            let c = &m.counts;
            let pkg = c.package.as_deref().map(|p| format!(" ({p})")).unwrap_or_default();
            if c.deobfuscated == 0 {
                self.warn(&format!("proguard map {}{pkg} matched nothing in the input", c.map));
            } else if !self.quiet {
                let k = &c.deobfuscated_by_kind;
                eprintln!(
                    "deobfuscated {} of {} Java names ({} frames, {} classes, {} fields) with {}{pkg} ({} of its {} classes read) for: {}",
                    c.deobfuscated,
                    c.lookups,
                    k.frames,
                    k.classes,
                    k.fields,
                    c.map,
                    c.classes_read,
                    c.classes_in_map,
                    m.used_for.join(", ")
                );
            }
            if c.skipped_lines > 0 {
                self.warn(&format!(
                    "{}: {} member line(s) do not parse and were skipped (first: {})",
                    c.map,
                    c.skipped_lines,
                    c.first_skipped.as_deref().unwrap_or("?")
                ));
            }
        }
        if r.left_obfuscated > 0 && !self.quiet {
            eprintln!(
                "{} Java name(s) stayed obfuscated (no map names their class; counted: obfuscated-looking \
                 names and names in packages a map covers, not framework classes), e.g. {}",
                r.left_obfuscated,
                r.left_examples.join(", ")
            );
        }
    }

    /// Prints the symbolization report; returns false when the coverage gate fails.
    pub(crate) fn symbols(&self, report: &SymbolizeReport, sources: &SymbolSources) -> bool {
        if !self.quiet {
            eprintln!(
                "symbolized {} of {} native frames ({:.1}%), {:.1}% of bytes on fully symbolized stacks, {}",
                report.frames_symbolized,
                report.frames,
                report.frame_percent(),
                report.byte_percent(),
                if report.names_only() {
                    "counting the names the input has (no --symbol-dir)".to_owned()
                } else {
                    format!("from {} indexed file(s)", report.indexed_files)
                }
            );
            for m in &report.mappings {
                eprintln!(
                    "  {:<48} {:<16} {:>5}/{:<5} {:>10} {:?}{}",
                    m.path,
                    if m.build_id.len() > 16 { &m.build_id[..16] } else { &m.build_id },
                    m.symbolized,
                    m.frames,
                    human_bytes(m.bytes),
                    m.outcome,
                    m.file.as_deref().map(|f| format!(" <- {f}")).unwrap_or_default()
                );
                if self.verbose > 0 {
                    for t in &m.tried {
                        eprintln!("      tried {t}");
                    }
                    for t in &m.mismatched {
                        eprintln!("      rejected (build id or CRC differs): {t}");
                    }
                }
            }
        }
        if sources.gate_passes(report) {
            return true;
        }
        eprintln!(
            "heapconv: error: symbolization coverage {:.1}% is below --min-symbolized {}%",
            report.frame_percent(),
            sources.min_symbolized.unwrap_or_default()
        );
        false
    }

    /// Prints what a decode found that the user must know; returns true when the input is
    /// damaged.
    pub(crate) fn problems(&self, report: &TraceReport) -> bool {
        self.problems_of(report, &|_| true)
    }

    /// [`Ui::problems`], with the data-loss flags of the dumps `keep` accepts only (the dumps
    /// a command converts).
    pub(crate) fn problems_of(&self, report: &TraceReport, keep: &dyn Fn(&DumpReport) -> bool) -> bool {
        for d in report.dumps.iter().filter(|d| keep(d)) {
            let loss = d.flags.data_loss();
            if !loss.is_empty() {
                self.warn(&format!("pid {} heap {} dump {}: {}", d.pid, d.heap, d.index + 1, loss.join(", ")));
            }
            if d.timestamp.is_some() && !d.timestamp_converted && self.verbose > 0 {
                self.warn(&format!(
                    "pid {} heap {} dump {}: no clock snapshot; the timestamp is the raw producer clock",
                    d.pid,
                    d.heap,
                    d.index + 1
                ));
            }
        }
        if self.verbose > 0 {
            for p in &report.problems {
                self.warn(&p.message);
            }
        } else if !report.problems.is_empty() {
            self.warn(&format!(
                "{} problem(s) found in the input; `heapconv inspect` lists them",
                report.problems.len()
            ));
        }
        if report.unfinished_dumps > 0 {
            self.warn(&format!(
                "{} dump(s) never finished (the trace ends inside a dump chain); they were not converted",
                report.unfinished_dumps
            ));
        }
        if let Some(d) = &report.damage {
            self.warn(&format!("input damaged, result is partial: {d}"));
        }
        report.is_partial()
    }

    /// Reports what the inputs of a merge held; returns (symbolization gate passed, damaged).
    /// Warnings name the lost data of the dumps taken from each trace only.
    pub(crate) fn inputs(&self, inputs: &[InputInfo], sources: &SymbolSources) -> (bool, bool) {
        let mut gate_ok = true;
        let mut damaged = false;
        for i in inputs {
            for w in &i.warnings {
                self.warn(w);
            }
            if self.verbose > 0 {
                self.info(&format!("{}: {:?}, {} profile(s)", i.name, i.kind, i.profiles));
            }
            if let (Some(r), Some(f)) = (&i.report, &i.converted) {
                damaged |= self.problems_of(r, &|d| f.keeps(d));
            }
            if let Some(s) = &i.symbols {
                gate_ok &= self.symbols(s, sources);
            }
        }
        self.deobfuscation(&sources.proguard);
        (gate_ok, damaged)
    }
}

/// What the inputs of a merge, diff or top say was lost (for `--strict`), of the dumps taken
/// from each trace, each line naming its input.
pub(crate) fn inputs_data_loss(inputs: &[InputInfo]) -> Vec<String> {
    inputs.iter().flat_map(InputInfo::data_loss).collect()
}

/// The error for binary output to a terminal.
pub(crate) fn refuse_terminal(what: &str, advice: &str) -> Error {
    Error::new(ErrorKind::Usage, format!("refusing to write {what} to a terminal; {advice}"))
}

/// Writes bytes to standard output.
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<(), Error> {
    let mut so = std::io::stdout().lock();
    so.write_all(bytes).map_err(|e| Error::io("writing standard output", e))?;
    so.flush().map_err(|e| Error::io("writing standard output", e))
}

/// Writes the outputs of a conversion meant for standard output (`None` paths), naming the
/// files written with `-v`.
pub(crate) fn write_outputs(ui: &Ui, outputs: &[(Option<PathBuf>, Vec<u8>)]) -> Result<(), Error> {
    let mut stdout = std::io::stdout().lock();
    for (path, bytes) in outputs {
        match path {
            None => stdout.write_all(bytes).map_err(|e| Error::io("writing standard output", e))?,
            Some(p) if ui.verbose > 0 => ui.info(&format!("wrote {}", p.display())),
            Some(_) => {}
        }
    }
    stdout.flush().map_err(|e| Error::io("writing standard output", e))
}

/// Where `merge`, `diff` and `timeline` write: `-` is standard output (never a terminal for
/// binary output).
pub(crate) fn write_output(path: &Path, bytes: &[u8], binary: bool, inputs: &[PathBuf]) -> Result<(), Error> {
    if path.as_os_str() == "-" {
        if binary && std::io::stdout().is_terminal() {
            return Err(refuse_terminal("binary pprof", "use -o FILE or redirect standard output"));
        }
        return write_stdout(bytes);
    }
    heapconv::pipeline::select::write_file(path, bytes, inputs)
}

/// Writes bytes to standard output (flushed when the program ends).
pub(crate) fn write_stdout_unflushed(bytes: &[u8]) -> Result<(), Error> {
    std::io::stdout().write_all(bytes).map_err(|e| Error::io("writing standard output", e))
}
