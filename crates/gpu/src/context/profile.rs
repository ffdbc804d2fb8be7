//! Profiling: GPU timestamps around every submission, tagged by label.

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
    pub label: Arc<str>,
    /// Sum over the label's submissions of (end - start) on the GPU's clock.
    pub gpu: std::time::Duration,
    pub submissions: u32,
}
/// The submission profile while one runs ([`GpuProfiler::begin`]).
#[derive(Default)]
pub(super) struct Profiler {
    /// GPU timestamps around each submission while a profile runs.
    pub(super) current: Mutex<Option<SubmissionProfile>>,
}

impl GpuContext {
    /// The context's profiler: GPU time per labelled submission.
    pub fn profiler(&self) -> GpuProfiler<'_> {
        GpuProfiler(self)
    }


}

/// GPU timestamps around a context's submissions, by label ([`GpuContext::profiler`]).
pub struct GpuProfiler<'a>(&'a GpuContext);

impl<'a> GpuProfiler<'a> {
    /// Starts timing every submission on the GPU (adapters with timestamp queries inside
    /// encoders; returns false elsewhere). Each submission is tagged with the label last given
    /// to [`label`](Self::label).
    pub fn begin(&self) -> bool {
        if !self.available() {
            return false;
        }
        *self.0.profile_state.current.lock().expect("profile poisoned") = Some(SubmissionProfile { sets: Vec::new(), labels: Vec::new(), label: Arc::from("") });
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

    /// Ends the profile: GPU time per label, in order of first use (`None` if none ran).
    pub fn end(&self) -> Result<Option<Vec<ProfileSpan>>> {
        let Some(profile) = self.0.profile_state.current.lock().expect("profile poisoned").take() else {
            return Ok(None);
        };
        let n = profile.labels.len();
        if n == 0 {
            return Ok(Some(Vec::new()));
        }
        let resolve = self.0.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profile timestamps"),
            size: 16 * n as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut encoder = self.0.encoder("resolve profile");
        for (i, set) in profile.sets.iter().enumerate() {
            let first = i * PROFILE_SET_SUBMISSIONS as usize;
            let count = (n - first).min(PROFILE_SET_SUBMISSIONS as usize) as u32;
            encoder.resolve_query_set(set, 0..2 * count, &resolve, 16 * first as u64);
        }
        let words = self.0.submit_and_read(encoder, &resolve, 4 * n)?;
        let period = self.0.queue.get_timestamp_period() as f64;
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
}
