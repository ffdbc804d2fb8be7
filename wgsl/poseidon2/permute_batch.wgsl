// #import util/dispatch
// #import field/mul
// #import field/babybear
// #import poseidon2/permutation

// Batch entry: permutes `count` width-16 states, one thread per state, in place of the output.

// Rust twin: `[u32; 4]` params in crates/gpu/src/poseidon2.rs (count, pad).
@group(0) @binding(1) var<uniform> params: vec4<u32>;
@group(0) @binding(2) var<storage, read> states_in: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> states_out: array<vec4<u32>>;

@compute @workgroup_size(64)
fn permute_batch(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 64u + lid;
    if (i >= params.x) {
        return;
    }
    var st = P2State(states_in[4u * i], states_in[4u * i + 1u], states_in[4u * i + 2u], states_in[4u * i + 3u]);
    poseidon2_permute(&st);
    states_out[4u * i] = st.s0;
    states_out[4u * i + 1u] = st.s1;
    states_out[4u * i + 2u] = st.s2;
    states_out[4u * i + 3u] = st.s3;
}
