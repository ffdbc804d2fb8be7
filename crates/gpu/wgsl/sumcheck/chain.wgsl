// #import pow/duplex_lanes
// #import field/ext
// #import sumcheck/chain_state

// The transcript of sumcheck rounds played on the GPU, so a batch of rounds is one submission:
// after each round's reduction `chain_observe` absorbs its two values (h(0), h(inf): 2 x
// EXT_WORDS words; `chain_observe_wire` absorbs them moved by known terms, with known values
// after them) and sets up the round's grind (pow/grind.wgsl, same params layout); after the
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
    var words: array<u32, MAX_OBSERVED_WORDS>;
    for (var k = 0u; k < 2u * EXT_WORDS; k++) {
        words[k] = observed[k];
    }
    observe_words(lane, info, words, 2u * EXT_WORDS);
}

// A round that observes its pair moved by known terms (the Rust side's `ChainWire`): with s
// the wire's scale, round j observes
//     (at_zero_j + s·h(0) + share_j·Σ_{l<j} poly_l(r_l),  at_inf_j + s·h(inf),  rest_j...)
// where r_l is round l's challenge: the sum is kept in `wire[1]`, each round first adding the
// previous round's polynomial at the challenge the chain state holds.
// `wire`: [scale, running sum, then per round: at_zero, at_inf, share, rest (cfg.rest values),
// poly (cfg.poly coefficients, lowest first)]. Rust twin of the params: `ChainWireParams` in
// crates/gpu/src/sumcheck/params.rs.
struct ChainWireParams {
    // Values observed after the pair's two.
    rest: u32,
    // Coefficients of each round's polynomial.
    poly: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(5) var<storage, read_write> wire: array<Ext>;
@group(0) @binding(6) var<uniform> wire_cfg: ChainWireParams;

@compute @workgroup_size(TRANSCRIPT_LANES)
fn chain_observe_wire(@builtin(local_invocation_index) lane: u32) {
    let info = uniform_info(lane);
    let pair = array<Ext, 2>(ext_from_words(0u), ext_from_words(EXT_WORDS));
    let j = info.z;
    let block = 3u + wire_cfg.rest + wire_cfg.poly;
    let at = 2u + j * block;
    var sum = wire[1];
    if (j > 0u && info.y == 0u) {
        let r = ext_from_halves(chain.r[0], chain.r[1]);
        let poly = 2u + (j - 1u) * block + 3u + wire_cfg.rest;
        var value = ext_zero();
        for (var c = wire_cfg.poly; c > 0u; c--) {
            value = ext_add(ext_mul(value, r), wire[poly + c - 1u]);
        }
        sum = ext_add(sum, value);
    }
    let scale = wire[0];
    var values: array<Ext, MAX_OBSERVED_VALUES>;
    values[0] = ext_add(ext_add(wire[at], ext_mul(scale, pair[0])), ext_mul(wire[at + 2u], sum));
    values[1] = ext_add(wire[at + 1u], ext_mul(scale, pair[1]));
    let count = min(2u + wire_cfg.rest, MAX_OBSERVED_VALUES);
    for (var k = 2u; k < count; k++) {
        values[k] = wire[at + 3u + k - 2u];
    }
    var words: array<u32, MAX_OBSERVED_WORDS>;
    for (var k = 0u; k < count * EXT_WORDS; k++) {
        words[k] = ext_word(values[k / EXT_WORDS], k % EXT_WORDS);
    }
    // Every invocation has read the running sum before invocation 0 writes it.
    storageBarrier();
    if (lane == 0u && info.y == 0u) {
        wire[1] = sum;
    }
    observe_words(lane, info, words, count * EXT_WORDS);
}

// Most values and words a round observes (the wire's pair and rest).
const MAX_OBSERVED_VALUES: u32 = 8u;
const MAX_OBSERVED_WORDS: u32 = 64u;

// Element at word `at` of `observed`.
fn ext_from_words(at: u32) -> Ext {
    var lo = vec4<u32>(0u);
    var hi = vec4<u32>(0u);
    for (var c = 0u; c < EXT_WORDS; c++) {
        if (c < 4u) {
            lo[c] = observed[at + c];
        } else {
            hi[c - 4u] = observed[at + c];
        }
    }
    return ext_from_halves(lo, hi);
}

// A round's observe: `count` words join the pending inputs (a full rate absorbed, the count
// added to the first capacity slot, and permuted; what is left stays pending), and the round's
// grind is set up.
fn observe_words(lane: u32, info: vec4<u32>, words: array<u32, MAX_OBSERVED_WORDS>, count: u32) {
    if (info.y != 0u) {
        // Stopped: the round's grind, next, finds an empty range and returns at once.
        if (lane == 0u && info.w != 0u) {
            params.search = vec4<u32>(0u, info.w, 0u, 0u);
        }
        return;
    }
    var state = words_of(chain.sponge);
    var pending = pending_of(chain.pending, info.x);
    var len = info.x;
    for (var k = 0u; k < count; k++) {
        pending[len] = words[k];
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
