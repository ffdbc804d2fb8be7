// #import util/dispatch
// #import field/mul
// #import field/babybear
// #import poseidon2/permutation

// Leaf digests of a row-major matrix, fused with the first tree levels.
//
// Leaves: row i -> PaddingFreeSponge<Poseidon2, 16, 8, 8>(row i), as Plonky3 hashes Merkle leaves:
// zero state; each block of 8 overwrites state[0..8] (a short last block overwrites only its own
// positions); permute after each block; digest = state[0..8].
//
// Then, inside the workgroup, `fused_levels` (<= 6) levels of the tree: node i of a level =
// TruncatedPermutation<Poseidon2, 2, 8, 16>(child 2i || child 2i + 1). The workgroup's 64 leaf
// digests stay in workgroup memory, so the first six levels cost no global reads and no extra
// dispatches; every level is still written out (openings read sibling digests from any level).

// Rust twin: `LeafParams` in crates/gpu/src/merkle.rs.
struct LeafParams {
    rows: u32,
    width: u32,
    fused_levels: u32,
    _pad: u32,
}

@group(0) @binding(1) var<uniform> params: LeafParams;
@group(0) @binding(2) var<storage, read> matrix: array<u32>;
@group(0) @binding(3) var<storage, read_write> leaves: array<vec4<u32>>;
// Levels 1..6 (a small placeholder buffer for each level not fused).
@group(0) @binding(4) var<storage, read_write> level1: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> level2: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> level3: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read_write> level4: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read_write> level5: array<vec4<u32>>;
@group(0) @binding(9) var<storage, read_write> level6: array<vec4<u32>>;

// Digest i of the current level: vec4s 2i and 2i + 1.
var<workgroup> tile: array<vec4<u32>, 128>;

fn element_or(row_start: u32, k: u32, old: u32) -> u32 {
    if (k < params.width) {
        return matrix[row_start + k];
    }
    return old;
}

fn hash_row(row: u32) -> P2State {
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
    return st;
}

fn store_node(level: u32, index: u32, lo: vec4<u32>, hi: vec4<u32>) {
    switch level {
        case 1u: { level1[2u * index] = lo; level1[2u * index + 1u] = hi; }
        case 2u: { level2[2u * index] = lo; level2[2u * index + 1u] = hi; }
        case 3u: { level3[2u * index] = lo; level3[2u * index + 1u] = hi; }
        case 4u: { level4[2u * index] = lo; level4[2u * index + 1u] = hi; }
        case 5u: { level5[2u * index] = lo; level5[2u * index + 1u] = hi; }
        case 6u: { level6[2u * index] = lo; level6[2u * index + 1u] = hi; }
        default: {}
    }
}

@compute @workgroup_size(64)
fn hash_leaves(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let group = linear_workgroup_id(wid, num_wgs);
    let row = group * 64u + lid;
    if (row < params.rows) {
        let st = hash_row(row);
        leaves[2u * row] = st.s0;
        leaves[2u * row + 1u] = st.s1;
        tile[2u * lid] = st.s0;
        tile[2u * lid + 1u] = st.s1;
    }
    // Level k has 64 >> k nodes per workgroup (fewer when the tree is smaller than a workgroup).
    for (var level = 1u; level <= params.fused_levels; level++) {
        workgroupBarrier();
        let per_group = 64u >> level;
        let node = group * per_group + lid;
        let in_tree = lid < per_group && node < (params.rows >> level);
        var lo = vec4<u32>(0u);
        var hi = vec4<u32>(0u);
        if (in_tree) {
            var st = P2State(tile[4u * lid], tile[4u * lid + 1u], tile[4u * lid + 2u], tile[4u * lid + 3u]);
            poseidon2_permute(&st);
            lo = st.s0;
            hi = st.s1;
        }
        // Everyone has read its children before anyone overwrites the tile.
        workgroupBarrier();
        if (in_tree) {
            tile[2u * lid] = lo;
            tile[2u * lid + 1u] = hi;
            store_node(level, node, lo, hi);
        }
    }
}
