// adam_packed.wgsl — Adam's step of many parameters in one launch
// (core/src/optim/adam_gpu.rs), each element as adam.wgsl steps it:
//
//   m' = m * beta_1 + g * (1 - beta_1),  v' = v * beta_2 + (g * g) * (1 - beta_2)
//   x' = x - (m' / (sqrt(v' / c_2) + epsilon)) * step_size
//
// Weights and both moments lie packed in one buffer each, parameter j's values at
// offset_j (a multiple of 64 floats, so that a parameter's values are a bindable view);
// the gradients are the backward pass's own buffers, one binding each. This file is the
// shader for one gradient; for G gradients every line between the markers is repeated
// with the 0 of `g0` / `case 0u` replaced by 1 .. G - 1 (taks_shaders::adam_packed), so
// a launch binds G + 7 buffers and one training step is one launch where the adapter
// allows that many (a few where it allows fewer).
//
// One invocation per element; parameter j covers workgroups first_j .. first_j +
// ceil(numel_j / 256) of a 2-D grid (as in noise_risk.wgsl).
//
// Bindings (group 0, all storage read_write):
//   0 x, 1 m, 2 v   packed weights and moments before the step
//   3 x_out, 4 m_out, 5 v_out   after it (fresh buffers)
//   6 table u32: [0] G, [1..6) the bits of beta_1, 1 - beta_1, beta_2, 1 - beta_2,
//     epsilon; then per parameter j at 6 + 5 j: offset, numel, first workgroup, and the
//     bits of its c_2 = 1 - beta_2^t and step_size = lr / (1 - beta_1^t)
//   7 + j  g_j [numel_j], parameter j's gradient

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> m: array<f32>;
@group(0) @binding(2) var<storage, read_write> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> x_out: array<f32>;
@group(0) @binding(4) var<storage, read_write> m_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> v_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> table: array<u32>;
// gradients: begin
@group(0) @binding(7) var<storage, read_write> g0: array<f32>;
// gradients: end

const WG: u32 = 256u;

fn gradient(j: u32, i: u32) -> f32 {
    switch j {
        // gradients: begin
        case 0u: { return g0[i]; }
        // gradients: end
        default: { return 0.0; }
    }
}

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let group = wg.y * nwg.x + wg.x;
    let count = table[0];
    // The parameter whose workgroups hold this one: the last whose first is not after it.
    var j = 0u;
    for (var k = 1u; k < count; k = k + 1u) {
        if (table[6u + 5u * k + 2u] <= group) {
            j = k;
        }
    }
    let at = 6u + 5u * j;
    let i = (group - table[at + 2u]) * WG + lid.x;
    if (group < table[at + 2u] || i >= table[at + 1u]) {
        return;
    }
    let e = table[at] + i;
    let grad = gradient(j, i);
    let first = m[e] * bitcast<f32>(table[1]) + grad * bitcast<f32>(table[2]);
    let second = v[e] * bitcast<f32>(table[3]) + (grad * grad) * bitcast<f32>(table[4]);
    let denom = sqrt(second / bitcast<f32>(table[at + 3u])) + bitcast<f32>(table[5]);
    x_out[e] = x[e] - (first / denom) * bitcast<f32>(table[at + 4u]);
    m_out[e] = first;
    v_out[e] = second;
}
