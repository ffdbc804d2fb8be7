//! Transfers: submissions and waits, uploads and readbacks (chunked through pooled staging),
//! and the counts of what crossed the bus.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::*;
use crate::error::{GpuError, Result};
use crate::transfer::{self, STAGED_MIN_BYTES};

/// Host <-> GPU traffic through a context since it was made: what a resident computation
/// promises to keep small. Subtract two readings for one piece of work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferCounts {
    /// Bytes written from the host into GPU buffers (uploads, small writes, uniforms excluded).
    pub bytes_up: u64,
    /// Bytes read back from the GPU.
    pub bytes_down: u64,
    /// Command buffers submitted through the context.
    pub submissions: u64,
}

impl std::ops::Sub for TransferCounts {
    type Output = Self;
    fn sub(self, earlier: Self) -> Self {
        Self {
            bytes_up: self.bytes_up - earlier.bytes_up,
            bytes_down: self.bytes_down - earlier.bytes_down,
            submissions: self.submissions - earlier.submissions,
        }
    }
}

#[derive(Default)]
pub(super) struct TransferCounters {
    pub(super) bytes_up: AtomicU64,
    pub(super) bytes_down: AtomicU64,
    pub(super) submissions: AtomicU64,
    pub(super) dispatches: AtomicU64,
    pub(super) bind_groups: AtomicU64,
    pub(super) uniforms: AtomicU64,
    pub(super) small_writes: AtomicU64,
    pub(super) fresh_buffers: AtomicU64,
    pub(super) fresh_buffer_bytes: AtomicU64,
    pub(super) submit_ns: AtomicU64,
    pub(super) wait_ns: AtomicU64,
}

/// What the host spent on the GPU's behalf through a context since it was made (subtract two
/// readings): the fixed costs that dominate small resident steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCosts {
    /// Dispatches recorded through [`GpuPipelines::record_dispatch`](crate::plumbing::GpuPipelines::record_dispatch) and
    /// [`GpuPipelines::record_dispatches`](crate::plumbing::GpuPipelines::record_dispatches).
    pub dispatches: u64,
    /// Bind groups made through [`GpuPipelines::bind_buffers`](crate::plumbing::GpuPipelines::bind_buffers).
    pub bind_groups: u64,
    /// Uniform buffers created (by [`GpuPipelines::uniform`](crate::plumbing::GpuPipelines::uniform) when no equal one is kept, and by
    /// [`GpuPipelines::uniform_once`](crate::plumbing::GpuPipelines::uniform_once)).
    pub uniforms: u64,
    /// Writes small enough for `queue.write_buffer` (each a staging allocation inside wgpu).
    pub small_writes: u64,
    /// Device and staging buffers created afresh (not taken from a pool), and their bytes: each
    /// costs the driver a slow allocation (docs/benchmarks-history.md), so in steady state a
    /// proof should make few.
    pub fresh_buffers: u64,
    /// Bytes of the buffers counted in `fresh_buffers`.
    pub fresh_buffer_bytes: u64,
    /// Time inside `queue.submit`.
    pub submit: std::time::Duration,
    /// Time blocked waiting for the GPU (readbacks, waits, staging maps).
    pub wait: std::time::Duration,
}

impl std::ops::Sub for HostCosts {
    type Output = Self;
    fn sub(self, earlier: Self) -> Self {
        Self {
            dispatches: self.dispatches - earlier.dispatches,
            bind_groups: self.bind_groups - earlier.bind_groups,
            uniforms: self.uniforms - earlier.uniforms,
            small_writes: self.small_writes - earlier.small_writes,
            fresh_buffers: self.fresh_buffers - earlier.fresh_buffers,
            fresh_buffer_bytes: self.fresh_buffer_bytes - earlier.fresh_buffer_bytes,
            submit: self.submit.saturating_sub(earlier.submit),
            wait: self.wait.saturating_sub(earlier.wait),
        }
    }
}

/// Where a staging buffer's map answers.
pub(super) type MapAnswer = std::sync::mpsc::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>;

/// A readback submitted by [`GpuContext::submit_then_read`], to be finished with
/// [`GpuContext::finish_read`]. Dropped unfinished, its staging memory is freed, not pooled.
pub(super) enum PendingRead {
    /// Read at once (empty, or larger than a transfer chunk).
    Ready(Vec<u32>),
    /// Copied into `staging`, whose map answers on `rx`.
    Mapping { staging: wgpu::Buffer, bytes: u64, words: usize, index: wgpu::SubmissionIndex, rx: MapAnswer },
}

/// Records work for chunk i into the encoder that copies it ([`ReadChunks::before_copy`]).
pub type RecordBeforeCopy<'a> = dyn Fn(&mut wgpu::CommandEncoder, usize) + 'a;

/// Hooks of a chunked readback (`submit_and_read_chunked_into_raw`, inside the crate).
#[derive(Default, Clone, Copy)]
pub struct ReadChunks<'a> {
    /// Chunks of this many bytes (a multiple of the readback's unit, 4 bytes here; the last
    /// chunk may be shorter); None: the context's transfer chunk.
    pub chunk_bytes: Option<usize>,
    /// Records work into the encoder that copies chunk i out, ahead of the copy: chunk i's
    /// last kernels then run while the host drains the chunks before it.
    pub before_copy: Option<&'a RecordBeforeCopy<'a>>,
    /// Called with a chunk's byte range of the destination before it is written there.
    pub before_write: Option<&'a (dyn Fn(std::ops::Range<usize>) + Sync)>,
}

/// Default bytes per staging chunk of a chunked transfer: large enough that a chunk's
/// submission and map cost little beside its copy, small enough that the pooled staging stays
/// small and the first chunk's wait short.
pub const TRANSFER_CHUNK_BYTES: u64 = 64 << 20;

/// Staging chunks in flight: one being filled or drained on the host while the others cross
/// the bus.
pub(super) const CHUNKS_IN_FLIGHT: usize = 3;
/// What crossed the bus and what the host spent on it, and how transfers are cut.
pub(super) struct Traffic {
    pub(super) counters: TransferCounters,
    /// Bytes per staging chunk of a chunked transfer.
    pub(super) transfer_chunk: AtomicU64,
    /// See [`GpuTransfers::early_submits`](crate::plumbing::GpuTransfers::early_submits).
    pub(super) early_submits: AtomicBool,
}

impl GpuContext {
    /// Every submission goes through here: counted, its memory sampled, and, while a profile
    /// runs, bracketed by timestamps in command buffers of their own.
    pub(super) fn queue_submit(&self, commands: wgpu::CommandBuffer) -> wgpu::SubmissionIndex {
        let _span = tracing::info_span!("gpu submit").entered();
        self.count_submission();
        self.sample_buffer_bytes();
        let mut guard = self.profile_state.current.lock().expect("profile poisoned");
        let started = std::time::Instant::now();
        let Some(profile) = guard.as_mut() else {
            drop(guard);
            let index = self.queue.submit([commands]);
            Self::add_time(&self.traffic.counters.submit_ns, started);
            self.release_deferred();
            return index;
        };
        let (set, slot) = super::profile::timestamp_pair(&self.device, &mut profile.sets, profile.labels.len(), "submission profile");
        let stamp = |index: u32| {
            let mut e = self.encoder("profile timestamp");
            e.write_timestamp(set, index);
            e.finish()
        };
        let (start, end) = (stamp(slot), stamp(slot + 1));
        profile.labels.push(profile.label.clone());
        drop(guard);
        let index = self.queue.submit([start, commands, end]);
        Self::add_time(&self.traffic.counters.submit_ns, started);
        self.release_deferred();
        index
    }

    /// Bytes up, bytes down and submissions through this context so far.
    pub(crate) fn transfer_counts(&self) -> TransferCounts {
        TransferCounts {
            bytes_up: self.traffic.counters.bytes_up.load(Ordering::Relaxed),
            bytes_down: self.traffic.counters.bytes_down.load(Ordering::Relaxed),
            submissions: self.traffic.counters.submissions.load(Ordering::Relaxed),
        }
    }

    /// Host-side costs of GPU work so far (see [`HostCosts`]).
    pub(crate) fn host_costs(&self) -> HostCosts {
        let c = &self.traffic.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        HostCosts {
            dispatches: load(&c.dispatches),
            bind_groups: load(&c.bind_groups),
            uniforms: load(&c.uniforms),
            small_writes: load(&c.small_writes),
            fresh_buffers: load(&c.fresh_buffers),
            fresh_buffer_bytes: load(&c.fresh_buffer_bytes),
            submit: std::time::Duration::from_nanos(load(&c.submit_ns)),
            wait: std::time::Duration::from_nanos(load(&c.wait_ns)),
        }
    }

    /// A staging buffer from `pool` (see `StagingPool::take`), counted when made afresh.
    fn take_staging(&self, pool: &crate::transfer::StagingPool, bytes: u64) -> (wgpu::Buffer, bool) {
        let (buffer, pooled) = pool.take(&self.device, bytes);
        if !pooled {
            self.count_fresh_buffer(buffer.size());
        }
        (buffer, pooled)
    }

    /// Counts a buffer of `bytes` created afresh (see [`HostCosts::fresh_buffers`]).
    pub(super) fn count_fresh_buffer(&self, bytes: u64) {
        self.traffic.counters.fresh_buffers.fetch_add(1, Ordering::Relaxed);
        self.traffic.counters.fresh_buffer_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(super) fn add_time(counter: &AtomicU64, since: std::time::Instant) {
        counter.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// Whether the GPU has finished submission `index`, without blocking.
    fn submission_done(&self, index: &wgpu::SubmissionIndex) -> Result<bool> {
        match self.device.poll(wgpu::PollType::Wait { submission_index: Some(index.clone()), timeout: Some(std::time::Duration::ZERO) }) {
            Ok(_) => Ok(true),
            Err(wgpu::PollError::Timeout) => Ok(false),
            Err(e) => Err(GpuError::Device(e.to_string())),
        }
    }

    /// Blocks until the GPU has finished `index` (or everything), counting the time as waiting.
    /// It spins first (see `spin_before_blocking`), watching its own submission: with several
    /// threads proving on the context the queue is seldom empty, and a wait that spun until it
    /// was would spin its whole allowance every time.
    pub(super) fn wait_for(&self, index: Option<wgpu::SubmissionIndex>) -> Result<()> {
        let _span = tracing::info_span!("gpu wait").entered();
        let started = std::time::Instant::now();
        while started.elapsed() < self.spin {
            let done = match &index {
                Some(index) => self.submission_done(index)?,
                None => self.device.poll(wgpu::PollType::Poll).map_err(|e| GpuError::Device(e.to_string()))?.is_queue_empty(),
            };
            if done {
                Self::add_time(&self.traffic.counters.wait_ns, started);
                return Ok(());
            }
            std::hint::spin_loop();
        }
        let polled = self.device.poll(wgpu::PollType::Wait { submission_index: index, timeout: None });
        Self::add_time(&self.traffic.counters.wait_ns, started);
        polled.map(|_| ()).map_err(|e| GpuError::Device(e.to_string()))
    }

    /// Waits for everything submitted, then for the `map_async` callback that sends on `rx`.
    /// Only for a map whose submission is unknown; [`wait_for_map`](Self::wait_for_map) waits
    /// for its own.
    pub(super) fn wait_for_queue_then_map<T>(&self, rx: &std::sync::mpsc::Receiver<T>) -> Result<T> {
        self.wait_for(None)?;
        if let Ok(mapped) = rx.try_recv() {
            return Ok(mapped);
        }
        // The queue emptied before the poll that runs the callback (a spinning wait): block.
        let started = std::time::Instant::now();
        let polled = self.device.poll(wgpu::PollType::wait_indefinitely());
        Self::add_time(&self.traffic.counters.wait_ns, started);
        polled.map_err(|e| GpuError::Device(e.to_string()))?;
        rx.recv().map_err(|e| GpuError::Map(e.to_string()))
    }

    /// For a buffer that is most likely idle (pooled staging, its last copy long done): its map
    /// resolves at the next poll, so this polls without blocking for a moment before waiting
    /// for the whole queue. Kernels queued since (a column block's leaf absorb, long at 2^17
    /// Keccak rows) then run while the host fills the upload instead of holding it back.
    pub(super) fn wait_for_idle_map<T>(&self, rx: &std::sync::mpsc::Receiver<T>) -> Result<T> {
        let _span = tracing::info_span!("gpu wait for staging").entered();
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_millis(2) {
            self.device.poll(wgpu::PollType::Poll).map_err(|e| GpuError::Device(e.to_string()))?;
            if let Ok(mapped) = rx.try_recv() {
                return Ok(mapped);
            }
            std::thread::yield_now();
        }
        self.wait_for_queue_then_map(rx)
    }

    pub(super) fn count_submission(&self) {
        self.traffic.counters.submissions.fetch_add(1, Ordering::Relaxed);
    }

    /// A storage buffer holding `words`.
    pub(crate) fn upload(&self, label: &str, words: &[u32]) -> wgpu::Buffer {
        let buffer = self.storage(label, words.len());
        self.write(&buffer, words);
        buffer
    }

    /// [`upload`](Self::upload) into a buffer from the pool: hand it back with
    /// `recycle_storage` once the work that reads it is submitted (a small fresh buffer costs a
    /// driver allocation and free; docs/benchmarks-history.md).
    pub(crate) fn upload_pooled(&self, label: &str, words: &[u32]) -> wgpu::Buffer {
        let buffer = self.pooled_for_upload(label, words.len());
        self.write(&buffer, words);
        buffer
    }

    /// Copies `words` into the start of `dst` (a COPY_DST buffer); it lands before the next
    /// submitted command buffer runs. Large writes go through pooled staging memory filled on
    /// all cores (see `transfer`).
    pub(crate) fn write(&self, dst: &wgpu::Buffer, words: &[u32]) {
        let _span = tracing::info_span!("upload", words = words.len()).entered();
        let bytes: &[u8] = bytemuck::cast_slice(words);
        self.traffic.counters.bytes_up.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if bytes.len() < STAGED_MIN_BYTES {
            if !bytes.is_empty() {
                self.traffic.counters.small_writes.fetch_add(1, Ordering::Relaxed);
                self.queue.write_buffer(dst, 0, bytes);
            }
            return;
        }
        // Through pooled staging, a chunk at a time (one chunk up to 64 MiB).
        let staged = self.upload_chunked_with(dst, bytes.len(), 4, |range, view| {
            transfer::par_write(view, &bytes[range]);
            true
        });
        if let Err(e) = staged {
            // Mapping pooled staging memory failed (device lost, say): the queue's own path.
            tracing::warn!("staged upload failed ({e}); using queue.write_buffer");
            self.queue.write_buffer(dst, 0, bytes);
        }
    }

    /// A storage buffer of `rows` rows of `row_words` words; `row(r, write)` hands row r to
    /// `write` in one or more pieces. Rows are written straight into staging memory, on all
    /// cores, with no host copy of the whole matrix. Fails if a row is not `row_words` long.
    pub(crate) fn upload_rows(&self, label: &str, rows: usize, row_words: usize, row: impl Fn(usize, &mut dyn FnMut(&[u32])) + Sync) -> Result<wgpu::Buffer> {
        let buffer = self.pooled_for_upload(label, rows * row_words);
        let bytes = rows * row_words * 4;
        if bytes == 0 {
            return Ok(buffer);
        }
        self.traffic.counters.bytes_up.fetch_add(bytes as u64, Ordering::Relaxed);
        let row_bytes = |r: usize, write: &mut dyn FnMut(&[u8])| row(r, &mut |w: &[u32]| write(bytemuck::cast_slice(w)));
        let unit = row_words * 4;
        let written = self.upload_chunked_with(&buffer, bytes, unit, |range, view| {
            let first = range.start / unit;
            transfer::par_write_rows(view, unit, &|r, write| row_bytes(first + r, write))
        });
        if let Err(e) = written {
            self.recycle_storage(buffer);
            return Err(e);
        }
        Ok(buffer)
    }

    /// Bytes per staging chunk of chunked transfers.
    pub(crate) fn transfer_chunk_bytes(&self) -> u64 {
        self.traffic.transfer_chunk.load(Ordering::Relaxed)
    }

    /// Testing and tuning: bytes per staging chunk of chunked transfers (a multiple of 4, at
    /// least 4).
    #[doc(hidden)]
    pub(crate) fn set_transfer_chunk_bytes(&self, bytes: u64) {
        self.traffic.transfer_chunk.store(bytes.max(4) / 4 * 4, Ordering::Relaxed);
    }

    /// Waits until the submission `index` is done and the map that sends on `rx` has resolved
    /// (not for the work other threads submitted after it).
    pub(super) fn wait_for_map<T>(&self, index: wgpu::SubmissionIndex, rx: &std::sync::mpsc::Receiver<T>) -> Result<T> {
        let _span = tracing::info_span!("gpu wait for readback").entered();
        let started = std::time::Instant::now();
        loop {
            match rx.try_recv() {
                Ok(mapped) => {
                    Self::add_time(&self.traffic.counters.wait_ns, started);
                    return Ok(mapped);
                }
                // The map's callback was dropped without running: it never will.
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return Err(GpuError::Map("a staging buffer's map was dropped without an answer".into())),
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
            }
            // Spin while it is short, as other waits do, then block on that submission.
            let poll = if started.elapsed() < self.spin {
                wgpu::PollType::Poll
            } else {
                wgpu::PollType::Wait { submission_index: Some(index.clone()), timeout: None }
            };
            self.device.poll(poll).map_err(|e| GpuError::Device(e.to_string()))?;
        }
    }

    /// Whether a readback of `bytes` goes in chunks (more than one chunk's worth).
    pub(super) fn chunked(&self, bytes: usize) -> bool {
        bytes as u64 > self.traffic.transfer_chunk.load(Ordering::Relaxed)
    }

    /// Copies `total` bytes that `fill` writes into `dst` from byte 0 through pooled staging
    /// chunks (`fill(range, view)` fills bytes `range` of the data into `view`; chunks are whole
    /// `unit`s, e.g. rows; false means its input was the wrong size). Each chunk is filled on
    /// all cores while the ones before it cross the bus, so a large upload costs about the
    /// slower of the host copy and the bus rather than their sum, and the staging stays a few
    /// chunks (no fresh gigabyte of pinned memory, which the driver is slow to make;
    /// docs/benchmarks-history.md).
    pub(super) fn upload_chunked_with(
        &self,
        dst: &wgpu::Buffer,
        total: usize,
        unit: usize,
        fill: impl Fn(std::ops::Range<usize>, wgpu::WriteOnly<'_, [u8]>) -> bool,
    ) -> Result<()> {
        if total as u64 > dst.size() || unit == 0 || !total.is_multiple_of(unit) {
            return Err(GpuError::InvalidInput(format!("uploading {total} bytes in units of {unit} into a buffer of {} bytes", dst.size())));
        }
        let started = std::time::Instant::now();
        let chunk = (self.traffic.transfer_chunk.load(Ordering::Relaxed) as usize / unit).max(1) * unit;
        let ranges: Vec<std::ops::Range<usize>> = (0..total).step_by(chunk.max(1)).map(|start| start..(start + chunk).min(total)).collect();
        let mut ring: Vec<(wgpu::Buffer, Option<wgpu::SubmissionIndex>)> = Vec::new();
        // Where the time goes (debug log): filling staging, waiting for a chunk to come free.
        let (mut fill_ns, mut wait_ns) = (0u128, 0u128);
        let result = (|| {
            for (i, range) in ranges.iter().enumerate() {
                let slot = i % CHUNKS_IN_FLIGHT;
                let (tx, rx) = std::sync::mpsc::channel();
                if slot == ring.len() {
                    let (buffer, pooled) = self.take_staging(&self.pools.upload_pool, chunk.min(total) as u64);
                    ring.push((buffer, None));
                    if pooled {
                        // A pooled buffer comes back unmapped (its last copy may still run).
                        ring[slot].0.slice(..).map_async(wgpu::MapMode::Write, move |r| {
                            let _ = tx.send(r);
                        });
                        self.wait_for_idle_map(&rx)?.map_err(|e| GpuError::Map(e.to_string()))?;
                    }
                } else {
                    // Reused within this upload: wait for its previous copy, then map it.
                    let (buffer, index) = &ring[slot];
                    buffer.slice(..).map_async(wgpu::MapMode::Write, move |r| {
                        let _ = tx.send(r);
                    });
                    let index = index.clone().expect("a reused chunk was submitted");
                    let waited = std::time::Instant::now();
                    self.wait_for_map(index, &rx)?.map_err(|e| GpuError::Map(e.to_string()))?;
                    wait_ns += waited.elapsed().as_nanos();
                }
                let (buffer, index) = &mut ring[slot];
                let len = range.len() as u64;
                let filling = std::time::Instant::now();
                let filled = {
                    let mut view = buffer.slice(..len).get_mapped_range_mut().map_err(|e| GpuError::Map(e.to_string()))?;
                    fill(range.clone(), view.slice(..))
                };
                fill_ns += filling.elapsed().as_nanos();
                buffer.unmap();
                if !filled {
                    return Err(GpuError::InvalidInput(format!("upload rows did not fill bytes {range:?} exactly")));
                }
                let mut encoder = self.encoder("chunked upload");
                encoder.copy_buffer_to_buffer(buffer, 0, dst, range.start as u64, len);
                *index = Some(self.queue_submit(encoder.finish()));
            }
            Ok(())
        })();
        // After an error a buffer may still be mapped or in use: not kept.
        if result.is_ok() {
            for (buffer, _) in ring {
                self.pools.upload_pool.give(buffer);
            }
        }
        tracing::debug!(
            bytes = total,
            chunks = ranges.len(),
            fill_ms = fill_ns as f64 / 1e6,
            wait_ms = wait_ns as f64 / 1e6,
            ms = started.elapsed().as_secs_f64() * 1e3,
            "chunked upload queued"
        );
        result
    }

    /// Submits `encoder`, then copies the first `dst.len()` bytes of `src` into `dst` (memory
    /// that may not be initialised yet, e.g. a Vec's spare capacity) through pooled staging
    /// chunks, each drained on all cores while the next ones cross the bus. With `below`, every
    /// word is checked to be less than it as it is copied (a field element's canonical form:
    /// a word past it is a device fault, reported with its offset). On error, also says whether
    /// any of `dst` was written (a caller reusing its input's memory can then no longer fall
    /// back on it).
    pub(crate) fn submit_and_read_chunked_into(
        &self,
        encoder: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        dst: &mut [std::mem::MaybeUninit<u8>],
        below: Option<u32>,
    ) -> std::result::Result<(), (GpuError, bool)> {
        let mut written = false;
        self.read_chunks(encoder, src, transfer::SendPtr(dst.as_mut_ptr().cast::<u8>()), dst.len(), below, ReadChunks::default(), &mut written)
            .map_err(|e| (e, written))
    }

    /// [`submit_and_read_chunked_into`](Self::submit_and_read_chunked_into) into `len` bytes at
    /// `dst`, with hooks ([`ReadChunks`]): work recorded ahead of each chunk's copy, a call
    /// before each chunk is written. No reference to `dst` is made but one per chunk, after its
    /// `before_write` call: other threads may write a chunk's bytes until that call returns.
    ///
    /// # Safety
    /// `dst .. dst + len` must be memory the caller owns, valid for writes for the whole call,
    /// that nothing reads or writes during the call except as said above.
    pub(crate) unsafe fn submit_and_read_chunked_into_raw(
        &self,
        encoder: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        dst: *mut u8,
        len: usize,
        below: Option<u32>,
        how: ReadChunks<'_>,
    ) -> std::result::Result<(), (GpuError, bool)> {
        let mut written = false;
        self.read_chunks(encoder, src, transfer::SendPtr(dst), len, below, how, &mut written).map_err(|e| (e, written))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_chunks(
        &self,
        encoder: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        base: transfer::SendPtr<u8>,
        len: usize,
        below: Option<u32>,
        how: ReadChunks<'_>,
        written: &mut bool,
    ) -> Result<()> {
        // The lowest offending word offset, if any.
        let bad = AtomicU64::new(u64::MAX);
        self.read_chunks_with(encoder, src, len, 4, how, written, &|range, view| {
            if let Some(before_write) = how.before_write {
                before_write(range.clone());
            }
            // SAFETY: `range` lies within dst (checked against len by read_chunks_with), and
            // ranges of different chunks do not overlap.
            let d = unsafe { std::slice::from_raw_parts_mut(base.get().add(range.start).cast::<std::mem::MaybeUninit<u8>>(), range.len()) };
            if let Some(at) = transfer::par_read_uninit(d, view, below) {
                bad.fetch_min(((range.start + at) / 4) as u64, Ordering::Relaxed);
            }
        })?;
        match bad.load(Ordering::Relaxed) {
            u64::MAX => Ok(()),
            pos => Err(GpuError::Device(format!("GPU returned a non-canonical field word at offset {pos}"))),
        }
    }

    /// Submits `encoder`, then reads `rows` rows of `row_words` words from `src` into `dst`, row r
    /// at words `r * stride + offset ..`: a column block of a wider row-major matrix. Chunked as
    /// [`submit_and_read_chunked_into`](Self::submit_and_read_chunked_into), rows copied on all
    /// cores.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn submit_and_read_rows_into(
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
        let last_end = (rows.max(1) - 1).checked_mul(stride).and_then(|x| x.checked_add(offset)).and_then(|x| x.checked_add(row_words));
        if rows > 0 && (offset.checked_add(row_words).is_none_or(|e| e > stride) || last_end.is_none_or(|e| e > dst.len())) {
            return Err(GpuError::InvalidInput(format!(
                "{rows} rows of {row_words} words at offset {offset} do not fit a {}-word destination of stride {stride}",
                dst.len()
            )));
        }
        let base = transfer::SendPtr(dst.as_mut_ptr());
        let row_bytes = row_words * 4;
        let mut written = false;
        self.read_chunks_with(encoder, src, rows * row_bytes, row_bytes.max(4), how, &mut written, &|range, view| {
            use rayon::prelude::*;
            let first = range.start / row_bytes.max(1);
            let words: &[u32] = bytemuck::cast_slice(view);
            words.par_chunks(row_words.max(1)).enumerate().for_each(|(i, row)| {
                // SAFETY: row first + i is within dst (checked above); rows do not overlap.
                unsafe { transfer::copy_streaming(row.as_ptr().cast::<u8>(), base.get().add((first + i) * stride + offset).cast::<u8>(), row.len() * 4) }
            });
        })
    }

    /// The chunked readback: `len` bytes of `src` in chunks of whole `unit`s, each handed to
    /// `sink(byte range, bytes)` once mapped, while the next chunks cross the bus; `how`'s
    /// chunk size (a multiple of `unit`) and work recorded ahead of each copy.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_chunks_with(
        &self,
        encoder: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        len: usize,
        unit: usize,
        how: ReadChunks<'_>,
        written: &mut bool,
        sink: &(dyn Fn(std::ops::Range<usize>, &[u8]) + Sync),
    ) -> Result<()> {
        if !len.is_multiple_of(4)
            || !len.is_multiple_of(unit)
            || len as u64 > src.size()
            || how.chunk_bytes.is_some_and(|per| per == 0 || !per.is_multiple_of(unit))
        {
            return Err(GpuError::InvalidInput(format!("reading {len} bytes in units of {unit} from a buffer of {} bytes", src.size())));
        }
        self.injected_failure()?;
        self.scoped("submit for a chunked readback", || {
            self.queue_submit(encoder.finish());
            Ok(())
        })?;
        self.traffic.counters.bytes_down.fetch_add(len as u64, Ordering::Relaxed);
        let started = std::time::Instant::now();
        let mut first_wait = None;
        let mut sink_ns = 0u128;
        let per = how.chunk_bytes.unwrap_or_else(|| (self.traffic.transfer_chunk.load(Ordering::Relaxed) as usize / unit).max(1) * unit);
        let ranges: Vec<std::ops::Range<usize>> = (0..len).step_by(per.max(1)).map(|s| s..(s + per).min(len)).collect();
        let chunk = ranges.first().map_or(0, |r| r.len()) as u64;
        let mut ring: Vec<wgpu::Buffer> = Vec::new();
        let mut pending: std::collections::VecDeque<(usize, wgpu::SubmissionIndex, MapAnswer)> = std::collections::VecDeque::new();
        let issue = |i: usize, buffer: &wgpu::Buffer| -> (wgpu::SubmissionIndex, MapAnswer) {
            let range = &ranges[i];
            let mut encoder = self.encoder("chunked readback");
            if let Some(before_copy) = how.before_copy {
                before_copy(&mut encoder, i);
            }
            encoder.copy_buffer_to_buffer(src, range.start as u64, buffer, 0, range.len() as u64);
            let index = self.queue_submit(encoder.finish());
            let (tx, rx) = std::sync::mpsc::channel();
            buffer.slice(..range.len() as u64).map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            (index, rx)
        };
        let result = (|| {
            for i in 0..ranges.len().min(CHUNKS_IN_FLIGHT) {
                ring.push(self.take_staging(&self.pools.readback_pool, chunk).0);
                let (index, rx) = issue(i, &ring[i]);
                pending.push_back((i, index, rx));
            }
            while let Some((i, index, rx)) = pending.pop_front() {
                let slot = i % CHUNKS_IN_FLIGHT;
                self.wait_for_map(index, &rx)?.map_err(|e| GpuError::Map(e.to_string()))?;
                first_wait.get_or_insert_with(|| started.elapsed());
                let range = ranges[i].clone();
                {
                    let view = ring[slot].slice(..range.len() as u64).get_mapped_range().map_err(|e| GpuError::Map(e.to_string()))?;
                    *written = true;
                    let sinking = std::time::Instant::now();
                    sink(range, &view);
                    sink_ns += sinking.elapsed().as_nanos();
                }
                ring[slot].unmap();
                if i + CHUNKS_IN_FLIGHT < ranges.len() {
                    let (index, rx) = issue(i + CHUNKS_IN_FLIGHT, &ring[slot]);
                    pending.push_back((i + CHUNKS_IN_FLIGHT, index, rx));
                }
            }
            Ok(())
        })();
        if result.is_ok() {
            for buffer in ring {
                self.pools.readback_pool.give(buffer);
            }
        }
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        tracing::debug!(
            bytes = len,
            chunks = ranges.len(),
            until_first_chunk_ms = first_wait.map_or(0.0, ms),
            copy_out_ms = sink_ns as f64 / 1e6,
            ms = ms(started.elapsed()),
            "chunked readback"
        );
        result
    }

    /// Submits `encoder` after copying `words` words of `src` into a staging buffer, waits, and
    /// returns them. Validation errors in anything recorded into `encoder` (wgpu reports them
    /// when the encoder is finished) are returned, not only logged.
    pub(crate) fn submit_and_read(&self, encoder: wgpu::CommandEncoder, src: &wgpu::Buffer, words: usize) -> Result<Vec<u32>> {
        let bytes = Self::read_bytes(src, words)?;
        if self.chunked(bytes as usize) {
            // Large: through a few pooled chunks, drained while the next ones cross the bus.
            let mut out = vec![0u32; words];
            let mut written = false;
            // SAFETY: initialised memory seen as possibly uninitialised bytes, only written to.
            let dst = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(), bytes as usize) };
            self.read_chunks(encoder, src, transfer::SendPtr(dst.as_mut_ptr().cast::<u8>()), dst.len(), None, ReadChunks::default(), &mut written)?;
            return Ok(out);
        }
        self.injected_failure()?;
        if bytes == 0 {
            return self.scoped("submit", || {
                self.queue_submit(encoder.finish());
                Ok(Vec::new())
            });
        }
        let started = std::time::Instant::now();
        let out = match self.start_read(encoder, src, bytes, words)? {
            PendingRead::Mapping { staging, bytes, words, index, rx } => self.complete_read(staging, bytes, words, index, &rx)?,
            PendingRead::Ready(words) => words,
        };
        if bytes >= STAGED_MIN_BYTES as u64 {
            tracing::debug!(bytes, ms = started.elapsed().as_secs_f64() * 1e3, "submit and read back");
        }
        Ok(out)
    }

    /// Bytes of a readback of `words` words from `src`; an error past its end.
    pub(super) fn read_bytes(src: &wgpu::Buffer, words: usize) -> Result<u64> {
        words
            .checked_mul(4)
            .map(|b| b as u64)
            .filter(|&b| b <= src.size())
            .ok_or_else(|| GpuError::InvalidInput(format!("reading {words} words from a buffer of {} bytes", src.size())))
    }

    /// Copies `bytes` (> 0, one staging chunk at most) of `src` into pooled staging, submits,
    /// and requests the map.
    pub(super) fn start_read(&self, mut encoder: wgpu::CommandEncoder, src: &wgpu::Buffer, bytes: u64, words: usize) -> Result<PendingRead> {
        let (staging, _) = self.take_staging(&self.pools.readback_pool, bytes);
        encoder.copy_buffer_to_buffer(src, 0, &staging, 0, bytes);
        // Recording errors surface at `finish`: catch them here, on this thread's scopes.
        let index = self.scoped("submit and read back", || Ok(self.queue_submit(encoder.finish())))?;
        self.traffic.counters.bytes_down.fetch_add(bytes, Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.slice(..bytes).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        Ok(PendingRead::Mapping { staging, bytes, words, index, rx })
    }

    /// [`submit_and_read`](Self::submit_and_read) whose wait comes later
    /// ([`finish_read`](Self::finish_read)): the copy is submitted and its map requested now, so
    /// work submitted after it (and waited for first) covers its round trip. Reads larger than a
    /// transfer chunk are read at once.
    pub(super) fn submit_then_read(&self, encoder: wgpu::CommandEncoder, src: &wgpu::Buffer, words: usize) -> Result<PendingRead> {
        let bytes = Self::read_bytes(src, words)?;
        if bytes == 0 || self.chunked(bytes as usize) {
            return self.submit_and_read(encoder, src, words).map(PendingRead::Ready);
        }
        self.start_read(encoder, src, bytes, words)
    }

    /// The words of a [`submit_then_read`](Self::submit_then_read), waiting for them if needed.
    pub(super) fn finish_read(&self, read: PendingRead) -> Result<Vec<u32>> {
        match read {
            PendingRead::Ready(words) => Ok(words),
            // A failure injected for tests strikes at the wait, after the work in between.
            PendingRead::Mapping { staging, bytes, words, index, rx } => {
                self.injected_failure().and_then(|()| self.complete_read(staging, bytes, words, index, &rx))
            }
        }
    }

    /// Waits for a `start_read`'s map and copies the words out.
    pub(super) fn complete_read(&self, staging: wgpu::Buffer, bytes: u64, words: usize, index: wgpu::SubmissionIndex, rx: &MapAnswer) -> Result<Vec<u32>> {
        self.wait_for_map(index, rx)?.map_err(|e| GpuError::Map(e.to_string()))?;
        // Copied out on all cores: one core page-faulting a fresh Vec is slow
        // (docs/benchmarks-history.md).
        let _span = tracing::info_span!("readback copy", words).entered();
        let mut out = vec![0u32; words];
        {
            let view = staging.slice(..bytes).get_mapped_range().map_err(|e| GpuError::Map(e.to_string()))?;
            transfer::par_read(bytemuck::cast_slice_mut(&mut out), &view);
        }
        staging.unmap();
        self.pools.readback_pool.give(staging);
        Ok(out)
    }

    /// Submits without waiting (the queue runs submissions in order). Call inside
    /// [`scoped`](Self::scoped) to have recording errors returned.
    pub(crate) fn submit(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.queue_submit(encoder.finish());
        Ok(())
    }

    /// Submits and blocks until the GPU is done; recording errors are returned as in
    /// [`submit_and_read`](Self::submit_and_read).
    pub(crate) fn submit_and_wait(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        let index = self.scoped("submit", || Ok(self.queue_submit(encoder.finish())))?;
        self.wait_for(Some(index))
    }
}
