//! Writing a file so that a crash at any instant leaves either the old file or the new
//! one, never a mixture: write a temporary file beside it, flush it to the disk, then
//! rename it over the old one (a rename within one folder is atomic on POSIX and on
//! NTFS).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{FormatError, Result};

/// Replace `path` with `bytes` atomically.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let temporary = temporary_path(path);
    let written = (|| {
        let mut file = File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        // Best effort: a half-written temporary file is never read, only replaced.
        let _ = std::fs::remove_file(&temporary);
        return Err(FormatError::write(&temporary, e));
    }
    put_in_place(&temporary, path)
}

/// Rename the written and synced `temporary` over `path`, and make the rename itself
/// durable where the platform allows syncing a folder.
pub fn put_in_place(temporary: &Path, path: &Path) -> Result<()> {
    std::fs::rename(temporary, path).map_err(|e| FormatError::write(path, e))?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && let Ok(dir) = File::open(parent)
    {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// `name.tmp` beside `path`.
pub fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("taks-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.bin");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert!(!temporary_path(&path).exists());
        let err = write_atomically(&dir.join("missing/x"), b"").unwrap_err();
        assert!(err.to_string().contains("missing/x.tmp"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
