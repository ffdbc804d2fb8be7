//! # whir-prover
//!
//! WHIR polynomial commitments over BabyBear or KoalaBear (challenges in the field's degree-4
//! extension or wider; [`ProverField`]), proved by a [`CpuProver`] (Plonky3) or a [`GpuProver`]
//! (whir-gpu), as Plonky3 PCSs ([`WhirPcs`], [`HidingPcs`]). Proofs are Plonky3's `PcsProof` in a
//! versioned [`ProofFile`], checked by the stock p3-whir verifier; both provers produce
//! byte-identical proofs for the same input (smallest-witness grinding).
//!
//! The protocol runs over one trait, [`backend::Backend`] (the CPU twin, the GPU, the comparing
//! backend); only its GPU implementation names whir-gpu. Knows nothing of wgpu: GPU work goes
//! through whir-gpu.

#![warn(missing_docs)]

pub mod backend;
mod breakdown;
mod claims;
mod domain;
mod error;
mod hiding;
mod lookahead;
mod options;
mod pcs;
mod pool;
mod protocol;
mod provers;
mod rounds;
mod stock;
mod sumcheck;
mod timing;
mod workload;

pub use domain::GpuWhirDomain;
pub use error::ProverError;
pub use hiding::{CpuHidingPcs, GpuHidingPcs, HidingChallenger, HidingPcs, HidingProverData, HidingTimes, StockHidingPcs, ZkProof};
pub use lookahead::WhirChallenger;
pub use options::{DriverOptions, LAZY_WEIGHTS_MIN_VARS};
pub use pcs::{CpuWhirPcs, GpuKeccakWhirPcs, GpuWhirPcs, StockPcs, WhirPcs, WhirPcsData, WhirPcsProof};
pub use pool::{
    default_in_flight, HidingJob, HidingOutput, PoolOptions, ProofJob, ProofPool, DEFAULT_IN_FLIGHT, DEFAULT_IN_FLIGHT_PER_QUEUE, DEFAULT_QUEUES, MAX_IN_FLIGHT,
};
// The protocol over any backend (one polynomial committed and opened).
pub use protocol::{prove_with_backend, Proved};
pub use provers::{
    estimated_cpu_bytes, estimated_gpu_bytes, estimated_gpu_bytes_over, prove_with_pieces, CpuProver, GpuMode, GpuProver, HostMemory, Plonky3Pieces,
    ProverOutput,
};
pub use workload::{random_tables, Workload, ZKVM_PRESET, ZKVM_SMALL_PRESET};
// The verifier side, which this crate builds on: parameters, proof files, the stock verifier
// (its bounds and format constants are whir-verifier's).
pub use stock::{prove_stock, prove_stock_over};
pub use whir_verifier::{
    permutation, Commitment, FileParamsFloor, LeafSponge, ParamSource, Params, ProofError, ProofFile, ProofFileOf, ReadLimits, Soundness, WhirExtension,
    WhirField, EF, F,
};

/// Where a proof spent its time: per round and step ([`Step`](times::Step),
/// [`RoundBreakdown`](times::RoundBreakdown)), per phase of Plonky3's prover
/// ([`PhaseTimes`](times::PhaseTimes)).
pub mod times {
    pub use crate::breakdown::{step_label, DriverTimes, RoundBreakdown, Step, StepTime};
    pub use crate::timing::{PhaseClock, PhaseTimes, TimedDomain, TimedMmcs};
}

/// Sumcheck layout of the committed table (Plonky3's suffix layout).
pub type ProverLayout<B = p3_baby_bear::BabyBear, E = EF<B>> = whir_verifier::TableLayout<B, E>;

/// A field this crate proves over on both backends: a [`WhirField`] (its hash, its degree-4
/// extension) whose kernels and MMCS whir-gpu provides ([`whir_gpu::plumbing::MmcsField`]): BabyBear or
/// KoalaBear.
/// Its Poseidon2 types are whir-gpu's (the same Plonky3 types), so an MMCS over the constants a
/// GPU permutation holds is the verifier's `CpuMmcs`.
pub trait ProverField:
    WhirField<Perm = <Self as whir_gpu::Poseidon2Field>::Permutation16, Perm24 = <Self as whir_gpu::Poseidon2Field>::Permutation24> + whir_gpu::plumbing::MmcsField
{
}
impl<T> ProverField for T where
    T: WhirField<Perm = <T as whir_gpu::Poseidon2Field>::Permutation16, Perm24 = <T as whir_gpu::Poseidon2Field>::Permutation24>
        + whir_gpu::plumbing::MmcsField
{
}

#[cfg(test)]
mod tests {
    /// The verifier's PoW ceiling is the GPU grinder's: 2^bits stays below BabyBear's p.
    #[test]
    fn pow_ceilings_agree() {
        assert_eq!(whir_verifier::MAX_POW_BITS, whir_gpu::transcript::MAX_GRIND_BITS);
    }
}
