// residual_relu.wgsl — a residual block's ending, y = relu(h + s), in one pass: the block's
// last batch norm output h plus its shortcut s (core/src/ops/residual.rs; the CPU twin
// is burn's add and relu). NaN stays NaN, as in burn's relu.
//
// h and s are [N, C, H, W] read through their own strides; y lies channels last
// ([N, H, W, C] in memory) when params[12] is 1, the layout im2col's convolutions and the
// batch norm after them leave, else NCHW. One invocation per element of y (2-D grid as
// in noise_risk.wgsl).
//
// See residual_common.wgsl for the indexing.
//
// Bindings (group 0, all storage read_write):
//   0 h [N, C, H, W] elem (strided)  2 y out [N, C, H, W] elem
//   1 s [N, C, H, W] elem (strided)  3 params u32 [13]: N, C, H, W, h's strides (n, c,
//                                      h, w), s's strides, y channels last (0 or 1)

@group(0) @binding(0) var<storage, read_write> h: array<elem>;
@group(0) @binding(1) var<storage, read_write> s: array<elem>;
@group(0) @binding(2) var<storage, read_write> y: array<elem>;
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
    let v = f32(h[at(i, 4u)]) + f32(s[at(i, 8u)]);
    y[i] = elem(relu(v));
}
