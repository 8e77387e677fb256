// adam_packed.wgsl — Adam's step of many parameters in one launch
// (core/src/ops/adam/gpu.rs), each element by adam_common.wgsl's `adam_element`, as
// adam.wgsl steps it.
//
// Weights and both moments lie packed in one buffer each, parameter j's values at
// offset_j (a multiple of 64 floats, so that a parameter's values are a bindable view);
// the gradients are the backward pass's own buffers, one binding each. This file is the
// shader for one gradient; for G gradients every line between the `gradients` markers
// is repeated with the 0 of `g0` / `case 0u` replaced by 1 .. G - 1
// (taks_shaders::adam_packed), so a launch binds G + 8 buffers (G + 9 with an f16
// gradient, below) and one training step is one launch where the adapter allows that
// many (a few where it allows fewer).
//
// A mixed-precision step (core/src/train/loss_scale.rs) keeps its loss scale on the
// device and decides there whether Adam steps, as PyTorch's fused Adam does with its
// found_inf, so that no step reads a number back. It launches this shader twice with
// the same bindings: first to check the gradients (mode 1), then to step (mode 2, and 3
// for the launch that also moves the loss scale on):
//   mode 0  the plain step above (an f32 step; the scaler binding is not read);
//   mode 1  check: any gradient element infinite or NaN sets found[parity];
//   mode 2  scaled step: with found[parity] set every element keeps its weights and
//           moments (the step is skipped); otherwise g is the gradient divided by the
//           scale, and c_2 and step_size come from the parameter's steps taken,
//           t = time - skipped, here (pow), not from the host's table: only the device
//           knows t, and a run resumed from a checkpoint (its skips taken back, none
//           counted yet) must compute every step's scalars as the run that wrote it;
//   mode 3  mode 2, and one invocation writes the next state into the other half:
//           a skip halves the scale, zeroes good_steps and counts one more skip; a
//           finite step counts a good step, and after `interval` in a row the scale
//           doubles (PyTorch's GradScaler). It clears the other half's found flag for
//           the next step's check.
//
// One invocation per element; parameter j covers workgroups first_j .. first_j +
// ceil(numel_j / 256) of a 2-D grid (as in noise_risk.wgsl).
//
// Bindings (group 0, all storage read_write):
//   0 x, 1 m, 2 v   packed weights and moments before the step
//   3 x_out, 4 m_out, 5 v_out   after it (fresh buffers)
//   6 table u32: [0] G, [1..6) the bits of beta_1, 1 - beta_1, beta_2, 1 - beta_2,
//     epsilon, [6] the bits of lr, [7] mode, [8] parity (0 or 1), [9] interval; then per
//     parameter j at 10 + 6 j: offset, numel, first workgroup, the bits of its
//     c_2 = 1 - beta_2^t and step_size = lr / (1 - beta_1^t), and t (its step number
//     counting skipped steps)
//   7 scaler u32 [10]: two states of 4 words at 4 * parity (the bits of the scale,
//     good_steps, skipped, unused), then found per parity at 8 + parity
//   8 + j  g_j [numel_j], parameter j's gradient: f32, or f16 where taks_shaders::adam_packed
//     is told so (the weight gradients of a mixed-precision MLP step; the binding is then
//     array<f16>, the read f32(g_j[i]), and the text needs `enable f16;` first)
//   8 + G  x_low f16, only where a gradient is f16: the f16 copy of each such
//     parameter's weights after the step (or as they were, where it is skipped), at
//     f16 element 2 * offset_j + i (the f32 part's first half: the same byte offset, so
//     a bindable view too). The MLP's next f16 step multiplies by these copies
//     instead of casting its weights to f16 itself (two launches fewer a step); the
//     conversion is the one burn's cast compiles to.

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> m: array<f32>;
@group(0) @binding(2) var<storage, read_write> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> x_out: array<f32>;
@group(0) @binding(4) var<storage, read_write> m_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> v_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> table: array<u32>;
@group(0) @binding(7) var<storage, read_write> scaler: array<atomic<u32>, 10>;
// gradients: begin
@group(0) @binding(8) var<storage, read_write> g0: array<f32>;
// gradients: end

const WG: u32 = 256u;
const HEADER: u32 = 10u;
const STRIDE: u32 = 6u;

fn gradient(j: u32, i: u32) -> f32 {
    switch j {
        // gradients: begin
        case 0u: { return g0[i]; }
        // gradients: end
        default: { return 0.0; }
    }
}

// Parameter j's new weight at packed element e, kept in f16 too where j's gradient is
// f16. This file's is the no-op of a launch with f32 gradients only; with f16 ones,
// taks_shaders::adam_packed drops it and takes the commented block below (`// ` cut
// off, the binding numbered 8 + G, `case 0u` the f16 gradients' numbers).
// low copy, f32: begin
fn keep_low(j: u32, e: u32, value: f32) {}
// low copy, f32: end
// low copy, f16: begin
// @group(0) @binding(8) var<storage, read_write> x_low: array<f16>;
// fn keep_low(j: u32, e: u32, value: f32) {
//     switch j {
//         case 0u: { x_low[e + table[HEADER + STRIDE * j]] = f16(value); }
//         default: {}
//     }
// }
// low copy, f16: end

// The loss scale's next state (mode 3), from the state at `now` into the one at `next`.
fn move_scale_on(now: u32, next: u32, found: bool) {
    var scale = bitcast<f32>(atomicLoad(&scaler[now]));
    var good = atomicLoad(&scaler[now + 1u]);
    var skipped = atomicLoad(&scaler[now + 2u]);
    if (found) {
        scale = scale * 0.5;
        good = 0u;
        skipped = skipped + 1u;
    } else {
        good = good + 1u;
        if (good == table[9]) {
            scale = scale * 2.0;
            good = 0u;
        }
    }
    atomicStore(&scaler[next], bitcast<u32>(scale));
    atomicStore(&scaler[next + 1u], good);
    atomicStore(&scaler[next + 2u], skipped);
    atomicStore(&scaler[8u + next / 4u], 0u);
}

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let group = wg.y * nwg.x + wg.x;
    let count = table[0];
    let mode = table[7];
    let parity = table[8];
    let state = 4u * parity;
    let found = mode >= 2u && atomicLoad(&scaler[8u + parity]) != 0u;
    if (mode == 3u && group == 0u && lid.x == 0u) {
        move_scale_on(state, 4u - state, found);
    }
    // The parameter whose workgroups hold this one: the last whose first is not after it.
    var j = 0u;
    for (var k = 1u; k < count; k = k + 1u) {
        if (table[HEADER + STRIDE * k + 2u] <= group) {
            j = k;
        }
    }
    let at = HEADER + STRIDE * j;
    let i = (group - table[at + 2u]) * WG + lid.x;
    if (group < table[at + 2u] || i >= table[at + 1u]) {
        return;
    }
    if (mode == 1u) {
        if (!is_finite(gradient(j, i))) {
            atomicMax(&scaler[8u + parity], 1u);
        }
        return;
    }
    let e = table[at] + i;
    if (found) {
        x_out[e] = x[e];
        m_out[e] = m[e];
        v_out[e] = v[e];
        keep_low(j, e, x[e]);
        return;
    }
    var grad = gradient(j, i);
    var correction_2 = bitcast<f32>(table[at + 3u]);
    var step_size = bitcast<f32>(table[at + 4u]);
    if (mode >= 2u) {
        grad = grad * (1.0 / bitcast<f32>(atomicLoad(&scaler[state])));
        let t = f32(table[at + 5u] - atomicLoad(&scaler[state + 2u]));
        correction_2 = 1.0 - pow(bitcast<f32>(table[3]), t);
        step_size = bitcast<f32>(table[6]) / (1.0 - pow(bitcast<f32>(table[1]), t));
    }
    let s = AdamScalars(
        bitcast<f32>(table[1]),
        bitcast<f32>(table[2]),
        bitcast<f32>(table[3]),
        bitcast<f32>(table[4]),
        bitcast<f32>(table[5]),
        correction_2,
        step_size,
    );
    let stepped = adam_element(x[e], grad, m[e], v[e], s);
    x_out[e] = stepped.weight;
    keep_low(j, e, stepped.weight);
    m_out[e] = stepped.first;
    v_out[e] = stepped.second;
}
