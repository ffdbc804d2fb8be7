// BabyBear, p = 2^31 - 2^27 + 1, in Montgomery form with R = 2^32: the same u32 words as
// Plonky3's `MontyField31<BabyBearParameters>`, so buffers are `&[BabyBear]` as bytes.
// Needs `mulhi` from one of the field/mul_*.wgsl variants.

const BB_P: u32 = 0x78000001u;
// p^-1 mod 2^32.
const BB_MU: u32 = 0x88000001u;
// 1 and 0 in Montgomery form.
const BB_ONE: u32 = 0x0ffffffeu;
const BB_ZERO: u32 = 0u;

fn bb_add(a: u32, b: u32) -> u32 {
    // a, b < p < 2^31, so the sum does not wrap.
    let s = a + b;
    return select(s, s - BB_P, s >= BB_P);
}

fn bb_sub(a: u32, b: u32) -> u32 {
    let d = a - b;
    return select(d, d + BB_P, a < b);
}

fn bb_neg(a: u32) -> u32 {
    return select(BB_P - a, 0u, a == 0u);
}

fn bb_double(a: u32) -> u32 {
    return bb_add(a, a);
}

// Montgomery product a * b * R^-1 mod p: hi(a*b) - hi(q*p) with q = lo(a*b) * p^-1 mod 2^32.
// lo(a*b) - lo(q*p) is 0 by construction of q, so there is no borrow from the low half.
fn bb_mul(a: u32, b: u32) -> u32 {
    let q = (a * b) * BB_MU;
    let h = mulhi(a, b);
    let qp = mulhi(q, BB_P);
    let r = h - qp;
    return select(r, r + BB_P, h < qp);
}

fn bb_square(a: u32) -> u32 {
    return bb_mul(a, a);
}

// a^e for a plain (not Montgomery) exponent e.
fn bb_pow(a: u32, e: u32) -> u32 {
    var result = BB_ONE;
    var base = a;
    var exp = e;
    while (exp != 0u) {
        if ((exp & 1u) != 0u) {
            result = bb_mul(result, base);
        }
        base = bb_square(base);
        exp = exp >> 1u;
    }
    return result;
}

// a^-1 = a^(p-2); the inverse of 0 is returned as 0 (callers must not rely on it).
fn bb_inverse(a: u32) -> u32 {
    return bb_pow(a, BB_P - 2u);
}
