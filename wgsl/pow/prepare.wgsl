// #import pow/duplex
// #import pow/params

// A grind set up on the GPU, so it can run in the same submission as the kernel whose output
// the transcript observes just before grinding (a sumcheck round's two values): one thread
// plays Plonky3's DuplexChallenger<BabyBear, Poseidon2, 16, 8>::observe for each observed word
// from the sponge state the host passes, then writes what `GrindState::new` would make of the
// state reached (crates/gpu/src/grind.rs) as the grind's params, and resets `best`.
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

@compute @workgroup_size(1)
fn grind_prepare() {
    var d: Duplex;
    for (var i = 0u; i < 16u; i++) {
        d.state[i] = input.sponge[i / 4u][i % 4u];
    }
    d.len = input.counts.x;
    for (var i = 0u; i < d.len; i++) {
        d.pending[i] = input.pending[i / 4u][i % 4u];
    }
    for (var k = 0u; k < input.counts.z; k++) {
        duplex_observe(&d, observed[input.counts.y + k]);
    }
    let base = grind_base(&d);
    for (var i = 0u; i < 16u; i++) {
        params.base[i / 4u][i % 4u] = base[i];
    }
    params.search = vec4<u32>(d.len, input.counts.w, 0u, input.range.x);
    best = 0xffffffffu;
}
