// #import util/dispatch
// #import field/mul
// #import field/prime
// #import field/ext
// #import sumcheck/chain_state

// After a chained fold bound round t's variable to the chain's challenge r (coordinate
// z_j,t = z_j[vars - 1 - t] of each point): c_j <- c_j eq(z_j,t, r), and the next round's
// A_j = c_j (1 - z_j,t+1), B_j = c_j z_j,t+1 (lazy_weights.wgsl). One thread; nothing once the chain has stopped (the
// fold it follows did not run either). Over any extension (field/ext: degree 4, 5 or 8).
// Rust twin of the params: `LazyCoeffParams` in crates/gpu/src/sumcheck/params.rs.

struct LazyCoeffParams {
    points: u32,
    // Where coordinates z_j,t and z_j,t+1 are in `coords`: j * rounds_plus_one + t.
    t: u32,
    rounds_plus_one: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: LazyCoeffParams;
@group(0) @binding(1) var<storage, read> coords: array<Ext>;
@group(0) @binding(2) var<storage, read_write> coeffs: array<Ext>;
@group(0) @binding(3) var<storage, read> chain: ChainState;

@compute @workgroup_size(1)
fn lazy_coeffs() {
    if (chain.info.y != 0u) {
        return;
    }
    let r = ext_from_halves(chain.r[0], chain.r[1]);
    let one = ext_from_base(FP_ONE);
    for (var j = 0u; j < params.points; j++) {
        let z = coords[j * params.rounds_plus_one + params.t];
        let next = coords[j * params.rounds_plus_one + params.t + 1u];
        // eq(z, r) = (1 - z)(1 - r) + z r
        let eq = ext_add(ext_mul(ext_sub(one, z), ext_sub(one, r)), ext_mul(z, r));
        let c = ext_mul(coeffs[j], eq);
        coeffs[j] = c;
        coeffs[params.points + j] = ext_sub(c, ext_mul(c, next));
        coeffs[2u * params.points + j] = ext_mul(c, next);
    }
}
