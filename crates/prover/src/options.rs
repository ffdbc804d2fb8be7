//! The resident driver's settings, as a typed value passed in; the environment is read only by
//! [`DriverOptions::from_env`], at a program's edge.

use whir_gpu::env_switch;

use crate::error::ProverError;

/// How the driver plays the transcript. Neither choice changes a proof byte; both default on
/// (measured on the H200: BENCHMARKS.md), and turning one off measures what it saves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverOptions {
    /// Batches of sumcheck rounds run where the tables are, transcript included, with one wait
    /// for the batch (the transcript here replays them); off: each round waits for its own.
    pub device_rounds: bool,
    /// Each round's commitment, out-of-domain answers and query grind are played where the
    /// codeword lies, read back with its root; off: each waits for the transcript here.
    pub round_heads: bool,
}

impl Default for DriverOptions {
    fn default() -> Self {
        Self { device_rounds: true, round_heads: true }
    }
}

impl DriverOptions {
    /// The defaults with `WHIR_DEVICE_ROUNDS` and `WHIR_ROUND_HEADS` (0 or 1) applied.
    pub fn from_env() -> Result<Self, ProverError> {
        let d = Self::default();
        Ok(Self {
            device_rounds: env_switch("WHIR_DEVICE_ROUNDS")?.unwrap_or(d.device_rounds),
            round_heads: env_switch("WHIR_ROUND_HEADS")?.unwrap_or(d.round_heads),
        })
    }
}
