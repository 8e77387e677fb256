// bn_grad_reduce.wgsl — the backward pass of bn_apply.wgsl, part 1, one workgroup per
// channel: with g = dy times ReLU's mask (when fused), sum g (beta's gradient) and
// sum g * xhat (gamma's gradient). See bn_common.wgsl.
//
// Bindings (group 0, all storage read_write):
//   0 x [N, C, H, W] elem (strided)   4 stats [2 C] f32: mean, var
//   1 dy [N, C, H, W] elem (strided)  5 sums out [4 C] f32: mean, var, sum g, sum g xhat
//   2 gamma [C] f32                   6 params u32 [16]
//   3 beta [C] f32

@group(0) @binding(0) var<storage, read_write> x: array<elem>;
@group(0) @binding(1) var<storage, read_write> dy: array<elem>;
@group(0) @binding(2) var<storage, read_write> gamma: array<f32>;
@group(0) @binding(3) var<storage, read_write> beta: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<f32>;
@group(0) @binding(5) var<storage, read_write> sums: array<f32>;
@group(0) @binding(6) var<storage, read_write> params: array<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid3: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let lid = lid3.x;
    let c = wg.y * nwg.x + wg.x;
    let channels = c_of();
    // No early return: every invocation reaches the barriers (WebGPU's uniformity rule;
    // params are not uniform to it). A surplus workgroup of a folded grid sums nothing
    // and writes nothing.
    let live = c < channels;
    let m = select(0u, n_of() * hw_of(), live);
    let mean = stats[c];
    let inv_std = 1.0 / sqrt(stats[channels + c] + eps_of());
    var sg = 0.0;
    var sgx = 0.0;
    for (var j = lid; j < m; j = j + WG) {
        let xhat = (f32(x[x_at(c, j)]) - mean) * inv_std;
        var g = f32(dy[dy_at(c, j)]);
        if (relu_of() && !relu_passes(gamma[c] * xhat + beta[c])) {
            g = 0.0;
        }
        sg = sg + g;
        sgx = sgx + g * xhat;
    }
    let total_g = workgroup_sum(lid, sg);
    let total_gx = workgroup_sum(lid, sgx);
    if (lid == 0u && live) {
        sums[c] = mean;
        sums[channels + c] = stats[channels + c];
        sums[2u * channels + c] = total_g;
        sums[3u * channels + c] = total_gx;
    }
}
