// What a grind searches: the candidate state and the range. Shared by pow/grind (which reads
// it) and pow/prepare (which writes it on the GPU). Rust twin: `GrindParams` in
// crates/gpu/src/grind.rs.
struct GrindParams {
    base: array<vec4<u32>, 4>,
    // x: witness slot, y: mask, z: first candidate, w: end of the range (exclusive, <= p)
    search: vec4<u32>,
}

// One quarter (vec4 k of the 16-word state) with the witness w in `slot`, if the slot is in it.
fn with_witness(base: vec4<u32>, quarter: u32, slot: u32, w: u32) -> vec4<u32> {
    let lanes = vec4<u32>(0u, 1u, 2u, 3u) + vec4<u32>(4u * quarter);
    return select(base, vec4<u32>(w), lanes == vec4<u32>(slot));
}
