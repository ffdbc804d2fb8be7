// #import poseidon2/permutation

// Plonky3's Merkle leaf hash, PaddingFreeSponge<Poseidon2, 16, 8, 8>, of `width` words of the
// importer's `matrix` (a storage array of u32) from `start`: zero state; each block of 8
// overwrites state[0..8] (a short last block overwrites only its own positions); permute after
// each block; the digest is state[0..8].

fn sponge_word_or(start: u32, width: u32, k: u32, old: u32) -> u32 {
    if (k < width) {
        return matrix[start + k];
    }
    return old;
}

fn sponge_row(start: u32, width: u32) -> P2State {
    return sponge_absorb(P2State(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u)), start, width);
}

// The sponge from state `initial` on, absorbing `width` more words from `start`: a row hashed in
// pieces of a multiple of 8 words (all but the last) goes through the same states as whole.
fn sponge_absorb(initial: P2State, start: u32, width: u32) -> P2State {
    var st = initial;
    for (var k = 0u; k < width; k += 8u) {
        let a = st.s0;
        let b = st.s1;
        st.s0 = vec4<u32>(
            sponge_word_or(start, width, k, a.x),
            sponge_word_or(start, width, k + 1u, a.y),
            sponge_word_or(start, width, k + 2u, a.z),
            sponge_word_or(start, width, k + 3u, a.w),
        );
        st.s1 = vec4<u32>(
            sponge_word_or(start, width, k + 4u, b.x),
            sponge_word_or(start, width, k + 5u, b.y),
            sponge_word_or(start, width, k + 6u, b.z),
            sponge_word_or(start, width, k + 7u, b.w),
        );
        poseidon2_permute(&st);
    }
    return st;
}
