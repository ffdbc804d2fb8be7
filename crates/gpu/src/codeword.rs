//! Reed–Solomon codewords committed on the GPU: a message is uploaded once, encoded and hashed
//! into its Merkle tree with one wait (for the root), and both stay resident; only the root comes back, and
//! later only the opened rows with their sibling digests. Knows nothing of WHIR: a message is a
//! row-major matrix of base-field words (extension elements as their base coefficients).

use std::sync::Arc;

use p3_baby_bear::BabyBear;

use crate::context::Dispatch;
use crate::dft::GpuEncoder;
use crate::error::{GpuError, Result};
use crate::field::as_words;
use crate::field::matrix_bytes;
use crate::merkle::{AfterRoot, RowOrder, GpuMerkle, GpuMerkleTree, OpenedRows, PendingRows, ReadingRows, RowChunk, RowGroup, DIGEST_ELEMS};
use crate::ntt::{GpuNtt, NttSpec};
use crate::shaders::Kernel;
use crate::sumcheck::{GpuSumcheck, SpongeScriptRecord, SpongeScript, SpongeScriptValues};

/// Rust twin of `BlockParams` in wgsl/util/copy_block.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BlockParams {
    rows: u32,
    cols: u32,
    src_width: u32,
    src_row: u32,
    src_col: u32,
    dst_width: u32,
    dst_col: u32,
    _pad: u32,
}

/// Where a codeword lies: one buffer, or (a codeword larger than one binding) row chunks of
/// `rows` rows each, one buffer per chunk.
enum Stored {
    One(wgpu::Buffer),
    Chunks { buffers: Vec<wgpu::Buffer>, rows: usize },
}

/// A committed codeword on the GPU. Dropping it hands its buffers back to the pools.
pub struct CommittedCodeword {
    codeword: Option<Stored>,
    tree: GpuMerkleTree,
    ntt: Arc<GpuNtt>,
}

impl CommittedCodeword {
    pub fn root(&self) -> [BabyBear; DIGEST_ELEMS] {
        self.tree.root
    }
    pub fn height(&self) -> usize {
        self.tree.height
    }
    pub fn width(&self) -> usize {
        self.tree.width
    }
    /// The codeword buffer (height x width words, row-major, rows in [`row_order`](Self::row_order));
    /// None when the codeword is split into row chunks (larger than one binding).
    pub fn buffer(&self) -> Option<&wgpu::Buffer> {
        match self.codeword.as_ref() {
            Some(Stored::One(b)) => Some(b),
            _ => None,
        }
    }

    /// How [`buffer`](Self::buffer) holds the codeword's rows (row chunks hold them in order).
    pub fn row_order(&self) -> RowOrder {
        self.tree.row_order
    }

    /// Number of buffers the codeword is split over (1 when it fits one binding).
    pub fn chunks(&self) -> usize {
        match self.codeword.as_ref() {
            Some(Stored::Chunks { buffers, .. }) => buffers.len(),
            _ => 1,
        }
    }

    fn row_chunks(buffers: &[wgpu::Buffer], rows: usize) -> Vec<RowChunk<'_>> {
        buffers.iter().enumerate().map(|(c, b)| RowChunk { rows: b, first: c * rows, count: rows }).collect()
    }
}

impl Drop for CommittedCodeword {
    fn drop(&mut self) {
        match self.codeword.take() {
            Some(Stored::One(b)) => self.ntt.recycle(b),
            Some(Stored::Chunks { buffers, .. }) => buffers.into_iter().for_each(|b| self.ntt.recycle(b)),
            None => {}
        }
    }
}

/// Encodes and commits messages on one GPU.
#[derive(Clone)]
pub struct GpuCodewords {
    ntt: Arc<GpuNtt>,
    merkle: Arc<GpuMerkle>,
    /// Narrow codewords of at least this many rows keep only their upper tree layers (see
    /// [`lowest_kept_layer`](Self::lowest_kept_layer)).
    trim_from_rows: usize,
    /// A lowest kept tree layer fixed for every codeword (`GpuTuning::codeword_tree_lowest`).
    tree_lowest: Option<usize>,
}

impl GpuCodewords {
    /// The NTT and the Merkle builder must share one context.
    pub fn new(ntt: Arc<GpuNtt>, merkle: Arc<GpuMerkle>) -> Result<Self> {
        if !Arc::ptr_eq(ntt.context(), merkle.poseidon2().context()) {
            return Err(GpuError::InvalidInput("the NTT and the Merkle builder live on different GPU contexts".into()));
        }
        let tree_lowest = ntt.context().tuning().codeword_tree_lowest;
        Ok(Self { ntt, merkle, trim_from_rows: 1 << 21, tree_lowest })
    }

    /// Trims the trees of narrow codewords of at least `rows` rows (default 2^21; tests use 1
    /// to trim every tree they can).
    pub fn with_trimmed_trees_from(mut self, rows: usize) -> Self {
        self.trim_from_rows = rows;
        self
    }

    pub fn ntt(&self) -> &Arc<GpuNtt> {
        &self.ntt
    }

    pub fn context(&self) -> &Arc<crate::GpuContext> {
        self.ntt.context()
    }

    /// Encodes `message` (rows of `width` words; a power-of-two number of rows) at rate
    /// 2^-log_inv_rate — the transform of the message padded with zero rows, which are never
    /// stored — and commits to the codeword's rows. One upload, one wait, one readback (the
    /// root).
    pub fn commit(&self, message: &[BabyBear], width: usize, log_inv_rate: usize) -> Result<CommittedCodeword> {
        let (committed, input) = self.commit_keep(message, width, log_inv_rate)?;
        self.ntt.context().recycle_storage(input);
        Ok(committed)
    }

    /// [`commit`](Self::commit) that also returns the uploaded message (a pooled buffer), for
    /// more work on it.
    pub fn commit_keep(&self, message: &[BabyBear], width: usize, log_inv_rate: usize) -> Result<(CommittedCodeword, wgpu::Buffer)> {
        if width == 0 || message.is_empty() || !message.len().is_multiple_of(width) || !(message.len() / width).is_power_of_two() {
            return Err(GpuError::InvalidInput(format!(
                "a message of {} values is not a power-of-two number of rows of width {width}",
                message.len()
            )));
        }
        let ctx = self.ntt.context().clone();
        let input = ctx.pooled_for_upload("codeword message", message.len());
        ctx.write(&input, as_words(message));
        match self.commit_buffer(&input, message.len() / width, width, log_inv_rate) {
            Ok(committed) => Ok((committed, input)),
            Err(e) => {
                ctx.recycle_storage(input);
                Err(e)
            }
        }
    }

    /// [`commit`](Self::commit) of a message already on the GPU: the first `rows` x `width`
    /// words of `message` (e.g. a folded polynomial a sumcheck left there). Nothing is uploaded.
    pub fn commit_buffer(&self, message: &wgpu::Buffer, rows: usize, width: usize, log_inv_rate: usize) -> Result<CommittedCodeword> {
        self.commit_buffer_then(message, rows, width, log_inv_rate, None).map(|(committed, _)| committed)
    }

    /// [`commit_buffer`](Self::commit_buffer) with work recorded after the root, before the one
    /// wait, read back with it ([`GpuMerkle::commit_recorded_then`]): its words come after
    /// the codeword (None where it was not run: a codeword over one binding, or a recording
    /// error).
    pub fn commit_buffer_then(&self, message: &wgpu::Buffer, rows: usize, width: usize, log_inv_rate: usize, after: Option<&mut AfterRoot<'_>>) -> Result<(CommittedCodeword, Option<Vec<u32>>)> {
        if width == 0 || !rows.is_power_of_two() {
            return Err(GpuError::InvalidInput(format!("a message of {rows} rows of width {width} (need a power-of-two number of rows)")));
        }
        let spec = GpuEncoder::spec(rows.trailing_zeros() as usize, width, log_inv_rate);
        let ctx = self.ntt.context().clone();
        // A codeword or a stored digest layer larger than one binding takes the split path. The
        // one-buffer tree stores no leaf digests for rows narrower than two digests (level 1,
        // half a digest per row, is its largest layer) and transient ones for wider rows.
        let largest_layer = if width >= 2 * DIGEST_ELEMS { matrix_bytes(spec.rows(), DIGEST_ELEMS)? } else { matrix_bytes(spec.rows(), DIGEST_ELEMS / 2)? };
        if matrix_bytes(spec.rows(), width)?.max(largest_layer) > ctx.max_binding_bytes() {
            return self.commit_blocked(message, rows, width, log_inv_rate).map(|committed| (committed, None));
        }
        ctx.scoped("codeword commit", || {
            let started = std::time::Instant::now();
            let mut encoder = ctx.encoder("codeword commit");
            // One codeword-sized buffer, not two: the encoder's work buffers are a commit's
            // largest allocation. Its rows stay in the transform's bit-reversed order (no
            // reversal pass, a fifth of the encoding's GPU time on the H200): the tree's leaves
            // and the openings read them through that order.
            let spec = NttSpec { bit_reversed_output: spec.log_n > 0, ..spec };
            let order = if spec.bit_reversed_output { RowOrder::BitReversed } else { RowOrder::Natural };
            let codeword = self.ntt.record_in_place(&mut encoder, message, &spec)?;
            // The encoding goes to the GPU at once and runs while the tree is recorded.
            if ctx.early_submits() {
                if let Err(e) = ctx.submit(std::mem::replace(&mut encoder, ctx.encoder("codeword commit"))) {
                    self.ntt.recycle(codeword);
                    return Err(e);
                }
            }
            // The lowest layers are not kept (the leaves alone are half the tree's memory): an
            // opening rebuilds the few small subtrees it needs from the codeword, which stays
            // resident anyway.
            let lowest = self.lowest_kept_layer(width, spec.rows());
            let tree = self.merkle.commit_recorded_then(encoder, &codeword, spec.rows(), width, lowest, order, after);
            tracing::debug!(rows = spec.rows(), width, ms = started.elapsed().as_secs_f64() * 1e3, "codeword encoded and committed");
            match tree {
                Ok((tree, extra)) => Ok((CommittedCodeword { codeword: Some(Stored::One(codeword)), tree, ntt: self.ntt.clone() }, extra)),
                Err(e) => {
                    self.ntt.recycle(codeword);
                    Err(e)
                }
            }
        })
    }

    /// Commits the first `rows` x `width` words of the sumcheck's f (as
    /// [`commit_buffer`](Self::commit_buffer)) and, before the same wait, runs the sponge
    /// script `script` from the root ([`GpuSumcheck::record_sponge_script`]: the root observed,
    /// points drawn and f evaluated there, a grind). Its results come back with the root (None
    /// where it could not be recorded, or for a codeword over one binding: the caller plays
    /// those steps itself).
    pub fn commit_then_script(&self, sumcheck: &GpuSumcheck, rows: usize, width: usize, log_inv_rate: usize, script: &SpongeScript) -> Result<(CommittedCodeword, Option<SpongeScriptValues>)> {
        let mut record: Option<SpongeScriptRecord> = None;
        let committed = {
            let mut after = |encoder: &mut wgpu::CommandEncoder, root: &wgpu::Buffer| -> Result<(wgpu::Buffer, usize)> {
                let r = sumcheck.record_sponge_script(encoder, root, script)?;
                let out = (r.readback().clone(), r.words());
                record = Some(r);
                Ok(out)
            };
            self.commit_buffer_then(sumcheck.f_buffer()?, rows, width, log_inv_rate, Some(&mut after))
        };
        match (committed, record) {
            (Ok((committed, Some(words))), Some(record)) => match sumcheck.finish_sponge_script(record, &words) {
                Ok(values) => Ok((committed, Some(values))),
                // The commit stands; the caller plays those steps itself.
                Err(e) => {
                    tracing::warn!("a sponge script played on the GPU came back malformed ({e}); the caller plays it on the host");
                    Ok((committed, None))
                }
            },
            (committed, record) => {
                if let Some(r) = record {
                    sumcheck.drop_sponge_script(r);
                }
                committed.map(|(c, _)| (c, None))
            }
        }
    }

    /// The lowest Merkle layer a one-buffer codeword's tree keeps. Without its leaves a tree takes
    /// ~32 bytes a row, against the codeword's 4·width: half the codeword or more for rows of 16
    /// words or fewer (fold 1 and 2's codewords, fold 4's first). Such trees of 2^21 rows or more
    /// (64 MiB of digests and up; `with_trimmed_trees_from`) keep layers from the smallest k (at
    /// most 6) at which the kept layers, about 2^(6 - k) bytes a row, take at most an eighth of
    /// the codeword. An opening then rebuilds 2^k rows per queried subtree, a few more
    /// dispatches (~0.25 ms of GPU time per opening on the H200), so smaller or wider trees,
    /// which do not decide a proof's peak memory, keep layers from 1 up.
    /// `WHIR_CODEWORD_TREE_LOWEST` fixes k (1: only the leaves dropped).
    fn lowest_kept_layer(&self, width: usize, rows: usize) -> usize {
        let fixed = self.tree_lowest;
        let by_width = || if rows < self.trim_from_rows || width > 16 { 1 } else { 128usize.div_ceil(width.max(1)).next_power_of_two().ilog2() as usize };
        let k = fixed.unwrap_or_else(by_width).clamp(1, 6);
        // Keep at least the root's two children.
        k.min(rows.max(2).ilog2() as usize - 1).max(1)
    }

    /// [`commit_buffer`](Self::commit_buffer) of a codeword (or its leaf digests) larger than
    /// one binding: the message's columns in blocks, each block encoded alone (the transform
    /// acts on columns), the transformed blocks put back together as row chunks within one
    /// binding each, and the tree built over the chunks (Plonky3's tree over the one matrix:
    /// leaves are whole rows). As in the one-buffer tree, leaf digests are not kept (openings
    /// rehash the rows they need, chunk by chunk); digest layers larger than one binding are
    /// built and read in ranges. Needs the message and one column of the codeword each within
    /// one binding, and the tree's level 1 within one buffer.
    fn commit_blocked(&self, message: &wgpu::Buffer, rows: usize, width: usize, log_inv_rate: usize) -> Result<CommittedCodeword> {
        let ctx = self.ntt.context().clone();
        let binding = ctx.max_binding_bytes();
        let codeword_rows = rows << log_inv_rate;
        // The fewest column blocks (a power of two dividing the width) whose codeword fits.
        let mut blocks = 1;
        while matrix_bytes(codeword_rows, width / blocks)? > binding {
            if !width.is_multiple_of(blocks * 2) {
                return Err(GpuError::TooLarge { what: format!("a column block of a {codeword_rows} x {width} codeword"), needed: matrix_bytes(codeword_rows, width / blocks)?, limit: binding });
            }
            blocks *= 2;
        }
        let cols = width / blocks;
        ctx.check_binding_size("the message of a codeword split into column blocks", matrix_bytes(rows, width)?)?;
        // The tree's level 1 (half a digest per row) is one buffer, bound in ranges.
        let level1 = matrix_bytes(codeword_rows, DIGEST_ELEMS / 2)?;
        let max_buffer = ctx.limits().max_buffer_size;
        if level1 > max_buffer {
            return Err(GpuError::TooLarge { what: format!("level 1 of the Merkle tree over a {codeword_rows}-row codeword"), needed: level1, limit: max_buffer });
        }
        let chunk_rows = {
            let fit = self.merkle.rows_per_chunk(width)?;
            (1usize << fit.ilog2()).min(codeword_rows)
        };
        let spec = GpuEncoder::spec(rows.trailing_zeros() as usize, cols, log_inv_rate);
        let started = std::time::Instant::now();
        let chunks: Vec<wgpu::Buffer> = (0..codeword_rows / chunk_rows).map(|_| ctx.pooled_storage("codeword rows", chunk_rows * width)).collect();
        let recorded = ctx.scoped("codeword column blocks", || {
            let pipeline = ctx.pipeline(Kernel::CopyBlock, &[])?;
            let copy = |params: BlockParams, src: &wgpu::Buffer, dst: &wgpu::Buffer| {
                let groups = (params.rows as usize * params.cols as usize).div_ceil(256) as u32;
                let params = ctx.uniform("block params", &params);
                let bind = ctx.bind_buffers(&pipeline, &[&params, src, dst]);
                Dispatch { pipeline: (*pipeline).clone(), bind, groups }
            };
            let mut encoder = ctx.encoder("codeword column blocks");
            for b in 0..blocks {
                let block_message = ctx.pooled_storage("codeword block message", rows * cols);
                let take = BlockParams { rows: rows as u32, cols: cols as u32, src_width: width as u32, src_row: 0, src_col: (b * cols) as u32, dst_width: cols as u32, dst_col: 0, _pad: 0 };
                ctx.record_dispatches(&mut encoder, "column block", &[copy(take, message, &block_message)]);
                let block = self.ntt.record_in_place(&mut encoder, &block_message, &spec);
                // Reuse of either buffer is recorded after the work reading it (in order).
                ctx.recycle_storage(block_message);
                let block = block?;
                let puts: Vec<Dispatch> = chunks
                    .iter()
                    .enumerate()
                    .map(|(c, chunk)| {
                        let put = BlockParams { rows: chunk_rows as u32, cols: cols as u32, src_width: cols as u32, src_row: (c * chunk_rows) as u32, src_col: 0, dst_width: width as u32, dst_col: (b * cols) as u32, _pad: 0 };
                        copy(put, &block, chunk)
                    })
                    .collect();
                ctx.record_dispatches(&mut encoder, "row chunks", &puts);
                self.ntt.recycle(block);
            }
            ctx.submit(encoder)
        });
        let tree = recorded.and_then(|()| {
            let row_chunks = CommittedCodeword::row_chunks(&chunks, chunk_rows);
            self.merkle.commit_groups_with(&[RowGroup { chunks: row_chunks, height: codeword_rows, width }], false)
        });
        match tree {
            Ok(tree) => {
                tracing::debug!(rows = codeword_rows, width, blocks, chunks = chunks.len(), ms = started.elapsed().as_secs_f64() * 1e3, "codeword encoded in column blocks and committed");
                Ok(CommittedCodeword { codeword: Some(Stored::Chunks { buffers: chunks, rows: chunk_rows }), tree, ntt: self.ntt.clone() })
            }
            Err(e) => {
                chunks.into_iter().for_each(|b| ctx.recycle_storage(b));
                Err(e)
            }
        }
    }

    /// Rows `indices` of a committed codeword with Plonky3's pruned multi-proof (cap height 0).
    pub fn open(&self, committed: &CommittedCodeword, indices: &[usize]) -> Result<OpenedRows> {
        match committed.codeword.as_ref().expect("present until drop") {
            Stored::One(b) => self.merkle.open_rows(&committed.tree, b, indices, 0),
            Stored::Chunks { .. } => {
                let pending = self.open_deferred(committed, indices)?;
                Ok(self.read_openings(vec![pending])?.pop().expect("one opening"))
            }
        }
    }

    /// [`open`](Self::open) without waiting; [`read_openings`](Self::read_openings) reads any
    /// number of them back in one transfer. The codeword may be dropped in between.
    pub fn open_deferred(&self, committed: &CommittedCodeword, indices: &[usize]) -> Result<PendingRows> {
        match committed.codeword.as_ref().expect("present until drop") {
            Stored::One(b) => self.merkle.open_rows_deferred(&committed.tree, b, indices, 0),
            Stored::Chunks { buffers, rows } => self.merkle.open_row_chunks_deferred(&committed.tree, &CommittedCodeword::row_chunks(buffers, *rows), indices, 0),
        }
    }

    pub fn read_openings(&self, pending: Vec<PendingRows>) -> Result<Vec<OpenedRows>> {
        self.merkle.read_pending(pending)
    }

    /// [`read_openings`](Self::read_openings) in two halves: the readback is submitted here and
    /// waited for in [`GpuMerkle::finish_reading`], after other work.
    pub fn start_reading_openings(&self, pending: Vec<PendingRows>) -> Result<ReadingRows> {
        self.merkle.start_reading(pending)
    }

    /// The second half of [`start_reading_openings`](Self::start_reading_openings).
    pub fn finish_reading_openings(&self, reading: ReadingRows) -> Result<Vec<OpenedRows>> {
        self.merkle.finish_reading(reading)
    }
}

/// The WGSL twins of this file's parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] = &[
    crate::shaders::twin_layout!(BlockParams as "BlockParams" in "util/copy_block" { rows, cols, src_width, src_row, src_col, dst_width, dst_col }),
];
