// #import util/dispatch
// #import field/mul
// #import field/prime
// #import field/ext

// Weight tables over {0,1}^m in big-endian index order (coordinate 0 <-> the top bit of x):
// - add_eq_weights:     w[x] += sum_j scale_j * eq(point_j, x), from split equality tables
// - add_select_weights: w[x] += sum_j scale_j * v_j^x        (v_j in the base field)
// - add_split_select_weights: the same from split power tables
// - scatter_scales / add_table_prefix: the same select weights through an NTT (below).
// - scale_table:        w[x] *= scales[0]
// Rust twin of the params: `WeightParams` in crates/gpu/src/sumcheck/params.rs.

struct WeightParams {
    // Entries of the table in this dispatch (a segment of it).
    size: u32,
    // m.
    vars: u32,
    // Points or select variables.
    count: u32,
    // Workgroups launched.
    groups: u32,
    // Index of the segment's first entry in the whole table.
    offset: u32,
    // Entries of the whole table (2^m).
    total: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: WeightParams;
// add_eq_weights: the points' high equality tables; add_select_weights: per j, v_j^(2^b) for
// b < vars (base-field values, in the X^0 coefficient: ext_c0); scatter_scales: indices (likewise); add_table_prefix: the table added.
@group(0) @binding(1) var<storage, read> points: array<Ext>;
// One scale per point (add_eq_weights: the scaled low equality tables).
@group(0) @binding(2) var<storage, read> scales: array<Ext>;
// The table written.
@group(0) @binding(3) var<storage, read_write> table: array<Ext>;
// Unused (a placeholder): keeps one bind group layout for every entry point.
@group(0) @binding(4) var<storage, read_write> partials: array<Ext>;

// Entry x of this segment in the whole table, split at its low L = `vars` bits: (high part,
// low part, entries of a high table, entries of a low table).
fn split_index(x: u32) -> vec4<u32> {
    let whole = params.offset + x;
    let lo_size = 1u << params.vars;
    return vec4<u32>(whole >> params.vars, whole & (lo_size - 1u), params.total >> params.vars, lo_size);
}

// w[x] += sum_j hi_j[x >> L] * lo_j[x & (2^L - 1)]: eq(point_j, x) split at the low L = `vars`
// bits into the equality tables of the point's first and last coordinates (built on the host,
// the scale folded into lo_j): two multiplications per entry and point instead of m.
// points: count tables of size >> L entries; scales: count tables of 2^L entries.
@compute @workgroup_size(256)
fn add_eq_weights(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    // Every entry point binds the same five buffers (one bind group layout).
    _ = partials[0];
    let x = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (x >= params.size) {
        return;
    }
    let at = split_index(x);
    var acc = table[x];
    for (var j = 0u; j < params.count; j++) {
        acc = ext_add(acc, ext_mul(points[j * at.z + at.x], scales[j * at.w + at.y]));
    }
    table[x] = acc;
}

// w[x] += sum_j hi_j[x >> L] * lo_j[x & (2^L - 1)] with hi_j in the base field (ext_c0) and lo_j in
// the extension: select weights s_j v_j^x split as v_j^(x_hi 2^L) * (s_j v_j^x_lo), tables built on
// the host; four multiplications per entry and variable (the loop below spends ~11).
@compute @workgroup_size(256)
fn add_split_select_weights(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = partials[0];
    let x = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (x >= params.size) {
        return;
    }
    let at = split_index(x);
    var acc = table[x];
    for (var j = 0u; j < params.count; j++) {
        acc = ext_add(acc, ext_scale(scales[j * at.w + at.y], ext_c0(points[j * at.z + at.x])));
    }
    table[x] = acc;
}

// Four consecutive entries per thread share one power computation per variable: v^x from the
// table of squares, then three multiplications by v.
@compute @workgroup_size(256)
fn add_select_weights(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = partials[0];
    let x0 = 4u * (linear_workgroup_id(wid, num_wgs) * 256u + lid);
    if (x0 >= params.size) {
        return;
    }
    let n = min(4u, params.size - x0);
    var a0 = table[x0];
    var a1 = ext_zero();
    var a2 = ext_zero();
    var a3 = ext_zero();
    if (n == 4u) {
        a1 = table[x0 + 1u];
        a2 = table[x0 + 2u];
        a3 = table[x0 + 3u];
    } else if (n == 2u) {
        a1 = table[x0 + 1u];
    }
    for (var j = 0u; j < params.count; j++) {
        let base = j * params.vars;
        // v^x from the squares v^(2^b) of the set bits of x, x0's index in the whole table.
        let x = params.offset + x0;
        var p = FP_ONE;
        for (var b = 0u; b < params.vars; b++) {
            if (((x >> b) & 1u) == 1u) {
                p = fp_mul(p, ext_c0(points[base + b]));
            }
        }
        let v = ext_c0(points[base]);
        let s = scales[j];
        a0 = ext_add(a0, ext_scale(s, p));
        p = fp_mul(p, v);
        a1 = ext_add(a1, ext_scale(s, p));
        p = fp_mul(p, v);
        a2 = ext_add(a2, ext_scale(s, p));
        p = fp_mul(p, v);
        a3 = ext_add(a3, ext_scale(s, p));
    }
    table[x0] = a0;
    if (n >= 2u) {
        table[x0 + 1u] = a1;
    }
    if (n == 4u) {
        table[x0 + 2u] = a2;
        table[x0 + 3u] = a3;
    }
}

// Select weights through a transform: with v_j = w^(i_j) for a 2^d-th root of unity w,
// sum_j s_j v_j^x = sum_k S_k w^(k x), the DFT of the sparse vector S (S_k = sum of the s_j with
// i_j = k). `scatter_scales` writes S into a zeroed 2^d table (ext_c0(points[j]) = i_j, distinct);
// after the NTT, `add_table_prefix` adds its first entries to w.
@compute @workgroup_size(256)
fn scatter_scales(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = partials[0];
    let j = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (j >= params.count) {
        return;
    }
    table[ext_c0(points[j])] = scales[j];
}

@compute @workgroup_size(256)
fn add_table_prefix(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = partials[0];
    _ = scales[0];
    let x = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (x >= params.size) {
        return;
    }
    // (`vars`: log2 of the stride the transform's entries are read at; 0 for a prefix.)
    table[x] = ext_add(table[x], points[(params.offset + x) << params.vars]);
}

// w[x] *= s, s = scales[0] (a hiding sumcheck's batch scales its weights by its challenge).
@compute @workgroup_size(256)
fn scale_table(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = partials[0];
    _ = points[0];
    let x = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (x >= params.size) {
        return;
    }
    table[x] = ext_mul(table[x], scales[0]);
}
