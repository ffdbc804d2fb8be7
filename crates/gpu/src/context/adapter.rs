//! Adapter and limits: what an adapter is and can do, and which one a selector picks.

use std::fmt;

use crate::error::{GpuError, Result};
use crate::options::{AdapterSelector, LimitsProfile};

/// What an adapter is and what it can do.
#[derive(Clone, Debug)]
pub struct AdapterSummary {
    /// The adapter's name as the driver reports it.
    pub name: String,
    /// The graphics API wgpu reaches the adapter through.
    pub backend: wgpu::Backend,
    /// Discrete, integrated, virtual, CPU or other.
    pub device_type: wgpu::DeviceType,
    /// The driver's name (may be empty).
    pub driver: String,
    /// The driver's version or other details (may be empty).
    pub driver_info: String,
    /// Whether shaders may use 64-bit integers (`SHADER_INT64`).
    pub shader_int64: bool,
    /// Whether shaders may use subgroup operations (`SUBGROUP`).
    pub subgroup: bool,
    /// Whether timestamp queries are supported (`TIMESTAMP_QUERY`).
    pub timestamp_query: bool,
    /// Timestamps inside command encoders: what GPU profiling needs (Apple GPUs lack them).
    pub timestamp_inside_encoders: bool,
    /// Smallest subgroup size the adapter may run with.
    pub subgroup_min_size: u32,
    /// Largest subgroup size the adapter may run with.
    pub subgroup_max_size: u32,
    /// Largest storage buffer binding, in bytes.
    pub max_storage_buffer_binding_size: u64,
    /// Largest buffer, in bytes.
    pub max_buffer_size: u64,
    /// Workgroup memory per workgroup, in bytes.
    pub max_compute_workgroup_storage_size: u32,
    /// Invocations per workgroup, at most.
    pub max_compute_invocations_per_workgroup: u32,
    /// Workgroups per dispatch dimension, at most.
    pub max_compute_workgroups_per_dimension: u32,
    /// The limits profile the context asked for (the fields above are what it got).
    pub profile: LimitsProfile,
}

impl AdapterSummary {
    pub(super) fn of(adapter: &wgpu::Adapter) -> Self {
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
            timestamp_inside_encoders: features.contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS),
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
    pub(super) fn with_device(mut self, device: &wgpu::Device, profile: LimitsProfile) -> Self {
        let features = device.features();
        let limits = device.limits();
        self.shader_int64 = features.contains(wgpu::Features::SHADER_INT64);
        self.subgroup = features.contains(wgpu::Features::SUBGROUP);
        self.timestamp_query = features.contains(wgpu::Features::TIMESTAMP_QUERY);
        self.timestamp_inside_encoders = features.contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
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
        if self.timestamp_inside_encoders {
            v.push("TIMESTAMP_QUERY_INSIDE_ENCODERS");
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

pub(super) fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

/// All adapters wgpu can see on this machine.
pub fn list_adapters() -> Vec<AdapterSummary> {
    let inst = instance();
    pollster::block_on(inst.enumerate_adapters(wgpu::Backends::all())).iter().map(AdapterSummary::of).collect()
}

/// The adapters a pool over "every GPU of the host" uses, by index into `adapters`
/// ([`list_adapters`]): the hardware adapters of one backend, the first of Vulkan, Metal and
/// DX12 that has any, so a GPU that two backends both list (Vulkan and GL, Vulkan and DX12) is
/// counted once.
pub fn pool_adapters(adapters: &[AdapterSummary]) -> Vec<usize> {
    let hardware = |a: &AdapterSummary| !a.is_software() && a.device_type != wgpu::DeviceType::Cpu;
    for backend in [wgpu::Backend::Vulkan, wgpu::Backend::Metal, wgpu::Backend::Dx12] {
        let found: Vec<usize> = adapters.iter().enumerate().filter(|(_, a)| a.backend == backend && hardware(a)).map(|(i, _)| i).collect();
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

pub(super) fn describe(adapters: &[wgpu::Adapter]) -> String {
    if adapters.is_empty() {
        return "none".into();
    }
    adapters.iter().enumerate().map(|(i, a)| format!("[{i}] {}", AdapterSummary::of(a))).collect::<Vec<_>>().join("; ")
}

pub(super) fn choose_adapter(inst: &wgpu::Instance, selector: &AdapterSelector) -> Result<wgpu::Adapter> {
    let selector = match selector {
        AdapterSelector::Auto => AdapterSelector::HighPerformance,
        s => s.clone(),
    };
    let all = pollster::block_on(inst.enumerate_adapters(wgpu::Backends::all()));
    let not_found = |all: &[wgpu::Adapter]| GpuError::AdapterNotFound { selector: selector.to_string(), available: describe(all) };
    match &selector {
        AdapterSelector::Auto | AdapterSelector::HighPerformance => {
            let opts = wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() };
            pollster::block_on(inst.request_adapter(&opts)).map_err(|e| GpuError::NoAdapter(format!(" ({e})")))
        }
        AdapterSelector::Backend(b) => all.iter().find(|a| a.get_info().backend == *b).cloned().ok_or_else(|| not_found(&all)),
        AdapterSelector::Name(n) => {
            let n = n.to_lowercase();
            all.iter().find(|a| a.get_info().name.to_lowercase().contains(&n)).cloned().ok_or_else(|| not_found(&all))
        }
        AdapterSelector::Index(i) => all.get(*i).cloned().ok_or_else(|| not_found(&all)),
    }
}
