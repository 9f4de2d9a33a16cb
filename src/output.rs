//! Writing outputs safely: every file is written to a temporary file in the same directory
//! and renamed into place, so a failed run never leaves a half-written output; an output that
//! would overwrite an input is refused.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

/// True when `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Refuses `output` if it is one of `inputs`.
pub fn check_not_input(output: &Path, inputs: &[PathBuf]) -> Result<()> {
    for i in inputs {
        if i.as_os_str() != "-" && (i == output || same_file(i, output)) {
            return Err(Error::new(
                ErrorKind::Usage,
                format!("refusing to write {}: it is an input", output.display()),
            ));
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically (temporary file + rename), refusing to replace an input.
pub fn write_atomic(path: &Path, bytes: &[u8], inputs: &[PathBuf]) -> Result<()> {
    check_not_input(path, inputs)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.heapconv-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(format!("writing {}", path.display()), e));
    }
    Ok(())
}

/// Creates `dir` (and its parents) if needed.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating directory {}", dir.display()), e))
}
