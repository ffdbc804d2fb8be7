// #import field/mul
// #import field/prime
// #import field/ext
// #import sumcheck/reduce
// #import sumcheck/chain_state

// One round of lazy slot weights in a chain of sumcheck rounds (crates/gpu/src/sumcheck/
// lazy_slots.rs has the algebra): each term is A·E(i − 1) + B·E(i) + C·[i = last] over one slot.
// From the chain's second round, each term is first bound to the challenge the chain drew last
// at the coordinate the previous round bound, z: A <- A(1 − r)z, B <- B eq(z, r) + A r(1 − z),
// C <- C r. Then the round's h(0) and h(∞) are combined from the slot values read this round
// (slot_eval.wgsl, slot_sum.wgsl), with this round's coordinate ζ and E'(last):
//   h(0) += B(1 − ζ)S0 + Aζ(T0 − E'(last)e1)
//   h(∞) += B(2ζ − 1)(S1 − S0) + A((1 − ζ)(S1 − S0) − ζ(T1 − T0)) + C(e1 − e0)
// One workgroup; nothing once the chain has stopped. Over any extension (field/ext: degree 4, 5
// or 8). Rust twin of the params: `LazySlotParams`
// in crates/gpu/src/sumcheck/params.rs.

struct LazySlotParams {
    terms: u32,
    // 1: bind the terms to the chain's challenge first.
    bind: u32,
    _pad: vec2<u32>,
}

@group(0) @binding(0) var<uniform> params: LazySlotParams;
@group(0) @binding(1) var<storage, read> values: array<Ext>;
// Per term: (S0, S1, T0, T1) and (e0, e1, group, 0) as indices into `values`.
@group(0) @binding(2) var<storage, read> terms: array<vec4<u32>>;
// Per group: ζ, E'(last), the previous round's coordinate.
@group(0) @binding(3) var<storage, read> constants: array<Ext>;
// Per term: A, B, C.
@group(0) @binding(4) var<storage, read_write> coeffs: array<Ext>;
@group(0) @binding(5) var<storage, read_write> pair: array<Ext>;
@group(0) @binding(6) var<storage, read> chain: ChainState;

@compute @workgroup_size(256)
fn lazy_slot_round(@builtin(local_invocation_index) lid: u32) {
    let live = chain.info.y == 0u;
    let one = ext_from_base(FP_ONE);
    let r = ext_from_halves(chain.r[0], chain.r[1]);
    var h0 = ext_zero();
    var h_inf = ext_zero();
    if (live) {
        for (var i = lid; i < params.terms; i += REDUCE_THREADS) {
            let at = terms[2u * i];
            let rest = terms[2u * i + 1u];
            let g = rest.z;
            var a = coeffs[3u * i];
            var b = coeffs[3u * i + 1u];
            var c = coeffs[3u * i + 2u];
            if (params.bind != 0u) {
                let z = constants[3u * g + 2u];
                let e = ext_add(ext_mul(ext_sub(one, z), ext_sub(one, r)), ext_mul(z, r));
                b = ext_add(ext_mul(b, e), ext_mul(ext_mul(a, r), ext_sub(one, z)));
                a = ext_mul(a, ext_mul(ext_sub(one, r), z));
                c = ext_mul(c, r);
                coeffs[3u * i] = a;
                coeffs[3u * i + 1u] = b;
                coeffs[3u * i + 2u] = c;
            }
            let zeta = constants[3u * g];
            let last = constants[3u * g + 1u];
            let s0 = values[at.x];
            let ds = ext_sub(values[at.y], s0);
            let e0 = values[rest.x];
            let e1 = values[rest.y];
            let v0 = ext_sub(values[at.z], ext_mul(last, e1));
            let dv = ext_sub(values[at.w], values[at.z]);
            let one_minus = ext_sub(one, zeta);
            let two_zeta_minus = ext_sub(ext_add(zeta, zeta), one);
            h0 = ext_add(h0, ext_add(ext_mul(b, ext_mul(one_minus, s0)), ext_mul(a, ext_mul(zeta, v0))));
            let with_a = ext_sub(ext_mul(one_minus, ds), ext_mul(zeta, dv));
            h_inf = ext_add(h_inf, ext_add(ext_add(ext_mul(b, ext_mul(two_zeta_minus, ds)), ext_mul(a, with_a)), ext_mul(c, ext_sub(e1, e0))));
        }
    }
    let total = workgroup_sum_pair(lid, h0, h_inf);
    if (lid == 0u && live) {
        pair[0] = total[0];
        pair[1] = total[1];
    }
}
