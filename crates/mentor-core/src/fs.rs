//! Writing files so that a crash never leaves a torn one.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically: into a temporary sibling, flushed to disk, then
/// renamed over `path`. The directory must exist (a missing one is an error, not created). Readers see the old file or the
/// new one, never a mix; a failure removes the temporary file and leaves `path` as it was.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("b.json");
/// mentor_core::fs::write_atomic(&path, b"{}").unwrap();
/// mentor_core::fs::write_atomic(&path, b"[]").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"[]");
/// ```
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp =
        dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.txt");
        assert!(write_atomic(&dir.path().join("missing/x.txt"), b"one").is_err());
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        write_atomic(&path, b"old").unwrap();
        // A directory where the file should go: the rename fails.
        let blocked = dir.path().join("d");
        std::fs::create_dir_all(blocked.join("inside")).unwrap();
        assert!(write_atomic(&blocked, b"new").is_err());
        assert!(blocked.join("inside").is_dir());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
    }
}
