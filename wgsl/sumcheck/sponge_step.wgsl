// #import pow/duplex

// A duplex-sponge script run on the GPU after work that leaves words to observe (a Merkle root,
// in the same submission as the tree): observe them, then for each of `samples` points draw an
// extension element z (4 samples) and, once f's value at z's univariate expansion is computed
// (sumcheck/power_tables, then eval), observe the value; last, set up a grind (pow/grind) from
// the state reached. Each dispatch of this one-thread kernel observes `step.observe.y` words and
// then either draws one point or sets up the grind. Plonky3's DuplexChallenger<BabyBear,
// Poseidon2, 16, 8> exactly: an observe clears the output buffer, a full rate is absorbed
// (pow/duplex), and a sample absorbs pending inputs or refills an empty output buffer first, then
// pops the buffer's last word. The caller replays the script with its own challenger and checks
// every point drawn before using a value.
// Rust twin of the structs: `SpongeState` and `SpongeStep` in crates/gpu/src/sumcheck.rs.

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

@compute @workgroup_size(1)
fn sponge_step() {
    var d = duplex_load(sponge_state.sponge, sponge_state.pending, sponge_state.info.x);
    var outputs = sponge_state.info.y;
    for (var k = 0u; k < step.observe.y; k++) {
        duplex_observe(&d, observed[step.observe.x + k]);
        // The observe cleared the output buffer; an absorb (nothing left pending) refilled it.
        outputs = select(0u, SPONGE_RATE, d.len == 0u);
    }
    if (step.observe.z == 1u) {
        var z = vec4<u32>(0u);
        for (var c = 0u; c < 4u; c++) {
            if (d.len > 0u || outputs == 0u) {
                duplexing(&d);
                outputs = SPONGE_RATE;
            }
            z[c] = d.state[outputs - 1u];
            outputs -= 1u;
        }
        points[step.observe.w] = z;
    } else if (step.grind.x != 0u) {
        params = grind_params(&d, step.grind.x, step.grind.y);
        best = 0xffffffffu;
    }
    sponge_state.sponge = duplex_sponge(&d);
    sponge_state.pending = duplex_pending(&d);
    sponge_state.info = vec4<u32>(d.len, outputs, 0u, 0u);
}
