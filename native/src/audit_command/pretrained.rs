//! `taks audit DIR --init FILE`: an image folder audited on the features of a
//! pretrained ResNet rather than on a network trained from its own pixels.
//!
//! The folder is embedded first ([`taks_core::embedding`], into `OUT/embedding`, where the
//! features stay for later use), then the audit runs on `embeddings.npy` with its
//! `labels.txt` and `ids.txt`, as `taks audit embeddings.npy --labels labels.txt` would:
//! an MLP over the features, which costs seconds where fine-tuning the backbone with
//! TAkS costs hours on a CPU. Fine-tuning is `taks train --init` (not chosen here by
//! `--budget`).

use std::path::PathBuf;

use anyhow::{Result, bail};
use burn::tensor::Device;
use taks_core::audit::source::Backbone;
use taks_core::embedding::{MARKER, ToEmbed};

use super::AuditArgs;
use crate::{out_dir, progress};

/// Why the audit does not fine-tune, in the summary's words.
const WHY: &str = "the audit runs an MLP on the pretrained backbone's features, which costs seconds; fine-tuning the backbone with TAkS (taks train --init) costs hours on a CPU, so --budget does not choose it";

/// `args` with DATA replaced by the embeddings of the folder DATA, computed on `device`,
/// what they are, and the audit's output folder, made here to hold them.
pub fn embedded(mut args: AuditArgs, device: &Device) -> Result<(AuditArgs, Backbone, PathBuf)> {
    let (Some(init), Some(data)) = (args.init.take(), args.data.clone()) else {
        unreachable!("called with --init and DATA (clap: --init conflicts with --dataset)");
    };
    if !data.is_dir() {
        bail!(
            "--init embeds a folder of class sub-folders of images, and {} is not one",
            data.display()
        );
    }
    if args.labels.is_some() || args.image_size.is_some() {
        bail!(
            "--labels and --image-size are not for --init (the folder's own classes, 224x224 crops)"
        );
    }
    // Everything about the folder and the weights checked, and the network loaded,
    // before the audit's folder is made.
    let to_embed = ToEmbed::read(&data, &init, args.model.take(), 64)?;
    let loaded = to_embed.on(device)?;
    let name = data
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "data".into());
    let out = out_dir::prepare(
        args.out.as_deref(),
        &format!("audits/{name}"),
        "suspects.csv",
        "an audit",
    )?;
    let embedding = out_dir::prepare(
        Some(&out.join("embedding")),
        "embeddings",
        MARKER,
        "embeddings",
    )?;
    let embedded = progress::embedded(loaded, &embedding, args.quiet)?;
    if !args.quiet {
        eprintln!(
            "embedded {} images with the pretrained {} of {} ({} features each); auditing them with an MLP",
            embedded.rows,
            embedded.architecture.name(),
            init.display(),
            embedded.width
        );
    }
    let backbone = Backbone {
        weights: init.display().to_string(),
        network: embedded.architecture.name(),
        features: embedded.width,
        fine_tuned: false,
        why: WHY,
    };
    args.data = Some(embedded.matrix());
    args.labels = Some(embedded.labels());
    Ok((args, backbone, out))
}
