// cross_entropy_common.wgsl — prelude of cross_entropy.wgsl and cross_entropy_grad.wgsl
// (core/src/ops/cross_entropy.rs): a row's maximum, the sum of its shifted
// exponentials and its label's position, computed one way for the loss and its
// gradient. Both shaders bind the logits z [B * C] (row-major), the labels y [B] (< C)
// and params [B, C]; one invocation per row (2-D grid as in noise_risk.wgsl).

const WG: u32 = 256u;

// The largest of the `classes` logits from `row`. The row's first logit starts it (a
// constant -inf is a shader-creation error in WebGPU's compilers).
fn row_max(row: u32, classes: u32) -> f32 {
    var top = z[row];
    for (var j = 1u; j < classes; j++) {
        top = max(top, z[row + j]);
    }
    return top;
}

// sum_j exp(z[row + j] - top).
fn row_sum(row: u32, classes: u32, top: f32) -> f32 {
    var sum = 0.0;
    for (var j = 0u; j < classes; j++) {
        sum += exp(z[row + j] - top);
    }
    return sum;
}

// Where row r's label's logit is, for the row starting at `row`.
fn label_at(r: u32, row: u32, classes: u32) -> u32 {
    return row + min(y[r], classes - 1u);
}
