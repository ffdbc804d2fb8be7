// #import field/ext8

// The degree-8 twin of field/ext_ops4.wgsl (the virtual import `field/ext`): an element is an
// Ext8 (field/ext8.wgsl), two vec4, 32 bytes in storage, as Plonky3 lays it out.

alias Ext = Ext8;
const EXT_WORDS: u32 = 8u;

fn ext_zero() -> Ext {
    return Ext8(vec4<u32>(0u), vec4<u32>(0u));
}

fn ext_from_base(a: u32) -> Ext {
    return Ext8(vec4<u32>(a, 0u, 0u, 0u), vec4<u32>(0u));
}

fn ext_c0(a: Ext) -> u32 {
    return a.lo.x;
}

// Coefficient i (of X^i) of an element.
fn ext_word(a: Ext, i: u32) -> u32 {
    if (i < 4u) {
        return a.lo[i];
    }
    return a.hi[i - 4u];
}

fn ext_from_halves(lo: vec4<u32>, hi: vec4<u32>) -> Ext {
    return Ext8(lo, hi);
}

fn ext_add(a: Ext, b: Ext) -> Ext {
    return ext8_add(a, b);
}

fn ext_sub(a: Ext, b: Ext) -> Ext {
    return ext8_sub(a, b);
}

fn ext_mul(a: Ext, b: Ext) -> Ext {
    return ext8_mul(a, b);
}

fn ext_scale(a: Ext, s: u32) -> Ext {
    return ext8_scale(a, s);
}
