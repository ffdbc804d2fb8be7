// Degree-4 binomial extension BabyBear[X]/(X^4 - 11), laid out as Plonky3's
// `BinomialExtensionField<BabyBear, 4>`: four Montgomery words, coefficient of X^0 first.
// Needs field/babybear.wgsl.

// W = 11 in Montgomery form.
const EXT4_W: u32 = 939524073u;

fn ext4_add(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(bb_add(a.x, b.x), bb_add(a.y, b.y), bb_add(a.z, b.z), bb_add(a.w, b.w));
}

fn ext4_sub(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(bb_sub(a.x, b.x), bb_sub(a.y, b.y), bb_sub(a.z, b.z), bb_sub(a.w, b.w));
}

fn ext4_neg(a: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(bb_neg(a.x), bb_neg(a.y), bb_neg(a.z), bb_neg(a.w));
}

// Multiply by a base-field element.
fn ext4_scale(a: vec4<u32>, s: u32) -> vec4<u32> {
    return vec4<u32>(bb_mul(a.x, s), bb_mul(a.y, s), bb_mul(a.z, s), bb_mul(a.w, s));
}

// Schoolbook product; X^4 = W folds the upper coefficients back down.
fn ext4_mul(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    let c0 = bb_mul(a.x, b.x);
    let c1 = bb_add(bb_mul(a.x, b.y), bb_mul(a.y, b.x));
    let c2 = bb_add(bb_add(bb_mul(a.x, b.z), bb_mul(a.y, b.y)), bb_mul(a.z, b.x));
    let c3 = bb_add(bb_add(bb_mul(a.x, b.w), bb_mul(a.y, b.z)), bb_add(bb_mul(a.z, b.y), bb_mul(a.w, b.x)));
    let c4 = bb_add(bb_add(bb_mul(a.y, b.w), bb_mul(a.z, b.z)), bb_mul(a.w, b.y));
    let c5 = bb_add(bb_mul(a.z, b.w), bb_mul(a.w, b.z));
    let c6 = bb_mul(a.w, b.w);
    return vec4<u32>(
        bb_add(c0, bb_mul(c4, EXT4_W)),
        bb_add(c1, bb_mul(c5, EXT4_W)),
        bb_add(c2, bb_mul(c6, EXT4_W)),
        c3,
    );
}

fn ext4_square(a: vec4<u32>) -> vec4<u32> {
    return ext4_mul(a, a);
}

// Inverse through the norm down to the base field: with y = X, a(y) * a(-y) = b0 + b1 y^2 lies in
// the quadratic subfield, and (b0 + b1 y^2)(b0 - b1 y^2) = b0^2 - W b1^2 lies in BabyBear.
// The inverse of 0 is returned as 0 (callers must not rely on it).
fn ext4_inverse(a: vec4<u32>) -> vec4<u32> {
    let conj = vec4<u32>(a.x, bb_neg(a.y), a.z, bb_neg(a.w));
    let ac = ext4_mul(a, conj);
    // ac = (b0, 0, b1, 0).
    let b0 = ac.x;
    let b1 = ac.z;
    let norm = bb_sub(bb_square(b0), bb_mul(EXT4_W, bb_square(b1)));
    let inv_norm = bb_inverse(norm);
    let quad_inv = vec4<u32>(bb_mul(b0, inv_norm), 0u, bb_mul(bb_neg(b1), inv_norm), 0u);
    return ext4_mul(conj, quad_inv);
}
