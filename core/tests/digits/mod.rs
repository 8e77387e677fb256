//! The run the integration tests share: the paper's configuration of a method on the
//! bundled digits at symmetric 50% noise, cut to a few epochs of a small training set
//! (each test then sets what it is about: the engine, the batch, the precision).

use burn::tensor::Device;
use taks_core::data::DatasetKind;
use taks_core::methods::Method;
use taks_core::noise::NoiseKind;
use taks_core::settings::TrainConfig;
use taks_core::train::Trainer;

/// `method` over `epochs` on the first `train` digits, tested on the first `test`.
pub fn config(method: Method, epochs: usize, train: usize, test: usize) -> TrainConfig {
    let mut config =
        TrainConfig::paper(DatasetKind::MnistDigits, NoiseKind::Symmetric, 0.5, method);
    config.epochs = epochs;
    config.train_limit = Some(train);
    config.test_limit = Some(test);
    config
}

/// A trainer of `config` on the digits, on `device`.
pub fn trainer(config: TrainConfig, device: &Device) -> Trainer {
    let split = DatasetKind::MnistDigits.load(None).unwrap();
    Trainer::new(config, split, device).unwrap()
}
