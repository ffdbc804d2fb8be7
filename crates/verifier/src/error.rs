use thiserror::Error;

/// Errors of the verifier side, in words a user can act on. whir-prover's `ProverError` takes
/// each into its variant of the same name and words.
#[derive(Debug, Error)]
pub enum ProofError {
    /// Parameters (flags, a header, a table list) out of range or infeasible; the message says
    /// which and suggests what works.
    #[error("{0}")]
    Params(String),
    /// A proof file that cannot be read: malformed, truncated, over a bound, not canonical.
    #[error("proof file rejected: {0}")]
    ProofFile(String),
    /// A well-formed proof for other parameters or tables than the verifier expects.
    #[error("proof rejected: {0}")]
    ParamsMismatch(String),
    /// The stock verifier rejected the proof: what failed, and where.
    #[error("proof did not verify: {0}")]
    Verify(String),
}
