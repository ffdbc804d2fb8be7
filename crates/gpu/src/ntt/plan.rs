//! The transform's plan: DIF passes through workgroup memory by size and width, the bit
//! reversal's tiles, the split of a transform over chunks, and the kernels' parameters.

use super::*;

/// Threads per workgroup in ntt/*.wgsl.
pub(super) const WORKGROUP: u32 = 256;
/// Largest tile the DIF kernel uses (words): 16 KiB of workgroup memory. Measured faster than
/// 32 KiB tiles (twice the workgroups per SM hide more memory latency;
/// docs/benchmarks-history.md), and it fits WebGPU's default limit.
pub(super) const MAX_TILE_LOG: u32 = 12;
/// Sub-problems per tile in all but the last pass: 32 neighbours make 128-byte runs.
pub(super) const SPREAD_LOG: u32 = 5;
/// Words in the bit-reversal kernel's workgroup tile.
pub(super) const BITREV_TILE: usize = 4096;
/// Threads that touch the new pages of a host-to-host result growing its input's memory by a
/// transfer chunk or more, ahead of the readback.
pub(super) const PREFAULT_THREADS: usize = 8;
/// Low/high split of the coset power table.
pub(super) const SHIFT_SPLIT: usize = 2048;

/// Rust twin of `DifParams` in wgsl/ntt/dif_pass.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct DifParams {
    pub(super) log_n: u32,
    pub(super) width: u32,
    pub(super) stage0: u32,
    pub(super) log_t: u32,
    pub(super) log_p: u32,
    pub(super) valid_rows: u32,
    pub(super) use_shift: u32,
    pub(super) num_subproblems: u32,
}

/// Rust twin of `BitReverseParams` in wgsl/ntt/bit_reverse.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct BitReverseParams {
    pub(super) log_n: u32,
    pub(super) width: u32,
    pub(super) log_tile: u32,
    pub(super) use_scale: u32,
    pub(super) scale: u32,
    pub(super) num_groups: u32,
    pub(super) total: u32,
    pub(super) _pad: u32,
}

/// Forward (evaluate) or inverse (interpolate, without the 1/n factor unless asked) transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Evaluates: coefficients to values over the subgroup.
    Forward,
    /// Interpolates: values to coefficients (scaled by 1/n only where the spec asks).
    Inverse,
}

/// One transform over the columns of a row-major matrix.
#[derive(Clone, Debug)]
pub struct NttSpec<F = BabyBear> {
    /// log2 of the number of rows transformed.
    pub log_n: usize,
    /// Number of columns (independent transforms), at least 1.
    pub width: usize,
    /// Forward or inverse.
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
    /// The forward DFT of 2^log_n rows of `width` columns: every row present, no coset shift, no
    /// scale, output in natural order.
    pub fn forward(log_n: usize, width: usize) -> Self {
        Self { log_n, width, direction: Direction::Forward, valid_rows: 1 << log_n, coset_shift: None, scale: None, bit_reversed_output: false }
    }

    /// The inverse DFT, 1/n included.
    pub fn inverse(log_n: usize, width: usize) -> Self {
        Self { direction: Direction::Inverse, scale: Some(F::from_usize(1 << log_n).inverse()), ..Self::forward(log_n, width) }
    }

    /// Rows transformed: 2^log_n.
    pub fn rows(&self) -> usize {
        1 << self.log_n
    }

    pub(super) fn validate(&self) -> Result<()> {
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
    /// The first DIF stage the pass runs.
    pub stage0: u32,
    /// log2 of the stages it runs (sub-problems of 2^log_t elements).
    pub log_t: u32,
    /// log2 of the neighbouring sub-problems one workgroup takes.
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
pub(super) fn strided_passes(stages: u32, tile_log: u32) -> Vec<DifPassPlan> {
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
pub(super) fn bit_reverse_tile_log(log_n: u32, width: usize) -> u32 {
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
pub(super) enum Layout {
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
    pub(super) buffer: wgpu::Buffer,
    pub(super) chunk_bytes: u64,
    pub(super) pipeline: Arc<wgpu::ComputePipeline>,
    pub(super) twiddles: Arc<wgpu::Buffer>,
    /// Per pass: its parameters (sub-problems of one chunk) and workgroups.
    pub(super) passes: Vec<(wgpu::Buffer, u32)>,
}

impl ChunkPasses {
    /// The `ReadChunks::before_copy` hook of a readback whose chunks finish with `tail`'s
    /// passes (none: nothing to record).
    pub(super) fn recorder<'a>(ntt: &'a GpuNtt, tail: &'a Option<ChunkPasses>) -> impl Fn(&mut wgpu::CommandEncoder, usize) + 'a {
        move |encoder, i| {
            if let Some(tail) = tail {
                tail.record(ntt, encoder, i);
            }
        }
    }

    /// Records chunk `index`'s passes into `encoder`.
    pub(super) fn record(&self, ntt: &GpuNtt, encoder: &mut wgpu::CommandEncoder, index: usize) {
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

pub(super) fn dif_params<F: GpuField>(spec: &NttSpec<F>, pass: &DifPassPlan, first: bool, shifted: bool) -> DifParams {
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
pub(super) fn params_groups<F: GpuField>(spec: &NttSpec<F>, pass: &DifPassPlan) -> u32 {
    (((spec.rows() * spec.width) >> pass.log_t) as u32).div_ceil(1 << pass.log_p)
}

pub(super) fn bit_reverse_params<F: GpuField>(spec: &NttSpec<F>, k: u32, rows: usize) -> BitReverseParams {
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
pub(super) fn bit_reverse_tile_log_in_place(log_n: u32, width: usize) -> u32 {
    if !width.is_power_of_two() {
        return 0;
    }
    let mut k = (log_n / 2).min(5);
    while k > 0 && (width << (2 * k)) + (1 << k) > BITREV_TILE / 2 {
        k -= 1;
    }
    k
}
