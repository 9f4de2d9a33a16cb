//! `heapconv deobfuscate`: ProGuard/R8 maps as Perfetto `DeobfuscationMapping` packets, as
//! `traceconv deobfuscate` writes them (`cat trace mapping > deobfuscated`).

use std::path::{Path, PathBuf};

use super::load::ProguardMaps;
use crate::encode::deobfuscation_mapping::encode_deobfuscation_mapping;
use crate::error::{Error, ErrorKind, Result};
use crate::output::write_atomic;

/// Options of `heapconv deobfuscate`.
#[derive(Debug, Clone, Default)]
pub struct DeobfuscateOptions {
    /// The maps, each written as one packet. Default: none (an error: nothing to write).
    pub maps: ProguardMaps,
}

/// What `deobfuscate` wrote.
#[derive(Debug)]
pub struct DeobfuscateRun {
    /// The packets (concatenated `Trace` messages), when written to standard output.
    pub packets: Vec<u8>,
    /// Per map: its file, package and number of classes.
    pub maps: Vec<(String, Option<String>, usize)>,
}

/// Writes one `DeobfuscationMapping` packet per map to `out` (`None`: returned in the run for
/// standard output). The trace is not read, as traceconv does not read it: the packets are
/// meant to be appended to it. `inputs` are refused as the output path.
pub fn run_deobfuscate(out: Option<&Path>, inputs: &[PathBuf], opts: &DeobfuscateOptions) -> Result<DeobfuscateRun> {
    let Some(deob) = opts.maps.open()? else {
        return Err(Error::new(ErrorKind::Usage, "no ProGuard/R8 mapping file given"));
    };
    let mut packets = Vec::new();
    let mut maps = Vec::new();
    for m in deob.maps() {
        let table = m.table();
        maps.push((m.name().to_owned(), m.package().map(str::to_owned), table.classes.len()));
        packets.extend_from_slice(&encode_deobfuscation_mapping(&table));
    }
    if let Some(path) = out {
        write_atomic(path, &packets, inputs)?;
        packets.clear();
    }
    Ok(DeobfuscateRun { packets, maps })
}
