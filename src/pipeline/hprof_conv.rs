//! `heapconv hprof-conv`: Android heap dumps (1.0.3) to the standard format (1.0.2).

use std::path::{Path, PathBuf};

use super::batch::{BatchInput, Done, file_for};
use super::select::DumpSelect;
use crate::decode::Input;
use crate::decode::hprof::ObjectSize;
use crate::decode::hprof::{HprofConvOptions, HprofConvReport, NoSeek, hprof_conv};
use crate::decode::perfetto::DecodeOptions;
use crate::encode::hprof::{HprofOptions, encode_hprof};
use crate::error::{Error, ErrorKind, Result};
use crate::output::{AtomicFile, check_not_input, commit_staged, discard_staged, stage_file};

/// Options of `heapconv hprof-conv`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HprofConvRunOptions {
    /// Leave out the instances and arrays of the zygote and image heaps, as `hprof-conv -z`.
    /// Default: false.
    pub app_only: bool,
    /// ProGuard/R8 maps: the dump is written with deobfuscated class and field names, the way
    /// `heapconv hprof` writes it (from the heap model: primitive values are written as zeros;
    /// any HPROF version is read; of a file with several dumps, the last). Default: none.
    pub proguard: super::load::ProguardMaps,
}

impl HprofConvRunOptions {
    /// The converter's options.
    fn conv(&self) -> HprofConvOptions {
        HprofConvOptions { app_only: self.app_only, ..HprofConvOptions::default() }
    }
}

/// Runs `hprof-conv`: converts the Android heap dump `input` (`-`: standard input; gzip is
/// undone) to the standard format in `output` (`-`: standard output), written atomically.
pub fn run_hprof_conv(input: &Path, output: &Path, opts: &HprofConvRunOptions) -> Result<HprofConvReport> {
    if !opts.proguard.is_empty() {
        return run_deobfuscated(input, output, opts);
    }
    let opts = &opts.conv();
    use std::io::Write;
    let inputs = [input.to_path_buf()];
    let mut inp = Input::open(input, DecodeOptions::default().max_gzip_bytes)?;
    let name = inp.name.clone();
    if output.as_os_str() == "-" {
        let mut out = NoSeek(std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock()));
        let report = hprof_conv(inp.reader(), &name, &mut out, opts)?;
        out.flush().map_err(|e| Error::io("writing standard output", e))?;
        return Ok(report);
    }
    check_not_input(output, &inputs)?;
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, file) = stage_file(&dir, 0)?;
    let result = (|| {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let report = hprof_conv(inp.reader(), &name, &mut out, opts)?;
        let file = out.into_inner().map_err(|e| Error::io(format!("writing {}", tmp.display()), e.into_error()))?;
        crate::output::sync_file(&file).map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
        Ok(report)
    })();
    match result {
        Ok(report) => {
            commit_staged(&tmp, output, &inputs)?;
            Ok(report)
        }
        Err(e) => {
            discard_staged([tmp]);
            Err(e)
        }
    }
}

/// `hprof-conv --proguard-map`: the heap dump read into the heap model, deobfuscated and
/// written by the hprof writer in the standard format (as `heapconv hprof` writes).
fn run_deobfuscated(input: &Path, output: &Path, opts: &HprofConvRunOptions) -> Result<HprofConvReport> {
    use std::io::Write;
    if opts.app_only {
        return Err(Error::new(ErrorKind::Usage, "hprof-conv: -z cannot be combined with --proguard-map"));
    }
    let inputs = [input.to_path_buf()];
    let inp = Input::open(input, DecodeOptions::default().max_gzip_bytes)?;
    let hopts = HprofOptions { primitive_padding: false, ..HprofOptions::default() };
    let mut dump = None;
    let mut records = 0;
    let mut bytes_in = 0;
    super::load::for_selected_hprof_dumps(
        inp,
        DumpSelect::Last,
        ObjectSize::Fields,
        &opts.proguard,
        &mut |_, d, s| {
            records = s.records.values().map(|t| t.count).sum();
            bytes_in = s.bytes;
            dump = Some(d);
            Ok(())
        },
    )?;
    let dump = dump.ok_or_else(|| Error::new(ErrorKind::NoData, format!("{}: no heap dump", input.display())))?;
    let mut report = HprofConvReport { bytes_in, records, ..HprofConvReport::default() };
    if output.as_os_str() == "-" {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
        report.bytes_out = encode_hprof(&dump, &hopts, &mut out)?.bytes;
        out.flush().map_err(|e| Error::io("writing standard output", e))?;
        return Ok(report);
    }
    // The writer needs no seeking: an AtomicFile (temporary file, renamed into place) will do.
    let mut file = AtomicFile::create(output, &inputs)?;
    let failed = |e| Error::io(format!("writing {}", output.display()), e);
    let mut out = std::io::BufWriter::with_capacity(1 << 20, &mut file);
    report.bytes_out = encode_hprof(&dump, &hopts, &mut out)?.bytes;
    out.flush().map_err(failed)?;
    drop(out);
    file.commit()?;
    Ok(report)
}

/// `hprof-conv` of one heap dump: `OUT/<key>.hprof`.
pub fn hprof_conv_one(input: &BatchInput, out_dir: &Path, opts: &HprofConvRunOptions) -> Result<Done> {
    let out = file_for(out_dir, &input.key, "hprof")?;
    let r = run_hprof_conv(&input.path, &out, opts)?;
    let mut warnings = Vec::new();
    if r.nodata_zero_filled + r.nodata_emptied > 0 {
        warnings.push(format!(
            "{} PRIMITIVE_ARRAY_NODATA record(s) written as arrays of zeros and {} as empty arrays",
            r.nodata_zero_filled, r.nodata_emptied
        ));
    }
    let details = serde_json::json!({
        "bytes_in": r.bytes_in,
        "bytes_out": r.bytes_out,
        "records": r.records,
        "heap_dump_records": r.heap_dump_records,
        "sub_records": r.sub_records,
        "heap_infos_dropped": r.heap_infos_dropped,
        "roots_rewritten": r.roots_rewritten,
        "objects_dropped": r.objects_dropped,
    });
    Ok(Done { outputs: vec![out], warnings, data_loss: r.data_loss(), details: Some(details), ..Done::default() })
}
