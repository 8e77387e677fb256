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
