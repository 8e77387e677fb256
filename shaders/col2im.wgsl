// col2im.wgsl — the input's gradient of a 2-D convolution from the gradient of its
// patches, the inverse scatter of im2col.wgsl written as a gather (no atomics), for a
// training step's backward pass (core/src/ops/conv/im2col.rs).
//
// With dcols [P, K] the gradient of im2col's patches (P = (n, oh, ow) rows of the images
// of this part, K = (c, i, j) columns, as in im2col.wgsl), every input element sums the
// patch entries it was copied into:
//
//   dx[n0 + n, c, h, w] = sum over (i, j) with h + ph - i = oh * sh and w + pw - j = ow * sw
//                         (0 <= oh < Ho, 0 <= ow < Wo) of dcols[(n, oh, ow), (c, i, j)]
//
// One invocation per element of this part's images of dx, which lies channels last
// ([N, H, W, C] in memory, the layout the matmul gives the patches' gradient), so
// consecutive invocations read neighbouring columns of one row. Parts of a batch write
// disjoint images of one dx buffer: n0 is the part's first image.
//
// `elem` is f32 or f16, as in im2col.wgsl; the sum is taken in f32 either way (a 3x3
// kernel at stride 1 adds up to nine entries) and rounded once when it is written.
//
// Bindings (group 0, all storage read_write):
//   0 dcols [Np * Ho * Wo, C * kh * kw] elem, Np the part's images
//   1 dx out [N, H, W, C] elem, written for images n0 .. n0 + Np
//   2 params u32 [12]: Np, C, H, W, kh, kw, sh, sw, ph, pw, Ho, Wo, then n0 at [12]

@group(0) @binding(0) var<storage, read_write> dcols: array<elem>;
@group(0) @binding(1) var<storage, read_write> dx: array<elem>;
@group(0) @binding(2) var<storage, read_write> params: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let images = params[0];
    let channels = params[1];
    let height = params[2];
    let width = params[3];
    let kh = params[4];
    let kw = params[5];
    let sh = params[6];
    let sw = params[7];
    let ph = params[8];
    let pw = params[9];
    let out_h = params[10];
    let out_w = params[11];
    let first = params[12];
    let e = (wg.y * nwg.x + wg.x) * WG + lid.x;
    if (e >= images * height * width * channels) {
        return;
    }
    let c = e % channels;
    let q = e / channels;
    let w = q % width;
    let h = (q / width) % height;
    let n = q / (width * height);
    let k_total = channels * kh * kw;
    var sum: f32 = 0.0;
    for (var i = 0u; i < kh; i = i + 1u) {
        // Unsigned: a tap above the image wraps to a huge value and fails the test
        // like one below it.
        let top = h + ph - i;
        if (h + ph < i || top % sh != 0u || top / sh >= out_h) {
            continue;
        }
        let oh = top / sh;
        for (var j = 0u; j < kw; j = j + 1u) {
            let left = w + pw - j;
            if (w + pw < j || left % sw != 0u || left / sw >= out_w) {
                continue;
            }
            let ow = left / sw;
            let row = (n * out_h + oh) * out_w + ow;
            sum = sum + f32(dcols[row * k_total + (c * kh + i) * kw + j]);
        }
    }
    dx[first * height * width * channels + e] = elem(sum);
}
