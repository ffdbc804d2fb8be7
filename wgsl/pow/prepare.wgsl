// #import pow/duplex
// #import pow/params

// A grind set up on the GPU, so it can run in the same submission as the kernel whose output
// the transcript observes just before grinding (a sumcheck round's two values): one thread
// plays Plonky3's DuplexChallenger<F, Poseidon2, 16, 8>::observe for each observed word
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
    var d = duplex_load(input.sponge, input.pending, input.counts.x);
    for (var k = 0u; k < input.counts.z; k++) {
        duplex_observe(&d, observed[input.counts.y + k]);
    }
    params = grind_params(&d, input.counts.w, input.range.x);
    best = 0xffffffffu;
}
