// select_count.wgsl — per-block counts for the compaction (see select_common.wgsl).
// One workgroup per block of 256 elements: blocks[b] = #(key < T), blocks[nb + b] = #(key == T).
// Bindings: 0 objective (f32 bits [n]), 1 state (u32 [8]), 2 blocks (u32 [2 * nb]).

@group(0) @binding(0) var<storage, read_write> objective: array<u32>;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read_write> blocks: array<u32>;

var<workgroup> count_lt: atomic<u32>;
var<workgroup> count_eq: atomic<u32>;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if (lid.x == 0u) {
        atomicStore(&count_lt, 0u);
        atomicStore(&count_eq, 0u);
    }
    workgroupBarrier();

    let t_key = state[0];
    let n = state[4];
    let nb = state[6];
    let block = wg.y * nwg.x + wg.x;
    let i = block * WG + lid.x;
    if (i < n) {
        let key = order_key(objective[i]);
        if (key < t_key) {
            atomicAdd(&count_lt, 1u);
        } else if (key == t_key) {
            atomicAdd(&count_eq, 1u);
        }
    }
    workgroupBarrier();

    if (lid.x == 0u && block < nb) {
        blocks[block] = atomicLoad(&count_lt);
        blocks[nb + block] = atomicLoad(&count_eq);
    }
}
