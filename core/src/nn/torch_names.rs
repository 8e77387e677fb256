//! The names PyTorch gives a network's tensors: the one map between burn's module paths
//! and torch's `state_dict` keys, used both ways (the model an audit keeps, pretrained
//! weights read in), so the two can never disagree.

use super::Architecture;

/// A row-major `rows` x `cols` matrix transposed: a Linear weight between burn's layout
/// ([in, out]) and torch's ([out, in]), either way.
pub(crate) fn transposed(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0f32; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}

/// A module that PyTorch names differently from burn: within a network, the module
/// `burn` directly inside `parent` (`None`: at the top) is PyTorch's `torch`.
#[derive(Clone, Copy, Debug)]
pub struct Renamed {
    pub parent: Option<&'static str>,
    pub burn: &'static str,
    pub torch: &'static str,
}

const fn top(burn: &'static str, torch: &'static str) -> Renamed {
    Renamed {
        parent: None,
        burn,
        torch,
    }
}

const fn shortcut(burn: &'static str, torch: &'static str) -> Renamed {
    Renamed {
        parent: Some("downsample"),
        burn,
        torch,
    }
}

/// Every module of `architecture` whose name PyTorch spells otherwise: torch's
/// `nn.Sequential` numbers what taks names (the MLP's layers, a ResNet's shortcut).
/// `pytorch_name` reads it one way, `taks predict`'s loader the other
/// (`native/src/model_file.rs`).
pub fn renamed_modules(architecture: Architecture) -> &'static [Renamed] {
    const MLP: &[Renamed] = &[top("hidden", "0"), top("output", "2")];
    const RESNET: &[Renamed] = &[shortcut("conv", "0"), shortcut("bn", "1")];
    match architecture {
        Architecture::Mlp => MLP,
        Architecture::Cnn => &[],
        Architecture::ResNet18 | Architecture::ResNet34 | Architecture::ResNet50 => RESNET,
    }
}

/// The name PyTorch gives the tensor burn keeps under `path` (`Mlp.hidden.weight` ->
/// `0.weight`).
pub(crate) fn pytorch_name(path: &str, architecture: Architecture) -> String {
    // The first part is the Classifier's variant, which a torch module has not.
    let mut parts: Vec<&str> = path.split('.').skip(1).collect();
    let last = parts.len() - 1;
    parts[last] = match parts[last] {
        "gamma" => "weight",
        "beta" => "bias",
        other => other,
    };
    for i in 0..last {
        let parent = i.checked_sub(1).map(|p| parts[p]);
        if let Some(rename) = renamed_modules(architecture)
            .iter()
            .find(|r| r.parent == parent && r.burn == parts[i])
        {
            parts[i] = rename.torch;
        }
    }
    parts.join(".")
}
