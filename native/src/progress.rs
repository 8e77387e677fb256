//! The terminal's progress bar, one for every subcommand that shows one (`train`,
//! `tune`, `experiment`, `embed`): shown only where a person watches (stderr a
//! terminal, no `--quiet`), so logs and pipes get whole lines instead.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

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
