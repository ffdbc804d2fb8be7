// #import pow/duplex_lanes
// #import pow/params

// A grind set up on the GPU, so it can run in the same submission as the kernel whose output
// the transcript observes just before grinding (a sumcheck round's two values): one workgroup
// of TRANSCRIPT_LANES invocations (pow/duplex_lanes.wgsl) plays Plonky3's DuplexChallenger<F, Poseidon2, 16, 8>::observe for each observed word
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

@compute @workgroup_size(TRANSCRIPT_LANES)
fn grind_prepare(@builtin(local_invocation_index) lane: u32) {
    // Everything deciding when to permute comes from the uniform `input`.
    var state = words_of(input.sponge);
    var pending = pending_of(input.pending, input.counts.x);
    var len = input.counts.x;
    for (var k = 0u; k < input.counts.z; k++) {
        pending[len] = observed[input.counts.y + k];
        len += 1u;
        if (len == SPONGE_RATE) {
            state = transcript_permute(absorbing(state, pending, len), lane);
            len = 0u;
        }
    }
    if (lane == 0u) {
        params = grind_params_of(state, pending, len, input.counts.w, input.range.x);
        best = 0xffffffffu;
    }
}
