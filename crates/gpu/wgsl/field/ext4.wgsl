// Degree-4 binomial extension F[X]/(X^4 - W) (W = EXT4_W from the field's constants), laid out
// as Plonky3's `BinomialExtensionField<F, 4>`: four Montgomery words, coefficient of X^0 first.
// Needs field/prime.wgsl.

fn ext4_add(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(fp_add(a.x, b.x), fp_add(a.y, b.y), fp_add(a.z, b.z), fp_add(a.w, b.w));
}

fn ext4_sub(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(fp_sub(a.x, b.x), fp_sub(a.y, b.y), fp_sub(a.z, b.z), fp_sub(a.w, b.w));
}

fn ext4_neg(a: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(fp_neg(a.x), fp_neg(a.y), fp_neg(a.z), fp_neg(a.w));
}

// Multiply by a base-field element.
fn ext4_scale(a: vec4<u32>, s: u32) -> vec4<u32> {
    return vec4<u32>(fp_mul(a.x, s), fp_mul(a.y, s), fp_mul(a.z, s), fp_mul(a.w, s));
}

// Schoolbook product; X^4 = W folds the upper coefficients back down.
fn ext4_mul(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    let c0 = fp_mul(a.x, b.x);
    let c1 = fp_add(fp_mul(a.x, b.y), fp_mul(a.y, b.x));
    let c2 = fp_add(fp_add(fp_mul(a.x, b.z), fp_mul(a.y, b.y)), fp_mul(a.z, b.x));
    let c3 = fp_add(fp_add(fp_mul(a.x, b.w), fp_mul(a.y, b.z)), fp_add(fp_mul(a.z, b.y), fp_mul(a.w, b.x)));
    let c4 = fp_add(fp_add(fp_mul(a.y, b.w), fp_mul(a.z, b.z)), fp_mul(a.w, b.y));
    let c5 = fp_add(fp_mul(a.z, b.w), fp_mul(a.w, b.z));
    let c6 = fp_mul(a.w, b.w);
    return vec4<u32>(
        fp_add(c0, fp_mul(c4, EXT4_W)),
        fp_add(c1, fp_mul(c5, EXT4_W)),
        fp_add(c2, fp_mul(c6, EXT4_W)),
        c3,
    );
}

fn ext4_square(a: vec4<u32>) -> vec4<u32> {
    return ext4_mul(a, a);
}

// Inverse through the norm down to the base field: with y = X, a(y) * a(-y) = b0 + b1 y^2 lies in
// the quadratic subfield, and (b0 + b1 y^2)(b0 - b1 y^2) = b0^2 - W b1^2 lies in the base field.
// The inverse of 0 is returned as 0 (callers must not rely on it).
fn ext4_inverse(a: vec4<u32>) -> vec4<u32> {
    let conj = vec4<u32>(a.x, fp_neg(a.y), a.z, fp_neg(a.w));
    let ac = ext4_mul(a, conj);
    // ac = (b0, 0, b1, 0).
    let b0 = ac.x;
    let b1 = ac.z;
    let norm = fp_sub(fp_square(b0), fp_mul(EXT4_W, fp_square(b1)));
    let inv_norm = fp_inverse(norm);
    let quad_inv = vec4<u32>(fp_mul(b0, inv_norm), 0u, fp_mul(fp_neg(b1), inv_norm), 0u);
    return ext4_mul(conj, quad_inv);
}
