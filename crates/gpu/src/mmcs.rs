//! `GpuMmcs<F>`: a `p3_commit::Mmcs<F>` (F = BabyBear, the default, or KoalaBear) whose
//! commitments, proofs and pruned multi-proofs are identical to Plonky3's `MerkleTreeMmcs<_, _,
//! PaddingFreeSponge<Poseidon2, 16, 8, 8>, TruncatedPermutation<Poseidon2, 2, 8, 16>, 2, 8>` built
//! from the same Poseidon2 constants, or with leaves hashed by `PaddingFreeSponge<Poseidon2-24,
//! 24, 16, 8>` where its `GpuMerkle` hashes them so.
//!
//! Every batch `MerkleTreeMmcs` takes (several matrices, any heights on Plonky3's ladder, any
//! widths, cap heights) is committed on the GPU: digest layers stay there and openings read back
//! only the sibling digests they need, in one transfer. Bad batches get Plonky3's errors
//! ([`GpuMmcs::try_commit`]; `commit`, which has no error path, panics with Plonky3's message).
//! Without a usable GPU, or for sizes over its limits, the Plonky3 MMCS commits instead, with a
//! tracing note, so callers always get a valid commitment. Verification runs on the CPU.

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_commit::{BatchOpening, BatchOpeningRef, Mmcs};
use p3_field::Field;
use p3_koala_bear::KoalaBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::{Dimensions, Matrix};
use p3_merkle_tree::{MerkleCap, MerkleTree, MerkleTreeError, MerkleTreeMmcs, PrunedMerklePaths};
use p3_symmetric::TruncatedPermutation;
use p3_util::log2_ceil_usize;
use whir_verifier::hash::LeafHasher;

use crate::commit_ahead::CommitAhead;
use crate::error::{GpuError, Result};
use crate::merkle::{proof_levels, pruned_positions, GpuMerkle, GpuMerkleTree, RowChunk, RowGroup, TreeRows, TreeSpec, DIGEST_ELEMS};
use crate::poseidon2::Poseidon2Field;
use crate::transfer::write_matrix_row;

/// Plonky3's MMCS over `F` with its width-16 Poseidon2 (padding-free sponge of rate 8 for
/// leaves, or of width 24 and rate 16: `LeafHasher` holds either; truncated permutation for
/// nodes, 8-element digests), which `GpuMmcs<F>` is identical to. Over BabyBear and KoalaBear
/// this is `whir_verifier::hash::CpuMmcs`, the MMCS of every proof.
pub type CpuMmcsOf<F> = MerkleTreeMmcs<
    <F as Field>::Packing,
    <F as Field>::Packing,
    LeafHasher<<F as Poseidon2Field>::Permutation16, <F as Poseidon2Field>::Permutation24>,
    TruncatedPermutation<<F as Poseidon2Field>::Permutation16, 2, 8, 16>,
    2,
    DIGEST_ELEMS,
>;

/// Prover data: the GPU tree with its matrices (in commit order), or Plonky3's tree when the
/// CPU committed.
pub enum GpuProverData<M, F = BabyBear> {
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
    Cpu(MerkleTree<F, F, M, 2, DIGEST_ELEMS>),
}

/// Plonky3's geometry rule for a batch (`MerkleTree::new`): a matrix of positive height, and
/// every height on the ceil(max / 2^k) ladder of the tallest. Same errors as Plonky3's.
pub fn check_batch_heights(heights: impl Iterator<Item = usize> + Clone) -> std::result::Result<usize, MerkleTreeError> {
    let max_height = heights.clone().max().filter(|&h| h > 0).ok_or(MerkleTreeError::EmptyBatch)?;
    let log_max = log2_ceil_usize(max_height);
    for height in heights {
        // A zero height lands at the top, where only 1 is admissible.
        let bits_reduced = log_max - log2_ceil_usize(height);
        let expected_height = ((max_height - 1) >> bits_reduced) + 1;
        if height != expected_height {
            return Err(MerkleTreeError::IncompatibleHeights { height, max_height, expected_height, bits_reduced });
        }
    }
    Ok(max_height)
}

/// Why [`GpuMmcs::try_commit`] refused a batch; Plonky3's `commit` panics with the same text.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The heights cannot form a tree (Plonky3's geometry errors).
    #[error(transparent)]
    Shape(#[from] MerkleTreeError),
    /// The cap layer of a tree over non-power-of-two heights has a length Plonky3's
    /// `MerkleCap` does not take (choose a smaller cap height or power-of-two heights).
    #[error("a Merkle cap holds a power-of-two number of roots, got {roots}")]
    CapRoots {
        /// Roots the cap layer would hold.
        roots: usize,
    },
}

/// Roots in the cap Plonky3 takes of a tree whose tallest matrix has `max_height` rows, at
/// `cap_height` fitted to the tree's depth: 2^cap_height, or fewer where the cap layer
/// (padded to even lengths level by level) is shorter.
pub fn cap_roots(max_height: usize, cap_height: usize) -> usize {
    let mut lens = vec![crate::merkle::padded_layer_len(max_height)];
    while *lens.last().expect("leaves") > 1 {
        lens.push(crate::merkle::padded_layer_len(lens.last().expect("a layer") / 2));
    }
    let depth = lens.len() - 1;
    let cap_height = cap_height.min(depth);
    (1usize << cap_height).min(lens[depth - cap_height])
}

/// Row `index` of the tallest matrices maps to this row of a matrix of `height` (Plonky3's
/// reduction by the power-of-two height difference).
pub(crate) fn reduced_row(index: usize, max_height: usize, height: usize) -> usize {
    index >> (log2_ceil_usize(max_height) - log2_ceil_usize(height))
}

/// A `p3_commit::Mmcs<F>` identical to [`CpuMmcsOf`] that commits on the GPU (see the module docs),
/// falling back to that CPU MMCS without a GPU or for batches over its limits.
#[derive(Clone)]
pub struct GpuMmcs<F: Poseidon2Field = BabyBear> {
    gpu: Option<Arc<GpuMerkle<F>>>,
    cpu: CpuMmcsOf<F>,
    cap_height: usize,
    /// Trees a `GpuDft` committed ahead for this MMCS (and its clones).
    ahead: Option<Arc<CommitAhead<F>>>,
}

impl<F: Poseidon2Field> GpuMmcs<F> {
    /// Where a `GpuDft` leaves trees for this MMCS (`GpuDft::committing_ahead_for`); shared by
    /// its clones. None without a GPU.
    pub fn commit_ahead(&self) -> Option<&Arc<CommitAhead<F>>> {
        self.ahead.as_ref()
    }
}

/// The inherent methods and the `Mmcs` impl for one field (Plonky3's MMCS bounds are met by
/// each field's concrete types; a generic impl would have to restate them all).
macro_rules! gpu_mmcs_for {
    ($F:ty) => {
        impl GpuMmcs<$F> {
            /// The Plonky3 MMCS with the same hash (used for verification and as the fallback).
            pub fn cpu(&self) -> &CpuMmcsOf<$F> {
                &self.cpu
            }

            /// [`Mmcs::commit`] with errors for the batches Plonky3 refuses (no matrix, no rows, a
            /// height off the ladder, a cap that is not a power of two) instead of its panics.
            #[allow(clippy::type_complexity)]
            pub fn try_commit<M: Matrix<$F>>(
                &self,
                inputs: Vec<M>,
            ) -> std::result::Result<(MerkleCap<$F, [$F; DIGEST_ELEMS]>, GpuProverData<M, $F>), BatchError> {
                let max_height = check_batch_heights(inputs.iter().map(|m| m.height()))?;
                let roots = cap_roots(max_height, self.cap_height);
                if !roots.is_power_of_two() {
                    return Err(BatchError::CapRoots { roots });
                }
                // A single matrix whose tree a GpuDft committed ahead, rows unchanged: no upload.
                if let Some(tree) = self.taken_ahead(&inputs) {
                    match self.gpu_cap(&tree) {
                        Ok((cap, cap_height)) => return Ok((MerkleCap::new(cap), GpuProverData::Gpu { matrices: inputs, tree, cap_height })),
                        Err(e) => tracing::warn!("GPU Merkle cap readback failed, committing again: {e}"),
                    }
                }
                if let Some(gpu) = &self.gpu {
                    match commit_matrices(gpu, &inputs) {
                        Ok(tree) => match self.gpu_cap(&tree) {
                            Ok((cap, cap_height)) => return Ok((MerkleCap::new(cap), GpuProverData::Gpu { matrices: inputs, tree, cap_height })),
                            Err(e) => tracing::warn!("GPU Merkle cap readback failed, committing on the CPU: {e}"),
                        },
                        // An input over the adapter's limits is routine; a GPU that fails is worth a
                        // warning.
                        Err(e @ GpuError::InvalidInput(_)) => tracing::debug!("GPU Merkle commit not used ({e}); committing on the CPU"),
                        Err(e) => tracing::warn!("GPU Merkle commit failed ({e}); committing on the CPU"),
                    }
                }
                let (cap, tree) = self.cpu.commit(inputs);
                Ok((cap, GpuProverData::Cpu(tree)))
            }

            /// The cap of `tree` at this MMCS's cap height, fitted to the tree as Plonky3 fits it (at
            /// most the tree's depth; a layer shorter than 2^height gives all its digests).
            fn gpu_cap(&self, tree: &GpuMerkleTree<$F>) -> Result<(Vec<[$F; DIGEST_ELEMS]>, usize)> {
                let depth = tree.layers.len() - 1;
                let cap_height = self.cap_height.min(depth);
                // The commit already read the root back: a cap of height 0 needs no second round trip.
                if cap_height == 0 {
                    return Ok((vec![tree.root()?], 0));
                }
                let layer = depth - cap_height;
                let positions: Vec<(usize, usize)> = (0..(1usize << cap_height).min(tree.layer_len(layer))).map(|i| (layer, i)).collect();
                Ok((self.read_digests(tree, &positions)?, cap_height))
            }

            /// Plonky3's tree over copies of `matrices`: the fallback when the GPU tree cannot be read.
            /// Same hash, so the same root, paths and proofs as the GPU tree.
            fn cpu_tree<M: Matrix<$F>>(&self, matrices: &[M]) -> MerkleTree<$F, $F, RowMajorMatrix<$F>, 2, DIGEST_ELEMS> {
                let copies = matrices.iter().map(|m| RowMajorMatrix::new(m.rows().flatten().collect(), m.width())).collect();
                self.cpu.commit(copies).1
            }

            /// The rows Plonky3 opens at `index`: one per matrix, at the index reduced to its height.
            fn rows_at<M: Matrix<$F>>(matrices: &[M], max_height: usize, index: usize) -> Vec<Vec<$F>> {
                matrices.iter().map(|m| m.row_slice(reduced_row(index, max_height, m.height())).expect("index checked").to_vec()).collect()
            }

            /// Reads the digests at (layer, index) positions of `tree` in one transfer.
            fn read_digests(&self, tree: &GpuMerkleTree<$F>, positions: &[(usize, usize)]) -> Result<Vec<[$F; DIGEST_ELEMS]>> {
                let gpu = self.gpu.as_ref().expect("GPU prover data implies a GPU");
                gpu.read_nodes(tree, positions)
            }
        }

        impl Mmcs<$F> for GpuMmcs<$F> {
            type ProverData<M> = GpuProverData<M, $F>;
            type Commitment = MerkleCap<$F, [$F; DIGEST_ELEMS]>;
            type Proof = Vec<[$F; DIGEST_ELEMS]>;
            type MultiProof = PrunedMerklePaths<$F, DIGEST_ELEMS>;
            type Error = MerkleTreeError;

            fn commit<M: Matrix<$F>>(&self, inputs: Vec<M>) -> (Self::Commitment, Self::ProverData<M>) {
                // A bad batch is a caller bug, as Plonky3's `commit` treats it: the same panic messages.
                match self.try_commit(inputs) {
                    Ok(committed) => committed,
                    Err(BatchError::Shape(MerkleTreeError::EmptyBatch)) => panic!("all matrices have height 0"),
                    Err(e) => panic!("{e}"),
                }
            }

            fn open_batch<M: Matrix<$F>>(&self, index: usize, prover_data: &Self::ProverData<M>) -> BatchOpening<$F, Self> {
                match prover_data {
                    GpuProverData::Cpu(tree) => {
                        let (values, proof) = self.cpu.open_batch(index, tree).unpack();
                        BatchOpening::new(values, proof)
                    }
                    GpuProverData::Gpu { matrices, tree, cap_height } => {
                        assert!(index < tree.height, "index {index} out of bounds for height {}", tree.height);
                        let levels = proof_levels(tree.layers.len() - 1, *cap_height);
                        let positions: Vec<(usize, usize)> = (0..levels).map(|l| (l, (index >> l) ^ 1)).collect();
                        tracing::debug!(index, "GPU Merkle opening");
                        match self.read_digests(tree, &positions) {
                            Ok(proof) => BatchOpening::new(Self::rows_at(matrices, tree.height, index), proof),
                            Err(e) => {
                                tracing::warn!("reading a Merkle path from the GPU failed ({e}); rebuilding the tree on the CPU");
                                let (values, proof) = self.cpu.open_batch(index, &self.cpu_tree(matrices)).unpack();
                                BatchOpening::new(values, proof)
                            }
                        }
                    }
                }
            }

            fn get_matrices<'a, M: Matrix<$F>>(&self, prover_data: &'a Self::ProverData<M>) -> Vec<&'a M> {
                match prover_data {
                    GpuProverData::Cpu(tree) => self.cpu.get_matrices(tree),
                    GpuProverData::Gpu { matrices, .. } => matrices.iter().collect(),
                }
            }

            fn verify_batch(
                &self,
                commit: &Self::Commitment,
                dimensions: &[Dimensions],
                index: usize,
                batch_opening: BatchOpeningRef<'_, $F, Self>,
            ) -> Result<(), Self::Error> {
                self.cpu.verify_batch(commit, dimensions, index, BatchOpeningRef::new(batch_opening.opened_values, batch_opening.opening_proof))
            }

            fn open_multi_batch<M: Matrix<$F>>(&self, indices: &[usize], prover_data: &Self::ProverData<M>) -> (Vec<Vec<Vec<$F>>>, Self::MultiProof) {
                match prover_data {
                    GpuProverData::Cpu(tree) => self.cpu.open_multi_batch(indices, tree),
                    GpuProverData::Gpu { matrices, tree, cap_height } => {
                        for &i in indices {
                            assert!(i < tree.height, "index {i} out of bounds for height {}", tree.height);
                        }
                        let levels = proof_levels(tree.layers.len() - 1, *cap_height);
                        let positions = pruned_positions(indices, levels);
                        tracing::debug!(queries = indices.len(), digests = positions.len(), "GPU Merkle multi-opening");
                        match self.read_digests(tree, &positions) {
                            Ok(sibling_hashes) => {
                                let values = indices.iter().map(|&i| Self::rows_at(matrices, tree.height, i)).collect();
                                (values, PrunedMerklePaths { sibling_hashes })
                            }
                            Err(e) => {
                                tracing::warn!("reading Merkle paths from the GPU failed ({e}); rebuilding the tree on the CPU");
                                self.cpu.open_multi_batch(indices, &self.cpu_tree(matrices))
                            }
                        }
                    }
                }
            }

            fn verify_multi_batch<R: AsRef<[$F]> + PartialEq>(
                &self,
                commit: &Self::Commitment,
                dimensions: &[Dimensions],
                indices: &[usize],
                opened_values: &[Vec<R>],
                proof: &Self::MultiProof,
            ) -> Result<(), Self::Error> {
                self.cpu.verify_multi_batch(commit, dimensions, indices, opened_values, proof)
            }
        }
    };
}

/// Plonky3's tree over a batch of matrices (`MerkleTree::new`'s: heights on its ladder, any
/// widths), committed on `gpu` (Poseidon2 or Keccak, as it hashes) in one submission: each
/// height's rows uploaded in chunks of at most one binding (straight into staging memory, on all
/// cores), one matrix of power-of-two height through the fused leaf-level kernel. The batch is
/// the caller's to check ([`check_batch_heights`]).
pub(crate) fn commit_matrices<F: Poseidon2Field, M: Matrix<F>>(gpu: &GpuMerkle<F>, matrices: &[M]) -> Result<GpuMerkleTree<F>> {
    let ctx = gpu.poseidon2().context().clone();
    // Matrices of one height hash as one leaf, their rows concatenated in batch order;
    // groups go tallest first (Plonky3 sorts stably by height).
    let mut order: Vec<usize> = (0..matrices.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(matrices[i].height()));
    let groups: Vec<Vec<usize>> = order.chunk_by(|&a, &b| matrices[a].height() == matrices[b].height()).map(|g| g.to_vec()).collect();
    // Rows too wide for the adapter: say so before uploading anything.
    let mut plans = Vec::with_capacity(groups.len());
    for g in &groups {
        let (h, w) = (matrices[g[0]].height(), g.iter().map(|&i| matrices[i].width()).sum::<usize>());
        crate::field::matrix_bytes(h, w)?;
        plans.push((h, w, gpu.rows_per_chunk(w)?));
    }
    ctx.scoped("Merkle commit", || {
        let started = std::time::Instant::now();
        let mut batch = ctx.batch("merkle commit");
        // Each group's rows in chunks of at most one binding (one chunk where it fits),
        // back to the pool with the batch.
        let mut uploads: Vec<Vec<(wgpu::Buffer, usize, usize)>> = Vec::with_capacity(groups.len());
        for (g, &(h, w, per_chunk)) in groups.iter().zip(&plans) {
            let mut chunks = Vec::new();
            for first in (0..h).step_by(per_chunk) {
                let count = per_chunk.min(h - first);
                // Rows go straight into staging memory, on all cores.
                let rows = ctx.upload_rows("merkle matrices", count, w, |r, write| {
                    for &i in g {
                        write_matrix_row(&matrices[i], first + r, write);
                    }
                })?;
                batch.lend(rows.clone());
                chunks.push((rows, first, count));
            }
            uploads.push(chunks);
        }
        let uploaded = started.elapsed();
        let spec = TreeSpec::new(plans[0].0, plans[0].1);
        let recorded = match uploads.as_slice() {
            // One matrix of power-of-two height in one buffer: the fused leaf-level kernel.
            [one] if one.len() == 1 && plans[0].0.is_power_of_two() => gpu.record_tree(&mut batch, TreeRows::Matrix(&one[0].0), spec)?,
            _ => {
                let groups: Vec<RowGroup<'_>> = uploads
                    .iter()
                    .zip(&plans)
                    .map(|(chunks, &(height, width, _))| RowGroup {
                        chunks: chunks.iter().map(|(rows, first, count)| RowChunk { rows, first: *first, count: *count }).collect(),
                        height,
                        width,
                    })
                    .collect();
                gpu.record_tree(&mut batch, TreeRows::Groups(&groups), spec)?
            }
        };
        let readback = ctx.run(batch)?;
        tracing::debug!(
            matrices = matrices.len(),
            upload_ms = uploaded.as_secs_f64() * 1e3,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "GPU Merkle commit"
        );
        recorded.finish(&readback)
    })
}

/// A field `GpuMmcs` commits over (its `Mmcs` impl is per field: Plonky3's bounds are met by
/// each field's concrete types).
pub trait MmcsField: Poseidon2Field {}

impl MmcsField for BabyBear {}

impl MmcsField for KoalaBear {}

impl<F: MmcsField> GpuMmcs<F> {
    /// On `merkle`'s GPU with its Poseidon2 constants (and its leaf sponge); `cap_height` as in
    /// `MerkleTreeMmcs::new`.
    pub fn new(merkle: Arc<GpuMerkle<F>>, cap_height: usize) -> Self {
        if merkle.tree_hash() == crate::TreeHash::Keccak {
            // Its trees would not be this MMCS's: Plonky3's Poseidon2 MMCS commits instead.
            tracing::warn!("GpuMmcs over a Keccak tree builder commits on the CPU with Poseidon2; Plonky3's Keccak MMCS on the GPU is GpuKeccakMmcs");
            let plain = GpuMerkle::new(merkle.poseidon2().clone());
            let mut mmcs = Self::new(Arc::new(plain), cap_height);
            mmcs.gpu = None;
            mmcs.ahead = None;
            return mmcs;
        }
        let perm = merkle.poseidon2().constants().to_cpu();
        let leaves = match merkle.wide_leaves() {
            Some(wide) => LeafHasher::wide(wide.constants().to_cpu()),
            None => LeafHasher::new(perm.clone()),
        };
        let ahead = Some(Arc::new(CommitAhead::new(merkle.clone())));
        Self { gpu: Some(merkle), cpu: CpuMmcsOf::<F>::new(leaves, TruncatedPermutation::new(perm), cap_height), cap_height, ahead }
    }
}

impl<F: MmcsField> GpuMmcs<F> {
    /// The tree a `GpuDft` committed ahead for this batch (one matrix, rows unchanged), if any.
    fn taken_ahead<M: Matrix<F>>(&self, inputs: &[M]) -> Option<GpuMerkleTree<F>> {
        self.ahead.as_ref()?.take(inputs)
    }
}

gpu_mmcs_for!(BabyBear);
gpu_mmcs_for!(KoalaBear);
