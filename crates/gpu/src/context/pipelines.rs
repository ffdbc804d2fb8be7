//! Pipelines and dispatch: the pipeline cache, uniforms by contents, bind groups, and recording
//! dispatches into an encoder.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::*;
use crate::error::Result;
use crate::field::{ExtensionId, FieldId};
use crate::shaders::{self, Kernel};

/// Runtime checks wgpu adds to our shaders: bounds checks on (memory safety), loop bounding
/// off: every loop in wgsl/ is a counted loop over uniform bounds that the host validates, and
/// the added loop counters cost NTT time (docs/benchmarks-history.md).
pub(super) fn runtime_checks() -> wgpu::ShaderRuntimeChecks {
    wgpu::ShaderRuntimeChecks { force_loop_bounding: false, ..wgpu::ShaderRuntimeChecks::checked() }
}

pub(super) type PipelineKey = (FieldId, ExtensionId, Kernel, Vec<(&'static str, u32)>);

/// Uniform buffers kept for reuse by contents (a few hundred bytes each at most).
pub(super) const UNIFORM_CACHE_ENTRIES: usize = 4096;

/// One dispatch for [`GpuPipelines::record_dispatches`](crate::plumbing::GpuPipelines::record_dispatches).
pub struct Dispatch {
    /// The compute pipeline to run.
    pub pipeline: wgpu::ComputePipeline,
    /// Its bind group (group 0).
    pub bind: wgpu::BindGroup,
    /// Workgroups (laid out by [`GpuPipelines::grid`](crate::plumbing::GpuPipelines::grid)).
    pub groups: u32,
}
/// The pipelines built on a context and its uniform buffers by contents.
#[derive(Default)]
pub(super) struct Pipelines {
    pub(super) cache: Mutex<HashMap<PipelineKey, Arc<wgpu::ComputePipeline>>>,
    /// Each cached pipeline's kernel (its entry point), for the dispatch profile.
    pub(super) kernels: Mutex<HashMap<wgpu::ComputePipeline, &'static str>>,
    /// Uniform buffers by contents (see [`GpuPipelines::uniform`](crate::plumbing::GpuPipelines::uniform)).
    pub(super) uniforms: Mutex<HashMap<Vec<u8>, wgpu::Buffer>>,
}

impl GpuContext {
    /// The compute pipeline for `kernel` over BabyBear with these composition constants, built
    /// once.
    pub(crate) fn pipeline(&self, kernel: Kernel, consts: &[(&'static str, u32)]) -> Result<Arc<wgpu::ComputePipeline>> {
        self.pipeline_for(FieldId::BabyBear, kernel, consts)
    }

    /// The compute pipeline for `kernel` over `field` with these composition constants, built
    /// once (a context serves every field; each has pipelines of its own).
    pub(crate) fn pipeline_for(&self, field: FieldId, kernel: Kernel, consts: &[(&'static str, u32)]) -> Result<Arc<wgpu::ComputePipeline>> {
        self.pipeline_over(field, ExtensionId::Degree4, kernel, consts)
    }

    /// [`pipeline_for`](Self::pipeline_for) a field-generic kernel composed over the extension
    /// `ext` (one of [`Kernel::extensions`]).
    pub(crate) fn pipeline_over(&self, field: FieldId, ext: ExtensionId, kernel: Kernel, consts: &[(&'static str, u32)]) -> Result<Arc<wgpu::ComputePipeline>> {
        if !kernel.extensions().contains(&ext) {
            return Err(crate::error::GpuError::Shader {
                kernel: kernel.entry_point().to_string(),
                reason: format!("not composed over the {} extension", ext.name()),
            });
        }
        let key = (field, ext, kernel, consts.to_vec());
        if let Some(p) = self.pipelines.cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(p.clone());
        }
        let started = std::time::Instant::now();
        let lanes = shaders::KeccakLanes::of(self.mul_variant, self.tuning().keccak_u64_lanes);
        let source = shaders::compose_kernel_with(field, ext, kernel, self.mul_variant, lanes, consts)?;
        let pipeline = self.scoped(kernel.source_name(), || {
            let desc = wgpu::ShaderModuleDescriptor { label: Some(kernel.source_name()), source: wgpu::ShaderSource::Wgsl(source.into()) };
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
        tracing::debug!(
            kernel = kernel.entry_point(),
            field = field.name(),
            ext = ext.name(),
            ?consts,
            ms = started.elapsed().as_secs_f64() * 1e3,
            "pipeline built"
        );
        // Two threads may both have missed the cache and built this pipeline: the first one
        // stored is the one every caller gets. A bind group made against an automatic layout
        // fits only its own pipeline, so a caller keeping bind groups (the grinder) must never
        // hold the other.
        let mut cache = self.pipelines.cache.lock().unwrap_or_else(|p| p.into_inner());
        let stored = cache.entry(key).or_insert_with(|| {
            self.pipelines.kernels.lock().unwrap_or_else(|p| p.into_inner()).insert(pipeline.clone(), kernel.entry_point());
            Arc::new(pipeline)
        });
        Ok(stored.clone())
    }

    /// The kernel `pipeline` runs, where the context built it ("unnamed" otherwise).
    pub(super) fn kernel_name(&self, pipeline: &wgpu::ComputePipeline) -> &'static str {
        self.pipelines.kernels.lock().unwrap_or_else(|p| p.into_inner()).get(pipeline).copied().unwrap_or("unnamed")
    }

    /// A uniform buffer holding `value`. Uniforms are never written after creation, so equal
    /// contents share one buffer: kernels' size parameters repeat every round and every proof,
    /// and a fresh buffer costs host time (docs/benchmarks-history.md).
    pub(crate) fn uniform<T: bytemuck::Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        let bytes = bytemuck::bytes_of(value);
        let mut cache = self.pipelines.uniforms.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(buffer) = cache.get(bytes) {
            return buffer.clone();
        }
        let (buffer, written) = self.create_uniform(label, bytes);
        if !written {
            // The device is lost: not kept for later work.
            return buffer;
        }
        if cache.len() >= UNIFORM_CACHE_ENTRIES {
            // Contents holding challenges never repeat; start over rather than grow.
            cache.clear();
        }
        cache.insert(bytes.to_vec(), buffer.clone());
        buffer
    }

    /// A uniform buffer for contents that will not repeat (a challenge): made fresh, not cached.
    pub(crate) fn uniform_once<T: bytemuck::Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        self.create_uniform(label, bytemuck::bytes_of(value)).0
    }

    /// A uniform buffer holding `bytes`, and whether they were written (not on a lost device).
    pub(super) fn create_uniform(&self, label: &str, bytes: &[u8]) -> (wgpu::Buffer, bool) {
        self.traffic.counters.uniforms.fetch_add(1, Ordering::Relaxed);
        // As `create_buffer_init` does, without its panic when the device is lost (the mapped
        // range is then refused): the buffer comes back unwritten, and the work using it fails
        // with the device's error.
        let size = (bytes.len() as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT).max(wgpu::COPY_BUFFER_ALIGNMENT);
        let buffer =
            self.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage: wgpu::BufferUsages::UNIFORM, mapped_at_creation: true });
        let written = match buffer.get_mapped_range_mut(..) {
            Ok(mut view) => {
                view.slice(..bytes.len()).copy_from_slice(bytes);
                true
            }
            Err(_) => false,
        };
        buffer.unmap();
        (buffer, written)
    }

    /// A bind group for `pipeline` with `buffers` at bindings 0, 1, 2, ... of group 0.
    pub(crate) fn bind_buffers(&self, pipeline: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        let whole: Vec<(&wgpu::Buffer, u64, Option<u64>)> = buffers.iter().map(|&b| (b, 0, None)).collect();
        self.bind_ranges(pipeline, &whole)
    }

    /// [`bind_buffers`](Self::bind_buffers) with a byte range of each buffer: `(buffer, offset,
    /// size)`, size `None` for the rest of the buffer. Offsets must be multiples of the
    /// adapter's storage offset alignment (256 bytes on every WebGPU adapter); a kernel then
    /// sees the range as its whole array, which is how work larger than one binding is split.
    pub(crate) fn bind_ranges(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        let numbered: Vec<(u32, &wgpu::Buffer, u64, Option<u64>)> =
            ranges.iter().enumerate().map(|(i, &(b, offset, size))| (i as u32, b, offset, size)).collect();
        self.bind_at(pipeline, &numbered)
    }

    /// [`bind_ranges`](Self::bind_ranges) at the given binding numbers: `(binding, buffer,
    /// offset, size)`, for kernels whose bindings are not 0, 1, 2, ... (a kernel's layout holds
    /// only the bindings its entry point uses).
    pub(crate) fn bind_at(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(u32, &wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = ranges
            .iter()
            .map(|&(binding, b, offset, size)| wgpu::BindGroupEntry {
                binding,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: b, offset, size: size.and_then(wgpu::BufferSize::new) }),
            })
            .collect();
        self.traffic.counters.bind_groups.fetch_add(1, Ordering::Relaxed);
        let _span = tracing::info_span!("bind group").entered();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &pipeline.get_bind_group_layout(0), entries: &entries })
    }

    /// Records one compute pass running `pipeline` over `groups` workgroups (laid out by `grid`),
    /// with optional GPU timestamps around it.
    pub(crate) fn record_dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        label: &str,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        groups: u32,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        self.traffic.counters.dispatches.fetch_add(1, Ordering::Relaxed);
        let profiled = if timestamp_writes.is_none() { self.dispatch_timestamps(pipeline) } else { None };
        let timestamp_writes = timestamp_writes.or_else(|| profiled.as_ref().map(|(set, at)| pass_timestamps(set, *at)));
        self.one_pass(encoder, label, pipeline, bind, groups, timestamp_writes);
    }

    /// A compute pass of one dispatch.
    fn one_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        label: &str,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        groups: u32,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
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
    pub(crate) fn record_dispatches(&self, encoder: &mut wgpu::CommandEncoder, label: &str, dispatches: &[Dispatch]) {
        if dispatches.is_empty() {
            return;
        }
        self.traffic.counters.dispatches.fetch_add(dispatches.len() as u64, Ordering::Relaxed);
        let _span = tracing::info_span!("record dispatches", count = dispatches.len()).entered();
        if self.profile_state.dispatches_on.load(Ordering::Relaxed) {
            // A pass each, timed (see `GpuProfiler::begin_dispatches`).
            for d in dispatches {
                let profiled = self.dispatch_timestamps(&d.pipeline);
                self.one_pass(encoder, label, &d.pipeline, &d.bind, d.groups, profiled.as_ref().map(|(set, at)| pass_timestamps(set, *at)));
            }
            return;
        }
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
        for d in dispatches {
            let (x, y) = self.grid(d.groups);
            pass.set_pipeline(&d.pipeline);
            pass.set_bind_group(0, &d.bind, &[]);
            pass.dispatch_workgroups(x, y, 1);
        }
    }

    /// A fresh command encoder labelled `label`.
    pub(crate) fn encoder(&self, label: &str) -> wgpu::CommandEncoder {
        self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }

    /// Workgroup grid for `groups` workgroups: x up to the per-dimension limit, the rest in y.
    pub(crate) fn grid(&self, groups: u32) -> (u32, u32) {
        let max = self.summary.max_compute_workgroups_per_dimension.max(1);
        if groups <= max {
            (groups.max(1), 1)
        } else {
            (max, groups.div_ceil(max))
        }
    }
}

/// Timestamps at a pass's start and end, in slots `at` and `at + 1` of `set`.
fn pass_timestamps(set: &wgpu::QuerySet, at: u32) -> wgpu::ComputePassTimestampWrites<'_> {
    wgpu::ComputePassTimestampWrites { query_set: set, beginning_of_pass_write_index: Some(at), end_of_pass_write_index: Some(at + 1) }
}
