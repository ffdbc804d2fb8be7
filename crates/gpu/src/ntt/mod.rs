//! The GPU NTT: radix-2 DIF passes through workgroup memory, then a tiled bit reversal, over
//! the columns of a row-major matrix of Montgomery words of a `GpuField` (BabyBear, KoalaBear). Output is in natural order,
//! matching Plonky3's `TwoAdicSubgroupDft` conventions.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use p3_baby_bear::BabyBear;

use crate::context::{Dispatch, GpuContext, ReadChunks};
use crate::error::{GpuError, Result};
use crate::field::{as_words, to_word, words_to, FieldId, GpuField};
use crate::shaders::Kernel;

/// Threads per workgroup in ntt/*.wgsl.
const WORKGROUP: u32 = 256;
/// Largest tile the DIF kernel uses (words): 16 KiB of workgroup memory. Measured on the H200:
/// 2x faster than 32 KiB tiles (twice the workgroups per SM hide more memory latency), and it
/// fits WebGPU's default limit.
const MAX_TILE_LOG: u32 = 12;
/// Sub-problems per tile in all but the last pass: 32 neighbours make 128-byte runs.
const SPREAD_LOG: u32 = 5;
/// Words in the bit-reversal kernel's workgroup tile.
const BITREV_TILE: usize = 4096;
/// Threads that touch the new pages of a host-to-host result growing its input's memory by a
/// transfer chunk or more, ahead of the readback.
const PREFAULT_THREADS: usize = 8;
/// Low/high split of the coset power table.
const SHIFT_SPLIT: usize = 2048;

/// Rust twin of `DifParams` in wgsl/ntt/dif_pass.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct DifParams {
    log_n: u32,
    width: u32,
    stage0: u32,
    log_t: u32,
    log_p: u32,
    valid_rows: u32,
    use_shift: u32,
    num_subproblems: u32,
}

/// Rust twin of `BitReverseParams` in wgsl/ntt/bit_reverse.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct BitReverseParams {
    log_n: u32,
    width: u32,
    log_tile: u32,
    use_scale: u32,
    scale: u32,
    num_groups: u32,
    total: u32,
    _pad: u32,
}

/// Forward (evaluate) or inverse (interpolate, without the 1/n factor unless asked) transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    Forward,
    Inverse,
}

/// One transform over the columns of a row-major matrix.
#[derive(Clone, Debug)]
pub struct NttSpec<F = BabyBear> {
    /// log2 of the number of rows transformed.
    pub log_n: usize,
    /// Number of columns (independent transforms), at least 1.
    pub width: usize,
    pub direction: Direction,
    /// Rows present in the source buffer; rows from here to 2^log_n are zero and are not read.
    pub valid_rows: usize,
    /// Multiply input row r by shift^r first (a coset transform).
    pub coset_shift: Option<F>,
    /// Multiply every output element by this constant (1/n for an inverse DFT).
    pub scale: Option<F>,
    /// Leave the output rows in bit-reversed order (the DIF passes' own order): no reversal
    /// kernel. Only without a scale (the reversal kernel applies it), for two or more rows.
    pub bit_reversed_output: bool,
}

impl<F: GpuField> NttSpec<F> {
    pub fn forward(log_n: usize, width: usize) -> Self {
        Self { log_n, width, direction: Direction::Forward, valid_rows: 1 << log_n, coset_shift: None, scale: None, bit_reversed_output: false }
    }

    /// The inverse DFT, 1/n included.
    pub fn inverse(log_n: usize, width: usize) -> Self {
        Self { direction: Direction::Inverse, scale: Some(F::from_usize(1 << log_n).inverse()), ..Self::forward(log_n, width) }
    }

    pub fn rows(&self) -> usize {
        1 << self.log_n
    }

    fn validate(&self) -> Result<()> {
        if self.width == 0 {
            return Err(GpuError::InvalidInput("NTT width must be at least 1".into()));
        }
        if self.log_n > F::TWO_ADICITY {
            return Err(GpuError::InvalidInput(format!("NTT of 2^{} rows exceeds {}'s two-adicity 2^{}", self.log_n, F::ID.name(), F::TWO_ADICITY)));
        }
        if self.valid_rows > self.rows() {
            return Err(GpuError::InvalidInput(format!("{} valid rows exceed the transform height {}", self.valid_rows, self.rows())));
        }
        if self.bit_reversed_output && self.scale.is_some_and(|s| s != F::ONE) {
            return Err(GpuError::InvalidInput("a scaled NTT cannot leave its output bit-reversed (the reversal applies the scale)".into()));
        }
        if self.rows().checked_mul(self.width).is_none_or(|n| n > u32::MAX as usize / 2) {
            return Err(GpuError::InvalidInput(format!("NTT of 2^{} rows x {} columns does not fit 32-bit indexing", self.log_n, self.width)));
        }
        Ok(())
    }
}

/// One DIF pass of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DifPassPlan {
    pub stage0: u32,
    pub log_t: u32,
    pub log_p: u32,
}

/// Splits log_n DIF stages into passes over tiles of 2^tile_log words: the last pass runs on
/// contiguous sub-problems (as many stages as fit), the earlier ones on 2^SPREAD_LOG
/// neighbouring strided sub-problems each, spread evenly.
pub fn plan_passes(log_n: u32, width: usize, tile_log: u32) -> Vec<DifPassPlan> {
    if log_n == 0 {
        return Vec::new();
    }
    let width_log = usize::BITS - 1 - width.max(1).leading_zeros();
    let last_p = width_log.min(SPREAD_LOG);
    let last_t = log_n.min(tile_log - last_p);
    let rest = log_n - last_t;
    let mut passes = strided_passes(rest, tile_log);
    passes.push(DifPassPlan { stage0: rest, log_t: last_t, log_p: (tile_log - last_t).min(8) });
    passes
}

/// Strided passes covering the first `stages` DIF stages: full passes of `per` stages (a
/// multiple of 4 on common tiles: radix-16 rounds only), the remainder first.
fn strided_passes(stages: u32, tile_log: u32) -> Vec<DifPassPlan> {
    let per = tile_log - SPREAD_LOG;
    let count = stages.div_ceil(per);
    let mut passes = Vec::with_capacity(count as usize);
    let mut stage0 = 0;
    for i in 0..count {
        let t = if i == 0 { stages - (count - 1) * per } else { per };
        passes.push(DifPassPlan { stage0, log_t: t, log_p: (tile_log - t).min(8) });
        stage0 += t;
    }
    passes
}

/// The passes of a 2^log_n-row transform whose bit-reversed result is read back in chunks of
/// `chunk_rows` rows, and the index of the first pass that runs chunk by chunk. A DIF pass from
/// stage log_n - log(chunk_rows) on works inside blocks of at most `chunk_rows` contiguous
/// rows, so each chunk's remaining passes can run just before its copy, while the host drains
/// the chunks before it: only the passes before the split are not overlapped with the readback.
/// Of the usual plan split at its first boundary at or past that stage and a plan with that many
/// stages up front and the rest planned as a transform of `chunk_rows` rows, the one with fewer
/// passes before the split (then fewer in all). None when there is a single chunk, or when no
/// split runs fewer passes up front than the usual plan has in all without adding more than
/// one pass.
pub fn plan_split(log_n: u32, width: usize, tile_log: u32, chunk_rows: usize) -> Option<(Vec<DifPassPlan>, usize)> {
    if !chunk_rows.is_power_of_two() || chunk_rows.trailing_zeros() >= log_n {
        return None;
    }
    let up_front = log_n - chunk_rows.trailing_zeros();
    let usual = plan_passes(log_n, width, tile_log);
    let usual_split = usual.iter().position(|p| p.stage0 >= up_front).map(|at| (usual.clone(), at));
    let mut replanned = strided_passes(up_front, tile_log);
    let at = replanned.len();
    replanned.extend(plan_passes(log_n - up_front, width, tile_log).into_iter().map(|p| DifPassPlan { stage0: p.stage0 + up_front, ..p }));
    // Worth it only with fewer passes up front than the whole usual plan, and at most one pass
    // more in all.
    let most = usual.len() + 1;
    [Some((replanned, at)), usual_split]
        .into_iter()
        .flatten()
        .filter(|(plan, at)| *at < plan.len() && *at < most - 1 && plan.len() <= most)
        .min_by_key(|(plan, at)| (*at, plan.len()))
}

/// Side (log2) of the square bit-reversal tile for this shape; 0 means the per-element kernel
/// (very wide rows, which are runs already, tiny heights, and widths that are not powers of two).
fn bit_reverse_tile_log(log_n: u32, width: usize) -> u32 {
    if !width.is_power_of_two() {
        return 0;
    }
    let mut k = (log_n / 2).min(5);
    while k > 0 && (width << (2 * k)) + (1 << k) > BITREV_TILE {
        k -= 1;
    }
    k
}

/// How the transform's work buffers are laid out (see [`NttSource`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    TwoBuffers,
    /// `chunk_rows`: the result is read back in chunks of that many rows, and the passes that
    /// can run chunk by chunk are left to [`ChunkPasses`] (bit-reversed output only).
    OneBuffer {
        reuse_src: bool,
        chunk_rows: Option<usize>,
    },
}

/// The passes of a split transform (`plan_split`) that run chunk by chunk: recorded for chunk i
/// just before chunk i is copied out, each on that chunk's rows of `buffer` bound as a whole
/// array (the kernel's indexing and twiddles do not depend on where a block lies).
pub(crate) struct ChunkPasses {
    buffer: wgpu::Buffer,
    chunk_bytes: u64,
    pipeline: Arc<wgpu::ComputePipeline>,
    twiddles: Arc<wgpu::Buffer>,
    /// Per pass: its parameters (sub-problems of one chunk) and workgroups.
    passes: Vec<(wgpu::Buffer, u32)>,
}

impl ChunkPasses {
    /// The `ReadChunks::before_copy` hook of a readback whose chunks finish with `tail`'s
    /// passes (none: nothing to record).
    fn recorder<'a>(ntt: &'a GpuNtt, tail: &'a Option<ChunkPasses>) -> impl Fn(&mut wgpu::CommandEncoder, usize) + 'a {
        move |encoder, i| {
            if let Some(tail) = tail {
                tail.record(ntt, encoder, i);
            }
        }
    }

    /// Records chunk `index`'s passes into `encoder`.
    fn record(&self, ntt: &GpuNtt, encoder: &mut wgpu::CommandEncoder, index: usize) {
        let offset = index as u64 * self.chunk_bytes;
        let dispatches: Vec<Dispatch> = self
            .passes
            .iter()
            .map(|(params, groups)| {
                let bind = ntt.ctx.bind_ranges(
                    &self.pipeline,
                    &[
                        (params, 0, None),
                        (&ntt.empty, 0, None),
                        (&self.buffer, offset, Some(self.chunk_bytes)),
                        (&self.twiddles, 0, None),
                        (&ntt.empty, 0, None),
                    ],
                );
                Dispatch { pipeline: (*self.pipeline).clone(), bind, groups: *groups }
            })
            .collect();
        ntt.ctx.record_dispatches(encoder, "ntt chunk", &dispatches);
    }
}

fn dif_params<F: GpuField>(spec: &NttSpec<F>, pass: &DifPassPlan, first: bool, shifted: bool) -> DifParams {
    DifParams {
        log_n: spec.log_n as u32,
        width: spec.width as u32,
        stage0: pass.stage0,
        log_t: pass.log_t,
        log_p: pass.log_p,
        valid_rows: if first { spec.valid_rows as u32 } else { 1 << spec.log_n },
        use_shift: u32::from(first && shifted),
        num_subproblems: ((spec.rows() * spec.width) >> pass.log_t) as u32,
    }
}

/// Workgroups of a DIF pass.
fn params_groups<F: GpuField>(spec: &NttSpec<F>, pass: &DifPassPlan) -> u32 {
    (((spec.rows() * spec.width) >> pass.log_t) as u32).div_ceil(1 << pass.log_p)
}

fn bit_reverse_params<F: GpuField>(spec: &NttSpec<F>, k: u32, rows: usize) -> BitReverseParams {
    let log_n = spec.log_n as u32;
    BitReverseParams {
        log_n,
        width: spec.width as u32,
        log_tile: k,
        use_scale: u32::from(spec.scale.is_some_and(|s| s != F::ONE)),
        scale: spec.scale.map_or(0, to_word),
        num_groups: 1 << (log_n - 2 * k),
        total: (rows * spec.width) as u32,
        _pad: 0,
    }
}

/// `bit_reverse_tile_log` for the in-place kernel, which holds two tiles in the same memory.
fn bit_reverse_tile_log_in_place(log_n: u32, width: usize) -> u32 {
    if !width.is_power_of_two() {
        return 0;
    }
    let mut k = (log_n / 2).min(5);
    while k > 0 && (width << (2 * k)) + (1 << k) > BITREV_TILE / 2 {
        k -= 1;
    }
    k
}

/// Where an NTT reads its input and works ([`GpuNtt::record_with`]).
pub enum NttSource<'a> {
    /// `src` is left as it is; the passes ping-pong between two work buffers.
    TwoBuffers(&'a wgpu::Buffer),
    /// `src` is left as it is; one buffer of the result's size: the first pass reads `src` into
    /// it, every later pass and the bit reversal work in place (for encoders, whose two work
    /// buffers are the largest allocation of a commit).
    OneBuffer(&'a wgpu::Buffer),
    /// `src` is given up: when it holds exactly the transform's full input (every row, the
    /// result's size), the whole transform runs in it; else as `OneBuffer`. Do not use or
    /// recycle it afterwards: it is the result, or it is dropped.
    GivenUp(wgpu::Buffer),
}

/// GPU NTTs on one context. Twiddle tables are built once per size and direction and stay on
/// the GPU.
pub struct GpuNtt {
    ctx: Arc<GpuContext>,
    tile_log: u32,
    twiddles: Mutex<HashMap<(FieldId, u32, Direction), Arc<wgpu::Buffer>>>,
    empty: wgpu::Buffer,
    poison: AtomicBool,
    skip_butterflies: AtomicBool,
}

impl GpuNtt {
    pub fn new(ctx: Arc<GpuContext>) -> Self {
        let words = ctx.summary().max_compute_workgroup_storage_size / 4;
        let tile_log = (u32::BITS - 1 - words.max(1).leading_zeros()).min(MAX_TILE_LOG);
        Self::with_tile_log(ctx, tile_log)
    }

    /// With a DIF tile of 2^tile_log words (tuning; `new` takes the largest the adapter allows,
    /// up to 2^12). Clamped to what the adapter allows and to at least 2^6.
    pub fn with_tile_log(ctx: Arc<GpuContext>, tile_log: u32) -> Self {
        let words = ctx.summary().max_compute_workgroup_storage_size / 4;
        let max = (u32::BITS - 1 - words.max(1).leading_zeros()).min(MAX_TILE_LOG);
        let tile_log = tile_log.clamp(SPREAD_LOG + 1, max);
        let empty = ctx.upload("ntt empty", &[0]);
        Self { ctx, tile_log, twiddles: Mutex::new(HashMap::new()), empty, poison: AtomicBool::new(false), skip_butterflies: AtomicBool::new(false) }
    }

    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// Tests: fill every work/output buffer with 0xffffffff (not a field word) before the
    /// kernels run, so a word a kernel forgets to write is caught on readback.
    pub fn set_poison_outputs(&self, on: bool) {
        self.poison.store(on, Ordering::Relaxed);
    }

    /// Work buffers come from the context's pool, so its budget and `trim_pools` cover them.
    fn work_buffer(&self, label: &str, words: usize) -> wgpu::Buffer {
        if self.poison.load(Ordering::Relaxed) {
            return self.ctx.upload(label, &vec![u32::MAX; words]);
        }
        self.ctx.pooled_storage(label, words)
    }

    /// Profiling only: DIF passes move data but skip the butterflies (wrong results), to
    /// separate memory traffic from arithmetic in a kernel profile.
    #[doc(hidden)]
    pub fn set_skip_butterflies(&self, on: bool) {
        self.skip_butterflies.store(on, Ordering::Relaxed);
    }

    /// Records a plain copy of `words` words (a multiple of 4) from `src` to `dst`: the
    /// bandwidth reference for profiles.
    pub fn record_copy(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        dst: &wgpu::Buffer,
        words: usize,
        timer: Option<&mut KernelTimer>,
    ) -> Result<()> {
        let count = u32::try_from(words)
            .ok()
            .filter(|w| w % 4 == 0)
            .ok_or_else(|| GpuError::InvalidInput(format!("copy of {words} words: a multiple of 4 that fits 32 bits is needed")))?;
        let bytes = words as u64 * 4;
        if src.size() < bytes || dst.size() < bytes {
            return Err(GpuError::InvalidInput(format!("copy of {words} words between buffers of {} and {} bytes", src.size(), dst.size())));
        }
        self.ctx.check_binding_size("copy", bytes)?;
        let pipeline = self.ctx.pipeline(Kernel::Copy, &[])?;
        let uniform = self.ctx.uniform("copy params", &[count, 0, 0, 0]);
        let bind = self.bind(&pipeline, &[&uniform, src, dst]);
        self.dispatch(encoder, "copy", &pipeline, &bind, (count / 4).div_ceil(WORKGROUP), timer);
        Ok(())
    }

    /// Hands a buffer from [`record`](Self::record) back for reuse by later transforms. Only
    /// call this once no later command reads it (work already submitted is fine: the queue
    /// runs in order).
    pub fn recycle(&self, buffer: wgpu::Buffer) {
        self.ctx.recycle_storage(buffer);
    }

    /// The passes a transform of this shape runs.
    pub fn plan(&self, log_n: usize, width: usize) -> Vec<DifPassPlan> {
        plan_passes(log_n as u32, width, self.tile_log)
    }

    /// [`plan_split`] on this NTT's tile: the passes of a transform read back in chunks of
    /// `chunk_rows` rows, and the first one run chunk by chunk.
    pub fn plan_split(&self, log_n: usize, width: usize, chunk_rows: usize) -> Option<(Vec<DifPassPlan>, usize)> {
        plan_split(log_n as u32, width, self.tile_log, chunk_rows)
    }

    fn twiddle_table<F: GpuField>(&self, log_n: u32, direction: Direction) -> Arc<wgpu::Buffer> {
        let mut cache = self.twiddles.lock().expect("twiddle cache poisoned");
        cache
            .entry((F::ID, log_n, direction))
            .or_insert_with(|| {
                let root = F::two_adic_generator(log_n as usize);
                let root = match direction {
                    Direction::Forward => root,
                    Direction::Inverse => root.inverse(),
                };
                let half = (1usize << log_n) / 2;
                let table: Vec<F> = root.powers().take(half.max(1)).collect();
                Arc::new(self.ctx.upload("ntt twiddles", as_words(&table)))
            })
            .clone()
    }

    fn shift_table<F: GpuField>(&self, shift: F, rows: usize) -> wgpu::Buffer {
        let lo: Vec<F> = shift.powers().take(SHIFT_SPLIT).collect();
        let step = shift.exp_u64(SHIFT_SPLIT as u64);
        let hi: Vec<F> = step.powers().take(rows.div_ceil(SHIFT_SPLIT).max(1)).collect();
        let words: Vec<u32> = as_words(&lo).iter().chain(as_words(&hi)).copied().collect();
        self.ctx.upload("ntt coset powers", &words)
    }

    /// Records the transform of `src` (spec.valid_rows x spec.width words, row-major) into
    /// `encoder` and returns the buffer that will hold the 2^log_n x width result in natural
    /// row order. Nothing is submitted; chain further kernels on the result before submitting.
    /// (In two work buffers, `src` left as it is; [`record_with`](Self::record_with) chooses.)
    pub fn record<F: GpuField>(&self, encoder: &mut wgpu::CommandEncoder, src: &wgpu::Buffer, spec: &NttSpec<F>) -> Result<wgpu::Buffer> {
        self.record_with(encoder, NttSource::TwoBuffers(src), spec, None)
    }

    /// [`record`](Self::record) with the buffers `source` chooses, and a GPU timestamp pair
    /// around each kernel when `timer` is given.
    pub fn record_with<F: GpuField>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        source: NttSource<'_>,
        spec: &NttSpec<F>,
        timer: Option<&mut KernelTimer>,
    ) -> Result<wgpu::Buffer> {
        match source {
            NttSource::TwoBuffers(src) => self.record_inner(encoder, src, spec, timer, Layout::TwoBuffers),
            NttSource::OneBuffer(src) => self.record_inner(encoder, src, spec, timer, Layout::OneBuffer { reuse_src: false, chunk_rows: None }),
            NttSource::GivenUp(src) => self.record_inner(encoder, &src, spec, timer, Layout::OneBuffer { reuse_src: true, chunk_rows: None }),
        }
    }

    fn record_inner<F: GpuField>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        spec: &NttSpec<F>,
        timer: Option<&mut KernelTimer>,
        layout: Layout,
    ) -> Result<wgpu::Buffer> {
        self.record_spec(encoder, src, spec, timer, layout).map(|(result, _)| result)
    }

    /// [`record_inner`](Self::record_inner), with the passes left to run chunk by chunk where
    /// the layout asks for them.
    fn record_spec<F: GpuField>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        spec: &NttSpec<F>,
        mut timer: Option<&mut KernelTimer>,
        layout: Layout,
    ) -> Result<(wgpu::Buffer, Option<ChunkPasses>)> {
        spec.validate()?;
        let total = spec.rows() * spec.width;
        self.ctx.check_binding_size("NTT buffer", (total * 4) as u64)?;
        if src.size() < (spec.valid_rows * spec.width * 4) as u64 {
            return Err(GpuError::InvalidInput(format!("NTT source holds {} bytes, fewer than {} rows x {} columns", src.size(), spec.valid_rows, spec.width)));
        }
        let log_n = spec.log_n as u32;
        let passes = self.plan(spec.log_n, spec.width);
        let twiddles = self.twiddle_table::<F>(log_n, spec.direction);
        let shift = spec.coset_shift.filter(|s| *s != F::ONE);
        let shift_table = shift.map(|s| self.shift_table(s, spec.valid_rows));
        // The DIF passes leave rows bit-reversed; a single row (no passes) is its own reversal.
        if spec.bit_reversed_output && passes.is_empty() {
            return Err(GpuError::InvalidInput("bit-reversed NTT output needs two or more rows".into()));
        }
        if let (Layout::OneBuffer { reuse_src, chunk_rows }, false) = (layout, passes.is_empty()) {
            let whole = spec.valid_rows == spec.rows() && src.size() == (total * 4) as u64;
            let target = if reuse_src && whole { src.clone() } else { self.work_buffer("ntt work", total) };
            let in_src = reuse_src && whole;
            // Chunk by chunk only for output in the passes' own order, untimed.
            let split = chunk_rows
                .filter(|_| spec.bit_reversed_output && timer.is_none())
                .and_then(|rows| plan_split(log_n, spec.width, self.tile_log, rows).map(|(plan, at)| (plan, at, rows)));
            let (up_front, chunked): (&[DifPassPlan], Option<(&[DifPassPlan], usize)>) = match &split {
                Some((plan, at, rows)) => (&plan[..*at], Some((&plan[*at..], *rows))),
                None => (&passes, None),
            };
            let result = self.record_one_buffer(encoder, src, target, in_src, spec, up_front, &twiddles, shift_table.as_ref(), timer)?;
            let tail = match chunked {
                Some((rest, rows)) => Some(ChunkPasses {
                    buffer: result.clone(),
                    chunk_bytes: (rows * spec.width * 4) as u64,
                    pipeline: self.dif_pipeline(F::ID, true)?,
                    twiddles,
                    passes: rest
                        .iter()
                        .map(|pass| {
                            let sub = ((rows * spec.width) >> pass.log_t) as u32;
                            let params = DifParams { num_subproblems: sub, ..dif_params(spec, pass, false, false) };
                            (self.ctx.uniform("dif params", &params), sub.div_ceil(1 << pass.log_p))
                        })
                        .collect(),
                }),
                None => None,
            };
            return Ok((result, tail));
        }
        let work = [self.work_buffer("ntt work a", total), self.work_buffer("ntt work b", total)];
        let dif = self.dif_pipeline(F::ID, false)?;

        // Which buffer holds the data before the next step: None means `src`.
        let mut current: Option<usize> = None;
        // Untimed, every kernel goes into one compute pass at the end.
        let mut pending: Vec<Dispatch> = Vec::new();
        for (i, pass) in passes.iter().enumerate() {
            let first = i == 0;
            let params = dif_params(spec, pass, first, shift_table.is_some());
            let out = current.map_or(0, |c| 1 - c);
            let input = current.map_or(src, |c| &work[c]);
            let shifts = match (&shift_table, first) {
                (Some(t), true) => t,
                _ => &self.empty,
            };
            let uniform = self.ctx.uniform("dif params", &params);
            let bind = self.bind(&dif, &[&uniform, input, &work[out], &twiddles, shifts]);
            let groups = params_groups(spec, pass);
            match timer.as_deref_mut() {
                Some(t) => self.dispatch(encoder, "dif pass", &dif, &bind, groups, Some(t)),
                None => pending.push(Dispatch { pipeline: (*dif).clone(), bind, groups }),
            }
            current = Some(out);
        }
        // Without passes (a single row) the source is copied through the reversal kernel; the
        // zero tail, if any, comes from zero-filling the output first.
        let out = current.map_or(0, |c| 1 - c);
        let input = current.map_or(src, |c| &work[c]);
        if current.is_none() && spec.valid_rows < spec.rows() {
            encoder.clear_buffer(&work[out], 0, None);
        }
        let copied_rows = if current.is_none() { spec.valid_rows } else { spec.rows() };
        if spec.bit_reversed_output {
            // The DIF passes leave rows bit-reversed: the last pass's buffer is the result.
            self.ctx.record_dispatches(encoder, "ntt", &pending);
            let [a, b] = work;
            let (result, spare) = if current == Some(0) { (a, b) } else { (b, a) };
            if !self.poison.load(Ordering::Relaxed) {
                // Recorded, not yet submitted.
                self.ctx.recycle_after_submit(spare);
            }
            return Ok((result, None));
        }
        if copied_rows > 0 {
            let k = bit_reverse_tile_log(log_n, spec.width);
            let params = bit_reverse_params(spec, k, copied_rows);
            let uniform = self.ctx.uniform("bit reverse params", &params);
            let (kernel, groups) =
                if k > 0 { (Kernel::BitReverseTiled, params.num_groups) } else { (Kernel::BitReverseRows, params.total.div_ceil(WORKGROUP)) };
            let pipeline = self.ctx.pipeline_for(F::ID, kernel, &[])?;
            let bind = self.bind(&pipeline, &[&uniform, input, &work[out]]);
            match timer {
                Some(t) => self.dispatch(encoder, "bit reverse", &pipeline, &bind, groups, Some(t)),
                None => pending.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups }),
            }
        }
        self.ctx.record_dispatches(encoder, "ntt", &pending);
        let [a, b] = work;
        let (result, spare) = if out == 0 { (a, b) } else { (b, a) };
        if !self.poison.load(Ordering::Relaxed) {
            // Recorded, not yet submitted.
            self.ctx.recycle_after_submit(spare);
        }
        Ok((result, None))
    }

    /// The transform in `target` alone: the first pass reads `src` into it (or, `in_src`,
    /// `target` is `src` and every pass runs in place), later passes and the bit reversal in place.
    #[allow(clippy::too_many_arguments)]
    fn record_one_buffer<F: GpuField>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        target: wgpu::Buffer,
        in_src: bool,
        spec: &NttSpec<F>,
        passes: &[DifPassPlan],
        twiddles: &wgpu::Buffer,
        shift_table: Option<&wgpu::Buffer>,
        timer: Option<&mut KernelTimer>,
    ) -> Result<wgpu::Buffer> {
        let (copy_in, in_place) = (self.dif_pipeline(F::ID, false)?, self.dif_pipeline(F::ID, true)?);
        let mut dispatches = Vec::with_capacity(passes.len() + 1);
        for (i, pass) in passes.iter().enumerate() {
            let first = i == 0;
            let params = self.ctx.uniform("dif params", &dif_params(spec, pass, first, shift_table.is_some()));
            let shifts = shift_table.filter(|_| first).unwrap_or(&self.empty);
            let groups = params_groups(spec, pass);
            let (pipeline, bind) = if first && !in_src {
                (&copy_in, self.bind(&copy_in, &[&params, src, &target, twiddles, shifts]))
            } else {
                (&in_place, self.bind(&in_place, &[&params, &self.empty, &target, twiddles, shifts]))
            };
            dispatches.push(Dispatch { pipeline: (**pipeline).clone(), bind, groups });
        }
        if spec.bit_reversed_output {
            // The DIF passes' own order is the result.
            self.record_timed_dispatches(encoder, &dispatches, false, timer);
            return Ok(target);
        }
        let k = bit_reverse_tile_log_in_place(spec.log_n as u32, spec.width);
        let params = bit_reverse_params(spec, k, spec.rows());
        let (kernel, groups) =
            if k > 0 { (Kernel::BitReverseTiledInPlace, params.num_groups) } else { (Kernel::BitReverseRowsInPlace, params.total.div_ceil(WORKGROUP)) };
        let pipeline = self.ctx.pipeline_for(F::ID, kernel, &[])?;
        let uniform = self.ctx.uniform("bit reverse params", &params);
        let bind = self.bind(&pipeline, &[&uniform, &self.empty, &target]);
        dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups });
        self.record_timed_dispatches(encoder, &dispatches, true, timer);
        Ok(target)
    }

    /// Records a one-buffer transform's kernels, each timed when `timer` is given: DIF passes,
    /// and last the bit reversal when `reversal`.
    fn record_timed_dispatches(&self, encoder: &mut wgpu::CommandEncoder, dispatches: &[Dispatch], reversal: bool, timer: Option<&mut KernelTimer>) {
        match timer {
            Some(t) => {
                for (i, d) in dispatches.iter().enumerate() {
                    let label = if reversal && i + 1 == dispatches.len() { "bit reverse" } else { "dif pass" };
                    self.dispatch(encoder, label, &d.pipeline, &d.bind, d.groups, Some(&mut *t));
                }
            }
            None => self.ctx.record_dispatches(encoder, "ntt", dispatches),
        }
    }

    fn dif_pipeline(&self, field: FieldId, in_place: bool) -> Result<Arc<wgpu::ComputePipeline>> {
        let skip = u32::from(self.skip_butterflies.load(Ordering::Relaxed));
        self.ctx.pipeline_for(
            field,
            Kernel::DifPass,
            &[("NTT_TILE", 1 << self.tile_log), ("NTT_SKIP_BUTTERFLIES", skip), ("NTT_IN_PLACE", u32::from(in_place))],
        )
    }

    fn bind(&self, pipeline: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        self.ctx.bind_buffers(pipeline, buffers)
    }

    fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        label: &'static str,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        groups: u32,
        timer: Option<&mut KernelTimer>,
    ) {
        let timestamp_writes = timer.and_then(|t| t.next(label));
        self.ctx.record_dispatch(encoder, label, pipeline, bind, groups, timestamp_writes);
    }

    /// Host to host: uploads `values` (spec.valid_rows x spec.width), transforms, reads back.
    pub fn transform<F: GpuField>(&self, values: &[F], spec: &NttSpec<F>) -> Result<Vec<F>> {
        self.transform_chain(values, std::slice::from_ref(spec))
    }

    /// Host to host: several transforms chained on the GPU in one submission, each reading the
    /// previous one's output (e.g. inverse then a larger coset forward for an LDE).
    /// Larger than one binding, it runs a block of columns at a time ([`transform_columns`]).
    ///
    /// [`transform_columns`]: Self::transform_columns
    pub fn transform_chain<F: GpuField>(&self, values: &[F], specs: &[NttSpec<F>]) -> Result<Vec<F>> {
        let last = check_chain(values.len(), specs)?;
        if !self.fits_one_binding(values.len(), last) {
            return self.transform_columns(values, last.width, specs);
        }
        self.ctx.scoped("NTT", || {
            let (encoder, buffer, used, _) = self.record_chain_from(values, specs, None)?;
            let words = self.ctx.submit_and_read(encoder, &buffer, last.rows() * last.width);
            for b in used.into_iter().chain([buffer]) {
                self.recycle(b);
            }
            words_to::<F>(words?)
        })
    }

    /// Fresh memory a readback will write, `bytes` from `ptr`: advised to huge pages, and, a
    /// transfer chunk or more, its pages touched on threads of `scope` (join the handles before
    /// anything else writes it; `transfer::prefault`).
    fn touch_ahead<'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        ptr: crate::transfer::SendPtr<u8>,
        bytes: usize,
    ) -> Vec<std::thread::ScopedJoinHandle<'scope, ()>> {
        if bytes == 0 {
            return Vec::new();
        }
        crate::transfer::advise_huge_pages(ptr.get(), bytes);
        if (bytes as u64) < self.ctx.transfer_chunk_bytes() {
            return Vec::new();
        }
        crate::transfer::prefault(scope, ptr, bytes, PREFAULT_THREADS)
    }

    /// Rows per readback chunk for `last`'s result when its last passes can run chunk by chunk
    /// ([`plan_split`]): the most rows, a power of two, that fit a transfer chunk, at least two
    /// chunks, each starting at a storage-offset-aligned byte. None otherwise.
    fn readback_chunk_rows<F: GpuField>(&self, last: &NttSpec<F>) -> Option<usize> {
        let row_bytes = last.width * 4;
        let fit = self.ctx.transfer_chunk_bytes() as usize / row_bytes.max(1);
        let rows = 1usize << fit.checked_ilog2()?;
        let align = self.ctx.limits().min_storage_buffer_offset_alignment as usize;
        (last.bit_reversed_output && rows * 2 <= last.rows() && (rows * row_bytes).is_multiple_of(align)).then_some(rows)
    }

    /// Whether a host-to-host chain of `input_len` words in and `last`'s result out fits one
    /// binding each way.
    fn fits_one_binding<F: GpuField>(&self, input_len: usize, last: &NttSpec<F>) -> bool {
        let binding = self.ctx.max_binding_bytes();
        (last.rows() * last.width * 4) as u64 <= binding && (input_len * 4) as u64 <= binding
    }

    /// Uploads `values` into a pooled buffer (no fresh device allocation per call) and records
    /// `specs` one after another: the encoder, the result buffer, the buffers the chain went
    /// through (for `recycle` once the result is read), and with `chunk_rows` the last
    /// transform's passes left to run chunk by chunk, if any.
    #[allow(clippy::type_complexity)]
    fn record_chain_from<F: GpuField>(
        &self,
        values: &[F],
        specs: &[NttSpec<F>],
        chunk_rows: Option<usize>,
    ) -> Result<(wgpu::CommandEncoder, wgpu::Buffer, Vec<wgpu::Buffer>, Option<ChunkPasses>)> {
        self.ctx.check_binding_size("NTT input", (values.len() * 4) as u64)?;
        let buffer = self.ctx.pooled_for_upload("ntt input", values.len());
        self.ctx.write(&buffer, as_words(values));
        let mut encoder = self.ctx.encoder("ntt");
        let (result, used, tail) = self.record_specs(&mut encoder, buffer, specs, chunk_rows)?;
        Ok((encoder, result, used, tail))
    }

    /// Records `specs` one after another starting from `input`: the result buffer, the buffers
    /// before it, and the last transform's passes left to run in chunks of `chunk_rows` rows.
    fn record_specs<F: GpuField>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        mut buffer: wgpu::Buffer,
        specs: &[NttSpec<F>],
        chunk_rows: Option<usize>,
    ) -> Result<(wgpu::Buffer, Vec<wgpu::Buffer>, Option<ChunkPasses>)> {
        let mut used = Vec::new();
        let mut tail = None;
        for (i, spec) in specs.iter().enumerate() {
            // One buffer: a full-size input is transformed where it lies (a third of the
            // memory of two work buffers, and the same speed or better on the H200); a shorter
            // one is read into a buffer of the result's size. (With poisoned outputs, testing,
            // always the latter, so that a word a kernel fails to write shows.)
            let reuse_src = !self.poison.load(Ordering::Relaxed);
            let chunk_rows = chunk_rows.filter(|_| i + 1 == specs.len());
            let next = match self.record_spec(encoder, &buffer, spec, None, Layout::OneBuffer { reuse_src, chunk_rows }) {
                Ok((next, last_tail)) => {
                    tail = last_tail;
                    next
                }
                Err(e) => {
                    for b in used.into_iter().chain([buffer]) {
                        self.recycle(b);
                    }
                    return Err(e);
                }
            };
            // The result is the input itself where the transform ran in it.
            let before = std::mem::replace(&mut buffer, next);
            if before != buffer {
                used.push(before);
            }
        }
        Ok((buffer, used, tail))
    }
}

/// A host-to-host chain's specs are valid and `len` words are its first spec's input: its last
/// spec.
fn check_chain<F: GpuField>(len: usize, specs: &[NttSpec<F>]) -> Result<&NttSpec<F>> {
    let first = specs.first().ok_or_else(|| GpuError::InvalidInput("no transform given".into()))?;
    for spec in specs {
        spec.validate()?;
    }
    if len != first.valid_rows * first.width {
        return Err(GpuError::InvalidInput(format!("{len} values given for {} rows x {} columns", first.valid_rows, first.width)));
    }
    Ok(specs.last().expect("non-empty"))
}

/// What a host-to-host transform hands its result to while it is still on the GPU
/// ([`GpuNtt::transform_chain_in_place_then`]).
#[derive(Clone, Copy)]
pub struct ResultHooks<'a> {
    /// The result in one buffer, rows as the host copy holds them.
    pub whole: &'a dyn Fn(&wgpu::Buffer),
    /// A result over one binding is computed a block of columns at a time: blocks of a multiple
    /// of this many columns (all but the last) where the binding allows it.
    pub block_multiple: usize,
    /// Each block's buffer (its columns of every row, rows as the result holds them), its
    /// first column and width, once the block is read back, with an encoder submitted right
    /// after: record work on it there.
    pub block: &'a dyn Fn(&mut wgpu::CommandEncoder, &wgpu::Buffer, usize, usize),
    /// After the last block (also when no block of the multiple fitted and `block` was never
    /// called).
    pub blocks_done: &'a dyn Fn(),
}

/// Why [`GpuNtt::transform_chain_in_place`] failed, and whether its input survived.
#[derive(Debug)]
pub struct InPlaceError {
    pub error: GpuError,
    /// The input was partly overwritten (the readback failed midway): it cannot be used to
    /// compute the result another way.
    pub input_lost: bool,
}

impl GpuNtt {
    /// [`transform_chain`](Self::transform_chain) whose result replaces `values` in its own
    /// allocation (grown where the result is larger): no fresh host pages to fault in, no
    /// gigabyte to free. Transfers go in pooled chunks, the readback drained on all cores while
    /// later chunks cross the bus. On an error before the readback writes anything `values` is
    /// untouched. Larger than one binding, the result is a fresh allocation
    /// ([`transform_columns`](Self::transform_columns)).
    pub fn transform_chain_in_place<F: GpuField>(&self, values: &mut Vec<F>, specs: &[NttSpec<F>]) -> std::result::Result<(), InPlaceError> {
        self.transform_chain_in_place_then(values, specs, None)
    }

    /// [`transform_chain_in_place`](Self::transform_chain_in_place), handing the result to
    /// `hooks` while it is on the GPU, before its buffers go back to the pool: `whole` with the
    /// one buffer that holds it, or, larger than one binding, `block` for each column block
    /// and then `blocks_done`. Not called on an error.
    pub fn transform_chain_in_place_then<F: GpuField>(
        &self,
        values: &mut Vec<F>,
        specs: &[NttSpec<F>],
        hooks: Option<ResultHooks<'_>>,
    ) -> std::result::Result<(), InPlaceError> {
        let kept = |error: GpuError| InPlaceError { error, input_lost: false };
        let last = check_chain(values.len(), specs).map_err(kept)?;
        if !self.fits_one_binding(values.len(), last) {
            // A block of columns at a time cannot share the input's rows: a fresh result.
            *values = self.transform_columns_then(values, last.width, specs, hooks).map_err(kept)?;
            if let Some(hooks) = hooks {
                (hooks.blocks_done)();
            }
            return Ok(());
        }
        let out_len = last.rows() * last.width;
        let chunk_rows = self.readback_chunk_rows(last);
        let old_len = values.len();
        // Grown while the input is its length, so a reallocation keeps it (the error paths
        // hand it back).
        values.reserve_exact(out_len.saturating_sub(old_len));
        let fresh_bytes = out_len.saturating_sub(old_len) * 4;
        let fresh = crate::transfer::SendPtr(values.as_mut_ptr().wrapping_add(old_len).cast::<u8>());
        std::thread::scope(|scope| {
            // The grown part is fresh memory the readback touches first: its page faults are
            // taken on threads of their own while the input goes up, the GPU transforms and the
            // rows below it are read back.
            let prefaulting = std::sync::Mutex::new(self.touch_ahead(scope, fresh, fresh_bytes));
            let prefaulted = |range: std::ops::Range<usize>| {
                if range.end > old_len * 4 {
                    for handle in prefaulting.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
                        handle.join().expect("a prefault thread panicked");
                    }
                }
            };
            let recorded = self.ctx.scoped("NTT", || self.record_chain_from(values, specs, chunk_rows));
            let (encoder, buffer, used, tail) = recorded.map_err(kept)?;
            values.clear();
            // No reference to the result's memory is made here: the prefault threads write the
            // grown part until the readback's `before_write` joins them.
            let dst = values.as_mut_ptr().cast::<u8>();
            let record_chunk = ChunkPasses::recorder(self, &tail);
            let how = ReadChunks {
                // Each chunk's last passes run just before its copy, while the host drains the
                // chunks before it.
                chunk_bytes: tail.as_ref().map(|t| t.chunk_bytes as usize),
                before_copy: Some(&record_chunk),
                before_write: Some(&prefaulted),
            };
            // A non-canonical word would be a kernel bug: checked while the readback copies.
            // SAFETY: the capacity holds out_len words (reserved above), which only the readback
            // and, in the grown part until joined, the prefault threads write; a GpuField element is
            // one u32 word (repr(transparent)).
            let read = unsafe { self.ctx.submit_and_read_chunked_into_raw(encoder, &buffer, dst, out_len * 4, Some(F::ORDER_U32), how) };
            drop(record_chunk);
            drop(tail);
            if let (Some(hooks), true) = (hooks, read.is_ok()) {
                (hooks.whole)(&buffer);
            }
            for b in used.into_iter().chain([buffer]) {
                self.recycle(b);
            }
            if let Err((error, input_lost)) = read {
                if !input_lost {
                    // SAFETY: nothing was written; the first old_len words are the input, kept by
                    // `reserve_exact` (which moves contents if it reallocates).
                    unsafe { values.set_len(old_len) };
                }
                return Err(InPlaceError { error, input_lost });
            }
            Ok(())
        })?;
        // SAFETY: all out_len words were written by the readback.
        unsafe { values.set_len(out_len) };
        Ok(())
    }
}

impl GpuNtt {
    /// Columns a host-to-host transform of `rows_out` output rows takes at once: as many as fit
    /// one binding (input and output), all of `width` where they fit. An error when not even one
    /// column does.
    pub fn columns_per_pass(&self, rows_in: usize, rows_out: usize, width: usize) -> Result<usize> {
        let binding = self.ctx.max_binding_bytes() as usize;
        let per_column = rows_in.max(rows_out).max(1) * 4;
        let columns = binding / per_column;
        if columns == 0 {
            return Err(GpuError::TooLarge { what: format!("one column of a {rows_out}-row NTT"), needed: per_column as u64, limit: binding as u64 });
        }
        Ok(columns.min(width.max(1)))
    }

    /// [`transform_chain`](Self::transform_chain) of a row-major matrix too large for one
    /// binding, a block of columns at a time (each column is its own transform): the block's
    /// row segments are uploaded straight from `values`, transformed, and read back into
    /// `out` (row-major, `width` wide) at the same columns. `specs` are for the full width.
    pub fn transform_columns<F: GpuField>(&self, values: &[F], width: usize, specs: &[NttSpec<F>]) -> Result<Vec<F>> {
        self.transform_columns_then(values, width, specs, None)
    }

    /// [`transform_columns`](Self::transform_columns) with each block handed to `hooks.block`
    /// once it is read back, before its buffer goes back to the pool (`hooks.whole` and
    /// `blocks_done` are not called here).
    pub fn transform_columns_then<F: GpuField>(&self, values: &[F], width: usize, specs: &[NttSpec<F>], hooks: Option<ResultHooks<'_>>) -> Result<Vec<F>> {
        let last = check_chain(values.len(), specs)?;
        if let Some(spec) = specs.iter().find(|s| s.width != width) {
            return Err(GpuError::InvalidInput(format!("a spec of width {} for a matrix of width {width}", spec.width)));
        }
        let rows_in = specs[0].valid_rows;
        let rows_out = last.rows();
        let most = self.columns_per_pass(rows_in, rows_out, width)?;
        // Blocks of the hooks' multiple where at least one fits; otherwise no hooks.
        let multiple = hooks.map_or(1, |h| h.block_multiple.max(1));
        let (block, hooks) = match most / multiple * multiple {
            0 => (most, None),
            block => (block, hooks),
        };
        // Zeroed lazily (calloc): nothing is touched before the readback writes it, and its
        // page faults are taken on threads of their own while the first block goes up and is
        // transformed (the first block's rows span every page).
        let mut out = vec![0u32; rows_out * width];
        let fresh = crate::transfer::SendPtr(out.as_mut_ptr().cast::<u8>());
        std::thread::scope(|scope| {
            let mut prefaulting = self.touch_ahead(scope, fresh, rows_out * width * 4);
            for first_col in (0..width).step_by(block) {
                let cols = block.min(width - first_col);
                let sub: Vec<NttSpec<F>> = specs.iter().map(|s| NttSpec { width: cols, ..*s }).collect();
                self.ctx.scoped("NTT column block", || {
                    let input = self
                        .ctx
                        .upload_rows("ntt columns", rows_in, cols, |r, write| write(as_words(&values[r * width + first_col..r * width + first_col + cols])))?;
                    let mut encoder = self.ctx.encoder("ntt columns");
                    let last = sub.last().expect("a spec");
                    let chunk_rows = self.readback_chunk_rows(last);
                    let (buffer, used, tail) = self.record_specs(&mut encoder, input, &sub, chunk_rows)?;
                    let record_chunk = ChunkPasses::recorder(self, &tail);
                    let how = ReadChunks { chunk_bytes: tail.as_ref().map(|t| t.chunk_bytes as usize), before_copy: Some(&record_chunk), before_write: None };
                    for handle in prefaulting.drain(..) {
                        handle.join().expect("a prefault thread panicked");
                    }
                    let read = self.ctx.submit_and_read_rows_into(encoder, &buffer, rows_out, cols, &mut out, width, first_col, how);
                    drop(record_chunk);
                    drop(tail);
                    // The block hook sees the finished block once it is read back: the GPU runs
                    // its work while the host fills the next block's upload (recorded in the
                    // last chunk's encoder, it would hold that chunk's copy back instead).
                    if let (Some(hooks), true) = (hooks, read.is_ok()) {
                        let mut after = self.ctx.encoder("ntt column block hook");
                        (hooks.block)(&mut after, &buffer, first_col, cols);
                        // In its own error scope: work the hook recorded that fails (it was
                        // told of its own recording errors) fails the hook's, not the block
                        // that was read back.
                        if let Err(e) = self.ctx.scoped("NTT column block hook", || self.ctx.submit(after)) {
                            tracing::debug!("a column block hook's work failed: {e}");
                        }
                    }
                    for b in used.into_iter().chain([buffer]) {
                        self.recycle(b);
                    }
                    read
                })?;
            }
            Ok::<(), GpuError>(())
        })?;
        words_to::<F>(out)
    }
}

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

    fn next(&mut self, label: &'static str) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
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

/// The WGSL twins of this file's parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] = &[
    crate::shaders::twin_layout!(DifParams as "DifParams" in "ntt/dif_pass" { log_n, width, stage0, log_t, log_p, valid_rows, use_shift, num_subproblems }),
    crate::shaders::twin_layout!(BitReverseParams as "BitReverseParams" in "ntt/bit_reverse" { log_n, width, log_tile, use_scale, scale, num_groups, total }),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_every_stage_once_within_the_tile() {
        for tile_log in [12, 13] {
            for log_n in 0..=27 {
                for width in [1, 2, 3, 8, 16, 64, 256, 1000] {
                    let plan = plan_passes(log_n, width, tile_log);
                    let mut next = 0;
                    for p in &plan {
                        assert_eq!(p.stage0, next, "{log_n} {width} {plan:?}");
                        assert!(p.log_t >= 1 && p.log_t + p.log_p <= tile_log && p.log_p <= 8, "{plan:?}");
                        next += p.log_t;
                    }
                    assert_eq!(next, log_n);
                }
            }
        }
        // 2^24, one column: three passes plus the bit reversal.
        assert_eq!(plan_passes(24, 1, 12).len(), 3);
    }

    #[test]
    fn split_plans_cover_every_stage_once_and_stay_in_their_chunks() {
        for tile_log in [10, 12] {
            for log_n in 1..=26u32 {
                for width in [1, 3, 16, 64, 2633] {
                    for chunk_log in 0..log_n {
                        let split = plan_split(log_n, width, tile_log, 1 << chunk_log);
                        // Chunks as tall as a tile always split a transform that takes several passes.
                        let usual = plan_passes(log_n, width, tile_log);
                        assert!(split.is_some() || chunk_log < tile_log || usual.len() == 1, "{log_n} {width} 2^{chunk_log}");
                        let Some((plan, at)) = split else { continue };
                        let mut next = 0;
                        for (i, p) in plan.iter().enumerate() {
                            assert_eq!(p.stage0, next, "{log_n} {width} {plan:?}");
                            assert!(p.log_t >= 1 && p.log_t + p.log_p <= tile_log && p.log_p <= 8, "{plan:?}");
                            // A pass's blocks are 2^(log_n - stage0) rows: within one chunk from `at` on.
                            assert_eq!(i >= at, p.stage0 >= log_n - chunk_log, "{log_n} {width} chunk 2^{chunk_log} {plan:?} split at {at}");
                            next += p.log_t;
                        }
                        assert_eq!(next, log_n);
                        // Fewer passes up front than the usual plan has, at most one more in all.
                        assert!(at >= 1 && at < plan.len() && at < usual.len() && plan.len() <= usual.len() + 1, "{plan:?} at {at}, usual {usual:?}");
                    }
                    assert_eq!(plan_split(log_n, width, tile_log, 1 << log_n), None);
                }
            }
        }
        // 2^24 x 16 read in 64 MiB chunks: one pass of four stages up front, three per chunk
        // (the usual plan has four passes, two before its first boundary past stage 4).
        let (plan, at) = plan_split(24, 16, 12, 1 << 20).unwrap();
        assert_eq!((plan.len(), at, plan[0].log_t), (4, 1, 4));
        // 2^22 x 16: the usual plan's first boundary (stage 7) is past stage 2: three passes.
        let (plan, at) = plan_split(22, 16, 12, 1 << 20).unwrap();
        assert_eq!((plan.len(), at), (3, 1));
    }

    #[test]
    fn bit_reverse_tiles_fit() {
        for log_n in 0..=27 {
            for width in [1, 3, 4, 16, 64, 256, 4096] {
                let k = bit_reverse_tile_log(log_n, width);
                assert!(2 * k <= log_n);
                if k > 0 {
                    assert!((width << (2 * k)) + (1 << k) <= BITREV_TILE);
                }
            }
        }
    }
}
