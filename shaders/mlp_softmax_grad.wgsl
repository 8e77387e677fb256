// mlp_softmax_grad.wgsl — the MLP's output layer and loss in one workgroup
// (core/src/ops/mlp_step/gpu.rs; the CPU twin is the loop in core/src/ops/mlp_step/cpu.rs): for the
// logits z = s + b of a batch of B rows and C classes, labels y and the loss scale
// sigma (1 in an f32 step),
//
//   loss  = sum_r ( log sum_j exp(z_rj - max_r) - (z_ry - max_r) )    (summed cross-entropy,
//                                                                      cross_entropy_common.wgsl)
//   dz_rj = sigma ( exp(z_rj - max_r) / (sum_r * B) - [j = y_r] / B ) (its gradient in z)
//   db_j  = sum_r dz_rj                                                 (the bias gradient)
//
// written as the CPU loop writes them, so that a step's gradients match it and burn's
// autodiff to rounding. The loss stays finite however far z_ry lies below the maximum;
// a NaN logit gives a NaN loss. One workgroup of 256 invocations: invocation t takes
// rows t, t + 256, ...; the loss is summed in workgroup memory, then invocation t sums
// columns t, t + 256, ... of dz. A step's batch is small (128 rows), so one workgroup
// is a handful of microseconds and saves the launches of a reduction.
//
// `elem` is f32 or f16 (MLP_SOFTMAX_GRAD and MLP_SOFTMAX_GRAD_F16 in src/lib.rs). In a
// mixed-precision step s is f16 and dz is written in f16 scaled by the dynamic loss
// scale (what autodiff gives for the scaled loss, so that small gradients survive f16);
// everything between (z, the maximum, the exponentials, the loss) is f32, dz is rounded
// once, and db sums the rounded dz in f32. The loss is not scaled.
//
// Bindings (group 0, all storage read_write):
//   0 s [B * C] elem (the batch's h w2)   4 db out [C] f32
//   1 b [C] f32                            5 loss out [1] f32 (the batch's sum)
//   2 y [B] u32 labels (< C)               6 scaler f32, sigma at params[2]
//   3 dz out [B * C] elem                  7 params u32 [3]: B, C, sigma's index

@group(0) @binding(0) var<storage, read_write> s: array<elem>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<storage, read_write> dz: array<elem>;
@group(0) @binding(4) var<storage, read_write> db: array<f32>;
@group(0) @binding(5) var<storage, read_write> loss: array<f32>;
@group(0) @binding(6) var<storage, read_write> scaler: array<f32>;
@group(0) @binding(7) var<storage, read_write> params: array<u32>;

var<workgroup> partial: array<f32, 256>;

fn logit(row: u32, j: u32) -> f32 {
    return f32(s[row + j]) + b[j];
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let rows = params[0];
    let classes = params[1];
    let sigma = scaler[params[2]];
    let batch = f32(rows);
    var total = 0.0;
    for (var r = lid.x; r < rows; r += WG) {
        let row = r * classes;
        let top = row_max(row, classes);
        let label = label_of(r, classes);
        let sum = row_sum(row, classes, top);
        total += row_loss(row, label, top, sum);
        for (var j = 0u; j < classes; j++) {
            var g = exp(logit(row, j) - top) / (sum * batch);
            if (j == label) {
                g -= 1.0 / batch;
            }
            dz[row + j] = elem(g * sigma);
        }
    }
    partial[lid.x] = total;
    storageBarrier();
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half = half / 2u) {
        if (lid.x < half) {
            partial[lid.x] += partial[lid.x + half];
        }
        workgroupBarrier();
    }
    if (lid.x == 0u) {
        loss[0] = partial[0];
    }
    for (var j = lid.x; j < classes; j += WG) {
        var column = 0.0;
        for (var r = 0u; r < rows; r++) {
            column += f32(dz[r * classes + j]);
        }
        db[j] = column;
    }
}
