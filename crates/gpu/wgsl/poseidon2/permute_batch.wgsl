// #import util/dispatch
// #import field/mul
// #import field/prime
// #import poseidon2/permutation

// Batch entries over width-16 states, one thread per state:
// `permute_batch` writes each permuted state (16 words); `compress_pairs` is one Merkle level,
// node i = TruncatedPermutation<Poseidon2, 2, 8, 16>(child 2i, child 2i + 1): permute
// left8 || right8 (state i of the child layer) and keep the first 8 words.

// x: number of states. Rust twin: `[u32; 4]` params in crates/gpu/src/poseidon2.rs and crates/gpu/src/merkle/mod.rs.
@group(0) @binding(1) var<uniform> params: vec4<u32>;
@group(0) @binding(2) var<storage, read> states_in: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> states_out: array<vec4<u32>>;

fn permuted_state(i: u32) -> P2State {
    var st = P2State(states_in[4u * i], states_in[4u * i + 1u], states_in[4u * i + 2u], states_in[4u * i + 3u]);
    poseidon2_permute(&st);
    return st;
}

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
    let st = permuted_state(i);
    states_out[4u * i] = st.s0;
    states_out[4u * i + 1u] = st.s1;
    states_out[4u * i + 2u] = st.s2;
    states_out[4u * i + 3u] = st.s3;
}

@compute @workgroup_size(64)
fn compress_pairs(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 64u + lid;
    if (i >= params.x) {
        return;
    }
    let st = permuted_state(i);
    states_out[2u * i] = st.s0;
    states_out[2u * i + 1u] = st.s1;
}
