// #import pow/duplex_lanes
// #import field/ext
// #import sumcheck/chain_state

// The transcript of sumcheck rounds played on the GPU, so a batch of rounds is one submission:
// after each round's reduction `chain_observe` absorbs its two values (h(0), h(inf): 2 x
// EXT_WORDS words) and sets up the round's grind (pow/grind.wgsl, same params layout); after the
// grind `chain_sample` takes the smallest witness, plays `check_witness` (observe the witness,
// sample the PoW bits) and draws the round's challenge (EXT_WORDS samples), which the chained
// fold binds next. Exactly what p3-sumcheck's `ProverTranscript::round` does with a
// DuplexChallenger, over the extension the kernel is composed for (degree 4, 5 or 8); the host
// replays the transcript from the values read back and checks every challenge. A grind that
// finds no witness in its range stops the chain (status 1): later observes, grinds, samples and
// folds return at once (the later rounds' reductions still run, and are ignored), and the host
// goes on round by round from there. One workgroup of TRANSCRIPT_LANES invocations
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
    // Each value joins the pending inputs; a full rate is absorbed (the count added to the
    // first capacity slot) and permuted. What is left pending after the pair stays pending.
    var state = words_of(chain.sponge);
    var pending = pending_of(chain.pending, info.x);
    var len = info.x;
    for (var k = 0u; k < 2u * EXT_WORDS; k++) {
        pending[len] = observed[k];
        len += 1u;
        if (len == SPONGE_RATE) {
            state = transcript_permute(absorbing(state, pending, len), lane);
            len = 0u;
        }
    }
    var left: array<u32, 8>;
    for (var i = 0u; i < SPONGE_RATE; i++) {
        left[i] = select(0u, pending[i], i < len);
    }
    storageBarrier();
    if (lane == 0u) {
        chain.sponge = vec4s_of(state);
        chain.pending = pending_vec4s(left);
        chain.info.x = len;
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
    var state: array<u32, 16>;
    var pending: array<u32, 8>;
    var len = 0u;
    // Words left in the output buffer, which samples pop from its end.
    var outputs = 0u;
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
        // (the grind's base state), popping output 7 for the PoW check.
        state = words_of(params.base);
        state[params.search.x] = fp_mul(w, FP_R2);
        state = transcript_permute(state, lane);
        outputs = SPONGE_RATE - 1u;
    } else {
        // An observe that ended on a full rate left the output buffer full; one that left
        // inputs pending emptied it (a sample absorbs them first).
        state = words_of(chain.sponge);
        len = info.x;
        pending = pending_of(chain.pending, len);
        outputs = select(0u, SPONGE_RATE, len == 0u);
    }
    // The challenge: EXT_WORDS samples, coefficient c the c-th popped; an empty output buffer
    // (or pending inputs) is refilled by a permutation first.
    var r: array<u32, 8>;
    for (var c = 0u; c < EXT_WORDS; c++) {
        r[c] = duplex_sample(&state, pending, &len, &outputs, lane);
    }
    storageBarrier();
    if (lane == 0u) {
        chain.sponge = vec4s_of(state);
        chain.pending[0] = vec4<u32>(0u);
        chain.pending[1] = vec4<u32>(0u);
        chain.info.x = 0u;
        chain.r[0] = vec4<u32>(r[0], r[1], r[2], r[3]);
        chain.r[1] = vec4<u32>(r[4], r[5], r[6], r[7]);
        chain.info.z = info.z + 1u;
    }
}
