// #import util/dispatch
// #import field/mul
// #import field/prime
// #import field/ext
// #import sumcheck/chain_state

// Binds the last variable of f and w to r: g'[i] = g[2i] + r (g[2i+1] - g[2i]), into fresh
// tables (in-place folding would race across workgroups).
// Rust twin of the params: `FoldParams` in crates/gpu/src/sumcheck/params.rs.

struct FoldParams {
    // The challenge: X^0..X^3, then X^4..X^7 (degree 8).
    r: vec4<u32>,
    r_hi: vec4<u32>,
    // Entries of the folded tables.
    half: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: FoldParams;
@group(0) @binding(1) var<storage, read> f: array<Ext>;
@group(0) @binding(2) var<storage, read> w: array<Ext>;
@group(0) @binding(3) var<storage, read_write> f_out: array<Ext>;
@group(0) @binding(4) var<storage, read_write> w_out: array<Ext>;

fn fold_pair_at(i: u32, r: Ext) {
    let f0 = f[2u * i];
    f_out[i] = ext_add(f0, ext_mul(r, ext_sub(f[2u * i + 1u], f0)));
    let w0 = w[2u * i];
    w_out[i] = ext_add(w0, ext_mul(r, ext_sub(w[2u * i + 1u], w0)));
}

fn fold_f_at(i: u32, r: Ext) {
    let f0 = f[2u * i];
    f_out[i] = ext_add(f0, ext_mul(r, ext_sub(f[2u * i + 1u], f0)));
}

@compute @workgroup_size(256)
fn fold_pairs(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i >= params.half) {
        return;
    }
    fold_pair_at(i, ext_from_halves(params.r, params.r_hi));
}

// Folds f alone (w and w_out are placeholders): the passes of a multilinear evaluation, which
// binds the last coordinate first.
@compute @workgroup_size(256)
fn fold_single(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = w[0];
    _ = w_out[0];
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i >= params.half) {
        return;
    }
    fold_f_at(i, ext_from_halves(params.r, params.r_hi));
}

// The same folds with the challenge drawn on the GPU (sumcheck/chain.wgsl), skipped once the
// chain has stopped.
@group(0) @binding(5) var<storage, read> chain: ChainState;

@compute @workgroup_size(256)
fn fold_pairs_chained(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i >= params.half || chain.info.y != 0u) {
        return;
    }
    fold_pair_at(i, ext_from_halves(chain.r[0], chain.r[1]));
}

@compute @workgroup_size(256)
fn fold_single_chained(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = w[0];
    _ = w_out[0];
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i >= params.half || chain.info.y != 0u) {
        return;
    }
    fold_f_at(i, ext_from_halves(chain.r[0], chain.r[1]));
}
