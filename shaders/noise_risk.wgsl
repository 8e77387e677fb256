// noise_risk.wgsl — per-sample noise risk, cumulative risk and selection objective.
//
// One invocation per sample i (workgroup size 256, dispatched as a 2-D grid so that n
// may exceed 65535 * 256; the linear workgroup index is wg.y * num_workgroups.x + wg.x).
//
//   p_i      = 1 / sum_j exp(x_ij - max_j x_ij)      (stable softmax maximum probability)
//   a_i      = first index of the maximum logit
//   s_i      = +1 if a_i == label_i else -1
//   theta_i  = (1 - s_i * p_i) / 2
//   L'_i     = L_i + theta_i
//   mode 0 (TAkS / FTPL, eta = 0 is FTL): objective_i = L'_i + eta * r_i
//   mode 1 (greedy):                      objective_i = theta_i
//   r_i ~ N(0, 1) from the counter-based u32 generator below, keyed by (seed, epoch, i).
//   A NaN anywhere in row i makes theta_i, L'_i and objective_i NaN (0x7fc00000).
//
// Floats travel as their u32 bit patterns so that NaN is detected and written with
// integer operations only (shader compilers may fold float NaN tests away).
//
// Bindings (group 0, all storage read_write, all 32-bit words):
//   0 logits     f32 bits [n * C] row-major
//   1 labels     i32/u32  [n]     (noisy labels, non-negative)
//   2 cum_in     f32 bits [n]     cumulative risk L before this epoch
//   3 theta_out  f32 bits [n]
//   4 cum_out    f32 bits [n]     L + theta (may alias nothing; a fresh buffer)
//   5 obj_out    f32 bits [n]
//   6 params     u32 [6]: n, C, seed, epoch, bitcast<u32>(eta), mode

@group(0) @binding(0) var<storage, read_write> logits: array<u32>;
@group(0) @binding(1) var<storage, read_write> labels: array<u32>;
@group(0) @binding(2) var<storage, read_write> cum_in: array<u32>;
@group(0) @binding(3) var<storage, read_write> theta_out: array<u32>;
@group(0) @binding(4) var<storage, read_write> cum_out: array<u32>;
@group(0) @binding(5) var<storage, read_write> obj_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> params: array<u32>;

const WG: u32 = 256u;
const NAN_BITS: u32 = 0x7fc00000u;
const TWO_PI: f32 = 6.283185307179586;

fn is_nan_bits(b: u32) -> bool {
    return (b & 0x7fffffffu) > 0x7f800000u;
}

// lowbias32 (Chris Wellons). Wrapping u32 arithmetic; bit-identical to core/src/rng.rs.
fn mix(x: u32) -> u32 {
    var h = x;
    h ^= h >> 16u;
    h *= 0x7feb352du;
    h ^= h >> 15u;
    h *= 0x846ca68bu;
    h ^= h >> 16u;
    return h;
}

// Box–Muller standard normal keyed by (seed, epoch, i).
fn gaussian(seed: u32, epoch: u32, i: u32) -> f32 {
    let u1bits = mix(mix(mix(2u * i) ^ epoch) ^ seed);
    let u2bits = mix(mix(mix(2u * i + 1u) ^ epoch) ^ seed);
    let u1 = (f32(u1bits >> 8u) + 0.5) / 16777216.0; // (0, 1]
    let u2 = f32(u2bits >> 8u) / 16777216.0;         // [0, 1)
    return sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
}

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let n = params[0];
    let c = params[1];
    let i = (wg.y * nwg.x + wg.x) * WG + lid.x;
    if (i >= n || c == 0u) {
        return;
    }
    let row = i * c;

    var has_nan = false;
    var max_v = bitcast<f32>(logits[row]);
    var arg = 0u;
    for (var j = 0u; j < c; j++) {
        let b = logits[row + j];
        if (is_nan_bits(b)) {
            has_nan = true;
        }
        let v = bitcast<f32>(b);
        if (v > max_v) {
            max_v = v;
            arg = j;
        }
    }
    if (has_nan) {
        theta_out[i] = NAN_BITS;
        cum_out[i] = NAN_BITS;
        obj_out[i] = NAN_BITS;
        return;
    }

    var sum = 0.0;
    for (var j = 0u; j < c; j++) {
        sum += exp(bitcast<f32>(logits[row + j]) - max_v);
    }
    let p = 1.0 / sum;
    let s = select(-1.0, 1.0, arg == labels[i]);
    let theta = (1.0 - s * p) * 0.5;
    let cum_bits = cum_in[i];
    let cum_nan = is_nan_bits(cum_bits);
    let l = bitcast<f32>(cum_bits) + theta;

    var obj_bits = bitcast<u32>(theta);
    if (params[5] == 0u) {
        let eta = bitcast<f32>(params[4]);
        obj_bits = select(bitcast<u32>(l + eta * gaussian(params[2], params[3], i)), NAN_BITS, cum_nan);
    }
    theta_out[i] = bitcast<u32>(theta);
    cum_out[i] = select(bitcast<u32>(l), NAN_BITS, cum_nan);
    obj_out[i] = obj_bits;
}
