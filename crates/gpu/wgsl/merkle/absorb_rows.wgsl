// #import util/dispatch
// #import field/mul
// #import field/prime
// #import merkle/leaf

// Merkle leaves of a matrix that exists a block of columns at a time (an NTT over one binding,
// run by column blocks): each block's part of row i is absorbed into row i's leaf sponge
// (merkle/leaf: the width-16 or width-24 sponge), whose state is kept in `states` from one block
// to the next. Every block but the last holds a multiple of the sponge's rate (8 or 16 columns),
// so the sponge sees the row as it would whole. The
// first block starts from the zero state; the last writes the leaf digests (state[0..8]).

// Rust twin: `AbsorbParams` in crates/gpu/src/merkle/mod.rs.
struct AbsorbParams {
    rows: u32,
    // Columns in this block (the matrix's row length here).
    width: u32,
    first: u32,
    last: u32,
}

@group(0) @binding(1) var<uniform> params: AbsorbParams;
@group(0) @binding(2) var<storage, read> matrix: array<u32>;
// LEAF_STATE_VEC4S vec4s (a 16- or 24-word Poseidon2 state) per row.
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
    var st = leaf_zero();
    if (params.first == 0u) {
        var parts: array<vec4<u32>, LEAF_STATE_VEC4S>;
        for (var k = 0u; k < LEAF_STATE_VEC4S; k++) {
            parts[k] = states[LEAF_STATE_VEC4S * row + k];
        }
        st = leaf_state(parts);
    }
    st = leaf_absorb(st, row * params.width, params.width);
    if (params.last != 0u) {
        leaves[2u * row] = st.s0;
        leaves[2u * row + 1u] = st.s1;
    } else {
        for (var k = 0u; k < LEAF_STATE_VEC4S; k++) {
            states[LEAF_STATE_VEC4S * row + k] = leaf_part(st, k);
        }
    }
}
