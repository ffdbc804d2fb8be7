// #import sumcheck/reduce

// One sumcheck round over f, w (extension tables, last variable bound first: adjacent pairs):
// h(0) = sum_i f[2i] w[2i] and h(inf) = sum_i (f[2i+1] - f[2i]) (w[2i+1] - w[2i]). Each workgroup
// strides over the pairs and writes its two partial sums; `sum_partials` reduces those.
// Rust twin of the params: `RoundParams` in crates/gpu/src/sumcheck/params.rs.

struct RoundParams {
    // Pairs (round_partials) or partial pairs (sum_partials) to reduce.
    count: u32,
    // Workgroups launched: the grid stride.
    groups: u32,
    // Partial pairs before this dispatch's (a table split over bindings runs one dispatch per
    // segment into one partials buffer).
    first: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: RoundParams;
@group(0) @binding(1) var<storage, read> f: array<Ext>;
@group(0) @binding(2) var<storage, read> w: array<Ext>;
@group(0) @binding(3) var<storage, read_write> partials: array<Ext>;

@compute @workgroup_size(256)
fn round_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let g = linear_workgroup_id(wid, num_wgs);
    var c0 = ext_zero();
    var c_inf = ext_zero();
    for (var i = g * 256u + lid; i < params.count; i += params.groups * 256u) {
        let f0 = f[2u * i];
        let w0 = w[2u * i];
        c0 = ext_add(c0, ext_mul(f0, w0));
        c_inf = ext_add(c_inf, ext_mul(ext_sub(f[2u * i + 1u], f0), ext_sub(w[2u * i + 1u], w0)));
    }
    let total = workgroup_sum_pair(lid, c0, c_inf);
    if (lid == 0u) {
        partials[2u * (params.first + g)] = total[0];
        partials[2u * (params.first + g) + 1u] = total[1];
    }
}

// Reduces `count` partial pairs (in f, as pairs of extension elements) into one pair per workgroup.
@compute @workgroup_size(256)
fn sum_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    // Both entry points bind the same four buffers (one bind group layout).
    _ = w[0];
    let g = linear_workgroup_id(wid, num_wgs);
    var a = ext_zero();
    var b = ext_zero();
    for (var i = g * 256u + lid; i < params.count; i += params.groups * 256u) {
        a = ext_add(a, f[2u * i]);
        b = ext_add(b, f[2u * i + 1u]);
    }
    let total = workgroup_sum_pair(lid, a, b);
    if (lid == 0u) {
        partials[2u * g] = total[0];
        partials[2u * g + 1u] = total[1];
    }
}
