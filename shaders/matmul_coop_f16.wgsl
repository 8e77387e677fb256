// matmul_coop_f16.wgsl — C [M, N] = A [M, K] x B [K, N], A, B and C f16, the sums f32, on
// cooperative matrices (T x T x T products, which GPUs run on tensor cores): the f16
// matrix products of a mixed-precision step, and its convolutions as implicit GEMMs, where
// the adapter offers `wgpu_cooperative_matrix` (native Vulkan and Metal; no browser has
// it).
//
// The prelude (shaders/src/lib.rs) sets the variant: T, the side of one cooperative
// matrix (16 on NVIDIA's cards, 8 on lavapipe, the sizes those adapters list for f16
// into f32), the aliases of its three types, and SUBGROUP, the adapter's one subgroup
// size. The launcher picks the variant an adapter lists (core/src/ops/matmul/coop.rs).
//
// Each operand is one of the kinds of matmul.wgsl, the f32 tiled kernel (params 10 for A,
// 11 for B; the same words, so that one launcher serves both):
//   0 a matrix read through its strides, so a transposed view costs no copy;
//   1 the im2col patches of a convolution's input x [N, C, H, W] (any strides): as A the
//     forward pass's left-hand side [N Ho Wo, C kh kw], as B (K = N Ho Wo) the weight
//     gradient's right-hand side;
//   2 as A, the patches of the transposed convolution that takes an output's gradient
//     dy [N, O, Ho, Wo] back to the input [N H W, O kh kw]; as B, the weights
//     [O, C, kh, kw] as [O kh kw, C]: their product is the input's gradient.
// Kinds 1 and 2 compute each element's address as the tile loads it (an implicit GEMM):
// no patches matrix, no im2col or col2im launch. Positions past an edge, and the
// convolution's padding, read as zeros; positions past an edge of C write nothing.
//
// Tiling: a workgroup of 256 invocations computes a BLOCK_M x BLOCK_N (128 x 64) block of
// C. Its subgroups form an SG_M x SG_N grid, and each holds a 2 x 2 square of cooperative
// accumulators (four T x T tiles: two tiles of A and two of B loaded for four products).
// Through K, TK = 2 T at a time, the workgroup stages the BLOCK_M x TK block of A and the
// TK x BLOCK_N block of B in workgroup memory; each invocation loads its share of the next
// step's blocks into registers while the subgroups multiply the present ones (register
// double buffering: the global loads are in flight during the products), then stores them
// after the barrier. At the end each subgroup's four sums go out one after the other
// through a scratch tile of its own in workgroup memory, where its invocations read them
// back, round them to f16 and write those inside C. Blocks are numbered along N first,
// on a grid folded into two dimensions; the grid's last row may run past the last block,
// whose workgroups then compute the last block again.
//
// Split K: where the output has too few blocks to fill a GPU (a convolution's weight
// gradient), the launcher splits the depth into S ranges of `chunk` (a multiple of TK) and
// launches S workgroups per block, the workgroup's split its index over the blocks; each
// writes its f32 sums of its range to `partial` [S, M, N], and sum_splits.wgsl adds them
// into C. With S = 1 the sums go to C directly, rounded to f16.
//
// Every operation on cooperative matrices, and every barrier, is in control flow uniform
// across the workgroup: which tiles a subgroup takes is data (its index), never a branch,
// and the range of K is read through workgroupUniformLoad.
//
// Bindings (group 0, all storage read_write):
//   0 a f16    1 b f16    2 c out [M, N] f16, row-major (S = 1)
//   3 params u32 [29]: 0 M, 1 N, 2 K, 3 A's row stride, 4 A's column stride, 5 B's row
//     stride, 6 B's column stride, 7 S, the splits of K (matmul.wgsl's bias flag), 8 the
//     depth of one split, a multiple of TK (K where S = 1; matmul.wgsl's ReLU flag), 9
//     blocks along N, 10 A's kind, 11 B's kind, 12 A's loads along k (1) or m (0), 13 B's
//     along k (1) or n (0) (consecutive invocations read consecutive addresses when the
//     flag names the operand's contiguous direction); the convolution (kinds 1 and 2):
//     14 C, 15 H, 16 W, 17-20 the strides of x or dy, 21 kh, 22 kw, 23 sh, 24 sw, 25 ph,
//     26 pw, 27 Ho, 28 Wo
//   4 partial out [S, M, N] f32, row-major (S > 1; any buffer where S = 1)

@group(0) @binding(0) var<storage, read_write> a: array<f16>;
@group(0) @binding(1) var<storage, read_write> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f16>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;
@group(0) @binding(4) var<storage, read_write> partial: array<f32>;

// The block of C a workgroup computes, and the depth of one staging step.
const BLOCK_M: u32 = 128u;
const BLOCK_N: u32 = 64u;
const TK: u32 = 2u * T;
// The subgroups' grid over the block, each taking 2 x 2 tiles.
const SUBGROUPS: u32 = 256u / SUBGROUP;
const SG_M: u32 = BLOCK_M / (2u * T);
const SG_N: u32 = BLOCK_N / (2u * T);
const_assert SG_M * SG_N == SUBGROUPS;
// Values of A's and B's blocks each invocation loads per step.
const A_LOADS: u32 = BLOCK_M * TK / 256u;
const B_LOADS: u32 = TK * BLOCK_N / 256u;

// A's block [BLOCK_M][TK] and B's block [TK][BLOCK_N], row-major; one T x T f32 scratch
// tile per subgroup.
var<workgroup> a_block: array<f16, BLOCK_M * TK>;
var<workgroup> b_block: array<f16, TK * BLOCK_N>;
var<workgroup> scratch: array<f32, SUBGROUPS * T * T>;
// This workgroup's range of K: its first k and the end of its split.
var<workgroup> depths: vec2<u32>;

// A's element (m, k) (the addresses: conv_taps.wgsl, the end of the prelude), 0 past an
// edge.
fn a_at(row: vec3<u32>, m: u32, k: u32) -> f16 {
    if (m >= params[0] || k >= params[2]) {
        return f16(0.0);
    }
    let at = a_index(row, m, k);
    if (at == NONE) {
        return f16(0.0);
    }
    return a[at];
}

// B's element (k, n), 0 past an edge.
fn b_at(column: vec3<u32>, k: u32, n: u32) -> f16 {
    if (k >= params[2] || n >= params[1]) {
        return f16(0.0);
    }
    let at = b_index(column, k, n);
    if (at == NONE) {
        return f16(0.0);
    }
    return b[at];
}

// Write the sum `tile` of the block's tile at (row, col) inside C (or, for split `split` of
// several, inside its part of `partial`), through subgroup `sg`'s scratch tile: stored by
// the subgroup, read back by its invocations (`lane` of SUBGROUP), each T x T / SUBGROUP
// of its values.
fn write_tile(tile: tile_c, sg: u32, lane: u32, row: u32, col: u32, split: u32) {
    let base = sg * T * T;
    // naga 30 emits a cooperative store's arguments only when each is a `let`.
    let sum = tile;
    coopStoreT(sum, &scratch[base], T);
    workgroupBarrier();
    for (var e = lane; e < T * T; e += SUBGROUP) {
        let m = row + e / T;
        let n = col + e % T;
        if (m < params[0] && n < params[1]) {
            if (params[7] <= 1u) {
                c[m * params[1] + n] = f16(scratch[base + e]);
            } else {
                partial[(split * params[0] + m) * params[1] + n] = scratch[base + e];
            }
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let along_n = params[9];
    let blocks = ((params[0] + BLOCK_M - 1u) / BLOCK_M) * along_n;
    let splits = max(params[7], 1u);
    let flat = min(wid.y * groups.x + wid.x, blocks * splits - 1u);
    let block = flat % blocks;
    let split = flat / blocks;
    if (lid == 0u) {
        let start = split * params[8];
        depths = vec2<u32>(start, min(params[2], start + params[8]));
    }
    // The range of K through workgroup memory: uniform for the loop around the barriers.
    let range = workgroupUniformLoad(&depths);
    let row0 = (block / along_n) * BLOCK_M;
    let col0 = (block % along_n) * BLOCK_N;
    // This subgroup's 2 x 2 tiles: their first row in A's block, first column in B's.
    let tile_row = (sg / SG_N) * 2u * T;
    let tile_col = (sg % SG_N) * 2u * T;
    // The places of A's and B's blocks this invocation loads at every step (its rows of
    // A and columns of B stay, k moves on), consecutive invocations along whichever
    // direction is contiguous in memory.
    var am: array<u32, A_LOADS>;
    var ak: array<u32, A_LOADS>;
    var rows_of_a: array<vec3<u32>, A_LOADS>;
    for (var i = 0u; i < A_LOADS; i += 1u) {
        let e = lid + i * 256u;
        am[i] = e / TK;
        ak[i] = e % TK;
        if (params[12] == 0u) {
            am[i] = e % BLOCK_M;
            ak[i] = e / BLOCK_M;
        }
        if (params[10] != 0u) {
            rows_of_a[i] = a_row(row0 + am[i]);
        }
    }
    var bk: array<u32, B_LOADS>;
    var bn: array<u32, B_LOADS>;
    var columns_of_b: array<vec3<u32>, B_LOADS>;
    for (var i = 0u; i < B_LOADS; i += 1u) {
        let e = lid + i * 256u;
        bk[i] = e / BLOCK_N;
        bn[i] = e % BLOCK_N;
        if (params[13] == 1u) {
            bk[i] = e % TK;
            bn[i] = e / TK;
        }
        if (params[11] == 1u) {
            columns_of_b[i] = b_column(col0 + bn[i]);
        }
    }
    // The first step's values.
    var a_next: array<f16, A_LOADS>;
    var b_next: array<f16, B_LOADS>;
    for (var i = 0u; i < A_LOADS; i += 1u) {
        a_next[i] = a_at(rows_of_a[i], row0 + am[i], range.x + ak[i]);
    }
    for (var i = 0u; i < B_LOADS; i += 1u) {
        b_next[i] = b_at(columns_of_b[i], range.x + bk[i], col0 + bn[i]);
    }
    // `var`s (not `let`s) of a cooperative type: naga 30 declares SPIR-V's
    // cooperative-matrix extension only for a module that has one.
    var sum00: tile_c;
    var sum01: tile_c;
    var sum10: tile_c;
    var sum11: tile_c;
    for (var k0 = range.x; k0 < range.y; k0 += TK) {
        for (var i = 0u; i < A_LOADS; i += 1u) {
            a_block[am[i] * TK + ak[i]] = a_next[i];
        }
        for (var i = 0u; i < B_LOADS; i += 1u) {
            b_block[bk[i] * BLOCK_N + bn[i]] = b_next[i];
        }
        workgroupBarrier();
        // The next step's values, loading while the products below run.
        let k1 = k0 + TK;
        if (k1 < range.y) {
            for (var i = 0u; i < A_LOADS; i += 1u) {
                a_next[i] = a_at(rows_of_a[i], row0 + am[i], k1 + ak[i]);
            }
            for (var i = 0u; i < B_LOADS; i += 1u) {
                b_next[i] = b_at(columns_of_b[i], k1 + bk[i], col0 + bn[i]);
            }
        }
        for (var kk = 0u; kk < TK; kk += T) {
            let x0 = coopLoadT<tile_a>(&a_block[tile_row * TK + kk], TK);
            let x1 = coopLoadT<tile_a>(&a_block[(tile_row + T) * TK + kk], TK);
            let y0 = coopLoadT<tile_b>(&b_block[kk * BLOCK_N + tile_col], BLOCK_N);
            let y1 = coopLoadT<tile_b>(&b_block[kk * BLOCK_N + tile_col + T], BLOCK_N);
            sum00 = coopMultiplyAdd(x0, y0, sum00);
            sum01 = coopMultiplyAdd(x0, y1, sum01);
            sum10 = coopMultiplyAdd(x1, y0, sum10);
            sum11 = coopMultiplyAdd(x1, y1, sum11);
        }
        workgroupBarrier();
    }
    let row = row0 + tile_row;
    let col = col0 + tile_col;
    write_tile(sum00, sg, lane, row, col, split);
    write_tile(sum01, sg, lane, row, col + T, split);
    write_tile(sum10, sg, lane, row + T, col, split);
    write_tile(sum11, sg, lane, row + T, col + T, split);
}
