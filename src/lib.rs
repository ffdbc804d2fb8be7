#![doc = include_str!("../README.md")]

pub use whir_gpu as gpu;
pub use whir_prover as prover;
pub use whir_verifier as verifier;
