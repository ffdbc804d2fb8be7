// Degree-8 binomial extension F[X]/(X^8 - W) (W = EXT8_W from the field's constants), laid out
// as Plonky3's `BinomialExtensionField<F, 8>`: eight Montgomery words, coefficient of X^0 first,
// here as two vec4 (X^0..X^3 in lo, X^4..X^7 in hi); coefficient-wise steps take the halves
// through field/ext4.wgsl's.
// Needs field/prime.wgsl.
// #import field/ext4

struct Ext8 {
    lo: vec4<u32>,
    hi: vec4<u32>,
}

fn ext8_add(a: Ext8, b: Ext8) -> Ext8 {
    return Ext8(ext4_add(a.lo, b.lo), ext4_add(a.hi, b.hi));
}

fn ext8_sub(a: Ext8, b: Ext8) -> Ext8 {
    return Ext8(ext4_sub(a.lo, b.lo), ext4_sub(a.hi, b.hi));
}

fn ext8_neg(a: Ext8) -> Ext8 {
    return Ext8(ext4_neg(a.lo), ext4_neg(a.hi));
}

// Multiply by a base-field element.
fn ext8_scale(a: Ext8, s: u32) -> Ext8 {
    return Ext8(ext4_scale(a.lo, s), ext4_scale(a.hi, s));
}

// The product of two polynomials of degree 3: seven coefficients, X^0..X^3 in lo, X^4..X^6 in hi.
struct Poly7 {
    lo: vec4<u32>,
    hi: vec3<u32>,
}

fn poly4_mul(a: vec4<u32>, b: vec4<u32>) -> Poly7 {
    let c0 = fp_mul(a.x, b.x);
    let c1 = fp_add(fp_mul(a.x, b.y), fp_mul(a.y, b.x));
    let c2 = fp_add(fp_add(fp_mul(a.x, b.z), fp_mul(a.y, b.y)), fp_mul(a.z, b.x));
    let c3 = fp_add(fp_add(fp_mul(a.x, b.w), fp_mul(a.y, b.z)), fp_add(fp_mul(a.z, b.y), fp_mul(a.w, b.x)));
    let c4 = fp_add(fp_add(fp_mul(a.y, b.w), fp_mul(a.z, b.z)), fp_mul(a.w, b.y));
    let c5 = fp_add(fp_mul(a.z, b.w), fp_mul(a.w, b.z));
    let c6 = fp_mul(a.w, b.w);
    return Poly7(vec4<u32>(c0, c1, c2, c3), vec3<u32>(c4, c5, c6));
}

// Karatsuba over the halves (a = a0 + a1 Y, Y = X^4, Y^2 = W): p = a0 b0, q = a1 b1 and
// m = (a0 + a1)(b0 + b1) - p - q, so a b = p + m Y + W q, and the coefficients of X^8.. fold
// back times W. Straight-line code (48 + 7 products): no arrays indexed at run time.
fn ext8_mul(a: Ext8, b: Ext8) -> Ext8 {
    let p = poly4_mul(a.lo, b.lo);
    let q = poly4_mul(a.hi, b.hi);
    let s = poly4_mul(ext4_add(a.lo, a.hi), ext4_add(b.lo, b.hi));
    // m = s - p - q.
    let m_lo = vec4<u32>(
        fp_sub(fp_sub(s.lo.x, p.lo.x), q.lo.x),
        fp_sub(fp_sub(s.lo.y, p.lo.y), q.lo.y),
        fp_sub(fp_sub(s.lo.z, p.lo.z), q.lo.z),
        fp_sub(fp_sub(s.lo.w, p.lo.w), q.lo.w),
    );
    let m_hi = vec3<u32>(
        fp_sub(fp_sub(s.hi.x, p.hi.x), q.hi.x),
        fp_sub(fp_sub(s.hi.y, p.hi.y), q.hi.y),
        fp_sub(fp_sub(s.hi.z, p.hi.z), q.hi.z),
    );
    // X^k for k < 8: p_k + W q_k (q's degrees 8..14 fold to 0..6) + m_(k-4); X^8..X^10 of m Y
    // fold to X^0..X^2 times W.
    return Ext8(
        vec4<u32>(
            fp_add(p.lo.x, fp_mul(fp_add(q.lo.x, m_hi.x), EXT8_W)),
            fp_add(p.lo.y, fp_mul(fp_add(q.lo.y, m_hi.y), EXT8_W)),
            fp_add(p.lo.z, fp_mul(fp_add(q.lo.z, m_hi.z), EXT8_W)),
            fp_add(p.lo.w, fp_mul(q.lo.w, EXT8_W)),
        ),
        vec4<u32>(
            fp_add(fp_add(p.hi.x, fp_mul(q.hi.x, EXT8_W)), m_lo.x),
            fp_add(fp_add(p.hi.y, fp_mul(q.hi.y, EXT8_W)), m_lo.y),
            fp_add(fp_add(p.hi.z, fp_mul(q.hi.z, EXT8_W)), m_lo.z),
            m_lo.w,
        ),
    );
}

fn ext8_square(a: Ext8) -> Ext8 {
    return ext8_mul(a, a);
}

// Product in F[Y]/(Y^4 - W), Y = X^2: the ring the even part of a norm lives in (ext4_mul's
// product with EXT8_W; ext4_mul, on the degree-4 sumcheck's hot path, keeps its own code).
fn ext8_even_mul(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    let p = poly4_mul(a, b);
    return vec4<u32>(fp_add(p.lo.x, fp_mul(p.hi.x, EXT8_W)), fp_add(p.lo.y, fp_mul(p.hi.y, EXT8_W)), fp_add(p.lo.z, fp_mul(p.hi.z, EXT8_W)), p.lo.w);
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
