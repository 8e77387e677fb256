// bias_relu.wgsl — a layer's bias and ReLU after its matmul, h = relu(a + b), in one pass:
// the MLP's hidden layer (core/src/ops/mlp_step/gpu.rs; the CPU twin is `bias_relu` in
// core/src/ops/mlp_step/cpu.rs) and a folded convolution's output, channels last (core/src/ops/conv/im2col.rs).
//
// One invocation per element i of the [rows, cols] matrix (workgroup size 256, 2-D grid
// as in noise_risk.wgsl): h_i = a_i + b_(i mod cols) where that is positive or NaN (NaN
// stays NaN, as in burn's relu), else 0.
//
// `elem` is f32 or f16 (BIAS_RELU and BIAS_RELU_F16 in src/lib.rs): a mixed-precision
// MLP step's f16 activations, its bias f32 (the master weight, as autocast leaves it
// before its cast); the sum is taken in f32 and rounded once.
//
// Bindings (group 0, all storage read_write):
//   0 a [rows * cols] elem    2 h out [rows * cols] elem
//   1 b [cols] f32            3 params u32 [2]: rows, cols

@group(0) @binding(0) var<storage, read_write> a: array<elem>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> h: array<elem>;
@group(0) @binding(3) var<storage, read_write> params: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let rows = params[0];
    let cols = params[1];
    let i = (wg.y * nwg.x + wg.x) * WG + lid.x;
    if (i >= rows * cols) {
        return;
    }
    let v = f32(a[i]) + b[i % cols];
    h[i] = elem(relu(v));
}
