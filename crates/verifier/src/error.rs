use thiserror::Error;

/// Errors of the verifier side, in words a user can act on. whir-prover's `ProverError` takes
/// each into its variant of the same name and words.
#[derive(Debug, Error)]
pub enum ProofError {
    #[error("{0}")]
    Params(String),
    #[error("proof file rejected: {0}")]
    ProofFile(String),
    #[error("proof rejected: {0}")]
    ParamsMismatch(String),
    #[error("proof did not verify: {0}")]
    Verify(String),
}
