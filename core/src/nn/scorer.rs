//! The eval-mode forward pass of a scoring pass over many chunks, prepared once.
//!
//! The scoring pass runs the network over all n training samples every epoch, in eval
//! mode; on a GPU that pass was slower per sample than a training step. A [`Scorer`]
//! folds each batch norm into the convolution before it once per pass
//! ([`crate::ops::conv::folded`]) and runs each convolution by the kernel measured faster for
//! its shape ([`crate::ops::conv::choice`]: burn's, or im2col and a matmul). Only on a wgpu
//! device: on flex the network's own forward pass runs, so CPU results stay the bits
//! they were. The logits equal the network's forward pass up to rounding (`tests`).

use burn::tensor::Tensor;

use super::{Classifier, Cnn, resnet};
use crate::ops::conv::FoldedConv;
use crate::plan::{GpuConv, Kernel, Switches};

/// A network ready for eval-mode forward passes.
pub enum Scorer<'a> {
    /// The network's own forward pass.
    Plain(&'a Classifier),
    /// The CNN with its six blocks folded.
    Cnn(&'a Cnn, Vec<FoldedConv>),
    /// A ResNet with every convolution folded.
    ResNet(Box<resnet::Folded<'a>>),
}

impl Classifier {
    /// This network prepared for scoring: folded on a wgpu device (as `TAKS_GPU_CONV`
    /// says), plain elsewhere.
    pub fn scorer(&self) -> Scorer<'_> {
        self.scorer_with(Switches::current().conv)
    }

    /// This network prepared for scoring as `how` says (on a wgpu device; plain elsewhere).
    pub fn scorer_with(&self, how: GpuConv) -> Scorer<'_> {
        if how == GpuConv::Plain || !self.folds() {
            return Scorer::Plain(self);
        }

        let folded = match self {
            Classifier::Mlp(_) => None,
            Classifier::Cnn(cnn) => cnn
                .blocks
                .iter()
                .map(|b| FoldedConv::new(&b.conv, &b.norm, how))
                .collect::<Option<Vec<_>>>()
                .map(|f| Scorer::Cnn(cnn, f)),
            Classifier::ResNet(net) => net.folded(how).map(|f| Scorer::ResNet(Box::new(f))),
        };
        folded.unwrap_or(Scorer::Plain(self))
    }

    /// Whether its batch norms fold: where the plan runs the folded convolution, on the
    /// device and in the type of the network's weights.
    fn folds(&self) -> bool {
        let weight = match self {
            Classifier::Mlp(m) => m.layers().output.weight.val(),
            Classifier::Cnn(m) => m.output.weight.val(),
            Classifier::ResNet(m) => m.output_weight(),
        };
        Kernel::ConvFolded.runs_for(&weight)
    }
}

impl Scorer<'_> {
    /// `[B, C*H*W]` -> logits `[B, classes]`, as the network's eval-mode forward.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        match self {
            Scorer::Plain(net) => net.forward(x),
            Scorer::Cnn(cnn, folded) => cnn.forward_by(x, |i, h| folded[i].forward(h, true)),
            Scorer::ResNet(net) => net.forward(x),
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::module::Module;
    use burn::tensor::{Device, Distribution};

    use super::*;
    use crate::nn::Architecture;
    use crate::test_support::{host, random};

    /// Folded, and folded with im2col, on lavapipe against the network's own eval-mode
    /// forward pass on flex, for the CNN, ResNet-18 and ResNet-50 (basic and bottleneck
    /// blocks; every kind of layer they have at 224x224 runs at 32x32), with batch-norm
    /// statistics moved away from their initial 0 and 1 by a few training-mode passes
    /// (else folding would be an identity). The network is built and those passes run on
    /// flex, then it moves to wgpu: on lavapipe they would time every way of every
    /// convolution shape they meet, burn's autotuned kernels among them, minutes of
    /// compiling for shapes the scorers do not run (docs/benchmarks.md, "Build and test").
    #[test]
    fn scoring_forward_is_the_eval_forward() {
        crate::test_support::under_each_matmul(|| {
            let device = crate::gpu::direct::start().expect("a wgpu adapter").0;
            let flex = Device::flex();
            for arch in [
                Architecture::Cnn,
                Architecture::ResNet18,
                Architecture::ResNet50,
            ] {
                let net = Classifier::new(arch, [3, 32, 32], 5, &flex.clone().autodiff());
                for _ in 0..3 {
                    let x = random(
                        [6, 3 * 32 * 32],
                        Distribution::Normal(0.5, 2.0),
                        1,
                        &flex.clone().autodiff(),
                    );
                    let _ = net.forward(x);
                }
                let net = net.valid();
                // A chunk that starts inside a larger block, as `score_block` cuts them.
                let block = random([9, 3 * 32 * 32], Distribution::Normal(0.5, 2.0), 2, &flex);
                let expected = host(net.forward(block.clone().narrow(0, 3, 5)));
                let scale = expected.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let net = net.to_device(&device);
                let x = block.to_device(&device).narrow(0, 3, 5);
                for how in [GpuConv::Folded, GpuConv::Im2col, GpuConv::Auto] {
                    let scorer = net.scorer_with(how);
                    assert!(
                        !matches!(scorer, Scorer::Plain(_)),
                        "{arch:?} folds on wgpu"
                    );
                    let got = host(scorer.forward(x.clone()));
                    let gap = got
                        .iter()
                        .zip(&expected)
                        .fold(0.0f32, |m, (a, e)| m.max((a - e).abs()));
                    assert!(
                        gap <= 1e-4 * scale,
                        "{arch:?} {how:?}: off by {gap} at scale {scale}"
                    );
                }
            }
        });
    }

    /// On flex the network's own forward pass runs: CPU results keep their bits.
    #[test]
    fn on_flex_it_stays_plain() {
        let net = Classifier::new(Architecture::Cnn, [3, 32, 32], 5, &Device::flex());
        assert!(matches!(net.scorer_with(GpuConv::Im2col), Scorer::Plain(_)));
    }
}
