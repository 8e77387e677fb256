// bn_common.wgsl — prelude of the batch-norm passes (core/src/ops/batch_norm/kernels.rs;
// the CPU twin is burn's own batch norm, whose numbers these reproduce).
//
// A training step's batch norm over x [N, C, H, W], read through its strides (the
// convolution before it may leave its output channels last), per channel c over the
// M = N*H*W values of that channel:
//   mean_c = sum x / M, var_c = sum (x - mean_c)^2 / M (biased, as burn keeps it),
//   xhat = (x - mean_c) / sqrt(var_c + eps), y = gamma_c * xhat + beta_c, then ReLU
//   when asked (the block's activation, fused).
//
// params (u32): 0 N, 1 C, 2 H, 3 W, 4..8 x's strides (n, c, h, w), 8 eps (f32 bits),
//   9 relu (0 or 1), 10 momentum (f32 bits), 11..15 dy's strides (n, c, h, w), 15 the
//   output's layout (bn_apply.wgsl, bn_grad_x.wgsl: 1 channels last, else NCHW), 16 (bn_moments.wgsl
//   only) whether a shift is bound.
// stats (f32, 4 C): mean, var, then (backward) sum g, sum g * xhat, where g is dy
//   times ReLU's mask.
//
// x, dy and the passes' outputs y and dx are `elem`, f32 or f16 (a mixed-precision
// step's activations: BN_COMMON and BN_COMMON_F16 in src/lib.rs put the alias before
// this file); every sum, the statistics and gamma and beta are f32 either way.

const WG: u32 = 256u;

fn n_of() -> u32 { return params[0]; }
fn c_of() -> u32 { return params[1]; }
fn hw_of() -> u32 { return params[2] * params[3]; }
fn eps_of() -> f32 { return bitcast<f32>(params[8]); }
fn relu_of() -> bool { return params[9] != 0u; }

// Element `j` (0 <= j < M) of channel `c`, j = n * H * W + h * W + w, at the strides
// in params[s..s + 4] (x's at 4, dy's at 11). Integer division is the dear part of this
// on a GPU (a few dozen instructions) and more so on lavapipe (scalar on the CPU), dearer
// than the load it addresses, so the two layouts the convolutions leave take fewer: where
// (h, w) flatten into one stride (NCHW and channels last), h * W + w is j's remainder by
// H * W; where (n, h, w) do too (channels last), j itself, and no division is left. The
// test is exact algebra on the strides, true or false for any sizes.
fn strided(c: u32, j: u32, s: u32) -> u32 {
    let hw = hw_of();
    let sn = params[s];
    let sc = params[s + 1u];
    let sh = params[s + 2u];
    let sw = params[s + 3u];
    let hw_flat = sh == params[3] * sw;
    if (hw_flat && sn == hw * sw) {
        return c * sc + j * sw;
    }
    let n = j / hw;
    let r = j - n * hw;
    if (hw_flat) {
        return n * sn + c * sc + r * sw;
    }
    let h = r / params[3];
    let w = r - h * params[3];
    return n * sn + c * sc + h * sh + w * sw;
}
fn x_at(c: u32, j: u32) -> u32 { return strided(c, j, 4u); }
fn dy_at(c: u32, j: u32) -> u32 { return strided(c, j, 11u); }

// The channel and position in it (j, as above) of output element i: channels last
// (params[15] 1) i = j * C + c, else NCHW i = (n * C + c) * H * W + h * W + w.
fn place_of(i: u32) -> vec2<u32> {
    let channels = c_of();
    if (params[15] == 1u) {
        let j = i / channels;
        return vec2<u32>(i - j * channels, j);
    }
    let hw = hw_of();
    let q = i / hw;
    let n = q / channels;
    return vec2<u32>(q - n * channels, n * hw + (i - q * hw));
}

var<workgroup> partial: array<f32, 256>;

// The sum over the workgroup of each invocation's `v`, in invocation 0's hands (all
// invocations must call it).
fn workgroup_sum(lid: u32, v: f32) -> f32 {
    partial[lid] = v;
    workgroupBarrier();
    var span = WG / 2u;
    loop {
        if (span == 0u) { break; }
        if (lid < span) { partial[lid] = partial[lid] + partial[lid + span]; }
        workgroupBarrier();
        span = span / 2u;
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}
