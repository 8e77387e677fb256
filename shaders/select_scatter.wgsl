// select_scatter.wgsl — k-hot mask and ordered index list (see select_common.wgsl).
// One workgroup per block of 256 elements. A workgroup scan of packed flags
// ((key < T) << 16 | (key == T)) plus the block offsets gives, for element i, lt_before and
// eq_before (counts over all elements with smaller index). Element i is selected iff
// key < T or (key == T and eq_before < need); its slot in the index list is
// lt_before + min(eq_before, need) — the number of selected elements before it.
// Bindings: 0 objective (f32 bits [n]), 1 state (u32 [8]), 2 blocks (u32 [2 * nb], exclusive
// offsets), 3 mask (f32 [n]), 4 indices (u32 [k]).

@group(0) @binding(0) var<storage, read_write> objective: array<u32>;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read_write> blocks: array<u32>;
@group(0) @binding(3) var<storage, read_write> mask_out: array<f32>;
@group(0) @binding(4) var<storage, read_write> indices_out: array<u32>;

var<workgroup> scan: array<u32, 256>;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let t = lid.x;
    let t_key = state[0];
    let need = state[2];
    let n = state[4];
    let nb = state[6];
    let block = wg.y * nwg.x + wg.x;
    let i = block * WG + t;

    var is_lt = false;
    var is_eq = false;
    if (i < n) {
        let key = order_key(objective[i]);
        is_lt = key < t_key;
        is_eq = key == t_key;
    }
    let flag = select(0u, 0x10000u, is_lt) | select(0u, 1u, is_eq);
    scan[t] = flag;
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
    let excl = scan[t] - flag;

    if (i < n && block < nb) {
        let lt_before = blocks[block] + (excl >> 16u);
        let eq_before = blocks[nb + block] + (excl & 0xffffu);
        let take = is_lt || (is_eq && eq_before < need);
        mask_out[i] = select(0.0, 1.0, take);
        if (take) {
            indices_out[lt_before + min(eq_before, need)] = i;
        }
    }
}
