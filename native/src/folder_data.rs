//! The data of a run: a built-in dataset, or a user's folder in the paper's Clothing1M
//! protocol (`taks train --data DIR`, `--dataset folder`) of images or embeddings, whose
//! network and input size are chosen from its training split when a run starts and
//! kept in its config ([`taks_core::data::folder`], [`taks_core::data::embeddings`]).
//! With pretrained weights (`--init`) the network is theirs and the images are prepared
//! as they expect (224x224 centre crops, ImageNet's statistics).

use std::path::Path;

use anyhow::{Context, Result};
use taks_core::audit::input::{Input, Normalisation};
use taks_core::audit::model_card::ModelCard;
use taks_core::data::cache::Cache;
use taks_core::data::folder::Preparation;
use taks_core::data::{Dataset, DatasetKind, Split, folder};
use taks_core::formats::image_folder::{self, Skipped};
use taks_core::nn::pretrained;
use taks_core::settings::TrainConfig;

/// What a run trains, validates and tests on.
#[derive(Clone)]
pub struct RunData {
    pub split: Split,
    /// The validation split of a folder.
    pub val: Option<Dataset>,
    /// One line about a folder: its classes, splits and skipped files.
    pub note: Option<String>,
    /// What a run keeps with its network for `taks predict` and PyTorch: the class
    /// names and how an image becomes an input ([`ModelCard`]); none for a folder of
    /// embeddings, whose rows come from another network.
    pub card: Option<ModelCard>,
}

/// For a folder config without an input yet: choose the network and input from the
/// training images and write both into `config`. A no-op for built-in datasets and for
/// configs that already have one (a resumed run).
pub fn choose(config: &mut TrainConfig, dir: Option<&Path>) -> Result<()> {
    if config.dataset != DatasetKind::Folder || config.folder_input.is_some() {
        return Ok(());
    }
    let dir = dir.context("a folder dataset needs its folder (taks train --data DIR; taks experiment --data-dir folder=DIR)")?;
    let scan = folder::scan(dir)?;
    if config.init.is_some() {
        // The network is the one the weights are for (set by `train`), at the size they
        // were trained at.
        let side = pretrained::CROP as usize;
        config.folder_input = Some([3, side, side]);
    } else {
        let (architecture, input) = scan.choose()?;
        config.architecture = architecture;
        config.folder_input = Some(input);
    }
    config.validate()?;
    Ok(())
}

/// `config` after [`choose`].
pub fn chosen(mut config: TrainConfig, dir: Option<&Path>) -> Result<TrainConfig> {
    choose(&mut config, dir)?;
    Ok(config)
}

/// The model card of a run on a built-in set: its classes by number (as `taks audit
/// --dataset` names them), its images as the loader gives them, standardised with the
/// statistics the loader uses, so `taks predict` prepares an image file the way the
/// run's samples were prepared.
fn builtin_card(config: &TrainConfig, split: &Split) -> ModelCard {
    let [channels, height, width] = split.train.shape;
    let (mean, std) = config.dataset.channel_normalisation();
    ModelCard::new(
        config.architecture,
        (0..split.train.classes).map(|c| c.to_string()).collect(),
        Input::Image {
            channels,
            height,
            width,
        },
        Normalisation { mean, std },
    )
}

/// "N files skipped: 3 .heic, 1 .txt", or that none were.
pub fn skipped_line(skipped: &[Skipped]) -> String {
    match skipped.len() {
        0 => "0 files skipped".to_string(),
        n => format!(
            "{n} files skipped: {}",
            image_folder::skipped_kinds(skipped)
        ),
    }
}

/// Read the data of `config` (after [`choose`] for a folder).
pub fn load(config: &TrainConfig, dir: Option<&Path>) -> Result<RunData> {
    if config.dataset != DatasetKind::Folder {
        let split = config.dataset.load(dir)?;
        let card = builtin_card(config, &split);
        return Ok(RunData {
            split,
            val: None,
            note: None,
            card: Some(card),
        });
    }
    let dir = dir.context("a folder dataset needs its folder (taks train --data DIR; taks experiment --data-dir folder=DIR)")?;
    let input = config
        .folder_input
        .context("the folder's input size was not chosen")?;
    let preparation = match config.init {
        Some(_) => Preparation::ImageNet,
        None => Preparation::Fitted,
    };
    let loaded = folder::scan(dir)?.load_as(input, Some(&Cache::with_defaults()), preparation)?;
    let network = match input {
        [1, 1, features] => format!("{} on {features} features", config.architecture.name()),
        [c, h, w] => format!(
            "{} at {w}x{h} {}",
            config.architecture.name(),
            if c == 1 { "grey" } else { "colour" }
        ),
    };
    let mut note = loaded.notes.join("\n");
    if !note.is_empty() {
        note.push('\n');
    }
    note += &format!(
        "{}: {} classes; train {}, val {}, test {} samples ({}); {network}",
        dir.display(),
        loaded.classes.len(),
        loaded.split.train.len(),
        loaded.val.len(),
        loaded.split.test.len(),
        skipped_line(&loaded.skipped.concat()),
    );
    let card = match input {
        [1, 1, _] => None,
        [channels, height, width] => {
            let card = ModelCard::new(
                config.architecture,
                loaded.classes.clone(),
                Input::Image {
                    channels,
                    height,
                    width,
                },
                loaded.normalisation.clone(),
            );
            Some(match preparation {
                Preparation::ImageNet => card.centre_cropped(pretrained::RESIZE),
                Preparation::Fitted => card,
            })
        }
    };
    Ok(RunData {
        split: loaded.split,
        val: Some(loaded.val),
        note: Some(note),
        card,
    })
}
