// cross_entropy_common.wgsl — prelude of every kernel that takes a softmax's
// cross-entropy: cross_entropy.wgsl and cross_entropy_grad.wgsl (each sample's loss and
// its gradient, core/src/ops/cross_entropy.rs) and mlp_softmax_grad.wgsl (the MLP step's
// summed loss, core/src/ops/mlp_step/gpu.rs). A row's maximum, the sum of its shifted
// exponentials, its label and its loss, written once:
//
//   m_r    = max_j z_rj
//   loss_r = log sum_j exp(z_rj - m_r) - (z_ry - m_r)
//
// in the order burn's log_softmax computes it (shift by the row's maximum, the log of the
// sum of exponentials, then the label's shifted logit), so the kernels and burn agree to
// rounding. The loss stays finite however far z_ry lies below the maximum; a NaN logit in
// a row gives that row a NaN loss (its exponential enters the sum), as in burn.
//
// Each shader binds the labels y [B] (< C) and defines `fn logit(row: u32, j: u32) -> f32`,
// logit j of the row whose first logit is at `row` (the logits stored, or a matmul's
// output plus its bias); module-scope declarations may come in any order.

const WG: u32 = 256u;

// The largest of the `classes` logits of `row`. The row's first logit starts it (a
// constant -inf is a shader-creation error in WebGPU's compilers).
fn row_max(row: u32, classes: u32) -> f32 {
    var top = logit(row, 0u);
    for (var j = 1u; j < classes; j++) {
        top = max(top, logit(row, j));
    }
    return top;
}

// sum_j exp(logit_j - top).
fn row_sum(row: u32, classes: u32, top: f32) -> f32 {
    var sum = 0.0;
    for (var j = 0u; j < classes; j++) {
        sum += exp(logit(row, j) - top);
    }
    return sum;
}

// Row r's label, held below `classes`.
fn label_of(r: u32, classes: u32) -> u32 {
    return min(y[r], classes - 1u);
}

// The cross-entropy of the row at `row` against `label`, from its maximum and sum.
fn row_loss(row: u32, label: u32, top: f32, sum: f32) -> f32 {
    return log(sum) - (logit(row, label) - top);
}
