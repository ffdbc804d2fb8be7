//! Reed–Solomon codewords committed on the GPU: a message is uploaded once, encoded and hashed
//! into its Merkle tree with one wait (for the root), and both stay resident; only the root comes back, and
//! later only the opened rows with their sibling digests. Knows nothing of WHIR: a message is a
//! row-major matrix of base-field words (extension elements as their base coefficients).

use std::sync::Arc;

use p3_baby_bear::BabyBear;

use crate::context::{Batch, Dispatch, Readback};
use crate::dft::GpuEncoder;
use crate::error::{GpuError, Result};
use crate::field::matrix_bytes;
use crate::field::{as_words, GpuField};
use crate::merkle::{
    GpuMerkle, GpuMerkleTree, OpenedRows, PendingRows, RecordedTree, RowChunk, RowGroup, RowOrder, RowSource, TreeRows, TreeSpec, DIGEST_ELEMS,
};
use crate::ntt::{GpuNtt, NttSource, NttSpec};
use crate::poseidon2::Poseidon2Field;
use crate::reorder::{reverse_bits_dispatch, MessageLayout};
use crate::shaders::Kernel;

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

/// Rust twin of `HidingRowsParams` in wgsl/util/hiding_rows.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct HidingRowsParams {
    log_n: u32,
    log_rows: u32,
    cols: u32,
    rand_width: u32,
    col_offset: u32,
    t: u32,
    reversed: u32,
    log_m: u32,
    omega: u32,
    mu: u32,
    eta: u32,
    _pad: u32,
}

/// The largest coset `add_hiding_rows` transforms in one workgroup (its `MAX_M`).
const HIDING_ROWS_MAX_LOG_COSET: usize = 10;

/// A hiding message's randomness rows on the device (`t` rows of the message's width), added
/// to its message's codeword where the codeword is transformed (wgsl/util/hiding_rows.wgsl).
struct HidingRows<'a> {
    rows: &'a wgpu::Buffer,
    t: usize,
}

/// Where a codeword lies: one buffer, or (a codeword larger than one binding) row chunks of
/// `rows` rows each, one buffer per chunk.
enum Stored {
    One(wgpu::Buffer),
    Chunks { buffers: Vec<wgpu::Buffer>, rows: usize },
}

/// A committed codeword on the GPU. Dropping it hands its buffers back to the pools.
pub struct CommittedCodeword<F: GpuField = BabyBear> {
    codeword: Option<Stored>,
    tree: GpuMerkleTree<F>,
    ntt: Arc<GpuNtt>,
}

impl<F: GpuField> CommittedCodeword<F> {
    /// The Merkle root of the codeword's rows where they are committed with Poseidon2; an
    /// error for a Keccak tree ([`root_digest`](Self::root_digest)).
    pub fn root(&self) -> Result<[F; DIGEST_ELEMS]> {
        self.tree.root()
    }

    /// The Merkle root as digests of type `D` (`[F; 8]` for Poseidon2 trees, `KeccakDigest`
    /// for Keccak trees); an error for the other type.
    pub fn root_digest<D: crate::merkle::TreeDigest>(&self) -> Result<D> {
        self.tree.root_digest()
    }
    /// Rows of the codeword (the message's rows times the inverse rate).
    pub fn height(&self) -> usize {
        self.tree.height
    }
    /// Words per row.
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

impl Stored {
    /// The buffers, back to `ctx`'s pool.
    fn give_back(self, ctx: &crate::GpuContext) {
        match self {
            Stored::One(b) => ctx.recycle_storage(b),
            Stored::Chunks { buffers, .. } => buffers.into_iter().for_each(|b| ctx.recycle_storage(b)),
        }
    }
}

impl<F: GpuField> Drop for CommittedCodeword<F> {
    fn drop(&mut self) {
        if let Some(stored) = self.codeword.take() {
            stored.give_back(self.ntt.context());
        }
    }
}

/// A codeword recorded into a batch ([`GpuCodewords::record_commit`]), its root not read yet.
/// Dropped, it gives its buffers back (the batch must then not run).
pub struct RecordedCodeword<F: GpuField = BabyBear> {
    codeword: Option<Stored>,
    tree: Option<RecordedTree<F>>,
    ntt: Arc<GpuNtt>,
}

impl<F: GpuField> RecordedCodeword<F> {
    /// The buffer whose first 8 words hold the root once the batch's work runs, for work
    /// recorded after the commit.
    pub fn root_buffer(&self) -> &wgpu::Buffer {
        self.tree.as_ref().expect("present until finished").root_buffer()
    }

    /// The committed codeword, with the root its batch read back.
    pub fn finish(mut self, readback: &Readback) -> Result<CommittedCodeword<F>> {
        let tree = self.tree.take().expect("present until finished").finish(readback)?;
        Ok(CommittedCodeword { codeword: self.codeword.take(), tree, ntt: self.ntt.clone() })
    }
}

impl<F: GpuField> Drop for RecordedCodeword<F> {
    fn drop(&mut self) {
        if let Some(stored) = self.codeword.take() {
            stored.give_back(self.ntt.context());
        }
    }
}

/// Encodes and commits messages on one GPU, the trees' digests of type `D`: Poseidon2's
/// `[F; 8]` (the default) or, over a Keccak tree builder ([`GpuMerkle::with_keccak`]),
/// [`KeccakDigest`](crate::KeccakDigest).
pub struct GpuCodewords<F: Poseidon2Field = BabyBear, D = [F; DIGEST_ELEMS]> {
    ntt: Arc<GpuNtt>,
    merkle: Arc<GpuMerkle<F>>,
    /// Narrow codewords of at least this many rows keep only their upper tree layers (see
    /// [`lowest_kept_layer`](Self::lowest_kept_layer)).
    trim_from_rows: usize,
    /// A lowest kept tree layer fixed for every codeword (`GpuTuning::codeword_tree_lowest`).
    tree_lowest: Option<usize>,
    _digest: std::marker::PhantomData<fn() -> D>,
}

impl<F: Poseidon2Field, D> Clone for GpuCodewords<F, D> {
    fn clone(&self) -> Self {
        Self { ntt: self.ntt.clone(), merkle: self.merkle.clone(), trim_from_rows: self.trim_from_rows, tree_lowest: self.tree_lowest, _digest: self._digest }
    }
}

impl<F: Poseidon2Field> GpuCodewords<F> {
    /// Codewords committed with Poseidon2 trees. The NTT and the Merkle builder must share one
    /// context.
    pub fn new(ntt: Arc<GpuNtt>, merkle: Arc<GpuMerkle<F>>) -> Result<Self> {
        Self::over(ntt, merkle)
    }
}

impl<F: Poseidon2Field, D: crate::merkle::TreeDigest> GpuCodewords<F, D> {
    /// Codewords whose trees' digests are `D`: the NTT and the Merkle builder must share one
    /// context, and the builder hash with `D`'s hash (Poseidon2 for `[F; 8]`, Keccak for
    /// `KeccakDigest`: a [`GpuMerkle::with_keccak`] builder).
    pub fn over(ntt: Arc<GpuNtt>, merkle: Arc<GpuMerkle<F>>) -> Result<Self> {
        if !Arc::ptr_eq(ntt.context(), merkle.poseidon2().context()) {
            return Err(GpuError::InvalidInput("the NTT and the Merkle builder live on different GPU contexts".into()));
        }
        if !D::hashed_by(merkle.tree_hash()) {
            return Err(GpuError::InvalidInput(format!(
                "codewords with digests {} over a tree builder hashing with {:?} (Poseidon2 builders give `[F; 8]`, `GpuMerkle::with_keccak` `KeccakDigest`)",
                std::any::type_name::<D>(),
                merkle.tree_hash()
            )));
        }
        let tree_lowest = ntt.context().tuning().codeword_tree_lowest;
        Ok(Self { ntt, merkle, trim_from_rows: 1 << 21, tree_lowest, _digest: std::marker::PhantomData })
    }

    /// Trims the trees of narrow codewords of at least `rows` rows (default 2^21; tests use 1
    /// to trim every tree they can).
    pub fn with_trimmed_trees_from(mut self, rows: usize) -> Self {
        self.trim_from_rows = rows;
        self
    }

    /// The NTT that encodes the messages.
    pub fn ntt(&self) -> &Arc<GpuNtt> {
        &self.ntt
    }

    /// The tree builder (whose leaf sponge the commitments use).
    pub fn merkle(&self) -> &Arc<GpuMerkle<F>> {
        &self.merkle
    }

    /// The GPU context the NTT and the tree builder share.
    pub fn context(&self) -> &Arc<crate::GpuContext> {
        self.ntt.context()
    }

    /// Encodes `message` (rows of `width` words; a power-of-two number of rows) at rate
    /// 2^-log_inv_rate — the transform of the message padded with zero rows, which are never
    /// stored — and commits to the codeword's rows. One upload, one wait, one readback (the
    /// root).
    pub fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<CommittedCodeword<F>> {
        let rows = message_rows(message.len(), width)?;
        let ctx = self.ntt.context().clone();
        ctx.scoped("codeword commit", || {
            let mut batch = ctx.batch("codeword commit");
            let input = batch.upload("codeword message", as_words(message));
            let recorded = self.record_commit(&mut batch, &input, rows, width, log_inv_rate, MessageLayout::Rows)?;
            let readback = ctx.run(batch)?;
            recorded.finish(&readback)
        })
    }

    /// [`commit`](Self::commit) that also returns the uploaded message (a pooled buffer), for
    /// more work on it.
    pub fn commit_keep(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(CommittedCodeword<F>, wgpu::Buffer)> {
        let rows = message_rows(message.len(), width)?;
        let ctx = self.ntt.context().clone();
        let input = ctx.pooled_for_upload("codeword message", message.len());
        ctx.write(&input, as_words(message));
        self.commit_kept(input, rows, width, log_inv_rate, MessageLayout::Rows)
    }

    /// [`commit_buffer`](Self::commit_buffer) of an uploaded message, returned with the
    /// commitment (or back to the pool on an error).
    fn commit_kept(
        &self,
        input: wgpu::Buffer,
        rows: usize,
        width: usize,
        log_inv_rate: usize,
        layout: MessageLayout,
    ) -> Result<(CommittedCodeword<F>, wgpu::Buffer)> {
        match self.commit_buffer(&input, rows, width, log_inv_rate, layout) {
            Ok(committed) => Ok((committed, input)),
            Err(e) => {
                self.ntt.context().recycle_storage(input);
                Err(e)
            }
        }
    }

    /// [`commit_keep`](Self::commit_keep) of a message of `blocks` blocks of `block_words` words
    /// each, given block by block: `block(b, write)` hands block b to `write` in one or more
    /// pieces, written straight into staging memory on all cores (no host copy of the whole
    /// message, e.g. columns of tables laid side by side). Committed as rows of `width` words.
    pub fn commit_blocks_keep(
        &self,
        blocks: usize,
        block_words: usize,
        width: usize,
        log_inv_rate: usize,
        layout: MessageLayout,
        block: impl Fn(usize, &mut dyn FnMut(&[u32])) + Sync,
    ) -> Result<(CommittedCodeword<F>, wgpu::Buffer)> {
        let words = blocks.checked_mul(block_words).unwrap_or(0);
        if width == 0 || words == 0 || !words.is_multiple_of(width) || !(words / width).is_power_of_two() {
            return Err(GpuError::InvalidInput(format!(
                "a message of {blocks} blocks of {block_words} words is not a power-of-two number of rows of width {width}"
            )));
        }
        let input = self.ntt.context().upload_rows("codeword message", blocks, block_words, block)?;
        self.commit_kept(input, words / width, width, log_inv_rate, layout)
    }

    /// [`commit`](Self::commit) of a message already on the GPU: the first `rows` x `width`
    /// words of `message` (e.g. a folded polynomial a sumcheck left there), lying there as
    /// `layout` says. Nothing is uploaded; one wait.
    pub fn commit_buffer(&self, message: &wgpu::Buffer, rows: usize, width: usize, log_inv_rate: usize, layout: MessageLayout) -> Result<CommittedCodeword<F>> {
        let ctx = self.ntt.context().clone();
        ctx.scoped("codeword commit", || {
            let mut batch = ctx.batch("codeword commit");
            let recorded = self.record_commit(&mut batch, message, rows, width, log_inv_rate, layout)?;
            let readback = ctx.run(batch)?;
            recorded.finish(&readback)
        })
    }

    /// Records the encoding of the first `rows` x `width` words of `message` (lying there as
    /// `layout` says: reordered into a transient copy first where it is not row-major) and its
    /// tree into `batch` (the encoding is handed to the GPU while the tree is recorded, where
    /// the tuning asks for early submits); the root is read when the batch runs
    /// ([`RecordedCodeword::finish`]). A codeword or a stored digest layer larger than one
    /// binding is encoded by column blocks into row chunks (`record_blocked`).
    pub fn record_commit(
        &self,
        batch: &mut Batch<'_>,
        message: &wgpu::Buffer,
        rows: usize,
        width: usize,
        log_inv_rate: usize,
        layout: MessageLayout,
    ) -> Result<RecordedCodeword<F>> {
        self.record_encoded(batch, message, rows, width, log_inv_rate, layout, None)
    }

    /// [`record_commit`](Self::record_commit), with a hiding message's randomness rows added to
    /// the codeword where given.
    #[allow(clippy::too_many_arguments)]
    fn record_encoded(
        &self,
        batch: &mut Batch<'_>,
        message: &wgpu::Buffer,
        rows: usize,
        width: usize,
        log_inv_rate: usize,
        layout: MessageLayout,
        hiding: Option<&HidingRows<'_>>,
    ) -> Result<RecordedCodeword<F>> {
        let MessageLayout::ReversedIndices { words } = layout else {
            return self.record_rows(batch, message, rows, width, log_inv_rate, hiding);
        };
        if words == 0 || !width.is_multiple_of(words) || !(width / words).is_power_of_two() || !rows.is_power_of_two() {
            return Err(GpuError::InvalidInput(format!(
                "a message of {rows} rows of {width} words in elements of {words} words, at bit-reversed indices (need powers of two)"
            )));
        }
        let ctx = self.ntt.context().clone();
        let reordered = ctx.pooled_storage("codeword message, reordered", rows * width);
        let dispatch = reverse_bits_dispatch(&ctx, message, &reordered, rows.ilog2() as usize, (width / words).ilog2() as usize, words);
        let recorded = dispatch.and_then(|d| {
            batch.record(&[d]);
            self.record_rows(batch, &reordered, rows, width, log_inv_rate, hiding)
        });
        // Back to the pool when the batch, which reads it, is done.
        batch.lend(reordered);
        recorded
    }

    /// Commits a hiding codeword of the polynomial `poly` (2^m values in their natural
    /// order) folded `fold` variables at a time in prefix order (row r, column b of the
    /// message is poly[b·2^(m-fold) + r]), with `randomness` rows after it
    /// ([`record_commit_hiding`](Self::record_commit_hiding)). Returns the commitment and the
    /// polynomial held at bit-reversed indices (a pooled buffer of 2^m words: the table a
    /// prefix-order sumcheck binds, `GpuSumcheck::with_reversed_indices`). The polynomial and
    /// the randomness rows are uploaded once each; one wait.
    pub fn commit_hiding_polynomial(&self, poly: &[F], fold: usize, randomness: &[F], log_inv_rate: usize) -> Result<(CommittedCodeword<F>, wgpu::Buffer)> {
        if !poly.len().is_power_of_two() || fold > poly.len().ilog2() as usize {
            return Err(GpuError::InvalidInput(format!(
                "a polynomial of {} values folded {fold} variables at a time (need 2^m values, m >= the fold)",
                poly.len()
            )));
        }
        let m = poly.len().ilog2() as usize;
        let ctx = self.ntt.context().clone();
        // The message's binding, checked before anything is recorded.
        ctx.check_binding_size("a hiding codeword's message", matrix_bytes(poly.len() >> fold, 1 << fold)?)?;
        ctx.memory().try_reserve("a hiding polynomial", 4 * poly.len() as u64)?;
        let reversed = ctx.pooled_storage("hiding polynomial, bit-reversed", poly.len());
        let committed = ctx.scoped("hiding codeword commit", || {
            let started = std::time::Instant::now();
            let mut batch = ctx.batch("hiding codeword commit");
            let natural = batch.upload("hiding polynomial", as_words(poly));
            let uploaded = started.elapsed();
            batch.record(&[reverse_bits_dispatch(&ctx, &natural, &reversed, m, 0, 1)?]);
            let recorded = self.record_commit_hiding(
                &mut batch,
                &reversed,
                1 << (m - fold),
                1 << fold,
                MessageLayout::ReversedIndices { words: 1 },
                randomness,
                log_inv_rate,
            )?;
            let recorded_at = started.elapsed();
            let readback = ctx.run(batch)?;
            let finished = recorded.finish(&readback);
            tracing::debug!(
                upload_ms = uploaded.as_secs_f64() * 1e3,
                record_ms = (recorded_at - uploaded).as_secs_f64() * 1e3,
                run_ms = (started.elapsed() - recorded_at).as_secs_f64() * 1e3,
                "hiding codeword committed"
            );
            finished
        });
        match committed {
            Ok(committed) => Ok((committed, reversed)),
            Err(e) => {
                ctx.recycle_storage(reversed);
                Err(e)
            }
        }
    }

    /// Records the commitment of a hiding (zero-knowledge) codeword: the transform of the
    /// first `rows` x `width` words of `message` (lying there as `layout` says) followed by
    /// the rows of `randomness` (row-major, `width` words a row) and zero rows, at rate
    /// 2^-log_inv_rate of the message's rows — Plonky3's interleaved ZK Reed–Solomon encoding,
    /// whose domain is the plain codeword's. By linearity it is the message's plain codeword
    /// plus the randomness rows' values, x^rows · Σ_j r_j x^j at each point x, added where the
    /// codeword is transformed: no padded copy of the message, so a hiding message takes the
    /// bindings a plain one takes.
    #[allow(clippy::too_many_arguments)]
    pub fn record_commit_hiding(
        &self,
        batch: &mut Batch<'_>,
        message: &wgpu::Buffer,
        rows: usize,
        width: usize,
        layout: MessageLayout,
        randomness: &[F],
        log_inv_rate: usize,
    ) -> Result<RecordedCodeword<F>> {
        if width == 0 || !rows.is_power_of_two() || !randomness.len().is_multiple_of(width) {
            return Err(GpuError::InvalidInput(format!(
                "a hiding message of {rows} rows of {width} words with {} randomness words (need a power-of-two number of rows and whole randomness rows)",
                randomness.len()
            )));
        }
        let t = randomness.len() / width;
        // Plonky3's encoding pads [message | randomness] to a power of two of rows within the domain.
        if rows.checked_shl(log_inv_rate as u32).is_none_or(|domain| domain < (rows + t).next_power_of_two()) {
            return Err(GpuError::InvalidInput(format!("{t} randomness rows do not fit a codeword of {rows} message rows at rate 2^-{log_inv_rate}")));
        }
        if message.size() < 4 * (rows * width) as u64 {
            return Err(GpuError::InvalidInput(format!("a message buffer of {} bytes for {rows} rows of {width} words", message.size())));
        }
        if t == 0 {
            return self.record_encoded(batch, message, rows, width, log_inv_rate, layout, None);
        }
        let uploaded = batch.upload("hiding randomness rows", as_words(randomness));
        self.record_encoded(batch, message, rows, width, log_inv_rate, layout, Some(&HidingRows { rows: &uploaded, t }))
    }

    /// Records the addition of `hiding`'s randomness rows to `cols` columns (from column
    /// `col_offset` of rows `width` wide) of a codeword of 2^log_n rows, stored in `target`
    /// in natural or bit-reversed row order, of a message of `rows` rows.
    #[allow(clippy::too_many_arguments)]
    fn record_hiding_rows(
        &self,
        batch: &mut Batch<'_>,
        hiding: &HidingRows<'_>,
        target: &wgpu::Buffer,
        rows: usize,
        log_n: usize,
        (cols, width, col_offset): (usize, usize, usize),
        reversed: bool,
    ) -> Result<()> {
        let ctx = self.ntt.context().clone();
        // Cosets of M >= t points, each one small transform (wgsl/util/hiding_rows.wgsl), where
        // a coset fits a workgroup and divides the message's rows; otherwise t products a value
        // (Horner).
        let log_m = hiding.t.max(2).next_power_of_two().ilog2() as usize;
        let by_cosets = log_m <= HIDING_ROWS_MAX_LOG_COSET && rows >= 1 << log_m && log_m <= log_n;
        let omega = F::two_adic_generator(log_n);
        let word = |v: F| as_words(std::slice::from_ref(&v))[0];
        let params = HidingRowsParams {
            log_n: log_n as u32,
            log_rows: rows.ilog2(),
            cols: cols as u32,
            rand_width: width as u32,
            col_offset: col_offset as u32,
            t: hiding.t as u32,
            reversed: u32::from(reversed),
            log_m: log_m as u32,
            omega: word(omega),
            mu: word(omega.exp_u64(rows as u64)),
            eta: word(omega.exp_power_of_2(log_n.saturating_sub(log_m))),
            _pad: 0,
        };
        let (kernel, groups) =
            if by_cosets { (Kernel::AddHidingRows, 1usize << (log_n - log_m)) } else { (Kernel::AddHidingRowsHorner, (1usize << log_n).div_ceil(256)) };
        let pipeline = ctx.pipeline_for(F::ID, kernel, &[])?;
        let params = ctx.uniform("hiding rows params", &params);
        let bind = ctx.bind_buffers(&pipeline, &[&params, hiding.rows, target]);
        batch.record_as("hiding rows", &[Dispatch { pipeline: (*pipeline).clone(), bind, groups: groups as u32 }]);
        Ok(())
    }

    /// [`record_commit`](Self::record_commit)'s body.
    fn record_rows(
        &self,
        batch: &mut Batch<'_>,
        message: &wgpu::Buffer,
        rows: usize,
        width: usize,
        log_inv_rate: usize,
        hiding: Option<&HidingRows<'_>>,
    ) -> Result<RecordedCodeword<F>> {
        if width == 0 || !rows.is_power_of_two() {
            return Err(GpuError::InvalidInput(format!("a message of {rows} rows of width {width} (need a power-of-two number of rows)")));
        }
        let spec = GpuEncoder::<F>::spec(rows.trailing_zeros() as usize, width, log_inv_rate);
        let ctx = self.ntt.context().clone();
        // A codeword or a stored digest layer larger than one binding takes the split path. The
        // one-buffer tree stores no leaf digests for rows narrower than two digests (level 1,
        // half a digest per row, is its largest layer) and transient ones for wider rows.
        let largest_layer = if width >= 2 * DIGEST_ELEMS { matrix_bytes(spec.rows(), DIGEST_ELEMS)? } else { matrix_bytes(spec.rows(), DIGEST_ELEMS / 2)? };
        if matrix_bytes(spec.rows(), width)?.max(largest_layer) > ctx.max_binding_bytes() {
            return self.record_blocked(batch, message, rows, width, log_inv_rate, hiding);
        }
        let started = std::time::Instant::now();
        // One codeword-sized buffer, not two: the encoder's work buffers are a commit's
        // largest allocation. Its rows stay in the transform's bit-reversed order (no
        // reversal pass, a good share of the encoding's GPU time; docs/benchmarks-history.md):
        // the tree's leaves and the openings read them through that order.
        let spec = NttSpec { bit_reversed_output: spec.log_n > 0, ..spec };
        let order = if spec.bit_reversed_output { RowOrder::BitReversed } else { RowOrder::Natural };
        let codeword = self.ntt.record(batch, NttSource::OneBuffer(message), &spec)?;
        // From here the record owns the codeword: it goes back to the pool on any error.
        let mut recorded = RecordedCodeword { codeword: Some(Stored::One(codeword)), tree: None, ntt: self.ntt.clone() };
        if let (Some(hiding), Some(Stored::One(codeword))) = (hiding, recorded.codeword.as_ref()) {
            self.record_hiding_rows(batch, hiding, codeword, rows, spec.log_n, (width, width, 0), spec.bit_reversed_output)?;
        }
        // The encoding goes to the GPU at once and runs while the tree is recorded.
        batch.submit_part()?;
        // The lowest layers are not kept (the leaves alone are half the tree's memory): an
        // opening rebuilds the few small subtrees it needs from the codeword, which stays
        // resident anyway.
        let lowest = self.lowest_kept_layer(width, spec.rows());
        let Some(Stored::One(codeword)) = recorded.codeword.as_ref() else { unreachable!("one buffer") };
        let tree_spec = TreeSpec::new(spec.rows(), width).keeping_from(lowest).with_order(order);
        recorded.tree = Some(self.merkle.record_tree(batch, TreeRows::Matrix(codeword), tree_spec)?);
        tracing::debug!(rows = spec.rows(), width, ms = started.elapsed().as_secs_f64() * 1e3, "codeword encoding and tree recorded");
        Ok(recorded)
    }

    /// The lowest Merkle layer a one-buffer codeword's tree keeps. Without its leaves a tree takes
    /// ~32 bytes a row, against the codeword's 4·width: half the codeword or more for rows of 16
    /// words or fewer (fold 1 and 2's codewords, fold 4's first). Such trees of 2^21 rows or more
    /// (64 MiB of digests and up; `with_trimmed_trees_from`) keep layers from the smallest k (at
    /// most 6) at which the kept layers, about 2^(6 - k) bytes a row, take at most an eighth of
    /// the codeword. An opening then rebuilds 2^k rows per queried subtree, a few more
    /// dispatches (GPU time per opening; docs/benchmarks-history.md), so smaller or wider trees,
    /// which do not decide a proof's peak memory, keep layers from 1 up.
    /// `WHIR_CODEWORD_TREE_LOWEST` fixes k (1: only the leaves dropped).
    fn lowest_kept_layer(&self, width: usize, rows: usize) -> usize {
        let fixed = self.tree_lowest;
        let by_width = || if rows < self.trim_from_rows || width > 16 { 1 } else { 128usize.div_ceil(width.max(1)).next_power_of_two().ilog2() as usize };
        let k = fixed.unwrap_or_else(by_width).clamp(1, 6);
        // Keep at least the root's two children.
        k.min(rows.max(2).ilog2() as usize - 1).max(1)
    }

    /// [`record_commit`](Self::record_commit) of a codeword (or its leaf digests) larger than
    /// one binding: the message's columns in blocks, each block encoded alone (the transform
    /// acts on columns), the transformed blocks put back together as row chunks within one
    /// binding each, and the tree built over the chunks (Plonky3's tree over the one matrix:
    /// leaves are whole rows). As in the one-buffer tree, leaf digests are not kept (openings
    /// rehash the rows they need, chunk by chunk); digest layers larger than one binding are
    /// built and read in ranges. Needs the message and one column of the codeword each within
    /// one binding, and the tree's level 1 within one buffer.
    fn record_blocked(
        &self,
        batch: &mut Batch<'_>,
        message: &wgpu::Buffer,
        rows: usize,
        width: usize,
        log_inv_rate: usize,
        hiding: Option<&HidingRows<'_>>,
    ) -> Result<RecordedCodeword<F>> {
        let ctx = self.ntt.context().clone();
        let codeword_rows = rows << log_inv_rate;
        let (blocks, chunk_rows) = self.block_layout(rows, width, log_inv_rate)?;
        let cols = width / blocks;
        let spec = GpuEncoder::<F>::spec(rows.trailing_zeros() as usize, cols, log_inv_rate);
        let started = std::time::Instant::now();
        let chunks: Vec<wgpu::Buffer> = (0..codeword_rows / chunk_rows).map(|_| ctx.pooled_storage("codeword rows", chunk_rows * width)).collect();
        // From here the record owns the chunks: they go back to the pool on any error.
        let mut recorded = RecordedCodeword { codeword: Some(Stored::Chunks { buffers: chunks, rows: chunk_rows }), tree: None, ntt: self.ntt.clone() };
        let Some(Stored::Chunks { buffers: chunks, .. }) = recorded.codeword.as_ref() else { unreachable!("row chunks") };
        let pipeline = ctx.pipeline_for(F::ID, Kernel::CopyBlock, &[])?;
        let copy = |params: BlockParams, src: &wgpu::Buffer, dst: &wgpu::Buffer| {
            let groups = (params.rows as usize * params.cols as usize).div_ceil(256) as u32;
            let params = ctx.uniform("block params", &params);
            let bind = ctx.bind_buffers(&pipeline, &[&params, src, dst]);
            Dispatch { pipeline: (*pipeline).clone(), bind, groups }
        };
        for b in 0..blocks {
            let block_message = ctx.pooled_storage("codeword block message", rows * cols);
            let take = BlockParams {
                rows: rows as u32,
                cols: cols as u32,
                src_width: width as u32,
                src_row: 0,
                src_col: (b * cols) as u32,
                dst_width: cols as u32,
                dst_col: 0,
                _pad: 0,
            };
            batch.record_as("column block", &[copy(take, message, &block_message)]);
            let block = self.ntt.record(batch, NttSource::OneBuffer(&block_message), &spec);
            // Reuse of either buffer is recorded after the work reading it (in order).
            batch.reuse(block_message);
            let block = block?;
            if let Some(hiding) = hiding {
                // Reuse of `block` below is recorded after this reads it.
                let added = self.record_hiding_rows(batch, hiding, &block, rows, spec.log_n, (cols, width, b * cols), spec.bit_reversed_output);
                if let Err(e) = added {
                    batch.reuse(block);
                    return Err(e);
                }
            }
            let puts: Vec<Dispatch> = chunks
                .iter()
                .enumerate()
                .map(|(c, chunk)| {
                    let put = BlockParams {
                        rows: chunk_rows as u32,
                        cols: cols as u32,
                        src_width: cols as u32,
                        src_row: (c * chunk_rows) as u32,
                        src_col: 0,
                        dst_width: width as u32,
                        dst_col: (b * cols) as u32,
                        _pad: 0,
                    };
                    copy(put, &block, chunk)
                })
                .collect();
            batch.record_as("row chunks", &puts);
            batch.reuse(block);
        }
        let group = [RowGroup { chunks: CommittedCodeword::<F>::row_chunks(chunks, chunk_rows), height: codeword_rows, width }];
        let tree = self.merkle.record_tree(batch, TreeRows::Groups(&group), TreeSpec::new(codeword_rows, width).keeping_from(1))?;
        recorded.tree = Some(tree);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(rows = codeword_rows, width, blocks, chunks = codeword_rows / chunk_rows, ms, "codeword recorded in column blocks");
        Ok(recorded)
    }

    /// How [`record_blocked`](Self::record_blocked) splits a `rows` x `width` message at rate
    /// 2^-log_inv_rate: the fewest column blocks (a power of two dividing the width) whose
    /// codeword fits one binding, and the codeword's rows per row chunk; checked against the
    /// adapter's limits (the message within one binding, the tree's level 1 within one buffer).
    fn block_layout(&self, rows: usize, width: usize, log_inv_rate: usize) -> Result<(usize, usize)> {
        let ctx = self.ntt.context();
        let binding = ctx.max_binding_bytes();
        let codeword_rows = rows << log_inv_rate;
        let mut blocks = 1;
        while matrix_bytes(codeword_rows, width / blocks)? > binding {
            if !width.is_multiple_of(blocks * 2) {
                return Err(GpuError::TooLarge {
                    what: format!("a column block of a {codeword_rows} x {width} codeword"),
                    needed: matrix_bytes(codeword_rows, width / blocks)?,
                    limit: binding,
                });
            }
            blocks *= 2;
        }
        ctx.check_binding_size("the message of a codeword split into column blocks", matrix_bytes(rows, width)?)?;
        // The tree's level 1 (half a digest per row) is one buffer, bound in ranges.
        let level1 = matrix_bytes(codeword_rows, DIGEST_ELEMS / 2)?;
        let max_buffer = ctx.limits().max_buffer_size;
        if level1 > max_buffer {
            return Err(GpuError::TooLarge {
                what: format!("level 1 of the Merkle tree over a {codeword_rows}-row codeword"),
                needed: level1,
                limit: max_buffer,
            });
        }
        let fit = self.merkle.rows_per_chunk(width)?;
        Ok((blocks, (1usize << fit.ilog2()).min(codeword_rows)))
    }

    /// Rows `indices` of a committed codeword with Plonky3's pruned multi-proof (cap height 0):
    /// one submission, one readback.
    pub fn open(&self, committed: &CommittedCodeword<F>, indices: &[usize]) -> Result<OpenedRows<F>> {
        let ctx = self.ntt.context();
        let mut batch = ctx.batch("codeword openings");
        let slot = self.record_open(&mut batch, committed, indices)?.read(&mut batch);
        let readback = ctx.run(batch)?;
        slot.finish(&readback)
    }

    /// Records the opening of rows `indices` of a committed codeword into `batch`
    /// ([`GpuMerkle::record_openings`]): read it back with [`PendingRows::read`], in this batch
    /// or a later one. The codeword may be dropped once the batch is submitted.
    pub fn record_open(&self, batch: &mut Batch<'_>, committed: &CommittedCodeword<F>, indices: &[usize]) -> Result<PendingRows> {
        match committed.codeword.as_ref().expect("present until drop") {
            Stored::One(b) => self.merkle.record_openings(batch, &committed.tree, RowSource::One(b), indices, 0),
            Stored::Chunks { buffers, rows } => {
                let chunks = CommittedCodeword::<F>::row_chunks(buffers, *rows);
                self.merkle.record_openings(batch, &committed.tree, RowSource::Chunks(&chunks), indices, 0)
            }
        }
    }
}

/// The rows of a message of `len` values in rows of `width`: an error unless they are a
/// power of two (and there are some).
fn message_rows(len: usize, width: usize) -> Result<usize> {
    if width == 0 || len == 0 || !len.is_multiple_of(width) || !(len / width).is_power_of_two() {
        return Err(GpuError::InvalidInput(format!("a message of {len} values is not a power-of-two number of rows of width {width}")));
    }
    Ok(len / width)
}

/// The WGSL twins of this file's parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] = &[
    crate::shaders::twin_layout!(BlockParams as "BlockParams" in "util/copy_block" { rows, cols, src_width, src_row, src_col, dst_width, dst_col }),
    crate::shaders::twin_layout!(HidingRowsParams as "HidingRowsParams" in "util/hiding_rows" {
        log_n, log_rows, cols, rand_width, col_offset, t, reversed, log_m, omega, mu, eta
    }),
];
