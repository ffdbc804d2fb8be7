// #import util/dispatch
// #import field/mul
// #import field/prime
// #import poseidon2/permutation24

// Batch permutation of width-24 states, one thread per state (24 words each).

// x: number of states. Rust twin: `[u32; 4]` params in crates/gpu/src/poseidon2.rs.
@group(0) @binding(1) var<uniform> params: vec4<u32>;
@group(0) @binding(2) var<storage, read> states_in: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> states_out: array<vec4<u32>>;

@compute @workgroup_size(64)
fn permute_batch24(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 64u + lid;
    if (i >= params.x) {
        return;
    }
    let at = 6u * i;
    var st = P2State24(states_in[at], states_in[at + 1u], states_in[at + 2u], states_in[at + 3u], states_in[at + 4u], states_in[at + 5u]);
    poseidon2_permute24(&st);
    states_out[at] = st.s0;
    states_out[at + 1u] = st.s1;
    states_out[at + 2u] = st.s2;
    states_out[at + 3u] = st.s3;
    states_out[at + 4u] = st.s4;
    states_out[at + 5u] = st.s5;
}
