// select_digit.wgsl — radix-select digit pass (see select_common.wgsl). Launched as ONE
// workgroup of 256 invocations, one per digit value. Inclusive scan of the histogram; the
// invocation whose interval (before, before + count] contains k_rem owns the digit. Then
// invocation 0 updates prefix, mask, k_rem and shift; every bin is reset to zero.
// Bindings: 0 state (u32 [8]), 1 hist (u32 [256]).

@group(0) @binding(0) var<storage, read_write> state: array<u32>;
@group(0) @binding(1) var<storage, read_write> hist: array<u32>;

var<workgroup> scan: array<u32, 256>;
var<workgroup> chosen_digit: u32;
var<workgroup> chosen_before: u32;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    let h = hist[t];
    let k_rem = state[2];
    scan[t] = h;
    if (t == 0u) {
        chosen_digit = 0u;
        chosen_before = 0u;
    }
    workgroupBarrier();
    for (var off = 1u; off < WG; off = off << 1u) {
        var v = scan[t];
        if (t >= off) {
            v += scan[t - off];
        }
        workgroupBarrier();
        scan[t] = v;
        workgroupBarrier();
    }
    let incl = scan[t];
    let excl = incl - h;
    hist[t] = 0u;
    if (k_rem > excl && k_rem <= incl) {
        chosen_digit = t;
        chosen_before = excl;
    }
    workgroupBarrier();
    if (t == 0u) {
        let shift = state[3];
        state[0] = state[0] | (chosen_digit << shift);
        state[1] = state[1] | (0xffu << shift);
        state[2] = k_rem - chosen_before;
        state[3] = select(0u, shift - 8u, shift >= 8u);
    }
}
