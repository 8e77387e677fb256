//! F-correction, forward loss correction (Patrini et al., 2017), as the authors' code
//! runs it, in two stages:
//! 1. Train Standard on a random 80% of the noisy training set for the run's epochs and
//!    keep the network of the epoch with the best accuracy on the other 20% (noisy
//!    labels: no clean data is assumed). The training loop runs this [`FirstStage`]
//!    before its first epoch ([`crate::train::Trainer::run_first_stage`]).
//! 2. Estimate the transition matrix T from that network's softmax on the whole noisy
//!    training set ([`estimate_transition`]), then train a fresh network on
//!    `NLL(log(softmax(f) T + 1e-7), noisy label)` ([`ForwardCorrection`]). Test accuracy
//!    uses the plain logits.

use burn::tensor::activation::softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::{Batch, BatchAt, EpochSize, FirstStage, MethodSpec, Rule};
use crate::data::DatasetKind;
use crate::{Error, Result};

pub(crate) const SPEC: MethodSpec = MethodSpec {
    name: "f-correction",
    title: "F-correction",
    help: "loss correction with an estimated transition matrix",
    networks: 1,
    settings: &[],
    epoch_size: EpochSize::All,
    selects: false,
    build: |inputs| {
        Ok(Box::new(ForwardCorrection {
            transition: None,
            classes: inputs.classes,
            // The authors' code keeps the anchors' outlier filter off for CIFAR-100 only.
            filter_outlier: inputs.dataset != DatasetKind::Cifar100,
            device: inputs.device.clone(),
        }))
    },
};

/// Share of the noisy training set stage 1 holds out for validation.
pub const VALIDATION_FRACTION: f64 = 0.2;

/// Stage 2's loss with the estimated T `[C, C]`, once stage 1 has run.
pub(super) struct ForwardCorrection {
    transition: Option<Tensor<2>>,
    classes: usize,
    filter_outlier: bool,
    device: Device,
}

impl ForwardCorrection {
    fn set_transition(&mut self, transition: &[f32]) -> Result<()> {
        let c = self.classes;
        if transition.len() != c * c {
            return Err(Error::Config(format!(
                "a transition matrix of {} values for {c} classes",
                transition.len()
            )));
        }
        self.transition = Some(Tensor::from_data(
            TensorData::new(transition.to_vec(), [c, c]),
            &self.device.clone().autodiff(),
        ));
        Ok(())
    }
}

impl Rule for ForwardCorrection {
    fn first_stage(&self) -> Option<FirstStage> {
        self.transition.is_none().then_some(FirstStage {
            holdout: VALIDATION_FRACTION,
        })
    }

    fn fit_first_stage(&mut self, probabilities: &[f32]) -> Result<Vec<f32>> {
        let transition = estimate_transition(probabilities, self.classes, self.filter_outlier);
        self.set_transition(&transition)?;
        Ok(transition)
    }

    fn restore_first_stage(&mut self, fitted: &[f32]) -> Result<()> {
        self.set_transition(fitted)
    }

    fn batch(&self, logits: &[Tensor<2>], labels: &Tensor<1, Int>, _: BatchAt) -> Batch {
        let [batch, _] = logits[0].dims();
        let transition = self.transition.clone();
        let corrected = softmax(logits[0].clone(), 1)
            .matmul(transition.expect("the first stage runs before the first batch"))
            .add_scalar(1e-7)
            .log();
        let nll = corrected
            .gather(1, labels.clone().reshape([batch, 1]))
            .neg()
            .mean();
        Batch {
            loss: nll,
            picked: None,
            apply: None,
        }
    }
}

/// T from softmax probabilities `[n * classes]` of the whole noisy training set: for each
/// class i the anchor is the sample with the highest p(i) once every value at or above
/// the 97th percentile (numpy's `interpolation='higher'`) is discarded, or the plain
/// argmax when `filter_outlier` is off (the authors' choice for CIFAR-100); row i is the
/// anchor's probabilities, normalised to sum to 1.
pub fn estimate_transition(
    probabilities: &[f32],
    classes: usize,
    filter_outlier: bool,
) -> Vec<f32> {
    let n = probabilities.len() / classes;
    let mut t = vec![0.0f32; classes * classes];
    for i in 0..classes {
        let column: Vec<f32> = (0..n).map(|s| probabilities[s * classes + i]).collect();
        let robust: Vec<f32> = if filter_outlier && n > 0 {
            let mut sorted = column.clone();
            sorted.sort_by(f32::total_cmp);
            let threshold = sorted[((0.97 * (n - 1) as f64).ceil() as usize).min(n - 1)];
            column
                .iter()
                .map(|&p| if p >= threshold { 0.0 } else { p })
                .collect()
        } else {
            column
        };
        // First index of the maximum, as numpy's argmax.
        let anchor = robust
            .iter()
            .enumerate()
            .fold((0, f32::NEG_INFINITY), |best, (s, &p)| {
                if p > best.1 { (s, p) } else { best }
            })
            .0;
        let row = &probabilities[anchor * classes..(anchor + 1) * classes];
        let sum: f32 = row.iter().sum();
        for j in 0..classes {
            t[i * classes + j] = row[j] / sum;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_skip_the_top_three_percent() {
        // 100 samples, 2 classes. Sample s has p(0) = s / 100 except three outliers at
        // the top; the 97th percentile ('higher') of p(0) is the 97th smallest value.
        let n = 100;
        let mut probs = Vec::new();
        for s in 0..n {
            let p0 = s as f32 / 100.0;
            probs.extend_from_slice(&[p0, 1.0 - p0]);
        }
        let t = estimate_transition(&probs, 2, true);
        // ceil(0.97 * 99) = 97 -> threshold 0.97; the largest p(0) below it is 0.96.
        assert!(
            (t[0] - 0.96).abs() < 1e-6 && (t[1] - 0.04).abs() < 1e-6,
            "{t:?}"
        );
        // p(1) = 1 - s/100 runs over 0.01..1.00: the threshold is 0.98, the anchor 0.97.
        assert!((t[3] - 0.97).abs() < 1e-6, "{t:?}");
        let plain = estimate_transition(&probs, 2, false);
        assert!(
            (plain[0] - 0.99).abs() < 1e-6 && (plain[3] - 1.0).abs() < 1e-6,
            "{plain:?}"
        );
    }

    #[test]
    fn rows_are_normalised() {
        let probs = vec![0.2f32, 0.2, 0.1, 0.5];
        let t = estimate_transition(&probs, 2, false);
        assert!((t[0] + t[1] - 1.0).abs() < 1e-6);
        assert!((t[0] - 0.5).abs() < 1e-6);
    }
}
