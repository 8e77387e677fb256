// residual_common.wgsl — prelude of residual_relu.wgsl and residual_relu_grad.wgsl
// (core/src/ops/residual.rs): two [N, C, H, W] inputs read through their own strides,
// one output in a layout of its own.
//
// params (u32): 0 N, 1 C, 2 H, 3 W, 4..8 the first input's strides (n, c, h, w), 8..12
//   the second's, 12 the output's layout (1 channels last, [N, H, W, C] in memory, else
//   NCHW).
//
// Inputs and output are `elem`, f32 or f16 (a mixed-precision step's activations;
// RESIDUAL_COMMON and RESIDUAL_COMMON_F16 in src/lib.rs put the alias before this file);
// the sum is taken in f32 and rounded once.

const WG: u32 = 256u;

// The offset, in a tensor with strides params[k..k + 4], of the output's element i.
fn at(i: u32, k: u32) -> u32 {
    let c = params[1];
    let hh = params[2];
    let w = params[3];
    var n = 0u; var ch = 0u; var row = 0u; var col = 0u;
    if (params[12] == 1u) {
        ch = i % c;
        let rest = i / c;
        col = rest % w;
        row = (rest / w) % hh;
        n = rest / (w * hh);
    } else {
        col = i % w;
        row = (i / w) % hh;
        ch = (i / (w * hh)) % c;
        n = i / (w * hh * c);
    }
    return n * params[k] + ch * params[k + 1u] + row * params[k + 2u] + col * params[k + 3u];
}
