// #import util/dispatch
// #import field/mul
// #import field/prime
// #import poseidon2/lanes

// Batch entries over width-16 states with each state spread over 16 invocations
// (poseidon2/lanes.wgsl), 4 states a workgroup: `permute_lanes` writes each permuted state,
// `compress_pairs_lanes` is one Merkle level as `compress_pairs` (poseidon2/permute_batch.wgsl)
// computes it, node i = the first 8 words of the permuted child 2i || child 2i + 1. For levels
// and batches of few states, where one thread's permutation latency is the cost.

const P2L_WORDS: u32 = 64u;

// x: number of states. Rust twin: `[u32; 4]` params in crates/gpu/src/poseidon2.rs and crates/gpu/src/merkle/mod.rs.
@group(0) @binding(1) var<uniform> params: vec4<u32>;
@group(0) @binding(2) var<storage, read> states_in: array<u32>;
@group(0) @binding(3) var<storage, read_write> states_out: array<u32>;

// Element `lane` of state `state`'s permutation (every invocation calls it; states past the
// count permute zeros).
fn permuted_lane(lid: u32, state: u32) -> u32 {
    let lane = lid & 15u;
    var x = 0u;
    if (state < params.x) {
        x = states_in[16u * state + lane];
    }
    return poseidon2_permute_lanes(lid & 48u, lane, x);
}

@compute @workgroup_size(64)
fn permute_lanes(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let state = linear_workgroup_id(wid, num_wgs) * 4u + (lid >> 4u);
    let y = permuted_lane(lid, state);
    if (state < params.x) {
        states_out[16u * state + (lid & 15u)] = y;
    }
}

@compute @workgroup_size(64)
fn compress_pairs_lanes(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let node = linear_workgroup_id(wid, num_wgs) * 4u + (lid >> 4u);
    let y = permuted_lane(lid, node);
    if (node < params.x && (lid & 15u) < 8u) {
        states_out[8u * node + (lid & 15u)] = y;
    }
}
