//! `taks table`: the paper-style summary table of run folders side by side
//! ([`crate::summary_table`]).

use std::path::PathBuf;

use anyhow::Result;

use crate::summary_table::{read_run, render};

pub fn run(dirs: &[PathBuf]) -> Result<()> {
    let rows = dirs
        .iter()
        .map(|d| read_run(d))
        .collect::<Result<Vec<_>>>()?;
    print!("{}", render(&rows));
    Ok(())
}
