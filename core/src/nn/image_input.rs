//! Which network and input size a folder of images gets, from its most common image
//! size and whether its colour is kept; shared by `taks audit` (with `--model` and
//! `--image-size`) and `taks train --data DIR`.

use super::Architecture;
use crate::{Error, Result};

/// The largest side an image keeps by default; larger images are resized to
/// 224x224, the size ResNet-18 was designed for.
pub const MAX_SIDE: u32 = 224;

/// The network and input [channels, height, width] for images of the most common size
/// `common`; `model` and `size` are the user's overrides.
/// - the MLP for grey images up to 32x32, at their own size (the paper's MNIST setup);
/// - the paper's CNN for colour images up to 32x32, resized to 32x32 (its CIFAR setup);
/// - ResNet-18 in RGB for anything larger, at its own size up to 224x224, else 224x224
///   (and so ResNet-34 and -50, when asked for).
pub fn choose(
    common: (u32, u32),
    colour: bool,
    model: Option<Architecture>,
    size: Option<(u32, u32)>,
) -> Result<(Architecture, [usize; 3])> {
    let small = common.0 <= 32 && common.1 <= 32;
    let architecture = model.unwrap_or(match (small, colour) {
        (true, false) => Architecture::Mlp,
        (true, true) => Architecture::Cnn,
        (false, _) => Architecture::ResNet18,
    });
    let (width, height) = size.unwrap_or(match architecture {
        Architecture::Mlp => common,
        Architecture::Cnn => (32, 32),
        _ if common.0 <= MAX_SIDE && common.1 <= MAX_SIDE => common,
        _ => (MAX_SIDE, MAX_SIDE),
    });
    if architecture == Architecture::Cnn && (width != height || width % 8 != 0) {
        return Err(Error::Config(format!(
            "the CNN takes square images with a side that is a multiple of 8, not {width}x{height} (try --image-size 32x32)"
        )));
    }
    let channels = match (architecture, colour) {
        (Architecture::Mlp, false) => 1,
        _ => 3,
    };
    Ok((architecture, [channels, height as usize, width as usize]))
}
