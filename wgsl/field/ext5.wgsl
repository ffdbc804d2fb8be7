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
