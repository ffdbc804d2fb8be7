// #import field/ext4

// The extension a field-generic kernel is composed over (the virtual import `field/ext`), here
// the degree-4 one: an element is a vec4<u32> (field/ext4.wgsl), 16 bytes in storage. The
// kernels see only this interface (`Ext`, `ext_*`, `EXT_WORDS`); field/ext_ops8.wgsl is its
// degree-8 twin.

alias Ext = vec4<u32>;
const EXT_WORDS: u32 = 4u;

fn ext_zero() -> Ext {
    return vec4<u32>(0u);
}

fn ext_from_base(a: u32) -> Ext {
    return vec4<u32>(a, 0u, 0u, 0u);
}

// The coefficient of X^0 (tables that carry base-field values in extension slots).
fn ext_c0(a: Ext) -> u32 {
    return a.x;
}

// Coefficient i (of X^i) of an element.
fn ext_word(a: Ext, i: u32) -> u32 {
    return a[i];
}

// An element from a parameter block's two vec4 (X^0..X^3, X^4..X^7): here the first alone.
fn ext_from_halves(lo: vec4<u32>, hi: vec4<u32>) -> Ext {
    return lo;
}

fn ext_add(a: Ext, b: Ext) -> Ext {
    return ext4_add(a, b);
}

fn ext_sub(a: Ext, b: Ext) -> Ext {
    return ext4_sub(a, b);
}

fn ext_mul(a: Ext, b: Ext) -> Ext {
    return ext4_mul(a, b);
}

// Multiply by a base-field element.
fn ext_scale(a: Ext, s: u32) -> Ext {
    return ext4_scale(a, s);
}
