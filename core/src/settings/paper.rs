//! The paper's value of every setting, each beside the setting it defaults: what a run
//! gets for whatever a person left unsaid ([`super::Choices`] leaves `None` to these).
//!
//! The common settings are the paper's section 5 (Adam at 1e-3, batches of 128, 200
//! epochs with the learning rate decaying from epoch 80); the settings particular methods
//! read (the registry's [`Setting`]s) follow the authors' code and scripts
//! (github.com/songheony/TAkS), per dataset and noise, as each function below says.

use super::config::TrainConfig;
use crate::data::DatasetKind;
use crate::methods::{Method, Setting};
use crate::nn::Architecture;
use crate::noise::{NoiseKind, expected_flip_fraction};
use crate::precision::Precision;
use crate::selection::Engine;

impl TrainConfig {
    /// The paper's settings for a dataset, noise and method.
    pub fn paper(dataset: DatasetKind, noise: NoiseKind, noise_rate: f64, method: Method) -> Self {
        let paper = |setting: Setting| method_setting(setting, dataset, noise, noise_rate);
        TrainConfig {
            dataset,
            noise,
            noise_rate,
            method,
            k_ratio: paper(Setting::KRatio),
            eta_ratio: paper(Setting::EtaRatio),
            epochs: 200,
            seed: 0,
            batch_size: 128,
            learning_rate: 1e-3,
            decay_start: 80,
            // The paper's MLP for the 28x28 sets, its 6-layer CNN for the others.
            architecture: if dataset.is_grey_28() {
                Architecture::Mlp
            } else {
                Architecture::Cnn
            },
            train_limit: None,
            test_limit: None,
            // Ours, not the paper's: scoring has no gradients, so it takes large batches.
            eval_batch_size: 4096,
            selection_engine: Engine::Wgsl,
            forget_rate: paper(Setting::ForgetRate),
            co_lambda: paper(Setting::CoLambda),
            init_epoch: paper(Setting::InitEpoch) as usize,
            folder_input: None,
            init: None,
            lr_steps: None,
            precision: Precision::F32,
        }
    }

    /// The paper's Clothing1M schedule over this run's epochs: its three rates, 8e-4,
    /// 5e-4 and 5e-5, each for a third of the epochs (five each of 15).
    pub fn clothing1m_steps(&self) -> Vec<(usize, f64)> {
        let third = (self.epochs / 3).max(1);
        vec![(0, 8e-4), (third, 5e-4), (2 * third, 5e-5)]
    }
}

/// The epochs of the paper's Clothing1M fine-tuning (its appendix), which a run from
/// pretrained weights takes unless `--epochs` is given.
pub const CLOTHING1M_EPOCHS: usize = 15;

/// The paper's value of a setting some methods read, for a dataset and noise.
pub fn method_setting(setting: Setting, dataset: DatasetKind, noise: NoiseKind, rate: f64) -> f64 {
    match setting {
        Setting::KRatio => tuned_ratios(dataset, noise, rate).0,
        Setting::EtaRatio => tuned_ratios(dataset, noise, rate).1,
        // A folder's own labels: their noise is unknown; 1 - the k-ratio TAkS keeps.
        Setting::ForgetRate if dataset == DatasetKind::Folder && noise == NoiseKind::Clean => {
            1.0 - tuned_ratios(dataset, noise, rate).0
        }
        Setting::ForgetRate => expected_flip_fraction(dataset, noise, rate),
        Setting::CoLambda => co_lambda(dataset, noise, rate),
        Setting::InitEpoch => init_epoch(dataset) as f64,
    }
}

/// The tuned (k_ratio, eta_ratio) of the authors' code, for the settings it covers.
/// Elsewhere we follow the table's pattern: k_ratio = 1 - (expected flipped fraction)
/// - 0.15, at least 0.05, and the dataset's usual eta_ratio.
pub fn tuned_ratios(dataset: DatasetKind, noise: NoiseKind, rate: f64) -> (f64, f64) {
    let grey_28 = dataset.is_grey_28();
    let near = |r: f64| (rate - r).abs() < 1e-9;
    let table = match (dataset, noise) {
        (DatasetKind::Cifar10, NoiseKind::Symmetric) if near(0.2) => Some((0.75, 0.0005)),
        (DatasetKind::Cifar10, NoiseKind::Symmetric) if near(0.5) => Some((0.45, 0.001)),
        (DatasetKind::Cifar10, NoiseKind::Symmetric) if near(0.8) => Some((0.20, 0.005)),
        (DatasetKind::Cifar10, NoiseKind::Asymmetric) if near(0.4) => Some((0.80, 0.0005)),
        (DatasetKind::Cifar100, NoiseKind::Symmetric) if near(0.2) => Some((0.65, 0.0005)),
        (DatasetKind::Cifar100, NoiseKind::Symmetric) if near(0.5) => Some((0.35, 0.001)),
        (DatasetKind::Cifar100, NoiseKind::Symmetric) if near(0.8) => Some((0.15, 0.005)),
        (DatasetKind::Cifar100, NoiseKind::Asymmetric) if near(0.4) => Some((0.70, 0.0005)),
        // A folder's own labels (noise unknown): the paper's Clothing1M setting.
        (DatasetKind::Folder, NoiseKind::Clean) => Some((0.70, 0.001)),
        (_, NoiseKind::Symmetric) if grey_28 && near(0.2) => Some((0.65, 0.005)),
        (_, NoiseKind::Symmetric) if grey_28 && near(0.5) => Some((0.35, 0.005)),
        (_, NoiseKind::Symmetric) if grey_28 && near(0.8) => Some((0.15, 0.005)),
        (_, NoiseKind::Asymmetric) if grey_28 && near(0.4) => Some((0.70, 0.001)),
        _ => None,
    };
    table.unwrap_or_else(|| {
        let flipped = expected_flip_fraction(dataset, noise, rate);
        (k_ratio_for(flipped), if grey_28 { 0.005 } else { 0.001 })
    })
}

/// The k-ratio for an expected flipped fraction where the authors tuned none: the
/// pattern of their table, 1 - flipped - 0.15, at least 0.05.
pub fn k_ratio_for(flipped: f64) -> f64 {
    (1.0 - flipped - 0.15).max(0.05)
}

/// JoCoR's lambda in the authors' scripts: 0.9 (MNIST, CIFAR-10), 0.65 for CIFAR-10 at
/// symmetric 80%, 0.85 (CIFAR-100), 0.6 (Clothing1M, which a folder follows). MNIST's
/// value serves the other 28x28 sets.
pub fn co_lambda(dataset: DatasetKind, noise: NoiseKind, rate: f64) -> f64 {
    match dataset {
        DatasetKind::Cifar100 => 0.85,
        DatasetKind::Folder => 0.6,
        DatasetKind::Cifar10 if noise == NoiseKind::Symmetric && (rate - 0.8).abs() < 1e-9 => 0.65,
        _ => 0.9,
    }
}

/// Co-teaching+'s first exchange epoch in the authors' scripts: 20 for CIFAR-10, 5 for
/// CIFAR-100, 0 for the 28x28 sets.
pub fn init_epoch(dataset: DatasetKind) -> usize {
    match dataset {
        DatasetKind::Cifar10 => 20,
        DatasetKind::Cifar100 => 5,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authors_values() {
        let d = DatasetKind::Cifar10;
        assert_eq!(tuned_ratios(d, NoiseKind::Asymmetric, 0.4), (0.80, 0.0005));
        assert_eq!(
            tuned_ratios(DatasetKind::Mnist, NoiseKind::Pairflip, 0.45),
            (0.40, 0.005)
        );
        let setting = |s, dataset, noise, rate| method_setting(s, dataset, noise, rate);
        assert_eq!(
            setting(Setting::CoLambda, d, NoiseKind::Symmetric, 0.8),
            0.65
        );
        assert_eq!(
            setting(Setting::InitEpoch, d, NoiseKind::Symmetric, 0.8),
            20.0
        );
        let asym = setting(
            Setting::ForgetRate,
            DatasetKind::Mnist,
            NoiseKind::Asymmetric,
            0.4,
        );
        assert_eq!(asym, 0.2);
    }

    #[test]
    fn paper_defaults() {
        let c = TrainConfig::paper(
            DatasetKind::MnistDigits,
            NoiseKind::Symmetric,
            0.5,
            Method::TAKS,
        );
        assert_eq!((c.k_ratio, c.eta_ratio), (0.35, 0.005));
        assert_eq!(c.k(8000), 2800);
        assert!((c.eta(8000) - (2800.0f64 * 200.0).sqrt() * 0.005).abs() < 1e-12);
        let c = TrainConfig::paper(
            DatasetKind::Cifar10,
            NoiseKind::Asymmetric,
            0.4,
            Method::TAKS,
        );
        assert_eq!(
            (c.k_ratio, c.eta_ratio, c.architecture),
            (0.80, 0.0005, Architecture::Cnn)
        );
        let s = TrainConfig::paper(
            DatasetKind::Mnist,
            NoiseKind::Symmetric,
            0.5,
            Method::STANDARD,
        );
        assert_eq!(s.k(100), 100);
        let j = TrainConfig::paper(
            DatasetKind::Cifar10,
            NoiseKind::Symmetric,
            0.8,
            Method::JOCOR,
        );
        assert_eq!((j.forget_rate, j.co_lambda, j.init_epoch), (0.8, 0.65, 20));
        let a = TrainConfig::paper(DatasetKind::Mnist, NoiseKind::Asymmetric, 0.4, Method::ITLM);
        assert_eq!((a.forget_rate, a.co_lambda, a.init_epoch), (0.2, 0.9, 0));
        assert_eq!(a.k(1000), 800);
        assert_eq!(
            TrainConfig::paper(
                DatasetKind::Mnist,
                NoiseKind::Symmetric,
                0.5,
                Method::CO_TEACHING
            )
            .k(10),
            10
        );
    }
}
