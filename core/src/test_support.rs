//! What the unit tests of several modules read back and compare, in one place.

use burn::tensor::Tensor;

/// A tensor's values on the host, as f32.
pub(crate) fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("f32 values")
}

/// The largest magnitude in `v` (0 for none).
pub(crate) fn largest(v: &[f32]) -> f32 {
    v.iter().fold(0f32, |m, x| m.max(x.abs()))
}

/// The largest difference between `a` and `b`, element by element.
pub(crate) fn gap(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

/// The kernels of `kernels` (as `gpu::launches::count_by_kernel` lists them) whose name
/// starts with `prefix`, with their counts, sorted by name.
pub(crate) fn kernels_named<'a>(
    kernels: impl IntoIterator<Item = &'a (String, usize)>,
    prefix: &str,
) -> Vec<(&'a str, usize)> {
    let mut named: Vec<_> = kernels
        .into_iter()
        .filter(|(name, _)| name.starts_with(prefix))
        .map(|(name, n)| (name.as_str(), *n))
        .collect();
    named.sort_unstable();
    named
}
