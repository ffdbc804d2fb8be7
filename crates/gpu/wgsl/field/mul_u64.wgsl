// High half of a 32x32-bit product using native 64-bit integers (adapters with SHADER_INT64).
// One of the two `mulhi` variants; the pipeline builder composes exactly one into each kernel.
fn mulhi(a: u32, b: u32) -> u32 {
    return u32((u64(a) * u64(b)) >> 32u);
}
