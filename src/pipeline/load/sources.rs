//! Where symbols and Java names come from: symbol directories ([`SymbolSources`]), ProGuard/R8
//! maps given, found in a directory or carried by a trace ([`ProguardMaps`], [`TraceMaps`],
//! [`discover_mapping_files`]).

use super::heap::deobfuscate_dump;
use super::trace::prepare_trace;
use crate::decode::Input;
use crate::decode::perfetto::DecodeOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::model::HeapDump;
use crate::symbolize::java_frames::FrameRules;
use crate::symbolize::proguard::{DeobfuscationReport, Deobfuscator, MapSpec, Session, deobfuscate_heap_dump};
use crate::symbolize::{SymbolizeOptions, SymbolizeReport};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where symbols come from: the symbol directories and how files found there are matched.
/// One struct for every command that symbolizes; [`SymbolSources::options`] gives the
/// symbolizer's options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SymbolSources {
    /// Directories searched recursively by build id.
    pub dirs: Vec<PathBuf>,
    /// Use a file found by path even if its build id differs.
    pub ignore_build_id: bool,
    /// Only find the files (`PERFETTO_SYMBOLIZER_MODE=find`).
    pub find_only: bool,
    /// The least share (percent) of native frames that must get symbols (the gate).
    pub min_symbolized: Option<f64>,
    /// Report the symbol coverage even without directories or a gate (of the symbols the
    /// inputs have), as batch summaries do.
    pub always_report: bool,
    /// ProGuard/R8 mapping files for Java names. Default: none.
    pub proguard: ProguardMaps,
}

/// The ProGuard/R8 mapping files of a run: opened (indexed) once, on first use, and shared by
/// every copy of the options, so that the report covers the whole run.
#[derive(Clone, Default)]
pub struct ProguardMaps {
    specs: Vec<MapSpec>,
    opened: Arc<Mutex<Option<Arc<Deobfuscator>>>>,
    /// The deobfuscators made for traces holding `DeobfuscationMapping` packets (the maps
    /// given, then the trace's), whose counts join the report.
    traced: Arc<Mutex<Vec<Arc<Deobfuscator>>>>,
}

impl std::fmt::Debug for ProguardMaps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.specs).finish()
    }
}

impl PartialEq for ProguardMaps {
    fn eq(&self, other: &Self) -> bool {
        self.specs == other.specs
    }
}

impl Eq for ProguardMaps {}

impl ProguardMaps {
    /// Maps given as `[PACKAGE=]FILE` arguments, then as `PERFETTO_PROGUARD_MAP`'s value
    /// (traceconv's syntax: `package=file[:package=file…]`).
    pub fn new(args: &[String], env: Option<&str>) -> Result<Self> {
        let mut specs: Vec<MapSpec> = args.iter().map(|a| MapSpec::parse(a)).collect();
        if let Some(env) = env {
            specs.extend(MapSpec::parse_env(env)?);
        }
        Ok(ProguardMaps { specs, opened: Arc::default(), traced: Arc::default() })
    }

    /// Adds maps found by [`discover_mapping_files`] (after the ones given).
    pub fn extend(&mut self, specs: impl IntoIterator<Item = MapSpec>) {
        self.specs.extend(specs);
    }

    /// Whether no map was given.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The maps, opened on first call; `None` when none was given.
    pub fn open(&self) -> Result<Option<Arc<Deobfuscator>>> {
        if self.specs.is_empty() {
            return Ok(None);
        }
        let mut slot = self.opened.lock().map_err(|_| Error::new(ErrorKind::Io, "mapping files: a thread panicked"))?;
        if slot.is_none() {
            *slot = Some(Arc::new(Deobfuscator::open(&self.specs)?));
        }
        Ok(slot.clone())
    }

    /// The maps for one Perfetto trace: [`ProguardMaps::open`]'s, and after them the
    /// `DeobfuscationMapping` packets the trace holds (read by the pre-pass of
    /// [`prepare_trace`], inside `compressed_packets` bundles too), which trace processor
    /// applies as if given as map files; with what that pass learnt of the trace's packages
    /// (`packages_list`, the processes' uids). The pre-pass also hands the decoder the
    /// trace's ModuleSymbols. Standard input read as a stream is read whole, so that it can be
    /// read twice.
    pub(crate) fn open_for_trace(&self, inp: &mut Input, max_packet: u64) -> Result<TraceMaps> {
        let decode = DecodeOptions { max_packet_bytes: max_packet, ..DecodeOptions::default() };
        prepare_trace(inp, &decode, self, &mut None)
    }

    /// The maps for one trace of which a pre-pass read `info` ([`prepare_trace`]).
    pub(super) fn for_trace(
        &self,
        inp: &Input,
        max_packet: u64,
        mut info: crate::decode::perfetto::deobfuscation::TraceJavaInfo,
    ) -> Result<TraceMaps> {
        // Several app packages profiled: each package-less Java frame takes its process's.
        // (A pass of its own, needed only when there are maps to apply: the guess needs the
        // processes and packages of the whole trace before it reads the first frame.)
        if info.profiled_packages().len() > 1
            && (!self.specs.is_empty() || !info.tables.is_empty())
            && let Some(Ok(mut again)) = inp.reopen()
        {
            let needs_guess = |path: &str| {
                crate::symbolize::proguard::package_of_mapping_path(path).is_none() && !path.starts_with("/memfd:")
            };
            info.frame_packages = crate::decode::perfetto::deobfuscation::scan_frame_packages(
                &mut again,
                max_packet,
                256 << 20,
                &info,
                &needs_guess,
            );
        }
        let deob = if info.tables.is_empty() {
            self.open()?
        } else {
            let d = Arc::new(Deobfuscator::with_trace_tables(&self.specs, &inp.name, info.tables.clone())?);
            if let Ok(mut t) = self.traced.lock() {
                t.push(d.clone());
            }
            Some(d)
        };
        Ok(TraceMaps::new(deob, &info, self.specs.len()))
    }

    /// What deobfuscation did so far: the maps given and the `DeobfuscationMapping` packets of
    /// the traces read (a map used for several traces counted once, its counts summed); `None`
    /// when no map was given or found in a trace, or none was opened.
    pub fn report(&self) -> Option<DeobfuscationReport> {
        let mut parts: Vec<DeobfuscationReport> = Vec::new();
        if let Some(d) = self.opened.lock().ok()?.as_ref() {
            parts.push(d.report());
        }
        parts.extend(self.traced.lock().ok()?.iter().map(|d| d.report()));
        let mut parts = parts.into_iter();
        let mut out = parts.next()?;
        for p in parts {
            join_reports(&mut out, p);
        }
        Some(out)
    }
}

/// Adds `more`'s counts to `into`: a map both name (same file or trace packets, same package)
/// gets the sums (and every use), others are appended; the names left obfuscated are summed,
/// with at most five examples.
fn join_reports(into: &mut DeobfuscationReport, more: DeobfuscationReport) {
    for m in more.maps {
        match into.maps.iter_mut().find(|u| u.counts.map == m.counts.map && u.counts.package == m.counts.package) {
            Some(u) => {
                u.counts.add_counts(&m.counts);
                for w in m.used_for {
                    if !u.used_for.contains(&w) {
                        u.used_for.push(w);
                    }
                }
            }
            None => into.maps.push(m),
        }
    }
    into.left_obfuscated += more.left_obfuscated;
    for e in more.left_examples {
        if into.left_examples.len() < 5 && !into.left_examples.contains(&e) {
            into.left_examples.push(e);
        }
    }
}

/// The maps of one trace and how trace processor applies them: to Java frames by package
/// ([`FrameRules`]), to heap graphs by the process's package.
#[derive(Debug, Clone, Default)]
pub(crate) struct TraceMaps {
    deob: Option<Arc<Deobfuscator>>,
    rules: FrameRules,
    /// pid → package, from `packages_list` and the processes' uids.
    pid_packages: BTreeMap<u64, String>,
}

/// A [`Session`] over a trace's maps, with the rules for its frames.
pub(crate) struct FrameSession<'a> {
    pub(super) session: Session<'a>,
    pub(super) rules: &'a FrameRules,
}

impl TraceMaps {
    /// `deob`'s maps: the first `files` given as files, the rest from the trace's packets.
    fn new(
        deob: Option<Arc<Deobfuscator>>,
        info: &crate::decode::perfetto::deobfuscation::TraceJavaInfo,
        files: usize,
    ) -> Self {
        let mut rules = FrameRules::default();
        let mut pid_packages = BTreeMap::new();
        for &pid in info.processes.keys() {
            if let Some(p) = info.package_of_pid(pid) {
                pid_packages.insert(pid, p.to_owned());
            }
        }
        let mut profiled: Vec<String> = Vec::new();
        for pid in &info.profiled_pids {
            if let Some(p) = pid_packages.get(pid)
                && !profiled.contains(p)
            {
                profiled.push(p.clone());
            }
        }
        match profiled.len() {
            0 => {}
            1 => rules.guessed_package = profiled.pop(),
            _ => rules.several_packages = profiled,
        }
        rules.frame_packages = info.frame_packages.clone();
        if let Some(d) = &deob {
            for (i, m) in d.maps().iter().enumerate() {
                match m.package() {
                    Some(p) => rules.packaged.push((i, p.to_owned())),
                    None if i >= files => rules.heap_graph_only.push(i),
                    None => {}
                }
            }
        }
        TraceMaps { deob, rules, pid_packages }
    }

    /// Whether there are maps.
    pub(crate) fn is_some(&self) -> bool {
        self.deob.is_some()
    }

    /// A session for the trace's frames; `None` without maps.
    pub(crate) fn session(&self) -> Option<FrameSession<'_>> {
        Some(FrameSession { session: self.deob.as_deref()?.session(), rules: &self.rules })
    }

    /// Deobfuscates a heap graph with the map of its process's package: the package
    /// `packages_list` gives the process's uid when a map is given for it, else its name up to
    /// any `:`.
    pub(crate) fn deobfuscate_graph(&self, dump: &mut HeapDump) {
        let Some(d) = self.deob.as_deref() else { return };
        let listed = dump.pid.and_then(|p| self.pid_packages.get(&u64::from(p)));
        if let Some(p) = listed.filter(|p| d.maps().iter().any(|m| m.package() == Some(p.as_str()))) {
            let mut s = d.session();
            if let Some(i) = s.for_package(Some(p), &format!("heap dump classes and fields of {p} (packages_list)")) {
                deobfuscate_heap_dump(dump, &mut s, i);
            }
            return;
        }
        deobfuscate_dump(Some(d), dump);
    }
}

impl SymbolSources {
    /// The symbolizer's options: with directories, symbolization; without, counting the
    /// symbols the inputs already have when a gate asks for coverage; else none.
    pub fn options(&self) -> Option<SymbolizeOptions> {
        if self.dirs.is_empty() {
            return (self.min_symbolized.is_some() || self.always_report).then(SymbolizeOptions::default);
        }
        Some(SymbolizeOptions {
            symbol_dirs: self.dirs.clone(),
            ignore_build_id: self.ignore_build_id,
            find_only: self.find_only,
        })
    }

    /// Whether a symbolization report passes the gate (always, without one).
    pub fn gate_passes(&self, report: &SymbolizeReport) -> bool {
        self.min_symbolized.is_none_or(|pct| report.frame_percent() >= pct)
    }
}

/// The mapping files [`discover_mapping_files`] found, and what to tell about the choice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveredMaps {
    /// The maps to use, in path order: package-named maps with their package, then the Gradle
    /// map (without a package).
    pub specs: Vec<MapSpec>,
    /// Warnings: several Gradle maps were found, which one was used and the candidates.
    pub warnings: Vec<String>,
}

/// Finds ProGuard/R8 mapping files under `dir` (`--mapping-dir`), walked in path order:
/// - `<package>.txt` and `<package>/mapping.txt` directly under `dir`, where `<package>` is a
///   dotted Java package name (`com.example.app`): a map for that package;
/// - Gradle build outputs, `…/<module>/build/outputs/mapping/<variant>/mapping.txt` at any
///   depth: the application id of a module cannot be known offline, so one of them becomes the
///   map without a package: the only one; else the first (in path order) whose variant is
///   `release`, else the first whose variant ends in `Release`, else the first; a warning
///   names the one used and lists the candidates.
pub fn discover_mapping_files(dir: &Path) -> Result<DiscoveredMaps> {
    if !dir.is_dir() {
        return Err(Error::new(ErrorKind::Usage, format!("--mapping-dir {}: not a directory", dir.display())));
    }
    let is_package = |s: &str| {
        s.contains('.')
            && s.split('.').all(|p| {
                p.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    let mut found = DiscoveredMaps::default();
    let mut gradle: Vec<(String, PathBuf)> = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| Error::new(ErrorKind::Io, format!("--mapping-dir {}: {e}", dir.display())))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let path = entry.path();
        let rel: Vec<String> = match path.strip_prefix(dir) {
            Ok(r) => r.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect(),
            Err(_) => continue,
        };
        let rel: Vec<&str> = rel.iter().map(String::as_str).collect();
        match rel.as_slice() {
            [name] if name.ends_with(".txt") && is_package(&name[..name.len() - 4]) => {
                found.specs.push(MapSpec { package: Some(name[..name.len() - 4].to_owned()), path: path.to_path_buf() })
            }
            [pkg, "mapping.txt"] if is_package(pkg) => {
                found.specs.push(MapSpec { package: Some((*pkg).to_owned()), path: path.to_path_buf() })
            }
            [.., "build", "outputs", "mapping", variant, "mapping.txt"] => {
                gradle.push(((*variant).to_owned(), path.to_path_buf()))
            }
            _ => {}
        }
    }
    let pick = gradle
        .iter()
        .position(|g| g.0 == "release")
        .or_else(|| gradle.iter().position(|g| g.0.ends_with("Release")))
        .or((!gradle.is_empty()).then_some(0));
    if let Some(i) = pick {
        if gradle.len() > 1 {
            let all: Vec<String> = gradle.iter().map(|g| g.1.display().to_string()).collect();
            found.warnings.push(format!(
                "--mapping-dir {}: {} Gradle mapping files; used {} (variant {}) for inputs without a package; candidates: {}",
                dir.display(),
                gradle.len(),
                gradle[i].1.display(),
                gradle[i].0,
                all.join(", ")
            ));
        }
        found.specs.push(MapSpec { package: None, path: gradle.swap_remove(i).1 });
    }
    Ok(found)
}
