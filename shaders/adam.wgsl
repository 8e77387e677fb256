// adam.wgsl — one Adam step of one parameter in one pass (core/src/ops/adam/gpu.rs):
// one invocation per element i (workgroup size 256, 2-D grid as in noise_risk.wgsl)
// applies adam_common.wgsl's `adam_element`, with the scalars (1 - beta_1, 1 - beta_2,
// c_2, lr / c_1) computed on the host. The device-generic update is about a dozen
// kernels per parameter; this is one.
//
// Bindings (group 0, all storage read_write, f32 as u32 bits except params):
//   0 x      [n] weights          4 x_out [n]
//   1 g      [n] gradient         5 m_out [n]
//   2 m      [n] first moment     6 v_out [n]
//   3 v      [n] second moment    7 params u32 [9]: n, then the bits of beta_1,
//                                   keep_1, beta_2, keep_2, c_2, epsilon, step_size,
//                                   then the outputs' offset o (in elements)
// Outputs are fresh buffers: nothing is written where another tensor may still read.
// Element i is written at o + i, so that a step can fill one parameter's part of the
// packed buffers adam_packed.wgsl steps afterwards.

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> m: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> x_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> m_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_out: array<f32>;
@group(0) @binding(7) var<storage, read_write> params: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let n = params[0];
    let i = (wg.y * nwg.x + wg.x) * WG + lid.x;
    if (i >= n) {
        return;
    }
    let s = AdamScalars(
        bitcast<f32>(params[1]),
        bitcast<f32>(params[2]),
        bitcast<f32>(params[3]),
        bitcast<f32>(params[4]),
        bitcast<f32>(params[6]),
        bitcast<f32>(params[5]),
        bitcast<f32>(params[7]),
    );
    let stepped = adam_element(x[i], g[i], m[i], v[i], s);
    let o = params[8] + i;
    x_out[o] = stepped.weight;
    m_out[o] = stepped.first;
    v_out[o] = stepped.second;
}
