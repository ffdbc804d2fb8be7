//! Keccak Merkle trees on the GPU over any batch Plonky3's `MerkleTree` takes (arity 2): the
//! tallest matrices' rows, concatenated in batch order, hash into the leaf layer; each level
//! compresses pairs, and where shorter matrices join (their height's next power of two that of
//! the level, as Plonky3 matches them) compresses that digest with the joining rows' leaf
//! digest (a zero digest past their height); layers are padded to even lengths with zero digests.
//! The layers stay on the GPU; openings read the digests they need.

use std::sync::Arc;

use p3_matrix::Matrix;

use super::{digests_of, GpuKeccak, KeccakDigest, DIGEST_WORDS, GROUP};
use crate::context::{Batch, Dispatch, GpuContext};
use crate::error::{GpuError, Result};
use crate::field::GpuField;
use crate::merkle::padded_layer_len;
use crate::shaders::Kernel;
use crate::transfer::write_matrix_row;

/// A Keccak Merkle tree resident on the GPU (see the module docs).
pub struct GpuKeccakTree {
    /// Rows of the tallest matrices.
    pub height: usize,
    /// The root, read back by the commit.
    pub root: KeccakDigest,
    pub(super) layers: Vec<wgpu::Buffer>,
    pub(super) lens: Vec<usize>,
    _ctx: Arc<GpuContext>,
}

impl GpuKeccakTree {
    /// Levels above the leaves (the root's layer index).
    pub fn depth(&self) -> usize {
        self.lens.len() - 1
    }

    /// Digests in layer `k` (0: the leaves), padding included.
    pub fn layer_len(&self, k: usize) -> usize {
        self.lens[k]
    }
}

/// Matrices of one height, hashed as one row (their rows concatenated in batch order).
struct Group<'a, M> {
    matrices: Vec<&'a M>,
    height: usize,
}

impl GpuKeccak {
    /// Plonky3's Keccak tree over `matrices` (every height on its ladder below the tallest,
    /// checked by the caller), resident on the GPU, in one submission.
    pub fn commit_batch<F: GpuField, M: Matrix<F>>(&self, matrices: &[M]) -> Result<GpuKeccakTree> {
        let mut order: Vec<&M> = matrices.iter().collect();
        order.sort_by_key(|m| std::cmp::Reverse(m.height()));
        let groups: Vec<Group<'_, M>> =
            order.chunk_by(|a, b| a.height() == b.height()).map(|g| Group { matrices: g.to_vec(), height: g[0].height() }).collect();
        let tallest =
            groups.first().filter(|g| g.height > 0).ok_or_else(|| GpuError::InvalidInput("a Keccak tree over no rows (commit at least one)".into()))?;
        // Layer lengths, and the group joining at each level.
        let mut lens = vec![padded_layer_len(tallest.height)];
        let mut joins: Vec<Option<usize>> = vec![None];
        let mut next_group = 1;
        while *lens.last().expect("the leaf layer") > 1 {
            let raw = lens.last().expect("a layer") / 2;
            let join = groups.get(next_group).filter(|g| g.height.next_power_of_two() == raw.next_power_of_two()).map(|_| next_group);
            next_group += usize::from(join.is_some());
            lens.push(padded_layer_len(raw));
            joins.push(join);
        }
        if let Some(g) = groups.get(next_group) {
            return Err(GpuError::InvalidInput(format!("matrices of {} rows join no level of a tree over {} rows", g.height, tallest.height)));
        }
        self.ctx.check_binding_size("Keccak digest layer", (lens[0] * DIGEST_WORDS * 4) as u64)?;
        let ctx = &self.ctx;
        ctx.scoped("Keccak Merkle commit", || {
            let layers: Vec<wgpu::Buffer> = lens.iter().map(|&len| ctx.storage("keccak digest layer", len * DIGEST_WORDS)).collect();
            let mut batch = ctx.batch("keccak merkle commit");
            // Only the padding past what the kernels write must be zero digests.
            for (k, layer) in layers.iter().enumerate() {
                let written = if k == 0 { tallest.height } else { lens[k - 1] / 2 };
                if written < lens[k] {
                    batch.clear_from(layer, (written * DIGEST_WORDS * 4) as u64);
                }
            }
            self.record_leaves(&mut batch, &tallest.matrices, &layers[0])?;
            let compress = ctx.pipeline(Kernel::KeccakCompress, &[])?;
            let inject = ctx.pipeline(Kernel::KeccakCompressInject, &[])?;
            for k in 1..lens.len() {
                let nodes = lens[k - 1] / 2;
                let dispatch = match joins[k] {
                    None => {
                        let params = ctx.uniform("keccak compress params", &[nodes as u32, 0, 0, 0]);
                        let bind = ctx.bind_buffers(&compress, &[&params, &layers[k - 1], &layers[k]]);
                        Dispatch { pipeline: (*compress).clone(), bind, groups: nodes.div_ceil(GROUP) as u32 }
                    }
                    Some(g) => {
                        let joining = &groups[g];
                        let digests = batch.scratch("keccak joining digests", joining.height * DIGEST_WORDS);
                        self.record_leaves(&mut batch, &joining.matrices, &digests)?;
                        let params = ctx.uniform("keccak inject params", &[nodes as u32, joining.height as u32, 0, 0]);
                        let bind =
                            ctx.bind_at(&inject, &[(0, &params, 0, None), (1, &layers[k - 1], 0, None), (2, &layers[k], 0, None), (3, &digests, 0, None)]);
                        Dispatch { pipeline: (*inject).clone(), bind, groups: nodes.div_ceil(GROUP) as u32 }
                    }
                };
                batch.record_as("keccak compress", &[dispatch]);
            }
            let slot = batch.read(layers.last().expect("a root layer"), 0, DIGEST_WORDS);
            let root = digests_of(ctx.run(batch)?.get(slot)?)[0];
            Ok(GpuKeccakTree { height: tallest.height, root, layers, lens: lens.clone(), _ctx: ctx.clone() })
        })
    }

    /// The digests at `(layer, index)` positions of `tree`, in one transfer.
    pub fn read_digests(&self, tree: &GpuKeccakTree, positions: &[(usize, usize)]) -> Result<Vec<KeccakDigest>> {
        if let Some(&(k, i)) = positions.iter().find(|&&(k, i)| k >= tree.lens.len() || i >= tree.lens[k]) {
            return Err(GpuError::InvalidInput(format!("digest {i} of layer {k} in a tree of {} layers", tree.lens.len())));
        }
        if positions.is_empty() {
            return Ok(Vec::new());
        }
        let ctx = &self.ctx;
        ctx.scoped("Keccak digests", || {
            let mut batch = ctx.batch("keccak digests");
            let slots: Vec<_> = positions.iter().map(|&(k, i)| batch.read(&tree.layers[k], i * DIGEST_WORDS, DIGEST_WORDS)).collect();
            let readback = ctx.run(batch)?;
            slots.into_iter().map(|slot| readback.get(slot).map(|w| digests_of(w)[0])).collect()
        })
    }

    /// Records the leaf digests of the rows of `matrices` (one height; a row is their rows
    /// concatenated) into the start of `out`, in row chunks of at most one binding, each uploaded
    /// as it is recorded.
    pub(super) fn record_leaves<F: GpuField, M: Matrix<F>>(&self, batch: &mut Batch<'_>, matrices: &[&M], out: &wgpu::Buffer) -> Result<()> {
        let ctx = &self.ctx;
        let height = matrices.first().map_or(0, |m| m.height());
        let width: usize = matrices.iter().map(|m| m.width()).sum();
        if width == 0 {
            return Err(GpuError::InvalidInput("Keccak leaves of rows of width 0 (give rows at least one element)".into()));
        }
        let chunk = self.chunk_rows(width, height)?;
        let pipeline = ctx.pipeline(Kernel::KeccakLeaves, &[])?;
        let mut dispatches = Vec::new();
        for first in (0..height).step_by(chunk) {
            let count = chunk.min(height - first);
            let rows = ctx.upload_rows("keccak rows", count, width, |r, write| {
                for m in matrices {
                    write_matrix_row(*m, first + r, write);
                }
            })?;
            let params = ctx.uniform("keccak leaf params", &[count as u32, width as u32, 0, 0]);
            let digests = (first * DIGEST_WORDS * 4) as u64;
            let bind = ctx.bind_ranges(&pipeline, &[(&params, 0, None), (&rows, 0, None), (out, digests, Some((count * DIGEST_WORDS * 4) as u64))]);
            batch.lend(rows);
            dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: count.div_ceil(GROUP) as u32 });
        }
        batch.record_as("keccak leaves", &dispatches);
        Ok(())
    }

    /// Rows a leaf dispatch hashes at once: all of them where they fit one binding, else a power
    /// of two whose digests start on the adapter's offset alignment.
    fn chunk_rows(&self, width: usize, rows: usize) -> Result<usize> {
        let max_binding = self.ctx.max_binding_bytes() as usize;
        let row_bytes = width.max(1) * 4;
        if rows * row_bytes <= max_binding {
            return Ok(rows.max(1));
        }
        let fit = max_binding / row_bytes;
        let chunk = if fit == 0 { 0 } else { 1usize << fit.ilog2() };
        let align = self.ctx.limits().min_storage_buffer_offset_alignment as usize;
        if chunk == 0 || !(chunk * DIGEST_WORDS * 4).is_multiple_of(align) {
            return Err(GpuError::InvalidInput(format!(
                "Keccak leaves of {width} elements a row: too wide for this adapter's {max_binding}-byte bindings in row chunks on its {align}-byte offset alignment"
            )));
        }
        Ok(chunk)
    }
}
