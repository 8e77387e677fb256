//! What an audited model takes as input, and how raw values become network inputs.
//!
//! Saved in `model.json` beside the weights, so `taks predict` (or a PyTorch user)
//! prepares new inputs exactly as the audit prepared its data: images are decoded,
//! converted to grey or RGB, resized and scaled to [0, 1], then normalised per channel;
//! table rows are normalised per feature column.

use serde::{Deserialize, Serialize};

use crate::Result;
pub use crate::data::normalisation::Normalisation;
use crate::data::{Dataset, Samples};
use crate::formats::csv_table::Table;
use crate::nn::Architecture;

/// The raw input a model expects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Input {
    /// Images, resized to `width` x `height`, 1 (grey) or 3 (RGB) channels, laid out
    /// [C, H, W].
    Image {
        channels: usize,
        height: usize,
        width: usize,
    },
    /// Rows of these numeric columns, in this order.
    Table { features: Vec<String> },
}

impl Input {
    /// The network on this input, as the outputs say it: `mlp at 28x28 grey`, `cnn at
    /// 32x32 colour`, `mlp on 64 features`.
    pub fn describe(&self, architecture: Architecture) -> String {
        match self {
            Input::Image {
                channels,
                height,
                width,
            } => format!(
                "{} at {width}x{height} {}",
                architecture.name(),
                if *channels == 1 { "grey" } else { "colour" }
            ),
            Input::Table { features } => {
                format!("{} on {} features", architecture.name(), features.len())
            }
        }
    }

    /// [C, H, W] of one sample as the networks see it (a table row is [1, 1, features]).
    pub fn shape(&self) -> [usize; 3] {
        match self {
            Input::Image {
                channels,
                height,
                width,
            } => [*channels, *height, *width],
            Input::Table { features } => [1, 1, features.len()],
        }
    }
}

pub use crate::nn::image_input::MAX_SIDE;

/// Which network and input an image folder gets ([`crate::nn::image_input::choose`]),
/// as the [`Input`] a model card records.
pub fn choose_for_images(
    common: (u32, u32),
    colour: bool,
    model: Option<Architecture>,
    size: Option<(u32, u32)>,
) -> Result<(Architecture, Input)> {
    let (architecture, [channels, height, width]) =
        crate::nn::image_input::choose(common, colour, model, size)?;
    Ok((
        architecture,
        Input::Image {
            channels,
            height,
            width,
        },
    ))
}

/// Image bytes [C, H, W] as values in [0, 1].
pub fn scaled_pixels(pixels: &[u8]) -> Vec<f32> {
    pixels.iter().map(|&p| p as f32 / 255.0).collect()
}

/// The samples of a data set as the networks take them, with how they were normalised.
pub struct Prepared {
    pub dataset: Dataset,
    pub input: Input,
    pub normalisation: Normalisation,
}

/// Decoded image bytes ([C, H, W] per sample, in memory or a mapped cache) -> a
/// normalised dataset that keeps them as bytes ([`crate::data::samples`]).
pub fn prepare_images(
    pixels: Samples,
    labels: Vec<u32>,
    [channels, height, width]: [usize; 3],
    classes: usize,
) -> Prepared {
    let input = Input::Image {
        channels,
        height,
        width,
    };
    prepare(pixels, labels, input, channels, classes)
}

/// A parsed table -> a normalised dataset.
pub fn prepare_table(table: &Table) -> Prepared {
    let features = table.features.len();
    let input = Input::Table {
        features: table.features.clone(),
    };
    prepare(
        Samples::from_values(table.values.clone(), features),
        table.labels.clone(),
        input,
        features,
        table.classes.len(),
    )
}

/// A feature matrix [rows, cols] (row-major, e.g. a backbone's embeddings from a `.npy`
/// file), normalised per column: the features are named by their column index ("0",
/// "1", ...), so a model card says how many it takes and in what order.
pub fn prepare_features(
    values: Vec<f32>,
    cols: usize,
    labels: Vec<u32>,
    classes: usize,
) -> Prepared {
    let input = Input::Table {
        features: (0..cols).map(|c| c.to_string()).collect(),
    };
    prepare(
        Samples::from_values(values, cols),
        labels,
        input,
        cols,
        classes,
    )
}

fn prepare(
    samples: Samples,
    labels: Vec<u32>,
    input: Input,
    groups: usize,
    classes: usize,
) -> Prepared {
    let normalisation = samples.fit_normalisation(groups);
    Prepared {
        dataset: Dataset {
            samples: samples.standardised(normalisation.clone()),
            labels,
            shape: input.shape(),
            classes,
        },
        input,
        normalisation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_and_sizes_by_input() {
        let pick = |common, colour| choose_for_images(common, colour, None, None).unwrap();
        let image = |channels, height, width| Input::Image {
            channels,
            height,
            width,
        };
        assert_eq!(pick((28, 28), false), (Architecture::Mlp, image(1, 28, 28)));
        assert_eq!(pick((30, 20), true), (Architecture::Cnn, image(3, 32, 32)));
        assert_eq!(
            pick((100, 80), false),
            (Architecture::ResNet18, image(3, 80, 100))
        );
        assert_eq!(
            pick((640, 480), true),
            (Architecture::ResNet18, image(3, 224, 224))
        );
        let forced = choose_for_images(
            (28, 28),
            false,
            Some(Architecture::ResNet18),
            Some((64, 48)),
        );
        assert_eq!(forced.unwrap(), (Architecture::ResNet18, image(3, 48, 64)));
        let err = choose_for_images((28, 28), true, Some(Architecture::Cnn), Some((30, 30)));
        assert!(err.unwrap_err().to_string().contains("multiple of 8"));
    }

    #[test]
    fn fit_and_apply_per_channel_and_per_column() {
        // Two samples of 2 channels x 2 pixels.
        let values = [0.0, 2.0, 5.0, 5.0, 2.0, 4.0, 5.0, 5.0];
        let n = Normalisation::fit(&values, 4, 2);
        assert_eq!(n.mean, [2.0, 5.0]);
        assert!((n.std[0] - 2f32.sqrt()).abs() < 1e-6);
        assert_eq!(n.std[1], 1.0, "a constant channel keeps its scale");
        let mut v = values;
        n.apply(&mut v, 4);
        assert!((v[0] + 2.0 / 2f32.sqrt()).abs() < 1e-6);
        assert_eq!(v[2], 0.0);
        // Columns: every value its own group.
        let cols = Normalisation::fit(&[1.0, 10.0, 3.0, 30.0], 2, 2);
        assert_eq!(cols.mean, [2.0, 20.0]);
        assert_eq!(cols.std, [1.0, 10.0]);
    }
}
