//! Memory: the device and staging pools, buffers handed back before their submission, the
//! memory budget and the high-water mark.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::*;
use crate::error::{GpuError, Result};
use crate::transfer::{BufferPool, StagingPool};

/// The device pool's budget: `asked` MiB, else 32 GiB.
pub(super) fn pool_bytes(asked: Option<u64>) -> u64 {
    asked.map_or(DEFAULT_POOL_BYTES, |mib: u64| mib.saturating_mul(1 << 20))
}

/// Large, because allocating is slow (a large proof ran much faster with all its buffers pooled
/// than with 8 GiB; docs/benchmarks-history.md) and because the pools give their buffers back
/// when an allocation runs out of memory (`storage`).
pub(super) const DEFAULT_POOL_BYTES: u64 = 32 << 30;

/// Idle device buffers kept per size. A split proof holds many buffers of one size at once
/// (n = 28: ten 1 GiB table segments), and with four kept the rest were allocated afresh every
/// proof; the byte budget is what bounds the pool's memory.
pub(super) const DEVICE_POOL_PER_SIZE: usize = 16;

pub(super) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// Fresh storage buffers from this size on are made after wgpu has freed what finished work
/// left dropped (`GpuMemory::storage`).
pub(super) const RETIRE_BEFORE_BYTES: usize = 8 << 20;
/// Where a context's buffer memory goes: pools of idle buffers, buffers waiting for their
/// submission, the budget and the high-water mark.
pub(super) struct Pools {
    /// Reused staging memory for uploads (MAP_WRITE) and readbacks (MAP_READ).
    pub(super) upload_pool: StagingPool,
    pub(super) readback_pool: StagingPool,
    /// Device buffers handed back with `recycle_storage`, by exact size, and their total bytes:
    /// a fresh large buffer costs an allocation and a first-use clear (docs/benchmarks-history.md).
    pub(super) device_pool: BufferPool,
    /// Buffers handed back by a thread while work it recorded with them was not yet submitted:
    /// they join the pool after that thread's next submission (`recycle_after_submit`).
    pub(super) deferred: Mutex<Vec<(std::thread::ThreadId, wgpu::Buffer)>>,
    /// The memory budget in bytes (`GpuOptions::memory_mib`), if any.
    pub(super) memory_budget: Option<u64>,
    /// The first allocation each thread made over the budget, until a `scoped` call on that
    /// thread reports it (threads proving at once each hear of their own).
    pub(super) over_budget: Mutex<Vec<(std::thread::ThreadId, GpuError)>>,
    /// Highest buffer memory the device had allocated (wgpu's counter, sampled whenever it can
    /// have grown), since the context was made or `reset_peak_buffer_bytes`.
    pub(super) peak_buffer_bytes: AtomicU64,
}

impl Pools {
    /// Pools within `pool_budget` bytes each, under a memory budget of `memory_budget`.
    pub(super) fn new(pool_budget: u64, memory_budget: Option<u64>) -> Self {
        Self {
            upload_pool: StagingPool::new(wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC, pool_budget),
            readback_pool: StagingPool::new(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, pool_budget),
            device_pool: BufferPool::new(DEVICE_POOL_PER_SIZE, pool_budget),
            deferred: Mutex::new(Vec::new()),
            memory_budget,
            over_budget: Mutex::new(Vec::new()),
            peak_buffer_bytes: AtomicU64::new(0),
        }
    }
}

impl GpuContext {
    /// The context's buffer memory: use, peak, pools and budget.
    pub fn memory(&self) -> GpuMemory<'_> {
        GpuMemory(self)
    }

    pub(super) fn sample_buffer_bytes(&self) {
        self.pools.peak_buffer_bytes.fetch_max(self.memory().buffer_bytes(), Ordering::Relaxed);
    }

    /// Before allocating `bytes`: within the budget, after dropping idle pooled buffers if need
    /// be; otherwise the overrun is noted and the surrounding `scoped` call fails with it.
    pub(super) fn reserve(&self, what: &str, bytes: u64) {
        if let Err(e) = self.memory().try_reserve(what, bytes) {
            let here = std::thread::current().id();
            if let Ok(mut overruns) = self.pools.over_budget.lock() {
                if !overruns.iter().any(|(t, _)| *t == here) {
                    overruns.push((here, e));
                }
            }
        }
    }

    /// An uninitialised storage buffer of `words` u32 words (at least one).
    pub(crate) fn storage(&self, label: &str, words: usize) -> wgpu::Buffer {
        if words * 4 >= RETIRE_BEFORE_BYTES {
            // Buffers dropped while submitted work still used them are freed only when wgpu
            // next sees that work done: let it look before a large allocation, so that memory
            // is back first (the peak of a proof otherwise depends on how far the GPU has got).
            if let Err(e) = self.device.poll(wgpu::PollType::Poll) {
                tracing::debug!("poll before allocating {label}: {e}");
            }
        }
        self.reserve(label, (words.max(1) * 4) as u64);
        let create = || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (words.max(1) * 4) as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        // Idle pooled buffers are given back when the device runs out of memory, and the
        // allocation tried once more (a second failure reaches the caller's `scoped`).
        let pooled = self.pools.device_pool.bytes() + self.pools.upload_pool.bytes() + self.pools.readback_pool.bytes();
        let buffer = if pooled > 0 {
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let buffer = create();
            match pollster::block_on(scope.pop()) {
                None => buffer,
                Some(e) => {
                    tracing::debug!(label, pooled_mib = mib(pooled), "out of GPU memory with buffers pooled ({e}); freeing the pools and trying again");
                    drop(buffer);
                    self.memory().trim_pools();
                    create()
                }
            }
        } else {
            create()
        };
        self.sample_buffer_bytes();
        self.count_fresh_buffer(buffer.size());
        buffer
    }

    /// A storage buffer of exactly `words` words (at least one) from the pool of recycled ones,
    /// or a fresh one. Its contents are whatever the last user left.
    pub(crate) fn pooled_storage(&self, label: &str, words: usize) -> wgpu::Buffer {
        let bytes = (words.max(1) * 4) as u64;
        // First what this thread handed back before submitting: work it records from here on
        // runs after the work that used it, so it may reuse it at once.
        if let Some(buffer) = self.take_deferred(bytes) {
            return buffer;
        }
        if let Some(buffer) = self.pools.device_pool.take(bytes) {
            return buffer;
        }
        let _span = tracing::info_span!("fresh buffer", bytes).entered();
        self.storage(label, words)
    }

    /// A pooled storage buffer for the host to write into (`write`, an upload): never one that
    /// recorded, unsubmitted work still uses, since a write lands before the next submission.
    pub(crate) fn pooled_for_upload(&self, label: &str, words: usize) -> wgpu::Buffer {
        let bytes = (words.max(1) * 4) as u64;
        self.pools.device_pool.take(bytes).unwrap_or_else(|| self.storage(label, words))
    }

    /// A buffer of `bytes` this thread handed back with `recycle_after_submit`, if any.
    pub(super) fn take_deferred(&self, bytes: u64) -> Option<wgpu::Buffer> {
        let me = std::thread::current().id();
        let mut deferred = self.pools.deferred.lock().expect("deferred buffers poisoned");
        let at = deferred.iter().position(|(thread, b)| *thread == me && b.size() == bytes)?;
        Some(deferred.swap_remove(at).1)
    }

    /// Hands a storage buffer back for `pooled_storage` (kept while the pool holds under its
    /// budget, 32 GiB by default, and at most `DEVICE_POOL_PER_SIZE` of its size). Only for a
    /// buffer whose uses are all submitted; see [`recycle_after_submit`](Self::recycle_after_submit).
    pub(crate) fn recycle_storage(&self, buffer: wgpu::Buffer) {
        self.pools.device_pool.give(buffer);
    }

    /// Hands back a buffer that work recorded on this thread but not yet submitted still uses:
    /// this thread's `pooled_storage` may take it again at once for work it records after
    /// (kernels recorded later run later; host writes would not, so `pooled_for_upload` never
    /// takes it), and it joins the shared pool after this thread's next submission, which must
    /// be the one carrying that work. Given straight to the pool, another thread sharing the
    /// context could take it and submit writes to it before that work is submitted.
    pub(crate) fn recycle_after_submit(&self, buffer: wgpu::Buffer) {
        self.pools.deferred.lock().expect("deferred buffers poisoned").push((std::thread::current().id(), buffer));
    }

    /// Gives the pool what this thread handed back before its submission just made.
    pub(super) fn release_deferred(&self) {
        let me = std::thread::current().id();
        let mine: Vec<wgpu::Buffer> = {
            let mut deferred = self.pools.deferred.lock().expect("deferred buffers poisoned");
            if deferred.is_empty() {
                return;
            }
            let (mine, others): (Vec<_>, Vec<_>) = deferred.drain(..).partition(|(thread, _)| *thread == me);
            *deferred = others;
            mine.into_iter().map(|(_, b)| b).collect()
        };
        for buffer in mine {
            self.pools.device_pool.give(buffer);
        }
    }
}

/// A context's buffer memory: what the device holds now and at its peak, the pools of idle
/// buffers and the budget ([`GpuContext::memory`]).
pub struct GpuMemory<'a>(pub(super) &'a GpuContext);

impl GpuMemory<'_> {
    /// Buffer memory the device has allocated now (wgpu's counter; 0 where the backend does
    /// not count). Includes the pools' retained buffers.
    pub fn buffer_bytes(&self) -> u64 {
        self.0.device.get_internal_counters().hal.buffer_memory.read().max(0) as u64
    }

    /// The highest [`buffer_bytes`](Self::buffer_bytes) seen since the context was made or the
    /// last reset. Sampled after every buffer this context creates and at every submission;
    /// wgpu frees a dropped buffer only once the GPU is done with it, so this is an upper bound
    /// on what the work needed at once. `None` where the backend keeps no count.
    pub fn peak_buffer_bytes(&self) -> Option<u64> {
        self.0.sample_buffer_bytes();
        Some(self.0.pools.peak_buffer_bytes.load(Ordering::Relaxed)).filter(|&b| b > 0)
    }

    /// Starts a new high-water mark from what is allocated now.
    pub fn reset_peak_buffer_bytes(&self) {
        self.0.pools.peak_buffer_bytes.store(self.buffer_bytes(), Ordering::Relaxed);
    }

    /// Caps the idle device buffers kept for reuse at `bytes`, and the idle staging buffers of
    /// each direction likewise (dropping what a pool holds if it holds more). 0 makes the memory high-water mark the work's own live set; reuse across
    /// proofs is what the pool buys (see `GpuOptions::pool_mib`).
    pub fn set_pool_budget(&self, bytes: u64) {
        self.0.pools.device_pool.set_max_bytes(bytes);
        self.0.pools.upload_pool.set_max_bytes(bytes);
        self.0.pools.readback_pool.set_max_bytes(bytes);
    }

    /// The most bytes of idle device buffers kept (see [`set_pool_budget`](Self::set_pool_budget);
    /// each staging direction keeps at most this much too, and at most 4 GiB).
    pub fn pool_budget(&self) -> u64 {
        self.0.pools.device_pool.max_bytes()
    }

    /// Bytes of the recycled device and staging buffers the pools hold (allocated, idle).
    pub fn pooled_bytes(&self) -> u64 {
        self.0.pools.device_pool.bytes() + self.0.pools.upload_pool.bytes() + self.0.pools.readback_pool.bytes()
    }

    /// Drops the recycled device and staging buffers the pools hold (before a workload of other
    /// sizes, or to measure one workload's own high-water mark).
    pub fn trim_pools(&self) {
        // Deferred buffers too (work still recorded with one keeps it alive in wgpu): a thread
        // that failed before submitting, or ended, would otherwise hold them for good.
        self.0.pools.deferred.lock().expect("deferred buffers poisoned").clear();
        self.0.pools.device_pool.clear();
        self.0.pools.upload_pool.clear();
        self.0.pools.readback_pool.clear();
        // Dropped buffers are freed once wgpu sees the GPU is done with them.
        let _ = self.0.device.poll(wgpu::PollType::wait_indefinitely());
    }

    /// The memory budget in bytes, if one is set.
    pub fn budget(&self) -> Option<u64> {
        self.0.pools.memory_budget
    }

    /// Fails with [`GpuError::OverBudget`] when `bytes` of GPU memory for `what` would not fit
    /// the budget: for callers that know their need before starting.
    pub fn check(&self, what: &str, bytes: u64) -> Result<()> {
        match self.0.pools.memory_budget {
            Some(budget) if bytes > budget => Err(GpuError::OverBudget { what: what.into(), needed_mib: mib(bytes), budget_mib: mib(budget) }),
            _ => Ok(()),
        }
    }

    /// Whether `bytes` more fit the memory budget (after dropping idle pooled buffers if need
    /// be); an error naming the budget if not. For allocations made outside `scoped` calls.
    pub fn try_reserve(&self, what: &str, bytes: u64) -> Result<()> {
        let Some(budget) = self.0.pools.memory_budget else { return Ok(()) };
        if self.buffer_bytes() + bytes <= budget {
            return Ok(());
        }
        self.trim_pools();
        let now = self.buffer_bytes();
        if now + bytes > budget {
            return Err(GpuError::OverBudget {
                what: format!("{what} ({:.1} MiB with {:.1} MiB already allocated)", mib(bytes), mib(now)),
                needed_mib: mib(now + bytes),
                budget_mib: mib(budget),
            });
        }
        Ok(())
    }
}
