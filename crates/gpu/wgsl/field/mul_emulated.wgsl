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
