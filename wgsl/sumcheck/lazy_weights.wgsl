// #import sumcheck/reduce

// A sumcheck round whose weight table w is not stored: while every weight is an equality
// weight, w = sum_j c_j eq(z_j, .), and each entry is formed where it is used. For a pair index
// p (the variables but the last, coordinate 0 with p's top bit) and the last variable at 0 or 1:
//   w(p, 0) = sum_j A_j hi_j[p >> lo_bits] lo_j[p & mask],  A_j = c_j (1 - z_j,last)
//   w(p, 1) = sum_j B_j hi_j[p >> lo_bits] lo_j[p & mask],  B_j = c_j z_j,last
// with hi_j = eq(z_j's first coordinates, .) and lo_j = eq(the coordinates after them but the
// last, .): two small tables per point (host-built, every round's low table uploaded at once)
// instead of a 2^m-entry table. The kernels (lazy_round, lazy_base) differ only in f's field.
// Rust twin of the params: `LazyParams` in crates/gpu/src/sumcheck.rs.

struct LazyParams {
    // Pairs in this dispatch's segment of f.
    count: u32,
    // Workgroups launched: the grid stride.
    groups: u32,
    // Partial pairs before this dispatch's.
    first: u32,
    // Index of the segment's first pair in the whole table.
    offset: u32,
    // Points (terms of w).
    points: u32,
    // Pair-index bits the low tables cover this round.
    lo_bits: u32,
    // Where this round's low table starts within a point's tables (entries; the high table is
    // first), and the entries of one point's tables.
    lo_at: u32,
    stride: u32,
}

@group(0) @binding(0) var<uniform> lazy: LazyParams;
@group(0) @binding(2) var<storage, read> tables: array<vec4<u32>>;
// c_0.. c_{K-1}, A_0.. A_{K-1}, B_0.. B_{K-1} (K = points).
@group(0) @binding(3) var<storage, read> coeffs: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> partials: array<vec4<u32>>;

// (w(p, 0), w(p, 1)) for the global pair index p, into two function variables (an array
// return value may land in local memory).
fn lazy_weights(p: u32, w0: ptr<function, vec4<u32>>, w1: ptr<function, vec4<u32>>) {
    let hi = p >> lazy.lo_bits;
    let lo = p & ((1u << lazy.lo_bits) - 1u);
    var a = vec4<u32>(0u);
    var b = vec4<u32>(0u);
    for (var j = 0u; j < lazy.points; j++) {
        let at = j * lazy.stride;
        let e = ext4_mul(tables[at + hi], tables[at + lazy.lo_at + lo]);
        a = ext4_add(a, ext4_mul(coeffs[lazy.points + j], e));
        b = ext4_add(b, ext4_mul(coeffs[2u * lazy.points + j], e));
    }
    *w0 = a;
    *w1 = b;
}

fn store_partials(lid: u32, g: u32, c0: vec4<u32>, c_inf: vec4<u32>) {
    let total = workgroup_sum_pair(lid, c0, c_inf);
    if (lid == 0u) {
        partials[2u * (lazy.first + g)] = total[0];
        partials[2u * (lazy.first + g) + 1u] = total[1];
    }
}
