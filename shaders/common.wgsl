// common.wgsl — helpers any shader may call, put before every shader's own prelude
// (`Shader::text` in src/lib.rs). Unused functions cost nothing.

// Whether v is a NaN, read off its bits: WGSL lets a compiler assume floats are never
// NaN, and lavapipe folds `v != v` to false (a ReLU then turned NaN into 0).
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// Whether v is neither infinite nor NaN, read off its bits (as is_nan, and for the same
// reason).
fn is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// Whether ReLU passes v, and so its gradient: v positive or NaN. burn's relu keeps a NaN
// (its mask is `v <= 0`, false for NaN), and so does its backward pass.
fn relu_passes(v: f32) -> bool {
    return v > 0.0 || is_nan(v);
}

// ReLU as burn computes it: v where `relu_passes(v)`, else 0.
fn relu(v: f32) -> f32 {
    return select(0.0, v, relu_passes(v));
}
