//! taks's resize against Pillow's and torchvision's, on photographs: the fixtures in
//! `tests/fixtures/pil-resize/` were written once by `scripts/pil-resize-fixtures.py`
//! (torchvision's `Resize(256)` + `CenterCrop(224)` and Pillow's `resize(BILINEAR)` on
//! crops of scikit-image's CC0 photographs), so these tests need no Python.
//!
//! From PNG the pixels must be Pillow's exactly: a resize that rounds once at the end
//! instead of between its passes, or a filter that does not widen when it shrinks, is off
//! by a level in many pixels. From JPEG the decoder differs too (the `image` crate's
//! zune-jpeg against the libjpeg-turbo Pillow links): its share is bounded below, as
//! measured, so that a worse decoder is caught.

mod support;

use std::path::PathBuf;

use support::crate_dir;

use taks_formats::image_folder::decode_centre_crop;
use taks_formats::resample::resize;

fn fixture(name: &str) -> PathBuf {
    crate_dir().join("tests/fixtures/pil-resize").join(name)
}

/// A fixture image's interleaved RGB bytes and its size.
fn rgb(name: &str) -> (Vec<u8>, (usize, usize)) {
    let image = image::open(fixture(name)).unwrap().into_rgb8();
    let size = (image.width() as usize, image.height() as usize);
    (image.into_raw(), size)
}

/// Interleaved RGB -> [3, H, W], as `decode_centre_crop` returns its pixels.
fn planar(interleaved: &[u8]) -> Vec<u8> {
    (0..3)
        .flat_map(|c| interleaved.iter().skip(c).step_by(3).copied())
        .collect()
}

/// How many bytes differ, and by how much at most.
fn differences(got: &[u8], want: &[u8]) -> (usize, u8) {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).fold((0, 0), |(n, max), (&a, &b)| {
        let d = a.abs_diff(b);
        (n + usize::from(d != 0), max.max(d))
    })
}

#[test]
fn resizing_is_pillows_to_the_level() {
    for (photo, sizes) in [
        ("chelsea.png", [(97, 301), (113, 71)]),
        ("coffee.png", [(531, 64), (250, 189)]),
        // The JPEG as Pillow decoded it, so that only the resize is compared here.
        ("rocket.decoded.png", [(150, 480), (222, 100)]),
    ] {
        let (pixels, size) = rgb(photo);
        for (w, h) in sizes {
            let name = photo.split('.').next().unwrap();
            let (want, want_size) = rgb(&format!("{name}.{w}x{h}.png"));
            assert_eq!(want_size, (w, h));
            let got = resize(&pixels, 3, size, (w, h));
            assert_eq!(
                differences(&got, &want),
                (0, 0),
                "{photo} to {w}x{h}: (bytes that differ, most)"
            );
        }
    }
}

#[test]
fn the_evaluation_crop_of_a_png_is_torchvisions() {
    // 300x200 grows to 384x256, 400x300 shrinks to 341x256; both then lose their edges.
    for name in ["chelsea", "coffee"] {
        let got = decode_centre_crop(&fixture(&format!("{name}.png")), 256, 224).unwrap();
        let (want, size) = rgb(&format!("{name}.crop.png"));
        assert_eq!(size, (224, 224));
        assert_eq!(differences(&got, &planar(&want)), (0, 0), "{name}");
    }
    // The JPEG's pixels as Pillow decoded them: the resize and crop alone are exact.
    let got = decode_centre_crop(&fixture("rocket.decoded.png"), 256, 224).unwrap();
    let (want, _) = rgb("rocket.crop.png");
    assert_eq!(differences(&got, &planar(&want)), (0, 0), "rocket");
}

/// Mean and largest difference, in levels.
fn distance(got: &[u8], want: &[u8]) -> (f64, u8) {
    let (_, max) = differences(got, want);
    let sum: f64 = got
        .iter()
        .zip(want)
        .map(|(&a, &b)| a.abs_diff(b) as f64)
        .sum();
    (sum / got.len() as f64, max)
}

/// The decoder's share, which resizing cannot remove: zune-jpeg's pixels against
/// libjpeg-turbo's, and the evaluation crops made from each. Bounds just above the
/// measured distances (in the comments), so that a worse decoder fails.
#[test]
fn a_jpeg_decodes_within_the_measured_distance_of_libjpeg_turbo() {
    // (file, mean, most; then the crop's mean): chroma at full resolution (measured
    // 0.0082 levels on average, at most 2; the crop 0.0069), and at half resolution,
    // which each decoder upsamples its own way (measured 0.230, at most 3; the crop
    // 0.244).
    for (name, mean, most, crop_mean) in [("rocket", 0.012, 2, 0.010), ("chelsea", 0.25, 3, 0.26)] {
        let (ours, size) = rgb(&format!("{name}.jpg"));
        let (pillows, pillow_size) = rgb(&format!("{name}.decoded.png"));
        assert_eq!(size, pillow_size);
        let (decoded, max) = distance(&ours, &pillows);
        assert!(decoded < mean && max <= most, "{name}: {decoded} {max}");
        let got = decode_centre_crop(&fixture(&format!("{name}.jpg")), 256, 224).unwrap();
        let want = decode_centre_crop(&fixture(&format!("{name}.decoded.png")), 256, 224).unwrap();
        let (cropped, _) = distance(&got, &want);
        assert!(cropped < crop_mean, "{name}: {cropped}");
    }
}
