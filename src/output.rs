//! Writing outputs safely: every file is written to a temporary file in the same directory
//! and renamed into place, so a failed run never leaves a half-written output; an output that
//! would overwrite an input is refused. An output that already exists and is not a regular file
//! (`/dev/null`, `/dev/stdout`, a named pipe) is written in place: renaming over it would
//! replace the device or pipe with a plain file.
//!
//! Each file is flushed to disk before it is renamed into place, except after
//! [`defer_sync`]: a batch writes thousands of small files, and one `fsync` each kept the CPUs
//! idle most of the time. Files are then renamed as soon as they are written and flushed
//! together, many at a time, by [`sync_deferred`]. A killed run still never leaves a
//! half-written file under an output's name (renaming comes after writing); only a power
//! failure before [`sync_deferred`] can.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, ErrorKind, Result};

/// A number unique within the process: temporary files of outputs written at the same time
/// (a batch converts many inputs on several threads) never share a name.
fn next_seq() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// Files renamed into place since [`defer_sync`], to be flushed by [`sync_deferred`]; `None`
/// when every file is flushed as it is written.
static DEFERRED: Mutex<Option<Vec<PathBuf>>> = Mutex::new(None);

fn deferred() -> std::sync::MutexGuard<'static, Option<Vec<PathBuf>>> {
    DEFERRED.lock().unwrap_or_else(|e| e.into_inner())
}

/// From now on (in this process), files are not flushed to disk one by one but all at once by
/// [`sync_deferred`].
pub fn defer_sync() {
    let mut d = deferred();
    if d.is_none() {
        *d = Some(Vec::new());
    }
}

/// Flushes `f` to disk, unless flushing is deferred (see [`defer_sync`]).
pub fn sync_file(f: &fs::File) -> std::io::Result<()> {
    if deferred().is_some() { Ok(()) } else { f.sync_all() }
}

/// Notes a file renamed into place, to be flushed later when flushing is deferred.
fn placed(path: &Path) {
    if let Some(list) = deferred().as_mut() {
        list.push(path.to_path_buf());
    }
}

/// Flushes every file placed since [`defer_sync`] to disk, on several threads (flushing waits
/// for the disk, not for the CPU), and goes back to flushing each file as it is written.
/// Returns the files that could not be flushed, with the error.
pub fn sync_deferred() -> Vec<(PathBuf, Error)> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let Some(paths) = deferred().take() else { return Vec::new() };
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..paths.len().min(16) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(p) = paths.get(i) else { break };
                    if let Err(e) = fs::OpenOptions::new().write(true).open(p).and_then(|f| f.sync_all()) {
                        let err = Error::io(format!("flushing {} to disk", p.display()), e);
                        failed.lock().unwrap_or_else(|e| e.into_inner()).push((p.clone(), err));
                    }
                }
            });
        }
    });
    let mut failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    failed.sort_by(|a, b| a.0.cmp(&b.0));
    failed
}

/// True when `a` and `b` name the same existing file: the same path once symlinks are
/// resolved, or (on Unix) the same device and inode, which also catches hard links.
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (fs::metadata(a), fs::metadata(b)) {
            if x.dev() == y.dev() && x.ino() == y.ino() {
                return true;
            }
        }
    }
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

/// True when `path` exists and is something other than a regular file or a directory: a
/// character device, a named pipe or a socket, which must be written in place.
pub fn is_special(path: &Path) -> bool {
    match fs::metadata(path) {
        Ok(m) => !m.is_file() && !m.is_dir(),
        Err(_) => false,
    }
}

/// An output being written: a hidden temporary file in the output's directory, renamed into
/// place by [`AtomicFile::commit`] (after flushing it to disk, unless flushing is deferred)
/// and removed if dropped before; or, for an existing special file (see [`is_special`]), the
/// file itself. Lets a command write an output as its parts are ready.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    /// The temporary file, until it is renamed; `None` for a special file.
    tmp: Option<PathBuf>,
    file: fs::File,
    /// Bytes written so far, and up to where the disk writes were started (see
    /// [`AtomicFile::start_writeback`]).
    written: u64,
    started: u64,
}

impl AtomicFile {
    /// Starts writing `path` (creating its folder if needed), refusing it if it is one of
    /// `inputs`.
    pub fn create(path: &Path, inputs: &[PathBuf]) -> Result<AtomicFile> {
        check_not_input(path, inputs)?;
        let failed = |e| Error::io(format!("writing {}", path.display()), e);
        if is_special(path) {
            let file = fs::OpenOptions::new().write(true).open(path).map_err(failed)?;
            return Ok(AtomicFile { path: path.to_path_buf(), tmp: None, file, written: 0, started: 0 });
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // `-o new/dir/file` works as `-o new/dir` does for commands writing several files.
        if !dir.exists() {
            ensure_dir(&dir)?;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.heapconv-{}-{}.tmp", std::process::id(), next_seq()));
        let file = fs::File::create(&tmp).map_err(failed)?;
        Ok(AtomicFile { path: path.to_path_buf(), tmp: Some(tmp), file, written: 0, started: 0 })
    }

    /// Puts the output in place: flushes it and renames the temporary file over `path`.
    pub fn commit(mut self) -> Result<()> {
        let result = match self.tmp.as_ref() {
            None => self.file.flush(),
            Some(tmp) => sync_file(&self.file).and_then(|()| fs::rename(tmp, &self.path)),
        };
        result.map_err(|e| Error::io(format!("writing {}", self.path.display()), e))?;
        if self.tmp.take().is_some() {
            placed(&self.path);
        }
        Ok(())
    }
}

impl AtomicFile {
    /// Counts `n` more bytes written; every 8 MiB, starts writing them to disk (without
    /// waiting), so that the flush before the rename has little left to wait for. (Linux; a
    /// hint only: the flush is what makes the file durable.)
    fn start_writeback(&mut self, n: usize) {
        const STEP: u64 = 8 << 20;
        self.written += n as u64;
        if self.tmp.is_none() || self.written - self.started < STEP {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            use std::os::raw::{c_int, c_uint};
            unsafe extern "C" {
                fn sync_file_range(fd: c_int, offset: i64, nbytes: i64, flags: c_uint) -> c_int;
            }
            // From <fcntl.h>: start writing the range's dirty pages, without waiting.
            const SYNC_FILE_RANGE_WRITE: c_uint = 2;
            let (Ok(from), Ok(len)) = (i64::try_from(self.started), i64::try_from(self.written - self.started)) else {
                return;
            };
            // SAFETY: a plain system call on a file descriptor this value owns; its answer
            // is ignored (a hint).
            unsafe {
                sync_file_range(self.file.as_raw_fd(), from, len, SYNC_FILE_RANGE_WRITE);
            }
        }
        self.started = self.written;
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.start_writeback(n);
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.file.write_all(buf)?;
        self.start_writeback(buf.len());
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Seeking moves within the file being written (the streaming `hprof-conv` patches record
/// lengths so); a special file that cannot seek (a pipe) fails as it would.
impl std::io::Seek for AtomicFile {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.file.seek(pos)
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Writes `bytes` to `path` atomically (temporary file + rename), refusing to replace an input.
/// A special file (see [`is_special`]) is written in place instead.
pub fn write_atomic(path: &Path, bytes: &[u8], inputs: &[PathBuf]) -> Result<()> {
    let mut f = AtomicFile::create(path, inputs)?;
    f.write_all(bytes).map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    f.commit()
}

/// Creates `dir` (and its parents) if needed.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating directory {}", dir.display()), e))
}

/// Writes `bytes` to a hidden temporary file in `dir` (named after `tag`), to be renamed into
/// place later with [`commit_staged`] or removed with [`discard_staged`]. Lets a command write
/// outputs as soon as they are ready and still choose their final names at the end.
pub fn stage(dir: &Path, tag: usize, bytes: &[u8]) -> Result<PathBuf> {
    let tmp = dir.join(format!(".heapconv-{}-{tag}-{}.tmp", std::process::id(), next_seq()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        sync_file(&f)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(format!("writing {}", tmp.display()), e));
    }
    Ok(tmp)
}

/// Creates a hidden temporary file in `dir` to be filled by the caller, then renamed into
/// place with [`commit_staged`] (or removed with [`discard_staged`]).
pub fn stage_file(dir: &Path, tag: usize) -> Result<(PathBuf, fs::File)> {
    let tmp = dir.join(format!(".heapconv-{}-{tag}-{}.tmp", std::process::id(), next_seq()));
    let f = fs::File::create(&tmp).map_err(|e| Error::io(format!("creating {}", tmp.display()), e))?;
    Ok((tmp, f))
}

/// Renames a staged file to `path`, refusing to replace an input. A special file (see
/// [`is_special`]) is not replaced: the staged bytes are copied into it.
pub fn commit_staged(tmp: &Path, path: &Path, inputs: &[PathBuf]) -> Result<()> {
    if let Err(e) = check_not_input(path, inputs) {
        let _ = fs::remove_file(tmp);
        return Err(e);
    }
    if is_special(path) {
        let result = (|| {
            let mut src = fs::File::open(tmp)?;
            let mut dst = fs::OpenOptions::new().write(true).open(path)?;
            std::io::copy(&mut src, &mut dst)?;
            dst.flush()
        })();
        let _ = fs::remove_file(tmp);
        return result.map_err(|e| Error::io(format!("writing {}", path.display()), e));
    }
    fs::rename(tmp, path).map_err(|e| Error::io(format!("renaming {} to {}", tmp.display(), path.display()), e))?;
    placed(path);
    Ok(())
}

/// Removes staged files that will not be committed.
pub fn discard_staged(tmps: impl IntoIterator<Item = PathBuf>) {
    for t in tmps {
        let _ = fs::remove_file(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn atomic_file_appears_only_when_committed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.pb.gz");
        fs::write(&out, b"old").unwrap();
        let mut f = AtomicFile::create(&out, &[]).unwrap();
        f.write_all(b"new ").unwrap();
        f.write_all(b"bytes").unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"old", "the old output stays until the commit");
        assert_eq!(names(dir.path()).len(), 2, "the temporary file sits beside it");
        f.commit().unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"new bytes");
        assert_eq!(names(dir.path()), ["out.pb.gz"]);
        // Dropped before its commit (a failed run): no trace, the old output untouched.
        let mut f = AtomicFile::create(&out, &[]).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert_eq!(fs::read(&out).unwrap(), b"new bytes");
        assert_eq!(names(dir.path()), ["out.pb.gz"]);
    }

    #[test]
    fn atomic_file_refuses_an_input_and_writes_special_files_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.pb");
        fs::write(&input, b"input").unwrap();
        let e = AtomicFile::create(&input, std::slice::from_ref(&input)).unwrap_err();
        assert!(e.to_string().contains("it is an input"), "{e}");
        assert_eq!(fs::read(&input).unwrap(), b"input");
        let mut null = AtomicFile::create(Path::new("/dev/null"), &[]).unwrap();
        null.write_all(b"gone").unwrap();
        null.commit().unwrap();
        assert!(Path::new("/dev/null").exists() && is_special(Path::new("/dev/null")), "still the device");
    }
}
