//! The model an audit keeps: `model.safetensors` (the weights, in PyTorch's layout) and
//! `model.json` (what the weights are and how inputs are prepared).
//!
//! The weights go through burn-store's SafeTensors store with its Burn-to-PyTorch
//! adapter: Linear weights transposed to `[out, in]`, batch norm's gamma/beta named
//! `weight`/`bias`, and names a `torch.nn` module of the same shape loads directly:
//! - MLP: `0.weight`, `0.bias`, `2.weight`, `2.bias`, i.e. `nn.Sequential(nn.Flatten(),
//!   ...)` without the flatten: `nn.Sequential(nn.Linear(d, 256), nn.ReLU(),
//!   nn.Linear(256, C))` over flattened inputs;
//! - CNN: `blocks.{0..5}.conv.*`, `blocks.{0..5}.norm.*`, `output.*` (README spells out
//!   the module);
//! - ResNet-18: torchvision's `resnet18` names (`conv1`, `bn1`, `layer1.0.conv1`, ...,
//!   `layer2.0.downsample.0`, `layer2.0.downsample.1`, `fc`); it has no
//!   `num_batches_tracked` buffers, so load it with `strict=False`.
//!
//! Loading reverses every step, and every fault (a missing file, a corrupt one, a tensor
//! of the wrong shape, a model.json from another tool) is one line naming the file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use burn::store::{BurnToPyTorchAdapter, ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use taks_core::audit::input::{Input, Normalisation};
use taks_core::formats::atomic::write_atomically;
use taks_core::model::{Architecture, Classifier};

pub const WEIGHTS: &str = "model.safetensors";
pub const DESCRIPTION: &str = "model.json";
const FORMAT: &str = "taks-model";
const VERSION: u32 = 1;

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
                "the paper's CNN: blocks.i = Conv2d(3x3, padding 1) + BatchNorm2d + ReLU, max-pool 2x2 after blocks 1, 3, 5, then output = Linear; see the README"
            }
            Architecture::ResNet18 => {
                "torchvision.models.resnet18(num_classes=len(classes)); load_state_dict(..., strict=False) (no num_batches_tracked)"
            }
        };
        ModelCard {
            format: FORMAT.into(),
            version: VERSION,
            architecture,
            classes,
            input,
            normalisation,
            pytorch: pytorch.into(),
        }
    }
}

/// Name rewrites (regex, replacement) from burn's module paths to PyTorch's
/// (`to_pytorch`) or back.
fn renamings(
    architecture: Architecture,
    to_pytorch: bool,
) -> &'static [(&'static str, &'static str)] {
    match (architecture, to_pytorch) {
        (Architecture::Mlp, true) => &[(r"^hidden\.", "0."), (r"^output\.", "2.")],
        (Architecture::Mlp, false) => &[(r"^0\.", "hidden."), (r"^2\.", "output.")],
        (Architecture::Cnn, _) => &[],
        (Architecture::ResNet18, true) => &[
            (r"\.downsample\.conv\.", ".downsample.0."),
            (r"\.downsample\.bn\.", ".downsample.1."),
        ],
        (Architecture::ResNet18, false) => &[
            (r"\.downsample\.0\.", ".downsample.conv."),
            (r"\.downsample\.1\.", ".downsample.bn."),
        ],
    }
}

/// Write `network` and its card into `dir` (each file atomically).
pub fn save(dir: &Path, network: &Classifier, card: &ModelCard) -> Result<()> {
    let mut store = SafetensorsStore::from_bytes(None)
        .skip_enum_variants(true)
        .with_to_adapter(BurnToPyTorchAdapter)
        .metadata("taks", FORMAT)
        .metadata("architecture", card.architecture.name());
    for (from, to) in renamings(card.architecture, true) {
        store = store.with_key_remapping(*from, *to);
    }
    network
        .save_into(&mut store)
        .map_err(|e| anyhow!("{}", one_line(&e.to_string())))
        .context("collecting the model's tensors")?;
    let bytes = store
        .get_bytes()
        .map_err(|e| anyhow!("{}", one_line(&e.to_string())))?;
    let weights = dir.join(WEIGHTS);
    write_atomically(&weights, &bytes)?;
    let json = serde_json::to_vec_pretty(card)?;
    write_atomically(&dir.join(DESCRIPTION), &json)?;
    Ok(())
}

/// A saved model, ready to predict.
pub struct Loaded {
    pub card: ModelCard,
    pub network: Classifier,
}

/// Read `dir/model.json` and `dir/model.safetensors` onto `device`.
pub fn load(dir: &Path, device: &Device) -> Result<Loaded> {
    let card_path = dir.join(DESCRIPTION);
    let text = std::fs::read(&card_path).with_context(|| {
        format!(
            "cannot read {} (is {} a model folder written by taks audit?)",
            card_path.display(),
            dir.display()
        )
    })?;
    let card: ModelCard = serde_json::from_slice(&text)
        .map_err(|e| anyhow!("{}: not a taks model card: {e}", card_path.display()))?;
    if card.format != FORMAT || card.version != VERSION {
        bail!(
            "{}: format {} version {}, expected {FORMAT} version {VERSION}",
            card_path.display(),
            card.format,
            card.version
        );
    }
    check_card(&card, &card_path)?;
    let weights: PathBuf = dir.join(WEIGHTS);
    if !weights.is_file() {
        bail!("cannot read {}: no such file", weights.display());
    }
    let mut network = Classifier::new(
        card.architecture,
        card.input.shape(),
        card.classes.len(),
        device,
    );
    let mut store = SafetensorsStore::from_file(&weights)
        .skip_enum_variants(true)
        .with_from_adapter(PyTorchToBurnAdapter);
    for (from, to) in renamings(card.architecture, false) {
        store = store.with_key_remapping(*from, *to);
    }
    let result = network
        .load_from(&mut store)
        .map_err(|e| anyhow!("{}: {}", weights.display(), one_line(&e.to_string())))?;
    if !result.is_success() || !result.unused.is_empty() {
        bail!(
            "{}: does not fit a {} for {:?} with {} classes ({})",
            weights.display(),
            card.architecture.name(),
            card.input.shape(),
            card.classes.len(),
            one_line(&result.to_string())
        );
    }
    Ok(Loaded { card, network })
}

/// The card's numbers agree with each other.
fn check_card(card: &ModelCard, path: &Path) -> Result<()> {
    let groups = match &card.input {
        Input::Image {
            channels,
            height,
            width,
        } => {
            if !matches!(channels, 1 | 3)
                || !(1..=4096).contains(height)
                || !(1..=4096).contains(width)
            {
                bail!(
                    "{}: input {:?} is not an image size",
                    path.display(),
                    card.input
                );
            }
            if card.architecture == Architecture::Cnn && (height != width || height % 8 != 0) {
                bail!(
                    "{}: the CNN takes square images with a side that is a multiple of 8, not {width}x{height}",
                    path.display()
                );
            }
            *channels
        }
        Input::Table { features } => {
            if features.is_empty() || card.architecture != Architecture::Mlp {
                bail!(
                    "{}: a table model is an MLP over at least one feature column",
                    path.display()
                );
            }
            features.len()
        }
    };
    if card.classes.len() < 2 {
        bail!("{}: a model needs at least 2 classes", path.display());
    }
    let n = &card.normalisation;
    if n.mean.len() != groups
        || n.std.len() != groups
        || n.std.iter().any(|s| s.is_nan() || *s <= 0.0)
    {
        bail!(
            "{}: the normalisation does not fit the input",
            path.display()
        );
    }
    Ok(())
}

/// burn-store's messages span lines; ours are one.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
