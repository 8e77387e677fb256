// matmul_coop_f16.wgsl — C [M, N] = A [M, K] x B [K, N], A and B f16, C f32, on cooperative
// matrices (16 x 16 x 16 products accumulated in f32, which GPUs run on tensor cores):
// the f16 matrix products of a mixed-precision step where the adapter offers
// `wgpu_cooperative_matrix` (native Vulkan and Metal; no browser has it).
//
// Every operand is padded, so that no tile needs a bounds check: A is [Mp, Kp], B
// [Kp, Np] and C [Mp, Np], row-major and contiguous, M and N rounded up to 64 and K to 16
// with zeros (the launcher writes the padded copies and takes [M, N] out of C).
//
// Tiling: a workgroup of 256 invocations computes a 64 x 64 block of C, 16 cooperative
// tiles of 16 x 16, which its subgroups take in turn (tile s, s + S, ... for subgroup s
// of S: two each on a GPU with 32-wide subgroups). A subgroup keeps its tile's sum in one
// accumulator and steps through K 16 at a time, loading each 16 x 16 tile of A and B
// straight from the buffers (caches serve the other subgroups' reads of the same rows).
// Blocks are numbered along N first, on a grid folded into two dimensions; the grid's
// last row may run past the last block, whose workgroups then compute the last block again.
//
// The operations on cooperative matrices sit in loops, never under an `if`: naga's
// validator asks them for control flow uniform across the workgroup and counts a subgroup's
// index as non-uniform, but does not look at loop conditions; a subgroup's invocations
// always agree, which is what the hardware needs.
//
// Bindings (group 0, all storage read_write):
//   0 a [Mp, Kp] f16    1 b [Kp, Np] f16    2 c out [Mp, Np] f32
//   3 params u32 [4]: 0 Mp, 1 Np, 2 Kp, 3 blocks along N (Np / 64)

@group(0) @binding(0) var<storage, read_write> a: array<f16>;
@group(0) @binding(1) var<storage, read_write> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

// The side of one cooperative matrix, and of the block of C a workgroup computes.
const T: u32 = 16u;
const BLOCK: u32 = 64u;
// Tiles per side of a block, and in all.
const SIDE: u32 = 4u;
const TILES: u32 = 16u;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(num_subgroups) subgroups: u32,
) {
    let n = params[1];
    let k = params[2];
    let along_n = params[3];
    let blocks = (params[0] / BLOCK) * along_n;
    let block = min(wid.y * groups.x + wid.x, blocks - 1u);
    let row0 = (block / along_n) * BLOCK;
    let col0 = (block % along_n) * BLOCK;
    for (var t = sg; t < TILES; t += subgroups) {
        let row = row0 + (t / SIDE) * T;
        let col = col0 + (t % SIDE) * T;
        // A `var` (not a `let`) of a cooperative type: naga 30 declares SPIR-V's
        // cooperative-matrix extension only for a module that has one.
        var sum: coop_mat16x16<f32, C>;
        for (var k0 = 0u; k0 < k; k0 += T) {
            let x = coopLoadT<coop_mat16x16<f16, A>>(&a[row * k + k0], k);
            let y = coopLoadT<coop_mat16x16<f16, B>>(&b[k0 * n + col], n);
            sum = coopMultiplyAdd(x, y, sum);
        }
        // naga 30 emits a cooperative store's arguments only when each is a `let`.
        let tile = sum;
        let at = row * n + col;
        coopStoreT(tile, &c[at], n);
    }
}
