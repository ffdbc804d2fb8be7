//! GPU timestamps around each recorded kernel, for profiles.

use super::*;

/// Most kernels one [`KernelTimer`] times: wgpu's query sets hold 4096 timestamps.
pub const MAX_TIMED_KERNELS: u32 = wgpu::QUERY_SET_MAX_QUERIES / 2;

/// GPU timestamps around each recorded kernel (adapters with TIMESTAMP_QUERY), for profiles.
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

    pub(super) fn next(&mut self, label: &'static str) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
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

    /// Records the query resolution into `encoder`, submits it and returns each kernel's
    /// label and GPU time in nanoseconds, in recording order.
    pub fn finish(self, ctx: &GpuContext, mut encoder: wgpu::CommandEncoder) -> Result<Vec<(&'static str, f64)>> {
        let n = self.labels.len() as u32;
        if n == 0 {
            ctx.submit_and_wait(encoder)?;
            return Ok(Vec::new());
        }
        let resolve = ctx.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps"),
            size: 16 * n as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        encoder.resolve_query_set(&self.queries, 0..2 * n, &resolve, 0);
        let words = ctx.submit_and_read(encoder, &resolve, 4 * n as usize)?;
        let period = ctx.queue().get_timestamp_period() as f64;
        let ticks: Vec<u64> = words.chunks(2).map(|c| c[0] as u64 | ((c[1] as u64) << 32)).collect();
        Ok(self.labels.iter().enumerate().map(|(i, l)| (*l, ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period)).collect())
    }
}
