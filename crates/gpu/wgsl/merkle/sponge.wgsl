// #import poseidon2/permutation
// #import merkle/leaf_common

// Plonky3's Merkle leaf hash with the width-16 permutation, PaddingFreeSponge<Poseidon2, 16, 8, 8>,
// of `width` words of the importer's `matrix` (a storage array of u32) from `start`: zero state;
// each block of 8 overwrites state[0..8] (a short last block overwrites only its own positions);
// permute after each block; the digest is state[0..8] (`s0`, `s1`).
//
// Kernels import the leaf hash as `merkle/leaf`, which is this file, merkle/sponge24.wgsl (the
// width-24 sponge) or merkle/keccak_leaf.wgsl by the kernel's instance; the Poseidon2 ones give
// the same interface: `LeafState` (with the digest in `s0`, `s1`), `LEAF_RATE`, `LEAF_STATE_VEC4S`,
// `leaf_zero`, `leaf_row`, `leaf_absorb`, `leaf_part` and `leaf_state`; the Keccak one `LeafState`
// and `leaf_row` (no kernel absorbs Keccak rows a column block at a time).

alias LeafState = P2State;
const LEAF_RATE: u32 = 8u;
const LEAF_STATE_VEC4S: u32 = 4u;

fn leaf_zero() -> LeafState {
    return P2State(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u));
}

// The sponge from state `initial` on, absorbing `width` more words from `start`: a row hashed in
// pieces of a multiple of LEAF_RATE words (all but the last) goes through the same states as whole.
fn leaf_absorb(initial: LeafState, start: u32, width: u32) -> LeafState {
    var st = initial;
    for (var k = 0u; k < width; k += LEAF_RATE) {
        st.s0 = leaf_block(start, width, k, st.s0);
        st.s1 = leaf_block(start, width, k + 4u, st.s1);
        poseidon2_permute(&st);
    }
    return st;
}

// vec4 `k` of a state, and a state from its vec4s (for kernels that keep states in storage).
fn leaf_part(st: LeafState, k: u32) -> vec4<u32> {
    switch k {
        case 0u: { return st.s0; }
        case 1u: { return st.s1; }
        case 2u: { return st.s2; }
        default: { return st.s3; }
    }
}

fn leaf_state(p: array<vec4<u32>, LEAF_STATE_VEC4S>) -> LeafState {
    return P2State(p[0], p[1], p[2], p[3]);
}
