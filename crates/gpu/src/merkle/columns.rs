//! Trees over matrices absorbed a block of columns at a time (leaf sponge states kept between
//! blocks; the tree over them is a [`TreeRows::Columns`]).

use super::*;

impl<F: Poseidon2Field> GpuMerkle<F> {
    /// Whether the leaf sponge states of a `height`-row matrix absorbed by column blocks (16 or
    /// 24 words a row, the sponge's width; [`column_leaves`](Self::column_leaves)) fit one binding.
    /// Keccak trees absorb no column blocks: false.
    pub fn column_leaves_fit(&self, height: usize) -> bool {
        !self.keccak && matrix_bytes(height, self.leaf_sponge().width()).is_ok_and(|b| b <= self.poseidon2.context().max_binding_bytes())
    }

    /// Leaves for a `height` x `width` matrix to be absorbed a block of columns at a time: its
    /// sponge states (the sponge's width in words a row) and leaf digests (32 bytes a row), each
    /// within one binding. An error for heights that are not powers of two or states over one
    /// binding.
    pub fn column_leaves(&self, height: usize, width: usize) -> Result<ColumnLeaves> {
        if height == 0 || !height.is_power_of_two() || width == 0 {
            return Err(GpuError::InvalidInput(format!("column leaves for a {height} x {width} matrix (power-of-two heights, some columns)")));
        }
        if self.keccak {
            return Err(GpuError::InvalidInput("Keccak trees take whole rows (commit the matrix, not column blocks)".into()));
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
    pub fn record_absorb(&self, batch: &mut Batch<'_>, leaves: &mut ColumnLeaves, block: &wgpu::Buffer, cols: usize) -> Result<()> {
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
        batch.record_as("merkle absorb", &[dispatch]);
        leaves.absorbed = end;
        Ok(())
    }
}
