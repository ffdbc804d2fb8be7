//! `GpuMmcs`: a `p3_commit::Mmcs<BabyBear>` whose commitments, proofs and pruned multi-proofs
//! are identical to Plonky3's `MerkleTreeMmcs<_, _, PaddingFreeSponge<Poseidon2, 16, 8, 8>,
//! TruncatedPermutation<Poseidon2, 2, 8, 16>, 2, 8>` built from the same Poseidon2 constants.
//!
//! One matrix of power-of-two height is committed on the GPU: digest layers stay there and
//! openings read back only the sibling digests they need, in one transfer. Anything else (several
//! matrices, other heights, no usable GPU) is committed by the Plonky3 MMCS itself, with a
//! tracing note, so callers always get a valid commitment. Verification runs on the CPU.

use std::sync::Arc;

use p3_baby_bear::{BabyBear, Poseidon2BabyBear};
use p3_commit::{BatchOpening, BatchOpeningRef, Mmcs};
use p3_field::Field;
use p3_matrix::{Dimensions, Matrix};
use p3_merkle_tree::{MerkleCap, MerkleTree, MerkleTreeError, MerkleTreeMmcs, PrunedMerklePaths};
use p3_symmetric::{PaddingFreeSponge, TruncatedPermutation};

use crate::error::{GpuError, Result};
use crate::transfer::write_matrix_row;
use crate::merkle::{proof_levels, pruned_positions, GpuMerkle, GpuMerkleTree, DIGEST_ELEMS};

type Perm = Poseidon2BabyBear<16>;
/// Plonky3's leaf hash for this MMCS.
pub type LeafHash = PaddingFreeSponge<Perm, 16, 8, 8>;
/// Plonky3's node compression for this MMCS.
pub type NodeCompress = TruncatedPermutation<Perm, 2, 8, 16>;
type Packed = <BabyBear as Field>::Packing;
/// The Plonky3 MMCS this one is identical to.
pub type CpuMmcs = MerkleTreeMmcs<Packed, Packed, LeafHash, NodeCompress, 2, DIGEST_ELEMS>;
type Digest = [BabyBear; DIGEST_ELEMS];

/// Prover data: the GPU tree with its matrix, or Plonky3's tree when the CPU committed.
pub enum GpuProverData<M> {
    Gpu { matrix: M, tree: GpuMerkleTree, cap_height: usize },
    Cpu(MerkleTree<BabyBear, BabyBear, M, 2, DIGEST_ELEMS>),
}

#[derive(Clone)]
pub struct GpuMmcs {
    gpu: Option<Arc<GpuMerkle>>,
    cpu: CpuMmcs,
    cap_height: usize,
}

impl GpuMmcs {
    /// On `merkle`'s GPU with its Poseidon2 constants; `cap_height` as in `MerkleTreeMmcs::new`.
    pub fn new(merkle: Arc<GpuMerkle>, cap_height: usize) -> Self {
        let perm = merkle.poseidon2().constants().to_cpu();
        Self { gpu: Some(merkle), cpu: CpuMmcs::new(LeafHash::new(perm.clone()), NodeCompress::new(perm), cap_height), cap_height }
    }

    /// The Plonky3 MMCS with the same hash (used for verification and as the fallback).
    pub fn cpu(&self) -> &CpuMmcs {
        &self.cpu
    }

    fn gpu_commit<M: Matrix<BabyBear>>(&self, gpu: &GpuMerkle, matrix: &M) -> Result<GpuMerkleTree> {
        let (h, w) = (matrix.height(), matrix.width());
        if h == 0 || !h.is_power_of_two() {
            return Err(GpuError::InvalidInput(format!("height {h} is not a power of two")));
        }
        let ctx = gpu.poseidon2().context().clone();
        // Too large for one binding on this adapter: say so before uploading anything.
        ctx.check_binding_size("Merkle matrix", crate::merkle::matrix_bytes(h, w)?)?;
        ctx.scoped("Merkle commit", || {
            let started = std::time::Instant::now();
            // Rows go straight into staging memory, on all cores.
            let input = ctx.upload_rows("merkle matrix", h, w, |r, write| write_matrix_row(matrix, r, write))?;
            let uploaded = started.elapsed();
            let tree = gpu.commit_buffer(&input, h, w);
            ctx.recycle_storage(input);
            tracing::debug!(h, w, upload_ms = uploaded.as_secs_f64() * 1e3, total_ms = started.elapsed().as_secs_f64() * 1e3, "GPU Merkle commit");
            tree
        })
    }

    /// Plonky3's tree over a copy of `matrix`: the fallback when the GPU tree cannot be read.
    /// Same hash, so the same root, paths and proofs as the GPU tree.
    fn cpu_tree<M: Matrix<BabyBear>>(&self, matrix: &M) -> MerkleTree<BabyBear, BabyBear, p3_matrix::dense::RowMajorMatrix<BabyBear>, 2, DIGEST_ELEMS> {
        let values: Vec<BabyBear> = matrix.rows().flatten().collect();
        self.cpu.commit(vec![p3_matrix::dense::RowMajorMatrix::new(values, matrix.width())]).1
    }

    /// Reads the digests at (layer, index) positions of `tree` in one transfer.
    fn read_digests(&self, tree: &GpuMerkleTree, positions: &[(usize, usize)]) -> Result<Vec<Digest>> {
        let gpu = self.gpu.as_ref().expect("GPU prover data implies a GPU");
        gpu.read_nodes(tree, positions)
    }
}

impl Mmcs<BabyBear> for GpuMmcs {
    type ProverData<M> = GpuProverData<M>;
    type Commitment = MerkleCap<BabyBear, Digest>;
    type Proof = Vec<Digest>;
    type MultiProof = PrunedMerklePaths<BabyBear, DIGEST_ELEMS>;
    type Error = MerkleTreeError;

    fn commit<M: Matrix<BabyBear>>(&self, mut inputs: Vec<M>) -> (Self::Commitment, Self::ProverData<M>) {
        if let (Some(gpu), 1) = (&self.gpu, inputs.len()) {
            match self.gpu_commit(gpu, &inputs[0]) {
                Ok(tree) => {
                    let log_h = tree.layers.len() - 1;
                    let cap_height = self.cap_height.min(log_h);
                    let cap_layer = log_h - cap_height;
                    // The commit already read the root back: a cap of height 0 needs no
                    // second round trip.
                    let cap = if cap_height == 0 {
                        Ok(vec![tree.root])
                    } else {
                        let positions: Vec<(usize, usize)> = (0..1 << cap_height).map(|i| (cap_layer, i)).collect();
                        self.read_digests(&tree, &positions)
                    };
                    match cap {
                        Ok(cap) => {
                            let matrix = inputs.pop().expect("one matrix");
                            return (MerkleCap::new(cap), GpuProverData::Gpu { matrix, tree, cap_height });
                        }
                        Err(e) => tracing::warn!("GPU Merkle cap readback failed, committing on the CPU: {e}"),
                    }
                }
                // Shapes the GPU tree does not take yet are routine; a GPU that fails or an
                // input over its limits is worth a warning.
                Err(e @ GpuError::InvalidInput(_)) => tracing::debug!("GPU Merkle commit not used ({e}); committing on the CPU"),
                Err(e) => tracing::warn!("GPU Merkle commit failed ({e}); committing on the CPU"),
            }
        }
        let (cap, tree) = self.cpu.commit(inputs);
        (cap, GpuProverData::Cpu(tree))
    }

    fn open_batch<M: Matrix<BabyBear>>(&self, index: usize, prover_data: &Self::ProverData<M>) -> BatchOpening<BabyBear, Self> {
        match prover_data {
            GpuProverData::Cpu(tree) => {
                let (values, proof) = self.cpu.open_batch(index, tree).unpack();
                BatchOpening::new(values, proof)
            }
            GpuProverData::Gpu { matrix, tree, cap_height } => {
                assert!(index < tree.height, "index {index} out of bounds for height {}", tree.height);
                let levels = proof_levels(tree.layers.len() - 1, *cap_height);
                let positions: Vec<(usize, usize)> = (0..levels).map(|l| (l, (index >> l) ^ 1)).collect();
                tracing::debug!(index, "GPU Merkle opening");
                match self.read_digests(tree, &positions) {
                    Ok(proof) => {
                        let row = matrix.row_slice(index).expect("index checked").to_vec();
                        BatchOpening::new(vec![row], proof)
                    }
                    Err(e) => {
                        tracing::warn!("reading a Merkle path from the GPU failed ({e}); rebuilding the tree on the CPU");
                        let (values, proof) = self.cpu.open_batch(index, &self.cpu_tree(matrix)).unpack();
                        BatchOpening::new(values, proof)
                    }
                }
            }
        }
    }

    fn get_matrices<'a, M: Matrix<BabyBear>>(&self, prover_data: &'a Self::ProverData<M>) -> Vec<&'a M> {
        match prover_data {
            GpuProverData::Cpu(tree) => self.cpu.get_matrices(tree),
            GpuProverData::Gpu { matrix, .. } => vec![matrix],
        }
    }

    fn verify_batch(
        &self,
        commit: &Self::Commitment,
        dimensions: &[Dimensions],
        index: usize,
        batch_opening: BatchOpeningRef<'_, BabyBear, Self>,
    ) -> Result<(), Self::Error> {
        self.cpu.verify_batch(
            commit,
            dimensions,
            index,
            BatchOpeningRef::new(batch_opening.opened_values, batch_opening.opening_proof),
        )
    }

    fn open_multi_batch<M: Matrix<BabyBear>>(
        &self,
        indices: &[usize],
        prover_data: &Self::ProverData<M>,
    ) -> (Vec<Vec<Vec<BabyBear>>>, Self::MultiProof) {
        match prover_data {
            GpuProverData::Cpu(tree) => self.cpu.open_multi_batch(indices, tree),
            GpuProverData::Gpu { matrix, tree, cap_height } => {
                for &i in indices {
                    assert!(i < tree.height, "index {i} out of bounds for height {}", tree.height);
                }
                let levels = proof_levels(tree.layers.len() - 1, *cap_height);
                let positions = pruned_positions(indices, levels);
                tracing::debug!(queries = indices.len(), digests = positions.len(), "GPU Merkle multi-opening");
                match self.read_digests(tree, &positions) {
                    Ok(sibling_hashes) => {
                        let values = indices.iter().map(|&i| vec![matrix.row_slice(i).expect("index checked").to_vec()]).collect();
                        (values, PrunedMerklePaths { sibling_hashes })
                    }
                    Err(e) => {
                        tracing::warn!("reading Merkle paths from the GPU failed ({e}); rebuilding the tree on the CPU");
                        self.cpu.open_multi_batch(indices, &self.cpu_tree(matrix))
                    }
                }
            }
        }
    }

    fn verify_multi_batch<R: AsRef<[BabyBear]> + PartialEq>(
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
