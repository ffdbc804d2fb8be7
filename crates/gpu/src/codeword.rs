//! Reed–Solomon codewords committed on the GPU: a message is uploaded once, encoded and hashed
//! into its Merkle tree in one submission, and both stay resident; only the root comes back, and
//! later only the opened rows with their sibling digests. Knows nothing of WHIR: a message is a
//! row-major matrix of base-field words (extension elements as their base coefficients).

use std::sync::Arc;

use p3_baby_bear::BabyBear;

use crate::dft::GpuEncoder;
use crate::error::{GpuError, Result};
use crate::field::as_words;
use crate::merkle::{GpuMerkle, GpuMerkleTree, OpenedRows, PendingRows, DIGEST_ELEMS};
use crate::ntt::GpuNtt;

/// A committed codeword on the GPU. Dropping it hands its buffers back to the pools.
pub struct CommittedCodeword {
    codeword: Option<wgpu::Buffer>,
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
    /// The codeword buffer (height x width words, row-major, natural order).
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.codeword.as_ref().expect("present until drop")
    }
}

impl Drop for CommittedCodeword {
    fn drop(&mut self) {
        if let Some(b) = self.codeword.take() {
            self.ntt.recycle(b);
        }
    }
}

/// Encodes and commits messages on one GPU.
#[derive(Clone)]
pub struct GpuCodewords {
    ntt: Arc<GpuNtt>,
    merkle: Arc<GpuMerkle>,
}

impl GpuCodewords {
    /// The NTT and the Merkle builder must share one context.
    pub fn new(ntt: Arc<GpuNtt>, merkle: Arc<GpuMerkle>) -> Result<Self> {
        if !Arc::ptr_eq(ntt.context(), merkle.poseidon2().context()) {
            return Err(GpuError::InvalidInput("the NTT and the Merkle builder live on different GPU contexts".into()));
        }
        Ok(Self { ntt, merkle })
    }

    pub fn ntt(&self) -> &Arc<GpuNtt> {
        &self.ntt
    }

    pub fn context(&self) -> &Arc<crate::GpuContext> {
        self.ntt.context()
    }

    /// Encodes `message` (rows of `width` words; a power-of-two number of rows) at rate
    /// 2^-log_inv_rate — the transform of the message padded with zero rows, which are never
    /// stored — and commits to the codeword's rows. One upload, one submission, one readback
    /// (the root).
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
        let input = ctx.pooled_storage("codeword message", message.len());
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
        if width == 0 || !rows.is_power_of_two() {
            return Err(GpuError::InvalidInput(format!("a message of {rows} rows of width {width} (need a power-of-two number of rows)")));
        }
        let spec = GpuEncoder::spec(rows.trailing_zeros() as usize, width, log_inv_rate);
        let ctx = self.ntt.context().clone();
        ctx.scoped("codeword commit", || {
            let started = std::time::Instant::now();
            let mut encoder = ctx.encoder("codeword commit");
            // One codeword-sized buffer, not two: the encoder's work buffers are a commit's
            // largest allocation.
            let codeword = self.ntt.record_in_place(&mut encoder, message, &spec)?;
            // Leaf digests are not kept (half the tree's memory): an opening rehashes the few
            // sibling rows it needs from the codeword, which stays resident anyway.
            let tree = self.merkle.commit_recorded_with(encoder, &codeword, spec.rows(), width, false);
            tracing::debug!(rows = spec.rows(), width, ms = started.elapsed().as_secs_f64() * 1e3, "codeword encoded and committed");
            match tree {
                Ok(tree) => Ok(CommittedCodeword { codeword: Some(codeword), tree, ntt: self.ntt.clone() }),
                Err(e) => {
                    self.ntt.recycle(codeword);
                    Err(e)
                }
            }
        })
    }

    /// Rows `indices` of a committed codeword with Plonky3's pruned multi-proof (cap height 0).
    pub fn open(&self, committed: &CommittedCodeword, indices: &[usize]) -> Result<OpenedRows> {
        self.merkle.open_rows(&committed.tree, committed.buffer(), indices, 0)
    }

    /// [`open`](Self::open) without waiting; [`read_openings`](Self::read_openings) reads any
    /// number of them back in one transfer. The codeword may be dropped in between.
    pub fn open_deferred(&self, committed: &CommittedCodeword, indices: &[usize]) -> Result<PendingRows> {
        self.merkle.open_rows_deferred(&committed.tree, committed.buffer(), indices, 0)
    }

    pub fn read_openings(&self, pending: Vec<PendingRows>) -> Result<Vec<OpenedRows>> {
        self.merkle.read_pending(pending)
    }
}
