// #import pow/duplex_lanes
// #import sumcheck/chain_state

// The transcript of sumcheck rounds played on the GPU, so a batch of rounds is one submission:
// after each round's reduction `chain_observe` absorbs its two values (h(0), h(inf): 8 words) and
// sets up the round's grind (pow/grind.wgsl, same params layout); after the grind `chain_sample`
// takes the smallest witness, plays `check_witness` (observe the witness, sample the PoW bits)
// and draws the round's challenge (4 samples), which the chained fold binds next. Exactly what
// p3-sumcheck's `ProverTranscript::round` does with a DuplexChallenger; the host replays the
// transcript from the values read back and checks every challenge. A grind that finds no
// witness in its range stops the chain (status 1): later observes, grinds, samples and folds
// return at once (the later rounds' reductions still run, and are ignored), and the host goes
// on round by round from there. One workgroup of TRANSCRIPT_LANES invocations
// (pow/duplex_lanes.wgsl).

@group(0) @binding(1) var<storage, read_write> chain: ChainState;
@group(0) @binding(2) var<storage, read> observed: array<u32>;
@group(0) @binding(3) var<storage, read_write> params: GrindParams;
@group(0) @binding(4) var<storage, read_write> best: u32;

var<workgroup> shared_info: vec4<u32>;
var<workgroup> shared_best: u32;

// `chain.info`, the same value in every invocation.
fn uniform_info(lane: u32) -> vec4<u32> {
    if (lane == 0u) {
        shared_info = chain.info;
    }
    return workgroupUniformLoad(&shared_info);
}

@compute @workgroup_size(TRANSCRIPT_LANES)
fn chain_observe(@builtin(local_invocation_index) lane: u32) {
    let info = uniform_info(lane);
    if (info.y != 0u) {
        // Stopped: the round's grind, next, finds an empty range and returns at once.
        if (lane == 0u && info.w != 0u) {
            params.search = vec4<u32>(0u, info.w, 0u, 0u);
        }
        return;
    }
    // With L < 8 inputs pending, the first 8 - L values complete the rate, which is absorbed
    // (count 8 added to the first capacity slot) and permuted; the last L values are pending.
    let len = info.x;
    var state = words_of(chain.sponge);
    let pending = pending_of(chain.pending, len);
    for (var i = 0u; i < SPONGE_RATE; i++) {
        state[i] = select(observed[(i + SPONGE_RATE - len) % SPONGE_RATE], pending[i], i < len);
    }
    state[SPONGE_RATE] = fp_add(state[SPONGE_RATE], fp_mul(SPONGE_RATE, FP_R2));
    state = transcript_permute(state, lane);
    var left: array<u32, 8>;
    for (var i = 0u; i < SPONGE_RATE; i++) {
        left[i] = select(0u, observed[(SPONGE_RATE - len + i) % SPONGE_RATE], i < len);
    }
    storageBarrier();
    if (lane == 0u) {
        chain.sponge = vec4s_of(state);
        chain.pending = pending_vec4s(left);
        if (info.w != 0u) {
            params = grind_params_of(state, left, len, info.w, chain.range.x);
            best = 0xffffffffu;
        }
    }
}

@compute @workgroup_size(TRANSCRIPT_LANES)
fn chain_sample(@builtin(local_invocation_index) lane: u32) {
    // Both entry points bind the same buffers (one bind group layout).
    _ = observed[0];
    let info = uniform_info(lane);
    if (info.y != 0u) {
        return;
    }
    var r: vec4<u32>;
    if (info.w != 0u) {
        if (lane == 0u) {
            shared_best = best;
        }
        let w = workgroupUniformLoad(&shared_best);
        if (w == 0xffffffffu) {
            if (lane == 0u) {
                chain.info.y = 1u;
            }
            return;
        }
        // check_witness: the witness joins the pending inputs and a sample absorbs them all
        // (the grind's base state), popping output 7 for the PoW check; the challenge pops 6..3.
        var state = words_of(params.base);
        state[params.search.x] = fp_mul(w, FP_R2);
        state = transcript_permute(state, lane);
        storageBarrier();
        if (lane == 0u) {
            chain.sponge = vec4s_of(state);
            chain.pending[0] = vec4<u32>(0u);
            chain.pending[1] = vec4<u32>(0u);
            chain.info.x = 0u;
        }
        r = vec4<u32>(state[6], state[5], state[4], state[3]);
    } else if (info.x == 0u) {
        // The observe that filled the rate left its output buffer full: pop 7..4.
        r = vec4<u32>(chain.sponge[1].w, chain.sponge[1].z, chain.sponge[1].y, chain.sponge[1].x);
        storageBarrier();
    } else {
        // A sample with pending inputs absorbs them first.
        let state = transcript_permute(absorbing(words_of(chain.sponge), pending_of(chain.pending, info.x), info.x), lane);
        storageBarrier();
        if (lane == 0u) {
            chain.sponge = vec4s_of(state);
            chain.info.x = 0u;
        }
        r = vec4<u32>(state[7], state[6], state[5], state[4]);
    }
    if (lane == 0u) {
        chain.r = r;
        chain.info.z = info.z + 1u;
    }
}
