//! The k-set selection on a wgpu device, the GPU twin of [`super::cpu_reference`]'s: the
//! host side of the `shaders/select_*.wgsl` passes, exact k smallest of n objective values
//! (ties by smaller index, NaN largest) as a k-hot f32 mask and an ascending index list,
//! with O(n) work and no read-back. The algorithm is described in `select_common.wgsl`.

use burn::tensor::{DType, Int, Tensor};

use crate::gpu::bridge;
use crate::gpu::kernels::{
    HISTOGRAM_SPAN, SELECT_COUNT, SELECT_DIGIT, SELECT_HISTOGRAM, SELECT_SCAN, SELECT_SCATTER,
    WORKGROUP,
};

/// Outputs of [`select_k_smallest`].
#[derive(Clone, Debug)]
pub struct Selection {
    /// f32 `[n]`: 1.0 for the k selected samples, 0.0 elsewhere.
    pub mask: Tensor<1>,
    /// I32 `[k]`: the selected sample indices in ascending order.
    pub indices: Tensor<1, Int>,
}

/// The `k` smallest entries of `objective` `[n]` (ties by smaller index, NaN largest; the
/// order is that of f32 with -0.0 < +0.0). `None` if `objective` is not on a wgpu device.
/// The GPU twin of [`super::cpu_reference::k_smallest`], which the tests hold it to;
/// the GPU engine calls it on its device vectors, and code holding a tensor anywhere goes
/// through [`super::k_smallest_indices`].
///
/// # Panics
/// If `k > n`.
pub fn select_k_smallest(objective: &Tensor<1>, k: usize) -> Option<Selection> {
    run(objective, k)
}

fn run(objective: &Tensor<1>, k: usize) -> Option<Selection> {
    let [n] = objective.dims();
    assert!(k <= n, "cannot select k = {k} of n = {n} values");
    assert!(n < u32::MAX as usize);

    let obj = bridge::float_f32(objective)?;
    if k == 0 {
        // Nothing to select: a zero mask (filled on the device) and an empty index list.
        let device = objective.device();
        let mask = Tensor::<1>::zeros([n], (&device, DType::F32));
        let indices = Tensor::<1, Int>::empty([0], (&device, DType::I32));
        return Some(Selection { mask, indices });
    }
    let mask = bridge::empty_1d(&obj, n, DType::F32);
    let indices = bridge::empty_1d(&obj, k, DType::I32);
    let client = &obj.client;

    let n32 = n as u32;
    let nb = n32.div_ceil(WORKGROUP);
    // state: prefix, mask, k_rem, shift, n, k, num_blocks, unused.
    let state = bridge::upload_u32(client, &[0, 0, k as u32, 24, n32, k as u32, nb, 0]);
    let hist = bridge::upload_u32(client, &[0u32; 256]);
    let blocks = client.empty(2 * nb as usize * 4);

    let hist_groups = n32.div_ceil(HISTOGRAM_SPAN);
    for _pass in 0..4 {
        bridge::launch(
            client,
            SELECT_HISTOGRAM,
            bridge::grid(hist_groups),
            &[&obj.handle, &state, &hist],
        );
        bridge::launch(client, SELECT_DIGIT, bridge::grid(1), &[&state, &hist]);
    }
    bridge::launch(
        client,
        SELECT_COUNT,
        bridge::grid(nb),
        &[&obj.handle, &state, &blocks],
    );
    bridge::launch(client, SELECT_SCAN, bridge::grid(1), &[&state, &blocks]);
    bridge::launch(
        client,
        SELECT_SCATTER,
        bridge::grid(nb),
        &[&obj.handle, &state, &blocks, &mask.handle, &indices.handle],
    );

    Some(Selection {
        mask: bridge::to_float(mask),
        indices: bridge::to_int(indices),
    })
}
