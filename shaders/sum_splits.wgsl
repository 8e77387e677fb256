// sum_splits.wgsl — the split-K product's last pass: C [M, N] = the sum over S splits of
// the f32 partial products [S, M, N] that matmul_coop_f16.wgsl writes when its depth is
// split (core/src/ops/matmul.rs), rounded once to `elem` (f16).
//
// Why split: a product whose output is small but whose depth is large (a convolution's
// weight gradient: out channels x in channels x taps, summed over every position of the
// batch) is a few blocks of C, too few workgroups to fill a GPU; splitting the depth
// gives each block S workgroups, and this pass adds their sums.
//
// One invocation per element of C (workgroup size 256, 2-D grid as in noise_risk.wgsl),
// the splits added in order, in f32.
//
// Bindings (group 0, all storage read_write):
//   0 partial [S * M * N] f32    1 c out [M * N] elem
//   2 params u32 [2]: M * N, S

@group(0) @binding(0) var<storage, read_write> partial: array<f32>;
@group(0) @binding(1) var<storage, read_write> c: array<elem>;
@group(0) @binding(2) var<storage, read_write> params: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.y * nwg.x + wg.x) * WG + lid;
    let total = params[0];
    if (i >= total) {
        return;
    }
    var sum = 0.0;
    for (var s = 0u; s < params[1]; s += 1u) {
        sum += partial[s * total + i];
    }
    c[i] = elem(sum);
}
