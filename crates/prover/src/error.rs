use thiserror::Error;

/// Errors of the prover API, in words a user can act on.
#[derive(Debug, Error)]
pub enum ProverError {
    /// The protocol refused the request (claims, layout, configuration).
    #[error("{0}")]
    Params(String),
    /// The caller's input does not fit the request (sizes, shapes, a witness).
    #[error("invalid input: {0}")]
    Input(String),
    /// The inner error's text is part of this one's; it is not also a `source()`, so chains
    /// printed with `{:#}` say it once.
    #[error("GPU: {0}")]
    Gpu(whir_gpu::GpuError),
    /// A transcript step the device played ahead (a round head, a sumcheck chain) disagrees
    /// with the transcript the protocol replays: the device computed something wrong. Treated
    /// as a GPU failure (the CPU fallbacks take it).
    #[error("the device's transcript disagrees with the host's: {0}")]
    PlayedAhead(String),
    /// From the verifier side: parameters and their policy, proof files, verification.
    #[error(transparent)]
    Proof(#[from] whir_verifier::ProofError),
    /// A comparing backend's two sides gave different outputs at `step`
    /// (`ComparingBackend`): the first step, in the proof's order, whose outputs differ.
    #[error("the backends differ at {step}: {detail}")]
    Mismatch {
        /// The step, as the proof's order names it.
        step: String,
        /// What differs.
        detail: String,
    },
    /// A CPU proof whose estimated peak ([`estimated_cpu_bytes`](crate::estimated_cpu_bytes))
    /// is over the host memory it may use: refused before anything is allocated.
    #[error("{what} needs an estimated {needed_mib:.0} MiB of host memory, over the {budget_mib:.0} MiB {budget}; {hint}")]
    OverMemory {
        /// The proof refused, in words.
        what: String,
        /// Its estimated peak, in MiB.
        needed_mib: f64,
        /// The budget, in MiB.
        budget_mib: f64,
        /// Where the budget came from ([`HostMemory::source`](crate::HostMemory::source)).
        budget: String,
        /// What to change.
        hint: String,
    },
    /// A job of a [`ProofPool`](crate::ProofPool) panicked; the other jobs ran on.
    #[error("job {job} panicked: {message}")]
    Panicked {
        /// The job's index in its batch.
        job: usize,
        /// The panic's message.
        message: String,
    },
}

impl From<whir_gpu::GpuError> for ProverError {
    fn from(e: whir_gpu::GpuError) -> Self {
        ProverError::Gpu(e)
    }
}
