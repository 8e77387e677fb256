//! Starting a ResNet from pretrained weights: a torchvision or timm `state_dict`, as a
//! `.safetensors` file or a torch `.pth` ([`crate::formats::state_dict`]).
//!
//! Every tensor but the classifier's (`fc`) is loaded: the classifier is sized for the
//! data's classes and keeps its fresh random weights, as fine-tuning does. torchvision's
//! and timm's
//! ResNet-18/34/50 use the same names (`conv1`, `bn1`, `layer1.0.conv1`, ...,
//! `layer1.0.downsample.0`, `fc`), which are this crate's ResNet's with the projection
//! renamed ([`super::torch_names`] maps them); the batch norms'
//! `num_batches_tracked` counters are not used (burn's batch norm has a fixed momentum,
//! as torch's does by default).
//!
//! Each fault is one line naming the file and the tensor: a file of another depth (said
//! by name, with the `--model` that fits it), a missing tensor, a tensor of the wrong
//! shape, a tensor no ResNet of that depth has.

use std::path::Path;

use burn::tensor::{Tensor, TensorData};

use super::torch_names::{pytorch_name, transposed};
use super::{Architecture, Classifier, Networks};
use crate::formats::state_dict::{self, StateDict, Weight};
use crate::params::{float_tensors, replace_float_tensors};
use crate::{Error, Result};

/// The preprocessing of torchvision's ImageNet weights, which a pretrained backbone
/// expects: the shorter side resized to 256, the centre 224x224 cut out
/// ([`crate::formats::image_folder::decode_centre_crop`]), pixels scaled to [0, 1] and
/// standardised per channel by ImageNet's mean and standard deviation.
pub const RESIZE: u32 = 256;
pub const CROP: u32 = 224;
pub const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
pub const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];
/// The same, in words, for the files a run writes.
pub const PREPROCESSING: &str = "RGB; resize the shorter side to 256 (bilinear), centre crop 224x224; x/255, then (x - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225] per channel";

/// Planar RGB bytes [3, H, W] as the network's input under [`PREPROCESSING`].
pub fn imagenet_input(pixels: &[u8]) -> Vec<f32> {
    let plane = pixels.len() / 3;
    pixels
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = i / plane;
            (*p as f32 / 255.0 - IMAGENET_MEAN[c]) / IMAGENET_STD[c]
        })
        .collect()
}

/// The pretrained weights in `path` (a torch `.pth` or a `.safetensors` state_dict).
pub fn read(path: &Path) -> Result<StateDict> {
    Ok(state_dict::read(path)?)
}

/// What network a state_dict holds, from its names: one of ours, or a description of
/// another ResNet (`ResNet-101`), or `None` when it is no torchvision-style ResNet.
pub fn depth_of(state: &StateDict) -> Option<std::result::Result<Architecture, String>> {
    let has = |name: &str| state.tensors.contains_key(name);
    if !has("conv1.weight") || !has("layer1.0.conv1.weight") {
        return None;
    }
    let blocks = |stage: usize| {
        (0..)
            .take_while(|b| has(&format!("layer{stage}.{b}.conv1.weight")))
            .count()
    };
    let counts = [blocks(1), blocks(2), blocks(3), blocks(4)];
    let bottleneck = has("layer1.0.conv3.weight");
    Some(match (counts, bottleneck) {
        ([2, 2, 2, 2], false) => Ok(Architecture::ResNet18),
        ([3, 4, 6, 3], false) => Ok(Architecture::ResNet34),
        ([3, 4, 6, 3], true) => Ok(Architecture::ResNet50),
        ([3, 4, 23, 3], true) => Err("a ResNet-101".into()),
        ([3, 8, 36, 3], true) => Err("a ResNet-152".into()),
        (c, b) => Err(format!(
            "a ResNet of {} blocks {}-{}-{}-{}",
            if b { "bottleneck" } else { "basic" },
            c[0],
            c[1],
            c[2],
            c[3]
        )),
    })
}

/// Check that `state` holds the backbone of `architecture`, with a message naming the
/// file (and, for a file of another depth, the `--model` it needs).
pub fn check_depth(state: &StateDict, architecture: Architecture, path: &Path) -> Result<()> {
    let bad = |reason: String| Err(Error::malformed(path, reason));
    if !architecture.is_resnet() {
        return Err(Error::Config(format!(
            "pretrained weights (--init) are for torchvision's ResNets (--model resnet18, resnet34 or resnet50), not the {}",
            architecture.name()
        )));
    }
    match depth_of(state) {
        None => bad(format!(
            "not a torchvision or timm ResNet state_dict (no {} tensor)",
            if state.tensors.contains_key("conv1.weight") {
                "layer1.0.conv1.weight"
            } else {
                "conv1.weight"
            }
        )),
        Some(Ok(found)) if found == architecture => Ok(()),
        Some(Ok(found)) => bad(format!(
            "holds a {} state_dict, not a {} (use --model {})",
            found.name(),
            architecture.name(),
            found.name()
        )),
        Some(Err(other)) => bad(format!(
            "holds {other}, not a {} (taks builds ResNet-18, -34 and -50)",
            architecture.name()
        )),
    }
}

impl Classifier {
    /// This ResNet with every tensor but its classifier's taken from `state`
    /// (`architecture` is what it was built as; `path` names the file in errors).
    pub fn with_backbone(
        self,
        architecture: Architecture,
        state: &StateDict,
        path: &Path,
    ) -> Result<Classifier> {
        self.with_weights(architecture, state, path, false)
    }

    /// This ResNet with its tensors from `state`, the classifier's too when `head`.
    fn with_weights(
        self,
        architecture: Architecture,
        state: &StateDict,
        path: &Path,
        head: bool,
    ) -> Result<Classifier> {
        check_depth(state, architecture, path)?;
        let bad = |reason: String| Error::malformed(path, reason);
        let own = float_tensors(&self);
        let mut values = Vec::with_capacity(own.len());
        let mut loaded = std::collections::BTreeSet::new();
        for t in own {
            let name = pytorch_name(&t.name, architecture);
            if name.starts_with("fc.") && !head {
                values.push(t.values);
                continue;
            }
            let weight = state
                .tensors
                .get(&name)
                .ok_or_else(|| bad(format!("has no tensor {name}")))?;
            let Weight::Float { shape, values: v } = weight else {
                return Err(bad(format!("tensor {name} is not floating-point")));
            };
            // A Linear weight (the classifier's, when `head`) is [out, in] in torch's
            // layout and [in, out] in burn's.
            let linear = t.dims.len() == 2;
            let torch_dims: Vec<usize> = match linear {
                true => vec![t.dims[1], t.dims[0]],
                false => t.dims.clone(),
            };
            if *shape != torch_dims {
                return Err(bad(format!(
                    "tensor {name} is {shape:?}; this {} needs {:?}{}",
                    architecture.name(),
                    torch_dims,
                    if name == "conv1.weight" {
                        " (pretrained weights take colour images)"
                    } else {
                        ""
                    }
                )));
            }
            let v = match linear {
                true => transposed(v, shape[0], shape[1]),
                false => v.clone(),
            };
            let (device, n) = (t.values.device(), v.len());
            values.push(Tensor::from_data(TensorData::new(v, [n]), &device));
            loaded.insert(name);
        }
        // Every tensor of the file but the classifier and the counters was loaded, else
        // the file is of a network with more parts than this one.
        let extra = state.tensors.keys().find(|name| {
            !name.starts_with("fc.")
                && !name.ends_with(".num_batches_tracked")
                && !loaded.contains(*name)
        });
        if let Some(extra) = extra {
            return Err(bad(format!(
                "tensor {extra} is not part of a {}",
                architecture.name()
            )));
        }
        Ok(replace_float_tensors(self, values))
    }
}

impl Networks {
    /// Each network with its backbone from `state` ([`Classifier::with_backbone`]).
    pub fn with_backbone(
        self,
        architecture: Architecture,
        state: &StateDict,
        path: &Path,
    ) -> Result<Networks> {
        let nets = self
            .nets
            .into_iter()
            .map(|net| net.with_backbone(architecture, state, path))
            .collect::<Result<Vec<_>>>()?;
        Ok(Networks { nets })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use burn::tensor::Device;

    use super::*;
    use crate::formats::tensors;
    use crate::rng::SplitMix64;

    /// `count` values in [-1, 1), as `uniform` in scripts/torchvision-parity.py.
    /// The script's `fnv1a(name)` is the salt of `SplitMix64::for_stream(0, name)`, and
    /// its `splitmix64(x)` the first output of `SplitMix64::new(x)`.
    fn uniform(name: &str, count: usize) -> Vec<f64> {
        let seed = SplitMix64::for_stream(0, name).state();
        (0..count as u64)
            .map(|i| {
                let bits = SplitMix64::new(seed.wrapping_add(i)).next_u64() >> 40;
                bits as f64 / (1u64 << 24) as f64 * 2.0 - 1.0
            })
            .collect()
    }

    /// `formula` of scripts/torchvision-parity.py: the fixture's weights by name.
    fn formula(name: &str, shape: &[usize]) -> Vec<f32> {
        let u = uniform(name, shape.iter().product());
        let last = name.rsplit('.').next().unwrap();
        let f = |a: f64, b: f64| u.iter().map(|u| (a + b * u) as f32).collect();
        match last {
            "weight" if shape.len() > 1 => {
                let fan_in: usize = shape[1..].iter().product();
                let s = (3.0 / fan_in as f64).sqrt();
                u.iter().map(|u| (u * s) as f32).collect()
            }
            "weight" => f(1.0, 0.2),
            "bias" | "running_mean" => f(0.0, 0.1),
            "running_var" => f(1.0, 0.5),
            other => panic!("no formula for {other}"),
        }
    }

    /// The formula's weights for `architecture`, as a .safetensors file of torchvision's
    /// names, read back through [`read`].
    fn formula_file(architecture: Architecture, dir: &Path) -> (StateDict, std::path::PathBuf) {
        let net = Classifier::new(architecture, [3, 64, 64], 10, &Device::flex());
        let mut named = BTreeMap::new();
        for t in float_tensors(&net) {
            let name = pytorch_name(&t.name, architecture);
            // Linear weights are [out, in] in torch's layout.
            let shape = match (name.as_str(), t.dims.as_slice()) {
                ("fc.weight", [i, o]) => vec![*o, *i],
                _ => t.dims.clone(),
            };
            named.insert(
                name.clone(),
                tensors::Tensor::f32(shape.clone(), formula(&name, &shape)),
            );
        }
        let path = dir.join(format!("{}.safetensors", architecture.name()));
        std::fs::write(&path, tensors::encode(&named, &[])).unwrap();
        (read(&path).unwrap(), path)
    }

    /// PyTorch's logits (scripts/torchvision-parity.py --fixture) for the same weights
    /// and inputs: each depth within 1e-4 of the logits' scale.
    #[test]
    fn logits_match_torchvision_for_each_depth() {
        let dir = std::env::temp_dir().join(format!("taks-parity-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fixtures = std::path::PathBuf::from(
            std::env::var("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into()),
        )
        .join("tests/fixtures/resnet-parity");
        let input: Vec<f32> = uniform("input", 2 * 3 * 64 * 64)
            .iter()
            .map(|v| *v as f32)
            .collect();
        let device = Device::flex();
        for architecture in [
            Architecture::ResNet18,
            Architecture::ResNet34,
            Architecture::ResNet50,
        ] {
            let (state, path) = formula_file(architecture, &dir);
            let net = Classifier::new(architecture, [3, 64, 64], 10, &device)
                .with_weights(architecture, &state, &path, true)
                .unwrap();
            let x =
                Tensor::<2>::from_data(TensorData::new(input.clone(), [2, 3 * 64 * 64]), &device);
            let ours: Vec<f32> = net.forward(x).into_data().try_to_vec::<f32>().unwrap();
            let expected = crate::formats::npy::read_matrix(
                &fixtures.join(format!("{}-logits.npy", architecture.name())),
            )
            .unwrap();
            assert_eq!((expected.rows, expected.cols), (2, 10));
            let scale = expected.values.iter().fold(0f32, |m, v| m.max(v.abs()));
            let gap = ours
                .iter()
                .zip(&expected.values)
                .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(scale > 0.5, "{architecture:?}: logits of scale {scale}");
            assert!(
                gap <= 1e-4 * scale,
                "{architecture:?}: off PyTorch's logits by {gap} at scale {scale}: {ours:?} against {:?}",
                expected.values
            );
            // The backbone alone keeps the classifier's fresh weights: other logits.
            let fresh = Classifier::new(architecture, [3, 64, 64], 10, &device)
                .with_backbone(architecture, &state, &path)
                .unwrap();
            let x =
                Tensor::<2>::from_data(TensorData::new(input.clone(), [2, 3 * 64 * 64]), &device);
            let other: Vec<f32> = fresh.forward(x).into_data().try_to_vec::<f32>().unwrap();
            assert!(other.iter().zip(&ours).any(|(a, b)| (a - b).abs() > 1e-3));
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_file_of_another_depth_or_with_a_missing_or_misshapen_tensor_is_named() {
        let dir = std::env::temp_dir().join(format!("taks-depth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (state, path) = formula_file(Architecture::ResNet18, &dir);
        let build = |a| Classifier::new(a, [3, 32, 32], 4, &Device::flex());
        let err = build(Architecture::ResNet50)
            .with_backbone(Architecture::ResNet50, &state, &path)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("holds a resnet18 state_dict, not a resnet50 (use --model resnet18)"),
            "{err}"
        );
        let mut missing = state.clone();
        missing.tensors.remove("layer2.1.bn2.running_var");
        let err = build(Architecture::ResNet18)
            .with_backbone(Architecture::ResNet18, &missing, &path)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("has no tensor layer2.1.bn2.running_var"),
            "{err}"
        );
        let grey = Classifier::new(Architecture::ResNet18, [1, 32, 32], 4, &Device::flex());
        let err = grey
            .with_backbone(Architecture::ResNet18, &state, &path)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tensor conv1.weight is [64, 3, 7, 7]; this resnet18 needs [64, 1, 7, 7]"),
            "{err}"
        );
        let mut extra = state.clone();
        extra.tensors.insert(
            "layer4.0.se.weight".into(),
            Weight::Other { shape: vec![1] },
        );
        let err = build(Architecture::ResNet18)
            .with_backbone(Architecture::ResNet18, &extra, &path)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("tensor layer4.0.se.weight is not part of a resnet18"),
            "{err}"
        );
        let head_only = StateDict {
            tensors: state
                .tensors
                .into_iter()
                .filter(|(k, _)| k.starts_with("fc."))
                .collect(),
        };
        let err = build(Architecture::ResNet18)
            .with_backbone(Architecture::ResNet18, &head_only, &path)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a torchvision or timm ResNet state_dict (no conv1.weight tensor)"),
            "{err}"
        );
        let err = build(Architecture::Mlp)
            .with_backbone(Architecture::Mlp, &head_only, &path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not the mlp"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
