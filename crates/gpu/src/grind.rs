//! Proof-of-work search for Plonky3's `DuplexChallenger<F, Poseidon2<F, 16>, 16, 8>` (F = BabyBear,
//! the default, or KoalaBear),
//! returning the smallest valid witness so proofs are deterministic (GPU and CPU agree).

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_field::{Field, PackedValue};
use p3_symmetric::Permutation;
use rayon::prelude::*;

use crate::context::{Batch, Dispatch, GpuContext, ReadSlot, Readback};
use crate::error::{GpuError, Result};
use crate::field::{as_words, words_to, FieldId};
use crate::poseidon2::{GpuPoseidon2, Poseidon2Field};
use crate::shaders::{Kernel, GRIND_GROUP};

/// Sponge width and rate of the challenger.
pub const WIDTH: usize = 16;
pub const RATE: usize = 8;
/// Largest supported difficulty: 2^bits must stay below p.
pub const MAX_BITS: usize = 30;

/// Workgroups of wgsl/pow/grind.wgsl for `candidates` candidates.
fn grind_groups(candidates: u64) -> u32 {
    candidates.div_ceil(GRIND_GROUP as u64) as u32
}

/// The grind kernel, built with its workgroup size.
fn grind_pipeline(ctx: &GpuContext, field: FieldId) -> Result<Arc<wgpu::ComputePipeline>> {
    ctx.pipeline_for(field, Kernel::Grind, &[("GRIND_GROUP", GRIND_GROUP)])
}

/// The state a witness candidate is tried in, with the candidate's slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrindState<F = BabyBear> {
    /// Sponge state with pending inputs, zero padding and the tagged capacity (slot left 0).
    pub base: [F; WIDTH],
    /// The slot of `base` the witness goes in (the number of pending inputs).
    pub witness_slot: usize,
}

impl<F: Poseidon2Field> GrindState<F> {
    /// What `DuplexChallenger::grind` tries witnesses in: pending inputs in slots 0..len, the
    /// witness at len, zeros to RATE, and len + 1 added to the first capacity slot. A duplex
    /// challenger never holds a full rate of pending input; more is an error.
    pub fn new(sponge_state: &[F; WIDTH], input_buffer: &[F]) -> Result<Self> {
        let slot = input_buffer.len();
        if slot >= RATE {
            return Err(GpuError::InvalidInput(format!("{slot} pending inputs given; a duplex challenger of rate {RATE} holds at most {}", RATE - 1)));
        }
        let mut base = *sponge_state;
        base[..RATE].fill(F::ZERO);
        base[..slot].copy_from_slice(input_buffer);
        base[RATE] += F::from_u8(slot as u8 + 1);
        Ok(Self { base, witness_slot: slot })
    }

    /// Whether `witness` passes at `bits` under `perm`. Nothing passes past [`MAX_BITS`].
    pub fn accepts(&self, perm: &F::Permutation16, bits: usize, witness: F) -> bool {
        let Ok(mask) = pow_mask(bits) else { return false };
        let mut state = self.base;
        state[self.witness_slot] = witness;
        perm.permute_mut(&mut state);
        state[RATE - 1].as_canonical_u32() & mask == 0
    }
}

/// The low-bits mask a witness's output must clear, for 0..=MAX_BITS bits.
pub fn pow_mask(bits: usize) -> Result<u32> {
    if bits > MAX_BITS {
        return Err(GpuError::InvalidInput(format!(
            "proof-of-work of {bits} bits cannot be satisfied by 31-bit field witnesses (at most {MAX_BITS} bits); lower the PoW bits"
        )));
    }
    Ok((1u32 << bits) - 1)
}

/// The smallest witness on the CPU: all cores (rayon), each permuting `Packing::WIDTH` candidates
/// at once as Plonky3's own grinder does, in blocks of increasing candidates.
pub fn cpu_grind<F: Poseidon2Field>(perm: &F::Permutation16, state: &GrindState<F>, bits: usize) -> Result<F> {
    type Packed<F> = <F as Field>::Packing;
    let mask = pow_mask(bits)?;
    if bits == 0 {
        return Ok(F::ZERO);
    }
    let p = F::ORDER_U32;
    let lanes = Packed::<F>::WIDTH as u32;
    let base: [Packed<F>; WIDTH] = core::array::from_fn(|i| Packed::<F>::from(state.base[i]));
    // Blocks of about twice the expected work (a multiple of the lane count), in increasing
    // order: the first block with a hit holds the smallest witness, and little is searched past
    // it (find_map_first skips batches above a hit).
    let block: u32 = (2u32 << bits).clamp(lanes << 6, 1 << 22) / lanes * lanes;
    let mut start = 0u32;
    while start < p {
        let end = start.saturating_add(block).min(p);
        let found = (0..(end - start).div_ceil(lanes)).into_par_iter().find_map_first(|batch| {
            let first = start + batch * lanes;
            // Lanes past `end` hold p - 1 and are ignored below.
            let witnesses = Packed::<F>::from_fn(|l| {
                let c = first + l as u32;
                if c < end {
                    F::from_u32(c)
                } else {
                    F::NEG_ONE
                }
            });
            let mut s = base;
            s[state.witness_slot] = witnesses;
            perm.permute_mut(&mut s);
            s[RATE - 1]
                .as_slice()
                .iter()
                .enumerate()
                .find(|&(l, out)| first + (l as u32) < end && out.as_canonical_u32() & mask == 0)
                .map(|(l, _)| first + l as u32)
        });
        if let Some(w) = found {
            return Ok(F::from_u32(w));
        }
        start = end;
    }
    Err(GpuError::InvalidInput(format!("no witness of {bits} bits exists for this transcript state")))
}

/// Rust twin of `GrindParams` in wgsl/pow/params.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GrindParams {
    base: [u32; WIDTH],
    search: [u32; 4],
}

/// Words of `GrindParams`.
const PARAMS_WORDS: usize = WIDTH + 4;

/// Rust twin of `PrepareInput` in wgsl/pow/prepare.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PrepareInput {
    sponge: [u32; WIDTH],
    pending: [u32; RATE],
    counts: [u32; 4],
    range: [u32; 4],
}

/// Candidates searched per range: about four expected hits (a miss costs another round trip),
/// at most 2^28 per dispatch; workgroups past the first hit return at once.
fn range_for(bits: usize) -> u64 {
    (4u64 << bits).clamp(1 << 12, 1 << 28)
}

/// End of the one range a grind run ahead of the transcript searches (from 0; at most 2^28,
/// below every supported prime).
pub(crate) fn range_end(bits: usize) -> u32 {
    range_for(bits) as u32
}

/// A grind recorded on the GPU behind the kernels whose output the transcript observes just
/// before it ([`GpuGrinder::record_after_observing`]); its batch reads it back
/// ([`read_in`](Self::read_in), then [`GrindRead::offer`]).
pub struct GrindAheadRecord<F = BabyBear> {
    params: wgpu::Buffer,
    best: wgpu::Buffer,
    bits: usize,
    /// End of the range searched (from 0).
    end: u32,
    /// The field the grind searched (its result reads back as this field's words).
    field: std::marker::PhantomData<F>,
}

/// What a grind run ahead of the transcript found: the state it searched, as the GPU reached
/// it, and the smallest witness in `0..searched_end`, if one is there. The challenger uses it
/// only when its own state is `state` (and checks the witness).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrindOffer<F = BabyBear> {
    /// The state searched, as the GPU reached it.
    pub state: GrindState<F>,
    /// The difficulty searched at, in bits.
    pub bits: usize,
    /// The smallest passing witness in `0..searched_end`; None if there is none.
    pub witness: Option<F>,
    /// End of the range searched (from 0).
    pub searched_end: u32,
}

impl<F: Poseidon2Field> GrindAheadRecord<F> {
    /// Words a grind's params and result read back as.
    pub const WORDS: usize = PARAMS_WORDS + 1;

    /// The grind's params (pow/params layout), for a kernel that writes them on the GPU.
    pub(crate) fn params(&self) -> &wgpu::Buffer {
        &self.params
    }

    /// Where the grind leaves the smallest witness found (u32::MAX: none).
    pub(crate) fn best(&self) -> &wgpu::Buffer {
        &self.best
    }

    /// Reads what the grind found when `batch` runs, and hands the grind's buffers to it.
    pub fn read_in(self, batch: &mut Batch<'_>) -> GrindRead<F> {
        let slot = batch.read_many(&[(&self.params, 0, PARAMS_WORDS), (&self.best, 0, 1)]);
        let read = GrindRead { slot, bits: self.bits, end: self.end, field: std::marker::PhantomData };
        self.lend_to(batch);
        read
    }

    /// Hands the grind's buffers to `batch` without reading them.
    pub fn lend_to(self, batch: &mut Batch<'_>) {
        batch.lend(self.params);
        batch.lend(self.best);
    }
}

/// Where a batch reads what a grind found ([`GrindAheadRecord::read_in`]).
pub struct GrindRead<F = BabyBear> {
    slot: ReadSlot,
    bits: usize,
    end: u32,
    field: std::marker::PhantomData<F>,
}

impl<F: Poseidon2Field> GrindRead<F> {
    /// The offer in the batch's readback. Bad words (a kernel bug) are an error.
    pub fn offer(&self, readback: &Readback) -> Result<GrindOffer<F>> {
        parse_offer(readback.get(self.slot)?, self.bits, self.end)
    }
}

/// The offer in the words a grind's params and result read back as (`GrindAheadRecord::<F>::WORDS`).
fn parse_offer<F: Poseidon2Field>(words: &[u32], bits: usize, searched_end: u32) -> Result<GrindOffer<F>> {
    {
        if words.len() != GrindAheadRecord::<F>::WORDS {
            return Err(GpuError::Device(format!("{} grind-ahead words read back, expected {}", words.len(), GrindAheadRecord::<F>::WORDS)));
        }
        let base: [F; WIDTH] = words_to::<F>(words[..WIDTH].to_vec())?.try_into().expect("WIDTH words");
        let [slot, mask, start, end] = [words[WIDTH], words[WIDTH + 1], words[WIDTH + 2], words[WIDTH + 3]];
        let best = words[PARAMS_WORDS];
        if slot as usize >= RATE || mask != pow_mask(bits)? || start != 0 || end != searched_end {
            return Err(GpuError::Device(format!("grind-ahead params read back malformed: slot {slot}, mask {mask:#x}, range {start}..{end}")));
        }
        let witness = match best {
            u32::MAX => None,
            w if w < end => Some(F::from_u32(w)),
            w => return Err(GpuError::Device(format!("grind-ahead witness {w} outside the range 0..{end} searched"))),
        };
        Ok(GrindOffer { state: GrindState { base, witness_slot: slot as usize }, bits, witness, searched_end: end })
    }
}

/// The GPU search: ranges of candidates in increasing order, each one dispatch of one thread
/// per candidate whose workgroups return at once past a known hit (wgsl/pow/grind.wgsl); the
/// first range with a hit gives the smallest witness.
pub struct GpuGrinder<F: Poseidon2Field = BabyBear> {
    poseidon2: Arc<GpuPoseidon2<F>>,
    /// The params and result buffers with their bind group, kept between grinds (a proof makes
    /// dozens; fresh ones cost driver allocations). Taken out while a grind runs, so grinds on
    /// several threads make their own.
    kept: std::sync::Mutex<Option<GrindBuffers>>,
}

struct GrindBuffers {
    params: wgpu::Buffer,
    best: wgpu::Buffer,
    bind: wgpu::BindGroup,
}

impl<F: Poseidon2Field> GpuGrinder<F> {
    /// A grinder that permutes with `poseidon2`.
    pub fn new(poseidon2: Arc<GpuPoseidon2<F>>) -> Self {
        Self { poseidon2, kept: std::sync::Mutex::new(None) }
    }

    /// The Poseidon2 instance the witnesses are tried with.
    pub fn poseidon2(&self) -> &Arc<GpuPoseidon2<F>> {
        &self.poseidon2
    }

    /// Records, into `dispatches`, a grind at `bits` from the transcript state reached by
    /// observing `words` words of `observed` (from word `first_word`) into a duplex challenger
    /// with `sponge_state` and pending `input_buffer`: the setup runs on the GPU
    /// (wgsl/pow/prepare.wgsl), then one range of candidates from 0. Lets a transcript step
    /// whose observed values the GPU computes grind in the same submission. Records nothing when
    /// it returns an error.
    #[allow(clippy::too_many_arguments)]
    pub fn record_after_observing(
        &self,
        dispatches: &mut Vec<Dispatch>,
        sponge_state: &[F; WIDTH],
        input_buffer: &[F],
        observed: &wgpu::Buffer,
        first_word: usize,
        words: usize,
        bits: usize,
    ) -> Result<GrindAheadRecord<F>> {
        let mask = pow_mask(bits)?;
        if bits == 0 || input_buffer.len() >= RATE {
            return Err(GpuError::InvalidInput(format!("no grind to run ahead at {bits} bits with {} pending inputs", input_buffer.len())));
        }
        if (first_word + words) * 4 > observed.size() as usize {
            return Err(GpuError::InvalidInput(format!("observing words {first_word}..{} of a {}-byte buffer", first_word + words, observed.size())));
        }
        let ctx = self.poseidon2.context();
        let prepare = ctx.pipeline_for(F::ID, Kernel::GrindPrepare, &ctx.tuning().transcript_consts())?;
        let grind = grind_pipeline(ctx, F::ID)?;
        let end = range_for(bits).min(F::ORDER_U32 as u64) as u32;
        let mut input = PrepareInput {
            sponge: [0; WIDTH],
            pending: [0; RATE],
            counts: [input_buffer.len() as u32, first_word as u32, words as u32, mask],
            range: [end, 0, 0, 0],
        };
        input.sponge.copy_from_slice(as_words(sponge_state));
        input.pending[..input_buffer.len()].copy_from_slice(as_words(input_buffer));
        let input = ctx.uniform_once("grind-ahead input", &input);
        let params = ctx.pooled_storage("grind-ahead params", PARAMS_WORDS);
        let best = ctx.pooled_storage("grind-ahead best", 1);
        let bind = self.poseidon2.bind(&prepare, &[&input, observed, &params, &best]);
        dispatches.push(Dispatch { pipeline: (*prepare).clone(), bind, groups: 1 });
        let bind = self.poseidon2.bind(&grind, &[&params, &best]);
        dispatches.push(Dispatch { pipeline: (*grind).clone(), bind, groups: grind_groups(end as u64) });
        Ok(GrindAheadRecord { params, best, bits, end, field: std::marker::PhantomData })
    }

    /// Buffers for a grind at `bits` whose params a GPU kernel writes (a chained sumcheck round:
    /// wgsl/sumcheck/chain.wgsl), searching `0..end`; record the search itself with
    /// [`record_device_grind`](Self::record_device_grind) after that kernel.
    pub(crate) fn device_grind(&self, bits: usize, end: u32) -> Result<GrindAheadRecord<F>> {
        pow_mask(bits)?;
        if bits == 0 || end == 0 || end > F::ORDER_U32 {
            return Err(GpuError::InvalidInput(format!("no grind at {bits} bits over 0..{end}")));
        }
        let ctx = self.poseidon2.context();
        Ok(GrindAheadRecord {
            params: ctx.pooled_storage("chain grind params", PARAMS_WORDS),
            best: ctx.pooled_storage("chain grind best", 1),
            bits,
            end,
            field: std::marker::PhantomData,
        })
    }

    /// Records the search of a [`device_grind`](Self::device_grind).
    pub(crate) fn record_device_grind(&self, dispatches: &mut Vec<Dispatch>, record: &GrindAheadRecord<F>) -> Result<()> {
        let grind = grind_pipeline(self.poseidon2.context(), F::ID)?;
        let bind = self.poseidon2.bind(&grind, &[&record.params, &record.best]);
        dispatches.push(Dispatch { pipeline: (*grind).clone(), bind, groups: grind_groups(record.end as u64) });
        Ok(())
    }

    /// The smallest witness. `bits == 0` returns 0 without touching the GPU.
    pub fn grind(&self, state: &GrindState<F>, bits: usize) -> Result<F> {
        self.grind_from(state, bits, 0)
    }

    /// The smallest witness not below `start`, for a search already done below it.
    pub fn grind_from(&self, state: &GrindState<F>, bits: usize, start: u32) -> Result<F> {
        let mask = pow_mask(bits)?;
        if bits == 0 {
            return Ok(F::ZERO);
        }
        let p = F::ORDER_U32;
        let ctx = self.poseidon2.context();
        let _profiled_as = ctx.profiler().sublabel("pow");
        let pipeline = grind_pipeline(ctx, F::ID)?;
        let range = range_for(bits);
        let kept = self.kept.lock().map(|mut k| k.take()).unwrap_or(None);
        let buffers = kept.unwrap_or_else(|| {
            let params = ctx.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("grind params"),
                size: std::mem::size_of::<GrindParams>() as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let best = ctx.storage("grind best", 1);
            let bind = self.poseidon2.bind(&pipeline, &[&params, &best]);
            GrindBuffers { params, best, bind }
        });
        let GrindBuffers { params: params_buf, best, bind } = &buffers;
        let mut base = [0u32; WIDTH];
        base.copy_from_slice(as_words(&state.base));
        let mut start = start;
        let found = ctx.scoped("proof-of-work grind", || {
            while start < p {
                let end = (start as u64 + range).min(p as u64) as u32;
                let params = GrindParams { base, search: [state.witness_slot as u32, mask, start, end] };
                ctx.queue().write_buffer(params_buf, 0, bytemuck::bytes_of(&params));
                ctx.write(best, &[u32::MAX]);
                let mut batch = ctx.batch("grind");
                batch.record(&[Dispatch { pipeline: (*pipeline).clone(), bind: bind.clone(), groups: grind_groups((end - start) as u64) }]);
                let slot = batch.read(best, 0, 1);
                let found = ctx.run(batch)?.get(slot)?[0];
                if found != u32::MAX {
                    // A word outside the range searched would be a kernel bug; reduced mod p it
                    // could pass the check without being the smallest witness.
                    if found < start || found >= end {
                        return Err(GpuError::Device(format!("the grind kernel reported witness {found} outside the range {start}..{end} it searched")));
                    }
                    return Ok(F::from_u32(found));
                }
                start = end;
            }
            Err(GpuError::InvalidInput(format!("no witness of {bits} bits exists for this transcript state")))
        });
        // Kept only after a grind that went through (after an error the device may be gone).
        if found.is_ok() {
            if let Ok(mut k) = self.kept.lock() {
                *k = Some(buffers);
            }
        }
        found
    }
}

/// The WGSL twins of this file's parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] = &[
    crate::shaders::twin_layout!(GrindParams as "GrindParams" in "pow/params" { base, search }),
    crate::shaders::twin_layout!(PrepareInput as "PrepareInput" in "pow/prepare" { sponge, pending, counts, range }),
];
