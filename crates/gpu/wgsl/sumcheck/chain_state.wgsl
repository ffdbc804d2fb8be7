// The transcript state a chain of sumcheck rounds carries on the GPU (sumcheck/chain.wgsl plays
// the rounds' transcript steps; the chained folds read the challenge from it). Rust twin:
// `ChainState` in crates/gpu/src/sumcheck/params.rs.
struct ChainState {
    sponge: array<vec4<u32>, 4>,
    pending: array<vec4<u32>, 2>,
    // x: pending inputs; y: status (0: playing, 1: a grind found no witness in its range, and
    // nothing after it ran); z: rounds played; w: PoW mask (0: rounds do not grind)
    info: vec4<u32>,
    // The last challenge drawn (its EXT_WORDS Montgomery words, X^0..X^3 then X^4..X^7, zeros
    // past the degree): what the next fold binds.
    r: array<vec4<u32>, 2>,
    // x: end of each grind's candidate range (from 0)
    range: vec4<u32>,
}
