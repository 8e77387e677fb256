// cross_entropy_grad.wgsl — the gradient of each sample's cross-entropy in its logits
// (cross_entropy.wgsl), the backward half (core/src/ops/cross_entropy.rs; the
// CPU twin is burn's autodiff of log-softmax and gather). For row r of the logits
// z [B, C], its label y_r and the loss's gradient g_r:
//
//   dz_rj = g_r * ( exp(z_rj - m_r) / sum_i exp(z_ri - m_r) - [j = y_r] )
//
// (the softmax minus the label's one-hot; m_r the row's maximum, which carries no
// gradient). A NaN logit makes its row's gradient NaN, as in burn.
//
// One invocation per row (workgroup size 256, 2-D grid as in noise_risk.wgsl), as in
// cross_entropy.wgsl, with the same row maximum and sum (cross_entropy_common.wgsl).
//
// Bindings (group 0, all storage read_write):
//   0 z [B * C] f32 logits, row-major    3 dz out [B * C] f32
//   1 y [B] u32 labels (< C)             4 params u32 [2]: B, C
//   2 g [B] f32 the loss's gradient

@group(0) @binding(0) var<storage, read_write> z: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<storage, read_write> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dz: array<f32>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

fn logit(row: u32, j: u32) -> f32 {
    return z[row + j];
}

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let rows = params[0];
    let classes = params[1];
    let r = (wg.y * nwg.x + wg.x) * WG + lid.x;
    if (r >= rows) {
        return;
    }
    let row = r * classes;
    let top = row_max(row, classes);
    let scale = g[r] / row_sum(row, classes, top);
    for (var j = 0u; j < classes; j++) {
        dz[row + j] = exp(logit(row, j) - top) * scale;
    }
    dz[row + label_of(r, classes)] -= g[r];
}
