//! The resident driver's settings, as a typed value passed in; the environment is read only by
//! [`DriverOptions::from_env`], at a program's edge.

use whir_gpu::env_switch;

use crate::error::ProverError;

/// How the driver plays the transcript. Neither choice changes a proof byte; both default on
/// (measured: docs/benchmarks-history.md), and turning one off measures what it saves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverOptions {
    /// Batches of sumcheck rounds run where the tables are, transcript included, with one wait
    /// for the batch (the transcript here replays them); off: each round waits for its own.
    pub device_rounds: bool,
    /// Each round's commitment, out-of-domain answers and query grind are played where the
    /// codeword lies, read back with its root; off: each waits for the transcript here.
    pub round_heads: bool,
    /// Form the first sumcheck weight table where it is used instead of storing it: `None`
    /// from 2^24 evaluations ([`LAZY_WEIGHTS_MIN_VARS`]), for one polynomial and a stacked
    /// multi-table witness alike (its peak memory then one polynomial's; its open somewhat
    /// slower, BENCHMARKS.md), `Some(true)` always, `Some(false)` never (where the backend can;
    /// the CPU's always store it).
    pub lazy_first_weights: Option<bool>,
}

/// The first weight table is formed where used from 2^24 entries (256 MiB): below, memory is not
/// what limits a proof, and the stored table is faster to use (at 2^24, forming it costs a little
/// GPU time in the first rounds and saves building it, and the largest table;
/// docs/benchmarks-history.md).
pub const LAZY_WEIGHTS_MIN_VARS: usize = 24;

impl Default for DriverOptions {
    fn default() -> Self {
        Self { device_rounds: true, round_heads: true, lazy_first_weights: None }
    }
}

impl DriverOptions {
    /// Whether a proof of `vars` variables forms its first weight table where it is used.
    pub fn lazy_first_weights_at(&self, vars: usize) -> bool {
        self.lazy_first_weights.unwrap_or(vars >= LAZY_WEIGHTS_MIN_VARS)
    }

    /// The defaults with `WHIR_DEVICE_ROUNDS`, `WHIR_ROUND_HEADS` and `WHIR_LAZY_WEIGHTS` (0 or
    /// 1) applied.
    pub fn from_env() -> Result<Self, ProverError> {
        let d = Self::default();
        Ok(Self {
            device_rounds: env_switch("WHIR_DEVICE_ROUNDS")?.unwrap_or(d.device_rounds),
            round_heads: env_switch("WHIR_ROUND_HEADS")?.unwrap_or(d.round_heads),
            lazy_first_weights: env_switch("WHIR_LAZY_WEIGHTS")?,
        })
    }
}
