// #import field/mul
// #import field/prime
// #import field/ext

// The chunk tables sumcheck/eval reads to evaluate f at Plonky3's `expand_from_univariate(z, m)`
// = (z^(2^(m-1)), ..., z^2, z), for a point z drawn on the GPU (sumcheck/sponge_step): index bit
// b of f pairs with coordinate z^(2^b), so entry t of chunk table c is the product over the
// chunk's bits i of z^(2^(8c+i)) where bit i of t is set and 1 - z^(2^(8c+i)) where it is not
// (entries past the last chunk's bits are zero). Workgroup c builds table c. With `reversed`
// (f held at bit-reversed indices) bit b pairs with z^(2^(m-1-b)) instead. With `monomial` a
// clear bit's factor is 1, not 1 - z^(2^b): the tables of z^x, f read as the coefficients of a
// univariate polynomial.
// The host's twin: `eq_chunk_tables` in crates/gpu/src/sumcheck/params.rs.

struct PowerTablesParams {
    // Variables of f.
    vars: u32,
    // Which point of `points`.
    point: u32,
    // 1: f is held at bit-reversed indices.
    reversed: u32,
    // 1: the tables of z^x (a clear bit's factor is 1).
    monomial: u32,
}

@group(0) @binding(0) var<uniform> cfg: PowerTablesParams;
// Point p at entries 2p and 2p + 1 (X^0..X^3, X^4..X^7; sumcheck/sponge_step).
@group(0) @binding(1) var<storage, read> points: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> tables: array<Ext>;

// y where the bit is set; where it is not, 1 - y, or 1 for the monomial tables (`select` takes
// no structs).
fn factor(y: Ext, bit_set: bool) -> Ext {
    if (bit_set) {
        return y;
    }
    if (cfg.monomial == 1u) {
        return ext_from_base(FP_ONE);
    }
    return ext_sub(ext_from_base(FP_ONE), y);
}

fn point_at(p: u32) -> Ext {
    return ext_from_halves(points[2u * p], points[2u * p + 1u]);
}

@compute @workgroup_size(256)
fn power_tables(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let c = wid.x;
    let first = min(8u * c, cfg.vars);
    let bits = min(cfg.vars - first, 8u);
    if (t >= (1u << bits)) {
        tables[c * 256u + t] = ext_zero();
        return;
    }
    let one = ext_from_base(FP_ONE);
    var acc = one;
    if (cfg.reversed == 1u) {
        // Bit first + i pairs with z^(2^(m-1-first-i)): each its own squarings (m at most 28).
        for (var i = 0u; i < bits; i++) {
            var y = point_at(cfg.point);
            for (var k = 0u; k < cfg.vars - 1u - first - i; k++) {
                y = ext_mul(y, y);
            }
            acc = ext_mul(acc, factor(y, ((t >> i) & 1u) == 1u));
        }
        tables[c * 256u + t] = acc;
        return;
    }
    var y = point_at(cfg.point);
    for (var k = 0u; k < first; k++) {
        y = ext_mul(y, y);
    }
    for (var i = 0u; i < bits; i++) {
        acc = ext_mul(acc, factor(y, ((t >> i) & 1u) == 1u));
        y = ext_mul(y, y);
    }
    tables[c * 256u + t] = acc;
}
