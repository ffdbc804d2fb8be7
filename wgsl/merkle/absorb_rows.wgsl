// #import util/dispatch
// #import field/mul
// #import field/prime
// #import poseidon2/permutation
// #import merkle/sponge

// Merkle leaves of a matrix that exists a block of columns at a time (an NTT over one binding,
// run by column blocks): each block's part of row i is absorbed into row i's leaf sponge
// (merkle/sponge.wgsl), whose state is kept in `states` from one block to the next. Every block
// but the last holds a multiple of 8 columns, so the sponge sees the row as it would whole. The
// first block starts from the zero state; the last writes the leaf digests (state[0..8]).

// Rust twin: `AbsorbParams` in crates/gpu/src/merkle.rs.
struct AbsorbParams {
    rows: u32,
    // Columns in this block (the matrix's row length here).
    width: u32,
    first: u32,
    last: u32,
}

@group(0) @binding(1) var<uniform> params: AbsorbParams;
@group(0) @binding(2) var<storage, read> matrix: array<u32>;
// Four vec4s (a 16-word Poseidon2 state) per row.
@group(0) @binding(3) var<storage, read_write> states: array<vec4<u32>>;
// Two vec4s (a digest) per row.
@group(0) @binding(4) var<storage, read_write> leaves: array<vec4<u32>>;

@compute @workgroup_size(64)
fn absorb_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let row = linear_workgroup_id(wid, num_wgs) * 64u + lid;
    if (row >= params.rows) {
        return;
    }
    var st = P2State(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u));
    if (params.first == 0u) {
        st = P2State(states[4u * row], states[4u * row + 1u], states[4u * row + 2u], states[4u * row + 3u]);
    }
    st = sponge_absorb(st, row * params.width, params.width);
    if (params.last != 0u) {
        leaves[2u * row] = st.s0;
        leaves[2u * row + 1u] = st.s1;
    } else {
        states[4u * row] = st.s0;
        states[4u * row + 1u] = st.s1;
        states[4u * row + 2u] = st.s2;
        states[4u * row + 3u] = st.s3;
    }
}
