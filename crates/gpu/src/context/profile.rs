//! Profiling: GPU timestamps around every submission, tagged by label (with the queue's
//! occupancy), or around every dispatch, tagged by kernel.

use std::sync::{Arc, Mutex};

use super::*;
use crate::error::Result;

/// Timestamps around submissions, each tagged with the label current when it was submitted.
pub(super) struct SubmissionProfile {
    pub(super) sets: Vec<wgpu::QuerySet>,
    pub(super) labels: Vec<Arc<str>>,
    pub(super) label: Arc<str>,
}

/// Restores the profile label `profile_sublabel` replaced.
pub struct ProfileLabelGuard<'a> {
    ctx: &'a GpuContext,
    previous: Option<Arc<str>>,
}

impl Drop for ProfileLabelGuard<'_> {
    fn drop(&mut self) {
        if let (Some(previous), Ok(mut guard)) = (self.previous.take(), self.ctx.profile_state.current.lock()) {
            if let Some(p) = guard.as_mut() {
                p.label = previous;
            }
        }
    }
}

/// Submissions one query set times (two timestamps each).
pub(super) const PROFILE_SET_SUBMISSIONS: u32 = wgpu::QUERY_SET_MAX_QUERIES / 2;

/// GPU time of the submissions made under one profile label.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileSpan {
    /// The profile label the submissions were made under.
    pub label: Arc<str>,
    /// Sum over the label's submissions of (end - start) on the GPU's clock.
    pub gpu: std::time::Duration,
    /// Submissions made under the label.
    pub submissions: u32,
}
/// How busy the GPU's queue was over a profile: the window from the first profiled
/// submission's start to the last one's end, the time inside at least one submission, and the
/// sum of the submissions' own times (above `busy` where the device ran submissions at once).
/// `window - busy` is the queue standing idle between submissions: waiting for the host, or
/// each submission's own cost on the device outside its timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueOccupancy {
    /// From the first profiled submission's start to the last one's end.
    pub window: std::time::Duration,
    /// Time inside at least one submission.
    pub busy: std::time::Duration,
    /// Sum of the submissions' own times.
    pub summed: std::time::Duration,
    /// Submissions profiled.
    pub submissions: u32,
}

impl QueueOccupancy {
    /// `busy` as a share of `window` (0 for an empty profile).
    pub fn busy_share(&self) -> f64 {
        if self.window.is_zero() {
            0.0
        } else {
            self.busy.as_secs_f64() / self.window.as_secs_f64()
        }
    }

    /// From each submission's (start, end) in nanoseconds on the GPU's clock.
    fn from_intervals(mut intervals: Vec<(f64, f64)>) -> Self {
        intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let ns = |t: f64| std::time::Duration::from_nanos(t.max(0.0) as u64);
        let (Some(first), Some(last_end)) = (intervals.first().map(|i| i.0), intervals.iter().map(|i| i.1).reduce(f64::max)) else {
            return Self::default();
        };
        let (mut busy, mut summed) = (0.0, 0.0);
        let mut open: Option<(f64, f64)> = None;
        for &(start, end) in &intervals {
            summed += (end - start).max(0.0);
            open = match open {
                Some((s, e)) if start <= e => Some((s, e.max(end))),
                Some((s, e)) => {
                    busy += e - s;
                    Some((start, end))
                }
                None => Some((start, end)),
            };
        }
        if let Some((s, e)) = open {
            busy += e - s;
        }
        Self { window: ns(last_end - first), busy: ns(busy), summed: ns(summed), submissions: intervals.len() as u32 }
    }
}

/// The submission profile while one runs ([`GpuProfiler::begin`]), and the dispatch profile
/// ([`GpuProfiler::begin_dispatches`]).
#[derive(Default)]
pub(super) struct Profiler {
    /// GPU timestamps around each submission while a profile runs.
    pub(super) current: Mutex<Option<SubmissionProfile>>,
    /// Whether dispatches are recorded a pass each with timestamps (read on every recording,
    /// so the usual path takes no lock).
    pub(super) dispatches_on: std::sync::atomic::AtomicBool,
    pub(super) dispatches: Mutex<Option<DispatchProfile>>,
}

/// Timestamps around every dispatch recorded while a dispatch profile runs, each tagged with
/// its kernel.
pub(super) struct DispatchProfile {
    sets: Vec<wgpu::QuerySet>,
    kernels: Vec<&'static str>,
}

/// GPU time of the dispatches of one kernel over a dispatch profile.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSpan {
    /// The kernel's entry point (or "unnamed" for a pipeline built outside the context's cache).
    pub kernel: &'static str,
    /// Sum over its dispatches of (end - start) on the GPU's clock.
    pub gpu: std::time::Duration,
    /// Dispatches of the kernel profiled.
    pub dispatches: u32,
}

impl GpuContext {
    /// While a dispatch profile runs: a query set and the first of two slots for one dispatch's
    /// timestamps, tagged with the kernel `pipeline` runs. None otherwise.
    pub(super) fn dispatch_timestamps(&self, pipeline: &wgpu::ComputePipeline) -> Option<(wgpu::QuerySet, u32)> {
        if !self.profile_state.dispatches_on.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        let kernel = self.kernel_name(pipeline);
        let mut guard = self.profile_state.dispatches.lock().ok()?;
        let profile = guard.as_mut()?;
        let (set, slot) = timestamp_pair(&self.device, &mut profile.sets, profile.kernels.len(), "dispatch profile");
        let set = set.clone();
        profile.kernels.push(kernel);
        Some((set, slot))
    }
}

/// The query set and first slot for the `i`th pair of timestamps of a profile keeping its pairs
/// in `sets`, a new set added when the last is full.
pub(super) fn timestamp_pair<'s>(device: &wgpu::Device, sets: &'s mut Vec<wgpu::QuerySet>, i: usize, label: &str) -> (&'s wgpu::QuerySet, u32) {
    let i = i as u32;
    if i.is_multiple_of(PROFILE_SET_SUBMISSIONS) {
        sets.push(device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some(label),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * PROFILE_SET_SUBMISSIONS,
        }));
    }
    // Pair 0 of each set adds it, so the last set holds pair i.
    (sets.last().expect("pair 0 added the first set"), 2 * (i % PROFILE_SET_SUBMISSIONS))
}

impl GpuContext {
    /// The context's profiler: GPU time per labelled submission.
    pub fn profiler(&self) -> GpuProfiler<'_> {
        GpuProfiler(self)
    }
}

/// GPU timestamps around a context's submissions, by label, or around its dispatches, by
/// kernel ([`GpuContext::profiler`]).
pub struct GpuProfiler<'a>(&'a GpuContext);

impl<'a> GpuProfiler<'a> {
    /// Starts timing every submission on the GPU (adapters with timestamp queries inside
    /// encoders; returns false elsewhere). Each submission is tagged with the label last given
    /// to [`label`](Self::label).
    pub fn begin(&self) -> bool {
        if !self.available() {
            return false;
        }
        *self.0.profile_state.current.lock().expect("profile poisoned") =
            Some(SubmissionProfile { sets: Vec::new(), labels: Vec::new(), label: Arc::from("") });
        true
    }

    /// Whether [`begin`](Self::begin) can time submissions here.
    pub fn available(&self) -> bool {
        self.0.device.features().contains(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
    }

    /// The label the next submissions are profiled under.
    pub fn label(&self, label: &str) {
        if let Some(p) = self.0.profile_state.current.lock().expect("profile poisoned").as_mut() {
            if &*p.label != label {
                p.label = Arc::from(label);
            }
        }
    }

    /// Profiles the submissions made while the guard lives under `<label>/<sub>` (e.g. a
    /// grinder's inside whatever step asked for it), then restores the label.
    pub fn sublabel(&self, sub: &str) -> ProfileLabelGuard<'a> {
        let mut guard = self.0.profile_state.current.lock().expect("profile poisoned");
        let previous = guard.as_mut().map(|p| {
            let previous = p.label.clone();
            p.label = Arc::from(format!("{previous}/{sub}"));
            previous
        });
        ProfileLabelGuard { ctx: self.0, previous }
    }

    /// Starts timing every dispatch recorded from now on, by kernel (adapters with timestamp
    /// queries; returns false elsewhere), but those recorded with timestamps of their own (a
    /// `KernelTimer`'s). Each dispatch then gets a compute pass of its own
    /// with timestamps at its start and end, so the dispatches' sum is their GPU time without
    /// what one pass for many saves; read it with [`end_dispatches`](Self::end_dispatches).
    pub fn begin_dispatches(&self) -> bool {
        if !self.0.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return false;
        }
        *self.0.profile_state.dispatches.lock().expect("profile poisoned") = Some(DispatchProfile { sets: Vec::new(), kernels: Vec::new() });
        self.0.profile_state.dispatches_on.store(true, std::sync::atomic::Ordering::Relaxed);
        true
    }

    /// Ends the dispatch profile once the work recorded under it has run (submit it first):
    /// GPU time per kernel, most first (`None` if none ran).
    pub fn end_dispatches(&self) -> Result<Option<Vec<KernelSpan>>> {
        self.0.profile_state.dispatches_on.store(false, std::sync::atomic::Ordering::Relaxed);
        let Some(profile) = self.0.profile_state.dispatches.lock().expect("profile poisoned").take() else {
            return Ok(None);
        };
        let ticks = self.resolve(&profile.sets, profile.kernels.len())?;
        let period = self.0.queue.get_timestamp_period() as f64;
        let mut spans: Vec<KernelSpan> = Vec::new();
        for (i, &kernel) in profile.kernels.iter().enumerate() {
            let gpu = std::time::Duration::from_nanos((ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period) as u64);
            match spans.iter_mut().find(|s| s.kernel == kernel) {
                Some(s) => {
                    s.gpu += gpu;
                    s.dispatches += 1;
                }
                None => spans.push(KernelSpan { kernel, gpu, dispatches: 1 }),
            }
        }
        spans.sort_by_key(|s| std::cmp::Reverse(s.gpu));
        Ok(Some(spans))
    }

    /// The 2 `n` timestamps written into `sets` (pairs in order), in ticks.
    fn resolve(&self, sets: &[wgpu::QuerySet], n: usize) -> Result<Vec<u64>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let resolve = self.0.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profile timestamps"),
            size: 16 * n as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut encoder = self.0.encoder("resolve profile");
        for (i, set) in sets.iter().enumerate() {
            let first = i * PROFILE_SET_SUBMISSIONS as usize;
            let count = (n - first).min(PROFILE_SET_SUBMISSIONS as usize) as u32;
            encoder.resolve_query_set(set, 0..2 * count, &resolve, 16 * first as u64);
        }
        let words = self.0.submit_and_read(encoder, &resolve, 4 * n)?;
        Ok(words.chunks_exact(2).map(|w| w[0] as u64 | ((w[1] as u64) << 32)).collect())
    }

    /// Ends the profile: GPU time per label, in order of first use (`None` if none ran).
    pub fn end(&self) -> Result<Option<Vec<ProfileSpan>>> {
        Ok(self.end_with_occupancy()?.map(|(spans, _)| spans))
    }

    /// [`end`](Self::end), with how busy the queue was over the profile.
    pub fn end_with_occupancy(&self) -> Result<Option<(Vec<ProfileSpan>, QueueOccupancy)>> {
        let Some(profile) = self.0.profile_state.current.lock().expect("profile poisoned").take() else {
            return Ok(None);
        };
        let n = profile.labels.len();
        if n == 0 {
            return Ok(Some((Vec::new(), QueueOccupancy::default())));
        }
        let ticks = self.resolve(&profile.sets, n)?;
        let period = self.0.queue.get_timestamp_period() as f64;
        let mut spans: Vec<ProfileSpan> = Vec::new();
        let mut intervals = Vec::with_capacity(n);
        // Starts from the first one, so the f64s keep nanoseconds.
        let first = (0..n).map(|i| ticks[2 * i]).min().unwrap_or(0);
        for (i, label) in profile.labels.iter().enumerate() {
            let ns = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period;
            let start = ticks[2 * i].saturating_sub(first) as f64 * period;
            intervals.push((start, start + ns));
            let gpu = std::time::Duration::from_nanos(ns as u64);
            match spans.iter_mut().find(|s| s.label == *label) {
                Some(s) => {
                    s.gpu += gpu;
                    s.submissions += 1;
                }
                None => spans.push(ProfileSpan { label: label.clone(), gpu, submissions: 1 }),
            }
        }
        Ok(Some((spans, QueueOccupancy::from_intervals(intervals))))
    }
}

#[cfg(test)]
mod tests {
    use super::QueueOccupancy;
    use std::time::Duration;

    #[test]
    fn occupancy_merges_overlapping_submissions_and_counts_gaps_as_idle() {
        // 0-10 and 5-12 overlap (busy 0-12), then a gap to 20, then 20-25 and 25-30 touching.
        let q = QueueOccupancy::from_intervals(vec![(20.0, 25.0), (5.0, 12.0), (0.0, 10.0), (25.0, 30.0)]);
        assert_eq!(q.window, Duration::from_nanos(30));
        assert_eq!(q.busy, Duration::from_nanos(22));
        assert_eq!(q.summed, Duration::from_nanos(27));
        assert_eq!(q.submissions, 4);
        assert!((q.busy_share() - 22.0 / 30.0).abs() < 1e-12);
        // A submission inside another adds nothing to busy.
        let nested = QueueOccupancy::from_intervals(vec![(0.0, 100.0), (10.0, 20.0)]);
        assert_eq!((nested.busy, nested.summed), (Duration::from_nanos(100), Duration::from_nanos(110)));
        assert_eq!(QueueOccupancy::from_intervals(Vec::new()), QueueOccupancy::default());
        assert_eq!(QueueOccupancy::default().busy_share(), 0.0);
    }
}
