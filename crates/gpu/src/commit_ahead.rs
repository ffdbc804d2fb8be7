//! Committing a low-degree extension while it is still on the GPU.
//!
//! Plonky3's `TwoAdicFriPcs::commit` computes each LDE with its DFT, which hands the result back
//! in host memory, and then gives that very matrix to its MMCS, which would upload it again: a
//! second crossing of the bus for the largest matrix of a STARK (1.4 GB at 2^16 Keccak rows). A
//! [`GpuDft`](crate::GpuDft) built with
//! [`committing_ahead_for`](crate::GpuDft::committing_ahead_for) hashes its result into the
//! MMCS's tree before giving the GPU buffer up, and leaves the tree here with a checksum of the
//! rows it read back; the [`GpuMmcs`](crate::GpuMmcs) takes that tree when it is asked to
//! commit a single matrix of the same shape whose rows still give the same checksum, and commits
//! from scratch otherwise (another matrix, or the same one changed in between). An LDE over one
//! binding, transformed a block of columns at a time, has each row's leaf sponge carried from
//! block to block ([`ColumnLeaves`]), so its tree is built without the matrix ever being whole
//! on the GPU.
//!
//! The rows are checksummed on the GPU before the buffer is given up ([`RowChecksum`]: keyed NH
//! sums per group of rows, a fraction of a millisecond there), and by the host once, when the
//! MMCS is handed a matrix: the tree is taken only if every group sums the same. That guards
//! against a caller changing the matrix between the two calls, not against an adversary who
//! knows the key (a prover gains nothing by fooling its own MMCS: the commitment would be to
//! rows it could have committed anyway). The DFT submits the tree and the checksum and returns
//! without waiting: the GPU hashes while the host sums the matrix it is handed back.

use std::sync::{Arc, Mutex, MutexGuard};

use p3_baby_bear::BabyBear;

use crate::field::GpuField;
use crate::poseidon2::Poseidon2Field;
use p3_matrix::Matrix;

use crate::context::{Batch, InFlight, ReadSlot};
use crate::error::Result;
use crate::field::as_words;
use crate::merkle::{ColumnLeaves, GpuMerkle, GpuMerkleTree, RecordedTree, TreeRows, TreeSpec};
use crate::row_checksum::{self, RowChecksum};

/// A tree on its way, and the checksum sums of the rows it is built from: one batch, submitted.
struct Ahead<F: GpuField> {
    height: usize,
    width: usize,
    read: InFlight,
    /// Where the checksum sums lie in the readback.
    sums: ReadSlot,
    tree: RecordedTree<F>,
}

/// The hand-off between a DFT and an MMCS on one GPU (see the module docs).
pub struct CommitAhead<F: Poseidon2Field = BabyBear> {
    merkle: Arc<GpuMerkle<F>>,
    checksum: RowChecksum,
    /// The checksum key for the last row width used, on the host and on the GPU (a STARK's
    /// LDEs committed ahead are all of one width).
    key: Mutex<Option<ChecksumKey>>,
    slot: Mutex<Option<Ahead<F>>>,
}

/// The checksum key for one row width, on the host and on the GPU.
struct ChecksumKey {
    width: usize,
    words: Arc<[u32]>,
    buffer: wgpu::Buffer,
}

/// A result computed a block of columns at a time, while its blocks are absorbed: the leaves'
/// sponge states, and each checksum group's sums so far with the key they were taken with.
/// Empty before the first block and after a failure.
#[derive(Default)]
pub(crate) struct ColumnProgress(Mutex<Option<(ColumnLeaves, wgpu::Buffer, wgpu::Buffer)>>);

impl ColumnProgress {
    fn lock(&self) -> MutexGuard<'_, Option<(ColumnLeaves, wgpu::Buffer, wgpu::Buffer)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a DFT hands its results to, whatever the field of the tree they go into (a `GpuDft<F>`
/// holds its `CommitAhead<F>` as this).
pub(crate) trait AheadSink: Send + Sync {
    fn offer(&self, buffer: &wgpu::Buffer, height: usize, width: usize);
    fn column_block_multiple(&self, height: usize) -> usize;
    #[allow(clippy::too_many_arguments)]
    fn absorb(&self, progress: &ColumnProgress, batch: &mut Batch<'_>, buffer: &wgpu::Buffer, height: usize, width: usize, first_col: usize, cols: usize);
    fn offer_columns(&self, progress: &ColumnProgress, height: usize, width: usize);
}

impl<F: Poseidon2Field> AheadSink for CommitAhead<F> {
    /// The DFT's side once a `height` x `width` result has been read back from `buffer`:
    /// submits its tree and its checksum on the GPU and leaves both for the MMCS (replacing
    /// any tree left before), without waiting. A failure only means the MMCS commits from
    /// scratch.
    fn offer(&self, buffer: &wgpu::Buffer, height: usize, width: usize) {
        let ctx = self.ctx().clone();
        // In its own error scope, as every commit: a device error fails it, not a later one.
        let ahead = ctx.scoped("Merkle commit ahead", || {
            let bytes = crate::field::matrix_bytes(height, width)?;
            let (_, key) = self.key(width);
            let groups = row_checksum::groups(height, width);
            let mut batch = ctx.batch("merkle commit ahead");
            let sums = batch.scratch("row checksums", groups * 4);
            RowChecksum::record(&ctx, batch.encoder(), &key, (buffer, bytes), height, (width, 0, width, width), &sums, false)?;
            let sums = batch.read(&sums, 0, groups * 4);
            ctx.check_binding_size("Merkle leaves", crate::field::matrix_bytes(height, crate::merkle::DIGEST_ELEMS)?)?;
            let tree = self.merkle.record_tree(&mut batch, TreeRows::Matrix(buffer), TreeSpec::new(height, width))?;
            Ok(Ahead { height, width, read: ctx.submit_batch(batch)?, sums, tree })
        });
        self.store(ahead, height, width);
    }

    /// Columns per block (all but the last a multiple of) for a `height`-row result computed a
    /// block of columns at a time: the sponge's rate where the leaves' states fit a binding;
    /// otherwise 1, the blocks stay whole and no tree is committed ahead.
    fn column_block_multiple(&self, height: usize) -> usize {
        if self.merkle.column_leaves_fit(height) {
            self.merkle.leaf_rate()
        } else {
            1
        }
    }

    /// The DFT's side for a `height` x `width` result computed a block of columns at a time:
    /// records the absorption of the block in `buffer` (columns `first_col..first_col + cols`
    /// of every row) into the rows' leaves, and its checksum sums, into `batch`. A failure
    /// drops them.
    #[allow(clippy::too_many_arguments)]
    fn absorb(&self, progress: &ColumnProgress, batch: &mut Batch<'_>, buffer: &wgpu::Buffer, height: usize, width: usize, first_col: usize, cols: usize) {
        let mut state = progress.lock();
        if first_col != 0 && state.is_none() {
            // An earlier block failed.
            return;
        }
        // In its own error scope: a failure here (memory, a pipeline) drops the leaves. (The
        // batch is the transform's hook batch, sent in a scope of its own: work left
        // in it that then fails validation fails nothing else, and a block whose absorb or sums
        // went missing cannot match the host's sums.)
        let ctx = self.ctx().clone();
        let absorbed = ctx.scoped("Merkle commit ahead", || {
            if first_col == 0 {
                let leaves = self.merkle.column_leaves(height, width)?;
                let sums = ctx.pooled_storage("row checksums", row_checksum::groups(height, width) * 4);
                let (_, key) = self.key(width);
                *state = Some((leaves, sums, key));
            }
            let (leaves, sums, key) = state.as_mut().expect("made at the first block");
            self.merkle.record_absorb(batch, leaves, buffer, cols)?;
            let bytes = crate::field::matrix_bytes(height, cols)?;
            RowChecksum::record(&ctx, batch.encoder(), key, (buffer, bytes), height, (cols, first_col, cols, width), sums, first_col != 0)
        });
        if let Err(e) = absorbed {
            tracing::debug!("no tree committed ahead for a {height} x {width} result: {e}");
            *state = None;
        }
    }

    /// The DFT's side once every block of a `height` x `width` result is absorbed: submits the
    /// tree's levels and the checksum sums' readback, and leaves both for the MMCS.
    fn offer_columns(&self, progress: &ColumnProgress, height: usize, width: usize) {
        let Some((leaves, sums, _key)) = progress.lock().take() else {
            // A block failed: no tree for this result, and none left from before.
            self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            return;
        };
        let ctx = self.ctx().clone();
        let ahead = ctx.scoped("Merkle commit ahead", || {
            let mut batch = ctx.batch("merkle levels");
            let slot = batch.read(&sums, 0, row_checksum::groups(height, width) * 4);
            batch.lend(sums);
            let tree = self.merkle.record_tree(&mut batch, TreeRows::Columns(leaves), TreeSpec::new(height, width))?;
            Ok(Ahead { height, width, read: ctx.submit_batch(batch)?, sums: slot, tree })
        });
        self.store(ahead, height, width);
    }
}

/// A `GpuDft` commits ahead results from 32 MiB up: below that the upload it saves is small
/// (docs/benchmarks-history.md), and LDEs that are committed as a batch of several (a STARK's
/// quotient chunks: 4 MiB each at 2^17 Keccak rows) never have their tree taken.
pub const DEFAULT_COMMIT_AHEAD_MIN_BYTES: usize = 32 << 20;

impl<F: Poseidon2Field> CommitAhead<F> {
    /// A hand-off whose trees are built with `merkle`, holding no tree yet.
    pub fn new(merkle: Arc<GpuMerkle<F>>) -> Self {
        Self { merkle, checksum: RowChecksum::new(), key: Mutex::new(None), slot: Mutex::new(None) }
    }

    /// The checksum key for rows of `width` words, made and uploaded once per width.
    fn key(&self, width: usize) -> (Arc<[u32]>, wgpu::Buffer) {
        let mut cached = self.key.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(key) = cached.as_ref().filter(|k| k.width == width) {
            return (key.words.clone(), key.buffer.clone());
        }
        let words: Arc<[u32]> = self.checksum.key(width).into();
        let buffer = self.ctx().upload("checksum key", &words);
        *cached = Some(ChecksumKey { width, words: words.clone(), buffer: buffer.clone() });
        (words, buffer)
    }

    /// The tree builder the trees committed ahead are built with.
    pub fn merkle(&self) -> &Arc<GpuMerkle<F>> {
        &self.merkle
    }

    fn ctx(&self) -> &Arc<crate::GpuContext> {
        self.merkle.poseidon2().context()
    }

    /// Leaves a tree committed ahead (or nothing, after a failure) in the slot.
    fn store(&self, ahead: Result<Ahead<F>>, height: usize, width: usize) {
        let ahead = ahead.map_err(|e| tracing::debug!("no tree committed ahead for a {height} x {width} result: {e}")).ok();
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = ahead;
    }

    /// The MMCS's side, on every commit: the tree committed ahead for a batch of one `matrix`,
    /// if there is one of its shape and its rows give the same checksum (summed here while the
    /// GPU may still be building the tree). Any tree left is dropped either way
    /// (`TwoAdicFriPcs` commits right after its DFTs; a tree the next commit does not take
    /// would only hold GPU memory).
    pub(crate) fn take<M: Matrix<F>>(&self, batch: &[M]) -> Option<GpuMerkleTree<F>> {
        let ahead = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        let [matrix] = batch else { return None };
        let (height, width) = (matrix.height(), matrix.width());
        if (ahead.height, ahead.width) != (height, width) {
            return None;
        }
        let started = std::time::Instant::now();
        let (key, _) = self.key(width);
        let sums = RowChecksum::host_sums(&key, height, width, |r| RowWords(matrix.row_slice(r).expect("row in range")));
        let summed = started.elapsed();
        let ctx = self.ctx();
        let Ahead { read, sums: slot, tree, .. } = ahead;
        let taken = ctx.finish_batch(read).and_then(|r| match RowChecksum::from_words(r.get(slot)?) == sums {
            true => tree.finish(&r).map(Some),
            false => Ok(None),
        });
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        tracing::debug!(height, width, summed_ms = ms(summed), ms = ms(started.elapsed()), "tree committed ahead taken");
        match taken {
            Ok(Some(tree)) => Some(tree),
            Ok(None) => {
                tracing::debug!("the {height} x {width} matrix changed since its tree was committed ahead; committing it again");
                None
            }
            Err(e) => {
                tracing::debug!("the tree committed ahead for a {height} x {width} matrix failed ({e}); committing it again");
                None
            }
        }
    }
}

/// A matrix row as its words.
struct RowWords<R>(R);

impl<F: GpuField, R: std::ops::Deref<Target = [F]>> std::ops::Deref for RowWords<R> {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        as_words(&self.0)
    }
}
