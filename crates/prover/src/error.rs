use thiserror::Error;

/// Errors of the prover API, in words a user can act on.
#[derive(Debug, Error)]
pub enum ProverError {
    #[error("{0}")]
    Params(String),
    #[error("invalid input: {0}")]
    Input(String),
    #[error("GPU backend unavailable: {0}")]
    Gpu(#[from] whir_gpu::GpuError),
    #[error("proof file rejected: {0}")]
    ProofFile(String),
    #[error("proof did not verify: {0}")]
    Verify(String),
}
