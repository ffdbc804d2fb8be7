// #import sumcheck/lazy_weights

// h(0) and h(inf) of a round over a BabyBear^4 f with w formed on the fly (lazy_weights.wgsl):
// the same sums as round.wgsl's round_partials.

@group(0) @binding(1) var<storage, read> f: array<vec4<u32>>;

@compute @workgroup_size(256)
fn lazy_round(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let g = linear_workgroup_id(wid, num_wgs);
    var c0 = vec4<u32>(0u);
    var c_inf = vec4<u32>(0u);
    for (var i = g * 256u + lid; i < lazy.count; i += lazy.groups * 256u) {
        var w0: vec4<u32>;
        var w1: vec4<u32>;
        lazy_weights(lazy.offset + i, &w0, &w1);
        let f0 = f[2u * i];
        c0 = ext4_add(c0, ext4_mul(f0, w0));
        c_inf = ext4_add(c_inf, ext4_mul(ext4_sub(f[2u * i + 1u], f0), ext4_sub(w1, w0)));
    }
    store_partials(lid, g, c0, c_inf);
}
