// im2col.wgsl — the patches of a 2-D convolution as the rows of a matrix, so that the
// convolution is one matrix product (core/src/ops/conv/im2col.rs; a forward kernel of the
// convolutions of training and of the scoring pass, core/src/ops/conv/choice.rs).
//
// For input x [N, C, H, W] (any strides), a kh x kw kernel, stride (sh, sw) and zero
// padding (ph, pw), output position p = (n, oh, ow) of [N, Ho, Wo] and column
// k = (c, i, j) of [C, kh, kw] (PyTorch's weight order):
//
//   cols[p, k] = x[n, c, oh * sh + i - ph, ow * sw + j - pw], 0 outside the image
//
// so that cols [P, K] times the weight as [K, O] is the convolution's output as
// [N, Ho, Wo, O]. One invocation per element of cols (workgroup size 256, 2-D grid as
// in noise_risk.wgsl); consecutive invocations write consecutive columns of one row.
//
// `elem` is f32 or f16 (IM2COL and IM2COL_F16 in src/lib.rs put the alias, and for f16
// the `enable f16;` directive, before this file): a mixed-precision step builds its f16
// patches for burn's f16 matmul the same way.
//
// Bindings (group 0, all storage read_write):
//   0 x    elem, element (n, c, h, w) at n sn + c sc + h sh_ + w sw_ (in elements)
//   1 cols out [P * K] elem
//   2 params u32 [16]: N, C, H, W, sn, sc, sh_, sw_, kh, kw, sh, sw, ph, pw, Ho, Wo

@group(0) @binding(0) var<storage, read_write> x: array<elem>;
@group(0) @binding(1) var<storage, read_write> cols: array<elem>;
@group(0) @binding(2) var<storage, read_write> params: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let batch = params[0];
    let channels = params[1];
    let height = params[2];
    let width = params[3];
    let kh = params[8];
    let kw = params[9];
    let out_h = params[14];
    let out_w = params[15];
    let taps = kh * kw;
    let k_total = channels * taps;
    let total = batch * out_h * out_w * k_total;
    let e = (wg.y * nwg.x + wg.x) * WG + lid.x;
    if (e >= total) {
        return;
    }
    let p = e / k_total;
    let k = e % k_total;
    let c = k / taps;
    let tap = k % taps;
    let i = tap / kw;
    let j = tap % kw;
    let n = p / (out_h * out_w);
    let q = p % (out_h * out_w);
    let oh = q / out_w;
    let ow = q % out_w;
    // Unsigned: a position left of or above the image wraps to a huge value and fails
    // the bounds test like one past the edge.
    let ih = oh * params[10] + i - params[12];
    let iw = ow * params[11] + j - params[13];
    var v = elem(0.0);
    if (ih < height && iw < width) {
        v = x[n * params[4] + c * params[5] + ih * params[6] + iw * params[7]];
    }
    cols[e] = v;
}
