//! The device context: adapter choice, device with the adapter's real limits, error scopes,
//! buffer upload/readback and the pipeline cache.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use wgpu::util::DeviceExt;

use crate::error::{GpuError, Result};
use crate::options::{AdapterSelector, GpuOptions, GpuTuning, LimitsProfile};
use crate::shaders::{self, Kernel, MulVariant};
use crate::transfer::{self, BufferPool, StagingPool, STAGED_MIN_BYTES};


/// What an adapter is and what it can do.
#[derive(Clone, Debug)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: wgpu::Backend,
    pub device_type: wgpu::DeviceType,
    pub driver: String,
    pub driver_info: String,
    pub shader_int64: bool,
    pub subgroup: bool,
    pub timestamp_query: bool,
    pub subgroup_min_size: u32,
    pub subgroup_max_size: u32,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroup_storage_size: u32,
    pub max_compute_invocations_per_workgroup: u32,
    pub max_compute_workgroups_per_dimension: u32,
    /// The limits profile the context asked for (the fields above are what it got).
    pub profile: LimitsProfile,
}

impl AdapterSummary {
    fn of(adapter: &wgpu::Adapter) -> Self {
        let info = adapter.get_info();
        let features = adapter.features();
        let limits = adapter.limits();
        Self {
            name: info.name,
            backend: info.backend,
            device_type: info.device_type,
            driver: info.driver,
            driver_info: info.driver_info,
            shader_int64: features.contains(wgpu::Features::SHADER_INT64),
            subgroup: features.contains(wgpu::Features::SUBGROUP),
            timestamp_query: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            subgroup_min_size: info.subgroup_min_size,
            subgroup_max_size: info.subgroup_max_size,
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            profile: LimitsProfile::Adapter,
        }
    }

    /// What a device made with `profile` has: its features and limits in place of the
    /// adapter's.
    fn with_device(mut self, device: &wgpu::Device, profile: LimitsProfile) -> Self {
        let features = device.features();
        let limits = device.limits();
        self.shader_int64 = features.contains(wgpu::Features::SHADER_INT64);
        self.subgroup = features.contains(wgpu::Features::SUBGROUP);
        self.timestamp_query = features.contains(wgpu::Features::TIMESTAMP_QUERY);
        self.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size;
        self.max_buffer_size = limits.max_buffer_size;
        self.max_compute_workgroup_storage_size = limits.max_compute_workgroup_storage_size;
        self.max_compute_invocations_per_workgroup = limits.max_compute_invocations_per_workgroup;
        self.max_compute_workgroups_per_dimension = limits.max_compute_workgroups_per_dimension;
        if let LimitsProfile::WebGpu { max_binding_bytes: Some(b) } = profile {
            self.max_storage_buffer_binding_size = self.max_storage_buffer_binding_size.min(b);
        }
        self.profile = profile;
        self
    }

    /// A software renderer (llvmpipe, lavapipe, SwiftShader, WARP, ...): "GPU" work runs on
    /// this machine's CPU. GL adapters over the same renderer often report no CPU type, so the
    /// name counts too.
    pub fn is_software(&self) -> bool {
        const RENDERERS: [&str; 6] = ["llvmpipe", "lavapipe", "softpipe", "swiftshader", "microsoft basic render", "software"];
        let name = self.name.to_ascii_lowercase();
        self.device_type == wgpu::DeviceType::Cpu || RENDERERS.iter().any(|r| name.contains(r))
    }

    /// Feature names as `whir info` prints them.
    pub fn feature_names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.shader_int64 {
            v.push("SHADER_INT64");
        }
        if self.subgroup {
            v.push("SUBGROUP");
        }
        if self.timestamp_query {
            v.push("TIMESTAMP_QUERY");
        }
        v
    }
}

impl fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?}, {:?}", self.name, self.backend, self.device_type)?;
        if !self.driver.is_empty() {
            write!(f, ", {} {}", self.driver, self.driver_info)?;
        }
        write!(f, ")")
    }
}

fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

/// All adapters wgpu can see on this machine.
pub fn list_adapters() -> Vec<AdapterSummary> {
    let inst = instance();
    pollster::block_on(inst.enumerate_adapters(wgpu::Backends::all()))
        .iter()
        .map(AdapterSummary::of)
        .collect()
}

fn describe(adapters: &[wgpu::Adapter]) -> String {
    if adapters.is_empty() {
        return "none".into();
    }
    adapters
        .iter()
        .enumerate()
        .map(|(i, a)| format!("[{i}] {}", AdapterSummary::of(a)))
        .collect::<Vec<_>>()
        .join("; ")
}

fn choose_adapter(inst: &wgpu::Instance, selector: &AdapterSelector) -> Result<wgpu::Adapter> {
    let selector = match selector {
        AdapterSelector::Auto => AdapterSelector::HighPerformance,
        s => s.clone(),
    };
    let all = pollster::block_on(inst.enumerate_adapters(wgpu::Backends::all()));
    let not_found = |all: &[wgpu::Adapter]| GpuError::AdapterNotFound {
        selector: selector.to_string(),
        available: describe(all),
    };
    match &selector {
        AdapterSelector::Auto | AdapterSelector::HighPerformance => {
            let opts = wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            };
            pollster::block_on(inst.request_adapter(&opts))
                .map_err(|e| GpuError::NoAdapter(format!(" ({e})")))
        }
        AdapterSelector::Backend(b) => {
            all.iter().find(|a| a.get_info().backend == *b).cloned().ok_or_else(|| not_found(&all))
        }
        AdapterSelector::Name(n) => {
            let n = n.to_lowercase();
            all.iter()
                .find(|a| a.get_info().name.to_lowercase().contains(&n))
                .cloned()
                .ok_or_else(|| not_found(&all))
        }
        AdapterSelector::Index(i) => all.get(*i).cloned().ok_or_else(|| not_found(&all)),
    }
}

/// Runtime checks wgpu adds to our shaders: bounds checks on (memory safety), loop bounding
/// off: every loop in wgsl/ is a counted loop over uniform bounds that the host validates, and
/// the added loop counters cost ~10% of NTT time on the H200.
fn runtime_checks() -> wgpu::ShaderRuntimeChecks {
    wgpu::ShaderRuntimeChecks { force_loop_bounding: false, ..wgpu::ShaderRuntimeChecks::checked() }
}

type PipelineKey = (Kernel, Vec<(&'static str, u32)>);

/// How long a wait for the GPU spins on `poll` before blocking: a blocked thread is woken tens
/// of microseconds after the GPU finishes (H200: a 32-byte readback 61 us blocking, 32 us
/// spinning), and a resident proof waits a hundred times on work that takes about as long.
/// Software adapters run on the host's cores, which a spinning thread would take from them.
/// `GpuOptions::spin_us` overrides it (0: always block).
fn spin_before_blocking(software: bool, asked: Option<u64>) -> std::time::Duration {
    let default = if software { 0 } else { DEFAULT_SPIN_US };
    std::time::Duration::from_micros(asked.unwrap_or(default))
}

/// Spin before blocking on hardware adapters (measured on the H200: n = 20 fold 4 proofs 21.0
/// -> 17.6 ms with 1,000 us).
const DEFAULT_SPIN_US: u64 = 1000;

/// The device pool's budget: `asked` MiB, else 32 GiB.
fn pool_bytes(asked: Option<u64>) -> u64 {
    asked.map_or(DEFAULT_POOL_BYTES, |mib: u64| mib.saturating_mul(1 << 20))
}

/// Large, because allocating is slow (~100 ms per GiB measured on the H200: an n = 28 proof took
/// 1,070 ms with 8 GiB pooled and 686 ms with all its buffers pooled) and because the pools give
/// their buffers back when an allocation runs out of memory (`storage`).
const DEFAULT_POOL_BYTES: u64 = 32 << 30;

/// Idle device buffers kept per size. A split proof holds many buffers of one size at once
/// (n = 28: ten 1 GiB table segments), and with four kept the rest were allocated afresh every
/// proof; the byte budget is what bounds the pool's memory.
const DEVICE_POOL_PER_SIZE: usize = 16;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// Uniform buffers kept for reuse by contents (a few hundred bytes each at most).
const UNIFORM_CACHE_ENTRIES: usize = 4096;

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
struct TransferCounters {
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
    submissions: AtomicU64,
    dispatches: AtomicU64,
    bind_groups: AtomicU64,
    uniforms: AtomicU64,
    small_writes: AtomicU64,
    submit_ns: AtomicU64,
    wait_ns: AtomicU64,
}

/// What the host spent on the GPU's behalf through a context since it was made (subtract two
/// readings): the fixed costs that dominate small resident steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCosts {
    /// Dispatches recorded through [`GpuContext::record_dispatch`] and
    /// [`GpuContext::record_dispatches`].
    pub dispatches: u64,
    /// Bind groups made through [`GpuContext::bind_buffers`].
    pub bind_groups: u64,
    /// Uniform buffers created (by [`GpuContext::uniform`] when no equal one is kept, and by
    /// [`GpuContext::uniform_once`]).
    pub uniforms: u64,
    /// Writes small enough for `queue.write_buffer` (each a staging allocation inside wgpu).
    pub small_writes: u64,
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
            submit: self.submit.saturating_sub(earlier.submit),
            wait: self.wait.saturating_sub(earlier.wait),
        }
    }
}

/// Where a staging buffer's map answers.
type MapAnswer = std::sync::mpsc::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>;

/// A readback submitted by [`GpuContext::submit_then_read`], to be finished with
/// [`GpuContext::finish_read`]. Dropped unfinished, its staging memory is freed, not pooled.
pub enum PendingRead {
    /// Read at once (empty, or larger than a transfer chunk).
    Ready(Vec<u32>),
    /// Copied into `staging`, whose map answers on `rx`.
    Mapping { staging: wgpu::Buffer, bytes: u64, words: usize, rx: MapAnswer },
}

/// Records work for chunk i into the encoder that copies it ([`ReadChunks::before_copy`]).
pub type RecordBeforeCopy<'a> = dyn Fn(&mut wgpu::CommandEncoder, usize) + 'a;

/// Hooks of a chunked readback ([`GpuContext::submit_and_read_chunked_into_raw`]).
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

/// One dispatch for [`GpuContext::record_dispatches`].
pub struct Dispatch {
    pub pipeline: wgpu::ComputePipeline,
    pub bind: wgpu::BindGroup,
    /// Workgroups (laid out by [`GpuContext::grid`]).
    pub groups: u32,
}

/// One adapter, one device, its queue and every pipeline built on it. Cheap to share
/// (`Arc<GpuContext>`) and safe to use from several threads.
pub struct GpuContext {
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    summary: AdapterSummary,
    mul_variant: MulVariant,
    pipelines: Mutex<HashMap<PipelineKey, Arc<wgpu::ComputePipeline>>>,
    /// Reused staging memory for uploads (MAP_WRITE) and readbacks (MAP_READ).
    upload_pool: StagingPool,
    readback_pool: StagingPool,
    /// Device buffers handed back with `recycle_storage`, by exact size, and their total bytes:
    /// a fresh large buffer costs an allocation and a first-use clear (ms at 2^25 words).
    device_pool: BufferPool,
    /// The first wgpu error no error scope caught (work submitted outside our calls), kept
    /// for [`GpuContext::take_uncaptured_error`].
    uncaptured: Arc<Mutex<Option<String>>>,
    /// Testing: readbacks still to fail on purpose (see [`GpuContext::fail_next_readbacks`]).
    failing_readbacks: AtomicU32,
    passing_readbacks: AtomicU32,
    counters: TransferCounters,
    /// Highest buffer memory the device had allocated (wgpu's counter, sampled whenever it can
    /// have grown), since the context was made or `reset_peak_buffer_bytes`.
    peak_buffer_bytes: AtomicU64,
    /// GPU timestamps around each submission while a profile runs (`begin_profile`).
    profile: Mutex<Option<SubmissionProfile>>,
    /// How long a wait spins before it blocks (see `spin_before_blocking`).
    spin: std::time::Duration,
    /// Uniform buffers by contents (see [`GpuContext::uniform`]).
    uniforms: Mutex<HashMap<Vec<u8>, wgpu::Buffer>>,
    /// Bytes per staging chunk of a chunked transfer ([`GpuContext::upload_chunked`]).
    transfer_chunk: AtomicU64,
    /// See [`early_submits`](Self::early_submits).
    early_submits: std::sync::atomic::AtomicBool,
    /// The tuning it was opened with.
    tuning: GpuTuning,
    /// Buffers handed back by a thread while work it recorded with them was not yet submitted:
    /// they join the pool after that thread's next submission (`recycle_after_submit`).
    deferred: Mutex<Vec<(std::thread::ThreadId, wgpu::Buffer)>>,
    /// The memory budget in bytes (`GpuOptions::memory_mib`), if any.
    memory_budget: Option<u64>,
    /// The first allocation that went over the budget, with the thread that made it, until a
    /// `scoped` call on that thread reports it.
    over_budget: Mutex<Option<(std::thread::ThreadId, GpuError)>>,
}

/// Default bytes per staging chunk of a chunked transfer: large enough that a chunk's
/// submission and map cost little beside its copy, small enough that the pooled staging stays
/// small and the first chunk's wait short.
pub const TRANSFER_CHUNK_BYTES: u64 = 64 << 20;
/// Fresh storage buffers from this size on are made after wgpu has freed what finished work
/// left dropped (`GpuContext::storage`).
const RETIRE_BEFORE_BYTES: usize = 8 << 20;
/// Staging chunks in flight: one being filled or drained on the host while the others cross
/// the bus.
const CHUNKS_IN_FLIGHT: usize = 3;

/// Timestamps around submissions, each tagged with the label current when it was submitted.
struct SubmissionProfile {
    sets: Vec<wgpu::QuerySet>,
    labels: Vec<Arc<str>>,
    label: Arc<str>,
}

/// Restores the profile label `profile_sublabel` replaced.
pub struct ProfileLabelGuard<'a> {
    ctx: &'a GpuContext,
    previous: Option<Arc<str>>,
}

impl Drop for ProfileLabelGuard<'_> {
    fn drop(&mut self) {
        if let (Some(previous), Ok(mut guard)) = (self.previous.take(), self.ctx.profile.lock()) {
            if let Some(p) = guard.as_mut() {
                p.label = previous;
            }
        }
    }
}

/// Submissions one query set times (two timestamps each).
const PROFILE_SET_SUBMISSIONS: u32 = wgpu::QUERY_SET_MAX_QUERIES / 2;

/// GPU time of the submissions made under one profile label.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileSpan {
    pub label: Arc<str>,
    /// Sum over the label's submissions of (end - start) on the GPU's clock.
    pub gpu: std::time::Duration,
    pub submissions: u32,
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

    pub fn new(options: GpuOptions) -> Result<Self> {
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
            Some(MulVariant::U64) if !summary.shader_int64 => {
                return Err(GpuError::Int64Unsupported(summary.name.clone()))
            }
            Some(v) => v,
            None if summary.shader_int64 => MulVariant::U64,
            None => MulVariant::Emulated,
        };
        let wanted = wgpu::Features::SHADER_INT64
            | wgpu::Features::SUBGROUP
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        // Ask for everything the adapter offers (wgpu's defaults cap storage bindings at 128 MiB),
        // or, in the strict profile, exactly WebGPU's defaults and no optional feature.
        let (required_features, required_limits) = if strict {
            let mut limits = wgpu::Limits::default();
            // A smaller binding limit is asked of the device too, so wgpu itself enforces it.
            if let LimitsProfile::WebGpu { max_binding_bytes: Some(b) } = profile {
                limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(b as _);
            }
            (wgpu::Features::empty(), limits)
        } else {
            (adapter.features() & wanted, adapter.limits())
        };
        let desc = wgpu::DeviceDescriptor {
            label: Some("whir-gpu"),
            required_features,
            required_limits,
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            GpuError::RequestDevice { adapter: summary.to_string(), reason: e.to_string() }
        })?;
        let summary = summary.with_device(&device, profile);
        let uncaptured: Arc<Mutex<Option<String>>> = Arc::default();
        let slot = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            tracing::error!("uncaptured wgpu error: {e}");
            if let Ok(mut first) = slot.lock() {
                first.get_or_insert_with(|| e.to_string());
            }
        }));
        tracing::info!(adapter = %summary, ?mul_variant, "GPU context ready");
        let spin = spin_before_blocking(summary.is_software(), options.spin_us);
        let memory_budget = options.memory_mib.map(|mib| mib.saturating_mul(1 << 20));
        // Idle pools never hold more than the budget allows: three pools (device, upload and
        // readback staging) of a quarter each. (Staging lives in host-visible memory and is not
        // otherwise counted against the budget.)
        let pool_budget = memory_budget.map_or(pool_bytes(options.pool_mib), |b| pool_bytes(options.pool_mib).min(b / 4));
        Ok(Self {
            adapter,
            device,
            queue,
            summary,
            mul_variant,
            pipelines: Mutex::new(HashMap::new()),
            upload_pool: StagingPool::new(wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC, pool_budget),
            readback_pool: StagingPool::new(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, pool_budget),
            device_pool: BufferPool::new(DEVICE_POOL_PER_SIZE, pool_budget),
            spin,
            uniforms: Mutex::new(HashMap::new()),
            uncaptured,
            failing_readbacks: AtomicU32::new(0),
            passing_readbacks: AtomicU32::new(0),
            transfer_chunk: AtomicU64::new(TRANSFER_CHUNK_BYTES),
            early_submits: std::sync::atomic::AtomicBool::new(options.tuning.early_submits),
            tuning: options.tuning.clone(),
            deferred: Mutex::new(Vec::new()),
            memory_budget,
            over_budget: Mutex::new(None),
            counters: TransferCounters::default(),
            peak_buffer_bytes: AtomicU64::new(0),
            profile: Mutex::new(None),
        })
    }

    /// Buffer memory the device has allocated now (wgpu's counter; 0 where the backend does
    /// not count). Includes the pools' retained buffers.
    pub fn buffer_bytes(&self) -> u64 {
        self.device.get_internal_counters().hal.buffer_memory.read().max(0) as u64
    }

    /// The highest [`buffer_bytes`](Self::buffer_bytes) seen since the context was made or the
    /// last reset. Sampled after every buffer this context creates and at every submission;
    /// wgpu frees a dropped buffer only once the GPU is done with it, so this is an upper bound
    /// on what the work needed at once. `None` where the backend keeps no count.
    pub fn peak_buffer_bytes(&self) -> Option<u64> {
        self.sample_buffer_bytes();
        Some(self.peak_buffer_bytes.load(Ordering::Relaxed)).filter(|&b| b > 0)
    }

    /// Starts a new high-water mark from what is allocated now.
    pub fn reset_peak_buffer_bytes(&self) {
        self.peak_buffer_bytes.store(self.buffer_bytes(), Ordering::Relaxed);
    }

    fn sample_buffer_bytes(&self) {
        self.peak_buffer_bytes.fetch_max(self.buffer_bytes(), Ordering::Relaxed);
    }

    /// Caps the idle device buffers kept for reuse at `bytes`, and the idle staging buffers of
    /// each direction likewise (dropping what a pool holds if it holds more). 0 makes the memory high-water mark the work's own live set; reuse across
    /// proofs is what the pool buys (see `GpuOptions::pool_mib`).
    pub fn set_pool_budget(&self, bytes: u64) {
        self.device_pool.set_max_bytes(bytes);
        self.upload_pool.set_max_bytes(bytes);
        self.readback_pool.set_max_bytes(bytes);
    }

    /// The most bytes of idle device buffers kept (see [`set_pool_budget`](Self::set_pool_budget);
    /// each staging direction keeps at most this much too, and at most 4 GiB).
    pub fn pool_budget(&self) -> u64 {
        self.device_pool.max_bytes()
    }

    /// Bytes of the recycled device and staging buffers the pools hold (allocated, idle).
    pub fn pooled_bytes(&self) -> u64 {
        self.device_pool.bytes() + self.upload_pool.bytes() + self.readback_pool.bytes()
    }

    /// Drops the recycled device and staging buffers the pools hold (before a workload of other
    /// sizes, or to measure one workload's own high-water mark).
    pub fn trim_pools(&self) {
        // Deferred buffers too (work still recorded with one keeps it alive in wgpu): a thread
        // that failed before submitting, or ended, would otherwise hold them for good.
        self.deferred.lock().expect("deferred buffers poisoned").clear();
        self.device_pool.clear();
        self.upload_pool.clear();
        self.readback_pool.clear();
        // Dropped buffers are freed once wgpu sees the GPU is done with them.
        let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
    }

    /// Starts timing every submission on the GPU (adapters with timestamp queries inside
    /// encoders; returns false elsewhere). Each submission is tagged with the label last given
    /// to [`profile_label`](Self::profile_label).
    pub fn begin_profile(&self) -> bool {
        if !self.can_profile() {
            return false;
        }
        *self.profile.lock().expect("profile poisoned") = Some(SubmissionProfile { sets: Vec::new(), labels: Vec::new(), label: Arc::from("") });
        true
    }

    /// Whether [`begin_profile`](Self::begin_profile) can time submissions here.
    pub fn can_profile(&self) -> bool {
        self.device.features().contains(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
    }

    /// The label the next submissions are profiled under.
    pub fn profile_label(&self, label: &str) {
        if let Some(p) = self.profile.lock().expect("profile poisoned").as_mut() {
            if &*p.label != label {
                p.label = Arc::from(label);
            }
        }
    }

    /// Profiles the submissions made while the guard lives under "<label>/<sub>" (e.g. a
    /// grinder's inside whatever step asked for it), then restores the label.
    pub fn profile_sublabel(&self, sub: &str) -> ProfileLabelGuard<'_> {
        let mut guard = self.profile.lock().expect("profile poisoned");
        let previous = guard.as_mut().map(|p| {
            let previous = p.label.clone();
            p.label = Arc::from(format!("{previous}/{sub}"));
            previous
        });
        ProfileLabelGuard { ctx: self, previous }
    }

    /// Ends the profile: GPU time per label, in order of first use (`None` if none ran).
    pub fn end_profile(&self) -> Result<Option<Vec<ProfileSpan>>> {
        let Some(profile) = self.profile.lock().expect("profile poisoned").take() else {
            return Ok(None);
        };
        let n = profile.labels.len();
        if n == 0 {
            return Ok(Some(Vec::new()));
        }
        let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profile timestamps"),
            size: 16 * n as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut encoder = self.encoder("resolve profile");
        for (i, set) in profile.sets.iter().enumerate() {
            let first = i * PROFILE_SET_SUBMISSIONS as usize;
            let count = (n - first).min(PROFILE_SET_SUBMISSIONS as usize) as u32;
            encoder.resolve_query_set(set, 0..2 * count, &resolve, 16 * first as u64);
        }
        let words = self.submit_and_read(encoder, &resolve, 4 * n)?;
        let period = self.queue.get_timestamp_period() as f64;
        let mut spans: Vec<ProfileSpan> = Vec::new();
        for (i, label) in profile.labels.iter().enumerate() {
            let tick = |k: usize| words[k] as u64 | ((words[k + 1] as u64) << 32);
            let ns = tick(4 * i + 2).saturating_sub(tick(4 * i)) as f64 * period;
            let gpu = std::time::Duration::from_nanos(ns as u64);
            match spans.iter_mut().find(|s| s.label == *label) {
                Some(s) => {
                    s.gpu += gpu;
                    s.submissions += 1;
                }
                None => spans.push(ProfileSpan { label: label.clone(), gpu, submissions: 1 }),
            }
        }
        Ok(Some(spans))
    }

    /// Every submission goes through here: counted, its memory sampled, and, while a profile
    /// runs, bracketed by timestamps in command buffers of their own.
    fn queue_submit(&self, commands: wgpu::CommandBuffer) -> wgpu::SubmissionIndex {
        self.count_submission();
        self.sample_buffer_bytes();
        let mut guard = self.profile.lock().expect("profile poisoned");
        let started = std::time::Instant::now();
        let Some(profile) = guard.as_mut() else {
            drop(guard);
            let index = self.queue.submit([commands]);
            Self::add_time(&self.counters.submit_ns, started);
            self.release_deferred();
            return index;
        };
        let i = profile.labels.len() as u32;
        if i.is_multiple_of(PROFILE_SET_SUBMISSIONS) {
            profile.sets.push(self.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("submission profile"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * PROFILE_SET_SUBMISSIONS,
            }));
        }
        let set = profile.sets.last().expect("a query set");
        let slot = 2 * (i % PROFILE_SET_SUBMISSIONS);
        let stamp = |index: u32| {
            let mut e = self.encoder("profile timestamp");
            e.write_timestamp(set, index);
            e.finish()
        };
        let (start, end) = (stamp(slot), stamp(slot + 1));
        profile.labels.push(profile.label.clone());
        drop(guard);
        let index = self.queue.submit([start, commands, end]);
        Self::add_time(&self.counters.submit_ns, started);
        self.release_deferred();
        index
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }
    pub fn summary(&self) -> &AdapterSummary {
        &self.summary
    }
    pub fn mul_variant(&self) -> MulVariant {
        self.mul_variant
    }
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

    /// Bytes up, bytes down and submissions through this context so far.
    pub fn transfer_counts(&self) -> TransferCounts {
        TransferCounts {
            bytes_up: self.counters.bytes_up.load(Ordering::Relaxed),
            bytes_down: self.counters.bytes_down.load(Ordering::Relaxed),
            submissions: self.counters.submissions.load(Ordering::Relaxed),
        }
    }

    /// Host-side costs of GPU work so far (see [`HostCosts`]).
    pub fn host_costs(&self) -> HostCosts {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        HostCosts {
            dispatches: load(&c.dispatches),
            bind_groups: load(&c.bind_groups),
            uniforms: load(&c.uniforms),
            small_writes: load(&c.small_writes),
            submit: std::time::Duration::from_nanos(load(&c.submit_ns)),
            wait: std::time::Duration::from_nanos(load(&c.wait_ns)),
        }
    }

    fn add_time(counter: &AtomicU64, since: std::time::Instant) {
        counter.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// Blocks until the GPU has finished `index` (or everything), counting the time as waiting.
    fn wait_for(&self, index: Option<wgpu::SubmissionIndex>) -> Result<()> {
        let started = std::time::Instant::now();
        // Spinning can only tell when the whole queue is done, which is what every wait here
        // (on the last submission) needs.
        while started.elapsed() < self.spin {
            match self.device.poll(wgpu::PollType::Poll) {
                Ok(status) if status.is_queue_empty() => {
                    Self::add_time(&self.counters.wait_ns, started);
                    return Ok(());
                }
                Ok(_) => std::hint::spin_loop(),
                Err(e) => return Err(GpuError::Device(e.to_string())),
            }
        }
        let polled = self.device.poll(wgpu::PollType::Wait { submission_index: index, timeout: None });
        Self::add_time(&self.counters.wait_ns, started);
        polled.map(|_| ()).map_err(|e| GpuError::Device(e.to_string()))
    }

    /// Waits for everything submitted, then for the `map_async` callback that sends on `rx`.
    fn wait_for_map<T>(&self, rx: &std::sync::mpsc::Receiver<T>) -> Result<T> {
        self.wait_for(None)?;
        if let Ok(mapped) = rx.try_recv() {
            return Ok(mapped);
        }
        // The queue emptied before the poll that runs the callback (a spinning wait): block.
        let started = std::time::Instant::now();
        let polled = self.device.poll(wgpu::PollType::wait_indefinitely());
        Self::add_time(&self.counters.wait_ns, started);
        polled.map_err(|e| GpuError::Device(e.to_string()))?;
        rx.recv().map_err(|e| GpuError::Map(e.to_string()))
    }

    /// [`wait_for_map`] for a buffer that is most likely idle (pooled staging, its last copy
    /// long done): its map resolves at the next poll, so this polls without blocking for a
    /// moment before waiting for the whole queue. Kernels queued since (a column block's
    /// leaf absorb, ~30 ms at 2^17 Keccak rows) then run while the host fills the upload
    /// instead of holding it back.
    ///
    /// [`wait_for_map`]: Self::wait_for_map
    fn wait_for_idle_map<T>(&self, rx: &std::sync::mpsc::Receiver<T>) -> Result<T> {
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_millis(2) {
            self.device.poll(wgpu::PollType::Poll).map_err(|e| GpuError::Device(e.to_string()))?;
            if let Ok(mapped) = rx.try_recv() {
                return Ok(mapped);
            }
            std::thread::yield_now();
        }
        self.wait_for_map(rx)
    }

    fn count_submission(&self) {
        self.counters.submissions.fetch_add(1, Ordering::Relaxed);
    }

    /// The first wgpu error raised outside any of this crate's calls (e.g. by work the caller
    /// recorded and submitted itself), if one happened since the last call. Errors inside our
    /// calls are returned by those calls.
    pub fn take_uncaptured_error(&self) -> Option<String> {
        self.uncaptured.lock().ok().and_then(|mut s| s.take())
    }

    /// Testing fault injection: the next `count` readbacks fail as a lost device would, so
    /// callers' fallbacks can be exercised on any adapter.
    #[doc(hidden)]
    pub fn fail_next_readbacks(&self, count: u32) {
        self.fail_readbacks(0, count);
    }

    /// Testing fault injection: `skip` readbacks succeed, then `count` fail.
    #[doc(hidden)]
    pub fn fail_readbacks(&self, skip: u32, count: u32) {
        self.passing_readbacks.store(skip, Ordering::SeqCst);
        self.failing_readbacks.store(count, Ordering::SeqCst);
    }

    /// Testing fault injection: the injected failures not struck yet.
    #[doc(hidden)]
    pub fn injected_failures_left(&self) -> u32 {
        self.failing_readbacks.load(Ordering::SeqCst)
    }

    fn injected_failure(&self) -> Result<()> {
        if self.failing_readbacks.load(Ordering::SeqCst) == 0 {
            return Ok(());
        }
        if self.passing_readbacks.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return Ok(());
        }
        let fail = self.failing_readbacks.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        if fail {
            return Err(GpuError::Device("injected readback failure (testing)".into()));
        }
        Ok(())
    }

    /// Runs `f` inside validation and out-of-memory error scopes and turns what they catch
    /// into errors.
    pub fn scoped<T>(&self, context: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        let here = std::thread::current().id();
        if let Some((_, e)) = self.over_budget.lock().ok().and_then(|mut g| g.take_if(|(t, _)| *t == here)) {
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

    /// The compute pipeline for `kernel` with these composition constants, built once.
    pub fn pipeline(
        &self,
        kernel: Kernel,
        consts: &[(&'static str, u32)],
    ) -> Result<Arc<wgpu::ComputePipeline>> {
        let key = (kernel, consts.to_vec());
        if let Some(p) = self.pipelines.lock().expect("pipeline cache poisoned").get(&key) {
            return Ok(p.clone());
        }
        let started = std::time::Instant::now();
        let source = shaders::compose(kernel.source_name(), self.mul_variant, consts)?;
        let pipeline = self.scoped(kernel.source_name(), || {
            let desc = wgpu::ShaderModuleDescriptor {
                label: Some(kernel.source_name()),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            };
            // SAFETY: our loops terminate (see `runtime_checks`); bounds checks, which keep
            // memory safe, stay on.
            let module = unsafe { self.device.create_shader_module_trusted(desc, runtime_checks()) };
            Ok(self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(kernel.entry_point()),
                layout: None,
                module: &module,
                entry_point: Some(kernel.entry_point()),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &[],
                    // Our kernels write workgroup memory before reading it; wgpu's zeroing is
                    // done by one thread and costs time.
                    zero_initialize_workgroup_memory: false,
                },
                cache: None,
            }))
        })?;
        tracing::debug!(kernel = kernel.entry_point(), ?consts, ms = started.elapsed().as_secs_f64() * 1e3, "pipeline built");
        let pipeline = Arc::new(pipeline);
        self.pipelines.lock().expect("pipeline cache poisoned").insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// A storage buffer holding `words`.
    pub fn upload(&self, label: &str, words: &[u32]) -> wgpu::Buffer {
        let buffer = self.storage(label, words.len());
        self.write(&buffer, words);
        buffer
    }

    /// [`upload`](Self::upload) into a buffer from the pool: hand it back with
    /// `recycle_storage` once the work that reads it is submitted (a small fresh buffer costs a
    /// driver allocation and free, ~10 us each on the H200).
    pub fn upload_pooled(&self, label: &str, words: &[u32]) -> wgpu::Buffer {
        let buffer = self.pooled_for_upload(label, words.len());
        self.write(&buffer, words);
        buffer
    }

    /// Copies `words` into the start of `dst` (a COPY_DST buffer); it lands before the next
    /// submitted command buffer runs. Large writes go through pooled staging memory filled on
    /// all cores (see `transfer`).
    pub fn write(&self, dst: &wgpu::Buffer, words: &[u32]) {
        let bytes: &[u8] = bytemuck::cast_slice(words);
        self.counters.bytes_up.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if bytes.len() < STAGED_MIN_BYTES {
            if !bytes.is_empty() {
                self.counters.small_writes.fetch_add(1, Ordering::Relaxed);
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
    pub fn upload_rows(
        &self,
        label: &str,
        rows: usize,
        row_words: usize,
        row: impl Fn(usize, &mut dyn FnMut(&[u32])) + Sync,
    ) -> Result<wgpu::Buffer> {
        let buffer = self.pooled_for_upload(label, rows * row_words);
        let bytes = rows * row_words * 4;
        if bytes == 0 {
            return Ok(buffer);
        }
        self.counters.bytes_up.fetch_add(bytes as u64, Ordering::Relaxed);
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
    pub fn transfer_chunk_bytes(&self) -> u64 {
        self.transfer_chunk.load(Ordering::Relaxed)
    }

    /// Testing and tuning: bytes per staging chunk of chunked transfers (a multiple of 4, at
    /// least 4).
    #[doc(hidden)]
    pub fn set_transfer_chunk_bytes(&self, bytes: u64) {
        self.transfer_chunk.store(bytes.max(4) / 4 * 4, Ordering::Relaxed);
    }

    /// Waits until the submission `index` is done and the map that sends on `rx` has resolved.
    fn wait_for_chunk<T>(&self, index: wgpu::SubmissionIndex, rx: &std::sync::mpsc::Receiver<T>) -> Result<T> {
        let started = std::time::Instant::now();
        loop {
            match rx.try_recv() {
                Ok(mapped) => {
                    Self::add_time(&self.counters.wait_ns, started);
                    return Ok(mapped);
                }
                // The map's callback was dropped without running: it never will.
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return Err(GpuError::Map("a staging buffer's map was dropped without an answer".into())),
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
            }
            // Spin while it is short, as other waits do, then block on that submission.
            let poll = if started.elapsed() < self.spin { wgpu::PollType::Poll } else { wgpu::PollType::Wait { submission_index: Some(index.clone()), timeout: None } };
            self.device.poll(poll).map_err(|e| GpuError::Device(e.to_string()))?;
        }
    }

    /// Whether a readback of `bytes` goes in chunks (more than one chunk's worth).
    fn chunked(&self, bytes: usize) -> bool {
        bytes as u64 > self.transfer_chunk.load(Ordering::Relaxed)
    }

    /// Copies `total` bytes that `fill` writes into `dst` from byte 0 through pooled staging
    /// chunks (`fill(range, view)` fills bytes `range` of the data into `view`; chunks are whole
    /// `unit`s, e.g. rows; false means its input was the wrong size). Each chunk is filled on
    /// all cores while the ones before it cross the bus, so a large upload costs about the
    /// slower of the host copy and the bus rather than their sum, and the staging stays a few
    /// chunks (no fresh gigabyte of pinned memory, which the driver takes ~0.5 s to make).
    fn upload_chunked_with(&self, dst: &wgpu::Buffer, total: usize, unit: usize, fill: impl Fn(std::ops::Range<usize>, wgpu::WriteOnly<'_, [u8]>) -> bool) -> Result<()> {
        if total as u64 > dst.size() || unit == 0 || !total.is_multiple_of(unit) {
            return Err(GpuError::InvalidInput(format!("uploading {total} bytes in units of {unit} into a buffer of {} bytes", dst.size())));
        }
        let started = std::time::Instant::now();
        let chunk = (self.transfer_chunk.load(Ordering::Relaxed) as usize / unit).max(1) * unit;
        let ranges: Vec<std::ops::Range<usize>> = (0..total).step_by(chunk.max(1)).map(|start| start..(start + chunk).min(total)).collect();
        let mut ring: Vec<(wgpu::Buffer, Option<wgpu::SubmissionIndex>)> = Vec::new();
        // Where the time goes (debug log): filling staging, waiting for a chunk to come free.
        let (mut fill_ns, mut wait_ns) = (0u128, 0u128);
        let result = (|| {
            for (i, range) in ranges.iter().enumerate() {
                let slot = i % CHUNKS_IN_FLIGHT;
                let (tx, rx) = std::sync::mpsc::channel();
                if slot == ring.len() {
                    let (buffer, pooled) = self.upload_pool.take(&self.device, chunk.min(total) as u64);
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
                    self.wait_for_chunk(index, &rx)?.map_err(|e| GpuError::Map(e.to_string()))?;
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
                self.upload_pool.give(buffer);
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
    pub fn submit_and_read_chunked_into(
        &self,
        encoder: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        dst: &mut [std::mem::MaybeUninit<u8>],
        below: Option<u32>,
    ) -> std::result::Result<(), (GpuError, bool)> {
        let mut written = false;
        self.read_chunks(encoder, src, transfer::SendPtr(dst.as_mut_ptr().cast::<u8>()), dst.len(), below, ReadChunks::default(), &mut written).map_err(|e| (e, written))
    }

    /// [`submit_and_read_chunked_into`](Self::submit_and_read_chunked_into) into `len` bytes at
    /// `dst`, with hooks ([`ReadChunks`]): work recorded ahead of each chunk's copy, a call
    /// before each chunk is written. No reference to `dst` is made but one per chunk, after its
    /// `before_write` call: other threads may write a chunk's bytes until that call returns.
    ///
    /// # Safety
    /// `dst .. dst + len` must be memory the caller owns, valid for writes for the whole call,
    /// that nothing reads or writes during the call except as said above.
    pub unsafe fn submit_and_read_chunked_into_raw(
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
    fn read_chunks(
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
        let last_end = (rows.max(1) - 1).checked_mul(stride).and_then(|x| x.checked_add(offset)).and_then(|x| x.checked_add(row_words));
        if rows > 0 && (offset.checked_add(row_words).is_none_or(|e| e > stride) || last_end.is_none_or(|e| e > dst.len())) {
            return Err(GpuError::InvalidInput(format!("{rows} rows of {row_words} words at offset {offset} do not fit a {}-word destination of stride {stride}", dst.len())));
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
    fn read_chunks_with(
        &self,
        encoder: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        len: usize,
        unit: usize,
        how: ReadChunks<'_>,
        written: &mut bool,
        sink: &(dyn Fn(std::ops::Range<usize>, &[u8]) + Sync),
    ) -> Result<()> {
        if !len.is_multiple_of(4) || !len.is_multiple_of(unit) || len as u64 > src.size() || how.chunk_bytes.is_some_and(|per| per == 0 || !per.is_multiple_of(unit)) {
            return Err(GpuError::InvalidInput(format!("reading {len} bytes in units of {unit} from a buffer of {} bytes", src.size())));
        }
        self.injected_failure()?;
        self.scoped("submit for a chunked readback", || {
            self.queue_submit(encoder.finish());
            Ok(())
        })?;
        self.counters.bytes_down.fetch_add(len as u64, Ordering::Relaxed);
        let started = std::time::Instant::now();
        let mut first_wait = None;
        let mut sink_ns = 0u128;
        let per = how.chunk_bytes.unwrap_or_else(|| (self.transfer_chunk.load(Ordering::Relaxed) as usize / unit).max(1) * unit);
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
                ring.push(self.readback_pool.take(&self.device, chunk).0);
                let (index, rx) = issue(i, &ring[i]);
                pending.push_back((i, index, rx));
            }
            while let Some((i, index, rx)) = pending.pop_front() {
                let slot = i % CHUNKS_IN_FLIGHT;
                self.wait_for_chunk(index, &rx)?.map_err(|e| GpuError::Map(e.to_string()))?;
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
                self.readback_pool.give(buffer);
            }
        }
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        tracing::debug!(bytes = len, chunks = ranges.len(), until_first_chunk_ms = first_wait.map_or(0.0, ms), copy_out_ms = sink_ns as f64 / 1e6, ms = ms(started.elapsed()), "chunked readback");
        result
    }

    /// The memory budget in bytes, if one is set.
    pub fn memory_budget(&self) -> Option<u64> {
        self.memory_budget
    }

    /// Fails with [`GpuError::OverBudget`] when `bytes` of GPU memory for `what` would not fit
    /// the budget: for callers that know their need before starting.
    pub fn check_memory(&self, what: &str, bytes: u64) -> Result<()> {
        match self.memory_budget {
            Some(budget) if bytes > budget => Err(GpuError::OverBudget { what: what.into(), needed_mib: mib(bytes), budget_mib: mib(budget) }),
            _ => Ok(()),
        }
    }

    /// Before allocating `bytes`: within the budget, after dropping idle pooled buffers if need
    /// be; otherwise the overrun is noted and the surrounding `scoped` call fails with it.
    fn reserve(&self, what: &str, bytes: u64) {
        if let Err(e) = self.try_reserve(what, bytes) {
            if let Ok(mut first) = self.over_budget.lock() {
                first.get_or_insert((std::thread::current().id(), e));
            }
        }
    }

    /// Whether `bytes` more fit the memory budget (after dropping idle pooled buffers if need
    /// be); an error naming the budget if not. For allocations made outside `scoped` calls.
    pub fn try_reserve(&self, what: &str, bytes: u64) -> Result<()> {
        let Some(budget) = self.memory_budget else { return Ok(()) };
        if self.buffer_bytes() + bytes <= budget {
            return Ok(());
        }
        self.trim_pools();
        let now = self.buffer_bytes();
        if now + bytes > budget {
            return Err(GpuError::OverBudget { what: format!("{what} ({:.1} MiB with {:.1} MiB already allocated)", mib(bytes), mib(now)), needed_mib: mib(now + bytes), budget_mib: mib(budget) });
        }
        Ok(())
    }

    /// An uninitialised storage buffer of `words` u32 words (at least one).
    pub fn storage(&self, label: &str, words: usize) -> wgpu::Buffer {
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
        let pooled = self.device_pool.bytes() + self.upload_pool.bytes() + self.readback_pool.bytes();
        let buffer = if pooled > 0 {
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let buffer = create();
            match pollster::block_on(scope.pop()) {
                None => buffer,
                Some(e) => {
                    tracing::debug!(label, pooled_mib = mib(pooled), "out of GPU memory with buffers pooled ({e}); freeing the pools and trying again");
                    drop(buffer);
                    self.trim_pools();
                    create()
                }
            }
        } else {
            create()
        };
        self.sample_buffer_bytes();
        buffer
    }

    /// A storage buffer of exactly `words` words (at least one) from the pool of recycled ones,
    /// or a fresh one. Its contents are whatever the last user left.
    pub fn pooled_storage(&self, label: &str, words: usize) -> wgpu::Buffer {
        let bytes = (words.max(1) * 4) as u64;
        // First what this thread handed back before submitting: work it records from here on
        // runs after the work that used it, so it may reuse it at once.
        if let Some(buffer) = self.take_deferred(bytes) {
            return buffer;
        }
        if let Some(buffer) = self.device_pool.take(bytes) {
            return buffer;
        }
        self.storage(label, words)
    }

    /// A pooled storage buffer for the host to write into (`write`, an upload): never one that
    /// recorded, unsubmitted work still uses, since a write lands before the next submission.
    pub fn pooled_for_upload(&self, label: &str, words: usize) -> wgpu::Buffer {
        let bytes = (words.max(1) * 4) as u64;
        self.device_pool.take(bytes).unwrap_or_else(|| self.storage(label, words))
    }

    /// A buffer of `bytes` this thread handed back with `recycle_after_submit`, if any.
    fn take_deferred(&self, bytes: u64) -> Option<wgpu::Buffer> {
        let me = std::thread::current().id();
        let mut deferred = self.deferred.lock().expect("deferred buffers poisoned");
        let at = deferred.iter().position(|(thread, b)| *thread == me && b.size() == bytes)?;
        Some(deferred.swap_remove(at).1)
    }

    /// Hands a storage buffer back for `pooled_storage` (kept while the pool holds under its
    /// budget, 32 GiB by default, and at most `DEVICE_POOL_PER_SIZE` of its size). Only for a
    /// buffer whose uses are all submitted; see [`recycle_after_submit`](Self::recycle_after_submit).
    pub fn recycle_storage(&self, buffer: wgpu::Buffer) {
        self.device_pool.give(buffer);
    }

    /// Hands back a buffer that work recorded on this thread but not yet submitted still uses:
    /// this thread's `pooled_storage` may take it again at once for work it records after
    /// (kernels recorded later run later; host writes would not, so `pooled_for_upload` never
    /// takes it), and it joins the shared pool after this thread's next submission, which must
    /// be the one carrying that work. Given straight to the pool, another thread sharing the
    /// context could take it and submit writes to it before that work is submitted.
    pub fn recycle_after_submit(&self, buffer: wgpu::Buffer) {
        self.deferred.lock().expect("deferred buffers poisoned").push((std::thread::current().id(), buffer));
    }

    /// Gives the pool what this thread handed back before its submission just made.
    fn release_deferred(&self) {
        let me = std::thread::current().id();
        let mine: Vec<wgpu::Buffer> = {
            let mut deferred = self.deferred.lock().expect("deferred buffers poisoned");
            if deferred.is_empty() {
                return;
            }
            let (mine, others): (Vec<_>, Vec<_>) = deferred.drain(..).partition(|(thread, _)| *thread == me);
            *deferred = others;
            mine.into_iter().map(|(_, b)| b).collect()
        };
        for buffer in mine {
            self.device_pool.give(buffer);
        }
    }

    /// A uniform buffer holding `value`. Uniforms are never written after creation, so equal
    /// contents share one buffer: kernels' size parameters repeat every round and every proof,
    /// and a fresh buffer costs ~5 us of host time.
    pub fn uniform<T: bytemuck::Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        let bytes = bytemuck::bytes_of(value);
        let mut cache = self.uniforms.lock().expect("uniform cache poisoned");
        if let Some(buffer) = cache.get(bytes) {
            return buffer.clone();
        }
        let buffer = self.create_uniform(label, bytes);
        if cache.len() >= UNIFORM_CACHE_ENTRIES {
            // Contents holding challenges never repeat; start over rather than grow.
            cache.clear();
        }
        cache.insert(bytes.to_vec(), buffer.clone());
        buffer
    }

    /// A uniform buffer for contents that will not repeat (a challenge): made fresh, not cached.
    pub fn uniform_once<T: bytemuck::Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        self.create_uniform(label, bytemuck::bytes_of(value))
    }

    fn create_uniform(&self, label: &str, bytes: &[u8]) -> wgpu::Buffer {
        self.counters.uniforms.fetch_add(1, Ordering::Relaxed);
        self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: bytes, usage: wgpu::BufferUsages::UNIFORM })
    }

    /// Submits `encoder` after copying `words` words of `src` into a staging buffer, waits, and
    /// returns them. Validation errors in anything recorded into `encoder` (wgpu reports them
    /// when the encoder is finished) are returned, not only logged.
    pub fn submit_and_read(
        &self,
        encoder: wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        words: usize,
    ) -> Result<Vec<u32>> {
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
            PendingRead::Mapping { staging, bytes, words, rx } => self.complete_read(staging, bytes, words, &rx)?,
            PendingRead::Ready(words) => words,
        };
        if bytes >= STAGED_MIN_BYTES as u64 {
            tracing::debug!(bytes, ms = started.elapsed().as_secs_f64() * 1e3, "submit and read back");
        }
        Ok(out)
    }

    /// Bytes of a readback of `words` words from `src`; an error past its end.
    fn read_bytes(src: &wgpu::Buffer, words: usize) -> Result<u64> {
        words
            .checked_mul(4)
            .map(|b| b as u64)
            .filter(|&b| b <= src.size())
            .ok_or_else(|| GpuError::InvalidInput(format!("reading {words} words from a buffer of {} bytes", src.size())))
    }

    /// Copies `bytes` (> 0, one staging chunk at most) of `src` into pooled staging, submits,
    /// and requests the map.
    fn start_read(&self, mut encoder: wgpu::CommandEncoder, src: &wgpu::Buffer, bytes: u64, words: usize) -> Result<PendingRead> {
        let (staging, _) = self.readback_pool.take(&self.device, bytes);
        encoder.copy_buffer_to_buffer(src, 0, &staging, 0, bytes);
        // Recording errors surface at `finish`: catch them here, on this thread's scopes.
        self.scoped("submit and read back", || {
            self.queue_submit(encoder.finish());
            Ok(())
        })?;
        self.counters.bytes_down.fetch_add(bytes, Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.slice(..bytes).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        Ok(PendingRead::Mapping { staging, bytes, words, rx })
    }

    /// [`submit_and_read`](Self::submit_and_read) whose wait comes later
    /// ([`finish_read`](Self::finish_read)): the copy is submitted and its map requested now, so
    /// work submitted after it (and waited for first) covers its round trip. Reads larger than a
    /// transfer chunk are read at once.
    pub fn submit_then_read(&self, encoder: wgpu::CommandEncoder, src: &wgpu::Buffer, words: usize) -> Result<PendingRead> {
        let bytes = Self::read_bytes(src, words)?;
        if bytes == 0 || self.chunked(bytes as usize) {
            return self.submit_and_read(encoder, src, words).map(PendingRead::Ready);
        }
        self.start_read(encoder, src, bytes, words)
    }

    /// The words of a [`submit_then_read`](Self::submit_then_read), waiting for them if needed.
    pub fn finish_read(&self, read: PendingRead) -> Result<Vec<u32>> {
        match read {
            PendingRead::Ready(words) => Ok(words),
            // A failure injected for tests strikes at the wait, after the work in between.
            PendingRead::Mapping { staging, bytes, words, rx } => self.injected_failure().and_then(|()| self.complete_read(staging, bytes, words, &rx)),
        }
    }

    /// Waits for a `start_read`'s map and copies the words out.
    fn complete_read(&self, staging: wgpu::Buffer, bytes: u64, words: usize, rx: &MapAnswer) -> Result<Vec<u32>> {
        self.wait_for_map(rx)?.map_err(|e| GpuError::Map(e.to_string()))?;
        // Copied out on all cores: one core page-faulting a fresh Vec runs at ~1 GB/s.
        let mut out = vec![0u32; words];
        {
            let view = staging.slice(..bytes).get_mapped_range().map_err(|e| GpuError::Map(e.to_string()))?;
            transfer::par_read(bytemuck::cast_slice_mut(&mut out), &view);
        }
        staging.unmap();
        self.readback_pool.give(staging);
        Ok(out)
    }

    /// Submits without waiting (the queue runs submissions in order). Call inside
    /// [`scoped`](Self::scoped) to have recording errors returned.
    pub fn submit(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.queue_submit(encoder.finish());
        Ok(())
    }

    /// Whether a long step submits its first part as soon as it is recorded, so the GPU runs
    /// it while the rest is recorded (a codeword's encoding before its tree, the tree before its
    /// round head, each sumcheck round of a chain). On by default; `WHIR_EARLY_SUBMITS=0` (read
    /// when the context is made) records each step in one submission, to measure it.
    /// The tuning this context was opened with (`GpuOptions::tuning`).
    pub fn tuning(&self) -> &GpuTuning {
        &self.tuning
    }

    pub fn early_submits(&self) -> bool {
        self.early_submits.load(Ordering::Relaxed)
    }

    /// Tests and measurements: turns early submits on or off for this context.
    #[doc(hidden)]
    pub fn set_early_submits(&self, on: bool) {
        self.early_submits.store(on, Ordering::Relaxed);
    }

    /// Submits and blocks until the GPU is done; recording errors are returned as in
    /// [`submit_and_read`](Self::submit_and_read).
    pub fn submit_and_wait(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        let index = self.scoped("submit", || Ok(self.queue_submit(encoder.finish())))?;
        self.wait_for(Some(index))
    }

    /// A bind group for `pipeline` with `buffers` at bindings 0, 1, 2, ... of group 0.
    pub fn bind_buffers(&self, pipeline: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        let whole: Vec<(&wgpu::Buffer, u64, Option<u64>)> = buffers.iter().map(|&b| (b, 0, None)).collect();
        self.bind_ranges(pipeline, &whole)
    }

    /// [`bind_buffers`](Self::bind_buffers) with a byte range of each buffer: `(buffer, offset,
    /// size)`, size `None` for the rest of the buffer. Offsets must be multiples of the
    /// adapter's storage offset alignment (256 bytes on every WebGPU adapter); a kernel then
    /// sees the range as its whole array, which is how work larger than one binding is split.
    pub fn bind_ranges(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = ranges
            .iter()
            .enumerate()
            .map(|(i, &(b, offset, size))| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: b, offset, size: size.and_then(wgpu::BufferSize::new) }),
            })
            .collect();
        self.counters.bind_groups.fetch_add(1, Ordering::Relaxed);
        self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &pipeline.get_bind_group_layout(0), entries: &entries })
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
        self.counters.dispatches.fetch_add(1, Ordering::Relaxed);
        let (x, y) = self.grid(groups);
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind, &[]);
        pass.dispatch_workgroups(x, y, 1);
    }

    /// Records `dispatches` in order inside one compute pass. WebGPU makes each dispatch its own
    /// usage scope, so a dispatch sees what the ones before it wrote, as with a pass each; one
    /// pass saves the host a pass's setup and teardown per dispatch (most of a small dispatch's
    /// recording cost; `examples/latency_probe`).
    pub fn record_dispatches(&self, encoder: &mut wgpu::CommandEncoder, label: &str, dispatches: &[Dispatch]) {
        if dispatches.is_empty() {
            return;
        }
        self.counters.dispatches.fetch_add(dispatches.len() as u64, Ordering::Relaxed);
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
        for d in dispatches {
            let (x, y) = self.grid(d.groups);
            pass.set_pipeline(&d.pipeline);
            pass.set_bind_group(0, &d.bind, &[]);
            pass.dispatch_workgroups(x, y, 1);
        }
    }

    pub fn encoder(&self, label: &str) -> wgpu::CommandEncoder {
        self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }

    /// Workgroup grid for `groups` workgroups: x up to the per-dimension limit, the rest in y.
    pub fn grid(&self, groups: u32) -> (u32, u32) {
        let max = self.summary.max_compute_workgroups_per_dimension.max(1);
        if groups <= max {
            (groups.max(1), 1)
        } else {
            (max, groups.div_ceil(max))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapter_selectors_parse() {
        assert_eq!(AdapterSelector::parse(""), AdapterSelector::Auto);
        assert_eq!(AdapterSelector::parse("Vulkan"), AdapterSelector::Backend(wgpu::Backend::Vulkan));
        assert_eq!(AdapterSelector::parse("metal"), AdapterSelector::Backend(wgpu::Backend::Metal));
        assert_eq!(AdapterSelector::parse("dx12"), AdapterSelector::Backend(wgpu::Backend::Dx12));
        assert_eq!(AdapterSelector::parse("index:2"), AdapterSelector::Index(2));
        assert_eq!(AdapterSelector::parse("high-performance"), AdapterSelector::HighPerformance);
        assert_eq!(AdapterSelector::parse(" H200 "), AdapterSelector::Name("H200".into()));
    }
}
