//! The terminal's progress bar, one for every subcommand that shows one (`train`,
//! `tune`, `experiment`, `embed`): shown only where a person watches (stderr a
//! terminal, no `--quiet`), so logs and pipes get whole lines instead; and a folder's
//! embedding shown with it (`embed`, `audit --init`).

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Result;

use indicatif::{ProgressBar, ProgressStyle};
use taks_core::embedding::{Embedded, OnDevice};

/// The bar of epochs `train` and `tune` show.
pub const EPOCHS: &str = "{bar:30} epoch {pos}/{len}  {msg}  [{elapsed} < {eta}]";
/// The bar of runs `experiment` shows (its message names the run).
pub const RUNS: &str = "{bar:30} {msg}  [{elapsed} elapsed, {eta} left]";
/// The bar of images `embed` shows.
pub const IMAGES: &str = "{bar:30} {pos}/{len} images  [{elapsed} < {eta}]";

/// A bar of `len` steps drawn as `template`; `None` when quiet or when stderr is not a
/// terminal.
pub fn bar(len: usize, quiet: bool, template: &str) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(len as u64);
    bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
    Some(bar)
}

/// `loaded` embedded into `out`, with a bar of images where a person watches.
pub fn embedded(loaded: OnDevice, out: &Path, quiet: bool) -> Result<Embedded> {
    let bar = bar(loaded.images(), quiet, IMAGES);
    let mut tick = || {
        if let Some(bar) = &bar {
            bar.inc(1);
        }
    };
    let mut say = |line: String| eprintln!("{line}");
    let embedded = loaded.embed_into(out, &mut tick, &mut say)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(embedded)
}
