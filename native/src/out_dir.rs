//! The output folder of a command (`train`'s run folder, `audit`'s folder): one rule for
//! both, so that an explicit folder never has a finished result overwritten and a
//! default one never collides with an earlier run.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// `explicit`, refused when it already holds `marker` (the file that says `what` was
/// written there); else `default`, numbered `default-2`, `default-3`, ... when it
/// exists. Created (with its parents) either way.
pub fn prepare(
    explicit: Option<&Path>,
    default: &str,
    marker: &str,
    what: &str,
) -> Result<PathBuf> {
    let dir = match explicit {
        Some(dir) => {
            if dir.join(marker).exists() {
                bail!(
                    "{} already holds {what} ({marker}); choose another --out",
                    dir.display()
                );
            }
            dir.to_path_buf()
        }
        None => {
            let mut dir = PathBuf::from(default);
            let mut i = 2;
            while dir.exists() {
                dir = PathBuf::from(format!("{default}-{i}"));
                i += 1;
            }
            dir
        }
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating output folder {}", dir.display()))?;
    Ok(dir)
}
