// #import sumcheck/lazy_weights

// h(0) and h(inf) of the first round, over a base-field f, with w formed on the fly
// (lazy_weights.wgsl): the same sums as base.wgsl's round_partials_base.

@group(0) @binding(1) var<storage, read> f: array<u32>;

@compute @workgroup_size(256)
fn lazy_round_base(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let g = linear_workgroup_id(wid, num_wgs);
    let mask = (1u << lazy.lo_bits) - 1u;
    var c0 = ext_zero();
    var c_inf = ext_zero();
    // One point at a time (f is read once per point), so the sums stay in registers.
    for (var j = 0u; j < lazy.points; j++) {
        let at = j * lazy.stride;
        var s0 = ext_zero();
        var sd = ext_zero();
        for (var i = g * 256u + lid; i < lazy.count; i += lazy.groups * 256u) {
            let p = lazy.offset + i;
            let f0 = f[2u * i];
            let h = tables[at + (p >> lazy.lo_bits)];
            s0 = ext_add(s0, ext_scale(h, f0));
            sd = ext_add(sd, ext_scale(h, fp_sub(f[2u * i + 1u], f0)));
        }
        lazy_flush(j, (lazy.offset + g * 256u + lid) & mask, s0, sd, &c0, &c_inf);
    }
    store_partials(lid, g, c0, c_inf);
}
