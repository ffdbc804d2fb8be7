// What Poseidon2 of every width shares (poseidon2/permutation.wgsl, width 16, and
// poseidon2/permutation24.wgsl): element-wise adds and S-boxes of a quarter of the state, the
// 4x4 MDS block of the external layer, and division by powers of two for the internal layer.
// The S-box (`sbox`) is the field's (poseidon2/<field>.wgsl).
// Needs field/prime.wgsl.

fn add4(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(fp_add(a.x, b.x), fp_add(a.y, b.y), fp_add(a.z, b.z), fp_add(a.w, b.w));
}

fn sbox4(a: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(sbox(a.x), sbox(a.y), sbox(a.z), sbox(a.w));
}

// The 4x4 MDS block (Plonky3's `MDSMat4`).
fn mat4(x: vec4<u32>) -> vec4<u32> {
    let t01 = fp_add(x.x, x.y);
    let t23 = fp_add(x.z, x.w);
    let t0123 = fp_add(t01, t23);
    let t01123 = fp_add(t0123, x.y);
    let t01233 = fp_add(t0123, x.w);
    return vec4<u32>(
        fp_add(t01123, t01),
        fp_add(t01123, fp_double(x.z)),
        fp_add(t01233, t23),
        fp_add(t01233, fp_double(x.x)),
    );
}

// x * 2^-k mod p for 1 <= k <= FP_TWO_ADICITY without a multiply by a Montgomery constant:
// p = FP_ODD * 2^FP_TWO_ADICITY + 1, so q = -x mod 2^k makes x + q*p divisible by 2^k, and
// (x + q*p) / 2^k = (x + q) / 2^k + q * FP_ODD * 2^(FP_TWO_ADICITY - k) < 2p fits in a u32.
// Scaling commutes with Montgomery form.
fn fp_div_2exp(x: u32, k: u32) -> u32 {
    let q = (0u - x) & ((1u << k) - 1u);
    let r = ((x + q) >> k) + q * (FP_ODD << (FP_TWO_ADICITY - k));
    return select(r, r - FP_P, r >= FP_P);
}
