//! Host-to-host transforms: a transform whose result replaces its input in place, and
//! transforms over more columns than one binding holds, a block of columns at a time.

use super::*;

/// Why [`GpuNtt::transform_chain_in_place`] failed, and whether its input survived.
#[derive(Debug)]
pub struct InPlaceError {
    /// What went wrong.
    pub error: GpuError,
    /// The input was partly overwritten (the readback failed midway): it cannot be used to
    /// compute the result another way.
    pub input_lost: bool,
}

impl GpuNtt {
    /// [`transform_chain`](Self::transform_chain) whose result replaces `values` in its own
    /// allocation (grown where the result is larger): no fresh host pages to fault in, no
    /// gigabyte to free. Transfers go in pooled chunks, the readback drained on all cores while
    /// later chunks cross the bus. On an error before the readback writes anything `values` is
    /// untouched. Larger than one binding, the result is a fresh allocation
    /// ([`transform_columns`](Self::transform_columns)).
    pub fn transform_chain_in_place<F: GpuField>(&self, values: &mut Vec<F>, specs: &[NttSpec<F>]) -> std::result::Result<(), InPlaceError> {
        self.transform_chain_in_place_then(values, specs, None)
    }

    /// [`transform_chain_in_place`](Self::transform_chain_in_place), handing the result to
    /// `hooks` while it is on the GPU, before its buffers go back to the pool: `whole` with the
    /// one buffer that holds it, or, larger than one binding, `block` for each column block
    /// and then `blocks_done`. Not called on an error.
    pub fn transform_chain_in_place_then<F: GpuField>(
        &self,
        values: &mut Vec<F>,
        specs: &[NttSpec<F>],
        hooks: Option<ResultHooks<'_>>,
    ) -> std::result::Result<(), InPlaceError> {
        let kept = |error: GpuError| InPlaceError { error, input_lost: false };
        let last = check_chain(values.len(), specs).map_err(kept)?;
        if !self.fits_one_binding(values.len(), last) {
            // A block of columns at a time cannot share the input's rows: a fresh result.
            *values = self.transform_columns_then(values, last.width, specs, hooks).map_err(kept)?;
            if let Some(hooks) = hooks {
                (hooks.blocks_done)();
            }
            return Ok(());
        }
        let out_len = last.rows() * last.width;
        let chunk_rows = self.readback_chunk_rows(last);
        let old_len = values.len();
        // Grown while the input is its length, so a reallocation keeps it (the error paths
        // hand it back).
        values.reserve_exact(out_len.saturating_sub(old_len));
        let fresh_bytes = out_len.saturating_sub(old_len) * 4;
        let fresh = crate::transfer::SendPtr(values.as_mut_ptr().wrapping_add(old_len).cast::<u8>());
        std::thread::scope(|scope| {
            // The grown part is fresh memory the readback touches first: its page faults are
            // taken on threads of their own while the input goes up, the GPU transforms and the
            // rows below it are read back.
            let prefaulting = std::sync::Mutex::new(self.touch_ahead(scope, fresh, fresh_bytes));
            let prefaulted = |range: std::ops::Range<usize>| {
                if range.end > old_len * 4 {
                    for handle in prefaulting.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
                        handle.join().expect("a prefault thread panicked");
                    }
                }
            };
            let mut batch = self.ctx.batch("ntt");
            let recorded = self.ctx.scoped("NTT", || self.record_chain_from(&mut batch, values, specs, chunk_rows));
            let (buffer, tail) = recorded.map_err(kept)?;
            let encoder = batch.take_encoder();
            values.clear();
            // No reference to the result's memory is made here: the prefault threads write the
            // grown part until the readback's `before_write` joins them.
            let dst = values.as_mut_ptr().cast::<u8>();
            let record_chunk = ChunkPasses::recorder(self, &tail);
            let how = ReadChunks {
                // Each chunk's last passes run just before its copy, while the host drains the
                // chunks before it.
                chunk_bytes: tail.as_ref().map(|t| t.chunk_bytes as usize),
                before_copy: Some(&record_chunk),
                before_write: Some(&prefaulted),
            };
            // A non-canonical word would be a kernel bug: checked while the readback copies.
            // SAFETY: the capacity holds out_len words (reserved above), which only the readback
            // and, in the grown part until joined, the prefault threads write; a GpuField element is
            // one u32 word (repr(transparent)).
            let read = unsafe { self.ctx.submit_and_read_chunked_into_raw(encoder, &buffer, dst, out_len * 4, Some(F::ORDER_U32), how) };
            drop(record_chunk);
            drop(tail);
            if let (Some(hooks), true) = (hooks, read.is_ok()) {
                (hooks.whole)(&buffer);
            }
            batch.lend(buffer);
            drop(batch);
            if let Err((error, input_lost)) = read {
                if !input_lost {
                    // SAFETY: nothing was written; the first old_len words are the input, kept by
                    // `reserve_exact` (which moves contents if it reallocates).
                    unsafe { values.set_len(old_len) };
                }
                return Err(InPlaceError { error, input_lost });
            }
            Ok(())
        })?;
        // SAFETY: all out_len words were written by the readback.
        unsafe { values.set_len(out_len) };
        Ok(())
    }
}

impl GpuNtt {
    /// Columns a host-to-host transform of `rows_out` output rows takes at once: as many as fit
    /// one binding (input and output), all of `width` where they fit. An error when not even one
    /// column does.
    pub fn columns_per_pass(&self, rows_in: usize, rows_out: usize, width: usize) -> Result<usize> {
        let binding = self.ctx.max_binding_bytes() as usize;
        let per_column = rows_in.max(rows_out).max(1) * 4;
        let columns = binding / per_column;
        if columns == 0 {
            return Err(GpuError::TooLarge { what: format!("one column of a {rows_out}-row NTT"), needed: per_column as u64, limit: binding as u64 });
        }
        Ok(columns.min(width.max(1)))
    }

    /// [`transform_chain`](Self::transform_chain) of a row-major matrix too large for one
    /// binding, a block of columns at a time (each column is its own transform): the block's
    /// row segments are uploaded straight from `values`, transformed, and read back into
    /// `out` (row-major, `width` wide) at the same columns. `specs` are for the full width.
    pub fn transform_columns<F: GpuField>(&self, values: &[F], width: usize, specs: &[NttSpec<F>]) -> Result<Vec<F>> {
        self.transform_columns_then(values, width, specs, None)
    }

    /// [`transform_columns`](Self::transform_columns) with each block handed to `hooks.block`
    /// once it is read back, before its buffer goes back to the pool (`hooks.whole` and
    /// `blocks_done` are not called here).
    pub fn transform_columns_then<F: GpuField>(&self, values: &[F], width: usize, specs: &[NttSpec<F>], hooks: Option<ResultHooks<'_>>) -> Result<Vec<F>> {
        let last = check_chain(values.len(), specs)?;
        if let Some(spec) = specs.iter().find(|s| s.width != width) {
            return Err(GpuError::InvalidInput(format!("a spec of width {} for a matrix of width {width}", spec.width)));
        }
        let rows_in = specs[0].valid_rows;
        let rows_out = last.rows();
        let most = self.columns_per_pass(rows_in, rows_out, width)?;
        // Blocks of the hooks' multiple where at least one fits; otherwise no hooks.
        let multiple = hooks.map_or(1, |h| h.block_multiple.max(1));
        let (block, hooks) = match most / multiple * multiple {
            0 => (most, None),
            block => (block, hooks),
        };
        // Zeroed lazily (calloc): nothing is touched before the readback writes it, and its
        // page faults are taken on threads of their own while the first block goes up and is
        // transformed (the first block's rows span every page).
        let mut out = vec![0u32; rows_out * width];
        let fresh = crate::transfer::SendPtr(out.as_mut_ptr().cast::<u8>());
        std::thread::scope(|scope| {
            let mut prefaulting = self.touch_ahead(scope, fresh, rows_out * width * 4);
            for first_col in (0..width).step_by(block) {
                let cols = block.min(width - first_col);
                let sub: Vec<NttSpec<F>> = specs.iter().map(|s| NttSpec { width: cols, ..*s }).collect();
                self.ctx.scoped("NTT column block", || {
                    let input = self
                        .ctx
                        .upload_rows("ntt columns", rows_in, cols, |r, write| write(as_words(&values[r * width + first_col..r * width + first_col + cols])))?;
                    let mut batch = self.ctx.batch("ntt columns");
                    let last = sub.last().expect("a spec");
                    let chunk_rows = self.readback_chunk_rows(last);
                    let (buffer, tail) = self.record_specs(&mut batch, input, &sub, chunk_rows)?;
                    let encoder = batch.take_encoder();
                    let record_chunk = ChunkPasses::recorder(self, &tail);
                    let how = ReadChunks { chunk_bytes: tail.as_ref().map(|t| t.chunk_bytes as usize), before_copy: Some(&record_chunk), before_write: None };
                    for handle in prefaulting.drain(..) {
                        handle.join().expect("a prefault thread panicked");
                    }
                    let read = self.ctx.submit_and_read_rows_into(encoder, &buffer, rows_out, cols, &mut out, width, first_col, how);
                    drop(record_chunk);
                    drop(tail);
                    // The block hook sees the finished block once it is read back: the GPU runs
                    // its work while the host fills the next block's upload (recorded in the
                    // last chunk's encoder, it would hold that chunk's copy back instead).
                    if let (Some(hooks), true) = (hooks, read.is_ok()) {
                        let mut after = self.ctx.batch("ntt column block hook");
                        (hooks.block)(&mut after, &buffer, first_col, cols);
                        // In its own error scope: work the hook recorded that fails (it was
                        // told of its own recording errors) fails the hook's, not the block
                        // that was read back.
                        if let Err(e) = self.ctx.scoped("NTT column block hook", || self.ctx.send(after)) {
                            tracing::debug!("a column block hook's work failed: {e}");
                        }
                    }
                    batch.lend(buffer);
                    drop(batch);
                    read
                })?;
            }
            Ok::<(), GpuError>(())
        })?;
        words_to::<F>(out)
    }
}
