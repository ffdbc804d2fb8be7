// #import field/mul
// #import field/prime
// #import poseidon2/permutation
// #import pow/params

// Plonky3's DuplexChallenger<F, Poseidon2, 16, 8> (p3-challenger 0.8) on the GPU, for
// kernels that play a transcript step between two kernels of one submission: a sponge state,
// the pending inputs and their count. Observing a value clears the output buffer and buffers the
// value; a full rate is absorbed (duplexing: the inputs overwrite the rate slots, the rest of
// the rate is zeroed, their count is added to the first capacity slot, then the state is
// permuted, and the rate becomes the output buffer, which samples pop from its end).
// Rust reference: crates/gpu/src/grind.rs (`GrindState`) and p3-challenger's duplex_challenger.rs.

const SPONGE_RATE: u32 = 8u;

fn state_from(words: array<u32, 16>) -> P2State {
    return P2State(
        vec4<u32>(words[0], words[1], words[2], words[3]),
        vec4<u32>(words[4], words[5], words[6], words[7]),
        vec4<u32>(words[8], words[9], words[10], words[11]),
        vec4<u32>(words[12], words[13], words[14], words[15]),
    );
}

fn permuted(words: array<u32, 16>) -> array<u32, 16> {
    var st = state_from(words);
    poseidon2_permute(&st);
    var out: array<u32, 16>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = st.s0[i];
        out[4u + i] = st.s1[i];
        out[8u + i] = st.s2[i];
        out[12u + i] = st.s3[i];
    }
    return out;
}

// The state about to be permuted when `n` pending inputs are absorbed: they overwrite the rate,
// the rest of the rate is zeroed and `n` is added to the first capacity slot (nothing changes
// for a squeeze, n = 0).
fn absorbing(state: array<u32, 16>, pending: array<u32, 8>, n: u32) -> array<u32, 16> {
    var out = state;
    if (n > 0u) {
        for (var i = 0u; i < SPONGE_RATE; i++) {
            out[i] = select(0u, pending[i], i < n);
        }
        out[SPONGE_RATE] = fp_add(out[SPONGE_RATE], fp_mul(n, FP_R2));
    }
    return out;
}

// What `GrindState::new` makes of a sponge state with `len` pending inputs: the pending inputs,
// the witness slot after them (left 0), zeros to the rate, and the count of what will be
// absorbed added to the first capacity slot.
fn grind_base_of(state: array<u32, 16>, pending: array<u32, 8>, len: u32) -> array<u32, 16> {
    var base = state;
    for (var i = 0u; i < SPONGE_RATE; i++) {
        base[i] = select(0u, pending[i], i < len);
    }
    base[SPONGE_RATE] = fp_add(base[SPONGE_RATE], fp_mul(len + 1u, FP_R2));
    return base;
}

// The params of a grind from a sponge state with `len` pending inputs (`grind_base_of`):
// witness slot after the pending inputs, `mask`, candidates 0..end.
fn grind_params_of(state: array<u32, 16>, pending: array<u32, 8>, len: u32, mask: u32, end: u32) -> GrindParams {
    let base = grind_base_of(state, pending, len);
    var params: GrindParams;
    for (var i = 0u; i < 16u; i++) {
        params.base[i / 4u][i % 4u] = base[i];
    }
    params.search = vec4<u32>(len, mask, 0u, end);
    return params;
}
