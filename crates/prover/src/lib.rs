//! # whir-prover
//!
//! WHIR polynomial commitments over BabyBear (extension BabyBear^4) with interchangeable
//! backends: [`CpuBackend`] (Plonky3) and [`GpuBackend`] (whir-gpu). Proofs are Plonky3's
//! `PcsProof` in a versioned [`ProofFile`], checked by the stock p3-whir verifier; both
//! backends produce byte-identical proofs for the same input (smallest-witness grinding).
//!
//! Knows nothing of wgpu: GPU work goes through whir-gpu's Plonky3 adapters.

mod backend;
mod domain;
mod driver;
mod error;
mod params;
mod proof_file;
mod stock;
mod sumcheck;
mod timing;

use p3_baby_bear::BabyBear;
use p3_field::extension::BinomialExtensionField;

pub use backend::{estimated_gpu_bytes, opening_protocol, permutation, prove_with_pieces, Backend, CpuBackend, GpuBackend, GpuMode, ProverLayout, ProverOutput};
pub use domain::GpuWhirDomain;
pub use driver::{prove_with_steps, step_label, CodewordSteps, CpuCodewords, DriverTimes, RoundBreakdown, Step, StepTime};
pub use error::ProverError;
pub use params::{ParamSource, Params, Soundness, MAX_POINTS, MAX_POW_BITS, MAX_SECURITY_BITS, MAX_VARS, WEAK_SECURITY_BITS};
pub use proof_file::{FileParamsFloor, ProofFile, ReadLimits, FORMAT_VERSION, HASH_ID};
pub use stock::prove_stock;
pub use sumcheck::{CpuSumcheck, SumcheckSteps};
pub use timing::{PhaseClock, PhaseTimes, TimedDomain, TimedMmcs};

/// The base field.
pub type F = BabyBear;
/// The extension field WHIR's challenges live in.
pub type EF = BinomialExtensionField<BabyBear, 4>;
/// A Merkle cap (a root, with cap height 0).
pub type Commitment = p3_merkle_tree::MerkleCap<F, [F; 8]>;
