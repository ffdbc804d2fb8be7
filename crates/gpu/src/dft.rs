//! Plonky3 adapters: `GpuDft<F>` is a `TwoAdicSubgroupDft<F>`, `GpuEncoder<F>` an `Encoder<F>`
//! that never reads or transforms the zero tail of a padded message, for F = BabyBear (the
//! default) or KoalaBear.
//! Both do small inputs on the CPU (where a GPU round trip costs more than the transform) and
//! fall back to the CPU, with a warning, if the GPU fails or the input exceeds its limits.

use std::sync::{Arc, OnceLock};

use p3_baby_bear::BabyBear;
use p3_commit::Encoder;
use p3_dft::{Radix2DFTSmallBatch, Radix2DitParallel, TwoAdicSubgroupDft};
use p3_koala_bear::KoalaBear;
use p3_matrix::bitrev::{BitReversalPerm, BitReversedMatrixView};
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::Matrix;
use p3_util::log2_strict_usize;

use crate::commit_ahead::{AheadSink, ColumnProgress, DEFAULT_COMMIT_AHEAD_MIN_BYTES};
use crate::context::GpuContext;
use crate::error::{GpuError, Result};
use crate::field::GpuField;
use crate::mmcs::GpuMmcs;
use crate::ntt::{Direction, GpuNtt, InPlaceError, NttSpec, ResultHooks};

/// Below this many field elements a one-column transform runs on the CPU by default: the GPU's
/// fixed cost (upload, submit, wait, readback) dominates there. Measured; see docs/benchmarks-history.md.
pub const DEFAULT_CPU_THRESHOLD: usize = 1 << 14;

/// Output elements from which the GPU's host-to-host transform beats Plonky3's on all cores,
/// by width: Plonky3's DFT parallelises over columns, so the wider the matrix the larger the
/// transform must be before the GPU's transfers pay off. Measured against the host's cores
/// (docs/benchmarks-history.md, "CPU threshold"): one column from 2^14 elements, 16 columns from
/// 2^25 (about even at 2^20 rows), 2633 columns at 2^15 rows well past it; widths between 1 and
/// 16 are interpolated (2^14 · width^2.75).
pub fn default_gpu_min_elements(width: usize) -> usize {
    let w = width.clamp(1, 16) as f64;
    ((DEFAULT_CPU_THRESHOLD as f64) * w.powf(2.75)).round().min((1u64 << 25) as f64) as usize
}

/// The process-wide default GPU (WHIR_ADAPTER or the high-performance adapter), opened once;
/// `None` when there is none.
pub fn default_ntt() -> Option<Arc<GpuNtt>> {
    static NTT: OnceLock<Option<Arc<GpuNtt>>> = OnceLock::new();
    NTT.get_or_init(|| match GpuContext::new_default() {
        Ok(ctx) => Some(Arc::new(GpuNtt::new(Arc::new(ctx)))),
        Err(e) => {
            tracing::warn!("no GPU for GpuDft, using the CPU: {e}");
            None
        }
    })
    .clone()
}

/// Shared between `GpuDft` and `GpuEncoder`: which GPU, when to stay on the CPU.
#[derive(Clone)]
struct Dispatcher<F: GpuField> {
    gpu: Option<Arc<GpuNtt>>,
    cpu: Radix2DFTSmallBatch<F>,
    /// Fewest output elements to send to the GPU; None: `default_gpu_min_elements` by width.
    cpu_threshold: Option<usize>,
}

impl<F: GpuField> Dispatcher<F> {
    fn new(gpu: Option<Arc<GpuNtt>>) -> Self {
        Self { gpu, cpu: Radix2DFTSmallBatch::default(), cpu_threshold: None }
    }

    /// The GPU to use for a job touching `elements` output elements, if any.
    fn gpu_for(&self, elements: usize, width: usize) -> Option<&GpuNtt> {
        let threshold = self.cpu_threshold.unwrap_or_else(|| default_gpu_min_elements(width));
        self.gpu.as_deref().filter(|_| elements >= threshold)
    }

    /// Runs `specs` on the GPU with the result in `values`' own memory; false (after a warning)
    /// when the caller should use the CPU, with `values` as it was. `hooks`: see
    /// [`GpuNtt::transform_chain_in_place_then`].
    fn run_in_place(&self, values: &mut Vec<F>, specs: &[NttSpec<F>], hooks: Option<ResultHooks<'_>>) -> bool {
        let Some(last) = specs.last() else { return false };
        let Some(gpu) = self.gpu_for(last.rows() * last.width, last.width) else { return false };
        match gpu.transform_chain_in_place_then(values, specs, hooks) {
            Ok(()) => true,
            Err(InPlaceError { error, input_lost: false }) => {
                tracing::warn!("GPU NTT failed, computing on the CPU instead: {error}");
                false
            }
            // Plonky3's DFT trait has no error path, and the input is gone: nothing correct
            // can be returned.
            Err(InPlaceError { error, input_lost: true }) => panic!(
                "the GPU failed while its DFT result was being read back into the input's memory ({error}); \
                 the input is lost, so the CPU cannot stand in. Retry; if the GPU stays unusable, use GpuDft::new(None)"
            ),
        }
    }

    /// Runs `specs` on the GPU, or returns `None` (after a warning) so the caller uses the CPU.
    fn run(&self, values: &[F], specs: &[NttSpec<F>]) -> Option<Vec<F>> {
        let last = specs.last()?;
        let gpu = self.gpu_for(last.rows() * last.width, last.width)?;
        match gpu.transform_chain(values, specs) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!("GPU NTT failed, computing on the CPU instead: {e}");
                None
            }
        }
    }
}

/// A `TwoAdicSubgroupDft<F>` on the GPU. Its evaluations are Plonky3's (same roots of
/// unity), handed out as Plonky3's `Radix2DitParallel` hands them out: a bit-reversed view over
/// rows stored in bit-reversed order, which is the order the GPU's DIF passes leave them in (no
/// reversal kernel) and the order a FRI commitment wants them in (`bit_reverse_rows` is free).
/// Read through the view, or `to_row_major_matrix`, they are in natural order.
#[derive(Clone)]
pub struct GpuDft<F: GpuField = BabyBear> {
    inner: Dispatcher<F>,
    /// The CPU fallback with the same evaluation type.
    dit: Radix2DitParallel<F>,
    /// Where LDE results are committed ahead for an MMCS ([`GpuDft::committing_ahead_for`]).
    ahead: Option<Arc<dyn AheadSink>>,
    /// Smallest LDE (bytes) committed ahead.
    ahead_min_bytes: usize,
}

/// Rows stored bit-reversed, seen in natural order.
fn bit_reversed<F: GpuField>(values: Vec<F>, width: usize) -> BitReversedMatrixView<RowMajorMatrix<F>> {
    BitReversalPerm::new_view(RowMajorMatrix::new(values, width))
}

impl<F: GpuField> Default for GpuDft<F> {
    /// The default GPU, or the CPU alone if there is none.
    fn default() -> Self {
        Self::new(default_ntt())
    }
}

impl<F: GpuField> GpuDft<F> {
    /// Transforms on `gpu` from the default size threshold up (by width), on the CPU below it or
    /// without a GPU.
    pub fn new(gpu: Option<Arc<GpuNtt>>) -> Self {
        Self { inner: Dispatcher::new(gpu), dit: Radix2DitParallel::default(), ahead: None, ahead_min_bytes: DEFAULT_COMMIT_AHEAD_MIN_BYTES }
    }

    /// On this context.
    pub fn on(ctx: Arc<GpuContext>) -> Self {
        Self::new(Some(Arc::new(GpuNtt::new(ctx))))
    }

    /// LDEs of at least `bytes` are committed ahead (default
    /// [`DEFAULT_COMMIT_AHEAD_MIN_BYTES`]; with [`committing_ahead_for`](Self::committing_ahead_for)).
    pub fn with_commit_ahead_from(mut self, bytes: usize) -> Self {
        self.ahead_min_bytes = bytes;
        self
    }

    /// Transforms with fewer output elements than `threshold` run on the CPU (0: always GPU).
    pub fn with_cpu_threshold(mut self, threshold: usize) -> Self {
        self.inner.cpu_threshold = Some(threshold);
        self
    }

    /// The GPU NTT, if there is one.
    pub fn ntt(&self) -> Option<&Arc<GpuNtt>> {
        self.inner.gpu.as_ref()
    }

    /// The encoder on the same GPU, with the same CPU threshold.
    pub fn encoder(&self) -> GpuEncoder<F> {
        GpuEncoder::from(self.clone())
    }

    /// Fallible GPU entry for any spec chain, without CPU fallback.
    pub fn try_transform(&self, values: &[F], specs: &[NttSpec<F>]) -> Result<Vec<F>> {
        match &self.inner.gpu {
            Some(g) => g.transform_chain(values, specs),
            None => Err(crate::GpuError::NoAdapter(" for this GpuDft".into())),
        }
    }
}

impl<F: GpuField> TwoAdicSubgroupDft<F> for GpuDft<F> {
    type Evaluations = BitReversedMatrixView<RowMajorMatrix<F>>;

    fn dft_batch(&self, mut mat: RowMajorMatrix<F>) -> Self::Evaluations {
        let (h, w) = (mat.height(), mat.width());
        let log_h = log2_strict_usize(h);
        let spec = NttSpec { bit_reversed_output: log_h > 0, ..NttSpec::forward(log_h, w) };
        if self.inner.run_in_place(&mut mat.values, &[spec], None) {
            return bit_reversed(mat.values, w);
        }
        self.dit.dft_batch(mat)
    }

    fn idft_batch(&self, mut mat: RowMajorMatrix<F>) -> RowMajorMatrix<F> {
        let (h, w) = (mat.height(), mat.width());
        let spec = NttSpec::inverse(log2_strict_usize(h), w);
        if self.inner.run_in_place(&mut mat.values, &[spec], None) {
            return mat;
        }
        self.inner.cpu.idft_batch(mat)
    }

    fn coset_dft_batch(&self, mut mat: RowMajorMatrix<F>, shift: F) -> Self::Evaluations {
        let (h, w) = (mat.height(), mat.width());
        let log_h = log2_strict_usize(h);
        let spec = NttSpec { coset_shift: Some(shift), bit_reversed_output: log_h > 0, ..NttSpec::forward(log_h, w) };
        if self.inner.run_in_place(&mut mat.values, &[spec], None) {
            return bit_reversed(mat.values, w);
        }
        self.dit.coset_dft_batch(mat, shift)
    }

    fn coset_lde_batch(&self, mut mat: RowMajorMatrix<F>, added_bits: usize, shift: F) -> Self::Evaluations {
        let (h, w) = (mat.height(), mat.width());
        let log_h = log2_strict_usize(h);
        let log_lde = log_h.saturating_add(added_bits);
        let bytes = (log_lde < usize::BITS as usize).then(|| (1usize << log_lde).saturating_mul(w).saturating_mul(4));
        let ahead = self.ahead.as_deref().filter(|_| w > 0 && bytes.is_some_and(|b| b >= self.ahead_min_bytes));
        let rows = 1usize << log_lde.min(usize::BITS as usize - 1);
        // Over one binding the result comes a block of columns at a time: its leaves are
        // absorbed block by block (blocks of a multiple of the sponge's rate, where they fit).
        let progress = ColumnProgress::default();
        let whole = |buffer: &wgpu::Buffer| {
            if let Some(a) = ahead {
                a.offer(buffer, rows, w);
            }
        };
        let block = |batch: &mut crate::context::Batch<'_>, buffer: &wgpu::Buffer, first_col: usize, cols: usize| {
            if let Some(a) = ahead {
                a.absorb(&progress, batch, buffer, rows, w, first_col, cols);
            }
        };
        let blocks_done = || {
            if let Some(a) = ahead {
                a.offer_columns(&progress, rows, w);
            }
        };
        let hooks = ahead.map(|a| ResultHooks { whole: &whole, block_multiple: a.column_block_multiple(rows), block: &block, blocks_done: &blocks_done });
        // Interpolate on the GPU, then evaluate the zero-padded coefficients on shift·K; the
        // padding is never materialised.
        let specs =
            [NttSpec::inverse(log_h, w), NttSpec { valid_rows: h, coset_shift: Some(shift), bit_reversed_output: log_lde > 0, ..NttSpec::forward(log_lde, w) }];
        if self.inner.run_in_place(&mut mat.values, &specs, hooks) {
            return bit_reversed(mat.values, w);
        }
        self.dit.coset_lde_batch(mat, added_bits, shift)
    }
}

/// A Reed–Solomon `Encoder<F>` on the GPU: the message's 2^k rows are uploaded and
/// transformed as a 2^(k + rate) NTT whose zero rows are never stored, read or uploaded.
#[derive(Clone)]
pub struct GpuEncoder<F: GpuField = BabyBear> {
    inner: Dispatcher<F>,
}

impl<F: GpuField> Default for GpuEncoder<F> {
    fn default() -> Self {
        GpuDft::default().encoder()
    }
}

impl<F: GpuField> From<GpuDft<F>> for GpuEncoder<F> {
    fn from(dft: GpuDft<F>) -> Self {
        Self { inner: dft.inner }
    }
}

impl<F: GpuField> GpuEncoder<F> {
    /// The GPU NTT, if there is one.
    pub fn ntt(&self) -> Option<&Arc<GpuNtt>> {
        self.inner.gpu.as_ref()
    }

    /// The spec that encodes `2^log_message_rows` message rows at rate 2^-log_inv_rate.
    pub fn spec(log_message_rows: usize, width: usize, log_inv_rate: usize) -> NttSpec<F> {
        NttSpec { valid_rows: 1 << log_message_rows, ..NttSpec::forward(log_message_rows.saturating_add(log_inv_rate), width) }
    }

    fn encode_rows(&self, message: &[F], rows: usize, width: usize, log_inv_rate: usize) -> Option<Vec<F>> {
        let spec = Self::spec(log2_strict_usize(rows), width, log_inv_rate);
        debug_assert_eq!(spec.direction, Direction::Forward);
        self.inner.run(&message[..rows * width], &[spec])
    }
}

impl<F: GpuField> GpuEncoder<F> {
    /// `Encoder::encode_batch` with bad shapes as errors: the message height must be a power of
    /// two and the codeword of 2^(log h + log_inv_rate) rows must fit the field's two-adic
    /// subgroup (and memory).
    pub fn try_encode_batch(&self, message: RowMajorMatrix<F>, log_inv_rate: usize) -> Result<RowMajorMatrix<F>> {
        let (h, w) = (message.height(), message.width());
        if !h.is_power_of_two() {
            return Err(GpuError::InvalidInput(format!("message height {h} is not a power of two")));
        }
        let log_rows = log2_strict_usize(h).checked_add(log_inv_rate).filter(|&l| l <= F::TWO_ADICITY);
        let codeword = log_rows.and_then(|l| (1usize << l).checked_mul(w)).ok_or_else(|| {
            GpuError::InvalidInput(format!(
                "encoding {h} rows at rate 2^-{log_inv_rate} needs a domain past {}'s 2^{} (or more than usize elements)",
                F::ID.name(),
                F::TWO_ADICITY
            ))
        })?;
        Ok(match self.encode_rows(&message.values, h, w, log_inv_rate) {
            Some(v) => RowMajorMatrix::new(v, w),
            None => {
                let mut values = F::zero_vec(codeword);
                values[..h * w].copy_from_slice(&message.values);
                self.inner.cpu.dft_batch(RowMajorMatrix::new(values, w))
            }
        })
    }
}

impl<F: GpuField> GpuEncoder<F> {
    /// `Encoder::encode_batch_padded`: the message's first 2^-log_inv_rate of rows, encoded.
    fn encode_padded(&self, message: RowMajorMatrix<F>, log_inv_rate: usize) -> RowMajorMatrix<F> {
        let (h, w) = (message.height(), message.width());
        let log_h = log2_strict_usize(h);
        assert!(log_inv_rate <= log_h, "padding exceeds matrix height");
        match self.encode_rows(&message.values, h >> log_inv_rate, w, log_inv_rate) {
            Some(v) => RowMajorMatrix::new(v, w),
            None => self.inner.cpu.dft_batch(message),
        }
    }
}

/// `Encoder` for each field (Plonky3's blanket `Encoder` impl for DFTs rules out a generic one).
macro_rules! impl_encoder {
    ($($field:ty),*) => {$(
        impl Encoder<$field> for GpuEncoder<$field> {
            /// Panics on shapes no encoder can take, as Plonky3's own encoders do (the trait has no
            /// error path); [`GpuEncoder::try_encode_batch`] returns them as errors.
            fn encode_batch(&self, message: RowMajorMatrix<$field>, log_inv_rate: usize) -> RowMajorMatrix<$field> {
                self.try_encode_batch(message, log_inv_rate).unwrap_or_else(|e| panic!("{e}"))
            }

            fn encode_batch_padded(&self, message: RowMajorMatrix<$field>, log_inv_rate: usize) -> RowMajorMatrix<$field> {
                self.encode_padded(message, log_inv_rate)
            }
        }
    )*};
}

impl_encoder!(BabyBear, KoalaBear);

impl<F: crate::mmcs::MmcsField> GpuDft<F> {
    /// Each LDE ([`coset_lde_batch`](TwoAdicSubgroupDft::coset_lde_batch), what
    /// `TwoAdicFriPcs::commit` computes) of 32 MiB or more computed on the GPU is also hashed
    /// into `mmcs`'s Merkle tree before its GPU buffer is given up (an LDE over one binding,
    /// computed a block of columns at a time, has its leaves absorbed block by block); when
    /// `TwoAdicFriPcs` then
    /// hands `mmcs` that matrix to commit, `mmcs` checks that the rows are unchanged (a
    /// checksum) and takes the tree instead of uploading the matrix again ([`CommitAhead`](crate::plumbing::CommitAhead)).
    /// Commitments, openings and proofs are the same either way. Without effect (and a
    /// warning) when this DFT or `mmcs` has no GPU, or they are on different contexts.
    pub fn committing_ahead_for(mut self, mmcs: &GpuMmcs<F>) -> Self {
        match (mmcs.commit_ahead(), self.ntt()) {
            (Some(ahead), Some(ntt)) if Arc::ptr_eq(ahead.merkle().poseidon2().context(), ntt.context()) => {
                self.ahead = Some(ahead.clone() as Arc<dyn AheadSink>)
            }
            _ => tracing::warn!(
                "GpuDft::committing_ahead_for: this DFT or the MMCS has no GPU, or they are on different GPU contexts; LDEs are not committed ahead"
            ),
        }
        self
    }
}
