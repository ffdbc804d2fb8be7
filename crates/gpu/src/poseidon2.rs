//! Poseidon2 of width 16 or 24 on the GPU over BabyBear (x^7; 13 / 21 internal rounds) or
//! KoalaBear (x^3; 20 / 23 internal rounds), buildable from exactly the constants of any Plonky3
//! `Poseidon2BabyBear<W>` / `Poseidon2KoalaBear<W>`: the default ones, explicit ones, or ones
//! drawn from a seeded RNG the way `new_from_rng_128` draws them.

use std::sync::Arc;

use p3_baby_bear::{
    BabyBear, Poseidon2BabyBear, BABYBEAR_POSEIDON2_RC_16_EXTERNAL_FINAL, BABYBEAR_POSEIDON2_RC_16_EXTERNAL_INITIAL, BABYBEAR_POSEIDON2_RC_16_INTERNAL,
    BABYBEAR_POSEIDON2_RC_24_EXTERNAL_FINAL, BABYBEAR_POSEIDON2_RC_24_EXTERNAL_INITIAL, BABYBEAR_POSEIDON2_RC_24_INTERNAL, BABYBEAR_S_BOX_DEGREE,
};
use p3_field::Field;
use p3_koala_bear::{
    KoalaBear, Poseidon2KoalaBear, KOALABEAR_POSEIDON2_RC_16_EXTERNAL_FINAL, KOALABEAR_POSEIDON2_RC_16_EXTERNAL_INITIAL, KOALABEAR_POSEIDON2_RC_16_INTERNAL,
    KOALABEAR_POSEIDON2_RC_24_EXTERNAL_FINAL, KOALABEAR_POSEIDON2_RC_24_EXTERNAL_INITIAL, KOALABEAR_POSEIDON2_RC_24_INTERNAL, KOALABEAR_S_BOX_DEGREE,
};
use p3_poseidon2::{poseidon2_round_numbers_128, ExternalLayerConstants};
use p3_symmetric::CryptographicPermutation;
use rand::distr::{Distribution, StandardUniform};
use rand::{Rng, RngExt};

use crate::context::{Batch, Dispatch, GpuContext};
use crate::error::{GpuError, Result};
use crate::field::{as_words, words_to, GpuField};
use crate::shaders::Kernel;

/// State width.
pub const WIDTH: usize = 16;
/// External rounds before and after the internal ones.
pub const HALF_FULL_ROUNDS: usize = 4;
/// Internal rounds over BabyBear.
pub const PARTIAL_ROUNDS: usize = 13;

/// A field whose Poseidon2 of width 16 and 24 the GPU runs: its S-box is in
/// `wgsl/poseidon2/<field>.wgsl`, its internal rounds and diagonal in `wgsl/poseidon2/<field>16.wgsl`
/// and `<field>24.wgsl`; round constants are uploaded.
pub trait Poseidon2Field: GpuField {
    /// Plonky3's permutation of the same constants.
    type Permutation16: CryptographicPermutation<[Self; WIDTH]> + CryptographicPermutation<[<Self as Field>::Packing; WIDTH]> + Clone + Send + Sync;
    /// Plonky3's permutation of width 24.
    type Permutation24: CryptographicPermutation<[Self; WIDE]> + CryptographicPermutation<[<Self as Field>::Packing; WIDE]> + Clone + Send + Sync;
    /// Degree of the S-box (x^d).
    const SBOX_DEGREE: u64;
    /// Internal rounds (`P2_PARTIAL_ROUNDS` in the field's WGSL).
    const PARTIAL_ROUNDS: usize;
    /// Internal rounds at width 24 (`P2_24_PARTIAL_ROUNDS`).
    const PARTIAL_ROUNDS_24: usize;
    /// Plonky3's default round constants: initial, terminal, internal.
    fn default_constants() -> (Vec<[Self; WIDTH]>, Vec<[Self; WIDTH]>, Vec<Self>);
    /// Plonky3's width-16 permutation with these constants.
    fn permutation(external: ExternalLayerConstants<Self, WIDTH>, internal: Vec<Self>) -> Self::Permutation16;
    /// The same at width 24.
    fn default_constants_24() -> (Vec<[Self; WIDE]>, Vec<[Self; WIDE]>, Vec<Self>);
    /// Plonky3's width-24 permutation with these constants.
    fn permutation_24(external: ExternalLayerConstants<Self, WIDE>, internal: Vec<Self>) -> Self::Permutation24;
}

impl Poseidon2Field for BabyBear {
    type Permutation16 = Poseidon2BabyBear<WIDTH>;
    type Permutation24 = Poseidon2BabyBear<WIDE>;
    const SBOX_DEGREE: u64 = BABYBEAR_S_BOX_DEGREE;
    const PARTIAL_ROUNDS: usize = PARTIAL_ROUNDS;
    const PARTIAL_ROUNDS_24: usize = 21;
    fn default_constants() -> (Vec<[Self; WIDTH]>, Vec<[Self; WIDTH]>, Vec<Self>) {
        (BABYBEAR_POSEIDON2_RC_16_EXTERNAL_INITIAL.to_vec(), BABYBEAR_POSEIDON2_RC_16_EXTERNAL_FINAL.to_vec(), BABYBEAR_POSEIDON2_RC_16_INTERNAL.to_vec())
    }
    fn permutation(external: ExternalLayerConstants<Self, WIDTH>, internal: Vec<Self>) -> Self::Permutation16 {
        Poseidon2BabyBear::new(external, internal)
    }
    fn default_constants_24() -> (Vec<[Self; WIDE]>, Vec<[Self; WIDE]>, Vec<Self>) {
        (BABYBEAR_POSEIDON2_RC_24_EXTERNAL_INITIAL.to_vec(), BABYBEAR_POSEIDON2_RC_24_EXTERNAL_FINAL.to_vec(), BABYBEAR_POSEIDON2_RC_24_INTERNAL.to_vec())
    }
    fn permutation_24(external: ExternalLayerConstants<Self, WIDE>, internal: Vec<Self>) -> Self::Permutation24 {
        Poseidon2BabyBear::new(external, internal)
    }
}

impl Poseidon2Field for KoalaBear {
    type Permutation16 = Poseidon2KoalaBear<WIDTH>;
    type Permutation24 = Poseidon2KoalaBear<WIDE>;
    const SBOX_DEGREE: u64 = KOALABEAR_S_BOX_DEGREE;
    const PARTIAL_ROUNDS: usize = 20;
    const PARTIAL_ROUNDS_24: usize = 23;
    fn default_constants() -> (Vec<[Self; WIDTH]>, Vec<[Self; WIDTH]>, Vec<Self>) {
        (KOALABEAR_POSEIDON2_RC_16_EXTERNAL_INITIAL.to_vec(), KOALABEAR_POSEIDON2_RC_16_EXTERNAL_FINAL.to_vec(), KOALABEAR_POSEIDON2_RC_16_INTERNAL.to_vec())
    }
    fn permutation(external: ExternalLayerConstants<Self, WIDTH>, internal: Vec<Self>) -> Self::Permutation16 {
        Poseidon2KoalaBear::new(external, internal)
    }
    fn default_constants_24() -> (Vec<[Self; WIDE]>, Vec<[Self; WIDE]>, Vec<Self>) {
        (KOALABEAR_POSEIDON2_RC_24_EXTERNAL_INITIAL.to_vec(), KOALABEAR_POSEIDON2_RC_24_EXTERNAL_FINAL.to_vec(), KOALABEAR_POSEIDON2_RC_24_INTERNAL.to_vec())
    }
    fn permutation_24(external: ExternalLayerConstants<Self, WIDE>, internal: Vec<Self>) -> Self::Permutation24 {
        Poseidon2KoalaBear::new(external, internal)
    }
}

/// Poseidon2 of width `W` (16 or 24) over a field, as the GPU runs it: Plonky3's permutation
/// of the same constants, the internal rounds its WGSL runs (`poseidon2/<field><W>.wgsl`), the
/// default constants and the batch kernel.
pub trait Poseidon2Width<const W: usize>: Poseidon2Field {
    /// Plonky3's permutation of width `W`.
    type Permutation: CryptographicPermutation<[Self; W]> + Clone + Send + Sync;
    /// Internal rounds at width `W`.
    const PARTIAL_ROUNDS: usize;
    /// One thread a state, `W` words each.
    const BATCH_KERNEL: Kernel;
    /// Where kernels declare this width's round constants (wgsl/poseidon2/permutation.wgsl: 0,
    /// permutation24.wgsl: 10, so that one kernel may hold both).
    const CONSTANTS_BINDING: u32;
    /// Plonky3's default round constants: initial, terminal, internal.
    fn default_constants() -> (Vec<[Self; W]>, Vec<[Self; W]>, Vec<Self>);
    /// Plonky3's permutation of width `W` with these constants.
    fn permutation(external: ExternalLayerConstants<Self, W>, internal: Vec<Self>) -> Self::Permutation;
}

impl<F: Poseidon2Field> Poseidon2Width<WIDTH> for F {
    type Permutation = F::Permutation16;
    const PARTIAL_ROUNDS: usize = <F as Poseidon2Field>::PARTIAL_ROUNDS;
    const BATCH_KERNEL: Kernel = Kernel::Poseidon2Batch;
    const CONSTANTS_BINDING: u32 = 0;
    fn default_constants() -> (Vec<[Self; WIDTH]>, Vec<[Self; WIDTH]>, Vec<Self>) {
        <F as Poseidon2Field>::default_constants()
    }
    fn permutation(external: ExternalLayerConstants<Self, WIDTH>, internal: Vec<Self>) -> Self::Permutation {
        <F as Poseidon2Field>::permutation(external, internal)
    }
}

/// The wide state: Plonky3's `Poseidon2BabyBear<24>` / `Poseidon2KoalaBear<24>`.
pub const WIDE: usize = 24;

impl<F: Poseidon2Field> Poseidon2Width<WIDE> for F {
    type Permutation = F::Permutation24;
    const PARTIAL_ROUNDS: usize = F::PARTIAL_ROUNDS_24;
    const BATCH_KERNEL: Kernel = Kernel::Poseidon2Batch24;
    const CONSTANTS_BINDING: u32 = 10;
    fn default_constants() -> (Vec<[Self; WIDE]>, Vec<[Self; WIDE]>, Vec<Self>) {
        F::default_constants_24()
    }
    fn permutation(external: ExternalLayerConstants<Self, WIDE>, internal: Vec<Self>) -> Self::Permutation {
        F::permutation_24(external, internal)
    }
}

/// The round constants of one Poseidon2 instance of width `W` over `F`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Poseidon2Constants<F = BabyBear, const W: usize = WIDTH> {
    /// Round constants of the external rounds before the internal ones, a state each.
    pub initial: Vec<[F; W]>,
    /// Round constants of the external rounds after the internal ones, a state each.
    pub terminal: Vec<[F; W]>,
    /// One round constant per internal round.
    pub internal: Vec<F>,
}

impl Poseidon2Constants<BabyBear> {
    /// The constants of `p3_baby_bear::default_babybear_poseidon2_16()`.
    pub fn default_babybear() -> Self {
        Self::plonky3_default()
    }
}

impl<F: Poseidon2Width<W>, const W: usize> Poseidon2Constants<F, W> {
    /// Plonky3's default constants for the field and width (`default_babybear_poseidon2_16()`,
    /// `default_koalabear_poseidon2_24()`, ...).
    pub fn plonky3_default() -> Self {
        let (initial, terminal, internal) = <F as Poseidon2Width<W>>::default_constants();
        Self { initial, terminal, internal }
    }

    /// Explicit constants; the GPU kernel is built for 4 + the width's internal rounds + 4.
    pub fn new(external: ExternalLayerConstants<F, W>, internal: Vec<F>) -> Result<Self> {
        let partial = <F as Poseidon2Width<W>>::PARTIAL_ROUNDS;
        let c = Self { initial: external.get_initial_constants().to_vec(), terminal: external.get_terminal_constants().to_vec(), internal };
        if c.initial.len() != HALF_FULL_ROUNDS || c.terminal.len() != HALF_FULL_ROUNDS || c.internal.len() != partial {
            return Err(GpuError::InvalidInput(format!(
                "GPU Poseidon2 of width {W} over {} runs {HALF_FULL_ROUNDS} + {partial} + {HALF_FULL_ROUNDS} rounds; got {} + {} + {} round constants",
                F::ID.name(),
                c.initial.len(),
                c.internal.len(),
                c.terminal.len()
            )));
        }
        Ok(c)
    }

    /// Draws constants from `rng` in the order Plonky3's `new_from_rng_128` does, so the same
    /// seed gives the same permutation on both sides.
    pub fn new_from_rng_128<R: Rng>(rng: &mut R) -> Self
    where
        StandardUniform: Distribution<F>,
    {
        let (rounds_f, rounds_p) =
            poseidon2_round_numbers_128::<F>(W, F::SBOX_DEGREE).expect("Plonky3 defines Poseidon2 round numbers for widths 16 and 24 over this field");
        let external = ExternalLayerConstants::<F, W>::new_from_rng(rounds_f, rng);
        let internal: Vec<F> = rng.sample_iter(StandardUniform).take(rounds_p).collect();
        Self::new(external, internal).expect("Plonky3's round numbers are the kernel's")
    }

    /// The same permutation on the CPU (Plonky3).
    pub fn to_cpu(&self) -> <F as Poseidon2Width<W>>::Permutation {
        <F as Poseidon2Width<W>>::permutation(ExternalLayerConstants::new(self.initial.clone(), self.terminal.clone()), self.internal.clone())
    }

    /// The constants uniform's words: initial, terminal, internal, padded to whole vec4s
    /// (`P2_CONSTANT_VEC4S` in the field's WGSL).
    fn words(&self) -> Vec<u32> {
        let len = (2 * HALF_FULL_ROUNDS * W + <F as Poseidon2Width<W>>::PARTIAL_ROUNDS).next_multiple_of(4);
        let mut w: Vec<u32> = Vec::with_capacity(len);
        for round in self.initial.iter().chain(&self.terminal) {
            w.extend_from_slice(as_words(round));
        }
        w.extend_from_slice(as_words(&self.internal));
        w.resize(len, 0);
        w
    }
}

/// A Poseidon2 permutation of width `W` over `F` on one GPU context; constants live in a
/// uniform buffer.
pub struct GpuPoseidon2<F = BabyBear, const W: usize = WIDTH> {
    ctx: Arc<GpuContext>,
    constants: Poseidon2Constants<F, W>,
    uniform: wgpu::Buffer,
}

impl<F: Poseidon2Width<W>, const W: usize> GpuPoseidon2<F, W> {
    /// The permutation with `constants` on `ctx`, the constants uploaded once.
    pub fn new(ctx: Arc<GpuContext>, constants: Poseidon2Constants<F, W>) -> Self {
        let words = constants.words();
        let uniform = ctx.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("poseidon2 constants"),
            size: (words.len() * 4) as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ctx.write(&uniform, &words);
        Self { ctx, constants, uniform }
    }

    /// The GPU context it runs on.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// Its round constants.
    pub fn constants(&self) -> &Poseidon2Constants<F, W> {
        &self.constants
    }

    /// The constants' uniform, bound at [`Poseidon2Width::CONSTANTS_BINDING`].
    pub(crate) fn uniform(&self) -> &wgpu::Buffer {
        &self.uniform
    }

    /// The constants at their binding and `ranges` at 1, 2, ...: for this width's own batch kernel.
    fn bind_own_ranges(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        let all: Vec<(u32, &wgpu::Buffer, u64, Option<u64>)> = std::iter::once((<F as Poseidon2Width<W>>::CONSTANTS_BINDING, &self.uniform, 0, None))
            .chain(ranges.iter().enumerate().map(|(i, &(b, offset, size))| (i as u32 + 1, b, offset, size)))
            .collect();
        self.ctx.bind_at(pipeline, &all)
    }

    /// Records the permutation of `count` states in `input` into `output` (`W` words each).
    /// More states than one binding holds are permuted range by range, each dispatch binding
    /// its part of both buffers.
    pub fn record_permute(&self, batch: &mut Batch<'_>, input: &wgpu::Buffer, output: &wgpu::Buffer, count: usize) -> Result<()> {
        self.record_batch(batch, <F as Poseidon2Width<W>>::BATCH_KERNEL, 1, input, output, count)
    }

    /// `record_permute` through `kernel`, `threads_per_state` invocations a state.
    fn record_batch(
        &self,
        batch: &mut Batch<'_>,
        kernel: Kernel,
        threads_per_state: usize,
        input: &wgpu::Buffer,
        output: &wgpu::Buffer,
        count: usize,
    ) -> Result<()> {
        let bytes = crate::field::matrix_bytes(count, W)?;
        if input.size() < bytes || output.size() < bytes {
            return Err(GpuError::InvalidInput(format!("buffers hold fewer than {count} states")));
        }
        let state_bytes = (W * 4) as u64;
        // Whole multiples of `unit` states: range offsets stay multiples of the adapter's storage
        // offset alignment (at 256 bytes: 4 states of width 16, 8 of width 24).
        let align = u64::from(self.ctx.limits().min_storage_buffer_offset_alignment).max(1);
        let unit = (align / gcd(state_bytes, align)) as usize;
        let per_range = ((self.ctx.max_binding_bytes() / state_bytes) as usize / unit * unit).max(unit);
        let pipeline = self.ctx.pipeline_for(F::ID, kernel, &[])?;
        let mut dispatches = Vec::new();
        for first in (0..count).step_by(per_range) {
            let n = per_range.min(count - first);
            let params = self.ctx.uniform("poseidon2 params", &[n as u32, 0, 0, 0]);
            let (offset, size) = (first as u64 * state_bytes, n as u64 * state_bytes);
            let bind = self.bind_own_ranges(&pipeline, &[(&params, 0, None), (input, offset, Some(size)), (output, offset, Some(size))]);
            let groups = workgroups_of_64(n.saturating_mul(threads_per_state))?;
            dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups });
        }
        batch.record_as("poseidon2", &dispatches);
        Ok(())
    }

    /// Host to host: permutes every state.
    pub fn permute_batch(&self, states: &[[F; W]]) -> Result<Vec<[F; W]>> {
        self.permute_host(states, <F as Poseidon2Width<W>>::BATCH_KERNEL, 1)
    }

    fn permute_host(&self, states: &[[F; W]], kernel: Kernel, threads_per_state: usize) -> Result<Vec<[F; W]>> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let flat: Vec<F> = states.iter().flatten().copied().collect();
        self.ctx.scoped("Poseidon2 batch", || {
            let mut batch = self.ctx.batch("poseidon2");
            let input = batch.upload("poseidon2 in", as_words(&flat));
            let output = batch.scratch("poseidon2 out", flat.len());
            self.record_batch(&mut batch, kernel, threads_per_state, &input, &output, states.len())?;
            let slot = batch.read(&output, 0, flat.len());
            let words = self.ctx.run(batch)?.into_words(slot)?;
            Ok(words_to::<F>(words)?.chunks_exact(W).map(|c| c.try_into().expect("chunks of W")).collect())
        })
    }
}

/// Width 16, each state spread over 16 invocations (wgsl/poseidon2/lanes.wgsl): the same
/// permutation at a fraction of one thread's latency, for few states at a time.
impl<F: Poseidon2Field> GpuPoseidon2<F, WIDTH> {
    /// [`record_permute`](Self::record_permute) with a state's permutation over 16 invocations.
    pub fn record_permute_lanes(&self, batch: &mut Batch<'_>, input: &wgpu::Buffer, output: &wgpu::Buffer, count: usize) -> Result<()> {
        self.record_batch(batch, Kernel::Poseidon2Lanes, WIDTH, input, output, count)
    }

    /// Host to host, a state's permutation over 16 invocations.
    pub fn permute_batch_lanes(&self, states: &[[F; WIDTH]]) -> Result<Vec<[F; WIDTH]>> {
        self.permute_host(states, Kernel::Poseidon2Lanes, WIDTH)
    }
}

/// Binding the width-16 constants: only kernels of width 16 declare a uniform of their size.
impl<F: Poseidon2Field> GpuPoseidon2<F, WIDTH> {
    /// Binds the width-16 constants at binding 0 and `buffers` at bindings 1, 2, ... (a uniform, then the
    /// kernel's storage buffers), for kernels built on poseidon2/permutation.wgsl (width 16: its
    /// uniform declares this width's constants).
    pub(crate) fn bind(&self, pipeline: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        let all: Vec<&wgpu::Buffer> = std::iter::once(&self.uniform).chain(buffers.iter().copied()).collect();
        self.ctx.bind_buffers(pipeline, &all)
    }

    /// [`bind`](Self::bind) with byte ranges (see `GpuPipelines::bind_ranges`).
    pub(crate) fn bind_ranges(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        let all: Vec<(&wgpu::Buffer, u64, Option<u64>)> = std::iter::once((&self.uniform, 0, None)).chain(ranges.iter().copied()).collect();
        self.ctx.bind_ranges(pipeline, &all)
    }

    /// One dispatch of `kernel` over `threads` threads (64 per workgroup), `buffers` at bindings
    /// 1, 2, ... (its params uniform first), to be recorded with others in one pass
    /// (`GpuPipelines::record_dispatches`).
    pub(crate) fn prepare(&self, kernel: Kernel, buffers: &[&wgpu::Buffer], threads: usize) -> Result<Dispatch> {
        let groups = workgroups_of_64(threads)?;
        let pipeline = self.ctx.pipeline_for(F::ID, kernel, &[])?;
        let bind = self.bind(&pipeline, buffers);
        Ok(Dispatch { pipeline: (*pipeline).clone(), bind, groups })
    }
}

/// Workgroups of 64 for `threads` threads, or an error past one dispatch's 32-bit count.
pub(crate) fn workgroups_of_64(threads: usize) -> Result<u32> {
    u32::try_from(threads.div_ceil(64)).map_err(|_| GpuError::InvalidInput(format!("{threads} threads exceed one dispatch's 32-bit workgroup count")))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
