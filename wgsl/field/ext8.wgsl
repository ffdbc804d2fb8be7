// Degree-8 binomial extension F[X]/(X^8 - W) (W = EXT8_W from the field's constants), laid out
// as Plonky3's `BinomialExtensionField<F, 8>`: eight Montgomery words, coefficient of X^0 first,
// here as two vec4 (X^0..X^3 in lo, X^4..X^7 in hi).
// Needs field/prime.wgsl.

struct Ext8 {
    lo: vec4<u32>,
    hi: vec4<u32>,
}

fn ext8_words(a: Ext8) -> array<u32, 8> {
    return array<u32, 8>(a.lo.x, a.lo.y, a.lo.z, a.lo.w, a.hi.x, a.hi.y, a.hi.z, a.hi.w);
}

fn ext8_from_words(w: array<u32, 8>) -> Ext8 {
    return Ext8(vec4<u32>(w[0], w[1], w[2], w[3]), vec4<u32>(w[4], w[5], w[6], w[7]));
}

fn ext8_add(a: Ext8, b: Ext8) -> Ext8 {
    return Ext8(
        vec4<u32>(fp_add(a.lo.x, b.lo.x), fp_add(a.lo.y, b.lo.y), fp_add(a.lo.z, b.lo.z), fp_add(a.lo.w, b.lo.w)),
        vec4<u32>(fp_add(a.hi.x, b.hi.x), fp_add(a.hi.y, b.hi.y), fp_add(a.hi.z, b.hi.z), fp_add(a.hi.w, b.hi.w)),
    );
}

fn ext8_sub(a: Ext8, b: Ext8) -> Ext8 {
    return Ext8(
        vec4<u32>(fp_sub(a.lo.x, b.lo.x), fp_sub(a.lo.y, b.lo.y), fp_sub(a.lo.z, b.lo.z), fp_sub(a.lo.w, b.lo.w)),
        vec4<u32>(fp_sub(a.hi.x, b.hi.x), fp_sub(a.hi.y, b.hi.y), fp_sub(a.hi.z, b.hi.z), fp_sub(a.hi.w, b.hi.w)),
    );
}

fn ext8_neg(a: Ext8) -> Ext8 {
    return Ext8(
        vec4<u32>(fp_neg(a.lo.x), fp_neg(a.lo.y), fp_neg(a.lo.z), fp_neg(a.lo.w)),
        vec4<u32>(fp_neg(a.hi.x), fp_neg(a.hi.y), fp_neg(a.hi.z), fp_neg(a.hi.w)),
    );
}

// Schoolbook: c_k = sum_{i+j=k} a_i b_j + W sum_{i+j=k+8} a_i b_j.
fn ext8_mul(a: Ext8, b: Ext8) -> Ext8 {
    let x = ext8_words(a);
    let y = ext8_words(b);
    var low = array<u32, 8>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
    var wrap = array<u32, 8>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
    for (var i = 0u; i < 8u; i++) {
        for (var j = 0u; j < 8u; j++) {
            let p = fp_mul(x[i], y[j]);
            let k = i + j;
            if (k < 8u) {
                low[k] = fp_add(low[k], p);
            } else {
                wrap[k - 8u] = fp_add(wrap[k - 8u], p);
            }
        }
    }
    var c = array<u32, 8>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
    for (var k = 0u; k < 8u; k++) {
        c[k] = fp_add(low[k], fp_mul(wrap[k], EXT8_W));
    }
    return ext8_from_words(c);
}

fn ext8_square(a: Ext8) -> Ext8 {
    return ext8_mul(a, a);
}

// Product in F[Y]/(Y^4 - W), Y = X^2: the ring the even part of a norm lives in. ext4_mul with
// EXT8_W (equal to EXT4_W in both fields today): kept apart so that ext4_mul, on the sumcheck's
// hot path, stays as measured.
fn ext8_even_mul(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    let c0 = fp_mul(a.x, b.x);
    let c1 = fp_add(fp_mul(a.x, b.y), fp_mul(a.y, b.x));
    let c2 = fp_add(fp_add(fp_mul(a.x, b.z), fp_mul(a.y, b.y)), fp_mul(a.z, b.x));
    let c3 = fp_add(fp_add(fp_mul(a.x, b.w), fp_mul(a.y, b.z)), fp_add(fp_mul(a.z, b.y), fp_mul(a.w, b.x)));
    let c4 = fp_add(fp_add(fp_mul(a.y, b.w), fp_mul(a.z, b.z)), fp_mul(a.w, b.y));
    let c5 = fp_add(fp_mul(a.z, b.w), fp_mul(a.w, b.z));
    let c6 = fp_mul(a.w, b.w);
    return vec4<u32>(fp_add(c0, fp_mul(c4, EXT8_W)), fp_add(c1, fp_mul(c5, EXT8_W)), fp_add(c2, fp_mul(c6, EXT8_W)), c3);
}

// Inverse through norms down the tower X -> Y = X^2 -> Z = Y^2 -> F: a(X) a(-X) has only even
// powers (an element of F[Y]/(Y^4 - W)), whose own conjugate product lies in F[Z]/(Z^2 - W), and
// (c0 + c1 Z)(c0 - c1 Z) = c0^2 - W c1^2 lies in F. The inverse of 0 is returned as 0 (callers
// must not rely on it).
fn ext8_inverse(a: Ext8) -> Ext8 {
    let conj = Ext8(vec4<u32>(a.lo.x, fp_neg(a.lo.y), a.lo.z, fp_neg(a.lo.w)), vec4<u32>(a.hi.x, fp_neg(a.hi.y), a.hi.z, fp_neg(a.hi.w)));
    let n1 = ext8_mul(a, conj);
    // n1 = b0 + b1 Y + b2 Y^2 + b3 Y^3 (its odd coefficients are 0).
    let b = vec4<u32>(n1.lo.x, n1.lo.z, n1.hi.x, n1.hi.z);
    let b_conj = vec4<u32>(b.x, fp_neg(b.y), b.z, fp_neg(b.w));
    let n2 = ext8_even_mul(b, b_conj);
    // n2 = c0 + c1 Y^2.
    let norm = fp_sub(fp_square(n2.x), fp_mul(EXT8_W, fp_square(n2.z)));
    let inv_norm = fp_inverse(norm);
    let n2_inv = vec4<u32>(fp_mul(n2.x, inv_norm), 0u, fp_mul(fp_neg(n2.z), inv_norm), 0u);
    // b^-1 = conj(b) n2^-1, then a^-1 = conj(a) b^-1 (b^-1 spread back to even powers of X).
    let b_inv = ext8_even_mul(b_conj, n2_inv);
    let spread = Ext8(vec4<u32>(b_inv.x, 0u, b_inv.y, 0u), vec4<u32>(b_inv.z, 0u, b_inv.w, 0u));
    return ext8_mul(conj, spread);
}
