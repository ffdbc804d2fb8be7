// Arithmetic in a 31-bit prime field in Montgomery form with R = 2^32: the same u32 words as
// Plonky3's `MontyField31` (BabyBear, KoalaBear), so buffers are `&[F]` as bytes. The field's
// constants (FP_P, FP_MU, FP_ONE, ...) come from the virtual import `field/constants`, which
// composition resolves to field/babybear.wgsl or field/koalabear.wgsl.
// Needs `mulhi` from one of the field/mul_*.wgsl variants.
// #import field/constants

fn fp_add(a: u32, b: u32) -> u32 {
    // a, b < p < 2^31, so the sum does not wrap.
    let s = a + b;
    return select(s, s - FP_P, s >= FP_P);
}

fn fp_sub(a: u32, b: u32) -> u32 {
    let d = a - b;
    return select(d, d + FP_P, a < b);
}

fn fp_neg(a: u32) -> u32 {
    return select(FP_P - a, 0u, a == 0u);
}

fn fp_double(a: u32) -> u32 {
    return fp_add(a, a);
}

// Montgomery product a * b * R^-1 mod p: hi(a*b) - hi(q*p) with q = lo(a*b) * p^-1 mod 2^32.
// lo(a*b) - lo(q*p) is 0 by construction of q, so there is no borrow from the low half.
fn fp_mul(a: u32, b: u32) -> u32 {
    let q = (a * b) * FP_MU;
    let h = mulhi(a, b);
    let qp = mulhi(q, FP_P);
    let r = h - qp;
    return select(r, r + FP_P, h < qp);
}

fn fp_square(a: u32) -> u32 {
    return fp_mul(a, a);
}

// a^e for a plain (not Montgomery) exponent e.
fn fp_pow(a: u32, e: u32) -> u32 {
    var result = FP_ONE;
    var base = a;
    var exp = e;
    while (exp != 0u) {
        if ((exp & 1u) != 0u) {
            result = fp_mul(result, base);
        }
        base = fp_square(base);
        exp = exp >> 1u;
    }
    return result;
}

// a^-1 = a^(p-2); the inverse of 0 is returned as 0 (callers must not rely on it).
fn fp_inverse(a: u32) -> u32 {
    return fp_pow(a, FP_P - 2u);
}
