//! The hiding PCS's test shapes (tests/zk_pieces.rs, tests/zk_resident.rs): p3-whir's own zk
//! fixtures and more rounds with grinding.

use p3_field::TwoAdicField;
use p3_whir::{FoldingFactor, ProtocolParameters, SecurityAssumption, ZkParameters, ZkWhirConfig};
use whir_wgpu::gpu::GpuChallenger;
use whir_wgpu::prover::{HidingChallenger, ProverField, WhirExtension, EF, F};

/// One shape of the hiding PCS.
#[derive(Clone, Debug)]
pub struct Shape {
    pub vars: usize,
    pub fold: FoldingFactor,
    pub rate: usize,
    pub soundness: SecurityAssumption,
    pub pow_bits: usize,
    pub points: usize,
    /// Security level in bits (the grid's: 32; masked rounds grind only far above it).
    pub security: usize,
    /// The masks' message length (p3-whir's fixtures: 4).
    pub ell_zk: usize,
}

impl Shape {
    pub fn config(&self) -> ZkWhirConfig<EF, F, GpuChallenger<F>> {
        self.config_over::<F, EF>()
    }

    pub fn config_over<B: ProverField, E: WhirExtension<B> + TwoAdicField>(&self) -> ZkWhirConfig<E, B, GpuChallenger<B>> {
        self.config_with::<B, E, GpuChallenger<B>>()
    }

    pub fn config_with<B: ProverField, E: WhirExtension<B> + TwoAdicField, C: HidingChallenger<B>>(&self) -> ZkWhirConfig<E, B, C> {
        let protocol = ProtocolParameters {
            security_level: self.security,
            pow_bits: self.pow_bits,
            round_log_inv_rates: vec![],
            folding_factor: self.fold.clone(),
            soundness_type: self.soundness,
            starting_log_inv_rate: self.rate,
        };
        ZkWhirConfig::new(self.vars, protocol, ZkParameters { ell_zk: self.ell_zk, mask_log_inv_rate: 1 }).expect("a feasible hiding configuration")
    }
}

/// The grid: p3-whir's own zk fixtures (rate 1/4, 32 bits) and more rounds with grinding.
pub fn shapes() -> Vec<Shape> {
    let shape = |vars, fold, soundness, pow_bits, points| Shape { vars, fold, rate: 2, soundness, pow_bits, points, security: 32, ell_zk: 4 };
    let shapes = vec![
        // One round, two points.
        shape(12, FoldingFactor::Constant(4), SecurityAssumption::CapacityBound, 0, 2),
        // No rounds; no claims.
        shape(9, FoldingFactor::Constant(3), SecurityAssumption::CapacityBound, 0, 0),
        // A partial final fold (8, then 7).
        shape(15, FoldingFactor::Constant(8), SecurityAssumption::CapacityBound, 0, 1),
        // Unique decoding (no out-of-domain samples); the Johnson bound with grinding.
        shape(12, FoldingFactor::Constant(4), SecurityAssumption::UniqueDecoding, 0, 2),
        shape(12, FoldingFactor::Constant(3), SecurityAssumption::JohnsonBound, 5, 3),
        // Two rounds or more, grinding, several points.
        shape(14, FoldingFactor::ConstantFromSecondRound(4, 3), SecurityAssumption::CapacityBound, 5, 3),
    ];
    assert!(shapes[5].config().n_rounds() >= 2, "the last shape must play two rounds or more");
    shapes
}
