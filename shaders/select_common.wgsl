// select_common.wgsl — shared prelude of every select_*.wgsl pass (prepended on the host;
// WGSL has no #include). Defines the order-preserving key and the selection state layout.
//
// Exact k-smallest selection, ties broken by smaller index, O(n) work, all on the GPU:
//
//   key(x): order-preserving u32 of an f32: positives get the sign bit set, negatives have
//           all bits inverted, every NaN maps to 0xFFFFFFFF (NaN is the largest value;
//           -0.0 sorts just below +0.0).
//   1. Radix select over the key, 4 passes of 8 bits (shift 24, 16, 8, 0), each pass:
//        select_histogram: 256-bin histogram of digit (key >> shift) & 255 among elements
//                          whose key matches the prefix found so far (key & mask == prefix);
//        select_digit:     one workgroup scans the histogram, finds the digit d holding the
//                          k_rem-th element, prefix |= d << shift, k_rem -= count below d,
//                          and clears the histogram for the next pass.
//      Afterwards prefix = T, the exact key of the k-th smallest element, and k_rem = need,
//      how many elements with key == T are taken (the first `need` by index).
//   2. select_count:   per block of 256 elements: count of key < T and count of key == T.
//   3. select_scan:    one workgroup turns those block counts into exclusive prefix sums.
//   4. select_scatter: per element, selected = key < T || (key == T && eq_before < need);
//      writes mask[i] (f32 0/1) and indices[lt_before + min(eq_before, need)] = i, which
//      lists the selected indices in ascending order.
//   k = 0: every digit pass picks d = 0 with k_rem = 0, so T = 0, need = 0: nothing is
//   taken (the host skips the launches for k = 0 anyway). k = n works unchanged.
//
// state (u32 [8]): 0 prefix/T, 1 mask, 2 k_rem/need, 3 shift, 4 n, 5 k, 6 num_blocks, 7 unused.

const WG: u32 = 256u;

fn order_key(b: u32) -> u32 {
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return 0xffffffffu;
    }
    if ((b & 0x80000000u) != 0u) {
        return ~b;
    }
    return b | 0x80000000u;
}
