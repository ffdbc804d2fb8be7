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
//! rows it could have committed anyway). Where the result is read back chunk by chunk with its
//! last passes run per chunk, the leaves of the rows each chunk finishes are hashed in the
//! encoder that copies it out, so the GPU hashes while the host drains and only the tree's
//! levels are left after the last chunk.

use std::sync::{Arc, Mutex, MutexGuard};

use p3_baby_bear::BabyBear;
use p3_matrix::Matrix;

use crate::error::Result;
use crate::field::as_words;
use crate::merkle::{ColumnLeaves, GpuMerkle, GpuMerkleTree, RowLeaves, DIGEST_ELEMS};
use crate::row_checksum::{self, GroupSums, RowChecksum};

/// A tree waiting for its matrix, and the checksum of the rows it was built from.
struct Ahead {
    height: usize,
    width: usize,
    sums: Vec<GroupSums>,
    tree: GpuMerkleTree,
}

/// The hand-off between a DFT and an MMCS on one GPU (see the module docs).
pub struct CommitAhead {
    merkle: Arc<GpuMerkle>,
    checksum: RowChecksum,
    slot: Mutex<Option<Ahead>>,
}

/// What one result committed ahead has on the GPU while it is computed and read back.
#[derive(Default)]
enum Progress {
    #[default]
    NotStarted,
    /// In one buffer: the leaves of the rows finished so far.
    Rows(RowLeaves),
    /// A block of columns at a time: the leaves' sponge states, and each checksum group's sums
    /// so far with the key they were taken with.
    Columns { leaves: ColumnLeaves, sums: wgpu::Buffer, key: wgpu::Buffer },
    /// Something failed: the one-buffer tree is built whole at the end; column blocks give up.
    Failed,
}

/// One result's commit-ahead state, from its DFT's start to the offer of its tree.
#[derive(Default)]
pub(crate) struct InProgress(Mutex<Progress>);

impl InProgress {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A `GpuDft` commits ahead results from 32 MiB up: below that the upload it saves is about a
/// millisecond, and LDEs that are committed as a batch of several (a STARK's quotient chunks:
/// 4 MiB each at 2^17 Keccak rows) never have their tree taken.
pub const DEFAULT_COMMIT_AHEAD_MIN_BYTES: usize = 32 << 20;

impl CommitAhead {
    pub fn new(merkle: Arc<GpuMerkle>) -> Self {
        Self { merkle, checksum: RowChecksum::new(), slot: Mutex::new(None) }
    }

    pub fn merkle(&self) -> &Arc<GpuMerkle> {
        &self.merkle
    }

    fn ctx(&self) -> &Arc<crate::GpuContext> {
        self.merkle.poseidon2().context()
    }

    /// The DFT's side, before a readback chunk is copied out of `buffer` (a `height` x `width`
    /// result in one buffer), once its first `words` words are final: records the leaves of
    /// the rows they complete into `encoder` (the one that copies the chunk), so the GPU hashes
    /// while the host drains earlier chunks. A failure leaves the tree to be built whole in
    /// [`offer`](Self::offer).
    pub(crate) fn rows_final(&self, progress: &InProgress, encoder: &mut wgpu::CommandEncoder, buffer: &wgpu::Buffer, words: usize, height: usize, width: usize) {
        let mut state = progress.lock();
        let rows = (words / width.max(1)).min(height);
        // Leaf ranges start at multiples of 8 rows (binding offsets).
        let rows = if rows == height { rows } else { rows / 8 * 8 };
        // In its own error scope: a failure here leaves the transform whose encoder this is alone.
        let recorded = self.ctx().scoped("Merkle commit ahead", || {
            if matches!(*state, Progress::NotStarted) {
                *state = Progress::Rows(self.merkle.row_leaves(height, width)?);
            }
            match &mut *state {
                Progress::Rows(leaves) => self.merkle.record_row_leaves(encoder, leaves, buffer, rows),
                _ => Ok(()),
            }
        });
        if let Err(e) = recorded {
            tracing::debug!("no leaves hashed ahead for a {height} x {width} result: {e}");
            *state = Progress::Failed;
        }
    }

    /// The DFT's side once a `height` x `width` result has been read back from `buffer`: the
    /// rest of its tree and its checksum on the GPU, both left for the MMCS (replacing any
    /// tree left before). A failure only means the MMCS commits from scratch.
    pub(crate) fn offer(&self, progress: &InProgress, buffer: &wgpu::Buffer, height: usize, width: usize) {
        let state = std::mem::take(&mut *progress.lock());
        let started = std::time::Instant::now();
        let ctx = self.ctx().clone();
        // In its own error scope, as every commit: a device error fails it, not a later one.
        let ahead = ctx.scoped("Merkle commit ahead", || {
            let bytes = crate::merkle::matrix_bytes(height, width)?;
            let key = ctx.upload("checksum key", &self.checksum.key(width));
            let groups = row_checksum::groups(height, width);
            let sums = ctx.pooled_storage("row checksums", groups * 4);
            let mut encoder = ctx.encoder("merkle commit ahead");
            let recorded = RowChecksum::record(&ctx, &mut encoder, &key, (buffer, bytes), height, (width, 0, width, width), &sums, false);
            let tree = recorded.and_then(|()| match state {
                Progress::Rows(mut leaves) => {
                    self.merkle.record_row_leaves(&mut encoder, &mut leaves, buffer, height)?;
                    self.merkle.commit_row_leaves(encoder, leaves)
                }
                _ => self.merkle.commit_recorded(encoder, buffer, height, width),
            });
            let read = tree.and_then(|tree| Ok((tree, ctx.submit_and_read(ctx.encoder("row checksums"), &sums, groups * 4)?)));
            ctx.recycle_storage(sums);
            let (tree, words) = read?;
            Ok(Ahead { height, width, sums: RowChecksum::from_words(&words), tree })
        });
        self.store(ahead, height, width, started);
    }

    /// Columns per block (all but the last a multiple of) for a `height`-row result computed a
    /// block of columns at a time: the sponge's rate where the leaves' states fit a binding;
    /// otherwise 1, the blocks stay whole and no tree is committed ahead.
    pub(crate) fn column_block_multiple(&self, height: usize) -> usize {
        if self.merkle.column_leaves_fit(height) {
            DIGEST_ELEMS
        } else {
            1
        }
    }

    /// The DFT's side for a `height` x `width` result computed a block of columns at a time:
    /// records the absorption of the block in `buffer` (columns `first_col..first_col + cols`
    /// of every row) into the rows' leaves, and its checksum sums, into `encoder`. A failure
    /// drops them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn absorb(&self, progress: &InProgress, encoder: &mut wgpu::CommandEncoder, buffer: &wgpu::Buffer, height: usize, width: usize, first_col: usize, cols: usize) {
        let mut state = progress.lock();
        if first_col != 0 && !matches!(*state, Progress::Columns { .. }) {
            // An earlier block failed.
            return;
        }
        // In its own error scope: a failure here (memory, a pipeline) drops the leaves and
        // leaves the transform whose encoder this is alone.
        let ctx = self.ctx().clone();
        let absorbed = ctx.scoped("Merkle commit ahead", || {
            if first_col == 0 {
                let leaves = self.merkle.column_leaves(height, width)?;
                let sums = ctx.pooled_storage("row checksums", row_checksum::groups(height, width) * 4);
                let key = ctx.upload("checksum key", &self.checksum.key(width));
                *state = Progress::Columns { leaves, sums, key };
            }
            let Progress::Columns { leaves, sums, key } = &mut *state else { unreachable!("made at the first block") };
            self.merkle.record_absorb(encoder, leaves, buffer, cols)?;
            let bytes = crate::merkle::matrix_bytes(height, cols)?;
            RowChecksum::record(&ctx, encoder, key, (buffer, bytes), height, (cols, first_col, cols, width), sums, first_col != 0)
        });
        if let Err(e) = absorbed {
            tracing::debug!("no tree committed ahead for a {height} x {width} result: {e}");
            *state = Progress::Failed;
        }
    }

    /// The DFT's side once every block of a `height` x `width` result is absorbed: the tree's
    /// levels on the GPU and the checksum sums read back, both left for the MMCS.
    pub(crate) fn offer_columns(&self, progress: &InProgress, height: usize, width: usize) {
        let Progress::Columns { leaves, sums, key: _ } = std::mem::take(&mut *progress.lock()) else { return };
        if !leaves.complete() {
            return;
        }
        let started = std::time::Instant::now();
        let ctx = self.ctx().clone();
        let ahead = ctx.scoped("Merkle commit ahead", || {
            let tree = self.merkle.commit_column_leaves(ctx.encoder("merkle levels"), leaves);
            let groups = row_checksum::groups(height, width);
            let read = tree.and_then(|tree| Ok((tree, ctx.submit_and_read(ctx.encoder("row checksums"), &sums, groups * 4)?)));
            ctx.recycle_storage(sums);
            let (tree, words) = read?;
            Ok(Ahead { height, width, sums: RowChecksum::from_words(&words), tree })
        });
        self.store(ahead, height, width, started);
    }

    /// Leaves a tree committed ahead (or nothing, after a failure) in the slot.
    fn store(&self, ahead: Result<Ahead>, height: usize, width: usize, started: std::time::Instant) {
        tracing::debug!(height, width, ms = started.elapsed().as_secs_f64() * 1e3, "tree committed ahead");
        let ahead = ahead.map_err(|e| tracing::debug!("no tree committed ahead for a {height} x {width} result: {e}")).ok();
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = ahead;
    }

    /// The MMCS's side, on every commit: the tree committed ahead for a batch of one `matrix`,
    /// if there is one of its shape and its rows give the same checksum. Any tree left is
    /// dropped either way (`TwoAdicFriPcs` commits right after its DFTs; a tree the next commit
    /// does not take would only hold GPU memory).
    pub(crate) fn take<M: Matrix<BabyBear>>(&self, batch: &[M]) -> Option<GpuMerkleTree> {
        let ahead = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        let [matrix] = batch else { return None };
        let (height, width) = (matrix.height(), matrix.width());
        if (ahead.height, ahead.width) != (height, width) {
            return None;
        }
        let started = std::time::Instant::now();
        let key = self.checksum.key(width);
        let sums = RowChecksum::host_sums(&key, height, width, |r| RowWords(matrix.row_slice(r).expect("row in range")));
        let same = sums == ahead.sums;
        tracing::debug!(height, width, same, ms = started.elapsed().as_secs_f64() * 1e3, "checksum of a matrix committed ahead");
        if !same {
            tracing::debug!("the {height} x {width} matrix changed since its tree was committed ahead; committing it again");
            return None;
        }
        Some(ahead.tree)
    }
}

/// A matrix row as its words.
struct RowWords<R>(R);

impl<R: std::ops::Deref<Target = [BabyBear]>> std::ops::Deref for RowWords<R> {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        as_words(&self.0)
    }
}
