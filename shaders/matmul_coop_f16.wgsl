// matmul_coop_f16.wgsl — C [M, N] = A [M, K] x B [K, N], A, B and C f16, the sums f32, on
// cooperative matrices (T x T x T products, which GPUs run on tensor cores): the f16
// matrix products of a mixed-precision step where the adapter offers
// `wgpu_cooperative_matrix` (native Vulkan and Metal; no browser has it).
//
// The prelude (shaders/src/lib.rs) sets the variant: T, the side of one cooperative
// matrix (16 on NVIDIA's cards, 8 on lavapipe, the sizes those adapters list for f16
// into f32), the aliases of its three types, and SUBGROUP, the adapter's one subgroup
// size. The launcher picks the variant an adapter lists (core/src/ops/matmul/coop.rs).
//
// Any sizes and strides: A and B are read through their strides (a transposed view costs
// no copy), and positions past an edge read as zeros and write nothing, so the operands
// need no padded copies and the result no cast.
//
// Tiling: a workgroup of 256 invocations computes a 64 x 64 block of C, (64 / T)^2
// cooperative tiles, two per subgroup: subgroup s of S = 256 / SUBGROUP takes tiles s and
// s + S (both variants have 2 S tiles; a const assertion holds it). Through K, TK = 2 T at
// a time, the workgroup copies the 64 x TK block of A and the TK x 64 block of B into
// workgroup memory (zeros past the edges), then each subgroup multiplies its two tiles'
// rows and columns out of it. At the end each subgroup's two sums go out one after the
// other through a scratch tile of its own in workgroup memory, where its invocations
// read them back, round them to f16 and write those inside C. Blocks are numbered along
// N first, on a grid folded into two dimensions; the grid's last row may run past the
// last block, whose workgroups then compute the last block again.
//
// Every operation on cooperative matrices, and every barrier, is in control flow uniform
// across the workgroup: which tiles a subgroup takes is data (its index), never a branch.
//
// Bindings (group 0, all storage read_write):
//   0 a f16    1 b f16    2 c out [M, N] f16, row-major
//   3 params u32 [10]: 0 M, 1 N, 2 K, 3 A's row stride, 4 A's column stride, 5 B's row
//     stride, 6 B's column stride, 7 blocks along N, 8 A's loads along k (1) or m (0),
//     9 B's loads along k (1) or n (0): consecutive invocations read consecutive addresses
//     when the flag names the operand's contiguous direction

@group(0) @binding(0) var<storage, read_write> a: array<f16>;
@group(0) @binding(1) var<storage, read_write> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f16>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

// The block of C a workgroup computes, and the depth of one copy into workgroup memory.
const BLOCK: u32 = 64u;
const TK: u32 = 2u * T;
// Tiles per side of a block; subgroups per workgroup, each taking two tiles.
const SIDE: u32 = BLOCK / T;
const SUBGROUPS: u32 = 256u / SUBGROUP;
const_assert SIDE * SIDE == 2u * SUBGROUPS;

// A's block [BLOCK][TK] and B's block [TK][BLOCK], row-major; one T x T f32 scratch tile
// per subgroup.
var<workgroup> a_block: array<f16, BLOCK * TK>;
var<workgroup> b_block: array<f16, TK * BLOCK>;
var<workgroup> scratch: array<f32, SUBGROUPS * T * T>;

// A's element (m, k), 0 past an edge.
fn a_at(m: u32, k: u32) -> f16 {
    if (m < params[0] && k < params[2]) {
        return a[m * params[3] + k * params[4]];
    }
    return f16(0.0);
}

// B's element (k, n), 0 past an edge.
fn b_at(k: u32, n: u32) -> f16 {
    if (k < params[2] && n < params[1]) {
        return b[k * params[5] + n * params[6]];
    }
    return f16(0.0);
}

// Write the sum `tile` of the block's tile `t` inside C, through subgroup `sg`'s scratch
// tile: stored by the subgroup, read back by its invocations (`lane` of SUBGROUP), each
// T x T / SUBGROUP of its values.
fn write_tile(tile: tile_c, t: u32, sg: u32, lane: u32, row0: u32, col0: u32) {
    let base = sg * T * T;
    // naga 30 emits a cooperative store's arguments only when each is a `let`.
    let sum = tile;
    coopStoreT(sum, &scratch[base], T);
    workgroupBarrier();
    let row = row0 + (t / SIDE) * T;
    let col = col0 + (t % SIDE) * T;
    for (var e = lane; e < T * T; e += SUBGROUP) {
        let m = row + e / T;
        let n = col + e % T;
        if (m < params[0] && n < params[1]) {
            c[m * params[1] + n] = f16(scratch[base + e]);
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
    let k_size = params[2];
    let along_n = params[7];
    let blocks = ((params[0] + BLOCK - 1u) / BLOCK) * along_n;
    let block = min(wid.y * groups.x + wid.x, blocks - 1u);
    let row0 = (block / along_n) * BLOCK;
    let col0 = (block % along_n) * BLOCK;
    // This subgroup's two tiles, as (row, column) offsets in the block.
    let t0 = sg;
    let t1 = sg + SUBGROUPS;
    let a0 = (t0 / SIDE) * T * TK;
    let a1 = (t1 / SIDE) * T * TK;
    let b0 = (t0 % SIDE) * T;
    let b1 = (t1 % SIDE) * T;
    // `var`s (not `let`s) of a cooperative type: naga 30 declares SPIR-V's
    // cooperative-matrix extension only for a module that has one.
    var sum0: tile_c;
    var sum1: tile_c;
    for (var k0 = 0u; k0 < k_size; k0 += TK) {
        // The blocks of A and B, each BLOCK x TK values over 256 invocations.
        for (var e = lid; e < BLOCK * TK; e += 256u) {
            var m = e / TK;
            var k = e % TK;
            if (params[8] == 0u) {
                m = e % BLOCK;
                k = e / BLOCK;
            }
            a_block[m * TK + k] = a_at(row0 + m, k0 + k);
            var kb = e / BLOCK;
            var n = e % BLOCK;
            if (params[9] == 1u) {
                kb = e % TK;
                n = e / TK;
            }
            b_block[kb * BLOCK + n] = b_at(k0 + kb, col0 + n);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk += T) {
            let y0 = coopLoadT<tile_b>(&b_block[kk * BLOCK + b0], BLOCK);
            let y1 = coopLoadT<tile_b>(&b_block[kk * BLOCK + b1], BLOCK);
            let x0 = coopLoadT<tile_a>(&a_block[a0 + kk], TK);
            sum0 = coopMultiplyAdd(x0, y0, sum0);
            let x1 = coopLoadT<tile_a>(&a_block[a1 + kk], TK);
            sum1 = coopMultiplyAdd(x1, y1, sum1);
        }
        workgroupBarrier();
    }
    write_tile(sum0, t0, sg, lane, row0, col0);
    write_tile(sum1, t1, sg, lane, row0, col0);
}
