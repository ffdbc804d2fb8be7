//! The plain-Rust twin: Plonky3's DFT and Merkle tree on the host, the reference the GPU's
//! steps are compared with.

use p3_challenger::DuplexChallenger;
use p3_commit::Mmcs;
use p3_dft::{Radix2DFTSmallBatch, TwoAdicSubgroupDft};
use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::strategy::VariableOrder;
use whir_verifier::hash::{CpuMmcs, LeafSponge};

use super::{gather_blocks, randomness_rows, Backend, Blocks, OpenedRows};
use crate::error::ProverError;
use crate::sumcheck::{reverse_rows_and_columns, CpuSumcheck};
use crate::{Commitment, ProverField, WhirExtension, EF};
use p3_baby_bear::BabyBear;

/// Plonky3 on the CPU: `Radix2DFTSmallBatch` and `MerkleTreeMmcs` (the CPU backend's). The
/// reference twin.
#[derive(Clone)]
pub struct CpuBackend<F: ProverField = BabyBear, E: WhirExtension<F> = EF<F>> {
    dft: Radix2DFTSmallBatch<F>,
    mmcs: CpuMmcs<F>,
    leaf: LeafSponge,
    extension: std::marker::PhantomData<E>,
}

impl<F: ProverField, E: WhirExtension<F>> Default for CpuBackend<F, E> {
    fn default() -> Self {
        Self::hashing_leaves(LeafSponge::Width16)
    }
}

impl<F: ProverField, E: WhirExtension<F>> CpuBackend<F, E> {
    /// The twin with leaves hashed by `leaf` (the default: width 16), over Plonky3's default
    /// Poseidon2 constants.
    pub fn hashing_leaves(leaf: LeafSponge) -> Self {
        Self { dft: Radix2DFTSmallBatch::default(), mmcs: whir_verifier::hash::cpu_mmcs_with::<F>(0, leaf), leaf, extension: std::marker::PhantomData }
    }

    /// The twin over any Poseidon2 constants: nodes (and width-16 leaves) hashed with `perm`,
    /// leaves with `wide` where given (width 24), as the GPU backend built from the same
    /// constants hash them.
    pub fn with_permutations(perm: whir_verifier::hash::Perm<F>, wide: Option<whir_verifier::hash::Perm24<F>>) -> Self {
        let leaf = if wide.is_some() { LeafSponge::Width24 } else { LeafSponge::Width16 };
        Self { dft: Radix2DFTSmallBatch::default(), mmcs: whir_verifier::hash::cpu_mmcs_over::<F>(perm, wide, 0), leaf, extension: std::marker::PhantomData }
    }
}

impl<F: ProverField, E: WhirExtension<F>> CpuBackend<F, E> {
    /// The transform of `padded` (rows of `width` words, the codeword's height) committed.
    fn commit_padded(&self, padded: Vec<F>, width: usize) -> (Commitment<F>, <CpuMmcs<F> as Mmcs<F>>::ProverData<RowMajorMatrix<F>>) {
        let codeword = self.dft.dft_batch(RowMajorMatrix::new(padded, width));
        self.mmcs.commit_matrix(codeword)
    }
}

impl<F: ProverField, E: WhirExtension<F>> Backend<F, E> for CpuBackend<F, E> {
    type Committed = <CpuMmcs<F> as Mmcs<F>>::ProverData<RowMajorMatrix<F>>;
    type Sumcheck = CpuSumcheck<F, E>;
    /// The twin plays nothing ahead: every transcript step on the caller's challenger.
    type Transcript = DuplexChallenger<F, F::Perm, 16, 8>;

    type Mmcs = CpuMmcs<F>;

    fn leaf_sponge(&self) -> Option<LeafSponge> {
        Some(self.leaf)
    }

    fn mmcs(&self) -> CpuMmcs<F> {
        self.mmcs.clone()
    }

    fn commit_message(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        let (root, committed) = self.commit(message, width, log_inv_rate)?;
        let w = E::zero_vec(message.len());
        let f = message.iter().copied().map(E::from).collect();
        Ok((root, committed, CpuSumcheck::new(f, w)?))
    }

    /// In prefix order the table is reordered into the message first.
    fn commit_message_blocks(
        &self,
        blocks: usize,
        block_len: usize,
        width: usize,
        log_inv_rate: usize,
        order: VariableOrder,
        block: &Blocks<'_, F>,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        let table = gather_blocks(blocks, block_len, block)?;
        if order == VariableOrder::Suffix {
            return self.commit_message(&table, width, log_inv_rate);
        }
        if !width.is_power_of_two() || width > table.len() {
            return Err(ProverError::Input(format!("rows of {width} values of a table of {}", table.len())));
        }
        let (root, committed) = self.commit(&reverse_rows_and_columns(&table, width.trailing_zeros() as usize), width, log_inv_rate)?;
        let f = table.iter().copied().map(E::from).collect();
        Ok((root, committed, CpuSumcheck::new(f, E::zero_vec(table.len()))?.with_reversed_indices()))
    }

    fn commit_folded(&self, sumcheck: &mut Self::Sumcheck, fold: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let message = sumcheck.message(fold)?;
        self.commit(&E::flatten_to_base(message), E::DIMENSION << fold, log_inv_rate)
    }

    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let mut padded = F::zero_vec(message.len() << log_inv_rate);
        padded[..message.len()].copy_from_slice(message);
        Ok(self.commit_padded(padded, width))
    }

    fn commit_hiding_message(
        &self,
        poly: &[F],
        randomness: &[F],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        if !poly.len().is_power_of_two() || fold > poly.len().trailing_zeros() as usize {
            return Err(ProverError::Input(format!("a polynomial of {} values folded {fold} variables at a time", poly.len())));
        }
        let (width, rows) = (1usize << fold, poly.len() >> fold);
        // Row r, column b: poly[b·rows + r] (the message's 2^fold chunks side by side).
        let message: Vec<F> = (0..rows).flat_map(|r| (0..width).map(move |b| poly[b * rows + r])).collect();
        let padded = hiding_padded(&message, &randomness_rows(randomness, width)?, width, rows << log_inv_rate)?;
        let (root, committed) = self.commit_padded(padded, width);
        let mut table = poly.iter().copied().map(E::from).collect::<Vec<E>>();
        p3_util::reverse_slice_index_bits(&mut table);
        Ok((root, committed, CpuSumcheck::new(table, E::zero_vec(poly.len()))?.with_reversed_indices()))
    }

    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let message = sumcheck.message(fold)?;
        let rows = message.len() >> fold;
        let padded = hiding_padded(&message, &randomness_rows(randomness, 1 << fold)?, 1 << fold, rows << log_inv_rate)?;
        Ok(self.commit_padded(E::flatten_to_base(padded), E::DIMENSION << fold))
    }

    type Opening = OpenedRows<F>;

    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError> {
        let (values, proof) = self.mmcs.open_multi_batch(indices, committed);
        Ok((values.into_iter().map(|mut m| m.swap_remove(0)).collect(), proof))
    }

    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<Vec<OpenedRows<F>>, ProverError> {
        Ok(openings)
    }
}

/// A hiding codeword's message padded to `height` rows: `message` (row-major, `width` a row),
/// then the randomness rows, then zeros.
fn hiding_padded<T: Copy + Default>(message: &[T], randomness_rows: &[T], width: usize, height: usize) -> Result<Vec<T>, ProverError> {
    let total = message.len() + randomness_rows.len();
    if width == 0 || height.checked_mul(width).is_none_or(|cells| cells < total) {
        return Err(ProverError::Input(format!("{total} message and randomness values do not fit {height} rows of {width}")));
    }
    let mut padded = vec![T::default(); height * width];
    padded[..message.len()].copy_from_slice(message);
    padded[message.len()..total].copy_from_slice(randomness_rows);
    Ok(padded)
}
