// #import util/dispatch
// #import field/mul
// #import field/babybear
// #import poseidon2/permutation

// Leaf digests of a row-major matrix: row i -> PaddingFreeSponge<Poseidon2, 16, 8, 8>(row i), as
// Plonky3 hashes Merkle leaves: zero state; each block of 8 overwrites state[0..8] (a short last
// block overwrites only its own positions); permute after each block; digest = state[0..8].

// Rust twin: `LeafParams` in crates/gpu/src/merkle.rs.
struct LeafParams {
    rows: u32,
    width: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(1) var<uniform> params: LeafParams;
@group(0) @binding(2) var<storage, read> matrix: array<u32>;
@group(0) @binding(3) var<storage, read_write> digests: array<vec4<u32>>;

fn element_or(row_start: u32, k: u32, old: u32) -> u32 {
    if (k < params.width) {
        return matrix[row_start + k];
    }
    return old;
}

@compute @workgroup_size(64)
fn hash_leaves(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let row = linear_workgroup_id(wid, num_wgs) * 64u + lid;
    if (row >= params.rows) {
        return;
    }
    let start = row * params.width;
    var st = P2State(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u));
    for (var k = 0u; k < params.width; k += 8u) {
        let a = st.s0;
        let b = st.s1;
        st.s0 = vec4<u32>(
            element_or(start, k, a.x),
            element_or(start, k + 1u, a.y),
            element_or(start, k + 2u, a.z),
            element_or(start, k + 3u, a.w),
        );
        st.s1 = vec4<u32>(
            element_or(start, k + 4u, b.x),
            element_or(start, k + 5u, b.y),
            element_or(start, k + 6u, b.z),
            element_or(start, k + 7u, b.w),
        );
        poseidon2_permute(&st);
    }
    digests[2u * row] = st.s0;
    digests[2u * row + 1u] = st.s1;
}
