// conv_taps.wgsl — where a convolution's operand elements lie, for the two matrix
// products whose operands may be a convolution's patches computed as they are loaded
// (matmul.wgsl, f32; matmul_coop_f16.wgsl, f16 on cooperative matrices): the end of both
// kernels' preludes (shaders/src/lib.rs), so the address arithmetic is written once.
// Both kernels read the same parameter words (params 3-6 the strides of kind 0, 10 and 11
// the kinds, 14-28 the convolution; see matmul.wgsl), and read the elements themselves, in
// their own type, at the indices these give.
//
// The loads of kinds 1 and 2 split an element's address into a part of its row of A
// (its column of B, for B's kind 1), worked out once before the loop over K, and a part of
// k. Unsigned arithmetic throughout: a position left of or above the image wraps to a
// huge value and fails the bounds test like one past the edge (sums wrap back exactly).

// Outside the tensor: a padding position, which reads as 0.
const NONE: u32 = 0xffffffffu;

// A's row m, kind 1: m = (n, oh, ow) gives (n's offset in x, oh sh - ph, ow sw - pw);
// kind 2: m = (n, h, w) gives (n's offset in dy, h + ph, w + pw).
fn a_row(m: u32) -> vec3<u32> {
    if (params[10] == 1u) {
        let out_w = params[28];
        let plane = params[27] * out_w;
        let r = m % plane;
        return vec3<u32>(
            (m / plane) * params[17],
            (r / out_w) * params[23] - params[25],
            (r % out_w) * params[24] - params[26],
        );
    }
    let width = params[16];
    let plane = params[15] * width;
    let r = m % plane;
    return vec3<u32>((m / plane) * params[17], r / width + params[25], r % width + params[26]);
}

// B's column q = (c, i, j) of the patches, kind 1: (c's offset in x, i, j).
fn b_column(q: u32) -> vec3<u32> {
    let kw = params[22];
    let taps = params[21] * kw;
    let t = q % taps;
    return vec3<u32>((q / taps) * params[18], t / kw, t % kw);
}

// x's element at input row `ih`, column `iw` of an image and channel at `base`; NONE in
// the padding.
fn x_at(base: u32, ih: u32, iw: u32) -> u32 {
    if (ih < params[15] && iw < params[16]) {
        return base + ih * params[19] + iw * params[20];
    }
    return NONE;
}

// The index of A's element (m, k), its row's part `row` from a_row for kinds 1 and 2;
// NONE in a convolution's padding. The caller keeps (m, k) inside A.
fn a_index(row: vec3<u32>, m: u32, k: u32) -> u32 {
    var at = m * params[3] + k * params[4];
    if (params[10] != 0u) {
        // k = (c, i, j) for kind 1, (o, i, j) for kind 2.
        let kw = params[22];
        let taps = params[21] * kw;
        let t = k % taps;
        let channel = (k / taps) * params[18];
        if (params[10] == 1u) {
            at = x_at(row.x + channel, row.y + t / kw, row.z + t % kw);
        } else {
            // The output position (oh, ow) whose tap (i, j) read input (h, w), if any.
            let th = row.y - t / kw;
            let tw = row.z - t % kw;
            let oh = th / params[23];
            let ow = tw / params[24];
            at = NONE;
            if (th % params[23] == 0u && tw % params[24] == 0u && oh < params[27] && ow < params[28]) {
                at = row.x + channel + oh * params[19] + ow * params[20];
            }
        }
    }
    return at;
}

// The index of B's element (k, n), its column's part `column` from b_column for kind 1;
// NONE in a convolution's padding. The caller keeps (k, n) inside B.
fn b_index(column: vec3<u32>, k: u32, n: u32) -> u32 {
    var at = k * params[5] + n * params[6];
    if (params[11] == 1u) {
        // k = (n, oh, ow), an output position.
        let out_w = params[28];
        let plane = params[27] * out_w;
        let r = k % plane;
        at = x_at(
            (k / plane) * params[17] + column.x,
            (r / out_w) * params[23] - params[25] + column.y,
            (r % out_w) * params[24] - params[26] + column.z,
        );
    } else if (params[11] == 2u) {
        // w [O, C, kh, kw] as [O kh kw, C]: k = (o, t), column c.
        let taps = params[21] * params[22];
        at = (k / taps) * params[14] * taps + n * taps + k % taps;
    }
    return at;
}
