//! Turning parsed arguments into one validated [`TrainConfig`], through core's one way
//! of building a run ([`Choices`]): a flag not given stays `None` and gets the paper's
//! value there.

use anyhow::Result;
use taks_core::choices::Choices;
use taks_core::config::TrainConfig;
use taks_core::methods::Method;

use crate::run_args::RunArgs;

/// The choices of `args` for `method`.
pub fn choices(args: &RunArgs, method: Method) -> Choices {
    let settings = &args.method_settings;
    Choices {
        k_ratio: args.k_ratio,
        eta_ratio: args.eta_ratio,
        epochs: args.epochs,
        seed: args.seed,
        batch_size: args.batch_size,
        learning_rate: args.lr,
        decay_start: args.decay_start,
        train_limit: args.train_limit,
        test_limit: args.test_limit,
        forget_rate: settings.forget_rate,
        co_lambda: settings.co_lambda,
        init_epoch: settings.init_epoch,
        ..Choices::new(args.dataset(), args.noise().0, args.noise().1, method)
    }
}

pub fn build(args: &RunArgs, method: Method) -> Result<TrainConfig> {
    Ok(choices(args, method).build()?)
}
