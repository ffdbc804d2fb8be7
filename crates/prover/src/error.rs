use thiserror::Error;

/// Errors of the prover API, in words a user can act on.
#[derive(Debug, Error)]
pub enum ProverError {
    #[error("{0}")]
    Params(String),
    #[error("invalid input: {0}")]
    Input(String),
    /// The inner error's text is part of this one's; it is not also a `source()`, so chains
    /// printed with `{:#}` say it once.
    #[error("GPU: {0}")]
    Gpu(whir_gpu::GpuError),
    #[error("proof file rejected: {0}")]
    ProofFile(String),
    #[error("proof rejected: {0}")]
    ParamsMismatch(String),
    #[error("proof did not verify: {0}")]
    Verify(String),
}

/// The verifier side's errors keep their variant and words.
impl From<whir_verifier::ProofError> for ProverError {
    fn from(e: whir_verifier::ProofError) -> Self {
        use whir_verifier::ProofError as V;
        match e {
            V::Params(s) => ProverError::Params(s),
            V::ProofFile(s) => ProverError::ProofFile(s),
            V::ParamsMismatch(s) => ProverError::ParamsMismatch(s),
            V::Verify(s) => ProverError::Verify(s),
        }
    }
}

impl From<whir_gpu::GpuError> for ProverError {
    fn from(e: whir_gpu::GpuError) -> Self {
        ProverError::Gpu(e)
    }
}
