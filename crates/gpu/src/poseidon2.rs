//! Poseidon2 (BabyBear, width 16) on the GPU, buildable from exactly the constants of any
//! Plonky3 `Poseidon2BabyBear<16>`: the default ones, explicit ones, or ones drawn from a seeded
//! RNG the way `Poseidon2BabyBear::<16>::new_from_rng_128` draws them.

use std::sync::Arc;

use p3_baby_bear::{
    BabyBear, Poseidon2BabyBear, BABYBEAR_POSEIDON2_RC_16_EXTERNAL_FINAL,
    BABYBEAR_POSEIDON2_RC_16_EXTERNAL_INITIAL, BABYBEAR_POSEIDON2_RC_16_INTERNAL,
};
use p3_poseidon2::{poseidon2_round_numbers_128, ExternalLayerConstants};
use rand::distr::StandardUniform;
use rand::{Rng, RngExt};

use crate::context::{Dispatch, GpuContext};
use crate::error::{GpuError, Result};
use crate::field::{as_words, from_words};
use crate::shaders::Kernel;

/// State width.
pub const WIDTH: usize = 16;
/// External rounds before and after the internal ones.
pub const HALF_FULL_ROUNDS: usize = 4;
/// Internal rounds.
pub const PARTIAL_ROUNDS: usize = 13;
/// Words in the constants uniform (141 used, padded to whole vec4s).
const CONSTANT_WORDS: usize = 144;

/// The round constants of one Poseidon2 instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Poseidon2Constants {
    pub initial: Vec<[BabyBear; WIDTH]>,
    pub terminal: Vec<[BabyBear; WIDTH]>,
    pub internal: Vec<BabyBear>,
}

impl Poseidon2Constants {
    /// The constants of `p3_baby_bear::default_babybear_poseidon2_16()`.
    pub fn default_babybear() -> Self {
        Self {
            initial: BABYBEAR_POSEIDON2_RC_16_EXTERNAL_INITIAL.to_vec(),
            terminal: BABYBEAR_POSEIDON2_RC_16_EXTERNAL_FINAL.to_vec(),
            internal: BABYBEAR_POSEIDON2_RC_16_INTERNAL.to_vec(),
        }
    }

    /// Explicit constants; the GPU kernel is built for 4 + 13 + 4 rounds.
    pub fn new(external: ExternalLayerConstants<BabyBear, WIDTH>, internal: Vec<BabyBear>) -> Result<Self> {
        let c = Self {
            initial: external.get_initial_constants().to_vec(),
            terminal: external.get_terminal_constants().to_vec(),
            internal,
        };
        if c.initial.len() != HALF_FULL_ROUNDS || c.terminal.len() != HALF_FULL_ROUNDS || c.internal.len() != PARTIAL_ROUNDS {
            return Err(GpuError::InvalidInput(format!(
                "GPU Poseidon2 runs {HALF_FULL_ROUNDS} + {PARTIAL_ROUNDS} + {HALF_FULL_ROUNDS} rounds; got {} + {} + {} round constants",
                c.initial.len(),
                c.internal.len(),
                c.terminal.len()
            )));
        }
        Ok(c)
    }

    /// Draws constants from `rng` in the order `Poseidon2BabyBear::<16>::new_from_rng_128` does,
    /// so the same seed gives the same permutation on both sides.
    pub fn new_from_rng_128<R: Rng>(rng: &mut R) -> Self {
        let (rounds_f, rounds_p) = poseidon2_round_numbers_128::<BabyBear>(WIDTH, 7)
            .expect("Plonky3 defines Poseidon2 round numbers for BabyBear width 16");
        let external = ExternalLayerConstants::<BabyBear, WIDTH>::new_from_rng(rounds_f, rng);
        let internal: Vec<BabyBear> = rng.sample_iter(StandardUniform).take(rounds_p).collect();
        Self::new(external, internal).expect("BabyBear width 16 has 8 external and 13 internal rounds")
    }

    /// The same permutation on the CPU (Plonky3).
    pub fn to_cpu(&self) -> Poseidon2BabyBear<WIDTH> {
        Poseidon2BabyBear::new(
            ExternalLayerConstants::new(self.initial.clone(), self.terminal.clone()),
            self.internal.clone(),
        )
    }

    fn words(&self) -> Vec<u32> {
        let mut w: Vec<u32> = Vec::with_capacity(CONSTANT_WORDS);
        for round in self.initial.iter().chain(&self.terminal) {
            w.extend_from_slice(as_words(round));
        }
        w.extend_from_slice(as_words(&self.internal));
        w.resize(CONSTANT_WORDS, 0);
        w
    }
}

/// A Poseidon2 permutation on one GPU context; constants live in a uniform buffer.
pub struct GpuPoseidon2 {
    ctx: Arc<GpuContext>,
    constants: Poseidon2Constants,
    uniform: wgpu::Buffer,
}

impl GpuPoseidon2 {
    pub fn new(ctx: Arc<GpuContext>, constants: Poseidon2Constants) -> Self {
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

    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    pub fn constants(&self) -> &Poseidon2Constants {
        &self.constants
    }

    /// Binds the constants at binding 0 and `buffers` at bindings 1, 2, ... (a uniform, then the
    /// kernel's storage buffers).
    pub(crate) fn bind(&self, pipeline: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        let all: Vec<&wgpu::Buffer> = std::iter::once(&self.uniform).chain(buffers.iter().copied()).collect();
        self.ctx.bind_buffers(pipeline, &all)
    }

    /// [`bind`](Self::bind) with byte ranges (see `GpuContext::bind_ranges`).
    pub(crate) fn bind_ranges(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        let all: Vec<(&wgpu::Buffer, u64, Option<u64>)> = std::iter::once((&self.uniform, 0, None)).chain(ranges.iter().copied()).collect();
        self.ctx.bind_ranges(pipeline, &all)
    }

    /// One dispatch of `kernel` over `threads` threads (64 per workgroup), `buffers` at bindings
    /// 1, 2, ... (its params uniform first), to be recorded with others in one pass
    /// (`GpuContext::record_dispatches`).
    pub(crate) fn prepare(&self, kernel: Kernel, buffers: &[&wgpu::Buffer], threads: usize) -> Result<Dispatch> {
        let groups = u32::try_from(threads.div_ceil(64))
            .map_err(|_| GpuError::InvalidInput(format!("{threads} threads exceed one dispatch's 32-bit workgroup count")))?;
        let pipeline = self.ctx.pipeline(kernel, &[])?;
        let bind = self.bind(&pipeline, buffers);
        Ok(Dispatch { pipeline: (*pipeline).clone(), bind, groups })
    }

    /// Records the permutation of `count` states in `input` into `output` (16 words each).
    /// More states than one binding holds are permuted range by range, each dispatch binding
    /// its part of both buffers.
    pub fn record_permute(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        input: &wgpu::Buffer,
        output: &wgpu::Buffer,
        count: usize,
    ) -> Result<()> {
        let bytes = crate::field::matrix_bytes(count, WIDTH)?;
        if input.size() < bytes || output.size() < bytes {
            return Err(GpuError::InvalidInput(format!("buffers hold fewer than {count} states")));
        }
        let state_bytes = (WIDTH * 4) as u64;
        // Whole multiples of 4 states: range offsets stay multiples of 256 bytes.
        let per_range = ((self.ctx.max_binding_bytes() / state_bytes) as usize / 4 * 4).max(4);
        let pipeline = self.ctx.pipeline(Kernel::Poseidon2Batch, &[])?;
        let mut dispatches = Vec::new();
        for first in (0..count).step_by(per_range) {
            let n = per_range.min(count - first);
            let params = self.ctx.uniform("poseidon2 params", &[n as u32, 0, 0, 0]);
            let (offset, size) = (first as u64 * state_bytes, n as u64 * state_bytes);
            let bind = self.bind_ranges(&pipeline, &[(&params, 0, None), (input, offset, Some(size)), (output, offset, Some(size))]);
            let groups = u32::try_from(n.div_ceil(64)).map_err(|_| GpuError::InvalidInput(format!("{n} states exceed one dispatch")))?;
            dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups });
        }
        self.ctx.record_dispatches(encoder, "poseidon2", &dispatches);
        Ok(())
    }

    /// Host to host: permutes every state.
    pub fn permute_batch(&self, states: &[[BabyBear; WIDTH]]) -> Result<Vec<[BabyBear; WIDTH]>> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let flat: Vec<BabyBear> = states.iter().flatten().copied().collect();
        self.ctx.scoped("Poseidon2 batch", || {
            let input = self.ctx.upload("poseidon2 in", as_words(&flat));
            let output = self.ctx.storage("poseidon2 out", flat.len());
            let mut encoder = self.ctx.encoder("poseidon2");
            self.record_permute(&mut encoder, &input, &output, states.len())?;
            let words = self.ctx.submit_and_read(encoder, &output, flat.len())?;
            Ok(from_words(words)?
                .chunks_exact(WIDTH)
                .map(|c| c.try_into().expect("chunks of WIDTH"))
                .collect())
        })
    }
}
