//! Java deobfuscation with ProGuard and R8 mapping files (`mapping.txt`), the managed-code
//! counterpart of native symbolization.
//!
//! # The format
//!
//! A mapping file is text, one record a line. A line that starts at column 0 opens a class:
//! `original.Name -> obfuscated.Name:`. Indented lines below it are its members: fields
//! (`type originalName -> obfuscatedName`) and methods
//! (`[a:b:]returnType [OriginalClass.]originalName(args)[:c[:d]] -> obfuscatedName`), where
//! `a:b` is the obfuscated line range and `c:d` the original one; several method lines sharing
//! one obfuscated range are an inline chain, innermost first, the enclosing method last. Lines
//! starting with `#` are comments; R8 writes JSON metadata in them (`{"id":"sourceFile",…}`,
//! `com.android.tools.r8.synthesized`, `…outline`, `…outlineCallsite`, `…rewriteFrame`,
//! `…residualsignature`) after the record they describe.
//!
//! # How it is read
//!
//! Opening a map scans it once, streaming (it is neither memory-mapped nor held), for class
//! lines only: the index keeps each class's names and the byte range of its section. A
//! class's members are read from the file when the input names the class, one line at a time
//! with our own reader of the member-line grammar (`line.rs`), into a compact table of our
//! own (`members.rs`): spans into a copy of the class's lines, a few dozen bytes a member. The
//! reader gives the records of Sentry's [`proguard`] crate, exactly as the crate's own line
//! parser does (tests compare the two on fixture, generated, real and random lines), at a
//! fraction of its cost: a large input reads nearly every line of a large map, and the
//! crate's parser was a fifth of that time. The lookup rules over the table are R8
//! `retrace`'s as the crate implements them (line ranges, inline chains, ambiguous members,
//! `sourceFile`, synthesized members, outlines), checked against the crate's own mapper by a
//! unit test; the crate's mapper itself is not used, as it keeps hash maps of cloned records
//! per class (about eight times the map's bytes once every class is read).
//!
//! Two ways to ask: [`Retracer::frame`] and friends read a class the first time it is named
//! and keep its table for the run (heap dumps, small inputs); [`Retracer::frames`] answers a
//! batch of frames, each distinct frame once, classes in parallel, each class's table dropped
//! once its frames are answered, so memory stays at the index and the answers however much of
//! the map is touched. A batch reads runs of neighbouring classes with one read, parses each
//! class in place in that block (no copy), and keeps in its table only the method lines of
//! the names asked about (every line is still read: skipped lines count the same).
//! [`Retracer::stack`] follows one call stack, for the rules that need the frame below: an
//! R8 outline frame is dropped and its caller's line becomes the outline's call site
//! (`outline`/`outlineCallsite`).
//!
//! Answers ([`Retraced`], [`OriginalFrame`]) borrow their names from the map's text: from the
//! retracer's kept tables for [`Retracer::frame`], from the class being answered for the
//! closure of [`Retracer::frames_with`] (which copies only what it keeps); `into_owned` makes
//! an answer of its own ([`Retracer::frames`] gives those).
//!
//! # Bad lines
//!
//! A class line that does not read as `original -> obfuscated:` (or is not UTF-8), an indented
//! line before the first class, and a second section for the same obfuscated class are errors
//! naming the file and line. A member line that does not parse is skipped and counted
//! ([`RetraceReport::skipped_lines`], with the first such line's number), as `retrace` skips
//! it: one odd line should not cost a whole map.
//!
//! # Limits
//!
//! Each class's members are read on their own; the source file of a method inlined from
//! another class is read from that class's `sourceFile` record (the start of its section,
//! found by original name), as R8's retrace does, and made from its name (`Foo.java`, as the
//! crate does) when it has none. `rewriteFrame` rules apply to the innermost frame of a thrown
//! exception's stack ([`Retracer::stack_thrown`]: `throws(<descriptor>)` conditions and
//! `removeInnerFrames(n)` actions; a rule with anything else does not apply); heapconv's
//! inputs record no exceptions, so conversions never apply them. `residualsignature` is read
//! for every method line ([`Retracer::frame_typed`] narrows candidates by it); heapprofd and
//! DDM frames carry no signature, so for them it changes nothing, as in R8's retrace.

mod deobfuscate;
mod index;
mod line;
mod members;
mod retrace;
#[cfg(test)]
mod tests;

pub use deobfuscate::{
    DeobfuscationReport, Deobfuscator, MapSpec, MapUse, Session, deobfuscate_heap_dump, merge_trace_tables,
    package_of_mapping_path,
};
pub use index::{ProguardMap, member_lines_as_the_crate_reads_them};
pub use retrace::{FrameQuery, KindCounts, OriginalFrame, RetraceReport, Retraced, Retracer, split_java_frame};

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use proguard::ProguardRecord;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use crate::error::{Error, ErrorKind, Result};
use members::ClassTable;
