//! # whir-prover
//!
//! WHIR over BabyBear with interchangeable backends. For now: the GPU encoder as a
//! `p3_whir::WhirDomain`, the seam through which the upstream prover reaches the GPU NTT.

mod domain;

pub use domain::GpuWhirDomain;
