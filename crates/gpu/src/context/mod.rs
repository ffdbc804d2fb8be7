//! The device context: adapter choice, device with the adapter's real limits, error scopes,
//! buffer upload/readback and the pipeline cache.
//!
//! One file per concern: `adapter` (adapter and limits), `batch` (work recorded for one wait),
//! `pipelines` (pipelines, uniforms,
//! dispatch), `memory` (pools, budget, high-water mark), `transfers` (submissions, uploads,
//! readbacks and their counts), `profile` (GPU timestamps), `faults` (test-only fault
//! injection). Each owns its state in a type of its own, which `GpuContext` holds.

mod adapter;
mod batch;
mod faults;
mod kernel_timer;
mod memory;
mod pipelines;
mod profile;
mod queues;
mod transfers;
mod views;

use adapter::*;
pub use adapter::{list_adapters, pool_adapters, AdapterSummary};
pub use batch::{Batch, InFlight, ReadSlot, Readback};
use faults::FaultInjection;
pub use kernel_timer::KernelTimer;
pub use memory::GpuMemory;
use memory::*;
pub use pipelines::Dispatch;
use pipelines::*;
pub use profile::GpuProfiler;
use profile::*;
pub use profile::{KernelSpan, ProfileLabelGuard, ProfileSpan, QueueOccupancy};
use transfers::*;
pub use transfers::{HostCosts, ReadChunks, RecordBeforeCopy, TransferCounts, TRANSFER_CHUNK_BYTES};
pub use views::{GpuFaults, GpuPipelines, GpuTransfers};

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{GpuError, Result};
use crate::options::{GpuOptions, GpuTuning, LimitsProfile};
use crate::shaders::MulVariant;

/// How long a wait for the GPU spins on `poll` before blocking: a blocked thread is woken well
/// after the GPU finishes (docs/benchmarks-history.md), and a resident proof waits a hundred
/// times on work that takes about as long as that delay.
/// Software adapters run on the host's cores, which a spinning thread would take from them.
/// `GpuOptions::spin_us` overrides it (0: always block).
fn spin_before_blocking(software: bool, asked: Option<u64>) -> std::time::Duration {
    let default = if software { 0 } else { DEFAULT_SPIN_US };
    std::time::Duration::from_micros(asked.unwrap_or(default))
}

/// Most queues [`GpuContext::on_queues`] opens on one device.
pub const MAX_QUEUES: usize = 16;

/// What a context's device is opened with: the adapter, what it offers in the profile asked
/// for, and the multiply variant chosen.
#[derive(Clone)]
struct DevicePlan {
    adapter: wgpu::Adapter,
    summary: AdapterSummary,
    mul_variant: MulVariant,
    profile: LimitsProfile,
    required_features: wgpu::Features,
    required_limits: wgpu::Limits,
}

impl DevicePlan {
    fn new(options: &GpuOptions) -> Result<Self> {
        let inst = instance();
        let adapter = choose_adapter(&inst, &options.adapter)?;
        let profile = options.limits.unwrap_or_default();
        let strict = matches!(profile, LimitsProfile::WebGpu { .. });
        let mut summary = AdapterSummary::of(&adapter);
        if strict {
            // No optional features in the strict profile: as an adapter without SHADER_INT64.
            summary.shader_int64 = false;
        }
        let mul_variant = match options.mul_variant {
            Some(MulVariant::U64) if !summary.shader_int64 => return Err(GpuError::Int64Unsupported(summary.name.clone())),
            Some(v) => v,
            None if summary.shader_int64 => MulVariant::U64,
            None => MulVariant::Emulated,
        };
        let wanted =
            wgpu::Features::SHADER_INT64 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        // Ask for everything the adapter offers (wgpu's defaults cap storage bindings at 128 MiB);
        // in the strict profile exactly WebGPU's defaults and no optional feature; in the Apple
        // profile what an M1 has, as far as this adapter has it.
        let (required_features, required_limits) = match profile {
            LimitsProfile::WebGpu { max_binding_bytes } => {
                let mut limits = wgpu::Limits::default();
                // A smaller binding limit is asked of the device too, so wgpu itself enforces it.
                if let Some(b) = max_binding_bytes {
                    limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(b as _);
                }
                (wgpu::Features::empty(), limits)
            }
            LimitsProfile::AppleM1 => (adapter.features() & apple_m1_features(), apple_m1_limits(adapter.limits())),
            LimitsProfile::Adapter => (adapter.features() & wanted, adapter.limits()),
        };
        Ok(Self { adapter, summary, mul_variant, profile, required_features, required_limits })
    }

    fn descriptor(&self, options: &GpuOptions) -> Result<wgpu::DeviceDescriptor<'static>> {
        Ok(wgpu::DeviceDescriptor {
            label: Some("whir-gpu"),
            required_features: self.required_features,
            required_limits: self.required_limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: device_trace(options.trace_dir.as_deref())?,
        })
    }
}

/// wgpu's trace for `GpuOptions::trace_dir`: none without a directory; an error where this
/// crate was built without its `trace` feature or the directory does not exist.
fn device_trace(dir: Option<&std::path::Path>) -> Result<wgpu::Trace> {
    let Some(dir) = dir else { return Ok(wgpu::Trace::Off) };
    if !dir.is_dir() {
        return Err(GpuError::InvalidInput(format!("trace directory {} does not exist; create it first", dir.display())));
    }
    #[cfg(feature = "trace")]
    return Ok(wgpu::Trace::Directory(dir.to_path_buf()));
    #[cfg(not(feature = "trace"))]
    Err(GpuError::InvalidInput(format!("a trace into {} needs whir-gpu built with its `trace` feature", dir.display())))
}

/// The features wgpu's Metal backend gives an Apple M1 of those the context asks for: 64-bit
/// integers, subgroups and timestamps at pass boundaries, none inside encoders or passes.
fn apple_m1_features() -> wgpu::Features {
    wgpu::Features::SHADER_INT64 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY
}

/// `adapter`'s limits capped at what wgpu's Metal backend reports for an Apple M1
/// ([`LimitsProfile::AppleM1`]): each maximum the smaller of the two, each alignment the larger.
fn apple_m1_limits(adapter: wgpu::Limits) -> wgpu::Limits {
    let max_buffer = crate::options::APPLE_M1_MAX_BUFFER_BYTES;
    wgpu::Limits {
        max_compute_workgroup_storage_size: adapter.max_compute_workgroup_storage_size.min(32 << 10),
        max_compute_invocations_per_workgroup: adapter.max_compute_invocations_per_workgroup.min(1024),
        max_compute_workgroup_size_x: adapter.max_compute_workgroup_size_x.min(1024),
        max_compute_workgroup_size_y: adapter.max_compute_workgroup_size_y.min(1024),
        max_compute_workgroup_size_z: adapter.max_compute_workgroup_size_z.min(1024),
        max_compute_workgroups_per_dimension: adapter.max_compute_workgroups_per_dimension.min(0xFFFF),
        // Metal's 31 buffer slots less the two wgpu keeps for itself.
        max_storage_buffers_per_shader_stage: adapter.max_storage_buffers_per_shader_stage.min(29),
        max_uniform_buffers_per_shader_stage: adapter.max_uniform_buffers_per_shader_stage.min(29),
        max_buffer_size: adapter.max_buffer_size.min(max_buffer),
        max_storage_buffer_binding_size: adapter.max_storage_buffer_binding_size.min(max_buffer as _),
        min_storage_buffer_offset_alignment: adapter.min_storage_buffer_offset_alignment.max(32),
        min_uniform_buffer_offset_alignment: adapter.min_uniform_buffer_offset_alignment.max(256),
        ..adapter
    }
}

/// Spin before blocking on hardware adapters (it shortened small proofs:
/// docs/benchmarks-history.md).
const DEFAULT_SPIN_US: u64 = 1000;

/// One adapter, one device, its queue and every pipeline built on it. Cheap to share
/// (`Arc<GpuContext>`) and safe to use from several threads.
pub struct GpuContext {
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    summary: AdapterSummary,
    mul_variant: MulVariant,
    /// The tuning it was opened with.
    tuning: GpuTuning,
    /// How long a wait spins before it blocks (see `spin_before_blocking`).
    spin: std::time::Duration,
    /// The first wgpu error no error scope caught (work submitted outside our calls), kept
    /// for [`GpuFaults::take_uncaptured_error`](crate::plumbing::GpuFaults::take_uncaptured_error).
    uncaptured: Arc<Mutex<Option<String>>>,
    /// Why the device was lost, once it is (wgpu's device-lost callback).
    lost: Arc<Mutex<Option<String>>>,
    pipelines: Pipelines,
    pools: Pools,
    traffic: Traffic,
    profile_state: Profiler,
    faults: FaultInjection,
    /// A small upload buffer made first and kept for the context's life, so the allocator's
    /// first host-visible block is never empty (see `GpuContext::new`).
    _staging_keeper: wgpu::Buffer,
}

impl fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.summary.name)
            .field("backend", &self.summary.backend)
            .field("mul_variant", &self.mul_variant)
            .finish()
    }
}

impl GpuContext {
    /// Opens a context with the environment's settings ([`GpuOptions::from_env`]: the adapter
    /// `WHIR_ADAPTER` names or the high-performance one, `WHIR_LIMITS`, ...): the entry point
    /// of the Plonky3 drop-ins' `Default`s and of programs; libraries pass options instead.
    pub fn new_default() -> Result<Self> {
        Self::new(GpuOptions::from_env()?)
    }

    /// Opens a context on the adapter `options` selects, with its limits profile and tuning.
    pub fn new(options: GpuOptions) -> Result<Self> {
        let plan = DevicePlan::new(&options)?;
        let desc = plan.descriptor(&options)?;
        let (device, queue) = pollster::block_on(plan.adapter.request_device(&desc))
            .map_err(|e| GpuError::RequestDevice { adapter: plan.summary.to_string(), reason: e.to_string() })?;
        Ok(Self::on_device(plan, device, queue, &options))
    }

    /// `count` contexts on one device of the adapter `options` names, each submitting to a
    /// queue of its own (Vulkan: one `VkDevice` opened with `count` queues of one family, the
    /// compute-only one on NVIDIA's driver with `GpuTuning::compute_only_queues`), so that work submitted on different contexts is not kept in one queue's order.
    /// Each context has pools of its own, as contexts on devices of their own do, and a share
    /// of the memory budget and of the idle pool cap (`GpuOptions::memory_mib`, `pool_mib`:
    /// divided by `count`, so the device's total stays as asked); a proof pool over them
    /// (whir-prover's `ProofPool::over`) keeps each proof on one. On Vulkan even `count == 1`
    /// opens the device this way; on other backends only `count == 1` opens (as
    /// [`new`](Self::new)). An error says what is missing where the backend or the adapter's
    /// queues fall short.
    pub fn on_queues(mut options: GpuOptions, count: usize) -> Result<Vec<Self>> {
        if count == 0 || count > MAX_QUEUES {
            return Err(GpuError::InvalidInput(format!("{count} queues asked for; give 1 to {MAX_QUEUES}")));
        }
        if count > 1 && options.trace_dir.is_some() {
            return Err(GpuError::InvalidInput(format!(
                "a wgpu trace records one device; {count} queues would write {count} traces over each other in one directory: trace one queue"
            )));
        }
        let share = count as u64;
        options.memory_mib = options.memory_mib.map(|m| m / share);
        options.pool_mib = Some(options.pool_mib.unwrap_or(DEFAULT_POOL_BYTES >> 20) / share);
        let plan = DevicePlan::new(&options)?;
        let desc = plan.descriptor(&options)?;
        let opened = queues::open_queues(&plan.adapter, &desc, count, options.tuning.compute_only_queues)
            .map_err(|reason| GpuError::RequestDevice { adapter: plan.summary.to_string(), reason })?;
        Ok(opened.into_iter().map(|(device, queue)| Self::on_device(plan.clone(), device, queue, &options)).collect())
    }

    /// The context over a device just opened as `plan` says.
    fn on_device(plan: DevicePlan, device: wgpu::Device, queue: wgpu::Queue, options: &GpuOptions) -> Self {
        let DevicePlan { adapter, summary, mul_variant, profile, .. } = plan;
        // wgpu stages every small `write_buffer` (and buffer mapped at creation) in a
        // host-visible buffer of its own. With no long-lived allocation in the allocator's first
        // host-visible block, a pooled 64 MiB staging chunk could fill it, and each small
        // staging then opened and freed a block of its own, a large share of a proof's time in
        // wgpu-core's `StagingBuffer::new` and the trackers' drop (docs/benchmarks-history.md, "Throughput on one queue").
        let staging_keeper = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("staging block keeper"),
            size: 256,
            usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut summary = summary.with_device(&device, profile);
        if profile == LimitsProfile::AppleM1 {
            // wgpu's Metal backend reports these for every Apple GPU (the M1's SIMD width is 32).
            (summary.subgroup_min_size, summary.subgroup_max_size) = (4, 64);
        }
        let uncaptured: Arc<Mutex<Option<String>>> = Arc::default();
        let slot = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            tracing::error!("uncaptured wgpu error: {e}");
            if let Ok(mut first) = slot.lock() {
                first.get_or_insert_with(|| e.to_string());
            }
        }));
        let lost: Arc<Mutex<Option<String>>> = Arc::default();
        let lost_slot = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            tracing::warn!(?reason, "GPU device lost: {message}");
            if let Ok(mut slot) = lost_slot.lock() {
                slot.get_or_insert_with(|| format!("{reason:?}: {message}"));
            }
        });
        tracing::info!(adapter = %summary, ?mul_variant, "GPU context ready");
        let spin = spin_before_blocking(summary.is_software(), options.spin_us);
        let memory_budget = options.memory_mib.map(|mib| mib.saturating_mul(1 << 20));
        // Idle pools never hold more than the budget allows: three pools (device, upload and
        // readback staging) of a quarter each. (Staging lives in host-visible memory and is not
        // otherwise counted against the budget.)
        let pool_budget = memory_budget.map_or(pool_bytes(options.pool_mib), |b| pool_bytes(options.pool_mib).min(b / 4));
        Self {
            adapter,
            device,
            queue,
            summary,
            mul_variant,
            tuning: options.tuning.clone(),
            spin,
            uncaptured,
            lost,
            pipelines: Pipelines::default(),
            pools: Pools::new(pool_budget, memory_budget),
            traffic: Traffic {
                counters: TransferCounters::default(),
                transfer_chunk: AtomicU64::new(TRANSFER_CHUNK_BYTES),
                early_submits: AtomicBool::new(options.tuning.early_submits),
            },
            profile_state: Profiler::default(),
            faults: FaultInjection::default(),
            _staging_keeper: staging_keeper,
        }
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue this context submits to.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The adapter the device was opened on.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// What the adapter is, with the device's features and limits.
    pub fn summary(&self) -> &AdapterSummary {
        &self.summary
    }

    /// How the kernels multiply field elements on this device.
    pub fn mul_variant(&self) -> MulVariant {
        self.mul_variant
    }

    /// The device's limits.
    pub fn limits(&self) -> wgpu::Limits {
        self.device.limits()
    }

    /// Largest single storage binding, in bytes (the profile's limit where it sets a smaller
    /// one).
    pub fn max_binding_bytes(&self) -> u64 {
        let l = self.device.limits();
        l.max_storage_buffer_binding_size.min(l.max_buffer_size).min(self.summary.max_storage_buffer_binding_size)
    }

    /// Fails with a plain message when `bytes` cannot live in one storage binding.
    pub fn check_binding_size(&self, what: &str, bytes: u64) -> Result<()> {
        let limit = self.max_binding_bytes();
        if bytes > limit {
            return Err(GpuError::TooLarge { what: what.to_string(), needed: bytes, limit });
        }
        Ok(())
    }

    /// The first wgpu error raised outside any of this crate's calls (e.g. by work the caller
    /// recorded and submitted itself), if one happened since the last call. Errors inside our
    /// calls are returned by those calls.
    pub(crate) fn take_uncaptured_error(&self) -> Option<String> {
        self.uncaptured.lock().ok().and_then(|mut s| s.take())
    }

    /// Why the device was lost, if it was (a driver reset, an unplugged GPU, `destroy`): every
    /// later use fails, so work meant for it should go elsewhere.
    pub fn lost(&self) -> Option<String> {
        let known = || self.lost.lock().ok().and_then(|s| s.clone());
        if let Some(why) = known() {
            return Some(why);
        }
        // wgpu reports a loss from a poll (this one waits for nothing), and wgpu 30 panics
        // where the poll itself meets the lost device, after running the callback.
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.device.poll(wgpu::PollType::Poll)));
        match (known(), polled) {
            (Some(why), _) => Some(why),
            (None, Err(_)) => Some("polling the device panicked".into()),
            (None, Ok(_)) => None,
        }
    }

    /// Runs `f` inside validation and out-of-memory error scopes and turns what they catch
    /// into errors.
    pub fn scoped<T>(&self, context: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        // A panic in `f` still pops this thread's scopes and clears its overrun, so the next
        // call on this thread (a pool's next job) starts clean; then it goes on unwinding.
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let popped = tracing::info_span!("pop error scopes").entered();
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        drop(popped);
        let here = std::thread::current().id();
        let overrun = self.pools.over_budget.lock().ok().and_then(|mut g| g.iter().position(|(t, _)| *t == here).map(|at| g.swap_remove(at).1));
        let out = out.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        if let Some(e) = overrun {
            return Err(e);
        }
        if let Some(e) = o {
            return Err(GpuError::OutOfMemory { context: context.into(), message: e.to_string() });
        }
        if let Some(e) = v {
            return Err(GpuError::Validation { context: context.into(), message: e.to_string() });
        }
        out
    }

    /// The tuning this context was opened with (`GpuOptions::tuning`).
    pub fn tuning(&self) -> &GpuTuning {
        &self.tuning
    }

    /// Whether a long step submits its first part as soon as it is recorded, so the GPU runs
    /// it while the rest is recorded (a codeword's encoding before its tree, the tree before the
    /// sponge script that follows it, each sumcheck round of a chain). On by default
    /// (`GpuTuning::early_submits`); off records each step in one submission, to measure it.
    pub(crate) fn early_submits(&self) -> bool {
        self.traffic.early_submits.load(Ordering::Relaxed)
    }

    /// Tests and measurements: turns early submits on or off for this context.
    #[doc(hidden)]
    pub(crate) fn set_early_submits(&self, on: bool) {
        self.traffic.early_submits.store(on, Ordering::Relaxed);
    }
}
