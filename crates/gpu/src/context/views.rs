//! The context's public faces: each concern's methods behind a view (`ctx.transfers()`,
//! `ctx.pipelines()`, `ctx.faults()`, and the pools on `ctx.memory()`), so `GpuContext` itself
//! keeps the batch entry points, the adapter's facts and limits, and error scopes. Each view
//! hands its calls to the context's crate-internal methods in the file that owns the state.

use super::*;
use std::sync::Arc;

use crate::error::Result;
use crate::field::{ExtensionId, FieldId};
use crate::shaders::Kernel;

/// Uploads, writes, submissions and readbacks through pooled staging, and what they cost ([`GpuContext::transfers`]).
pub struct GpuTransfers<'a>(&'a GpuContext);

impl GpuContext {
    /// Uploads, writes, submissions and readbacks through pooled staging, and what they cost.
    pub fn transfers(&self) -> GpuTransfers<'_> {
        GpuTransfers(self)
    }
}

impl GpuTransfers<'_> {
    /// A storage buffer holding `words`.
    pub fn upload(&self, label: &str, words: &[u32]) -> wgpu::Buffer {
        self.0.upload(label, words)
    }

    /// [`upload`](Self::upload) into a buffer from the pool: hand it back with
    /// `recycle_storage` once the work that reads it is submitted (a small fresh buffer costs a
    /// driver allocation and free; docs/benchmarks-history.md).
    pub fn upload_pooled(&self, label: &str, words: &[u32]) -> wgpu::Buffer {
        self.0.upload_pooled(label, words)
    }

    /// Copies `words` into the start of `dst` (a COPY_DST buffer); it lands before the next
    /// submitted command buffer runs. Large writes go through pooled staging memory filled on
    /// all cores (see `transfer`).
    pub fn write(&self, dst: &wgpu::Buffer, words: &[u32]) {
        self.0.write(dst, words)
    }

    /// A storage buffer of `rows` rows of `row_words` words; `row(r, write)` hands row r to
    /// `write` in one or more pieces. Rows are written straight into staging memory, on all
    /// cores, with no host copy of the whole matrix. Fails if a row is not `row_words` long.
    pub fn upload_rows(&self, label: &str, rows: usize, row_words: usize, row: impl Fn(usize, &mut dyn FnMut(&[u32])) + Sync) -> Result<wgpu::Buffer> {
        self.0.upload_rows(label, rows, row_words, row)
    }

    /// Bytes per staging chunk of chunked transfers.
    pub fn transfer_chunk_bytes(&self) -> u64 {
        self.0.transfer_chunk_bytes()
    }

    /// Testing and tuning: bytes per staging chunk of chunked transfers (a multiple of 4, at
    /// least 4).
    #[doc(hidden)]
    pub fn set_transfer_chunk_bytes(&self, bytes: u64) {
        self.0.set_transfer_chunk_bytes(bytes)
    }

    /// Submits `encoder`, then copies the first `dst.len()` bytes of `src` into `dst` (memory
    /// that may not be initialised yet, e.g. a Vec's spare capacity) through pooled staging
    /// chunks, each drained on all cores while the next ones cross the bus. With `below`, every
    /// word is checked to be less than it as it is copied (a field element's canonical form:
    /// a word past it is a device fault, reported with its offset). On error, also says whether
    /// any of `dst` was written (a caller reusing its input's memory can then no longer fall
    /// back on it).
    pub fn submit_and_read_chunked_into(
        &self,
        encoder: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        dst: &mut [std::mem::MaybeUninit<u8>],
        below: Option<u32>,
    ) -> std::result::Result<(), (GpuError, bool)> {
        self.0.submit_and_read_chunked_into(encoder, src, dst, below)
    }

    /// Submits `encoder`, then reads `rows` rows of `row_words` words from `src` into `dst`, row r
    /// at words `r * stride + offset ..`: a column block of a wider row-major matrix. Chunked as
    /// [`submit_and_read_chunked_into`](Self::submit_and_read_chunked_into), rows copied on all
    /// cores.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_and_read_rows_into(
        &self,
        encoder: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        rows: usize,
        row_words: usize,
        dst: &mut [u32],
        stride: usize,
        offset: usize,
        how: ReadChunks<'_>,
    ) -> Result<()> {
        self.0.submit_and_read_rows_into(encoder, src, rows, row_words, dst, stride, offset, how)
    }

    /// Submits `encoder` after copying `words` words of `src` into a staging buffer, waits, and
    /// returns them. Validation errors in anything recorded into `encoder` (wgpu reports them
    /// when the encoder is finished) are returned, not only logged.
    pub fn submit_and_read(&self, encoder: wgpu::CommandEncoder, src: &wgpu::Buffer, words: usize) -> Result<Vec<u32>> {
        self.0.submit_and_read(encoder, src, words)
    }

    /// Submits without waiting (the queue runs submissions in order). Call inside
    /// [`scoped`](GpuContext::scoped) to have recording errors returned.
    pub fn submit(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.0.submit(encoder)
    }

    /// Submits and blocks until the GPU is done; recording errors are returned as in
    /// [`submit_and_read`](Self::submit_and_read).
    pub fn submit_and_wait(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.0.submit_and_wait(encoder)
    }

    /// Bytes up, bytes down and submissions through this context so far.
    pub fn transfer_counts(&self) -> TransferCounts {
        self.0.transfer_counts()
    }

    /// Host-side costs of GPU work so far (see [`HostCosts`]).
    pub fn host_costs(&self) -> HostCosts {
        self.0.host_costs()
    }

    /// Whether a long step submits its first part as soon as it is recorded, so the GPU runs
    /// it while the rest is recorded (a codeword's encoding before its tree, the tree before the
    /// sponge script that follows it, each sumcheck round of a chain). On by default
    /// (`GpuTuning::early_submits`); off records each step in one submission, to measure it.
    pub fn early_submits(&self) -> bool {
        self.0.early_submits()
    }

    /// Tests and measurements: turns early submits on or off for this context.
    #[doc(hidden)]
    pub fn set_early_submits(&self, on: bool) {
        self.0.set_early_submits(on)
    }
}

/// Pipelines, uniforms, bind groups and dispatch recording ([`GpuContext::pipelines`]).
pub struct GpuPipelines<'a>(&'a GpuContext);

impl GpuContext {
    /// Pipelines, uniforms, bind groups and dispatch recording.
    pub fn pipelines(&self) -> GpuPipelines<'_> {
        GpuPipelines(self)
    }
}

impl GpuPipelines<'_> {
    /// The compute pipeline for `kernel` over BabyBear with these composition constants, built
    /// once.
    pub fn pipeline(&self, kernel: Kernel, consts: &[(&'static str, u32)]) -> Result<Arc<wgpu::ComputePipeline>> {
        self.0.pipeline(kernel, consts)
    }

    /// The compute pipeline for `kernel` over `field` with these composition constants, built
    /// once (a context serves every field; each has pipelines of its own).
    pub fn pipeline_for(&self, field: FieldId, kernel: Kernel, consts: &[(&'static str, u32)]) -> Result<Arc<wgpu::ComputePipeline>> {
        self.0.pipeline_for(field, kernel, consts)
    }

    /// [`pipeline_for`](Self::pipeline_for) a field-generic kernel composed over the extension
    /// `ext` (one of [`Kernel::extensions`]).
    pub fn pipeline_over(&self, field: FieldId, ext: ExtensionId, kernel: Kernel, consts: &[(&'static str, u32)]) -> Result<Arc<wgpu::ComputePipeline>> {
        self.0.pipeline_over(field, ext, kernel, consts)
    }

    /// A uniform buffer holding `value`. Uniforms are never written after creation, so equal
    /// contents share one buffer: kernels' size parameters repeat every round and every proof,
    /// and a fresh buffer costs host time (docs/benchmarks-history.md).
    pub fn uniform<T: bytemuck::Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        self.0.uniform(label, value)
    }

    /// A uniform buffer for contents that will not repeat (a challenge): made fresh, not cached.
    pub fn uniform_once<T: bytemuck::Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        self.0.uniform_once(label, value)
    }

    /// A bind group for `pipeline` with `buffers` at bindings 0, 1, 2, ... of group 0.
    pub fn bind_buffers(&self, pipeline: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        self.0.bind_buffers(pipeline, buffers)
    }

    /// [`bind_buffers`](Self::bind_buffers) with a byte range of each buffer: `(buffer, offset,
    /// size)`, size `None` for the rest of the buffer. Offsets must be multiples of the
    /// adapter's storage offset alignment (256 bytes on every WebGPU adapter); a kernel then
    /// sees the range as its whole array, which is how work larger than one binding is split.
    pub fn bind_ranges(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        self.0.bind_ranges(pipeline, ranges)
    }

    /// [`bind_ranges`](Self::bind_ranges) at the given binding numbers: `(binding, buffer,
    /// offset, size)`, for kernels whose bindings are not 0, 1, 2, ... (a kernel's layout holds
    /// only the bindings its entry point uses).
    pub fn bind_at(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(u32, &wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        self.0.bind_at(pipeline, ranges)
    }

    /// Records one compute pass running `pipeline` over `groups` workgroups (laid out by `grid`),
    /// with optional GPU timestamps around it.
    pub fn record_dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        label: &str,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        groups: u32,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        self.0.record_dispatch(encoder, label, pipeline, bind, groups, timestamp_writes)
    }

    /// Records `dispatches` in order inside one compute pass. WebGPU makes each dispatch its own
    /// usage scope, so a dispatch sees what the ones before it wrote, as with a pass each; one
    /// pass saves the host a pass's setup and teardown per dispatch (most of a small dispatch's
    /// recording cost; `examples/latency_probe`).
    pub fn record_dispatches(&self, encoder: &mut wgpu::CommandEncoder, label: &str, dispatches: &[Dispatch]) {
        self.0.record_dispatches(encoder, label, dispatches)
    }

    /// Workgroup grid for `groups` workgroups: x up to the per-dimension limit, the rest in y.
    pub fn grid(&self, groups: u32) -> (u32, u32) {
        self.0.grid(groups)
    }

    /// A fresh command encoder labelled `label`.
    pub fn encoder(&self, label: &str) -> wgpu::CommandEncoder {
        self.0.encoder(label)
    }
}

/// Readback failures on purpose (the test-only `fault-injection` feature) and uncaptured device errors ([`GpuContext::faults`]).
pub struct GpuFaults<'a>(&'a GpuContext);

impl GpuContext {
    /// Readback failures on purpose.
    pub fn faults(&self) -> GpuFaults<'_> {
        GpuFaults(self)
    }
}

impl GpuFaults<'_> {
    /// Testing fault injection: the next `count` readbacks fail as a lost device would, so
    /// callers' fallbacks can be exercised on any adapter.
    #[cfg(feature = "fault-injection")]
    pub fn fail_next_readbacks(&self, count: u32) {
        self.0.fail_next_readbacks(count)
    }

    /// Testing fault injection: `skip` readbacks succeed, then `count` fail.
    #[cfg(feature = "fault-injection")]
    pub fn fail_readbacks(&self, skip: u32, count: u32) {
        self.0.fail_readbacks(skip, count)
    }

    /// Testing fault injection: on the calling thread alone, `skip` readbacks succeed, then
    /// `count` fail (other threads proving on the context are not touched).
    #[cfg(feature = "fault-injection")]
    pub fn fail_readbacks_on_this_thread(&self, skip: u32, count: u32) {
        self.0.fail_readbacks_on_this_thread(skip, count)
    }

    /// Testing fault injection: the injected failures not struck yet.
    #[cfg(feature = "fault-injection")]
    pub fn injected_failures_left(&self) -> u32 {
        self.0.injected_failures_left()
    }

    /// The first wgpu error raised outside any of this crate's calls (e.g. by work the caller
    /// recorded and submitted itself), if one happened since the last call. Errors inside our
    /// calls are returned by those calls.
    pub fn take_uncaptured_error(&self) -> Option<String> {
        self.0.take_uncaptured_error()
    }
}

/// Buffers from the pools and back ([`GpuContext::memory`]).
impl GpuMemory<'_> {
    /// An uninitialised storage buffer of `words` u32 words (at least one).
    pub fn storage(&self, label: &str, words: usize) -> wgpu::Buffer {
        self.0.storage(label, words)
    }

    /// A storage buffer of exactly `words` words (at least one) from the pool of recycled ones,
    /// or a fresh one. Its contents are whatever the last user left.
    pub fn pooled_storage(&self, label: &str, words: usize) -> wgpu::Buffer {
        self.0.pooled_storage(label, words)
    }

    /// A pooled storage buffer for the host to write into (`write`, an upload): never one that
    /// recorded, unsubmitted work still uses, since a write lands before the next submission.
    pub fn pooled_for_upload(&self, label: &str, words: usize) -> wgpu::Buffer {
        self.0.pooled_for_upload(label, words)
    }

    /// Hands a storage buffer back for `pooled_storage` (kept while the pool holds under its
    /// budget, 32 GiB by default, and at most `DEVICE_POOL_PER_SIZE` of its size). Only for a
    /// buffer whose uses are all submitted; see [`recycle_after_submit`](Self::recycle_after_submit).
    pub fn recycle_storage(&self, buffer: wgpu::Buffer) {
        self.0.recycle_storage(buffer)
    }

    /// Hands back a buffer that work recorded on this thread but not yet submitted still uses:
    /// this thread's `pooled_storage` may take it again at once for work it records after
    /// (kernels recorded later run later; host writes would not, so `pooled_for_upload` never
    /// takes it), and it joins the shared pool after this thread's next submission, which must
    /// be the one carrying that work. Given straight to the pool, another thread sharing the
    /// context could take it and submit writes to it before that work is submitted.
    pub fn recycle_after_submit(&self, buffer: wgpu::Buffer) {
        self.0.recycle_after_submit(buffer)
    }
}
