//! Saving and loading the model an audit keeps (`model.safetensors` + `model.json`,
//! described in [`taks_core::audit::model_card`], which also writes the weights).
//!
//! Loading goes through burn-store's SafeTensors store with its PyTorch-to-Burn adapter
//! (Linear weights transposed back, batch norm's `weight`/`bias` as gamma/beta) and
//! the name rewrites below, so a file PyTorch wrote under the same names loads too.
//! Every fault (a missing file, a corrupt one, a tensor of the wrong shape, a
//! model.json from another tool) is one line naming the file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use burn::store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::Device;
use taks_core::audit::input::Input;
use taks_core::formats::atomic::write_atomically;
use taks_core::nn::torch_names::renamed_modules;
use taks_core::nn::{Architecture, Classifier};

pub use taks_core::audit::model_card::{DESCRIPTION, ModelCard, WEIGHTS};
use taks_core::audit::model_card::{FORMAT, VERSION, VERSION_CENTRE_CROP, pytorch_weights};

/// Name rewrites (regex, replacement) from PyTorch's names back to burn's module paths:
/// `pytorch_name`'s renamings (`taks_core::nn::torch_names`) undone.
fn renamings(architecture: Architecture) -> Vec<(String, String)> {
    renamed_modules(architecture)
        .iter()
        .map(|r| match r.parent {
            None => (format!(r"^{}\.", r.torch), format!("{}.", r.burn)),
            Some(parent) => (
                format!(r"\.{parent}\.{}\.", r.torch),
                format!(".{parent}.{}.", r.burn),
            ),
        })
        .collect()
}

/// Write `network` and its card into `dir` (each file atomically).
pub fn save(dir: &Path, network: &Classifier, card: &ModelCard) -> Result<()> {
    let bytes = pollster::block_on(pytorch_weights(network, card.architecture))?;
    write_atomically(&dir.join(WEIGHTS), &bytes)?;
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
            "cannot read {} (is {} a model folder written by taks audit or taks train?)",
            card_path.display(),
            dir.display()
        )
    })?;
    let card = read_card(&text, &card_path)?;
    let weights: PathBuf = dir.join(WEIGHTS);
    if !weights.is_file() {
        bail!("cannot read {}: no such file", weights.display());
    }
    let described = format!(
        "{} for {:?} with {} classes",
        card.architecture.name(),
        card.input.shape(),
        card.classes.len()
    );
    // The card's numbers set the size of the network built for it. One that the weights
    // file cannot hold, at 2 bytes a parameter (f16's), is refused before it is built, so
    // that a card claiming an MLP over 4096x4096 images or a million classes allocates
    // nothing.
    let sized = card
        .architecture
        .sized_parameters(card.input.shape(), card.classes.len());
    let bytes = std::fs::metadata(&weights)
        .with_context(|| format!("cannot read {}", weights.display()))?
        .len();
    if sized.saturating_mul(2) > bytes {
        // A file that is not whole says so in the reader's own words first.
        taks_core::formats::state_dict::read(&weights)?;
        bail!(
            "{} does not fit {}: its {described} has at least {sized} parameters, more than the file's {bytes} bytes hold",
            weights.display(),
            card_path.display(),
        );
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
    for (from, to) in renamings(card.architecture) {
        store = store.with_key_remapping(from, to);
    }
    let fitted = match network.load_from(&mut store) {
        Ok(result) if result.is_success() && result.unused.is_empty() => Ok(()),
        Ok(result) => Err(one_line(&result.to_string())),
        Err(e) => Err(one_line(&e.to_string())),
    };
    if let Err(burns_words) = fitted {
        // A file that is not whole says so in the reader's own words.
        let found = taks_core::formats::state_dict::read(&weights)?;
        // What the card's network needs, in PyTorch's names and layouts (a load that
        // failed leaves every shape as it was built).
        let needed = pollster::block_on(pytorch_weights(&network, card.architecture))?;
        let misfit = misfit(&needed, &found.tensors, &weights).unwrap_or(burns_words);
        bail!(
            "{} does not fit {}, whose {described} it is loaded into: {misfit}",
            weights.display(),
            card_path.display(),
        );
    }
    Ok(Loaded { card, network })
}

/// The first tensor of the weights file that the network of the card cannot take, said
/// in PyTorch's names and layouts (what the card needs, what the file holds), or None
/// when every tensor fits (burn's words are used then).
fn misfit(
    needed: &[u8],
    found: &std::collections::BTreeMap<String, taks_core::formats::state_dict::Weight>,
    weights: &Path,
) -> Option<String> {
    let needed = taks_core::formats::state_dict::safetensors(needed, weights)
        .ok()?
        .tensors;
    for (name, want) in &needed {
        match found.get(name) {
            None => {
                return Some(format!(
                    "it has no tensor {name}, which the card's network needs"
                ));
            }
            Some(got) if got.shape() != want.shape() => {
                return Some(format!(
                    "its tensor {name} is {:?}, where the card's network needs {:?}",
                    got.shape(),
                    want.shape()
                ));
            }
            Some(_) => {}
        }
    }
    found
        .keys()
        .find(|name| !needed.contains_key(*name) && !name.ends_with("num_batches_tracked"))
        .map(|name| format!("it holds a tensor {name}, which the card's network does not have"))
}

/// The card in `text` (the bytes of `card_path`), refused unless it is a taks model
/// card of a version this build reads whose numbers agree with each other.
fn read_card(text: &[u8], card_path: &Path) -> Result<ModelCard> {
    let card: ModelCard = serde_json::from_slice(text)
        .map_err(|e| anyhow!("{}: not a taks model card: {e}", card_path.display()))?;
    let version_fits = match card.centre_crop {
        None => card.version == VERSION,
        Some(_) => card.version == VERSION_CENTRE_CROP,
    };
    if card.format != FORMAT || !version_fits {
        bail!(
            "{}: format {} version {}, expected {FORMAT} version {VERSION} (or {VERSION_CENTRE_CROP} with centre_crop)",
            card_path.display(),
            card.format,
            card.version
        );
    }
    check_card(&card, card_path)?;
    Ok(card)
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
    if let Some(crop) = card.centre_crop {
        let fits = match card.input {
            Input::Image {
                channels: 3,
                height,
                width,
            } => height == width && crop.resize as usize >= width,
            _ => false,
        };
        if !fits {
            bail!(
                "{}: centre_crop {{resize: {}}} needs square colour images no larger than {}, not {:?}",
                path.display(),
                crop.resize,
                crop.resize,
                card.input
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Two valid cards: an MLP over a table, and a centre-cropped ResNet over photos.
    const SEEDS: [&str; 2] = [
        r#"{"format":"taks-model","version":1,"architecture":"mlp","classes":["a","b"],"input":{"kind":"table","features":["x","y"]},"normalisation":{"mean":[0,0],"std":[1,1]},"pytorch":""}"#,
        r#"{"format":"taks-model","version":2,"architecture":"resnet18","classes":["cat","dog","fox"],"input":{"kind":"image","channels":3,"height":224,"width":224},"normalisation":{"mean":[0.485,0.456,0.406],"std":[0.229,0.224,0.225]},"centre_crop":{"resize":256},"pytorch":"torchvision"}"#,
    ];

    /// The card reader (`model.json` of a model someone sent) on 10,000 seeded
    /// mutations of each seed: bytes flipped, set, inserted, cut, repeated. No input
    /// panics; every refusal is one line that names the file; every card it accepts
    /// holds together (its network's size computable, its classes at least two).
    #[test]
    fn mutated_cards_are_read_or_refused_in_one_line() {
        let path = Path::new("/somewhere/model.json");
        let mut draw = taks_core::rng::SplitMix64::new(0x6d6f_6465_6c00_0000);
        let mut next = move || draw.next_u64();
        let (mut accepted, mut refused) = (0, 0);
        for seed in SEEDS {
            assert!(read_card(seed.as_bytes(), path).is_ok(), "the seed {seed}");
            for _ in 0..10_000 {
                let mut bytes = seed.as_bytes().to_vec();
                for _ in 0..1 + next() % 3 {
                    let at = (next() as usize) % bytes.len().max(1);
                    match next() % 5 {
                        0 if !bytes.is_empty() => bytes[at] ^= 1 << (next() % 8),
                        1 if !bytes.is_empty() => {
                            bytes[at] = b"0123456789-.e\"{}[],:"[(next() % 20) as usize]
                        }
                        2 => bytes.insert(at.min(bytes.len()), next() as u8),
                        3 => bytes.truncate(at),
                        _ => {
                            let end = (at + 1 + (next() as usize) % 24).min(bytes.len());
                            let piece = bytes[at.min(end)..end].to_vec();
                            bytes.splice(at.min(bytes.len())..at.min(bytes.len()), piece);
                        }
                    }
                }
                match std::panic::catch_unwind(|| read_card(&bytes, path)) {
                    Ok(Ok(card)) => {
                        accepted += 1;
                        assert!(card.classes.len() >= 2);
                        let _ = card
                            .architecture
                            .sized_parameters(card.input.shape(), card.classes.len());
                    }
                    Ok(Err(e)) => {
                        refused += 1;
                        let e = e.to_string();
                        assert!(!e.contains('\n'), "{e}");
                        assert!(e.starts_with("/somewhere/model.json: "), "{e}");
                    }
                    Err(_) => panic!(
                        "a card panicked the reader: {:?}",
                        String::from_utf8_lossy(&bytes)
                    ),
                }
            }
        }
        // Both outcomes are reached: the mutations are not all fatal, nor all harmless.
        assert!(
            accepted > 100 && refused > 10_000,
            "{accepted} accepted, {refused} refused"
        );
    }
}
