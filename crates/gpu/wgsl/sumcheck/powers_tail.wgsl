// #import field/mul
// #import field/prime
// #import field/ext

// A tail's part of a univariate value, for a point z drawn on the GPU (sumcheck/sponge_step):
// a message of f's 2^vars values followed by the `len` values of `tail`, read as one univariate
// polynomial's coefficients, has at z the value
// Σ_x f_x·z^x (sumcheck/power_tables with `monomial`, then eval) plus
//     z^(2^vars) · Σ_s tail_s·z^s,
// which this one-invocation kernel adds to the value the evaluation's reduction left (Horner,
// then vars squarings).
// Rust twin of the params: `PowersTailParams` in crates/gpu/src/sumcheck/params.rs.

struct PowersTailParams {
    // Variables of f.
    vars: u32,
    // Which point of `points`.
    point: u32,
    // Values in `tail`.
    len: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> cfg: PowersTailParams;
// Point p at entries 2p and 2p + 1 (X^0..X^3, X^4..X^7; sumcheck/sponge_step).
@group(0) @binding(1) var<storage, read> points: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> tail: array<Ext>;
// The reduction's pair (value, 0): the value is updated in place.
@group(0) @binding(3) var<storage, read_write> value: array<Ext>;

@compute @workgroup_size(1)
fn add_powers_tail() {
    let z = ext_from_halves(points[2u * cfg.point], points[2u * cfg.point + 1u]);
    var acc = ext_zero();
    for (var s = cfg.len; s > 0u; s--) {
        acc = ext_add(ext_mul(acc, z), tail[s - 1u]);
    }
    var y = z;
    for (var k = 0u; k < cfg.vars; k++) {
        y = ext_mul(y, y);
    }
    value[0] = ext_add(value[0], ext_mul(acc, y));
}
