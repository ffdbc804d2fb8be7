// #import pow/duplex_lanes
// #import field/ext

// A duplex-sponge script run on the GPU after work that leaves words to observe (a Merkle root,
// in the same submission as the tree): observe them, then for each of `samples` points draw an
// extension element z (EXT_WORDS samples; points are stored two vec4 apart, zeros past the
// degree) and, once f's value at z's univariate expansion is computed
// (sumcheck/power_tables, then eval), observe the value; last, set up a grind (pow/grind) from
// the state reached. Each dispatch of this one-thread kernel observes `step.observe.y` words and
// then either draws one point or sets up the grind; it runs as one workgroup of
// TRANSCRIPT_LANES invocations (pow/duplex_lanes.wgsl). Plonky3's DuplexChallenger<BabyBear,
// Poseidon2, 16, 8> exactly: an observe clears the output buffer, a full rate is absorbed
// (pow/duplex), and a sample absorbs pending inputs or refills an empty output buffer first, then
// pops the buffer's last word. The caller replays the script with its own challenger and checks
// every point drawn before using a value.
// Rust twin of the structs: `SpongeState` and `SpongeStep` in crates/gpu/src/sumcheck/params.rs.

struct SpongeStep {
    // x: first observed word in `observed`, y: words observed, z: 1 to draw a point into
    // `points[w]`, 0 to set up the grind instead
    observe: vec4<u32>,
    // x: the grind's mask (0: no grind), y: end of its range (from 0)
    grind: vec4<u32>,
}

struct SpongeState {
    sponge: array<vec4<u32>, 4>,
    pending: array<vec4<u32>, 2>,
    // x: pending inputs, y: words left in the output buffer
    info: vec4<u32>,
}

@group(0) @binding(1) var<uniform> step: SpongeStep;
@group(0) @binding(2) var<storage, read_write> sponge_state: SpongeState;
@group(0) @binding(3) var<storage, read> observed: array<u32>;
@group(0) @binding(4) var<storage, read_write> points: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> params: GrindParams;
@group(0) @binding(6) var<storage, read_write> best: u32;

var<workgroup> shared_info: vec4<u32>;

@compute @workgroup_size(TRANSCRIPT_LANES)
fn sponge_step(@builtin(local_invocation_index) lane: u32) {
    if (lane == 0u) {
        shared_info = sponge_state.info;
    }
    let info = workgroupUniformLoad(&shared_info);
    // The state and pending words are data; their count and the words left in the output
    // buffer decide when to permute, so they stay uniform.
    var state = words_of(sponge_state.sponge);
    var pending = pending_of(sponge_state.pending, info.x);
    var len = info.x;
    var outputs = info.y;
    for (var k = 0u; k < step.observe.y; k++) {
        pending[len] = observed[step.observe.x + k];
        len += 1u;
        if (len == SPONGE_RATE) {
            state = transcript_permute(absorbing(state, pending, len), lane);
            len = 0u;
        }
        // The observe cleared the output buffer; an absorb (nothing left pending) refilled it.
        outputs = select(0u, SPONGE_RATE, len == 0u);
    }
    if (step.observe.z == 1u) {
        var z: array<u32, 8>;
        for (var c = 0u; c < EXT_WORDS; c++) {
            z[c] = duplex_sample(&state, pending, &len, &outputs, lane);
        }
        if (lane == 0u) {
            points[2u * step.observe.w] = vec4<u32>(z[0], z[1], z[2], z[3]);
            points[2u * step.observe.w + 1u] = vec4<u32>(z[4], z[5], z[6], z[7]);
        }
    } else if (step.grind.x != 0u && lane == 0u) {
        params = grind_params_of(state, pending, len, step.grind.x, step.grind.y);
        best = 0xffffffffu;
    }
    storageBarrier();
    if (lane == 0u) {
        sponge_state.sponge = vec4s_of(state);
        sponge_state.pending = pending_vec4s(pending);
        sponge_state.info = vec4<u32>(len, outputs, 0u, 0u);
    }
}
