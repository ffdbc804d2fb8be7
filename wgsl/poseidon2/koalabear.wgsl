// KoalaBear's part of Poseidon2-16 (poseidon2/permutation.wgsl, through the virtual import
// `poseidon2/field`): the x^3 S-box, 20 internal rounds, and the internal layer 1 + diag(V) with
// V = [-2, 1, 2, 1/2, 3, 4, -1/2, -3, -4, 1/2^8, 1/8, 1/2^24, -1/2^8, -1/8, -1/16, -1/2^24]
// (`KoalaBearInternalLayerParameters`).

const P2_PARTIAL_ROUNDS: u32 = 20u;
// The constants uniform: 64 + 64 + 20 words, in whole vec4s.
const P2_CONSTANT_VEC4S: u32 = 37u;

fn sbox(x: u32) -> u32 {
    return fp_mul(fp_square(x), x);
}

// x * 2^-k mod p for 1 <= k <= 24 without a multiply by a Montgomery constant: p = 127 * 2^24 + 1,
// so q = -x mod 2^k makes x + q*p divisible by 2^k, and (x + q*p) / 2^k =
// (x + q) / 2^k + q * 127 * 2^(24 - k) < 2p fits in a u32. Scaling commutes with Montgomery form.
fn fp_div_2exp(x: u32, k: u32) -> u32 {
    let q = (0u - x) & ((1u << k) - 1u);
    let r = ((x + q) >> k) + q * (127u << (24u - k));
    return select(r, r - FP_P, r >= FP_P);
}

// Internal layer: x_i <- sum + V_i x_i. Every V_i is +-2^j or +-3, so each product is a few
// adds or one fp_div_2exp instead of a Montgomery multiply; negative V_i become subtractions.
fn internal_round(st: ptr<function, P2State>, rc: u32) {
    let x0 = sbox(fp_add((*st).s0.x, rc));
    let a = (*st).s0;
    let b = (*st).s1;
    let c = (*st).s2;
    let d = (*st).s3;
    let q = add4(add4(b, c), d);
    let part = fp_add(fp_add(fp_add(a.y, a.z), a.w), fp_add(fp_add(q.x, q.y), fp_add(q.z, q.w)));
    let full = fp_add(part, x0);
    let b3 = fp_add(fp_double(b.x), b.x);
    let d3 = fp_add(fp_double(b.w), b.w);
    (*st).s0 = vec4<u32>(fp_sub(part, x0), fp_add(full, a.y), fp_add(full, fp_double(a.z)), fp_add(full, fp_div_2exp(a.w, 1u)));
    (*st).s1 = vec4<u32>(
        fp_add(full, b3),
        fp_add(full, fp_double(fp_double(b.y))),
        fp_sub(full, fp_div_2exp(b.z, 1u)),
        fp_sub(full, d3),
    );
    (*st).s2 = vec4<u32>(
        fp_sub(full, fp_double(fp_double(c.x))),
        fp_add(full, fp_div_2exp(c.y, 8u)),
        fp_add(full, fp_div_2exp(c.z, 3u)),
        fp_add(full, fp_div_2exp(c.w, 24u)),
    );
    (*st).s3 = vec4<u32>(
        fp_sub(full, fp_div_2exp(d.x, 8u)),
        fp_sub(full, fp_div_2exp(d.y, 3u)),
        fp_sub(full, fp_div_2exp(d.z, 4u)),
        fp_sub(full, fp_div_2exp(d.w, 24u)),
    );
}
