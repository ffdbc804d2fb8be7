// #import poseidon2/permutation24
// #import merkle/leaf_common

// Plonky3's Merkle leaf hash with the width-24 permutation, PaddingFreeSponge<Poseidon2, 24, 16,
// 8> (a wider sponge: half the permutations per row), of `width` words of the importer's `matrix`
// from `start`: zero state; each block of 16 overwrites state[0..16] (a short last block only its
// own positions); permute after each block; the digest is state[0..8] (`s0`, `s1`). The
// interface of merkle/sponge.wgsl, which says how kernels import it.

alias LeafState = P2State24;
const LEAF_RATE: u32 = 16u;
const LEAF_STATE_VEC4S: u32 = 6u;

fn leaf_zero() -> LeafState {
    return P2State24(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u));
}

// As in merkle/sponge.wgsl, with blocks of 16 words.
fn leaf_absorb(initial: LeafState, start: u32, width: u32) -> LeafState {
    var st = initial;
    for (var k = 0u; k < width; k += LEAF_RATE) {
        st.s0 = leaf_block(start, width, k, st.s0);
        st.s1 = leaf_block(start, width, k + 4u, st.s1);
        st.s2 = leaf_block(start, width, k + 8u, st.s2);
        st.s3 = leaf_block(start, width, k + 12u, st.s3);
        poseidon2_permute24(&st);
    }
    return st;
}

fn leaf_part(st: LeafState, k: u32) -> vec4<u32> {
    switch k {
        case 0u: { return st.s0; }
        case 1u: { return st.s1; }
        case 2u: { return st.s2; }
        case 3u: { return st.s3; }
        case 4u: { return st.s4; }
        default: { return st.s5; }
    }
}

fn leaf_state(p: array<vec4<u32>, LEAF_STATE_VEC4S>) -> LeafState {
    return P2State24(p[0], p[1], p[2], p[3], p[4], p[5]);
}
