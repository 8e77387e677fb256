// matmul.wgsl — C [M, N] = A [M, K] x B [K, N] in f32, then + bias [N] and ReLU when asked:
// a convolution's forward pass and the two matmuls of its backward pass, its patches
// never written out (core/src/ops/matmul.rs, core/src/ops/conv/implicit.rs; the
// references are burn's matmul and convolutions, which the tests compare).
//
// Each operand is one of these kinds (params 10 for A, 11 for B):
//   0 a matrix read through its strides, so a transposed view costs no copy (cubecl's
//     matmul copies a transposed right-hand side into a packed one first);
//   1 the im2col patches of a convolution's input x [N, C, H, W] (any strides): row
//     p = (n, oh, ow), column q = (c, i, j), entry x[n, c, oh sh + i - ph, ow sw + j - pw],
//     0 in the padding. As A it is the forward pass's left-hand side [P, C kh kw]; as B
//     (K = P) the weight gradient's right-hand side;
//   2 as A, the patches of the transposed convolution that takes an output's gradient
//     dy [N, O, Ho, Wo] (any strides) back to the input: row (n, h, w), column (o, i, j),
//     entry dy[n, o, oh, ow] where h + ph - i = oh sh and w + pw - j = ow sw, else 0;
//     as B, the weights w [O, C, kh, kw] (contiguous) as [O kh kw, C], so that the
//     product of the two is the input's gradient [N H W, C], channels last.
// Kinds 1 and 2 compute each element's address as they load it: no patches matrix, no
// im2col or col2im launch, no parts to keep the patches under a buffer's size.
//
// Tiling: a workgroup of 256 invocations computes a 64 x 64 tile of C, 4 x 4 values per
// invocation held in registers, stepping through K 32 at a time: each step loads a
// 64 x 32 block of A and a 32 x 64 block of B into workgroup memory (8 values of each per
// invocation, consecutive invocations reading consecutive addresses along whichever
// direction params 12 and 13 name), then every invocation reads 4 of A and 4 of B per k
// for its 16 products. Tiles past the edges read zeros and write nothing. The tiles are
// numbered along N first, on a grid folded into two dimensions (65,535 workgroups per
// dimension at most).
//
// Bindings (group 0, all storage read_write):
//   0 a f32              2 bias [N] f32 (any buffer when params[7] = 0)
//   1 b f32              3 c out [M, N] f32
//                        4 params u32 [29]: 0 M, 1 N, 2 K, 3 A's row stride, 4 A's column
//                          stride, 5 B's row stride, 6 B's column stride, 7 bias (0 or
//                          1), 8 ReLU (0 or 1), 9 tiles along N, 10 A's kind, 11 B's kind,
//                          12 A's loads along k (1) or m (0), 13 B's along k (1) or n (0);
//                          the convolution (kinds 1 and 2): 14 C, 15 H, 16 W, 17-20 the
//                          strides of x or dy, 21 kh, 22 kw, 23 sh, 24 sw, 25 ph, 26 pw,
//                          27 Ho, 28 Wo

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 32u;
// Values of each block one invocation loads per step: TK x 64 / 256.
const LOADS: u32 = 8u;

// [TK][TM] and [TK][TN], four consecutive values to a vec4: each invocation reads its
// 4 of A and 4 of B per k as one 16-byte load each.
var<workgroup> a_tile: array<vec4<f32>, 512>;
var<workgroup> b_tile: array<vec4<f32>, 512>;
var<workgroup> depth: u32;

// The operands' elements (the addresses: conv_taps.wgsl, the end of the prelude).
fn a_at(row: vec3<u32>, m: u32, k: u32) -> f32 {
    let at = a_index(row, m, k);
    if (at == NONE) {
        return 0.0;
    }
    return a[at];
}

fn b_at(column: vec3<u32>, k: u32, n: u32) -> f32 {
    let at = b_index(column, k, n);
    if (at == NONE) {
        return 0.0;
    }
    return b[at];
}

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let rows = params[0];
    let cols = params[1];
    let tiles_n = params[9];
    let tile = wg.y * nwg.x + wg.x;
    // A surplus workgroup of the folded grid loads zeros and writes nothing; it still
    // reaches every barrier (WebGPU's uniformity rule).
    let live = tile < tiles_n * ((rows + TM - 1u) / TM);
    let m0 = (tile / tiles_n) * TM;
    let n0 = (tile % tiles_n) * TN;
    let tx = lid % 16u;
    let ty = lid / 16u;
    if (lid == 0u) {
        depth = params[2];
    }
    // K through workgroup memory: uniform for the loop around the barriers.
    let k_size = workgroupUniformLoad(&depth);
    let a_k_fast = params[12] == 1u;
    let b_k_fast = params[13] == 1u;
    // Each invocation loads the same 4 places of each block at every step of K (its
    // rows of A and columns of B stay, k moves on): consecutive invocations along
    // whichever of k and m (k and n) is contiguous in memory.
    var am: array<u32, LOADS>;
    var ak: array<u32, LOADS>;
    var bn: array<u32, LOADS>;
    var bk: array<u32, LOADS>;
    var rows_of_a: array<vec3<u32>, LOADS>;
    var columns_of_b: array<vec3<u32>, LOADS>;
    for (var i = 0u; i < LOADS; i = i + 1u) {
        let e = lid + i * 256u;
        am[i] = e / TK;
        ak[i] = e % TK;
        if (!a_k_fast) {
            am[i] = e % TM;
            ak[i] = e / TM;
        }
        bn[i] = e % TN;
        bk[i] = e / TN;
        if (b_k_fast) {
            bk[i] = e % TK;
            bn[i] = e / TK;
        }
        if (params[10] != 0u) {
            rows_of_a[i] = a_row(m0 + am[i]);
        }
        if (params[11] == 1u) {
            columns_of_b[i] = b_column(n0 + bn[i]);
        }
    }
    // Row i of this invocation's 4 x 4 block of C.
    var acc = array<vec4<f32>, 4>();
    for (var k0 = 0u; k0 < k_size; k0 = k0 + TK) {
        for (var i = 0u; i < LOADS; i = i + 1u) {
            var va = 0.0;
            if (live && m0 + am[i] < rows && k0 + ak[i] < k_size) {
                va = a_at(rows_of_a[i], m0 + am[i], k0 + ak[i]);
            }
            let at = ak[i] * TM + am[i];
            a_tile[at / 4u][at % 4u] = va;
            var vb = 0.0;
            if (live && n0 + bn[i] < cols && k0 + bk[i] < k_size) {
                vb = b_at(columns_of_b[i], k0 + bk[i], n0 + bn[i]);
            }
            let bt = bk[i] * TN + bn[i];
            b_tile[bt / 4u][bt % 4u] = vb;
        }
        workgroupBarrier();
        for (var k = 0u; k < TK; k = k + 1u) {
            let ar = a_tile[k * (TM / 4u) + ty];
            let br = b_tile[k * (TN / 4u) + tx];
            for (var i = 0u; i < 4u; i = i + 1u) {
                acc[i] = acc[i] + ar[i] * br;
            }
        }
        workgroupBarrier();
    }
    if (!live) {
        return;
    }
    for (var i = 0u; i < 4u; i = i + 1u) {
        let m = m0 + ty * 4u + i;
        for (var j = 0u; j < 4u; j = j + 1u) {
            let n = n0 + tx * 4u + j;
            if (m < rows && n < cols) {
                var v = acc[i][j];
                if (params[7] != 0u) {
                    v = v + bias[n];
                }
                if (params[8] != 0u) {
                    v = relu(v);
                }
                c[m * cols + n] = v;
            }
        }
    }
}
