// #import keccak/f

// A node of Plonky3's Keccak Merkle tree, CompressionFunctionFromHasher<PaddingFreeSponge<KeccakF,
// 25, 17, 4>, 2, 4>: the children's 8 lanes (each digest 4 lanes, a lane two words, low first)
// in a zero state, KeccakF, the first 4 lanes kept. The interface of merkle/node_poseidon2.wgsl,
// which says how kernels import it.

struct MerkleNode {
    lo: vec4<u32>,
    hi: vec4<u32>,
}

fn merkle_compress(l0: vec4<u32>, l1: vec4<u32>, r0: vec4<u32>, r1: vec4<u32>) -> MerkleNode {
    var s: array<Lane, 25>;
    s[0] = lane_of(l0.x, l0.y);
    s[1] = lane_of(l0.z, l0.w);
    s[2] = lane_of(l1.x, l1.y);
    s[3] = lane_of(l1.z, l1.w);
    s[4] = lane_of(r0.x, r0.y);
    s[5] = lane_of(r0.z, r0.w);
    s[6] = lane_of(r1.x, r1.y);
    s[7] = lane_of(r1.z, r1.w);
    keccak_f(&s);
    let a = lane_words(s[0]);
    let b = lane_words(s[1]);
    let c = lane_words(s[2]);
    let d = lane_words(s[3]);
    return MerkleNode(vec4<u32>(a, b), vec4<u32>(c, d));
}
