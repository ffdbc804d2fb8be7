//! GPU timestamps around each kernel a batch records, for profiles ([`Batch::timed`]).

use super::*;
use crate::error::{GpuError, Result};

/// Most kernels one [`KernelTimer`] times: wgpu's query sets hold 4096 timestamps.
pub const MAX_TIMED_KERNELS: u32 = wgpu::QUERY_SET_MAX_QUERIES / 2;

/// GPU timestamps around each kernel a batch records (adapters with TIMESTAMP_QUERY), for
/// profiles: give it to [`Batch::timed`]; the batch's [`Readback::kernel_times`] holds the times.
pub struct KernelTimer {
    queries: wgpu::QuerySet,
    labels: Vec<&'static str>,
    capacity: u32,
}

impl KernelTimer {
    /// Room for `kernels` kernels (at most `MAX_TIMED_KERNELS`); `None` when the adapter
    /// has no timestamp queries.
    pub fn new(ctx: &GpuContext, kernels: u32) -> Result<Option<Self>> {
        if kernels == 0 || kernels > MAX_TIMED_KERNELS {
            return Err(GpuError::InvalidInput(format!(
                "a kernel timer holds 1 to {MAX_TIMED_KERNELS} kernels (two timestamps each, {} queries per set); {kernels} asked",
                wgpu::QUERY_SET_MAX_QUERIES
            )));
        }
        if !ctx.device().features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Ok(None);
        }
        let queries =
            ctx.device().create_query_set(&wgpu::QuerySetDescriptor { label: Some("kernel timer"), ty: wgpu::QueryType::Timestamp, count: 2 * kernels });
        Ok(Some(Self { queries, labels: Vec::new(), capacity: kernels }))
    }

    pub(crate) fn next(&mut self, label: &'static str) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let i = self.labels.len() as u32;
        if i >= self.capacity {
            return None;
        }
        self.labels.push(label);
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        })
    }

    /// Kernels timed so far.
    pub(crate) fn kernels(&self) -> usize {
        self.labels.len()
    }

    /// Records the resolution of the timestamps written so far into `encoder`, into a buffer
    /// of 4 words a kernel (read it back after the encoder runs).
    pub(crate) fn resolve(&self, ctx: &GpuContext, encoder: &mut wgpu::CommandEncoder) -> wgpu::Buffer {
        let n = self.labels.len() as u32;
        let resolve = ctx.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps"),
            size: 16 * u64::from(n.max(1)),
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        if n > 0 {
            encoder.resolve_query_set(&self.queries, 0..2 * n, &resolve, 0);
        }
        resolve
    }

    /// Each kernel's label and GPU time in nanoseconds, in recording order, from the words
    /// [`resolve`](Self::resolve) wrote.
    pub(crate) fn times(self, ctx: &GpuContext, words: &[u32]) -> Vec<(&'static str, f64)> {
        let period = f64::from(ctx.queue().get_timestamp_period());
        let ticks: Vec<u64> = words.chunks_exact(2).map(|c| u64::from(c[0]) | (u64::from(c[1]) << 32)).collect();
        self.labels.iter().enumerate().map(|(i, l)| (*l, ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period)).collect()
    }
}
