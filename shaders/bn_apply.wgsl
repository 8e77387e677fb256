// bn_apply.wgsl — a training step's batch norm (and the block's ReLU when params[9] is
// 1), y = gamma * (x - mean) / sqrt(var + eps) + beta, one invocation per element of
// the output (2-D grid as in noise_risk.wgsl), which lies as NCHW, or channels last
// ([N, H, W, C] in memory) when params[15] is 1: the layout of a convolution's output,
// kept so that the pool or convolution after it reads it without a copy. See
// bn_common.wgsl.
//
// Bindings (group 0, all storage read_write):
//   0 x [N, C, H, W] elem (strided)  3 stats [2 C] f32: mean, var (bn_moments.wgsl)
//   1 gamma [C] f32                  4 y out [N, C, H, W] elem
//   2 beta [C] f32                   5 params u32 [16]

@group(0) @binding(0) var<storage, read_write> x: array<elem>;
@group(0) @binding(1) var<storage, read_write> gamma: array<f32>;
@group(0) @binding(2) var<storage, read_write> beta: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<elem>;
@group(0) @binding(5) var<storage, read_write> params: array<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = (wg.y * nwg.x + wg.x) * WG + lid.x;
    let channels = c_of();
    if (i >= n_of() * channels * hw_of()) {
        return;
    }
    let place = place_of(i);
    let c = place.x;
    let j = place.y;
    let inv_std = 1.0 / sqrt(stats[channels + c] + eps_of());
    let v = gamma[c] * (f32(x[x_at(c, j)]) - stats[c]) * inv_std + beta[c];
    if (relu_of()) {
        y[i] = elem(relu(v));
    } else {
        y[i] = elem(v);
    }
}
