//! Shared test set-up: the GPU contexts (`gpu.rs`, shared with whir-gpu's own tests), the
//! proof grids' parameters, test backends made wrong on purpose (`tampered`) and the hiding
//! shapes (`zk`).
#![allow(dead_code)]

mod gpu;
pub mod tampered;
pub mod zk;

pub use gpu::*;

use rand::rngs::StdRng;
use rand::RngExt;

/// `count` random parameter shapes that `feasible` accepts, drawn as the proof grids draw them:
/// n in `vars`, fold 1..=4, rate 1..=3, 60-bit security, PoW 0 / 5 / 8, Johnson or unique
/// decoding, 1..=3 points.
pub fn random_params(
    rng: &mut StdRng,
    count: usize,
    vars: std::ops::RangeInclusive<usize>,
    feasible: impl Fn(&whir_wgpu::prover::Params) -> bool,
) -> Vec<whir_wgpu::prover::Params> {
    use whir_wgpu::prover::{Params, Soundness};
    let mut out = Vec::new();
    while out.len() < count {
        let p = Params {
            num_vars: rng.random_range(vars.clone()),
            fold: rng.random_range(1..=4),
            log_inv_rate: rng.random_range(1..=3),
            security_bits: 60,
            pow_bits: [0, 5, 8][rng.random_range(0..3)],
            soundness: if rng.random::<bool>() { Soundness::Johnson } else { Soundness::Unique },
            points: rng.random_range(1..=3),
            leaf: Default::default(),
        };
        if feasible(&p) {
            out.push(p);
        }
    }
    out
}

/// An opening protocol over tables of `(variables, columns)`, opened by `batches` of (table,
/// columns, successor columns), padded to `fold`, with the parameters of its stacked
/// polynomial (60 bits, rate 1, PoW 5, Johnson; the variables the stacking gives).
pub fn table_protocol(
    tables: &[(usize, usize)],
    batches: &[(usize, Vec<usize>, Vec<usize>)],
    fold: usize,
) -> (p3_sumcheck::OpeningProtocol, whir_wgpu::prover::Params) {
    use p3_sumcheck::{OpeningBatch, OpeningProtocol, TableShape, TableSpec};
    use whir_wgpu::prover::backend::Stacking;
    use whir_wgpu::prover::{Params, Soundness};
    let specs = tables
        .iter()
        .enumerate()
        .map(|(t, &(v, w))| {
            TableSpec::new(TableShape::new(v, w), batches.iter().filter(|b| b.0 == t).map(|(_, c, n)| OpeningBatch::new(c.clone(), n.clone())).collect())
        })
        .collect();
    let protocol = OpeningProtocol::new(specs).pad_to_min_num_variables(fold);
    let shapes: Vec<TableShape> = tables.iter().map(|&(v, w)| TableShape::new(v.max(fold), w)).collect();
    let params = Params {
        num_vars: Stacking::new(shapes).num_variables(),
        fold,
        log_inv_rate: 1,
        security_bits: 60,
        pow_bits: 5,
        soundness: Soundness::Johnson,
        points: batches.len(),
        leaf: Default::default(),
    };
    (protocol, params)
}

/// Plonky3's WHIR parameters of the tests that run its own prover: rate 1, 32 bits (Johnson),
/// `fold` variables a round, `pow_bits` of grinding.
pub fn stock_params(fold: usize, pow_bits: usize) -> p3_whir::ProtocolParameters {
    p3_whir::ProtocolParameters {
        starting_log_inv_rate: 1,
        round_log_inv_rates: Vec::new(),
        folding_factor: p3_whir::FoldingFactor::Constant(fold),
        soundness_type: p3_whir::SecurityAssumption::JohnsonBound,
        security_level: 32,
        pow_bits,
    }
}

/// One table of one column of `n` variables opened at one point, padded to `fold` variables.
pub fn single_column_protocol(n: usize, fold: usize) -> p3_sumcheck::OpeningProtocol {
    use p3_sumcheck::{OpeningBatch, OpeningProtocol, TableShape, TableSpec};
    OpeningProtocol::new(vec![TableSpec::new(TableShape::new(n, 1), vec![OpeningBatch::new(vec![0], Default::default())])]).pad_to_min_num_variables(fold)
}
