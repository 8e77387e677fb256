// select_histogram.wgsl — radix-select histogram pass (see select_common.wgsl).
// Each workgroup (256 invocations) covers 256 * 16 consecutive elements, builds a
// workgroup-local 256-bin histogram of the current digit among the elements still matching
// the prefix, then adds its non-zero bins to the global histogram with atomics.
// Bindings: 0 objective (f32 bits [n]), 1 state (u32 [8]), 2 hist (atomic u32 [256], zero on entry).

@group(0) @binding(0) var<storage, read_write> objective: array<u32>;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read_write> hist: array<atomic<u32>>;

const PER_THREAD: u32 = 16u;

var<workgroup> local_hist: array<atomic<u32>, 256>;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    atomicStore(&local_hist[lid.x], 0u);
    workgroupBarrier();

    let prefix = state[0];
    let mask = state[1];
    let shift = state[3];
    let n = state[4];
    let base = (wg.y * nwg.x + wg.x) * WG * PER_THREAD;
    for (var e = 0u; e < PER_THREAD; e++) {
        let idx = base + e * WG + lid.x;
        if (idx < n) {
            let key = order_key(objective[idx]);
            if ((key & mask) == prefix) {
                atomicAdd(&local_hist[(key >> shift) & 0xffu], 1u);
            }
        }
    }
    workgroupBarrier();

    let count = atomicLoad(&local_hist[lid.x]);
    if (count != 0u) {
        atomicAdd(&hist[lid.x], count);
    }
}
