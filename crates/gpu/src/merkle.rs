//! Merkle commitments on the GPU with Plonky3's hashing: leaves are rows hashed with
//! `PaddingFreeSponge<Poseidon2, 16, 8, 8>`, nodes `TruncatedPermutation<Poseidon2, 2, 8, 16>`,
//! arity 2, 8-word digests. Digest layers stay on the GPU; only the root is read back.
//!
//! Scope so far: one matrix per commitment, power-of-two height, cap height 0 (a root).

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::Matrix;

use crate::context::GpuContext;
use crate::error::{GpuError, Result};
use crate::field::{as_words, from_words};
use crate::poseidon2::GpuPoseidon2;
use crate::shaders::Kernel;

/// Words per digest.
pub const DIGEST_ELEMS: usize = 8;

/// Rust twin of `LeafParams` in wgsl/merkle/hash_leaves.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LeafParams {
    rows: u32,
    width: u32,
    fused_levels: u32,
    _pad: u32,
}

/// Most tree levels the leaf kernel can build in workgroup memory (log2 of its 64 rows).
const FUSED_LEVELS: usize = 6;
/// Trees up to this height fuse all six levels; taller ones fuse one. Level k inside a workgroup
/// keeps 64 >> k threads busy, so from level 2 on a warp runs the permutation with most lanes
/// idle: for a 2^22 x 16 matrix, fusing six levels issues ~1.7x the warp-permutations of
/// per-level dispatches (which are lane-dense), on a kernel that is compute-bound. Level 1 is
/// still one full 32-lane warp. Small trees are bound by dispatch overhead instead, where saving
/// five dispatches wins. Reasoned, not yet measured (BENCHMARKS.md).
const FUSE_ALL_MAX_LOG_HEIGHT: usize = 12;

/// A committed matrix: every digest layer on the GPU (leaves first), and the root. Dropping it
/// hands the layers back to the context's buffer pool.
pub struct GpuMerkleTree {
    pub height: usize,
    pub width: usize,
    /// Layer k holds height >> k digests of 8 words.
    pub layers: Vec<wgpu::Buffer>,
    pub root: [BabyBear; DIGEST_ELEMS],
    ctx: Arc<GpuContext>,
}

impl Drop for GpuMerkleTree {
    fn drop(&mut self) {
        for layer in self.layers.drain(..) {
            self.ctx.recycle_storage(layer);
        }
    }
}

/// Bytes of a `height` x `width` matrix of words, checked: the kernels index rows with 32-bit
/// integers, and the product must not wrap.
pub fn matrix_bytes(height: usize, width: usize) -> Result<u64> {
    let too_large = || GpuError::InvalidInput(format!("a {height} x {width} matrix is too large for 32-bit row indexing on the GPU"));
    if height > u32::MAX as usize || width > u32::MAX as usize {
        return Err(too_large());
    }
    height.checked_mul(width).and_then(|w| w.checked_mul(4)).map(|b| b as u64).ok_or_else(too_large)
}

/// Builds Merkle trees with one Poseidon2 instance.
pub struct GpuMerkle {
    poseidon2: Arc<GpuPoseidon2>,
    /// Bound for the fused levels a small tree does not have (writable bindings may not alias).
    placeholders: Vec<wgpu::Buffer>,
}

impl GpuMerkle {
    pub fn new(poseidon2: Arc<GpuPoseidon2>) -> Self {
        let placeholders = (0..FUSED_LEVELS).map(|_| poseidon2.context().storage("merkle level placeholder", DIGEST_ELEMS)).collect();
        Self { poseidon2, placeholders }
    }

    pub fn poseidon2(&self) -> &Arc<GpuPoseidon2> {
        &self.poseidon2
    }

    /// Records the whole tree over a matrix already on the GPU (`height` x `width` words,
    /// row-major; e.g. an NTT's output buffer) into `encoder`: leaf hashing, then one dispatch
    /// per level. Returns the digest layers, leaves first, root last; they come from the
    /// context's buffer pool, and `GpuContext::recycle_storage` takes them back.
    pub fn record_commit(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        matrix: &wgpu::Buffer,
        height: usize,
        width: usize,
    ) -> Result<Vec<wgpu::Buffer>> {
        if height == 0 || !height.is_power_of_two() {
            return Err(GpuError::InvalidInput(format!(
                "GPU Merkle trees take power-of-two heights for now; got {height} rows (use MerkleTreeMmcs for other heights)"
            )));
        }
        if width == 0 {
            return Err(GpuError::InvalidInput("cannot commit to a matrix of width 0".into()));
        }
        let ctx = self.poseidon2.context();
        let bytes = matrix_bytes(height, width)?;
        ctx.check_binding_size("Merkle matrix", bytes)?;
        if matrix.size() < bytes {
            return Err(GpuError::InvalidInput(format!("matrix buffer holds fewer than {height} x {width} words")));
        }
        // Leaves and the first levels in one dispatch (wgsl/merkle/hash_leaves.wgsl), then one
        // dispatch per remaining level.
        let log_h = height.trailing_zeros() as usize;
        let fused = if log_h <= FUSE_ALL_MAX_LOG_HEIGHT { log_h.min(FUSED_LEVELS) } else { 1 };
        let mut layers: Vec<wgpu::Buffer> =
            (0..=fused).map(|k| ctx.pooled_storage("merkle layer", (height >> k) * DIGEST_ELEMS)).collect();
        let params = ctx.uniform(
            "leaf params",
            &LeafParams { rows: height as u32, width: width as u32, fused_levels: fused as u32, _pad: 0 },
        );
        let mut bindings: Vec<&wgpu::Buffer> = vec![&params, matrix];
        bindings.extend(layers.iter());
        bindings.extend(self.placeholders[fused..].iter());
        self.poseidon2.dispatch(encoder, Kernel::HashLeaves, &bindings, height)?;
        let mut nodes = height >> (fused + 1);
        while nodes >= 1 {
            let parent = ctx.pooled_storage("merkle layer", nodes * DIGEST_ELEMS);
            let params = ctx.uniform("level params", &[nodes as u32, 0, 0, 0]);
            let children = layers.last().expect("leaves");
            self.poseidon2.dispatch(encoder, Kernel::CompressLevel, &[&params, children, &parent], nodes)?;
            layers.push(parent);
            nodes /= 2;
        }
        Ok(layers)
    }

    /// Commits to a host matrix: upload, hash, build, read back the root.
    pub fn commit_matrix(&self, matrix: &RowMajorMatrix<BabyBear>) -> Result<GpuMerkleTree> {
        self.commit_values(&matrix.values, matrix.height(), matrix.width())
    }

    /// Commits to `height` x `width` row-major values.
    pub fn commit_values(&self, values: &[BabyBear], height: usize, width: usize) -> Result<GpuMerkleTree> {
        if height.checked_mul(width) != Some(values.len()) {
            return Err(GpuError::InvalidInput(format!("{} values given for {height} x {width}", values.len())));
        }
        let ctx = self.poseidon2.context().clone();
        ctx.scoped("Merkle commit", || {
            let input = ctx.upload("merkle matrix", as_words(values));
            let tree = self.commit_buffer(&input, height, width);
            ctx.recycle_storage(input);
            tree
        })
    }

    /// Commits to a `height` x `width` matrix already in `input`; reads back only the root.
    pub fn commit_buffer(&self, input: &wgpu::Buffer, height: usize, width: usize) -> Result<GpuMerkleTree> {
        let ctx = self.poseidon2.context().clone();
        let mut encoder = ctx.encoder("merkle commit");
        let layers = self.record_commit(&mut encoder, input, height, width)?;
        let root_words = ctx.submit_and_read(encoder, layers.last().expect("root"), DIGEST_ELEMS);
        // The tree owns the layers from here, so they go back to the pool on any error below.
        let mut tree = GpuMerkleTree { height, width, layers, root: [BabyBear::default(); DIGEST_ELEMS], ctx };
        tree.root = from_words(root_words?)?.try_into().expect("a digest is 8 words");
        Ok(tree)
    }
}
