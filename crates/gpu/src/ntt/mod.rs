//! The GPU NTT: radix-2 DIF passes through workgroup memory, then a tiled bit reversal, over
//! the columns of a row-major matrix of Montgomery words of a `GpuField` (BabyBear, KoalaBear). Output is in natural order,
//! matching Plonky3's `TwoAdicSubgroupDft` conventions.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use p3_baby_bear::BabyBear;

use crate::context::{Batch, Dispatch, GpuContext, ReadChunks};
use crate::error::{GpuError, Result};
use crate::field::{as_words, to_word, words_to, FieldId, GpuField};
use crate::shaders::Kernel;

mod host;
mod plan;

pub use host::*;
pub use plan::*;

/// Where an NTT reads its input and works ([`GpuNtt::record`]).
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
    /// NTTs on `ctx` with the largest DIF tile its workgroup memory allows (see
    /// [`with_tile_log`](Self::with_tile_log)).
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

    /// The GPU context the transforms run on.
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
    pub fn record_copy(&self, batch: &mut Batch<'_>, src: &wgpu::Buffer, dst: &wgpu::Buffer, words: usize) -> Result<()> {
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
        batch.record_as("copy", &[Dispatch { pipeline: (*pipeline).clone(), bind, groups: (count / 4).div_ceil(WORKGROUP) }]);
        Ok(())
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

    /// Records the transform of the spec.valid_rows x spec.width words (row-major) `source`
    /// names into `batch`, in the buffers it chooses, and returns the buffer that will hold the
    /// 2^log_n x width result (rows in natural order, or in the passes' bit-reversed order
    /// where the spec asks). The result is the caller's: hand it to the batch
    /// ([`Batch::lend`]) or keep it; any other work buffer goes back to the pool when the batch
    /// ends. Nothing is submitted: record further work on the result before the batch runs.
    pub fn record<F: GpuField>(&self, batch: &mut Batch<'_>, source: NttSource<'_>, spec: &NttSpec<F>) -> Result<wgpu::Buffer> {
        let (result, _) = match source {
            NttSource::TwoBuffers(src) => self.record_spec(batch, src, spec, Layout::TwoBuffers),
            NttSource::OneBuffer(src) => self.record_spec(batch, src, spec, Layout::OneBuffer { reuse_src: false, chunk_rows: None }),
            NttSource::GivenUp(src) => self.record_spec(batch, &src, spec, Layout::OneBuffer { reuse_src: true, chunk_rows: None }),
        }?;
        Ok(result)
    }

    /// [`record`](Self::record), with the passes left to run chunk by chunk where the layout
    /// asks for them.
    fn record_spec<F: GpuField>(
        &self,
        batch: &mut Batch<'_>,
        src: &wgpu::Buffer,
        spec: &NttSpec<F>,
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
            return self.record_in_one_buffer(batch, src, spec, &passes, twiddles, shift_table.as_ref(), reuse_src, chunk_rows);
        }
        let work = [self.work_buffer("ntt work a", total), self.work_buffer("ntt work b", total)];
        let dif = self.dif_pipeline(F::ID, false)?;

        // Which buffer holds the data before the next step: None means `src`.
        let mut current: Option<usize> = None;
        let mut kernels: Vec<(&'static str, Dispatch)> = Vec::new();
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
            kernels.push(("dif pass", Dispatch { pipeline: (*dif).clone(), bind, groups: params_groups(spec, pass) }));
            current = Some(out);
        }
        // Without passes (a single row) the source is copied through the reversal kernel; the
        // zero tail, if any, comes from zero-filling the output first.
        let out = current.map_or(0, |c| 1 - c);
        let input = current.map_or(src, |c| &work[c]);
        if current.is_none() && spec.valid_rows < spec.rows() {
            batch.clear(&work[out]);
        }
        let copied_rows = if current.is_none() { spec.valid_rows } else { spec.rows() };
        if spec.bit_reversed_output {
            // The DIF passes leave rows bit-reversed: the last pass's buffer is the result.
            self.record_kernels(batch, kernels);
            let [a, b] = work;
            let (result, spare) = if current == Some(0) { (a, b) } else { (b, a) };
            self.give_back(batch, spare);
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
            kernels.push(("bit reverse", Dispatch { pipeline: (*pipeline).clone(), bind, groups }));
        }
        self.record_kernels(batch, kernels);
        let [a, b] = work;
        let (result, spare) = if out == 0 { (a, b) } else { (b, a) };
        self.give_back(batch, spare);
        Ok((result, None))
    }

    /// `record_spec` in one work buffer (or the source's own, given up): the passes recorded
    /// up front, or the last ones left to run chunk by chunk where `chunk_rows` asks for it.
    #[allow(clippy::too_many_arguments)]
    fn record_in_one_buffer<F: GpuField>(
        &self,
        batch: &mut Batch<'_>,
        src: &wgpu::Buffer,
        spec: &NttSpec<F>,
        passes: &[DifPassPlan],
        twiddles: std::sync::Arc<wgpu::Buffer>,
        shift_table: Option<&wgpu::Buffer>,
        reuse_src: bool,
        chunk_rows: Option<usize>,
    ) -> Result<(wgpu::Buffer, Option<ChunkPasses>)> {
        let (log_n, total) = (spec.log_n as u32, spec.rows() * spec.width);
        let whole = spec.valid_rows == spec.rows() && src.size() == (total * 4) as u64;
        let target = if reuse_src && whole { src.clone() } else { self.work_buffer("ntt work", total) };
        let in_src = reuse_src && whole;
        // Chunk by chunk only for output in the passes' own order, untimed.
        let split = chunk_rows
            .filter(|_| spec.bit_reversed_output && !batch.is_timed())
            .and_then(|rows| plan_split(log_n, spec.width, self.tile_log, rows).map(|(plan, at)| (plan, at, rows)));
        let (up_front, chunked): (&[DifPassPlan], Option<(&[DifPassPlan], usize)>) = match &split {
            Some((plan, at, rows)) => (&plan[..*at], Some((&plan[*at..], *rows))),
            None => (passes, None),
        };
        let result = self.record_one_buffer(batch, src, target, in_src, spec, up_front, &twiddles, shift_table)?;
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
        Ok((result, tail))
    }

    /// A work buffer the transform no longer needs, back to the pool when the batch ends (with
    /// poisoned outputs, testing, dropped: a fresh poisoned one each time).
    fn give_back(&self, batch: &mut Batch<'_>, spare: wgpu::Buffer) {
        if !self.poison.load(Ordering::Relaxed) {
            batch.lend(spare);
        }
    }

    /// Records a transform's kernels: one compute pass, or in a timed batch a pass each under
    /// its own label.
    fn record_kernels(&self, batch: &mut Batch<'_>, kernels: Vec<(&'static str, Dispatch)>) {
        if batch.is_timed() {
            for (label, d) in kernels {
                batch.record_as(label, &[d]);
            }
        } else {
            let dispatches: Vec<Dispatch> = kernels.into_iter().map(|(_, d)| d).collect();
            batch.record_as("ntt", &dispatches);
        }
    }

    /// The transform in `target` alone: the first pass reads `src` into it (or, `in_src`,
    /// `target` is `src` and every pass runs in place), later passes and the bit reversal in place.
    #[allow(clippy::too_many_arguments)]
    fn record_one_buffer<F: GpuField>(
        &self,
        batch: &mut Batch<'_>,
        src: &wgpu::Buffer,
        target: wgpu::Buffer,
        in_src: bool,
        spec: &NttSpec<F>,
        passes: &[DifPassPlan],
        twiddles: &wgpu::Buffer,
        shift_table: Option<&wgpu::Buffer>,
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
            dispatches.push(("dif pass", Dispatch { pipeline: (**pipeline).clone(), bind, groups }));
        }
        if spec.bit_reversed_output {
            // The DIF passes' own order is the result.
            self.record_kernels(batch, dispatches);
            return Ok(target);
        }
        let k = bit_reverse_tile_log_in_place(spec.log_n as u32, spec.width);
        let params = bit_reverse_params(spec, k, spec.rows());
        let (kernel, groups) =
            if k > 0 { (Kernel::BitReverseTiledInPlace, params.num_groups) } else { (Kernel::BitReverseRowsInPlace, params.total.div_ceil(WORKGROUP)) };
        let pipeline = self.ctx.pipeline_for(F::ID, kernel, &[])?;
        let uniform = self.ctx.uniform("bit reverse params", &params);
        let bind = self.bind(&pipeline, &[&uniform, &self.empty, &target]);
        dispatches.push(("bit reverse", Dispatch { pipeline: (*pipeline).clone(), bind, groups }));
        self.record_kernels(batch, dispatches);
        Ok(target)
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
            let mut batch = self.ctx.batch("ntt");
            let (buffer, _) = self.record_chain_from(&mut batch, values, specs, None)?;
            let slot = batch.read(&buffer, 0, last.rows() * last.width);
            batch.lend(buffer);
            let readback = self.ctx.run(batch)?;
            words_to::<F>(readback.into_words(slot)?)
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
    /// `specs` one after another into `batch`: the result buffer (the caller's), and with
    /// `chunk_rows` the last transform's passes left to run chunk by chunk, if any.
    fn record_chain_from<F: GpuField>(
        &self,
        batch: &mut Batch<'_>,
        values: &[F],
        specs: &[NttSpec<F>],
        chunk_rows: Option<usize>,
    ) -> Result<(wgpu::Buffer, Option<ChunkPasses>)> {
        self.ctx.check_binding_size("NTT input", (values.len() * 4) as u64)?;
        let buffer = self.ctx.pooled_for_upload("ntt input", values.len());
        self.ctx.write(&buffer, as_words(values));
        self.record_specs(batch, buffer, specs, chunk_rows)
    }

    /// Records `specs` one after another starting from `input`: the result buffer (the
    /// caller's; the buffers before it go back to the pool with the batch), and the last
    /// transform's passes left to run in chunks of `chunk_rows` rows.
    fn record_specs<F: GpuField>(
        &self,
        batch: &mut Batch<'_>,
        mut buffer: wgpu::Buffer,
        specs: &[NttSpec<F>],
        chunk_rows: Option<usize>,
    ) -> Result<(wgpu::Buffer, Option<ChunkPasses>)> {
        let mut tail = None;
        for (i, spec) in specs.iter().enumerate() {
            // One buffer: a full-size input is transformed where it lies (a third of the
            // memory of two work buffers, and the same speed or better;
            // docs/benchmarks-history.md); a shorter one is read into a buffer of the result's
            // size. (With poisoned outputs, testing, always the latter, so that a word a kernel
            // fails to write shows.)
            let reuse_src = !self.poison.load(Ordering::Relaxed);
            let chunk_rows = chunk_rows.filter(|_| i + 1 == specs.len());
            let next = match self.record_spec(batch, &buffer, spec, Layout::OneBuffer { reuse_src, chunk_rows }) {
                Ok((next, last_tail)) => {
                    tail = last_tail;
                    next
                }
                Err(e) => {
                    batch.lend(buffer);
                    return Err(e);
                }
            };
            // The result is the input itself where the transform ran in it.
            let before = std::mem::replace(&mut buffer, next);
            if before != buffer {
                batch.lend(before);
            }
        }
        Ok((buffer, tail))
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
    /// first column and width, once the block is read back, with a batch sent right after:
    /// record work on it there.
    pub block: &'a dyn Fn(&mut Batch<'_>, &wgpu::Buffer, usize, usize),
    /// After the last block (also when no block of the multiple fitted and `block` was never
    /// called).
    pub blocks_done: &'a dyn Fn(),
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
