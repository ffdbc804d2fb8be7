//! WHIR parameters in the user's terms, mapped onto p3-whir's `ProtocolParameters`/`WhirConfig`,
//! with infeasible settings explained in plain words and a way out.

use p3_challenger::{FieldChallenger, GrindingChallenger};
use p3_whir::{FoldingFactor, ProtocolParameters, SecurityAssumption, WhirConfig, WhirConfigError};
use serde::{Deserialize, Serialize};

use crate::error::ProverError;
use crate::{EF, F};

/// Reed–Solomon soundness regime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Soundness {
    Johnson,
    Capacity,
    Unique,
}

impl Soundness {
    pub fn assumption(self) -> SecurityAssumption {
        match self {
            Soundness::Johnson => SecurityAssumption::JohnsonBound,
            Soundness::Capacity => SecurityAssumption::CapacityBound,
            Soundness::Unique => SecurityAssumption::UniqueDecoding,
        }
    }

    pub fn parse(s: &str) -> Result<Self, ProverError> {
        match s.to_ascii_lowercase().as_str() {
            "johnson" | "jb" => Ok(Soundness::Johnson),
            "capacity" | "cb" => Ok(Soundness::Capacity),
            "unique" | "ud" => Ok(Soundness::Unique),
            _ => Err(ProverError::Params(format!("unknown soundness {s:?}; use johnson, capacity or unique"))),
        }
    }
}

/// What a proof is made with; stored in every proof file so the verifier rebuilds the same
/// configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    /// Number of variables n of the multilinear polynomial (2^n evaluations).
    pub num_vars: usize,
    /// Variables folded per round.
    pub fold: usize,
    /// log2 of the inverse starting code rate.
    pub log_inv_rate: usize,
    /// Target security in bits.
    pub security_bits: usize,
    /// Proof-of-work budget in bits.
    pub pow_bits: usize,
    pub soundness: Soundness,
    /// Opening points (each sampled from the transcript).
    pub points: usize,
}

impl Default for Params {
    fn default() -> Self {
        Self { num_vars: 20, fold: 4, log_inv_rate: 1, security_bits: 100, pow_bits: 20, soundness: Soundness::Johnson, points: 1 }
    }
}

impl Params {
    pub fn protocol_parameters(&self) -> ProtocolParameters {
        ProtocolParameters {
            starting_log_inv_rate: self.log_inv_rate,
            round_log_inv_rates: Vec::new(),
            folding_factor: FoldingFactor::Constant(self.fold),
            soundness_type: self.soundness.assumption(),
            security_level: self.security_bits,
            pow_bits: self.pow_bits,
        }
    }

    /// p3-whir's configuration, or the reason it is infeasible with a suggestion.
    pub fn config<C>(&self) -> Result<WhirConfig<EF, F, C>, ProverError>
    where
        C: FieldChallenger<F> + GrindingChallenger<Witness = F>,
    {
        if self.num_vars == 0 || self.num_vars > 27 {
            return Err(ProverError::Params(format!(
                "--vars {} is out of range: BabyBear supports 1..=27 variables",
                self.num_vars
            )));
        }
        if self.fold == 0 {
            return Err(ProverError::Params("--fold must be at least 1".into()));
        }
        if self.points == 0 {
            return Err(ProverError::Params("at least one opening point is needed".into()));
        }
        WhirConfig::new_with_initial_claims(self.num_vars, self.protocol_parameters(), self.points)
            .map_err(|e| ProverError::Params(self.explain(&e)))
    }

    fn explain(&self, e: &WhirConfigError) -> String {
        let hint = match e {
            WhirConfigError::PowBitsExceedBudget { required, .. } => {
                let other = if self.soundness == Soundness::Unique { "johnson" } else { "unique" };
                format!("raise --pow-bits to {required}, or use --soundness {other}, or lower --security")
            }
            WhirConfigError::OodSamplesInfeasible { .. } | WhirConfigError::InitialClaimsBelowTarget { .. } => {
                "lower --security, or open fewer points (BabyBear^4 limits the reachable security)".into()
            }
            WhirConfigError::FoldedDomainExceedsCapacity { .. } => "raise --fold or lower --rate / --vars".into(),
            WhirConfigError::NonRedundantStartingRate { .. } => "use --rate 1 or more".into(),
            WhirConfigError::FoldingFactor(_) => "use a smaller --fold (it must not exceed --vars)".into(),
            _ => "check --vars, --fold and --rate".into(),
        };
        format!(
            "parameters n={} fold={} rate=2^-{} security={} pow={} soundness={:?} are infeasible: {e}; {hint}",
            self.num_vars, self.fold, self.log_inv_rate, self.security_bits, self.pow_bits, self.soundness
        )
    }
}
