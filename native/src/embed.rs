//! `taks embed DIR --init FILE --out OUT`: the features a pretrained ResNet gives each
//! image of a folder, for `taks audit OUT/embeddings.npy --labels OUT/labels.txt` and
//! for numpy. What is written, and how, is the core's ([`taks_core::embedding`]); this
//! is the flags, the output folder, the progress bar and the closing lines.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use taks_core::embedding::{Embedded, MARKER, ToEmbed};
use taks_core::nn::Architecture;

use taks_core::settings::flags::DeviceChoice;

use crate::device;
use crate::{out_dir, progress};

#[derive(Args, Debug)]
pub struct EmbedArgs {
    /// A folder of class sub-folders of images (DIR/<class>/<image files>).
    pub data: PathBuf,
    /// The pretrained weights: a torchvision or timm ResNet-18, -34 or -50 state_dict, as
    /// .safetensors or as a torch .pth (read without running any of its code).
    #[arg(long, value_name = "FILE")]
    pub init: PathBuf,
    /// The output folder (refused if it already holds embeddings.npy).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The network; by default the one the weights are for.
    #[arg(long, value_enum)]
    pub model: Option<Architecture>,
    /// Images per forward pass.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Compute device: cpu (the default here), gpu, or auto (as for `taks train`).
    #[arg(long, value_enum, default_value_t = DeviceChoice::Cpu)]
    pub device: DeviceChoice,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: EmbedArgs) -> Result<()> {
    let e = embed(&args)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{} images x {} features ({}, {} classes{}) -> {}",
        e.rows,
        e.width,
        e.architecture.name(),
        e.classes,
        match e.skipped {
            0 => String::new(),
            n => format!(", {n} files skipped"),
        },
        e.matrix().display()
    )?;
    writeln!(
        stdout,
        "audit them: taks audit {} --labels {}",
        e.matrix().display(),
        e.labels().display()
    )?;
    Ok(())
}

/// Embed the folder `args.data` into `args.out` (see [`taks_core::embedding`]):
/// everything about the input checked before the device is opened and the folder made.
pub fn embed(args: &EmbedArgs) -> Result<Embedded> {
    let to_embed = ToEmbed::read(&args.data, &args.init, args.model, args.batch)?;
    let chosen = device::choose(args.device)?;
    let loaded = to_embed.on(&chosen.device)?;
    let out = out_dir::prepare(args.out.as_deref(), "embeddings", MARKER, "embeddings")?;
    progress::embedded(loaded, &out, args.quiet)
}
