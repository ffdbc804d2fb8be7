// High half of a 32x32-bit product using native 64-bit integers (adapters with SHADER_INT64).
// One of the two `mulhi` variants; the pipeline builder composes exactly one into each kernel.
fn mulhi(a: u32, b: u32) -> u32 {
    return u32((u64(a) * u64(b)) >> 32u);
}

// hi(a * a) (the emulated variant saves a limb product here; native 64-bit needs no help).
fn mulhi_square(a: u32) -> u32 {
    return mulhi(a, a);
}

// hi(q * p) for BabyBear's p.
fn mulhi_p(q: u32) -> u32 {
    return mulhi(q, BB_P);
}
