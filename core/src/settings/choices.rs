//! One way to build a run: what a person chose (the dataset, the noise, the method and
//! any settings they gave), turned into a validated [`TrainConfig`] by one function.
//!
//! Every front end fills a [`Choices`] and calls [`Choices::build`]: `taks train`,
//! `bench` and `tune`, `taks experiment`'s grid, the audit's runs and the browser page. A setting left
//! `None` gets the paper's value for the dataset, noise and method
//! ([`TrainConfig::paper`]), so no front end restates a default, and a change to the
//! paper's values reaches all of them.

use super::config::TrainConfig;
use super::paper::k_ratio_for;
use crate::Result;
use crate::data::DatasetKind;
use crate::methods::Method;
use crate::nn::Architecture;
use crate::noise::NoiseKind;
use crate::precision::Precision;

/// What to train: the required choices, and overrides that stay `None` unless given.
#[derive(Debug, Clone, PartialEq)]
pub struct Choices {
    pub dataset: DatasetKind,
    pub noise: NoiseKind,
    pub noise_rate: f64,
    pub method: Method,
    pub k_ratio: Option<f64>,
    pub eta_ratio: Option<f64>,
    pub epochs: Option<usize>,
    pub seed: Option<u64>,
    pub batch_size: Option<usize>,
    pub learning_rate: Option<f64>,
    pub decay_start: Option<usize>,
    pub train_limit: Option<usize>,
    pub test_limit: Option<usize>,
    pub forget_rate: Option<f64>,
    pub co_lambda: Option<f64>,
    pub init_epoch: Option<usize>,
    pub architecture: Option<Architecture>,
    pub eval_batch_size: Option<usize>,
    pub precision: Option<Precision>,
    /// gamma, the fraction of labels believed wrong (a guess, or an audit's estimate):
    /// where given, the settings the paper derives from the expected flipped fraction
    /// (the k-ratio, the baselines' forget rate) derive from it instead. What a user's
    /// own data needs, whose noise no recipe states. A setting given itself still wins.
    pub noise_estimate: Option<f64>,
}

impl Choices {
    /// The choices that have no default; every override `None`.
    pub fn new(dataset: DatasetKind, noise: NoiseKind, noise_rate: f64, method: Method) -> Self {
        Choices {
            dataset,
            noise,
            noise_rate,
            method,
            k_ratio: None,
            eta_ratio: None,
            epochs: None,
            seed: None,
            batch_size: None,
            learning_rate: None,
            decay_start: None,
            train_limit: None,
            test_limit: None,
            forget_rate: None,
            co_lambda: None,
            init_epoch: None,
            architecture: None,
            eval_batch_size: None,
            precision: None,
            noise_estimate: None,
        }
    }

    /// The paper's settings with every given override applied, validated.
    pub fn build(&self) -> Result<TrainConfig> {
        let mut c = TrainConfig::paper(self.dataset, self.noise, self.noise_rate, self.method);
        if let Some(gamma) = self.noise_estimate {
            if !(0.0..1.0).contains(&gamma) {
                return Err(crate::Error::Config(format!(
                    "gamma {gamma} (a noise estimate) must be in [0, 1)"
                )));
            }
            c.k_ratio = k_ratio_for(gamma);
            c.forget_rate = gamma;
        }
        c.k_ratio = self.k_ratio.unwrap_or(c.k_ratio);
        c.eta_ratio = self.eta_ratio.unwrap_or(c.eta_ratio);
        c.epochs = self.epochs.unwrap_or(c.epochs);
        c.seed = self.seed.unwrap_or(c.seed);
        c.batch_size = self.batch_size.unwrap_or(c.batch_size);
        c.learning_rate = self.learning_rate.unwrap_or(c.learning_rate);
        c.decay_start = self.decay_start.unwrap_or(c.decay_start);
        c.train_limit = self.train_limit.or(c.train_limit);
        c.test_limit = self.test_limit.or(c.test_limit);
        c.forget_rate = self.forget_rate.unwrap_or(c.forget_rate);
        c.co_lambda = self.co_lambda.unwrap_or(c.co_lambda);
        c.init_epoch = self.init_epoch.unwrap_or(c.init_epoch);
        c.architecture = self.architecture.unwrap_or(c.architecture);
        c.eval_batch_size = self.eval_batch_size.unwrap_or(c.eval_batch_size);
        c.precision = self.precision.unwrap_or(c.precision);
        c.validate()?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_is_the_paper_and_overrides_win() {
        let choices = Choices::new(
            DatasetKind::Cifar10,
            NoiseKind::Symmetric,
            0.8,
            Method::JOCOR,
        );
        let paper = TrainConfig::paper(
            DatasetKind::Cifar10,
            NoiseKind::Symmetric,
            0.8,
            Method::JOCOR,
        );
        assert_eq!(choices.build().unwrap(), paper);
        let given = Choices {
            epochs: Some(3),
            co_lambda: Some(0.5),
            seed: Some(9),
            ..choices.clone()
        }
        .build()
        .unwrap();
        assert_eq!((given.epochs, given.co_lambda, given.seed), (3, 0.5, 9));
        assert_eq!(given.forget_rate, paper.forget_rate);
        let bad = Choices {
            forget_rate: Some(1.0),
            ..choices
        };
        let err = bad.build().unwrap_err().to_string();
        assert!(err.contains("forget rate"), "{err}");
    }

    /// A noise estimate sets the k-ratio by the paper's pattern (1 - gamma - 0.15, at
    /// least 0.05) and the forget rate to gamma, over a folder's defaults (0.70 and 0.30
    /// whatever its noise); a k-ratio given itself still wins.
    #[test]
    fn a_noise_estimate_sets_k_and_the_forget_rate() {
        let folder = Choices::new(DatasetKind::Folder, NoiseKind::Clean, 0.0, Method::TAKS);
        let plain = folder.build().unwrap();
        assert_eq!(plain.k_ratio, 0.70);
        assert!((plain.forget_rate - 0.30).abs() < 1e-12);
        let estimated = Choices {
            noise_estimate: Some(0.25),
            ..folder.clone()
        }
        .build()
        .unwrap();
        assert!(
            (estimated.k_ratio - 0.60).abs() < 1e-12,
            "{}",
            estimated.k_ratio
        );
        assert_eq!(estimated.forget_rate, 0.25);
        let noisy = Choices {
            noise_estimate: Some(0.9),
            ..folder.clone()
        };
        assert_eq!(noisy.build().unwrap().k_ratio, 0.05);
        let given = Choices {
            noise_estimate: Some(0.25),
            k_ratio: Some(0.5),
            ..folder.clone()
        };
        assert_eq!(given.build().unwrap().k_ratio, 0.5);
        let err = Choices {
            noise_estimate: Some(1.0),
            ..folder
        }
        .build()
        .unwrap_err()
        .to_string();
        assert!(err.contains("must be in [0, 1)"), "{err}");
    }
}
