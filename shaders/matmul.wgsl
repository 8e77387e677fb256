// matmul.wgsl — C [M, N] = A [M, K] x B [K, N] in f32, then + bias [N] and ReLU when asked:
// a convolution's patches times its weights and the two matmuls of its backward pass
// (core/src/model/gpu_matmul.rs; the reference is burn's matmul, which the tests compare).
//
// A and B are read through their strides, so a transposed view costs no copy (cubecl's
// matmul copies a transposed right-hand side into a packed one first). C is row-major.
//
// Tiling: a workgroup of 256 invocations computes a 64 x 64 tile of C, 4 x 4 values per
// invocation held in registers, stepping through K 16 at a time: each step loads a
// 64 x 16 block of A and a 16 x 64 block of B into workgroup memory (4 values of each per
// invocation, consecutive invocations reading consecutive addresses whichever way each
// operand lies), then every invocation reads 4 of A and 4 of B per k for its 16 products.
// Tiles past the edges read zeros and write nothing. The tiles are numbered along N first,
// on a grid folded into two dimensions (65,535 workgroups per dimension at most).
//
// Bindings (group 0, all storage read_write):
//   0 a f32 (strided)    2 bias [N] f32 (any buffer when params[7] = 0)
//   1 b f32 (strided)    3 c out [M, N] f32
//                        4 params u32 [10]: 0 M, 1 N, 2 K, 3 A's row stride, 4 A's column
//                          stride, 5 B's row stride, 6 B's column stride, 7 bias (0 or
//                          1), 8 ReLU (0 or 1), 9 tiles along N

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read_write> params: array<u32>;

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 16u;

var<workgroup> a_tile: array<f32, 1024>; // [TK][TM]
var<workgroup> b_tile: array<f32, 1024>; // [TK][TN]
var<workgroup> depth: u32;

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
    let a_k_fast = params[4] == 1u;
    let b_k_fast = params[5] == 1u;
    var acc = array<f32, 16>();
    for (var k0 = 0u; k0 < k_size; k0 = k0 + TK) {
        for (var i = 0u; i < 4u; i = i + 1u) {
            let e = lid + i * 256u;
            // A's block: consecutive invocations along whichever of k and m is
            // contiguous in memory (k for patches, m for a transposed gradient).
            var ak = e % TK;
            var am = e / TK;
            if (!a_k_fast) {
                am = e % TM;
                ak = e / TM;
            }
            var va = 0.0;
            if (live && m0 + am < rows && k0 + ak < k_size) {
                va = a[(m0 + am) * params[3] + (k0 + ak) * params[4]];
            }
            a_tile[ak * TM + am] = va;
            // B's block: the same, along n or k (k for the weights read transposed).
            var bn = e % TN;
            var bk = e / TN;
            if (b_k_fast) {
                bk = e % TK;
                bn = e / TK;
            }
            var vb = 0.0;
            if (live && n0 + bn < cols && k0 + bk < k_size) {
                vb = b[(k0 + bk) * params[5] + (n0 + bn) * params[6]];
            }
            b_tile[bk * TN + bn] = vb;
        }
        workgroupBarrier();
        for (var k = 0u; k < TK; k = k + 1u) {
            var ar: array<f32, 4>;
            var br: array<f32, 4>;
            for (var i = 0u; i < 4u; i = i + 1u) {
                ar[i] = a_tile[k * TM + ty * 4u + i];
                br[i] = b_tile[k * TN + tx * 4u + i];
            }
            for (var i = 0u; i < 4u; i = i + 1u) {
                for (var j = 0u; j < 4u; j = j + 1u) {
                    acc[i * 4u + j] = acc[i * 4u + j] + ar[i] * br[j];
                }
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
                var v = acc[i * 4u + j];
                if (params[7] != 0u) {
                    v = v + bias[n];
                }
                if (params[8] != 0u) {
                    // NaN stays NaN, as in burn's relu.
                    v = select(0.0, v, v > 0.0 || v != v);
                }
                c[m * cols + n] = v;
            }
        }
    }
}
