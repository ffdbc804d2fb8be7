// #import field/mul
// #import field/babybear
// #import poseidon2/permutation
// #import pow/params

// A grind set up on the GPU, so it can run in the same submission as the kernel whose output
// the transcript observes just before grinding (a sumcheck round's two values): one thread
// plays Plonky3's DuplexChallenger<BabyBear, Poseidon2, 16, 8>::observe for each observed word
// from the sponge state the host passes, then writes what `GrindState::new` would make of the
// state reached (crates/gpu/src/grind.rs) as the grind's params, and resets `best`.
//
// Duplexing (p3-challenger 0.8): the pending inputs overwrite the rate slots, the rest of the
// rate is zeroed, their count is added to the first capacity slot, then the state is permuted.
// The host checks the state this kernel reached against its own before using the witness.

struct PrepareInput {
    sponge: array<vec4<u32>, 4>,
    pending: array<vec4<u32>, 2>,
    // x: pending inputs, y: first observed word, z: observed words, w: mask
    counts: vec4<u32>,
    // x: end of the range searched (from 0)
    range: vec4<u32>,
}

@group(0) @binding(1) var<uniform> input: PrepareInput;
@group(0) @binding(2) var<storage, read> observed: array<u32>;
@group(0) @binding(3) var<storage, read_write> params: GrindParams;
@group(0) @binding(4) var<storage, read_write> best: u32;

const SPONGE_RATE: u32 = 8u;

fn state_from(words: array<u32, 16>) -> P2State {
    return P2State(
        vec4<u32>(words[0], words[1], words[2], words[3]),
        vec4<u32>(words[4], words[5], words[6], words[7]),
        vec4<u32>(words[8], words[9], words[10], words[11]),
        vec4<u32>(words[12], words[13], words[14], words[15]),
    );
}

@compute @workgroup_size(1)
fn grind_prepare() {
    var state: array<u32, 16>;
    for (var i = 0u; i < 16u; i++) {
        state[i] = input.sponge[i / 4u][i % 4u];
    }
    var pending: array<u32, 8>;
    var len = input.counts.x;
    for (var i = 0u; i < len; i++) {
        pending[i] = input.pending[i / 4u][i % 4u];
    }
    for (var k = 0u; k < input.counts.z; k++) {
        pending[len] = observed[input.counts.y + k];
        len += 1u;
        if (len == SPONGE_RATE) {
            // A full rate: every rate slot is overwritten, nothing to zero.
            for (var i = 0u; i < SPONGE_RATE; i++) {
                state[i] = pending[i];
            }
            state[SPONGE_RATE] = bb_add(state[SPONGE_RATE], bb_mul(SPONGE_RATE, BB_R2));
            var st = state_from(state);
            poseidon2_permute(&st);
            for (var i = 0u; i < 4u; i++) {
                state[i] = st.s0[i];
                state[4u + i] = st.s1[i];
                state[8u + i] = st.s2[i];
                state[12u + i] = st.s3[i];
            }
            len = 0u;
        }
    }
    // GrindState::new: pending inputs, the witness slot after them, zeros, and the count of
    // what will be absorbed (inputs and witness) added to the first capacity slot.
    for (var i = 0u; i < SPONGE_RATE; i++) {
        state[i] = select(0u, pending[i], i < len);
    }
    state[SPONGE_RATE] = bb_add(state[SPONGE_RATE], bb_mul(len + 1u, BB_R2));
    for (var i = 0u; i < 16u; i++) {
        params.base[i / 4u][i % 4u] = state[i];
    }
    params.search = vec4<u32>(len, input.counts.w, 0u, input.range.x);
    best = 0xffffffffu;
}
