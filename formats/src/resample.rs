//! Resizing 8-bit images as Pillow does with its bilinear filter: what torchvision's
//! `Resize` runs on a PIL image, so the pixels a pretrained network sees here are the
//! pixels it saw when its authors evaluated it.
//!
//! A general-purpose resize (the `image` crate's triangle filter, say) computes the same
//! filter in floating point and rounds once at the end; Pillow rounds the weights to 22-bit
//! fixed point and the image to 8 bits between its two passes. The two differ by a level
//! here and there, and a ResNet's features by about 1e-3 of their scale: enough to move
//! a borderline prediction, and far more than the 1e-5 at which taks otherwise agrees with
//! torchvision. So this module does Pillow's arithmetic step for step:
//!
//! - The filter is the triangle `max(0, 1 - |x|)` with support 1, widened by the scale
//!   factor when the image shrinks (antialiasing: every source pixel under an output pixel
//!   counts), never narrowed when it grows.
//! - Output pixel `i` is centred at `(i + 0.5) * scale` in the source; its taps run from
//!   `trunc(centre - support + 0.5)` to `trunc(centre + support + 0.5)` (clamped to the
//!   image), each weighted by the filter at `(tap - centre + 0.5) / filter_scale`, the
//!   weights normalised to sum to one, in `f64`.
//! - The weights become integers, `round(w * 2^22)` (half away from zero); a pixel is
//!   `2^21 + sum(value * weight)`, shifted right by 22 and clamped to 0..=255.
//! - One side, into an 8-bit image, then the other; a side that keeps its length is not
//!   resampled at all. Rows go first unless the height shrinks by more than twice what
//!   the width does (`h - h' > 2 (w - w')`), which Pillow 13 resizes columns first:
//!   found by comparing its output with each order on 400 random sizes, all of which
//!   this rule matches, since the order changes a level here and there.
//!
//! `formats/tests/pil_resize.rs` holds this to Pillow's own output on photographs
//! (fixtures written by `scripts/pil-resize-fixtures.py`, committed, so the tests need no
//! Python).

/// Fractional bits of the fixed-point weights: 32 bits less 8 for the value and 2 to
/// spare for sums past 1.
const PRECISION_BITS: u32 = 32 - 8 - 2;

/// The taps of every output pixel along one side.
struct Taps {
    /// Per output pixel, its first source pixel and how many follow.
    spans: Vec<(usize, usize)>,
    /// Per output pixel, `width` fixed-point weights (the unused ones zero).
    weights: Vec<i64>,
    width: usize,
}

impl Taps {
    /// The taps that take a side of `from` pixels to `to` pixels (`from`, `to` > 0).
    fn new(from: usize, to: usize) -> Self {
        let scale = from as f64 / to as f64;
        let filter_scale = scale.max(1.0);
        let support = filter_scale;
        // Multiplied by, as Pillow does, not divided by (the two round differently).
        let inverse_scale = 1.0 / filter_scale;
        let width = support.ceil() as usize * 2 + 1;
        let mut spans = Vec::with_capacity(to);
        let mut weights = vec![0i64; to * width];
        let mut real = vec![0f64; width];
        for (i, out) in weights.chunks_exact_mut(width).enumerate() {
            let centre = (i as f64 + 0.5) * scale;
            // `as` truncates towards zero, as C's (int) does.
            let first = ((centre - support + 0.5) as i64).max(0) as usize;
            let end = ((centre + support + 0.5) as i64).min(from as i64) as usize;
            let count = end.saturating_sub(first);
            let mut sum = 0.0;
            for (k, w) in real[..count].iter_mut().enumerate() {
                *w = triangle(((first + k) as f64 - centre + 0.5) * inverse_scale);
                sum += *w;
            }
            for (w, fixed) in real[..count].iter().zip(out.iter_mut()) {
                let w = if sum != 0.0 { w / sum } else { *w };
                *fixed = fixed_point(w);
            }
            spans.push((first, count));
        }
        Taps {
            spans,
            weights,
            width,
        }
    }

    /// Output pixel `i`'s value from the source values `at(tap)`.
    fn apply(&self, i: usize, at: impl Fn(usize) -> u8) -> u8 {
        let (first, count) = self.spans[i];
        let weights = &self.weights[i * self.width..i * self.width + count];
        let mut sum = 1i64 << (PRECISION_BITS - 1);
        for (k, &w) in weights.iter().enumerate() {
            sum += at(first + k) as i64 * w;
        }
        (sum >> PRECISION_BITS).clamp(0, 255) as u8
    }
}

fn triangle(x: f64) -> f64 {
    (1.0 - x.abs()).max(0.0)
}

/// A weight in fixed point, rounded half away from zero.
fn fixed_point(w: f64) -> i64 {
    let scaled = w * (1u64 << PRECISION_BITS) as f64;
    if w < 0.0 {
        (scaled - 0.5) as i64
    } else {
        (scaled + 0.5) as i64
    }
}

/// Resize an interleaved 8-bit image of `channels` values a pixel (`pixels` holds
/// `width * height * channels` bytes, row by row) to `to_width` x `to_height`.
pub fn resize(
    pixels: &[u8],
    channels: usize,
    (width, height): (usize, usize),
    (to_width, to_height): (usize, usize),
) -> Vec<u8> {
    assert_eq!(
        pixels.len(),
        width * height * channels,
        "pixels and size disagree"
    );
    assert!(
        width > 0 && height > 0 && to_width > 0 && to_height > 0,
        "an image has pixels"
    );
    // How many pixels each side loses (negative where it grows).
    let lost_w = width as i64 - to_width as i64;
    let lost_h = height as i64 - to_height as i64;
    let columns_first = lost_h > 0 && lost_h > 2 * lost_w;
    if columns_first {
        let columns = vertical(pixels, channels, (width, height), to_height);
        horizontal(&columns, channels, (width, to_height), to_width)
    } else {
        let rows = horizontal(pixels, channels, (width, height), to_width);
        vertical(&rows, channels, (to_width, height), to_height)
    }
}

/// Each row of a `width` x `height` image resized to `to_width` (a copy where it keeps
/// its width).
fn horizontal(
    pixels: &[u8],
    channels: usize,
    (width, height): (usize, usize),
    to_width: usize,
) -> Vec<u8> {
    if to_width == width {
        return pixels.to_vec();
    }
    let taps = Taps::new(width, to_width);
    let mut out = vec![0u8; to_width * height * channels];
    for (y, row) in out.chunks_exact_mut(to_width * channels).enumerate() {
        let source = &pixels[y * width * channels..(y + 1) * width * channels];
        for (x, px) in row.chunks_exact_mut(channels).enumerate() {
            for (c, value) in px.iter_mut().enumerate() {
                *value = taps.apply(x, |tap| source[tap * channels + c]);
            }
        }
    }
    out
}

/// Each column of a `width` x `height` image resized to `to_height` (a copy where it
/// keeps its height).
fn vertical(
    pixels: &[u8],
    channels: usize,
    (width, height): (usize, usize),
    to_height: usize,
) -> Vec<u8> {
    if to_height == height {
        return pixels.to_vec();
    }
    let taps = Taps::new(height, to_height);
    let stride = width * channels;
    let mut out = vec![0u8; stride * to_height];
    for (y, row) in out.chunks_exact_mut(stride).enumerate() {
        for (i, value) in row.iter_mut().enumerate() {
            *value = taps.apply(y, |tap| pixels[tap * stride + i]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_that_keeps_its_length_is_not_resampled() {
        let pixels: Vec<u8> = (0..5 * 3 * 2).map(|v| (v * 37 % 251) as u8).collect();
        assert_eq!(resize(&pixels, 2, (5, 3), (5, 3)), pixels);
    }

    #[test]
    fn shrinking_averages_every_pixel_under_an_output_pixel() {
        // Halving: the filter widens to a support of 2 source pixels, centred at 1 and 3;
        // each output pixel weighs the two source pixels under it at 0.75 and the next
        // one out at 0.25 (the image's edge cuts off the other), over their sum 1.75.
        let row = [0u8, 40, 80, 120];
        let out = resize(&row, 1, (4, 1), (2, 1));
        let left: f64 = (0.0 * 0.75 + 40.0 * 0.75 + 80.0 * 0.25) / 1.75;
        let right: f64 = (40.0 * 0.25 + 80.0 * 0.75 + 120.0 * 0.75) / 1.75;
        assert_eq!(out, vec![left.round() as u8, right.round() as u8]);
    }

    #[test]
    fn growing_interpolates_between_neighbours() {
        // Doubling 0, 100: centres at 0.25 and 0.75 source pixels, the taps at 0 and 1
        // weighted by their distance, the edges clamped.
        let out = resize(&[0, 100], 1, (2, 1), (4, 1));
        assert_eq!(out, vec![0, 25, 75, 100]);
    }

    #[test]
    fn rounds_half_up_as_pillow_does() {
        // One source pixel per output pixel at weight 1: the value itself, whatever it is,
        // through the fixed point (2^21 + v * 2^22) >> 22 == v.
        let row: Vec<u8> = (0..=255).collect();
        let out = resize(&row, 1, (256, 1), (256, 2));
        assert_eq!(&out[..256], &row[..]);
        assert_eq!(&out[256..], &row[..]);
    }
}
