// bn_grad_x.wgsl — the backward pass of bn_apply.wgsl, part 2: the input's gradient,
// dx = gamma * inv_std / M * (M * g - sum g - xhat * sum g xhat), one invocation per
// element of the result, which lies as NCHW, or channels last ([N, H, W, C] in memory)
// when params[15] is 1: the layout a convolution's output has, so that the
// convolution's backward reads its output's gradient without a copy. See bn_common.wgsl.
//
// Bindings (group 0, all storage read_write):
//   0 x [N, C, H, W] elem (strided)   4 sums [4 C] f32 (bn_grad_reduce.wgsl)
//   1 dy [N, C, H, W] elem (strided)  5 dx out [N, C, H, W] elem
//   2 gamma [C] f32                   6 params u32 [16]
//   3 beta [C] f32

@group(0) @binding(0) var<storage, read_write> x: array<elem>;
@group(0) @binding(1) var<storage, read_write> dy: array<elem>;
@group(0) @binding(2) var<storage, read_write> gamma: array<f32>;
@group(0) @binding(3) var<storage, read_write> beta: array<f32>;
@group(0) @binding(4) var<storage, read_write> sums: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<elem>;
@group(0) @binding(6) var<storage, read_write> params: array<u32>;

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
    let m = f32(n_of() * hw_of());
    let inv_std = 1.0 / sqrt(sums[channels + c] + eps_of());
    let xhat = (f32(x[x_at(c, j)]) - sums[c]) * inv_std;
    var g = f32(dy[dy_at(c, j)]);
    if (relu_of() && !relu_passes(gamma[c] * xhat + beta[c])) {
        g = 0.0;
    }
    dx[i] = elem(gamma[c] * inv_std / m * (m * g - sums[2u * channels + c] - xhat * sums[3u * channels + c]));
}
