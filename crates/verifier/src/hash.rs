//! The fields proofs are made over and the hash and Merkle types of every proof: Plonky3's
//! default Poseidon2 of the field, its padding-free sponge for leaves (over width 16 by
//! default, or width 24: [`LeafSponge`]), its truncated width-16 permutation for nodes, and the
//! `MerkleTreeMmcs` they make (binary, 8-element digests).

use p3_baby_bear::{default_babybear_poseidon2_16, default_babybear_poseidon2_24, BabyBear, Poseidon2BabyBear};
use p3_field::extension::{BinomialExtensionField, BinomiallyExtendable, HasTwoAdicBinomialExtension, QuinticTrinomialExtensionField};
use p3_field::{ExtensionField, Field, PrimeField32, TwoAdicField, UniformSamplingField};

use p3_koala_bear::{default_koalabear_poseidon2_16, default_koalabear_poseidon2_24, KoalaBear, Poseidon2KoalaBear};
use p3_merkle_tree::MerkleTreeMmcs;
use p3_symmetric::{CryptographicHasher, CryptographicPermutation, PaddingFreeSponge, TruncatedPermutation};
use serde::{Deserialize, Serialize};

mod keccak;
mod proof_hash;
pub use keccak::{cpu_keccak_mmcs, keccak_challenger, CpuKeccakMmcs, KeccakChallenger, KeccakCommitment, KeccakDigest, KeccakU64Sponge};
pub(crate) use proof_hash::KECCAK_ID_PREFIX;
pub use proof_hash::{Keccak, Poseidon2, ProofHash};

/// Digest width in field elements.
pub const DIGEST_ELEMS: usize = 8;

mod sealed {
    pub trait Sealed {}
    impl Sealed for p3_baby_bear::BabyBear {}
    impl Sealed for p3_koala_bear::KoalaBear {}
    pub trait SealedExtension {}
}

/// A base field WHIR proofs are made over, with its degree-4 extension for the challenges and
/// Plonky3's default Poseidon2 of width 16 for the Merkle trees and the transcript: BabyBear
/// (BabyBear^4, the default) or KoalaBear (KoalaBear^4, SP1 Hypercube's field).
pub trait WhirField: PrimeField32 + TwoAdicField + BinomiallyExtendable<4> + HasTwoAdicBinomialExtension<4> + UniformSamplingField + sealed::Sealed {
    /// Plonky3's Poseidon2 of width 16 over this field.
    type Perm: CryptographicPermutation<[Self; 16]> + CryptographicPermutation<[<Self as Field>::Packing; 16]> + Clone + Send + Sync;
    /// Plonky3's Poseidon2 of width 24 over this field (for [`LeafSponge::Width24`] leaves).
    type Perm24: CryptographicPermutation<[Self; 24]> + CryptographicPermutation<[<Self as Field>::Packing; 24]> + Clone + Send + Sync;
    /// The field's name, as flags and messages write it (`babybear`, `koalabear`).
    const NAME: &'static str;
    /// What a proof file's header calls this field's hash (and with it the field and its
    /// degree-4 extension).
    const HASH_ID: &'static str;
    /// The degree-4 extension's name (`babybear^4`).
    const EXT4_NAME: &'static str;
    /// The field's degree-8 binomial extension (128 bits in every soundness regime).
    type Ext8: WhirExtension<Self>;
    /// Plonky3's default Poseidon2 of width 16 over this field.
    fn permutation() -> Self::Perm;
    /// Plonky3's default Poseidon2 of width 24 over this field.
    fn permutation24() -> Self::Perm24;
}

impl WhirField for BabyBear {
    type Perm = Poseidon2BabyBear<16>;
    type Perm24 = Poseidon2BabyBear<24>;
    const NAME: &'static str = "babybear";
    const HASH_ID: &'static str = "poseidon2-babybear-16/p3-default";
    const EXT4_NAME: &'static str = "babybear^4";
    type Ext8 = BinomialExtensionField<BabyBear, 8>;
    fn permutation() -> Self::Perm {
        default_babybear_poseidon2_16()
    }
    fn permutation24() -> Self::Perm24 {
        default_babybear_poseidon2_24()
    }
}

impl WhirField for KoalaBear {
    type Perm = Poseidon2KoalaBear<16>;
    type Perm24 = Poseidon2KoalaBear<24>;
    const NAME: &'static str = "koalabear";
    const HASH_ID: &'static str = "poseidon2-koalabear-16/p3-default";
    const EXT4_NAME: &'static str = "koalabear^4";
    type Ext8 = BinomialExtensionField<KoalaBear, 8>;
    fn permutation() -> Self::Perm {
        default_koalabear_poseidon2_16()
    }
    fn permutation24() -> Self::Perm24 {
        default_koalabear_poseidon2_24()
    }
}

/// An extension of a [`WhirField`] that WHIR's challenges live in: the degree-4 binomial one
/// (the default, about 100 bits), or for 128 bits BabyBear's binomial extensions of degree 5 and
/// 8, KoalaBear's of degree 8 and its quintic trinomial one. Plonky3's types; sealed.
pub trait WhirExtension<F: WhirField>: ExtensionField<F> + TwoAdicField + sealed::SealedExtension {
    /// The extension's name, as flags and messages write it (`babybear^4`, `koalabear^5`, ...).
    const NAME: &'static str;
    /// What a proof file's header calls a proof over this extension (the field, its hash and
    /// the extension; degree 4 keeps the field's [`WhirField::HASH_ID`], so older files read).
    const FILE_ID: &'static str;
}

macro_rules! whir_extension {
    ($($ext:ty, $field:ty, $name:literal, $id:expr;)*) => {$(
        impl sealed::SealedExtension for $ext {}
        impl WhirExtension<$field> for $ext {
            const NAME: &'static str = $name;
            const FILE_ID: &'static str = $id;
        }
    )*};
}

// The degree-4 extension of every field (its hash names it, as before there were others).
impl<F: WhirField> sealed::SealedExtension for BinomialExtensionField<F, 4> {}
impl<F: WhirField> WhirExtension<F> for BinomialExtensionField<F, 4> {
    const NAME: &'static str = F::EXT4_NAME;
    const FILE_ID: &'static str = F::HASH_ID;
}

whir_extension! {
    BinomialExtensionField<BabyBear, 5>, BabyBear, "babybear^5", "babybear^5/poseidon2-babybear-16/p3-default";
    BinomialExtensionField<BabyBear, 8>, BabyBear, "babybear^8", "babybear^8/poseidon2-babybear-16/p3-default";
    BinomialExtensionField<KoalaBear, 8>, KoalaBear, "koalabear^8", "koalabear^8/poseidon2-koalabear-16/p3-default";
    QuinticTrinomialExtensionField<KoalaBear>, KoalaBear, "koalabear^5", "koalabear^5/poseidon2-koalabear-16/p3-default";
}

/// The permutation of proofs over `F` (BabyBear's by default).
pub type Perm<F = BabyBear> = <F as WhirField>::Perm;
/// The width-24 permutation over `F`.
pub type Perm24<F = BabyBear> = <F as WhirField>::Perm24;

/// How a proof's Merkle leaves are hashed: Plonky3's padding-free sponge over Poseidon2 of width
/// 16 (rate 8, the default) or of width 24 (rate 16, as p3-whir's KoalaBear benchmark hashes
/// them). Nodes compress with width 16 either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LeafSponge {
    /// `PaddingFreeSponge<Poseidon2<16>, 16, 8, 8>` (the default).
    #[default]
    Width16,
    /// `PaddingFreeSponge<Poseidon2<24>, 24, 16, 8>`.
    Width24,
}

impl LeafSponge {
    /// Both sponges, width 16 first.
    pub const ALL: [LeafSponge; 2] = [LeafSponge::Width16, LeafSponge::Width24];

    /// The permutation's width (`--leaf-width`).
    pub const fn width(self) -> usize {
        match self {
            LeafSponge::Width16 => 16,
            LeafSponge::Width24 => 24,
        }
    }

    /// Words absorbed per permutation.
    pub const fn rate(self) -> usize {
        match self {
            LeafSponge::Width16 => 8,
            LeafSponge::Width24 => 16,
        }
    }

    /// The sponge of width `width`, or an error naming the widths there are.
    pub fn from_width(width: usize) -> Result<Self, String> {
        Self::ALL.into_iter().find(|l| l.width() == width).ok_or_else(|| format!("leaves hash with Poseidon2 of width 16 or 24, not {width}"))
    }

    /// What a proof file's hash id adds after the field's and extension's for this sponge
    /// (nothing for width 16, so older files read as before).
    pub(crate) const fn file_suffix(self) -> &'static str {
        match self {
            LeafSponge::Width16 => "",
            LeafSponge::Width24 => "/leaves-poseidon2-24",
        }
    }
}

/// Plonky3's leaf hash of either width, `PaddingFreeSponge<P16, 16, 8, 8>` or
/// `PaddingFreeSponge<P24, 24, 16, 8>`: one type, so that the MMCS (and with it the proof type)
/// over a field is one type whichever sponge a proof uses. Hashes exactly as the sponge it holds.
#[derive(Clone)]
pub enum LeafHasher<P16, P24> {
    /// Over Poseidon2 of width 16, rate 8.
    Width16(PaddingFreeSponge<P16, 16, 8, 8>),
    /// Over Poseidon2 of width 24, rate 16.
    Width24(PaddingFreeSponge<P24, 24, 16, 8>),
}

impl<P16, P24> LeafHasher<P16, P24> {
    /// The width-16 sponge over `perm` (what `PaddingFreeSponge::new` makes).
    pub fn new(perm: P16) -> Self {
        LeafHasher::Width16(PaddingFreeSponge::new(perm))
    }

    /// The width-24 sponge over `perm`.
    pub fn wide(perm: P24) -> Self {
        LeafHasher::Width24(PaddingFreeSponge::new(perm))
    }

    /// Which sponge this is.
    pub fn sponge(&self) -> LeafSponge {
        match self {
            LeafHasher::Width16(_) => LeafSponge::Width16,
            LeafHasher::Width24(_) => LeafSponge::Width24,
        }
    }
}

impl<T, P16, P24> CryptographicHasher<T, [T; DIGEST_ELEMS]> for LeafHasher<P16, P24>
where
    T: Default + Copy,
    P16: CryptographicPermutation<[T; 16]>,
    P24: CryptographicPermutation<[T; 24]>,
{
    fn hash_iter<I>(&self, input: I) -> [T; DIGEST_ELEMS]
    where
        I: IntoIterator<Item = T>,
    {
        match self {
            LeafHasher::Width16(h) => h.hash_iter(input),
            LeafHasher::Width24(h) => h.hash_iter(input),
        }
    }
}

/// Plonky3's leaf hash for this MMCS (either sponge; [`LeafHash::new`] is width 16's).
pub type LeafHash<F = BabyBear> = LeafHasher<Perm<F>, Perm24<F>>;
/// Plonky3's node compression for this MMCS.
pub type NodeCompress<F = BabyBear> = TruncatedPermutation<Perm<F>, 2, 8, 16>;
type Packed<F> = <F as Field>::Packing;
/// The Plonky3 MMCS every proof over `F` commits with (and the GPU's is identical to).
pub type CpuMmcs<F = BabyBear> = MerkleTreeMmcs<Packed<F>, Packed<F>, LeafHash<F>, NodeCompress<F>, 2, DIGEST_ELEMS>;

/// The Poseidon2 permutation every BabyBear proof uses (Plonky3's default constants).
pub fn permutation() -> Perm {
    BabyBear::permutation()
}

/// The MMCS over `F`'s permutation with cap height `cap_height` (width-16 leaves).
pub fn cpu_mmcs<F: WhirField>(cap_height: usize) -> CpuMmcs<F> {
    cpu_mmcs_with::<F>(cap_height, LeafSponge::Width16)
}

/// [`cpu_mmcs`] with leaves hashed by `leaf`.
pub fn cpu_mmcs_with<F: WhirField>(cap_height: usize, leaf: LeafSponge) -> CpuMmcs<F> {
    let wide = match leaf {
        LeafSponge::Width16 => None,
        LeafSponge::Width24 => Some(F::permutation24()),
    };
    cpu_mmcs_over::<F>(F::permutation(), wide, cap_height)
}

/// The MMCS over any Poseidon2 constants: nodes compressed with `perm`, leaves hashed with
/// `wide` (width 24) where given, else with `perm` (width 16).
pub fn cpu_mmcs_over<F: WhirField>(perm: Perm<F>, wide: Option<Perm24<F>>, cap_height: usize) -> CpuMmcs<F> {
    let hash = match wide {
        None => LeafHash::<F>::new(perm.clone()),
        Some(wide) => LeafHash::<F>::wide(wide),
    };
    CpuMmcs::<F>::new(hash, NodeCompress::<F>::new(perm), cap_height)
}
