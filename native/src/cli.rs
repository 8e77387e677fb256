//! The command line: its subcommands. Each subcommand's flags live with the subcommand
//! (`train_command::TrainArgs`, `bench::BenchArgs`, ...; the flags that define a run in
//! [`taks_core::settings::flags`]), and every flag's doc comment is its `--help` text.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Train classifiers on noisy labels with TAkS: each epoch trains on the k samples whose
/// cumulative noise-risk (plus a random perturbation) is smallest, so mislabelled
/// samples are left out while the network learns from the clean ones.
#[derive(Parser, Debug)]
#[command(name = "taks", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Every subcommand reads `-1` as a value (`--eta-ratio -1`), so that a negative number
// gets a message about the value from our validation, not clap's "unexpected argument".
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train one run and write metrics.csv, config.json, summary.json and plot.svg.
    ///
    /// Example: taks train --dataset fashion-mnist --noise symmetric --noise-rate 0.5
    ///
    /// A run writes checkpoint.safetensors after every epoch; `taks train --resume DIR`
    /// continues a run that was stopped, exactly where it stopped.
    #[command(allow_negative_numbers = true)]
    Train(crate::train_command::TrainArgs),
    /// Time epochs per method on each device and report the time ratio against standard.
    #[command(allow_negative_numbers = true)]
    Bench(crate::bench::BenchArgs),
    /// Time one selection step for large n: WGSL kernels, CPU reference, burn's sort.
    #[command(allow_negative_numbers = true)]
    BenchSelect(crate::bench_select::BenchSelectArgs),
    /// Run a grid of datasets x noises x methods x seeds, one run folder per cell, and
    /// write the paper's tables (table.md, table.csv) and accuracy curves.
    ///
    /// Example: taks experiment --datasets mnist-digits --noises symmetric-0.5,pairflip-0.45
    /// --methods all --seeds 0,1,2 --out experiments/digits
    #[command(allow_negative_numbers = true)]
    Experiment(crate::experiment::ExperimentArgs),
    /// Choose TAkS's k-ratio and eta-ratio on a noisy validation set (20% of the noisy
    /// training set held out), over the paper's grid, and write every score.
    ///
    /// Example: taks tune --noise symmetric --noise-rate 0.5 --out tuned
    ///
    /// On your own data: --data DIR (its train/) or --data FILE.csv, with --gamma (a
    /// guess at the mislabelled fraction, or an audit of the same data).
    #[command(allow_negative_numbers = true)]
    Tune(crate::tune::TuneArgs),
    /// Find the mislabelled samples of your own data (a folder of images, a CSV table or
    /// embeddings) with one TAkS run, and keep the model trained without them.
    ///
    /// Example: taks audit photos/ --out audit-photos
    ///
    /// Writes suspects.csv (every sample, most suspect first), summary.json, report.html,
    /// model.safetensors and model.json.
    #[command(allow_negative_numbers = true)]
    Audit(crate::audit_command::AuditArgs),
    /// Write the features a pretrained ResNet (torchvision's or timm's weights) gives
    /// every image of a folder: embeddings.npy, labels.npy, labels.txt, ids.txt, config.json.
    ///
    /// Example: taks embed photos/ --init resnet50.pth --out photos-embedded
    ///
    /// Then: taks audit photos-embedded/embeddings.npy --labels photos-embedded/labels.txt
    #[command(allow_negative_numbers = true)]
    Embed(crate::embed::EmbedArgs),
    /// Predict with the model an audit or a run kept: prints id,predicted_label,confidence.
    ///
    /// Example: taks predict --model audit-photos new-photos/
    #[command(allow_negative_numbers = true)]
    Predict(crate::predict::PredictArgs),
    /// The GPU adapters wgpu sees, one a line: hardware or software, a tab, the name
    /// (what `--device auto` looks for; see the GPU guide when a GPU is not found).
    #[command(name = crate::device::LIST_ADAPTERS)]
    ListAdapters,
    /// Start the GPU and multiply two matrices through burn's kernels (run by taks itself
    /// in a child process, before a `native-shaders` build trusts the Vulkan driver).
    #[command(name = crate::device::spirv_probe::PROBE_SPIRV, hide = true)]
    ProbeSpirv,
    /// Start the GPU and run the self-check of the f16 product on cooperative matrices
    /// (run by taks itself in a child process, before `TAKS_GPU_COOP=1` trusts the driver).
    #[command(name = crate::device::coop_probe::PROBE_COOP, hide = true)]
    ProbeCoop,
    /// Print the paper-style summary table of one or more finished run folders.
    Table {
        /// Run folders (each with metrics.csv and config.json).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
    },
}
