//! Plonky3's Keccak configuration (p3-whir's Keccak test, Plonky3's FRI examples): the Merkle
//! tree over `u64` lanes whose leaves absorb the serialized row and whose nodes compress by
//! hashing their two children, and the transcript over Keccak-256 bytes. Proofs over it are
//! checked with the chain's Keccak opcode, which is what an EVM verifier pays for cheaply.

use p3_challenger::{HashChallenger, SerializingChallenger32};
use p3_keccak::{Keccak256Hash, KeccakF};
use p3_merkle_tree::MerkleTreeMmcs;
use p3_symmetric::{CompressionFunctionFromHasher, MerkleCap, PaddingFreeSponge, SerializingHasher};

/// Plonky3's Keccak sponge over `u64` lanes: width 25, rate 17, 4 lanes out.
pub type KeccakU64Sponge = PaddingFreeSponge<KeccakF, 25, 17, 4>;

/// A Keccak tree's digest: 4 lanes (32 bytes).
pub type KeccakDigest = [u64; 4];

/// Plonky3's Keccak MMCS over `F`: leaves hashed by the `u64` sponge over the row serialized
/// to `u64`s, nodes by the same sponge over their two children, binary, digests
/// [`KeccakDigest`].
pub type CpuKeccakMmcs<F> = MerkleTreeMmcs<F, u64, SerializingHasher<KeccakU64Sponge>, CompressionFunctionFromHasher<KeccakU64Sponge, 2, 4>, 2, 4>;

/// A Keccak tree's commitment over `F` (a cap of [`KeccakDigest`]s).
pub type KeccakCommitment<F> = MerkleCap<F, KeccakDigest>;

/// Plonky3's Keccak transcript over `F`: field elements serialized into a Keccak-256 byte
/// challenger.
pub type KeccakChallenger<F> = SerializingChallenger32<F, HashChallenger<u8, Keccak256Hash, 32>>;

/// [`CpuKeccakMmcs`] with cap height `cap_height`.
pub fn cpu_keccak_mmcs<F>(cap_height: usize) -> CpuKeccakMmcs<F> {
    let sponge = KeccakU64Sponge::new(KeccakF);
    CpuKeccakMmcs::new(SerializingHasher::new(sponge), CompressionFunctionFromHasher::new(sponge), cap_height)
}

/// A fresh [`KeccakChallenger`], as Plonky3's verifier starts one.
pub fn keccak_challenger<F: p3_field::PrimeField32>() -> KeccakChallenger<F> {
    KeccakChallenger::<F>::from_hasher(vec![], Keccak256Hash)
}
