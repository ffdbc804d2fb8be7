//! Plonky3's own WHIR prover, built exactly as p3-whir's tests build it (Radix2DFTSmallBatch,
//! MerkleTreeMmcs, DuplexChallenger with its any-witness grinder): the reference `whir bench`
//! runs beside our backends.

use std::time::{Duration, Instant};

use p3_challenger::DuplexChallenger;
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::layout::{Layout, Table};
use p3_whir::WhirProver;
use whir_verifier::hash::{cpu_mmcs_with, CpuMmcs};

use crate::error::ProverError;
use crate::Params;
use crate::EF;
use crate::{ProverLayout, WhirExtension, WhirField};
use whir_verifier::opening_protocol;

type StockChallenger<F> = DuplexChallenger<F, <F as WhirField>::Perm, 16, 8>;

/// Proves with the stock Plonky3 prover over `F` (challenges in its degree-4 extension) and
/// returns the wall time of commit + open.
pub fn prove_stock<F: WhirField>(params: &Params, evals: &[F]) -> Result<Duration, ProverError> {
    prove_stock_over::<F, EF<F>>(params, evals)
}

/// [`prove_stock`] with the challenges in the extension `E` (degree 5 or 8 for 128 bits).
pub fn prove_stock_over<F: WhirField, E: WhirExtension<F>>(params: &Params, evals: &[F]) -> Result<Duration, ProverError> {
    let config = params.config_over::<E, StockChallenger<F>>()?;
    let perm = F::permutation();
    let mmcs = cpu_mmcs_with::<F>(0, params.leaf);
    let pcs = WhirProver::<E, F, Radix2DFTSmallBatch<F>, CpuMmcs<F>, StockChallenger<F>, ProverLayout<F, E>>::new(config, Radix2DFTSmallBatch::default(), mmcs);
    let witness = ProverLayout::<F, E>::new_witness(vec![Table::new(RowMajorMatrix::new(evals.to_vec(), evals.len()))], params.fold);
    let mut challenger = StockChallenger::<F>::new(perm);
    let start = Instant::now();
    let (_, data) = pcs.commit(witness, &mut challenger).map_err(|e| ProverError::Params(e.to_string()))?;
    pcs.open(data, opening_protocol(params), &mut challenger).map_err(|e| ProverError::Params(e.to_string()))?;
    Ok(start.elapsed())
}
