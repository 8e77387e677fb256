// select_scan.wgsl — exclusive prefix sums of the block counts (see select_common.wgsl).
// ONE workgroup of 256 invocations; invocation t owns a contiguous run of
// ceil(nb / 256) blocks: it sums its run, the workgroup scans the 256 run totals, then each
// invocation rewrites its run in place with running exclusive offsets (both the "< T" and
// the "== T" halves). O(nb) work.
// Bindings: 0 state (u32 [8]), 1 blocks (u32 [2 * nb]).

@group(0) @binding(0) var<storage, read_write> state: array<u32>;
@group(0) @binding(1) var<storage, read_write> blocks: array<u32>;

var<workgroup> scan_lt: array<u32, 256>;
var<workgroup> scan_eq: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    let nb = state[6];
    let per = (nb + WG - 1u) / WG;
    let start = t * per;
    let end = min(start + per, nb);

    var sum_lt = 0u;
    var sum_eq = 0u;
    for (var j = start; j < end; j++) {
        sum_lt += blocks[j];
        sum_eq += blocks[nb + j];
    }
    scan_lt[t] = sum_lt;
    scan_eq[t] = sum_eq;
    workgroupBarrier();
    for (var off = 1u; off < WG; off = off << 1u) {
        var a = scan_lt[t];
        var b = scan_eq[t];
        if (t >= off) {
            a += scan_lt[t - off];
            b += scan_eq[t - off];
        }
        workgroupBarrier();
        scan_lt[t] = a;
        scan_eq[t] = b;
        workgroupBarrier();
    }

    var run_lt = scan_lt[t] - sum_lt;
    var run_eq = scan_eq[t] - sum_eq;
    for (var j = start; j < end; j++) {
        let x = blocks[j];
        let y = blocks[nb + j];
        blocks[j] = run_lt;
        blocks[nb + j] = run_eq;
        run_lt += x;
        run_eq += y;
    }
}
