// #import sumcheck/reduce
// #import sumcheck/chain_state

// The first round of a sumcheck whose f is still in the base field (the committed polynomial)
// and w in the extension: round coefficients and the fold of f into the extension. The same
// conventions as round.wgsl and fold.wgsl (last variable first, adjacent pairs).
// Rust twins of the params: `RoundParams` and `FoldParams` in crates/gpu/src/sumcheck/params.rs.

struct BaseParams {
    // The challenge (fold): X^0..X^3, then X^4..X^7 (degree 8).
    r: vec4<u32>,
    r_hi: vec4<u32>,
    // Pairs (round) or entries of the folded table (fold).
    count: u32,
    groups: u32,
    // Partial pairs before this dispatch's (round).
    first: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: BaseParams;
@group(0) @binding(1) var<storage, read> f: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<Ext>;
@group(0) @binding(3) var<storage, read_write> out: array<Ext>;

@compute @workgroup_size(256)
fn round_partials_base(
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
        c0 = ext_add(c0, ext_scale(w0, f0));
        c_inf = ext_add(c_inf, ext_scale(ext_sub(w[2u * i + 1u], w0), fp_sub(f[2u * i + 1u], f0)));
    }
    let total = workgroup_sum_pair(lid, c0, c_inf);
    if (lid == 0u) {
        out[2u * (params.first + g)] = total[0];
        out[2u * (params.first + g) + 1u] = total[1];
    }
}

fn fold_base_at(i: u32, r: Ext) {
    let f0 = f[2u * i];
    out[i] = ext_add(ext_from_base(f0), ext_scale(r, fp_sub(f[2u * i + 1u], f0)));
}

// out[i] = f[2i] + r (f[2i+1] - f[2i]), into the extension.
@compute @workgroup_size(256)
fn fold_base(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = w[0];
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i >= params.count) {
        return;
    }
    fold_base_at(i, ext_from_halves(params.r, params.r_hi));
}

// fold_base with the challenge drawn on the GPU (sumcheck/chain.wgsl), skipped once the chain
// has stopped.
@group(0) @binding(4) var<storage, read> chain: ChainState;

@compute @workgroup_size(256)
fn fold_base_chained(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = w[0];
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i >= params.count || chain.info.y != 0u) {
        return;
    }
    fold_base_at(i, ext_from_halves(chain.r[0], chain.r[1]));
}
