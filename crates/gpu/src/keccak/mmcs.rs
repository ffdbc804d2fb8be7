//! `GpuKeccakMmcs<F>`: a `p3_commit::Mmcs<F>` whose commitments, proofs and pruned multi-proofs
//! are Plonky3's `MerkleTreeMmcs<F, u64, SerializingHasher<PaddingFreeSponge<KeccakF, 25, 17,
//! 4>>, CompressionFunctionFromHasher<that sponge, 2, 4>, 2, 4>`'s ([`CpuKeccakMmcs`], the tree of
//! Plonky3's WHIR Keccak test and of its FRI examples), committed on the GPU: every batch
//! that MMCS takes (several matrices, heights on Plonky3's ladder, any widths, cap heights), its
//! digest layers kept on the GPU and openings reading back only the siblings they need. Bad
//! batches get Plonky3's errors ([`GpuKeccakMmcs::try_commit`]; `commit` panics with Plonky3's
//! message). Without a GPU, or where the GPU fails, Plonky3's MMCS commits instead (a tracing
//! note says why). Verification runs on the CPU with Plonky3's code.

use p3_commit::{BatchOpening, BatchOpeningRef, Mmcs};
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::{Dimensions, Matrix};
use p3_merkle_tree::{MerkleCap, MerkleTree, MerkleTreeError, PrunedMerklePaths};

use std::sync::Arc;

use super::{GpuKeccak, KeccakDigest};
use crate::error::{GpuError, Result};
use crate::merkle::{proof_levels, pruned_positions, GpuMerkle, GpuMerkleTree};
use crate::mmcs::{cap_roots, check_batch_heights, commit_matrices, reduced_row, BatchError};
use crate::poseidon2::{GpuPoseidon2, Poseidon2Constants, Poseidon2Field};

// Plonky3's Keccak MMCS over `F` (which `GpuKeccakMmcs<F>` is identical to) and its sponge
// live with the verifier, which checks Keccak proofs without a GPU.
pub use whir_verifier::hash::{CpuKeccakMmcs, KeccakU64Sponge};

/// Prover data: the GPU tree with its matrices (in commit order), or Plonky3's tree when the
/// CPU committed.
pub enum GpuKeccakProverData<M, F> {
    /// Committed on the GPU.
    Gpu {
        /// The matrices committed, in commit order.
        matrices: Vec<M>,
        /// Their tree, resident on the GPU.
        tree: GpuMerkleTree<F>,
        /// The cap height, fitted to the tree's depth.
        cap_height: usize,
    },
    /// Committed by Plonky3's MMCS on the CPU.
    Cpu(MerkleTree<F, u64, M, 2, 4>),
}

/// A `p3_commit::Mmcs<F>` identical to [`CpuKeccakMmcs`] that commits on the GPU (see the
/// module docs): the resident tree builder's trees ([`GpuMerkle::with_keccak`]), as `GpuMmcs`
/// commits Poseidon2's.
#[derive(Clone)]
pub struct GpuKeccakMmcs<F: Poseidon2Field> {
    gpu: Option<Arc<GpuMerkle<F>>>,
    cpu: CpuKeccakMmcs<F>,
    cap_height: usize,
}

impl<F: Poseidon2Field> GpuKeccakMmcs<F> {
    /// Commits on `gpu`'s context (Plonky3's MMCS without one); `cap_height` as in
    /// `MerkleTreeMmcs::new`.
    pub fn new(gpu: Option<GpuKeccak>, cap_height: usize) -> Self {
        let merkle = gpu.map(|g| Arc::new(keccak_merkle::<F>(g.context())));
        Self { gpu: merkle, cpu: whir_verifier::hash::cpu_keccak_mmcs(cap_height), cap_height }
    }

    /// The Plonky3 MMCS with the same hash (verification, and the fallback).
    pub fn cpu(&self) -> &CpuKeccakMmcs<F> {
        &self.cpu
    }

    /// [`Mmcs::commit`] with errors for the batches Plonky3 refuses (no matrix, no rows, a height
    /// off the ladder, a cap that is not a power of two) instead of its panics.
    #[allow(clippy::type_complexity)]
    pub fn try_commit<M: Matrix<F>>(&self, inputs: Vec<M>) -> std::result::Result<(MerkleCap<F, KeccakDigest>, GpuKeccakProverData<M, F>), BatchError> {
        let max_height = check_batch_heights(inputs.iter().map(|m| m.height()))?;
        let roots = cap_roots(max_height, self.cap_height);
        if !roots.is_power_of_two() {
            return Err(BatchError::CapRoots { roots });
        }
        if let Some(gpu) = &self.gpu {
            match commit_matrices(gpu, &inputs).and_then(|tree| self.gpu_cap(gpu, &tree).map(|cap| (tree, cap))) {
                Ok((tree, (cap, cap_height))) => return Ok((MerkleCap::new(cap), GpuKeccakProverData::Gpu { matrices: inputs, tree, cap_height })),
                Err(e @ GpuError::InvalidInput(_)) | Err(e @ GpuError::TooLarge { .. }) => {
                    tracing::debug!("GPU Keccak commit not used ({e}); committing on the CPU")
                }
                Err(e) => tracing::warn!("GPU Keccak commit failed ({e}); committing on the CPU"),
            }
        }
        let (cap, tree) = self.cpu.commit(inputs);
        Ok((cap, GpuKeccakProverData::Cpu(tree)))
    }

    /// The cap of `tree` at this MMCS's cap height fitted to the tree (as Plonky3 fits it).
    fn gpu_cap(&self, gpu: &GpuMerkle<F>, tree: &GpuMerkleTree<F>) -> Result<(Vec<KeccakDigest>, usize)> {
        let depth = tree.layers.len() - 1;
        let cap_height = self.cap_height.min(depth);
        if cap_height == 0 {
            return Ok((vec![tree.root_digest()?], 0));
        }
        let layer = depth - cap_height;
        let positions: Vec<(usize, usize)> = (0..(1usize << cap_height).min(tree.layer_len(layer))).map(|i| (layer, i)).collect();
        Ok((gpu.read_nodes_as(tree, &positions)?, cap_height))
    }

    /// Plonky3's tree over copies of `matrices`: the fallback when the GPU tree cannot be read.
    fn cpu_tree<M: Matrix<F>>(&self, matrices: &[M]) -> MerkleTree<F, u64, RowMajorMatrix<F>, 2, 4> {
        let copies = matrices.iter().map(|m| RowMajorMatrix::new(m.rows().flatten().collect(), m.width())).collect();
        self.cpu.commit(copies).1
    }

    /// The rows Plonky3 opens at `index`: one per matrix, at the index reduced to its height.
    fn rows_at<M: Matrix<F>>(matrices: &[M], max_height: usize, index: usize) -> Vec<Vec<F>> {
        matrices.iter().map(|m| m.row_slice(reduced_row(index, max_height, m.height())).expect("index checked").to_vec()).collect()
    }

    /// Reads the digests at (layer, index) positions of `tree`.
    fn read_digests(&self, tree: &GpuMerkleTree<F>, positions: &[(usize, usize)]) -> Result<Vec<KeccakDigest>> {
        let gpu = self.gpu.as_ref().ok_or_else(|| GpuError::InvalidInput("GPU prover data without a GPU".into()))?;
        gpu.read_nodes_as(tree, positions)
    }
}

/// The resident tree builder hashing with Keccak on `ctx` (its Poseidon2 instance, over `F`'s
/// constants, is only the context's carrier).
pub(crate) fn keccak_merkle<F: Poseidon2Field>(ctx: &Arc<crate::GpuContext>) -> GpuMerkle<F> {
    GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F>::plonky3_default()))).with_keccak()
}

impl<F: Poseidon2Field> Mmcs<F> for GpuKeccakMmcs<F> {
    type ProverData<M> = GpuKeccakProverData<M, F>;
    type Commitment = MerkleCap<F, KeccakDigest>;
    type Proof = Vec<KeccakDigest>;
    type MultiProof = PrunedMerklePaths<u64, 4>;
    type Error = MerkleTreeError;

    fn commit<M: Matrix<F>>(&self, inputs: Vec<M>) -> (Self::Commitment, Self::ProverData<M>) {
        match self.try_commit(inputs) {
            Ok(committed) => committed,
            Err(BatchError::Shape(MerkleTreeError::EmptyBatch)) => panic!("all matrices have height 0"),
            Err(e) => panic!("{e}"),
        }
    }

    fn open_batch<M: Matrix<F>>(&self, index: usize, prover_data: &Self::ProverData<M>) -> BatchOpening<F, Self> {
        match prover_data {
            GpuKeccakProverData::Cpu(tree) => {
                let (values, proof) = self.cpu.open_batch(index, tree).unpack();
                BatchOpening::new(values, proof)
            }
            GpuKeccakProverData::Gpu { matrices, tree, cap_height } => {
                assert!(index < tree.height, "index {index} out of bounds for height {}", tree.height);
                let levels = proof_levels(tree.layers.len() - 1, *cap_height);
                let positions: Vec<(usize, usize)> = (0..levels).map(|l| (l, (index >> l) ^ 1)).collect();
                match self.read_digests(tree, &positions) {
                    Ok(proof) => BatchOpening::new(Self::rows_at(matrices, tree.height, index), proof),
                    Err(e) => {
                        tracing::warn!("reading a Keccak Merkle path from the GPU failed ({e}); rebuilding the tree on the CPU");
                        let (values, proof) = self.cpu.open_batch(index, &self.cpu_tree(matrices)).unpack();
                        BatchOpening::new(values, proof)
                    }
                }
            }
        }
    }

    fn get_matrices<'a, M: Matrix<F>>(&self, prover_data: &'a Self::ProverData<M>) -> Vec<&'a M> {
        match prover_data {
            GpuKeccakProverData::Cpu(tree) => self.cpu.get_matrices(tree),
            GpuKeccakProverData::Gpu { matrices, .. } => matrices.iter().collect(),
        }
    }

    fn verify_batch(
        &self,
        commit: &Self::Commitment,
        dimensions: &[Dimensions],
        index: usize,
        batch_opening: BatchOpeningRef<'_, F, Self>,
    ) -> std::result::Result<(), Self::Error> {
        self.cpu.verify_batch(commit, dimensions, index, BatchOpeningRef::new(batch_opening.opened_values, batch_opening.opening_proof))
    }

    fn open_multi_batch<M: Matrix<F>>(&self, indices: &[usize], prover_data: &Self::ProverData<M>) -> (Vec<Vec<Vec<F>>>, Self::MultiProof) {
        match prover_data {
            GpuKeccakProverData::Cpu(tree) => self.cpu.open_multi_batch(indices, tree),
            GpuKeccakProverData::Gpu { matrices, tree, cap_height } => {
                for &i in indices {
                    assert!(i < tree.height, "index {i} out of bounds for height {}", tree.height);
                }
                let positions = pruned_positions(indices, proof_levels(tree.layers.len() - 1, *cap_height));
                match self.read_digests(tree, &positions) {
                    Ok(sibling_hashes) => {
                        let values = indices.iter().map(|&i| Self::rows_at(matrices, tree.height, i)).collect();
                        (values, PrunedMerklePaths { sibling_hashes })
                    }
                    Err(e) => {
                        tracing::warn!("reading Keccak Merkle paths from the GPU failed ({e}); rebuilding the tree on the CPU");
                        self.cpu.open_multi_batch(indices, &self.cpu_tree(matrices))
                    }
                }
            }
        }
    }

    fn verify_multi_batch<R: AsRef<[F]> + PartialEq>(
        &self,
        commit: &Self::Commitment,
        dimensions: &[Dimensions],
        indices: &[usize],
        opened_values: &[Vec<R>],
        proof: &Self::MultiProof,
    ) -> std::result::Result<(), Self::Error> {
        self.cpu.verify_multi_batch(commit, dimensions, indices, opened_values, proof)
    }
}
