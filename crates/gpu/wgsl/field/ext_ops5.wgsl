// #import field/ext5

// The degree-5 twin of field/ext_ops4.wgsl (the virtual import `field/ext`): BabyBear's binomial
// or KoalaBear's quintic trinomial extension (field/ext5.wgsl). In storage an element is five
// scalar words, 20 bytes, as Plonky3 lays it out (a struct of scalars keeps a stride of 20; the
// arithmetic's Ext5 holds a vec4, whose alignment would pad it to 32).

struct Ext {
    c0: u32,
    c1: u32,
    c2: u32,
    c3: u32,
    c4: u32,
}

const EXT_WORDS: u32 = 5u;

fn ext_to5(a: Ext) -> Ext5 {
    return Ext5(vec4<u32>(a.c0, a.c1, a.c2, a.c3), a.c4);
}

fn ext_of5(a: Ext5) -> Ext {
    return Ext(a.lo.x, a.lo.y, a.lo.z, a.lo.w, a.x4);
}

fn ext_zero() -> Ext {
    return Ext(0u, 0u, 0u, 0u, 0u);
}

fn ext_from_base(a: u32) -> Ext {
    return Ext(a, 0u, 0u, 0u, 0u);
}

fn ext_c0(a: Ext) -> u32 {
    return a.c0;
}

// Coefficient i (of X^i) of an element.
fn ext_word(a: Ext, i: u32) -> u32 {
    var words = array<u32, 5>(a.c0, a.c1, a.c2, a.c3, a.c4);
    return words[i];
}

// Words 0..4 in `lo`, word 4 in `hi.x` (the parameter blocks' `r`, `r_hi`).
fn ext_from_halves(lo: vec4<u32>, hi: vec4<u32>) -> Ext {
    return Ext(lo.x, lo.y, lo.z, lo.w, hi.x);
}

fn ext_add(a: Ext, b: Ext) -> Ext {
    return ext_of5(ext5_add(ext_to5(a), ext_to5(b)));
}

fn ext_sub(a: Ext, b: Ext) -> Ext {
    return ext_of5(ext5_sub(ext_to5(a), ext_to5(b)));
}

fn ext_mul(a: Ext, b: Ext) -> Ext {
    return ext_of5(ext5_mul(ext_to5(a), ext_to5(b)));
}

fn ext_scale(a: Ext, s: u32) -> Ext {
    return ext_of5(ext5_scale(ext_to5(a), s));
}
