//! [`Symbolizer`]: native frames of growing tables symbolized per mapping, files found,
//! opened once and looked up in parallel, with background prefetching.

use super::*;

pub(super) struct MappingState {
    located: Located,
    frames: u64,
    symbolized: u64,
    outcome: MappingOutcome,
}

/// A symbolizer over a set of symbol directories; feed it the frames of one input as they
/// appear (it remembers where each mapping's file is).
pub struct Symbolizer {
    pub(super) opts: SymbolizeOptions,
    pub(super) index: SymbolIndex,
    pub(super) mappings: BTreeMap<MappingId, MappingState>,
    /// Symbol files opened so far (`None`: could not be opened), each opened once per run.
    pub(super) open: BTreeMap<PathBuf, Option<OpenFile>>,
    /// Files taken out of `open` by [`Symbolizer::prefetch`], looking addresses up on other
    /// threads (each takes more addresses from its channel until it is closed); put back
    /// before the next lookups.
    pub(super) background: Vec<Background>,
    /// Per mapping of the tables [`Symbolizer::prefetch`] was last given (their address), its
    /// file (an index into `prefetch_files`) and load-bias headers, once located.
    pub(super) prefetch_located: (usize, Vec<Option<PrefetchFile>>),
    pub(super) prefetch_files: Vec<PathBuf>,
}

/// Where [`Symbolizer::prefetch`] looks a mapping's frames up: its file (an index into
/// `prefetch_files`) and the program headers of its load-bias correction; `None` when it has
/// no file.
pub(super) type PrefetchFile = Option<(usize, Option<(u64, u64, u64)>)>;

/// A file looking addresses up on its own thread.
pub(super) struct Background {
    path: PathBuf,
    more: std::sync::mpsc::Sender<Vec<(FrameId, u64)>>,
    job: std::thread::JoinHandle<Option<OpenFile>>,
}

impl Drop for Symbolizer {
    fn drop(&mut self) {
        self.join_background();
        // An opened file is a whole DWARF index (units, line tables, functions, answers):
        // freeing it is work nobody waits for.
        let open = std::mem::take(&mut self.open);
        if open.values().any(Option::is_some) {
            std::thread::spawn(move || drop(open));
        }
    }
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer").field("indexed_files", &self.index.len()).finish()
    }
}

/// A mapping's file and the (frame, address) pairs to look up in it.
pub(super) type MappingWork = (MappingId, PathBuf, Vec<(FrameId, u64)>);

/// A file, its opened state if any, and the work of each mapping that uses it.
pub(super) type FileJob = (PathBuf, Option<OpenFile>, Vec<FileWork>);

/// One mapping's (frame, address) pairs.
pub(super) type FileWork = (MappingId, Vec<(FrameId, u64)>);

/// A file, its opened state, and each mapping's answers.
pub(super) type FileDone = (PathBuf, Option<OpenFile>, Vec<(MappingId, Vec<(FrameId, Answer)>)>);

impl Symbolizer {
    /// Indexes the symbol directories (recursively, in parallel).
    pub fn new(opts: SymbolizeOptions) -> Self {
        let index = SymbolIndex::build(&opts.symbol_dirs);
        Symbolizer {
            opts,
            index,
            mappings: BTreeMap::new(),
            open: BTreeMap::new(),
            background: Vec::new(),
            prefetch_located: (0, Vec::new()),
            prefetch_files: Vec::new(),
        }
    }

    /// True when this symbolizer looks addresses up (it has symbol directories); otherwise it
    /// only counts the names frames have.
    pub fn looks_up(&self) -> bool {
        !self.opts.symbol_dirs.is_empty()
    }

    /// Starts looking up the frames `range` of `tables` on other threads (one per symbol file),
    /// while the caller goes on (decoding the rest of the trace); the answers are kept, and the
    /// next [`Symbolizer::symbolize`] of these frames uses them instead of looking up again. It
    /// changes nothing else: what `symbolize` reports and writes is the same with or without it.
    pub fn prefetch(&mut self, tables: &Tables, range: Range<usize>) {
        if self.opts.symbol_dirs.is_empty() {
            return;
        }
        // Per mapping, its file and load-bias headers, located once per tables (frames are
        // grouped by mapping first: no path is cloned or compared per frame).
        let key = tables as *const Tables as usize;
        if self.prefetch_located.0 != key {
            self.prefetch_located = (key, Vec::new());
        }
        let mut addrs_of: Vec<Vec<(FrameId, u64)>> = vec![Vec::new(); self.prefetch_files.len()];
        for i in range {
            let f = &tables.frames()[i];
            let Some(m) = f.mapping.filter(|_| f.lines.is_empty()) else { continue };
            let mapping = tables.mapping(m);
            let slot = m.0 as usize;
            let located = &mut self.prefetch_located.1;
            if located.len() <= slot {
                located.resize(slot + 1, None);
            }
            let found = *located[slot].get_or_insert_with(|| {
                if mapping.build_id.is_empty() && !self.opts.ignore_build_id {
                    return None;
                }
                let path = tables.strings.get(mapping.path);
                let l = self.index.locate(path, &mapping.build_id, self.opts.ignore_build_id, self.opts.find_only);
                let file = l.file?;
                let k = self.prefetch_files.iter().position(|p| *p == file).unwrap_or_else(|| {
                    self.prefetch_files.push(file);
                    addrs_of.push(Vec::new());
                    self.prefetch_files.len() - 1
                });
                Some((k, l.exec_load))
            });
            let Some((k, exec_load)) = found else { continue };
            let a = elf::corrected_address(
                f.rel_pc,
                exec_load,
                mapping.exact_offset,
                mapping.start_offset,
                mapping.load_bias,
            );
            addrs_of[k].push((FrameId(i as u32), a));
        }
        for (k, addrs) in addrs_of.into_iter().enumerate() {
            if addrs.is_empty() {
                continue;
            }
            let path = &self.prefetch_files[k];
            // A file already at work on earlier frames takes these too (a file whose thread
            // has ended leaves them to `symbolize`).
            if let Some(b) = self.background.iter().find(|b| b.path == *path) {
                let _ = b.more.send(addrs);
                continue;
            }
            let open = self.open.remove(path).flatten();
            let p = path.clone();
            let (more, work) = std::sync::mpsc::channel::<Vec<(FrameId, u64)>>();
            let job = std::thread::spawn(move || {
                let mut open = open.or_else(|| OpenFile::open(&p));
                if let Some(o) = &mut open {
                    o.lookup_all(&addrs);
                    for addrs in work {
                        o.lookup_all(&addrs);
                    }
                }
                crate::timing::at("symbolize", "background lookups done");
                open
            });
            self.background.push(Background { path: path.clone(), more, job });
        }
    }

    /// Waits for the background lookups and puts their files back.
    fn join_background(&mut self) {
        for Background { path, more, job } in std::mem::take(&mut self.background) {
            // No more work: the thread ends when it has looked up what it was given.
            drop(more);
            // A lookup that panicked leaves the file to be opened again (and fail the same way).
            self.open.insert(path, job.join().ok().flatten());
        }
    }

    /// Symbolizes the frames `range` of `tables` (all frames: `0..tables.frames().len()`).
    /// Without symbol directories nothing is looked up: the frames are only counted, as
    /// [`input_coverage`] counts them (a name from the input counts as a symbol).
    pub fn symbolize(&mut self, tables: &mut Tables, range: Range<usize>) {
        if self.opts.symbol_dirs.is_empty() {
            self.count_only(tables, range);
            return;
        }
        self.join_background();
        // Group the frames to look up by mapping.
        let mut groups: BTreeMap<MappingId, Vec<FrameId>> = BTreeMap::new();
        for i in range.clone() {
            let f = &tables.frames()[i];
            if let Some(m) = f.mapping {
                groups.entry(m).or_default().push(FrameId(i as u32));
            }
        }
        // Locate files for mappings not seen before.
        for &m in groups.keys() {
            if self.mappings.contains_key(&m) {
                continue;
            }
            let mapping = tables.mapping(m);
            let path = tables.strings.get(mapping.path).to_owned();
            let no_id = mapping.build_id.is_empty();
            let located = if no_id && !self.opts.ignore_build_id {
                Located::default()
            } else {
                self.index.locate(&path, &mapping.build_id, self.opts.ignore_build_id, self.opts.find_only)
            };
            let outcome = if no_id && !self.opts.ignore_build_id {
                MappingOutcome::NoBuildId
            } else {
                match &located.info {
                    Some(i) if i.has_dwarf => MappingOutcome::Symbolized,
                    Some(i) if i.has_symbols => MappingOutcome::SymbolTableOnly,
                    Some(_) => MappingOutcome::NoDebugInfo,
                    None if !located.mismatched.is_empty() => MappingOutcome::BuildIdMismatch,
                    None => MappingOutcome::NoFileFound,
                }
            };
            self.mappings.insert(m, MappingState { located, frames: 0, symbolized: 0, outcome });
        }
        let mut clock = crate::timing::Phases::start("symbolize");
        // Look up every unique address, one task per mapping.
        let work: Vec<MappingWork> = groups
            .iter()
            .filter_map(|(m, frames)| {
                let st = &self.mappings[m];
                let file = st.located.file.clone()?;
                let mapping = tables.mapping(*m);
                let addrs = frames
                    .iter()
                    .filter(|f| tables.frame(**f).lines.is_empty())
                    .map(|f| {
                        let rel = tables.frame(*f).rel_pc;
                        let a = elf::corrected_address(
                            rel,
                            st.located.exec_load,
                            mapping.exact_offset,
                            mapping.start_offset,
                            mapping.load_bias,
                        );
                        (*f, a)
                    })
                    .collect();
                Some((*m, file, addrs))
            })
            .collect();
        // Group by file (a library mapped twice is one file), take each file's opened state out
        // of the cache (opening it the first time), look up in parallel, and put it back.
        let mut by_file: BTreeMap<PathBuf, Vec<FileWork>> = BTreeMap::new();
        for (m, file, addrs) in work {
            by_file.entry(file).or_default().push((m, addrs));
        }
        let jobs: Vec<FileJob> =
            by_file.into_iter().map(|(f, w)| (f.clone(), self.open.remove(&f).flatten(), w)).collect();
        let done: Vec<FileDone> = jobs
            .into_par_iter()
            .map(|(path, open, work)| {
                let mut open = open.or_else(|| OpenFile::open(&path));
                let found = work
                    .into_iter()
                    .map(|(m, addrs)| (m, open.as_mut().map(|o| o.lookup_all(&addrs)).unwrap_or_default()))
                    .collect();
                (path, open, found)
            })
            .collect();
        clock.done("look up addresses");
        let mut results: Vec<(MappingId, Vec<(FrameId, Answer)>)> = Vec::new();
        for (path, open, found) in done {
            self.open.insert(path, open);
            results.extend(found);
        }
        // Count frames and apply results, in mapping order.
        for (m, frames) in &groups {
            let st = self.mappings.get_mut(m).expect("located above");
            st.frames += frames.len() as u64;
            let already = frames.iter().filter(|f| !tables.frame(**f).lines.is_empty()).count() as u64;
            st.symbolized += already;
        }
        for (m, found) in results {
            let mut n = 0;
            for (fid, lines) in found {
                if lines.is_empty() {
                    continue;
                }
                let lines: Vec<Line> = lines
                    .iter()
                    .map(|l| Line {
                        function: tables.strings.intern(&l.function),
                        system_name: tables.strings.intern(&l.system_name),
                        file: tables.strings.intern(&l.file),
                        line: l.line,
                        column: l.column,
                    })
                    .collect();
                tables.frames_mut()[fid.0 as usize].lines = lines;
                n += 1;
            }
            let st = self.mappings.get_mut(&m).expect("located above");
            st.symbolized += n;
        }
        clock.done("apply answers");
        for st in self.mappings.values_mut() {
            if st.frames > 0 && st.symbolized == st.frames && st.located.file.is_none() {
                st.outcome = MappingOutcome::AlreadySymbolized;
            }
            if st.symbolized == 0
                && matches!(st.outcome, MappingOutcome::Symbolized | MappingOutcome::SymbolTableOnly)
                && st.frames > 0
            {
                st.outcome = MappingOutcome::AddressOutsideFunctions;
            } else if st.symbolized > 0 && st.outcome == MappingOutcome::AddressOutsideFunctions {
                st.outcome = MappingOutcome::Symbolized;
            }
        }
    }

    /// Counts the native frames of `range` and those with a symbol, looking nothing up.
    pub(super) fn count_only(&mut self, tables: &Tables, range: Range<usize>) {
        for i in range {
            let f = &tables.frames()[i];
            if let Some(m) = f.mapping {
                let st = self.mappings.entry(m).or_insert_with(|| MappingState {
                    located: Located::default(),
                    frames: 0,
                    symbolized: 0,
                    outcome: MappingOutcome::AlreadySymbolized,
                });
                st.frames += 1;
                if frame_has_symbol(f) {
                    st.symbolized += 1;
                } else {
                    st.outcome = MappingOutcome::NoSymbolDirectory;
                }
            }
        }
    }

    /// The report so far.
    pub fn report(&self, tables: &Tables) -> SymbolizeReport {
        let mut r = SymbolizeReport {
            names_count: self.opts.symbol_dirs.is_empty(),
            indexed_files: self.index.len(),
            problems: self.index.problems.clone(),
            ..Default::default()
        };
        for (m, st) in &self.mappings {
            let mapping = tables.mapping(*m);
            r.frames += st.frames;
            r.frames_symbolized += st.symbolized;
            r.mappings.push(MappingReport {
                path: tables.strings.get(mapping.path).to_owned(),
                build_id: hex(&mapping.build_id),
                frames: st.frames,
                symbolized: st.symbolized,
                outcome: st.outcome,
                file: st.located.file.as_ref().map(|p| p.display().to_string()),
                tried: st.located.tried.clone(),
                mismatched: st.located.mismatched.iter().map(|p| p.display().to_string()).collect(),
                bytes: 0,
                mapping: m.0,
            });
        }
        r
    }
}
