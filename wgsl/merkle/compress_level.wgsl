// #import util/dispatch
// #import field/mul
// #import field/babybear
// #import poseidon2/permutation

// One Merkle level: node i = TruncatedPermutation<Poseidon2, 2, 8, 16>(child 2i, child 2i + 1),
// i.e. permute left8 || right8 and keep the first 8 words.

@group(0) @binding(1) var<uniform> params: vec4<u32>; // x: nodes in this level
@group(0) @binding(2) var<storage, read> children: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> parents: array<vec4<u32>>;

@compute @workgroup_size(64)
fn compress_level(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 64u + lid;
    if (i >= params.x) {
        return;
    }
    var st = P2State(children[4u * i], children[4u * i + 1u], children[4u * i + 2u], children[4u * i + 3u]);
    poseidon2_permute(&st);
    parents[2u * i] = st.s0;
    parents[2u * i + 1u] = st.s1;
}
