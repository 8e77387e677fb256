// adam_common.wgsl — Adam's update of one element (Kingma & Ba), the prelude of
// adam.wgsl (one parameter a launch) and adam_packed.wgsl (every parameter of a step),
// so that the formula has one WGSL text:
//
//   m' = m * beta_1 + g * (1 - beta_1)
//   v' = v * beta_2 + (g * g) * (1 - beta_2)
//   x' = x - (m' / (sqrt(v' / c_2) + epsilon)) * step_size
//
// the operations of the device-generic tensor update (core/src/optim.rs) in the same
// order, so every route gives the same bits. c_2 = 1 - beta_2^t and step_size =
// lr / (1 - beta_1^t) depend on the parameter's step number t and are computed where t
// is known: on the host (core/src/ops/adam/mod.rs, `Scalars::at`), or on the device in
// a mixed-precision step, whose skipped steps only the device counts.

struct AdamScalars {
    beta_1: f32,
    keep_1: f32,
    beta_2: f32,
    keep_2: f32,
    epsilon: f32,
    correction_2: f32,
    step_size: f32,
}

struct AdamElement {
    weight: f32,
    first: f32,
    second: f32,
}

fn adam_element(weight: f32, grad: f32, first: f32, second: f32, s: AdamScalars) -> AdamElement {
    let m = first * s.beta_1 + grad * s.keep_1;
    let v = second * s.beta_2 + (grad * grad) * s.keep_2;
    let denom = sqrt(v / s.correction_2) + s.epsilon;
    return AdamElement(weight - (m / denom) * s.step_size, m, v);
}
