//! [`ProofHash`]: the hash of a proof's Merkle trees and transcript, as a proof file names it
//! and the stock verifier checks it ([`Poseidon2`], the default, or [`Keccak`]).

use std::fmt::Debug;

use p3_challenger::{CanObserve, CanSampleUniformBits, FieldChallenger, GrindingChallenger};
use p3_commit::Mmcs;
use p3_symmetric::MerkleCap;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{
    cpu_keccak_mmcs, cpu_mmcs_with, keccak_challenger, CpuKeccakMmcs, CpuMmcs, KeccakChallenger, KeccakDigest, LeafSponge, WhirExtension, WhirField,
    DIGEST_ELEMS,
};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Poseidon2 {}
    impl Sealed for super::Keccak {}
}

/// The hash a proof's Merkle trees and transcript are made with: its digest, Plonky3's MMCS
/// and challenger the stock verifier runs, and what a proof file's header calls it. Sealed:
/// [`Poseidon2`] (the field's Plonky3 default Poseidon2, every proof's before there was a
/// choice) and [`Keccak`] (Plonky3's Keccak tree and Keccak-256 transcript).
pub trait ProofHash<F: WhirField>: Clone + Copy + Debug + Default + PartialEq + Eq + Send + Sync + 'static + sealed::Sealed {
    /// A tree node's digest.
    type Digest: Clone + Copy + Debug + PartialEq + Eq + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// Plonky3's MMCS the verifier opens with.
    type Mmcs: Mmcs<F, Commitment = MerkleCap<F, Self::Digest>, MultiProof: Serialize + DeserializeOwned> + Clone + Send + Sync;
    /// Plonky3's challenger the verifier runs.
    type Challenger: FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F> + CanObserve<MerkleCap<F, Self::Digest>> + Clone;
    /// The hash's name, as `--hash` writes it (`poseidon2`, `keccak`).
    const NAME: &'static str;
    /// The most bytes a digest takes in a proof file (postcard's widest encoding).
    const MAX_DIGEST_BYTES: usize;
    /// Whether leaves may hash with `leaf` (Keccak's leaves are Keccak's: width 16 only stands
    /// for "the default").
    fn hashes_leaves_with(leaf: LeafSponge) -> bool;
    /// The hash id a proof file over `E` with leaves `leaf` names.
    fn file_id<E: WhirExtension<F>>(leaf: LeafSponge) -> String;
    /// Plonky3's MMCS with leaves hashed by `leaf` (cap height 0).
    fn mmcs(leaf: LeafSponge) -> Self::Mmcs;
    /// A fresh challenger, as Plonky3's verifier starts one.
    fn challenger() -> Self::Challenger;
}

/// Proofs over the field's Plonky3 default Poseidon2 of width 16 (leaves of width 16 or 24):
/// the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Poseidon2;

/// Proofs over Plonky3's Keccak configuration ([`CpuKeccakMmcs`], [`KeccakChallenger`]): what
/// an EVM verifier checks cheaply. A file names it as `p3-keccak/<extension>`
/// (`p3-keccak/babybear^4`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Keccak;

/// What a Keccak file's hash id starts with; the extension's name follows.
pub(crate) const KECCAK_ID_PREFIX: &str = "p3-keccak/";

impl<F: WhirField> ProofHash<F> for Poseidon2 {
    type Digest = [F; DIGEST_ELEMS];
    type Mmcs = CpuMmcs<F>;
    type Challenger = crate::StockChallenger<F>;
    const NAME: &'static str = "poseidon2";
    // Plonky3's fields serialize as 4 fixed bytes.
    const MAX_DIGEST_BYTES: usize = 4 * DIGEST_ELEMS;

    fn hashes_leaves_with(_: LeafSponge) -> bool {
        true
    }

    fn file_id<E: WhirExtension<F>>(leaf: LeafSponge) -> String {
        format!("{}{}", E::FILE_ID, leaf.file_suffix())
    }

    fn mmcs(leaf: LeafSponge) -> Self::Mmcs {
        cpu_mmcs_with::<F>(0, leaf)
    }

    fn challenger() -> Self::Challenger {
        crate::StockChallenger::<F>::new(F::permutation())
    }
}

impl<F: WhirField> ProofHash<F> for Keccak {
    type Digest = KeccakDigest;
    type Mmcs = CpuKeccakMmcs<F>;
    type Challenger = KeccakChallenger<F>;
    const NAME: &'static str = "keccak";
    // Four u64 lanes, each a postcard varint of up to 10 bytes.
    const MAX_DIGEST_BYTES: usize = 4 * 10;

    fn hashes_leaves_with(leaf: LeafSponge) -> bool {
        leaf == LeafSponge::Width16
    }

    fn file_id<E: WhirExtension<F>>(_: LeafSponge) -> String {
        format!("{KECCAK_ID_PREFIX}{}", E::NAME)
    }

    fn mmcs(_: LeafSponge) -> Self::Mmcs {
        cpu_keccak_mmcs::<F>(0)
    }

    fn challenger() -> Self::Challenger {
        keccak_challenger::<F>()
    }
}
