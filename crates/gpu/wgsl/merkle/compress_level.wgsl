// #import util/dispatch
// #import merkle/node

// One level of a Merkle tree: node i = merkle_compress(child 2i, child 2i + 1) for i < nodes
// (merkle/node). The Poseidon2 trees' levels run poseidon2/permute_batch.wgsl's `compress_pairs`
// (or its lane-parallel form); this kernel is the level of trees whose node is another hash.

// x: nodes. Rust twin: `[u32; 4]` level params in crates/gpu/src/merkle/build.rs.
@group(0) @binding(1) var<uniform> params: vec4<u32>;
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
    let node = merkle_compress(children[4u * i], children[4u * i + 1u], children[4u * i + 2u], children[4u * i + 3u]);
    parents[2u * i] = node.lo;
    parents[2u * i + 1u] = node.hi;
}
