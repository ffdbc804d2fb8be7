// High half of a 32x32-bit product from 16-bit limbs, for adapters without SHADER_INT64
// (WebGPU in browsers, older drivers). Each partial product fits in 32 bits.
fn mulhi(a: u32, b: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    // Sum of the three terms that straddle bit 32; below 3 * 2^16, so no overflow.
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}

// hi(a * a): the two cross products are equal, so three limb products instead of four.
fn mulhi_square(a: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let p00 = a0 * a0;
    let p01 = a0 * a1;
    let p11 = a1 * a1;
    // Below 3 * 2^16: no overflow.
    let mid = (p00 >> 16u) + 2u * (p01 & 0xffffu);
    return p11 + 2u * (p01 >> 16u) + (mid >> 16u);
}

// hi(q * p) for BabyBear's p = 2^31 - 2^27 + 1, with no multiply: q * p = q * 2^31 - q * 2^27 + q
// as a 64-bit number in two 32-bit halves (the Montgomery reduction's second product).
fn mulhi_p(q: u32) -> u32 {
    let lo_a = q << 31u;
    let lo_b = q << 27u;
    let lo = lo_a - lo_b;
    var hi = (q >> 1u) - (q >> 5u) - select(0u, 1u, lo_a < lo_b);
    let lo2 = lo + q;
    hi += select(0u, 1u, lo2 < lo);
    return hi;
}
