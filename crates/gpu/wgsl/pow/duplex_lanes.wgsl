// #import pow/duplex
// #import poseidon2/lanes

// Transcript kernels (sumcheck/chain.wgsl, sumcheck/sponge_step.wgsl) run as one workgroup of
// TRANSCRIPT_LANES invocations (a composed constant, 1 or 16), all playing the same transcript
// on the same values; with 16, each permutation is spread over them (poseidon2/lanes.wgsl),
// since a step's latency is its permutations'. Invocation 0 alone writes storage, after a
// `storageBarrier` (the others may still be reading what it overwrites). Permutations hold
// barriers, so they are reached in uniform control flow: branches on values read from storage
// take those values through `workgroupUniformLoad`.

// One state a workgroup (poseidon2/lanes.wgsl's tiles).
const P2L_WORDS: u32 = 16u;

fn transcript_permute(words: array<u32, 16>, lane: u32) -> array<u32, 16> {
    if (TRANSCRIPT_LANES == 1u) {
        return permuted(words);
    }
    let y = poseidon2_permute_lanes(0u, lane, words[lane]);
    // The permutation's last reads were of the second tile: the first is free.
    p2l_tiles[lane] = y;
    workgroupBarrier();
    var out: array<u32, 16>;
    for (var i = 0u; i < 16u; i++) {
        out[i] = p2l_tiles[i];
    }
    workgroupBarrier();
    return out;
}

// DuplexChallenger::sample: pops the output buffer's last word, after a permutation where inputs
// are pending or the buffer is empty. `len` (pending inputs) and `outputs` (words left in the
// output buffer) stay uniform: they decide when to permute.
fn duplex_sample(state: ptr<function, array<u32, 16>>, pending: array<u32, 8>, len: ptr<function, u32>, outputs: ptr<function, u32>, lane: u32) -> u32 {
    if (*len > 0u || *outputs == 0u) {
        *state = transcript_permute(absorbing(*state, pending, *len), lane);
        *len = 0u;
        *outputs = SPONGE_RATE;
    }
    *outputs -= 1u;
    return (*state)[*outputs];
}

fn words_of(v: array<vec4<u32>, 4>) -> array<u32, 16> {
    var out: array<u32, 16>;
    for (var i = 0u; i < 16u; i++) {
        out[i] = v[i / 4u][i % 4u];
    }
    return out;
}

fn pending_of(v: array<vec4<u32>, 2>, len: u32) -> array<u32, 8> {
    var out: array<u32, 8>;
    for (var i = 0u; i < 8u; i++) {
        out[i] = select(0u, v[i / 4u][i % 4u], i < len);
    }
    return out;
}

fn vec4s_of(words: array<u32, 16>) -> array<vec4<u32>, 4> {
    var out: array<vec4<u32>, 4>;
    for (var i = 0u; i < 16u; i++) {
        out[i / 4u][i % 4u] = words[i];
    }
    return out;
}

fn pending_vec4s(words: array<u32, 8>) -> array<vec4<u32>, 2> {
    var out: array<vec4<u32>, 2>;
    for (var i = 0u; i < 8u; i++) {
        out[i / 4u][i % 4u] = words[i];
    }
    return out;
}
