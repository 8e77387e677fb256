// mlp_relu_grad.wgsl — the gradient through the MLP's ReLU and the hidden bias's
// gradient in one pass (core/src/ops/mlp_step/gpu.rs; the CPU twins are `relu_mask` and
// `column_sums` in core/src/ops/mlp_step/cpu.rs): for g = dz w2^T and the hidden activations h, both
// [rows, cols],
//
//   dh_rc = g_rc where h_rc > 0 (or NaN), else 0        db_c = sum_r dh_rc
//
// One invocation per column c (workgroup size 256, 2-D grid as in noise_risk.wgsl),
// walking its rows: neighbouring invocations read neighbouring words.
//
// `elem` is f32 or f16 (MLP_RELU_GRAD and MLP_RELU_GRAD_F16 in src/lib.rs): in a
// mixed-precision step g, h and dh are f16 and the bias's gradient is summed in f32.
//
// Bindings (group 0, all storage read_write):
//   0 g [rows * cols] elem      2 dh out [rows * cols] elem
//   1 h [rows * cols] elem      3 db out [cols] f32
//                               4 params u32 [2]: rows, cols

@group(0) @binding(0) var<storage, read_write> g: array<elem>;
@group(0) @binding(1) var<storage, read_write> h: array<elem>;
@group(0) @binding(2) var<storage, read_write> dh: array<elem>;
@group(0) @binding(3) var<storage, read_write> db: array<f32>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let rows = params[0];
    let cols = params[1];
    let c = (wg.y * nwg.x + wg.x) * WG + lid.x;
    if (c >= cols) {
        return;
    }
    var sum = 0.0;
    for (var r = 0u; r < rows; r++) {
        let i = r * cols + c;
        let d = select(0.0, f32(g[i]), relu_passes(f32(h[i])));
        dh[i] = elem(d);
        sum += d;
    }
    db[c] = sum;
}
