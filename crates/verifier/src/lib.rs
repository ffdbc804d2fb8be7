//! # whir-verifier
//!
//! The verifier side of whir-wgpu, without any GPU code: WHIR parameters in the user's terms and
//! their policy ([`Params`]), proof files ([`ProofFile`], untrusted input read within
//! [`ReadLimits`]), verification with Plonky3's stock p3-whir verifier, and the CPU Poseidon2
//! hash and Merkle types every proof uses ([`hash`]). The prover (whir-prover) and the GPU
//! runtime (whir-gpu) build on this crate; nothing here depends on them.

#![warn(missing_docs)]

mod error;
pub mod hash;
mod params;
mod proof_file;
mod workload;

use p3_baby_bear::BabyBear;
use p3_field::extension::BinomialExtensionField;
use p3_sumcheck::layout::SuffixProver;
use p3_sumcheck::{OpeningBatch, OpeningProtocol, TableShape, TableSpec};

pub use error::ProofError;
pub use hash::{permutation, Keccak, LeafSponge, Poseidon2, ProofHash, WhirExtension, WhirField};
pub use params::{
    named_config, NamedConfig, ParamSource, Params, Soundness, MAX_DOMAIN_LOG, MAX_POINTS, MAX_POW_BITS, MAX_SECURITY_BITS, MAX_VARS, NAMED_CONFIGS,
    WEAK_SECURITY_BITS,
};
pub use proof_file::{
    hiding_points, hiding_points_over, proof_file_extension, proof_file_field, proof_file_hash, proof_file_is_hiding, zk_config, FileParamsFloor,
    HidingProofFileOf, KeccakHidingProofFileOf, KeccakProofFileOf, ProofFile, ProofFileOf, ReadLimits, StockChallenger, ZkMasks, FORMAT_VERSION, HASH_ID,
    HIDING_VERSION, KNOWN_HASHES, PREFIX_BYTES,
};
pub use workload::{Workload, MAX_COLUMNS, MAX_TABLES, MAX_WIDTH, ZKVM_PRESET, ZKVM_SMALL_PRESET};

/// The default base field.
pub type F = BabyBear;
/// The extension field WHIR's challenges live in: the base field's degree-4 binomial extension
/// (BabyBear^4 by default).
pub type EF<B = BabyBear> = BinomialExtensionField<B, 4>;
/// A Merkle cap (a root, with cap height 0).
pub type Commitment<B = BabyBear> = p3_merkle_tree::MerkleCap<B, [B; 8]>;
/// Sumcheck layout of the committed table (Plonky3's suffix layout): part of the PCS's type on
/// both sides.
pub type TableLayout<B = BabyBear, E = EF<B>> = SuffixProver<B, E>;

/// The opening protocol for one polynomial of n variables opened at `points` transcript points.
pub fn opening_protocol(params: &Params) -> OpeningProtocol {
    let batches = (0..params.points).map(|_| OpeningBatch::new(vec![0], Default::default())).collect();
    OpeningProtocol::new(vec![TableSpec::new(TableShape::new(params.num_vars, 1), batches)]).pad_to_min_num_variables(params.fold)
}
