// bn_moments.wgsl — a training step's batch-norm statistics and its running statistics'
// update, one workgroup per channel (see bn_common.wgsl for the layout).
//
// One pass over the channel: each invocation keeps its values' count, mean and sum of
// squared deviations from that mean (Welford's update), and the workgroup merges those
// pairwise (Chan, Golub and LeVeque's formula). That is burn's mean and biased variance
// to f32's rounding without subtracting two large sums (the cancellation a single pass of
// sums and sums of squares would risk), and one read of x where the two passes burn makes
// (the mean, then the deviations from it) took two; the pass is what this kernel costs.
// Sums taken in the convolution's epilogue would save that pass too, but only behind the
// kernel on cooperative matrices (and its split-K sums), across the line between the
// convolution and the batch norm; this saves it behind every convolution.
// Then running = (1 - momentum) * running + momentum * batch, for the mean and the
// (biased) variance, as burn's BatchNorm updates them.
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

// Each invocation's count, mean and sum of squared deviations, merged in place.
var<workgroup> counts: array<f32, 256>;
var<workgroup> means: array<f32, 256>;
var<workgroup> squares: array<f32, 256>;

// The channel's mean and biased variance from every invocation's `(count, mean, squares)`,
// in invocation 0's hands (all invocations must call it).
fn workgroup_moments(lid: u32, mine: vec3<f32>) -> vec2<f32> {
    counts[lid] = mine.x;
    means[lid] = mine.y;
    squares[lid] = mine.z;
    workgroupBarrier();
    var span = WG / 2u;
    loop {
        if (span == 0u) { break; }
        let other = lid + span;
        if (lid < span && counts[other] > 0.0) {
            let n = counts[lid] + counts[other];
            let d = means[other] - means[lid];
            means[lid] = means[lid] + d * (counts[other] / n);
            squares[lid] = squares[lid] + squares[other] + d * d * (counts[lid] * counts[other] / n);
            counts[lid] = n;
        }
        workgroupBarrier();
        span = span / 2u;
    }
    let moments = vec2<f32>(means[0], squares[0] / counts[0]);
    workgroupBarrier();
    return moments;
}

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
    var count = 0.0;
    var mean_so_far = 0.0;
    var squares_so_far = 0.0;
    for (var j = lid; j < m; j = j + WG) {
        let v = f32(x[x_at(c, j)]);
        count = count + 1.0;
        let d = v - mean_so_far;
        mean_so_far = mean_so_far + d / count;
        squares_so_far = squares_so_far + d * (v - mean_so_far);
    }
    let moments = workgroup_moments(lid, vec3<f32>(count, mean_so_far, squares_so_far));
    let mean = moments.x;
    let variance = moments.y;
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
