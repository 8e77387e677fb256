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
        precision: args.precision,
        ..Choices::new(args.dataset(), args.noise().0, args.noise().1, method)
    }
}

pub fn build(args: &RunArgs, method: Method) -> Result<TrainConfig> {
    Ok(choices(args, method).build()?)
}

/// What a run started from pretrained weights leaves to the person (`--init`).
pub struct Given {
    /// `--lr` or `--decay-start` was given: the usual linear decay, not the steps.
    pub schedule: bool,
    /// `--epochs` was given.
    pub epochs: bool,
}

/// Set `config` up to fine-tune the ResNet in the weights file `path` (`--init`), read
/// here: see [`fine_tune`]. Returns the file's tensors.
pub fn start_from(
    config: &mut TrainConfig,
    path: &std::path::Path,
    given: Given,
) -> Result<taks_core::formats::state_dict::StateDict> {
    let state = taks_core::nn::pretrained::read(path)?;
    fine_tune(config, path, &state, given)?;
    Ok(state)
}

/// Set `config` up to fine-tune the ResNet whose tensors `state` the file `path` holds:
/// the file's depth, its path recorded (so a resumed run prepares images the same way)
/// and, unless `given` says otherwise, the paper's Clothing1M step schedule (its
/// appendix: 15 epochs, a third each at 8e-4, 5e-4 and 5e-5). One line names the file
/// when it is not a ResNet this config can take.
pub fn fine_tune(
    config: &mut TrainConfig,
    path: &std::path::Path,
    state: &taks_core::formats::state_dict::StateDict,
    given: Given,
) -> Result<()> {
    use taks_core::nn::{Architecture, pretrained};
    config.architecture = match pretrained::depth_of(state) {
        Some(Ok(architecture)) => architecture,
        _ => Architecture::ResNet18,
    };
    config.init = Some(crate::out_dir::absolute(path));
    pretrained::check_depth(state, config.architecture, path)?;
    if !given.schedule {
        if !given.epochs {
            config.epochs = 15;
        }
        config.learning_rate = 8e-4;
        config.lr_steps = Some(config.clothing1m_steps());
    }
    config.validate()?;
    Ok(())
}
