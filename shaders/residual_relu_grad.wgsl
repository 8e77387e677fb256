// residual_relu_grad.wgsl — the backward pass of residual_relu.wgsl: the gradient of
// relu(h + s) in h, which is also the one in s, from the output y and its gradient dy:
// dy where y is positive or NaN, 0 where y is 0 (burn's relu passes the gradient where
// its input is not <= 0). core/src/ops/residual.rs.
//
// y and dy are [N, C, H, W] read through their own strides; the result lies as y does
// (channels last when params[12] is 1, else NCHW), so the layers on both sides read it
// without a copy. One invocation per element (2-D grid as in noise_risk.wgsl).
//
// See residual_common.wgsl for the indexing.
//
// Bindings (group 0, all storage read_write):
//   0 y [N, C, H, W] elem (strided)   2 dx out [N, C, H, W] elem
//   1 dy [N, C, H, W] elem (strided)  3 params u32 [13]: N, C, H, W, y's strides,
//                                       dy's strides, channels last (0 or 1)

@group(0) @binding(0) var<storage, read_write> y: array<elem>;
@group(0) @binding(1) var<storage, read_write> dy: array<elem>;
@group(0) @binding(2) var<storage, read_write> dx: array<elem>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = (wg.y * nwg.x + wg.x) * WG + lid.x;
    if (i >= params[0] * params[1] * params[2] * params[3]) {
        return;
    }
    let v = f32(y[at(i, 4u)]);
    dx[i] = select(elem(0.0), dy[at(i, 8u)], relu_passes(v));
}
