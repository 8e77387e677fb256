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
    match architecture {
        Architecture::Mlp => match parts[0] {
            "hidden" => parts[0] = "0",
            "output" => parts[0] = "2",
            _ => {}
        },
        Architecture::ResNet18 | Architecture::ResNet34 | Architecture::ResNet50 => {
            for i in 1..parts.len() {
                if parts[i - 1] == "downsample" {
                    parts[i] = match parts[i] {
                        "conv" => "0",
                        "bn" => "1",
                        other => other,
                    };
                }
            }
        }
        Architecture::Cnn => {}
    }
    parts.join(".")
}
