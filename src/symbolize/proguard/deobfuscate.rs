//! Deobfuscation across maps: which map applies to which package, sessions that count what
//! was left obfuscated, heap dumps renamed, and the `DeobfuscationMapping` tables of a trace
//! merged per package.

use super::*;

/// A mapping file to use and the Android package it is for (`--proguard-map [PACKAGE=]FILE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapSpec {
    /// The package whose processes the map applies to; `None`: inputs that name no package
    /// (HPROF files, DDM captures) and frames whose package cannot be told.
    pub package: Option<String>,
    /// The mapping file.
    pub path: std::path::PathBuf,
}

impl MapSpec {
    /// Reads `[PACKAGE=]FILE`: a package before the first `=`, when there is one.
    pub fn parse(arg: &str) -> MapSpec {
        match arg.split_once('=') {
            Some((pkg, path)) if !pkg.is_empty() => MapSpec { package: Some(pkg.to_owned()), path: path.into() },
            Some((_, path)) => MapSpec { package: None, path: path.into() },
            None => MapSpec { package: None, path: arg.into() },
        }
    }

    /// Reads `PERFETTO_PROGUARD_MAP` as traceconv does: `package=path` entries separated by
    /// `:`, the `=` mandatory (an empty package, `=path`, is heapconv's spelling of a map for
    /// inputs without one). Empty entries are skipped.
    pub fn parse_env(value: &str) -> Result<Vec<MapSpec>> {
        value
            .split(':')
            .filter(|t| !t.is_empty())
            .map(|t| {
                if t.contains('=') {
                    Ok(MapSpec::parse(t))
                } else {
                    Err(Error::new(
                        ErrorKind::Usage,
                        format!(
                            "PERFETTO_PROGUARD_MAP: {t:?} is not package=filename (expected \
                             package=filename[:package=filename...])"
                        ),
                    ))
                }
            })
            .collect()
    }
}

/// The Android package a Java frame's mapping path belongs to, by trace processor's rules:
/// `/data/app/<pkg>-<suffix>/…`, `/data/app/~~<suffix>/<pkg>-<suffix>/…`, and a path that
/// ends `… dex extracted in memory from /data/app/…`.
pub fn package_of_mapping_path(path: &str) -> Option<&str> {
    let at = path.find("/data/app/")?;
    let rest = &path[at + "/data/app/".len()..];
    let rest = if let Some(r) = rest.strip_prefix("~~") { &r[r.find('/')? + 1..] } else { rest };
    let dir = &rest[..rest.find('/').unwrap_or(rest.len())];
    let pkg = dir.rfind('-').map_or(dir, |i| &dir[..i]);
    (!pkg.is_empty()).then_some(pkg)
}

/// What one map did over a run, for the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MapUse {
    /// The counts of its retracers, summed.
    #[serde(flatten)]
    pub counts: RetraceReport,
    /// What it was applied to (frames of a package, a heap dump's classes…), deduplicated.
    pub used_for: Vec<String>,
}

/// What deobfuscation did over a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeobfuscationReport {
    /// Per map, in the order given.
    pub maps: Vec<MapUse>,
    /// Java names no map deobfuscated (their class is in no map that applied), counting only
    /// those worth reporting ([`Deobfuscator::worth_reporting`]: obfuscated-looking names and
    /// names in packages a map covers, not framework classes).
    pub left_obfuscated: u64,
    /// A few of them, as examples.
    pub left_examples: Vec<String>,
}

impl DeobfuscationReport {
    /// The maps that deobfuscated nothing (each deserves a warning).
    pub fn unmatched_maps(&self) -> impl Iterator<Item = &MapUse> {
        self.maps.iter().filter(|m| m.counts.deobfuscated == 0)
    }
}

/// Several mapping files, each for a package or for inputs without one: the one object a run
/// deobfuscates with. Maps are indexed once; members are read per [`Session`].
pub struct Deobfuscator {
    maps: Vec<ProguardMap>,
    uses: std::sync::Mutex<Vec<MapUse>>,
    left: std::sync::Mutex<(u64, Vec<String>)>,
}

impl std::fmt::Debug for Deobfuscator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deobfuscator").field("maps", &self.maps).finish()
    }
}

impl Deobfuscator {
    /// Opens and indexes every map.
    pub fn open(specs: &[MapSpec]) -> Result<Self> {
        let maps = specs.iter().map(|s| ProguardMap::open(&s.path, s.package.clone())).collect::<Result<Vec<_>>>()?;
        Ok(Self::from_maps(maps))
    }

    /// A deobfuscator over maps already open.
    pub fn from_maps(maps: Vec<ProguardMap>) -> Self {
        let uses = maps
            .iter()
            .map(|m| MapUse {
                counts: RetraceReport {
                    map: m.name.clone(),
                    package: m.package.clone(),
                    classes_in_map: m.entries.len() as u64,
                    ..Default::default()
                },
                used_for: Vec::new(),
            })
            .collect();
        Deobfuscator { maps, uses: std::sync::Mutex::new(uses), left: std::sync::Mutex::new((0, Vec::new())) }
    }

    /// The maps, in the order given.
    pub fn maps(&self) -> &[ProguardMap] {
        &self.maps
    }

    /// The map for `package`: the map given for it; else (or without a package) the map given
    /// without a package; else, when exactly one map was given, that one for names whose
    /// package cannot be told (`package` is `None`).
    pub fn pick(&self, package: Option<&str>) -> Option<usize> {
        if let Some(p) = package {
            if let Some(i) = self.maps.iter().position(|m| m.package() == Some(p)) {
                return Some(i);
            }
        }
        if let Some(i) = self.maps.iter().position(|m| m.package().is_none()) {
            return Some(i);
        }
        (package.is_none() && self.maps.len() == 1).then_some(0)
    }

    /// A session: retracers over every map, reading classes as they are asked for; its counts
    /// join the report when it is dropped.
    pub fn session(&self) -> Session<'_> {
        Session {
            deob: self,
            retracers: self.maps.iter().map(|_| OnceLock::new()).collect(),
            used_for: Vec::new(),
            left: (0, Vec::new()),
        }
    }

    /// Whether a class no map names is worth reporting as left obfuscated: its simple name
    /// looks obfuscated (its first `$`-part is one to three lowercase letters or digits,
    /// starting with a letter, as R8 and ProGuard name classes), or its package holds a class
    /// one of the maps names (by original or obfuscated name: a class of the app the map
    /// misses). Framework and library classes (`java.*`, `android.*`, `kotlin.*`, …) in
    /// packages no map covers are not, and neither are primitive types and their arrays. Array
    /// suffixes and `java.lang.Class<…>` are looked through.
    pub fn worth_reporting(&self, class: &str) -> bool {
        let class = class.strip_prefix("java.lang.Class<").and_then(|c| c.strip_suffix('>')).unwrap_or(class);
        let base = class.trim_end_matches("[]");
        if base.is_empty()
            || matches!(base, "boolean" | "byte" | "char" | "short" | "int" | "long" | "float" | "double" | "void")
        {
            return false;
        }
        let (package, simple) = base.rsplit_once('.').unwrap_or(("", base));
        let first = simple.split('$').next().unwrap_or(simple);
        let looks_obfuscated = (1..=3).contains(&first.len())
            && first.starts_with(|c: char| c.is_ascii_lowercase())
            && first.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        looks_obfuscated || self.maps.iter().any(|m| m.covers_package(package))
    }

    /// What deobfuscation did so far.
    pub fn report(&self) -> DeobfuscationReport {
        let maps = self.uses.lock().map(|u| u.clone()).unwrap_or_default();
        let (left_obfuscated, left_examples) = self.left.lock().map(|l| l.clone()).unwrap_or_default();
        DeobfuscationReport { maps, left_obfuscated, left_examples }
    }

    /// A deobfuscator over `specs`' files and then the `DeobfuscationMapping` tables of a trace
    /// (`source` names the trace in reports), merged per package by [`merge_trace_tables`].
    /// A map file given for a package takes precedence over the trace's packets for it.
    pub fn with_trace_tables(
        specs: &[MapSpec],
        source: &str,
        tables: Vec<crate::model::deobfuscation::DeobfuscationTable>,
    ) -> Result<Self> {
        let mut maps =
            specs.iter().map(|s| ProguardMap::open(&s.path, s.package.clone())).collect::<Result<Vec<_>>>()?;
        for t in merge_trace_tables(tables) {
            let name = if t.package.is_empty() {
                format!("{source} (DeobfuscationMapping packets)")
            } else {
                format!("{source} (DeobfuscationMapping packets for {})", t.package)
            };
            maps.push(ProguardMap::from_table(name, &t)?);
        }
        Ok(Self::from_maps(maps))
    }
}

/// Retracers over a [`Deobfuscator`]'s maps for one pass over an input.
pub struct Session<'d> {
    deob: &'d Deobfuscator,
    retracers: Vec<OnceLock<Retracer<'d>>>,
    used_for: Vec<(usize, String)>,
    left: (u64, Vec<String>),
}

impl<'d> Session<'d> {
    /// The retracer of map `i` (see [`Deobfuscator::pick`]).
    pub fn retracer(&self, i: usize) -> &Retracer<'d> {
        self.retracers[i].get_or_init(|| Retracer::new(&self.deob.maps[i]))
    }

    /// The retracer for `package` ([`Deobfuscator::pick`]), noting `what` it was used for.
    pub fn for_package(&mut self, package: Option<&str>, what: &str) -> Option<usize> {
        let i = self.deob.pick(package)?;
        if !self.used_for.iter().any(|(j, w)| *j == i && w == what) {
            self.used_for.push((i, what.to_owned()));
        }
        Some(i)
    }

    /// Notes a Java class no map deobfuscated, when it is worth reporting
    /// ([`Deobfuscator::worth_reporting`]).
    pub fn left_obfuscated(&mut self, class: &str) {
        self.left_obfuscated_as(class, class);
    }

    /// Notes a Java name (a class, or a frame `class.method`) no map deobfuscated, `class`
    /// being its class, when it is worth reporting ([`Deobfuscator::worth_reporting`]).
    pub fn left_obfuscated_as(&mut self, class: &str, name: &str) {
        if !self.deob.worth_reporting(class) {
            return;
        }
        self.left.0 += 1;
        if self.left.1.len() < 5 && !self.left.1.iter().any(|n| n == name) {
            self.left.1.push(name.to_owned());
        }
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if let Ok(mut uses) = self.deob.uses.lock() {
            for (i, cell) in self.retracers.iter().enumerate() {
                if let Some(r) = cell.get() {
                    let n = r.report();
                    uses[i].counts.add_counts(&n);
                }
            }
            for (i, w) in self.used_for.drain(..) {
                if !uses[i].used_for.contains(&w) {
                    uses[i].used_for.push(w);
                }
            }
        }
        if let Ok(mut left) = self.deob.left.lock() {
            left.0 += self.left.0;
            for n in self.left.1.drain(..) {
                if left.1.len() < 5 && !left.1.contains(&n) {
                    left.1.push(n);
                }
            }
        }
    }
}

/// Deobfuscates a Java heap dump with map `map` of `session`: class names (arrays and
/// `java.lang.Class<…>` too), instance and static field names. A heap graph names a field
/// `Class.field` (optionally after its type), so the class in the name says which map entry
/// applies; an HPROF file names it `field` alone, so the class that declares it does (each
/// reference's field is looked up from the object's class up its superclasses). Field names are
/// interned again, since one obfuscated name stands for different fields in different classes.
pub fn deobfuscate_heap_dump(dump: &mut crate::model::HeapDump, session: &mut Session<'_>, map: usize) {
    use crate::model::heap::{FieldIdx, NO_FIELD};
    let r = session.retracer(map);
    let obf_names: Vec<String> = dump.classes.iter().map(|c| c.name.clone()).collect();
    let old_fields = std::mem::take(&mut dump.field_names);
    let mut new_fields: Vec<String> = Vec::new();
    let mut interned: HashMap<String, FieldIdx> = HashMap::new();
    let mut intern = |s: String, new_fields: &mut Vec<String>| -> FieldIdx {
        *interned.entry(s.clone()).or_insert_with(|| {
            new_fields.push(s);
            (new_fields.len() - 1) as FieldIdx
        })
    };
    let mut left: Vec<String> = Vec::new();
    // The new name of field `f` declared by class `ci`.
    let mut rename = |ci: usize, f: FieldIdx, new_fields: &mut Vec<String>| -> FieldIdx {
        if f == NO_FIELD || f as usize >= old_fields.len() {
            return f;
        }
        let old = &old_fields[f as usize];
        let (ty, qualified) = match old.rfind(' ') {
            Some(i) => (Some(&old[..i]), &old[i + 1..]),
            None => (None, &old[..]),
        };
        let ty = ty.map(|t| r.class_name(t).unwrap_or_else(|| t.to_owned()));
        let name = match split_java_frame(qualified) {
            Some((class, field)) => {
                let c = r.class_name(class).unwrap_or_else(|| class.to_owned());
                let fld = r.field_names(class, field).map_or_else(|| field.to_owned(), |v| v.join(" | "));
                format!("{c}.{fld}")
            }
            None => match r.field_names(obf_names[ci].trim_end_matches("[]"), qualified) {
                Some(v) => v.join(" | "),
                None => qualified.to_owned(),
            },
        };
        let full = match ty {
            Some(t) => format!("{t} {name}"),
            None => name,
        };
        intern(full, new_fields)
    };
    let mut declared: HashMap<(usize, FieldIdx), FieldIdx> = HashMap::new();
    for ci in 0..dump.classes.len() {
        for k in 0..dump.classes[ci].fields.len() {
            let f = dump.classes[ci].fields[k].name;
            let n = rename(ci, f, &mut new_fields);
            declared.insert((ci, f), n);
            dump.classes[ci].fields[k].name = n;
        }
        for k in 0..dump.classes[ci].static_refs.len() {
            let f = dump.classes[ci].static_refs[k].0;
            dump.classes[ci].static_refs[k].0 = rename(ci, f, &mut new_fields);
        }
    }
    // References: the class that declares the field, from the object's class upwards.
    let mut memo: HashMap<(u32, FieldIdx), FieldIdx> = HashMap::new();
    for o in 0..dump.obj_class.len() {
        let start = dump.ref_start[o] as usize;
        let end = dump.ref_start.get(o + 1).map_or(dump.ref_field.len(), |&e| e as usize);
        let oc = dump.obj_class[o];
        for k in start..end.min(dump.ref_field.len()) {
            let f = dump.ref_field[k];
            if f == NO_FIELD || f as usize >= old_fields.len() {
                continue;
            }
            let n = *memo.entry((oc, f)).or_insert_with(|| {
                let mut c = Some(oc);
                let mut hops = 0;
                while let Some(ci) = c {
                    if let Some(&n) = declared.get(&(ci as usize, f)) {
                        return n;
                    }
                    c = dump.classes.get(ci as usize).and_then(|cl| cl.superclass);
                    hops += 1;
                    if hops > 1000 {
                        break;
                    }
                }
                rename(oc as usize, f, &mut new_fields)
            });
            dump.ref_field[k] = n;
        }
    }
    for (ci, c) in dump.classes.iter_mut().enumerate() {
        match r.class_name(&obf_names[ci]) {
            Some(n) => c.name = n,
            None => left.push(obf_names[ci].clone()),
        }
    }
    dump.field_names = new_fields;
    for n in left {
        session.left_obfuscated(&n);
    }
}

/// Merges `DeobfuscationMapping` tables read from a trace into one table per package, in the
/// order packages first appear. Trace processor applies every packet in turn, each overwriting
/// the names the ones before set, so a class named again takes the later packet's name, and a
/// later packet's members replace the earlier ones of the same obfuscated name.
pub fn merge_trace_tables(
    tables: Vec<crate::model::deobfuscation::DeobfuscationTable>,
) -> Vec<crate::model::deobfuscation::DeobfuscationTable> {
    use crate::model::deobfuscation::DeobfuscationTable;
    let mut out: Vec<DeobfuscationTable> = Vec::new();
    let mut index: Vec<HashMap<String, usize>> = Vec::new();
    for t in tables {
        let k = match out.iter().position(|o| o.package == t.package) {
            Some(k) => k,
            None => {
                out.push(DeobfuscationTable { package: t.package.clone(), classes: Vec::new() });
                index.push(HashMap::new());
                out.len() - 1
            }
        };
        for c in t.classes {
            match index[k].get(&c.obfuscated) {
                Some(&i) => {
                    let old = &mut out[k].classes[i];
                    old.deobfuscated = c.deobfuscated;
                    old.fields.retain(|f| !c.fields.iter().any(|n| n.obfuscated == f.obfuscated));
                    old.fields.extend(c.fields);
                    old.methods.retain(|m| !c.methods.iter().any(|n| n.obfuscated == m.obfuscated));
                    old.methods.extend(c.methods);
                }
                None => {
                    index[k].insert(c.obfuscated.clone(), out[k].classes.len());
                    out[k].classes.push(c);
                }
            }
        }
    }
    out
}
