//! The model an audit keeps: `model.safetensors` (the weights, in PyTorch's layout) and
//! `model.json` (what the weights are and how inputs are prepared). Written here for
//! `taks audit` and the browser page alike; `taks predict` loads them.
//!
//! The weights are the network's float tensors ([`crate::params`]) under the names and
//! layouts a `torch.nn` module of the same shape loads directly:
//! - Linear weights transposed to `[out, in]`; batch norm's gamma/beta named
//!   `weight`/`bias`; convolutions as they are (`[out, in, kh, kw]` in both);
//! - MLP: `0.weight`, `0.bias`, `2.weight`, `2.bias`, i.e. `nn.Sequential(nn.Linear(d,
//!   256), nn.ReLU(), nn.Linear(256, C))` over flattened inputs;
//! - CNN: `blocks.{0..5}.conv.*`, `blocks.{0..5}.norm.*`, `output.*` (docs/audit.md
//!   spells out the module);
//! - ResNet-18, -34, -50: torchvision's `resnet18`/`34`/`50` names (`conv1`, `bn1`, `layer1.0.conv1`, ...,
//!   `layer2.0.downsample.0`, `layer2.0.downsample.1`, `fc`); it has no
//!   `num_batches_tracked` buffers, so load it with `strict=False`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::input::{Input, Normalisation};
use crate::Result;
use crate::formats::tensors::{self, Tensor};
use crate::nn::torch_names::{pytorch_name, transposed};
use crate::nn::{Architecture, Classifier};
use crate::params::float_tensors;
use crate::read_back::read_floats;

pub const WEIGHTS: &str = "model.safetensors";
pub const DESCRIPTION: &str = "model.json";
pub const FORMAT: &str = "taks-model";
/// Version 1: images resized to the input's size. Version 2 adds `centre_crop`
/// (torchvision's ImageNet preparation, for networks fine-tuned from pretrained weights);
/// a card without it is still written as version 1, so older readers keep reading it and
/// refuse, rather than misread, one with it.
pub const VERSION: u32 = 1;
pub const VERSION_CENTRE_CROP: u32 = 2;

/// torchvision's ImageNet preparation of an image input: RGB, the shorter side resized to
/// `resize` (bilinear), then the centre crop of the input's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CentreCrop {
    pub resize: u32,
}

/// `model.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelCard {
    pub format: String,
    pub version: u32,
    pub architecture: Architecture,
    /// Class names; output j of the network is `classes[j]`.
    pub classes: Vec<String>,
    pub input: Input,
    pub normalisation: Normalisation,
    /// Images are centre-cropped instead of resized (version 2; absent in version 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub centre_crop: Option<CentreCrop>,
    /// How the tensor names map onto PyTorch (for a person reading the file).
    pub pytorch: String,
}

impl ModelCard {
    pub fn new(
        architecture: Architecture,
        classes: Vec<String>,
        input: Input,
        normalisation: Normalisation,
    ) -> Self {
        let pytorch = match architecture {
            Architecture::Mlp => {
                "nn.Sequential(nn.Linear(inputs, 256), nn.ReLU(), nn.Linear(256, classes)) over flattened, normalised inputs"
            }
            Architecture::Cnn => {
                "the paper's CNN: blocks.i = Conv2d(3x3, padding 1) + BatchNorm2d + ReLU, max-pool 2x2 after blocks 1, 3, 5, then output = Linear; see docs/audit.md"
            }
            Architecture::ResNet18 => {
                "torchvision.models.resnet18(num_classes=len(classes)); load_state_dict(..., strict=False) (no num_batches_tracked)"
            }
            Architecture::ResNet34 => {
                "torchvision.models.resnet34(num_classes=len(classes)); load_state_dict(..., strict=False) (no num_batches_tracked)"
            }
            Architecture::ResNet50 => {
                "torchvision.models.resnet50(num_classes=len(classes)); load_state_dict(..., strict=False) (no num_batches_tracked)"
            }
        };
        ModelCard {
            format: FORMAT.into(),
            version: VERSION,
            architecture,
            classes,
            input,
            normalisation,
            centre_crop: None,
            pytorch: pytorch.into(),
        }
    }

    /// The same card for images prepared by torchvision's centre crop (version 2).
    pub fn centre_cropped(self, resize: u32) -> Self {
        ModelCard {
            version: VERSION_CENTRE_CROP,
            centre_crop: Some(CentreCrop { resize }),
            ..self
        }
    }
}

/// The SafeTensors bytes of `network` (an `architecture`) in PyTorch's names and
/// layouts (see the module doc). Async: on WebGPU the weights are read off the device.
pub async fn pytorch_weights(network: &Classifier, architecture: Architecture) -> Result<Vec<u8>> {
    let mut tensors = BTreeMap::new();
    for t in float_tensors(network) {
        let values = read_floats(t.values, "the model's weights").await?;
        let (name, shape, values) = pytorch_tensor(&t.name, architecture, t.dims, values);
        tensors.insert(name, Tensor::f32(shape, values));
    }
    Ok(tensors::encode(
        &tensors,
        &[
            ("taks", FORMAT),
            ("architecture", architecture.name()),
            ("format", "pt"),
        ],
    ))
}

/// One tensor under burn's path (`Mlp.hidden.weight`) as PyTorch names and lays it out.
fn pytorch_tensor(
    path: &str,
    architecture: Architecture,
    dims: Vec<usize>,
    values: Vec<f32>,
) -> (String, Vec<usize>, Vec<f32>) {
    let name = pytorch_name(path, architecture);
    // A 2-D weight is a Linear's: burn keeps [in, out], torch [out, in].
    if dims.len() == 2 && name.rsplit('.').next() == Some("weight") {
        let (rows, cols) = (dims[0], dims[1]);
        return (name, vec![cols, rows], transposed(&values, rows, cols));
    }
    (name, dims, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_layouts_are_pytorch_s() {
        let t = |path: &str, arch, dims: Vec<usize>| {
            let n = dims.iter().product();
            let (name, shape, values) =
                pytorch_tensor(path, arch, dims, (0..n).map(|v| v as f32).collect());
            (name, shape, values)
        };
        let (name, shape, values) = t("Mlp.hidden.weight", Architecture::Mlp, vec![2, 3]);
        assert_eq!((name.as_str(), shape), ("0.weight", vec![3, 2]));
        // burn's row r = input r; torch's row = output: [[0, 3], [1, 4], [2, 5]].
        assert_eq!(values, [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(t("Mlp.output.bias", Architecture::Mlp, vec![4]).0, "2.bias");
        assert_eq!(
            t("Cnn.blocks.3.norm.gamma", Architecture::Cnn, vec![8]).0,
            "blocks.3.norm.weight"
        );
        let conv = t(
            "Cnn.blocks.0.conv.weight",
            Architecture::Cnn,
            vec![4, 3, 3, 3],
        );
        assert_eq!(
            (conv.0.as_str(), conv.1),
            ("blocks.0.conv.weight", vec![4, 3, 3, 3])
        );
        assert_eq!(
            t(
                "ResNet.layer2.0.downsample.bn.beta",
                Architecture::ResNet18,
                vec![8]
            )
            .0,
            "layer2.0.downsample.1.bias"
        );
        assert_eq!(
            t(
                "ResNet.layer2.0.downsample.conv.weight",
                Architecture::ResNet18,
                vec![8, 4, 1, 1]
            )
            .0,
            "layer2.0.downsample.0.weight"
        );
        assert_eq!(
            t("ResNet.bn1.running_var", Architecture::ResNet18, vec![8]).0,
            "bn1.running_var"
        );
        assert_eq!(
            t("ResNet.fc.weight", Architecture::ResNet18, vec![512, 2]).1,
            [2, 512]
        );
    }
}
