// bn_moments.wgsl — a training step's batch-norm statistics and its running statistics'
// update, one workgroup per channel (see bn_common.wgsl for the layout).
//
// Two passes over the channel (the mean, then the squared deviations from it), as burn
// computes them; then running = (1 - momentum) * running + momentum * batch, for the mean
// and the (biased) variance, as burn's BatchNorm updates them.
//
// `shift` [C] is a per-channel constant the layer's real input has and x lacks: the
// convolution's bias, left out before the batch norm (its output is the same without it,
// since it subtracts the batch's mean, and the bias's gradient is exactly zero). Only the
// running mean, which eval mode subtracts instead, sees it: mean + shift. Only where
// params[16] is 1; else binding 7 holds any buffer and is not read.
//
// Bindings (group 0, all storage read_write):
//   0 x [N, C, H, W] elem (strided)  3 stats out [2 C] f32: mean, var
//   1 running mean [C] f32           4 running mean out [C] f32
//   2 running var [C] f32            5 running var out [C] f32
//                                    6 params u32 [17]
//                                    7 shift [C] f32
// The running statistics come out in two buffers, each the layer's state as it is: a
// part of one [2 C] buffer would be copied out where C floats are not a multiple of the
// device's buffer-offset alignment.

@group(0) @binding(0) var<storage, read_write> x: array<elem>;
@group(0) @binding(1) var<storage, read_write> running_mean: array<f32>;
@group(0) @binding(2) var<storage, read_write> running_var: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;
@group(0) @binding(4) var<storage, read_write> running_mean_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> running_var_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> params: array<u32>;
@group(0) @binding(7) var<storage, read_write> shift: array<f32>;

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
    var s = 0.0;
    for (var j = lid; j < m; j = j + WG) {
        s = s + f32(x[x_at(c, j)]);
    }
    let mean = workgroup_sum(lid, s) / f32(m);
    var q = 0.0;
    for (var j = lid; j < m; j = j + WG) {
        let d = f32(x[x_at(c, j)]) - mean;
        q = q + d * d;
    }
    let variance = workgroup_sum(lid, q) / f32(m);
    if (lid == 0u && live) {
        let momentum = bitcast<f32>(params[10]);
        stats[c] = mean;
        stats[channels + c] = variance;
        var shifted = mean;
        if (params[16] != 0u) {
            shifted = mean + shift[c];
        }
        running_mean_out[c] = (1.0 - momentum) * running_mean[c] + momentum * shifted;
        running_var_out[c] = (1.0 - momentum) * running_var[c] + momentum * variance;
    }
}
