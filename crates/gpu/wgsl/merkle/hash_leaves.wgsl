// #import util/dispatch
// #import merkle/node
// #import merkle/leaf

// Leaf digests of a row-major matrix, fused with the first tree levels.
//
// Leaves: row i -> the leaf hash of row i, as Plonky3 hashes Merkle leaves (merkle/leaf:
// PaddingFreeSponge<Poseidon2, 16, 8, 8>, with width-24 leaves <Poseidon2-24, 24, 16, 8>, or in
// Keccak trees SerializingHasher<PaddingFreeSponge<KeccakF, 25, 17, 4>>). The leaf layer is written out only if `store_leaves` (a tree may keep
// only its levels from 1 up, rehashing opened rows' siblings from the matrix: merkle/hash_rows).
//
// Then, inside the workgroup, `fused_levels` (<= 6) levels of the tree: node i of a level =
// merkle_compress(child 2i, child 2i + 1) (merkle/node: TruncatedPermutation<Poseidon2, 2, 8,
// 16>, or Keccak's compression in Keccak trees). The workgroup's 64 leaf
// digests stay in workgroup memory, so the first six levels cost no global reads and no extra
// dispatches; every level is still written out (openings read sibling digests from any level).

// Rust twin: `LeafParams` in crates/gpu/src/merkle/mod.rs.
struct LeafParams {
    rows: u32,
    width: u32,
    fused_levels: u32,
    store_leaves: u32,
    // 0: leaf i hashes row i of `matrix`. Otherwise the matrix holds its rows in bit-reversed
    // order over 2^row_bits rows (an NTT's own output order): leaf i, the tree's row
    // row_offset + i, is read from there.
    row_bits: u32,
    row_offset: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(1) var<uniform> params: LeafParams;
@group(0) @binding(2) var<storage, read> matrix: array<u32>;
@group(0) @binding(3) var<storage, read_write> leaves: array<vec4<u32>>;
// (A small placeholder when the leaf layer is not stored.)
// Levels 1..6 (a small placeholder buffer for each level not fused).
@group(0) @binding(4) var<storage, read_write> level1: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> level2: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> level3: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read_write> level4: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read_write> level5: array<vec4<u32>>;
@group(0) @binding(9) var<storage, read_write> level6: array<vec4<u32>>;

// Digest i of the current level: vec4s 2i and 2i + 1.
var<workgroup> tile: array<vec4<u32>, 128>;

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
        var at = row;
        if (params.row_bits != 0u) {
            at = reverseBits(params.row_offset + row) >> (32u - params.row_bits);
        }
        let st = leaf_row(at * params.width, params.width);
        if (params.store_leaves != 0u) {
            leaves[2u * row] = st.s0;
            leaves[2u * row + 1u] = st.s1;
        }
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
            let node = merkle_compress(tile[4u * lid], tile[4u * lid + 1u], tile[4u * lid + 2u], tile[4u * lid + 3u]);
            lo = node.lo;
            hi = node.hi;
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
