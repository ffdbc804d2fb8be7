// #import pow/duplex

// The transcript steps that follow a WHIR round's commitment, played on the GPU in the commit's
// own submission: observe the Merkle root, then for each out-of-domain sample draw the point
// (4 samples) and, once its value is computed (sumcheck/ood_tables, then eval), observe the
// value; last, set up the query grind (pow/grind) from the state reached. Each dispatch of this
// one-thread kernel observes `step.observe.y` words and then either draws one point or sets up
// the grind. Plonky3's DuplexChallenger<BabyBear, Poseidon2, 16, 8> exactly: an observe clears
// the output buffer, a full rate is absorbed (pow/duplex), and a sample absorbs pending inputs or
// refills an empty output buffer first, then pops the buffer's last word. The host replays the
// steps with its own challenger and checks every point drawn before using a value.
// Rust twin of the structs: `HeadState` and `OodStep` in crates/gpu/src/sumcheck.rs.

struct OodStep {
    // x: first observed word in `observed`, y: words observed, z: 1 to draw a point into
    // `points[w]`, 0 to set up the grind instead
    observe: vec4<u32>,
    // x: the grind's mask (0: no grind), y: end of its range (from 0)
    grind: vec4<u32>,
}

struct HeadState {
    sponge: array<vec4<u32>, 4>,
    pending: array<vec4<u32>, 2>,
    // x: pending inputs, y: words left in the output buffer
    info: vec4<u32>,
}

@group(0) @binding(1) var<uniform> step: OodStep;
@group(0) @binding(2) var<storage, read_write> head: HeadState;
@group(0) @binding(3) var<storage, read> observed: array<u32>;
@group(0) @binding(4) var<storage, read_write> points: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> params: GrindParams;
@group(0) @binding(6) var<storage, read_write> best: u32;

@compute @workgroup_size(1)
fn ood_step() {
    var d = duplex_load(head.sponge, head.pending, head.info.x);
    var outputs = head.info.y;
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
    head.sponge = duplex_sponge(&d);
    head.pending = duplex_pending(&d);
    head.info = vec4<u32>(d.len, outputs, 0u, 0u);
}
