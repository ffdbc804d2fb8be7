use thiserror::Error;

/// Errors of the prover API, in words a user can act on.
#[derive(Debug, Error)]
pub enum ProverError {
    /// The protocol refused the request (claims, layout, configuration).
    #[error("{0}")]
    Params(String),
    #[error("invalid input: {0}")]
    Input(String),
    /// The inner error's text is part of this one's; it is not also a `source()`, so chains
    /// printed with `{:#}` say it once.
    #[error("GPU: {0}")]
    Gpu(whir_gpu::GpuError),
    /// From the verifier side: parameters and their policy, proof files, verification.
    #[error(transparent)]
    Proof(#[from] whir_verifier::ProofError),
    /// A comparing backend's two sides gave different outputs at `step`
    /// (`ComparingSteps`): the first step, in the proof's order, whose outputs differ.
    #[error("the backends differ at {step}: {detail}")]
    Mismatch { step: String, detail: String },
    /// A CPU proof whose estimated peak ([`estimated_cpu_bytes`](crate::estimated_cpu_bytes))
    /// is over the host memory it may use: refused before anything is allocated.
    #[error("{what} needs an estimated {needed_mib:.0} MiB of host memory, over the {budget_mib:.0} MiB {budget}; {hint}")]
    OverMemory { what: String, needed_mib: f64, budget_mib: f64, budget: String, hint: String },
    /// A job of a [`ProofPool`](crate::ProofPool) panicked; the other jobs ran on.
    #[error("job {job} panicked: {message}")]
    Panicked { job: usize, message: String },
}

impl From<whir_gpu::GpuError> for ProverError {
    fn from(e: whir_gpu::GpuError) -> Self {
        ProverError::Gpu(e)
    }
}
