// #import field/mul
// #import field/prime
// #import poseidon2/permutation

// A node of a Poseidon2 Merkle tree, TruncatedPermutation<Poseidon2, 2, 8, 16>: the width-16
// permutation of the left child's 8 words then the right child's, the first 8 words kept.
//
// Kernels import the node compression as `merkle/node`, which is this file or
// merkle/node_keccak.wgsl by the kernel's instance; both give `MerkleNode` and `merkle_compress`.

struct MerkleNode {
    lo: vec4<u32>,
    hi: vec4<u32>,
}

// The parent of children (l0, l1) and (r0, r1), each digest as two vec4s.
fn merkle_compress(l0: vec4<u32>, l1: vec4<u32>, r0: vec4<u32>, r1: vec4<u32>) -> MerkleNode {
    var st = P2State(l0, l1, r0, r1);
    poseidon2_permute(&st);
    return MerkleNode(st.s0, st.s1);
}
