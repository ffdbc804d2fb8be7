// #import util/dispatch
// #import merkle/node
// #import merkle/leaf

// One level of a Merkle tree over matrices of several heights, as Plonky3's MerkleTree builds
// it (arity 2): node i = compress(child 2i, child 2i + 1) for i < nodes, where compress is
// merkle/node's (TruncatedPermutation<Poseidon2, 2, 8, 16>, or Keccak's in Keccak trees). When shorter matrices join the tree at this level
// (`width` > 0: their rows concatenated, `width` words per row), each node is compressed once
// more with the leaf hash (merkle/leaf) of row i of those matrices: node i = compress(node i, hash(row i)) for
// i < inject_rows, and compress(node i, 0) from there to `nodes` (the default digest). Nodes
// past `nodes` in the output (padding to an even count) are left for the host to zero.

// Rust twin: `InjectParams` in crates/gpu/src/merkle/mod.rs.
struct InjectParams {
    nodes: u32,
    width: u32,
    inject_rows: u32,
    _pad: u32,
}

@group(0) @binding(1) var<uniform> params: InjectParams;
@group(0) @binding(2) var<storage, read> children: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> matrix: array<u32>;
@group(0) @binding(4) var<storage, read_write> parents: array<vec4<u32>>;

@compute @workgroup_size(64)
fn compress_inject(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 64u + lid;
    if (i >= params.nodes) {
        return;
    }
    var node = merkle_compress(children[4u * i], children[4u * i + 1u], children[4u * i + 2u], children[4u * i + 3u]);
    if (params.width > 0u) {
        var lo = vec4<u32>(0u);
        var hi = vec4<u32>(0u);
        if (i < params.inject_rows) {
            let leaf = leaf_row(i * params.width, params.width);
            lo = leaf.s0;
            hi = leaf.s1;
        }
        node = merkle_compress(node.lo, node.hi, lo, hi);
    }
    parents[2u * i] = node.lo;
    parents[2u * i + 1u] = node.hi;
}
