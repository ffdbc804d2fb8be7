// #import sumcheck/reduce

// A sumcheck round whose weight table w is not stored: while every weight is an equality
// weight, w = sum_j c_j eq(z_j, .), and each entry is formed where it is used. For a pair index
// p (the variables but the last, coordinate 0 with p's top bit) and the last variable at 0 or 1:
//   w(p, 0) = sum_j A_j hi_j[p >> lo_bits] lo_j[p & mask],  A_j = c_j (1 - z_j,last)
//   w(p, 1) = sum_j B_j hi_j[p >> lo_bits] lo_j[p & mask],  B_j = c_j z_j,last
// with hi_j = eq(z_j's first coordinates, .) and lo_j = eq(the coordinates after them but the
// last, .): two small tables per point (host-built, every round's low table uploaded at once)
// instead of a 2^m-entry table.
//
// So h(0) = sum_j A_j sum_lo lo_j[lo] S0_j(lo) with S0_j(lo) = sum_hi hi_j[hi] f(p, 0), and
// h(inf) likewise with B_j - A_j and the differences f(p, 1) - f(p, 0). A thread's pairs, a grid
// stride apart, share their low index (the host makes the stride a multiple of 2^lo_bits or
// covers the segment in one stride): it sums hi_j[hi] times f's values for one point at a time
// (one base x extension product per value of a base-field f) and multiplies by lo_j[lo] and
// the coefficients once at the end (`lazy_flush`). The kernels (lazy_round, lazy_base) differ
// only in f's field.
// Rust twin of the params: `LazyParams` in crates/gpu/src/sumcheck/params.rs.

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
@group(0) @binding(2) var<storage, read> tables: array<Ext>;
// c_0.. c_{K-1}, A_0.. A_{K-1}, B_0.. B_{K-1} (K = points).
@group(0) @binding(3) var<storage, read> coeffs: array<Ext>;
@group(0) @binding(4) var<storage, read_write> partials: array<Ext>;

// Adds point j's sums over a thread's pairs, of low index `lo`, to h(0) and h(inf): lo_j[lo] times the sums
// s0 (against f(p, 0)) and sd (against the differences), times A_j and B_j - A_j.
fn lazy_flush(j: u32, lo: u32, s0: Ext, sd: Ext, c0: ptr<function, Ext>, c_inf: ptr<function, Ext>) {
    let l = tables[j * lazy.stride + lazy.lo_at + lo];
    let a = coeffs[lazy.points + j];
    let d = ext_sub(coeffs[2u * lazy.points + j], a);
    *c0 = ext_add(*c0, ext_mul(ext_mul(l, a), s0));
    *c_inf = ext_add(*c_inf, ext_mul(ext_mul(l, d), sd));
}

fn store_partials(lid: u32, g: u32, c0: Ext, c_inf: Ext) {
    let total = workgroup_sum_pair(lid, c0, c_inf);
    // (A grid over 65,535 workgroups launches a few past `groups`.)
    if (lid == 0u && g < lazy.groups) {
        partials[2u * (lazy.first + g)] = total[0];
        partials[2u * (lazy.first + g) + 1u] = total[1];
    }
}
