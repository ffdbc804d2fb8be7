//! Trees over matrices absorbed a block of columns at a time (leaf sponge states kept between blocks), and trees submitted now and finished later.

use super::*;

impl<F: Poseidon2Field> GpuMerkle<F> {
    /// Whether the leaf sponge states of a `height`-row matrix absorbed by column blocks (16 or
    /// 24 words a row, the sponge's width; [`column_leaves`](Self::column_leaves)) fit one binding.
    pub fn column_leaves_fit(&self, height: usize) -> bool {
        matrix_bytes(height, self.leaf_sponge().width()).is_ok_and(|b| b <= self.poseidon2.context().max_binding_bytes())
    }

    /// Leaves for a `height` x `width` matrix to be absorbed a block of columns at a time: its
    /// sponge states (the sponge's width in words a row) and leaf digests (32 bytes a row), each
    /// within one binding. An error for heights that are not powers of two or states over one
    /// binding.
    pub fn column_leaves(&self, height: usize, width: usize) -> Result<ColumnLeaves> {
        if height == 0 || !height.is_power_of_two() || width == 0 {
            return Err(GpuError::InvalidInput(format!("column leaves for a {height} x {width} matrix (power-of-two heights, some columns)")));
        }
        let ctx = self.poseidon2.context();
        let state = self.leaf_sponge().width();
        ctx.check_binding_size("Merkle leaf sponge states", matrix_bytes(height, state)?)?;
        Ok(ColumnLeaves {
            height,
            width,
            absorbed: 0,
            states: ctx.pooled_storage("merkle leaf states", height * state),
            leaves: ctx.pooled_storage("merkle layer", height * DIGEST_ELEMS),
        })
    }

    /// Records the absorption of the next `cols` columns of every row, held in `block` (the
    /// matrix's rows restricted to those columns, `cols` words a row, rows in order), into
    /// `leaves`. All but the block that completes the row must be a multiple of the sponge's
    /// rate ([`leaf_rate`](Self::leaf_rate): 8 or 16 columns).
    pub fn record_absorb(&self, encoder: &mut wgpu::CommandEncoder, leaves: &mut ColumnLeaves, block: &wgpu::Buffer, cols: usize) -> Result<()> {
        let rate = self.leaf_rate();
        let end = leaves.absorbed.checked_add(cols).filter(|&e| e <= leaves.width && cols > 0);
        let Some(end) = end.filter(|&e| e == leaves.width || cols.is_multiple_of(rate)) else {
            return Err(GpuError::InvalidInput(format!(
                "absorbing {cols} columns after {} of {} (blocks before the last take a multiple of {rate})",
                leaves.absorbed, leaves.width
            )));
        };
        if block.size() < matrix_bytes(leaves.height, cols)? {
            return Err(GpuError::InvalidInput(format!("a column block holds fewer than {} x {cols} words", leaves.height)));
        }
        let params =
            AbsorbParams { rows: leaves.height as u32, width: cols as u32, first: u32::from(leaves.absorbed == 0), last: u32::from(end == leaves.width) };
        let uniform = self.poseidon2.context().uniform("absorb params", &params);
        let dispatch = self.prepare_leaf(Kernel::AbsorbRows, &[&uniform, block, &leaves.states, &leaves.leaves], leaves.height)?;
        self.poseidon2.context().record_dispatches(encoder, "merkle absorb", &[dispatch]);
        leaves.absorbed = end;
        Ok(())
    }

    /// The tree over a `height` x `width` matrix in `matrix` (one binding, rows in order, every
    /// layer kept: the tree `commit_buffer` builds), recorded after the work in `encoder`,
    /// submitted with its root's readback requested; no wait. Work submitted later runs after
    /// it, so `matrix` may go back to the pool once this returns.
    pub fn submit_tree(&self, mut encoder: wgpu::CommandEncoder, matrix: &wgpu::Buffer, height: usize, width: usize) -> Result<PendingTree<F>> {
        let ctx = self.poseidon2.context();
        ctx.check_binding_size("Merkle leaves", matrix_bytes(height, DIGEST_ELEMS)?)?;
        let layers = self.record_commit(&mut encoder, matrix, height, width)?;
        self.submit_layers(encoder, layers, height, width)
    }

    /// [`submit_tree`](Self::submit_tree) over complete column `leaves`: their levels after the
    /// work in `encoder` (the blocks' absorptions, or nothing when they were submitted before).
    pub fn submit_column_tree(&self, mut encoder: wgpu::CommandEncoder, leaves: ColumnLeaves) -> Result<PendingTree<F>> {
        if !leaves.complete() {
            return Err(GpuError::InvalidInput(format!("{} of {} columns absorbed", leaves.absorbed, leaves.width)));
        }
        let ctx = self.poseidon2.context();
        let ColumnLeaves { height, width, states, leaves, .. } = leaves;
        ctx.recycle_after_submit(states);
        let mut layers = vec![leaves];
        let mut dispatches = Vec::new();
        if let Err(e) = self.push_levels(&mut layers, height, &mut dispatches) {
            layers.into_iter().for_each(|b| ctx.recycle_storage(b));
            return Err(e);
        }
        ctx.record_dispatches(&mut encoder, "merkle tree", &dispatches);
        self.submit_layers(encoder, layers, height, width)
    }

    pub(super) fn submit_layers(&self, encoder: wgpu::CommandEncoder, layers: Vec<wgpu::Buffer>, height: usize, width: usize) -> Result<PendingTree<F>> {
        let ctx = self.poseidon2.context().clone();
        let mut batch = ctx.batch_from("merkle tree", encoder);
        let root = batch.read(layers.last().expect("root"), 0, DIGEST_ELEMS);
        let read = ctx.submit_batch(batch);
        let tree = GpuMerkleTree { height, width, layers, lowest_kept: 0, root: [F::default(); DIGEST_ELEMS], row_order: RowOrder::Natural, ctx: ctx.clone() };
        Ok(PendingTree { tree, read: read?, root })
    }

    /// Waits for a [`submit_tree`](Self::submit_tree)'s root.
    pub fn finish_tree(&self, pending: PendingTree<F>) -> Result<GpuMerkleTree<F>> {
        let PendingTree { mut tree, read, root } = pending;
        let readback = self.poseidon2.context().finish_batch(read)?;
        tree.root =
            words_to::<F>(readback.get(root)?.to_vec())?.try_into().map_err(|_| GpuError::Device("a Merkle root read back with the wrong length".into()))?;
        Ok(tree)
    }
}
