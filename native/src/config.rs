//! Turning parsed arguments into one validated [`TrainConfig`].

use anyhow::Result;
use taks_core::config::TrainConfig;
use taks_core::methods::Method;

use crate::cli::RunArgs;

pub fn build(args: &RunArgs, method: Method, default_epochs: usize) -> Result<TrainConfig> {
    let mut config = TrainConfig::paper(args.dataset, args.noise, args.noise_rate, method);
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
    let settings = &args.method_settings;
    config.forget_rate = settings.forget_rate.unwrap_or(config.forget_rate);
    config.co_lambda = settings.co_lambda.unwrap_or(config.co_lambda);
    config.init_epoch = settings.init_epoch.unwrap_or(config.init_epoch);
    config.validate()?;
    Ok(config)
}
