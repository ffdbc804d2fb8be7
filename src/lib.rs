#![doc = include_str!("../README.md")]

pub use whir_gpu as gpu;
pub use whir_prover as prover;
pub use whir_verifier as verifier;

/// The guide: the command line, the tests and CI, tuning, adapters, many proofs, private proofs
/// from the command line and the GPU pieces for a Plonky3 stack (docs/GUIDE.md, its examples
/// compiled as doctests).
#[doc = include_str!("../docs/GUIDE.md")]
pub mod guide {}
