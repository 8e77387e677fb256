//! Turning parsed arguments into one validated [`TrainConfig`].

use anyhow::Result;
use taks_core::config::TrainConfig;
use taks_core::data::DatasetKind;
use taks_core::noise::NoiseKind;
use taks_core::selection::Method;

use crate::cli::RunArgs;

pub fn build(args: &RunArgs, method: &str, default_epochs: usize) -> Result<TrainConfig> {
    let dataset: DatasetKind = args.dataset.parse()?;
    let noise: NoiseKind = args.noise.parse()?;
    let method: Method = method.parse()?;
    let mut config = TrainConfig::paper(dataset, noise, args.noise_rate, method);
    // `paper` already holds the tuned ratios; the flags override them.
    config.k_ratio = args.k_ratio.unwrap_or(config.k_ratio);
    config.eta_ratio = args.eta_ratio.unwrap_or(config.eta_ratio);
    config.epochs = args.epochs.unwrap_or(default_epochs);
    config.seed = args.seed;
    config.batch_size = args.batch_size;
    config.learning_rate = args.lr;
    config.decay_start = args.decay_start;
    config.train_limit = args.train_limit;
    config.test_limit = args.test_limit;
    config.validate()?;
    Ok(config)
}
