//! The hash and Merkle types of every proof: Plonky3's default BabyBear Poseidon2 (width 16),
//! its padding-free sponge for leaves, its truncated permutation for nodes, and the
//! `MerkleTreeMmcs` they make (binary, 8-element digests).

use p3_baby_bear::{default_babybear_poseidon2_16, BabyBear, Poseidon2BabyBear};
use p3_field::Field;
use p3_merkle_tree::MerkleTreeMmcs;
use p3_symmetric::{PaddingFreeSponge, TruncatedPermutation};

/// Digest width in field elements.
pub const DIGEST_ELEMS: usize = 8;
/// The permutation.
pub type Perm = Poseidon2BabyBear<16>;
/// Plonky3's leaf hash for this MMCS.
pub type LeafHash = PaddingFreeSponge<Perm, 16, 8, 8>;
/// Plonky3's node compression for this MMCS.
pub type NodeCompress = TruncatedPermutation<Perm, 2, 8, 16>;
type Packed = <BabyBear as Field>::Packing;
/// The Plonky3 MMCS every proof commits with (and the GPU's is identical to).
pub type CpuMmcs = MerkleTreeMmcs<Packed, Packed, LeafHash, NodeCompress, 2, DIGEST_ELEMS>;

/// The Poseidon2 permutation every proof uses (Plonky3's default BabyBear constants).
pub fn permutation() -> Perm {
    default_babybear_poseidon2_16()
}

/// The MMCS over [`permutation`] with cap height `cap_height`.
pub fn cpu_mmcs(cap_height: usize) -> CpuMmcs {
    let perm = permutation();
    CpuMmcs::new(LeafHash::new(perm.clone()), NodeCompress::new(perm), cap_height)
}
