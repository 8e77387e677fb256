// cross_entropy.wgsl — each sample's cross-entropy from its logits, the loss every method
// trains on (core/src/ops/cross_entropy.rs; the CPU twin is burn's log-softmax
// and gather in small_loss.rs): loss_r of row r of the logits z [B, C] and its label
// y_r, the formula of cross_entropy_common.wgsl.
//
// One invocation per row (workgroup size 256, 2-D grid as in noise_risk.wgsl): a row is a
// few dozen classes, and two passes over it are cheaper than the launches of a
// reduction.
//
// Bindings (group 0, all storage read_write):
//   0 z [B * C] f32 logits, row-major    2 loss out [B] f32
//   1 y [B] u32 labels (< C)             3 params u32 [2]: B, C

@group(0) @binding(0) var<storage, read_write> z: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<storage, read_write> loss: array<f32>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

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
    loss[r] = row_loss(row, label_of(r, classes), top, row_sum(row, classes, top));
}
