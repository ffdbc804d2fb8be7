// Degree-5 extensions, laid out as Plonky3's: five Montgomery words, coefficient of X^0 first,
// here X^0..X^3 in a vec4 and X^4 alone. The modulus is the field's (its constants): BabyBear's
// binomial X^5 - W (`BinomialExtensionField<BabyBear, 5>`, W = EXT5_W) or KoalaBear's trinomial
// X^5 + X^2 - 1 (`QuinticTrinomialExtensionField<KoalaBear>`), as EXT5_TRINOMIAL says.
// Needs field/prime.wgsl.

struct Ext5 {
    lo: vec4<u32>,
    x4: u32,
}

fn ext5_add(a: Ext5, b: Ext5) -> Ext5 {
    return Ext5(vec4<u32>(fp_add(a.lo.x, b.lo.x), fp_add(a.lo.y, b.lo.y), fp_add(a.lo.z, b.lo.z), fp_add(a.lo.w, b.lo.w)), fp_add(a.x4, b.x4));
}

fn ext5_sub(a: Ext5, b: Ext5) -> Ext5 {
    return Ext5(vec4<u32>(fp_sub(a.lo.x, b.lo.x), fp_sub(a.lo.y, b.lo.y), fp_sub(a.lo.z, b.lo.z), fp_sub(a.lo.w, b.lo.w)), fp_sub(a.x4, b.x4));
}

fn ext5_neg(a: Ext5) -> Ext5 {
    return Ext5(vec4<u32>(fp_neg(a.lo.x), fp_neg(a.lo.y), fp_neg(a.lo.z), fp_neg(a.lo.w)), fp_neg(a.x4));
}

// The schoolbook product's nine coefficients, reduced by the field's modulus.
fn ext5_mul(a: Ext5, b: Ext5) -> Ext5 {
    let x = array<u32, 5>(a.lo.x, a.lo.y, a.lo.z, a.lo.w, a.x4);
    let y = array<u32, 5>(b.lo.x, b.lo.y, b.lo.z, b.lo.w, b.x4);
    var d = array<u32, 9>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
    for (var i = 0u; i < 5u; i++) {
        for (var j = 0u; j < 5u; j++) {
            d[i + j] = fp_add(d[i + j], fp_mul(x[i], y[j]));
        }
    }
    if (EXT5_TRINOMIAL) {
        // X^5 = 1 - X^2, from the top: d_k X^k = d_k X^(k-5) - d_k X^(k-3).
        for (var k = 8u; k >= 5u; k--) {
            d[k - 5u] = fp_add(d[k - 5u], d[k]);
            d[k - 3u] = fp_sub(d[k - 3u], d[k]);
        }
    } else {
        // X^5 = W.
        for (var k = 0u; k < 4u; k++) {
            d[k] = fp_add(d[k], fp_mul(d[k + 5u], EXT5_W));
        }
    }
    return Ext5(vec4<u32>(d[0], d[1], d[2], d[3]), d[4]);
}

fn ext5_square(a: Ext5) -> Ext5 {
    return ext5_mul(a, a);
}

// a * s for s in the base field.
fn ext5_scale(a: Ext5, s: u32) -> Ext5 {
    return Ext5(vec4<u32>(fp_mul(a.lo.x, s), fp_mul(a.lo.y, s), fp_mul(a.lo.z, s), fp_mul(a.lo.w, s)), fp_mul(a.x4, s));
}

// a^p: sum of a_k X^(p k), with X^(p k) from the field's constants.
fn ext5_frobenius(a: Ext5) -> Ext5 {
    var r = Ext5(vec4<u32>(a.lo.x, 0u, 0u, 0u), 0u);
    r = ext5_add(r, ext5_scale(Ext5(EXT5_FROB1, EXT5_FROB1_X4), a.lo.y));
    r = ext5_add(r, ext5_scale(Ext5(EXT5_FROB2, EXT5_FROB2_X4), a.lo.z));
    r = ext5_add(r, ext5_scale(Ext5(EXT5_FROB3, EXT5_FROB3_X4), a.lo.w));
    return ext5_add(r, ext5_scale(Ext5(EXT5_FROB4, EXT5_FROB4_X4), a.x4));
}

// a^-1 = (a^p a^(p^2) a^(p^3) a^(p^4)) / N(a), N(a) = a^(1 + p + ... + p^4) in the base field.
// The inverse of 0 is returned as 0 (callers must not rely on it).
fn ext5_inverse(a: Ext5) -> Ext5 {
    let f1 = ext5_frobenius(a);
    let f2 = ext5_frobenius(f1);
    let f3 = ext5_frobenius(f2);
    let f4 = ext5_frobenius(f3);
    let others = ext5_mul(ext5_mul(f1, f2), ext5_mul(f3, f4));
    let norm = ext5_mul(a, others).lo.x;
    return ext5_scale(others, fp_inverse(norm));
}
