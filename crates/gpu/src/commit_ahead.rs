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
//! The checksum is a 64-bit keyed hash (foldhash, seeded per process) over pieces of rows, each
//! piece hashed on its own core: it guards against a caller changing the matrix between the two
//! calls, not against an adversary who knows the key (a prover gains nothing by fooling its own
//! MMCS: the commitment would be to rows it could have committed anyway).

use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};

use p3_baby_bear::BabyBear;
use p3_matrix::Matrix;
use rayon::prelude::*;

use crate::error::Result;
use crate::field::as_words;
use crate::merkle::{ColumnLeaves, GpuMerkle, GpuMerkleTree, DIGEST_ELEMS};

/// Rows per checksum piece: about 1 MiB of them, so the pieces spread over every core.
fn piece_rows(width: usize) -> usize {
    ((1 << 20) / (width.max(1) * 4)).max(1)
}

/// A tree waiting for its matrix, and the checksum of the rows it was built from.
struct Ahead {
    height: usize,
    width: usize,
    pieces: Vec<u64>,
    tree: GpuMerkleTree,
}

/// The hand-off between a DFT and an MMCS on one GPU (see the module docs).
pub struct CommitAhead {
    merkle: Arc<GpuMerkle>,
    hasher: foldhash::quality::RandomState,
    slot: Mutex<Option<Ahead>>,
}

/// A `GpuDft` commits ahead results from 32 MiB up: below that the upload it saves is about a
/// millisecond, and LDEs that are committed as a batch of several (a STARK's quotient chunks:
/// 4 MiB each at 2^17 Keccak rows) never have their tree taken.
pub const DEFAULT_COMMIT_AHEAD_MIN_BYTES: usize = 32 << 20;

impl CommitAhead {
    pub fn new(merkle: Arc<GpuMerkle>) -> Self {
        Self { merkle, hasher: Default::default(), slot: Mutex::new(None) }
    }

    pub fn merkle(&self) -> &Arc<GpuMerkle> {
        &self.merkle
    }

    /// One piece's checksum: its rows hashed one after another.
    fn hash_rows<R: std::ops::Deref<Target = [BabyBear]>>(&self, rows: impl Iterator<Item = R>) -> u64 {
        let mut h = self.hasher.build_hasher();
        for row in rows {
            h.write(bytemuck::cast_slice(as_words(&row)));
        }
        h.finish()
    }

    /// The DFT's side: `buffer` holds the `values.len() / width` x `width` rows just read back
    /// into `values`. Builds the tree on the GPU while the host takes the checksum, and leaves
    /// both for the MMCS (replacing any tree left before). A failure only means the MMCS
    /// commits from scratch.
    pub(crate) fn offer(&self, buffer: &wgpu::Buffer, values: &[BabyBear], width: usize) {
        let height = values.len() / width.max(1);
        self.store(values, width, || self.merkle.commit_buffer(buffer, height, width));
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

    /// The DFT's side for a result computed a block of columns at a time: records the
    /// absorption of the block in `buffer` (columns `first_col..first_col + cols` of every
    /// row) into the leaves kept in `leaves` (made at the first block). A failure drops them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn absorb(&self, leaves: &Mutex<Option<ColumnLeaves>>, encoder: &mut wgpu::CommandEncoder, buffer: &wgpu::Buffer, height: usize, width: usize, first_col: usize, cols: usize) {
        let mut slot = leaves.lock().unwrap_or_else(|e| e.into_inner());
        if first_col != 0 && slot.is_none() {
            // An earlier block failed.
            return;
        }
        // In its own error scope: a failure here (memory, a pipeline) drops the leaves and
        // leaves the transform whose encoder this is alone.
        let ctx = self.merkle.poseidon2().context();
        let absorbed = ctx.scoped("Merkle commit ahead", || {
            if first_col == 0 {
                *slot = Some(self.merkle.column_leaves(height, width)?);
            }
            let column_leaves = slot.as_mut().expect("made at the first block");
            self.merkle.record_absorb(encoder, column_leaves, buffer, cols)
        });
        if let Err(e) = absorbed {
            tracing::debug!("no tree committed ahead for a {height} x {width} result: {e}");
            *slot = None;
        }
    }

    /// The DFT's side once every block of `values` (`width` columns) is absorbed into
    /// `leaves`: the tree's levels on the GPU while the host takes the checksum, as [`offer`].
    ///
    /// [`offer`]: Self::offer
    pub(crate) fn offer_columns(&self, leaves: &Mutex<Option<ColumnLeaves>>, values: &[BabyBear], width: usize) {
        let Some(column_leaves) = leaves.lock().unwrap_or_else(|e| e.into_inner()).take().filter(ColumnLeaves::complete) else { return };
        let encoder = self.merkle.poseidon2().context().encoder("merkle levels");
        self.store(values, width, || self.merkle.commit_column_leaves(encoder, column_leaves));
    }

    /// Builds the tree (`build`, on the GPU) while the host takes the checksum of `values`, and
    /// leaves both in the slot.
    fn store(&self, values: &[BabyBear], width: usize, build: impl FnOnce() -> Result<GpuMerkleTree> + Send) {
        let height = values.len() / width.max(1);
        let started = std::time::Instant::now();
        let ctx = self.merkle.poseidon2().context();
        let (tree, pieces): (Result<GpuMerkleTree>, Vec<u64>) = rayon::join(
            // In its own error scope, as every commit: a device error fails it, not a later one.
            || ctx.scoped("Merkle commit ahead", build),
            || values.par_chunks(piece_rows(width) * width).map(|piece| self.hash_rows(piece.chunks(width))).collect(),
        );
        tracing::debug!(height, width, ms = started.elapsed().as_secs_f64() * 1e3, "tree committed ahead");
        let ahead = match tree {
            Ok(tree) => Some(Ahead { height, width, pieces, tree }),
            Err(e) => {
                tracing::debug!("no tree committed ahead for a {height} x {width} result: {e}");
                None
            }
        };
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
        let per = piece_rows(width);
        let started = std::time::Instant::now();
        let same = (0..ahead.pieces.len()).into_par_iter().all(|p| {
            let rows = (p * per..((p + 1) * per).min(height)).map(|r| matrix.row_slice(r).expect("row in range"));
            self.hash_rows(rows) == ahead.pieces[p]
        });
        tracing::debug!(height, width, same, ms = started.elapsed().as_secs_f64() * 1e3, "checksum of a matrix committed ahead");
        if !same {
            tracing::debug!("the {height} x {width} matrix changed since its tree was committed ahead; committing it again");
            return None;
        }
        Some(ahead.tree)
    }
}
