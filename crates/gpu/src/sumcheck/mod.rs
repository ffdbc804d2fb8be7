//! Sumcheck state on the GPU: two tables f and w of a field's extension (`GpuExtension`: degree
//! 4 or 8, e.g. BabyBear^4, KoalaBear^8) over {0,1}^m (big-endian index order, as Plonky3's
//! `Poly`), kept resident, with the steps of a product sumcheck Σ f·w that
//! binds the last variable first (adjacent pairs): round coefficients, folding, weight updates
//! (equality and select weights) and multilinear evaluation. Each step is one or two dispatches;
//! only the few words a step returns are read back. Knows nothing of WHIR.

use std::sync::Arc;

use p3_baby_bear::BabyBear;

use crate::field::{ext_as_words, ext_from_words, GpuExtension};
use crate::poseidon2::Poseidon2Field;
use p3_field::Field;

use crate::challenger::GrindAhead;
use crate::context::{Batch, Dispatch, GpuContext, ReadSlot, Readback};
use crate::error::{GpuError, Result};
use crate::field::words_to;
pub use crate::field::Ext4;
use crate::grind::{pow_mask, range_end, GpuGrinder, GrindAheadRecord, GrindOffer, GrindRead, RATE, WIDTH};
use crate::merkle::DIGEST_ELEMS;
use crate::ntt::{GpuNtt, NttSource, NttSpec};
use crate::shaders::Kernel;

mod lazy_slots;
use lazy_slots::LazySlots;

const THREADS: usize = 256;
/// Most workgroups a reduction launches (a grid-stride loop covers the rest).
const MAX_REDUCE_GROUPS: usize = 1024;
/// Largest table: 2^28 entries (n = 28 proofs' first table), indexed with 32-bit integers; tables
/// over one binding are split into segments.
const MAX_VARS: usize = 28;

/// Rust twin of `RoundParams` in wgsl/sumcheck/round.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct RoundParams {
    count: u32,
    groups: u32,
    first: u32,
    _pad: u32,
}

/// Rust twin of `FoldParams` in wgsl/sumcheck/fold.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct FoldParams {
    r: [u32; 4],
    r_hi: [u32; 4],
    half: u32,
    _pad: [u32; 3],
}

/// Rust twin of `WeightParams` in wgsl/sumcheck/weights.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct WeightParams {
    size: u32,
    vars: u32,
    count: u32,
    groups: u32,
    offset: u32,
    total: u32,
    _pad: [u32; 2],
}

/// Rust twin of `EvalParams` in wgsl/sumcheck/eval.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct EvalParams {
    size: u32,
    groups: u32,
    chunks: u32,
    base: u32,
    offset: u32,
    first: u32,
    rows: u32,
    _pad: u32,
}

/// Rust twin of `SpongeState` in wgsl/sumcheck/sponge_step.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SpongeState {
    sponge: [u32; WIDTH],
    pending: [u32; RATE],
    info: [u32; 4],
}

/// Rust twin of `SpongeStep` in wgsl/sumcheck/sponge_step.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SpongeStep {
    observe: [u32; 4],
    grind: [u32; 2],
    _pad: [u32; 2],
}

/// Rust twin of `PowerTablesParams` in wgsl/sumcheck/power_tables.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PowerTablesParams {
    vars: u32,
    point: u32,
    reversed: u32,
    _pad: u32,
}

/// Rust twin of `SlotEvalParams` in wgsl/sumcheck/slot_eval.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SlotEvalParams {
    base: u32,
    seg_offset: u32,
    seg_size: u32,
    segment: u32,
    total_groups: u32,
    _pad: [u32; 3],
}

/// Rust twin of `SlotSumParams` in wgsl/sumcheck/slot_sum.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SlotSumParams {
    count: u32,
    total_groups: u32,
    segments: u32,
    _pad: u32,
}

/// Rust twin of `LazySlotParams` in wgsl/sumcheck/lazy_slot_round.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LazySlotParams {
    terms: u32,
    bind: u32,
    _pad: [u32; 2],
}

/// Rust twin of `SlotWeightParams` in wgsl/sumcheck/slot_weights.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SlotWeightParams {
    seg_offset: u32,
    seg_size: u32,
    total_groups: u32,
    _pad: u32,
}

/// Slots of the tables at one point: slot c is the 2^k entries from entry `offsets[c]` (k the
/// point's coordinates), read as a multilinear polynomial over {0,1}^k — one column of a stacked
/// table — or, with `successor`, as its successor view (entry i replaced by entry
/// min(i + 1, 2^k − 1): the column shifted by one row, its last row repeated).
#[derive(Clone, Copy, Debug)]
pub struct Slots<'a, E = Ext4> {
    pub point: &'a [E],
    pub offsets: &'a [usize],
    pub successor: bool,
}

/// One read of [`GpuSumcheck::read_slots`]: slots at a point (table order), each entry i
/// replaced by entry min(i + shift, 2^k − 1), with `reversed` that entry's index read
/// bit-reversed within the slot.
#[derive(Clone, Copy)]
struct SlotRead<'a, E: Field> {
    point: &'a [E],
    offsets: &'a [usize],
    shift: u32,
    reversed: bool,
}

/// A lazy round plan's reads as [`GpuSumcheck::read_slots`] takes them.
fn lazy_slot_reads<E: Field>(plan: &lazy_slots::RoundPlan<E>) -> Vec<SlotRead<'_, E>> {
    plan.reads.iter().map(|r| SlotRead { point: &r.point, offsets: &r.offsets, shift: r.shift, reversed: false }).collect()
}

/// The low `bits` bits of x reversed.
fn reverse_low_bits(x: usize, bits: usize) -> usize {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS as usize - bits)
    }
}

/// Split equality tables of points, laid end to end in one table, each point's once (the slot
/// kernels' `tables`).
#[derive(Default)]
struct PlacedEqTables<'a, E: Field> {
    tables: Vec<E>,
    placed: Vec<PlacedPoint<'a, E>>,
}

/// A placed point: where its high and low tables start, and its low bits.
type PlacedPoint<'a, E> = (std::borrow::Cow<'a, [E]>, u32, u32, usize);

/// A grind to run ahead after some values are observed: the grinder, the grind's bits, and the
/// challenger state (sponge, pending inputs) before they are observed.
pub type GrindFrom<'a, F> = (&'a GpuGrinder<F>, usize, &'a [F; WIDTH], &'a [F]);

impl<'a, E: Field> PlacedEqTables<'a, E> {
    /// Where `point`'s high and low tables start, and its low bits: placed if new.
    fn place(&mut self, point: std::borrow::Cow<'a, [E]>) -> (u32, u32, usize) {
        if let Some(&(_, hi_at, lo_at, low)) = self.placed.iter().find(|t| t.0 == point) {
            return (hi_at, lo_at, low);
        }
        let (hi, lo, low) = split_eq_tables(&point);
        let hi_at = self.tables.len() as u32;
        self.tables.extend_from_slice(&hi);
        let lo_at = self.tables.len() as u32;
        self.tables.extend_from_slice(&lo);
        self.placed.push((point, hi_at, lo_at, low));
        (hi_at, lo_at, low)
    }

    fn points(&self) -> usize {
        self.placed.len()
    }
}

/// Split equality tables of `point` (k coordinates): eq(point, i) = hi[i >> low]·lo[i & (2^low − 1)].
fn split_eq_tables<E: Field>(point: &[E]) -> (Vec<E>, Vec<E>, usize) {
    let low = point.len().div_ceil(2);
    let (hi, lo) = point.split_at(point.len() - low);
    (eq_table(hi, E::ONE), eq_table(lo, E::ONE), low)
}

/// Most points one sponge script draws and evaluates f at.
pub const MAX_SCRIPT_SAMPLES: usize = 16;

/// A duplex-sponge script to run on the GPU after a Merkle root is computed
/// ([`GpuSumcheck::record_sponge_script`]): from the challenger state `sponge` with `pending`
/// inputs (Plonky3's `DuplexChallenger`), observe the root; `samples` times, sample an extension
/// element z and observe f's value at z's univariate expansion; then grind `grind_bits` bits
/// (0: no grind) from the state reached.
pub struct SpongeScript<F: Poseidon2Field = BabyBear> {
    pub grinder: Arc<GpuGrinder<F>>,
    pub sponge: [F; WIDTH],
    pub pending: Vec<F>,
    pub samples: usize,
    pub grind_bits: usize,
}

/// A sponge script recorded into a batch ([`GpuSumcheck::record_sponge_script`]): where its
/// points, values and grind come back.
pub struct SpongeScriptRecord<F: Poseidon2Field = BabyBear> {
    /// Per point: the point drawn, then f's value there (4 words each).
    samples: Vec<(ReadSlot, ReadSlot)>,
    grind: Option<GrindRead<F>>,
}

/// What a sponge script played on the GPU: each point drawn and f's value there, and the grind
/// as an offer for the challenger. The caller draws the points with its own challenger and
/// checks each against the one drawn here before using its value.
#[derive(Clone, Debug)]
pub struct SpongeScriptValues<F: Poseidon2Field = BabyBear, E = Ext4<F>> {
    pub points: Vec<E>,
    pub answers: Vec<E>,
    pub offer: Option<GrindOffer<F>>,
}

/// Rust twin of `LazyParams` in wgsl/sumcheck/lazy_weights.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LazyParams {
    count: u32,
    groups: u32,
    first: u32,
    offset: u32,
    points: u32,
    lo_bits: u32,
    lo_at: u32,
    stride: u32,
}

/// Rust twin of `LazyCoeffParams` in wgsl/sumcheck/lazy_coeffs.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LazyCoeffParams {
    points: u32,
    t: u32,
    rounds_plus_one: u32,
    _pad: u32,
}

/// Equality weights w = Σ_j c_j·eq(z_j, ·) not written into a table: the first rounds after
/// [`GpuSumcheck::set_lazy_eq_weights`] form w's entries where they are used
/// (wgsl/sumcheck/lazy_weights.wgsl), from two small tables per point, and folds bind only f
/// (binding z_j's last coordinate to r scales c_j by eq(z_j,last, r)). After the rounds it
/// covers, w is written as a table of the folded size. At n = 24 this never stores the first
/// weight table (256 MiB) nor its folds before the last.
struct LazyEq<E: Field> {
    /// The points z_j, with every coordinate they had when set.
    points: Vec<Vec<E>>,
    /// c_j: the scales times eq(z_j's bound coordinates, their challenges).
    scales: Vec<E>,
    /// Variables bound since set, and the rounds the tables cover (fewer than that are bound
    /// while a `LazyEq` exists).
    bound: usize,
    rounds: usize,
    /// Variables when set, and the coordinates the high tables cover.
    vars: usize,
    hi_bits: usize,
    /// Entries of one point's tables: the high table, then one low table per round.
    stride: usize,
    /// Per point: high table, then the low tables (`stride` entries).
    tables: wgpu::Buffer,
    /// Per point: the coordinate round t binds (z_j[vars - 1 - t]), for t = 0..=rounds; zero
    /// once t reaches vars.
    coords: wgpu::Buffer,
    /// c_j, then A_j = c_j·(1 − z), then B_j = c_j·z, z the next coordinate bound.
    coeffs: wgpu::Buffer,
}

impl<E: Field> LazyEq<E> {
    fn lo_bits(&self) -> usize {
        self.vars - self.bound - 1 - self.hi_bits
    }

    /// Where round `t`'s low table starts within a point's tables.
    fn lo_at(&self, t: usize) -> usize {
        (1 << self.hi_bits) + (0..t).map(|u| 1usize << (self.vars - u - 1 - self.hi_bits)).sum::<usize>()
    }

    /// The coordinate each point binds in round `t`.
    fn coordinate(&self, j: usize, t: usize) -> E {
        bound_coordinate(&self.points[j], t)
    }

    /// c, A and B for the next round to bind, as the kernels read them.
    fn coeff_words(&self) -> Vec<E> {
        let k = self.points.len();
        let mut out = self.scales.clone();
        out.extend((0..k).map(|j| self.scales[j] - self.scales[j] * self.coordinate(j, self.bound)));
        out.extend((0..k).map(|j| self.scales[j] * self.coordinate(j, self.bound)));
        out
    }

    /// Binds the next coordinate to `r` on the host's side.
    fn bind(&mut self, r: E) {
        for j in 0..self.points.len() {
            let z = self.coordinate(j, self.bound);
            self.scales[j] *= (E::ONE - z) * (E::ONE - r) + z * r;
        }
        self.bound += 1;
    }
}

/// The coordinate of `point` that round `t` binds (the last first); zero once all are bound.
fn bound_coordinate<E: Field>(point: &[E], t: usize) -> E {
    point.len().checked_sub(t + 1).map_or(E::ZERO, |i| point[i])
}

/// Select weights of at least this many variables over tables of at least 2^this-many entries
/// take the split-power kernel. Its tables are built on the host and uploaded, 2^(m/2 + 1)
/// extension elements per variable (m = 26: 256 KiB, against 26 squares), so only large tables,
/// whose GPU time it cuts most (n = 28, round 1: 87 -> 33 ms), take it.
const SPLIT_SELECT_MIN_VARS: usize = 4;
const SPLIT_SELECT_MIN_LOG: usize = 20;

/// Index bits per chunk table of eval.wgsl.
const EVAL_CHUNK_BITS: usize = 8;

/// The chunk tables of eval.wgsl for the multilinear point `point` (coordinate 0 paired with
/// the top bit of the index): T_c[k] = eq of the coordinates of bits 8c.. with k's bits.
fn eq_chunk_tables<E: Field>(point: &[E]) -> Vec<E> {
    let m = point.len();
    let chunks = m.div_ceil(EVAL_CHUNK_BITS).max(1);
    let mut tables = Vec::with_capacity(chunks << EVAL_CHUNK_BITS);
    for c in 0..chunks {
        let bits = (m - (c * EVAL_CHUNK_BITS).min(m)).min(EVAL_CHUNK_BITS);
        // Bit i of the chunk is index bit 8c + i, i.e. coordinate m - 1 - 8c - i.
        let coords: Vec<E> = (0..bits).rev().map(|i| point[m - 1 - c * EVAL_CHUNK_BITS - i]).collect();
        let mut table = eq_table(&coords, E::ONE);
        table.resize(1 << EVAL_CHUNK_BITS, E::ZERO);
        tables.extend(table);
    }
    tables
}

/// scale · eq(coords, x) for x in 0..2^k, coordinate 0 paired with the top bit of x.
fn eq_table<E: Field>(coords: &[E], scale: E) -> Vec<E> {
    // Expanded in place: each coordinate doubles the table, entry i becoming 2i and 2i + 1
    // (walked from the top so nothing is overwritten before it is read).
    let mut table = vec![E::ZERO; 1 << coords.len()];
    table[0] = scale;
    for (k, &c) in coords.iter().enumerate() {
        for i in (0..1usize << k).rev() {
            let t = table[i];
            let high = t * c;
            table[2 * i] = t - high;
            table[2 * i + 1] = high;
        }
    }
    table
}

/// A table of 2^vars entries (one base-field word each, or `E::WORDS` for the extension) in segments of
/// 2^seg_log entries, each within one storage binding, so a table larger than one binding (the
/// first weight table of a large proof) is worked on segment by segment. Either one buffer per
/// segment, or one buffer holding them all (a base-field table handed over as one buffer), whose
/// segments are ranges of it.
struct Table {
    buffers: Vec<wgpu::Buffer>,
    seg_log: usize,
    /// Words per entry: 1 (base field) or the extension's `E::WORDS`.
    words: usize,
}

impl Table {
    fn segment_bytes(&self) -> u64 {
        ((self.words * 4) as u64) << self.seg_log
    }

    fn segment_len(&self) -> usize {
        1 << self.seg_log
    }

    /// Segment `j` as a binding range.
    fn range(&self, j: usize) -> (&wgpu::Buffer, u64, Option<u64>) {
        let bytes = self.segment_bytes();
        match self.buffers.as_slice() {
            [one] => (one, j as u64 * bytes, Some(bytes)),
            many => (&many[j], 0, Some(bytes)),
        }
    }
}

/// Rust twin of `ChainState` in wgsl/sumcheck/chain_state.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ChainState {
    sponge: [u32; WIDTH],
    pending: [u32; RATE],
    info: [u32; 4],
    r: [u32; 4],
    range: [u32; 4],
}

/// Byte offsets of `ChainState::info` and `ChainState::r`.
const CHAIN_INFO_AT: u64 = ((WIDTH + RATE) * 4) as u64;
const CHAIN_R_AT: u64 = CHAIN_INFO_AT + 16;

/// A sumcheck round played on the GPU by [`GpuSumcheck::play_chain`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainedRound<F: Poseidon2Field = BabyBear, E = Ext4<F>> {
    /// The round polynomial's h(0) and h(∞).
    pub c0: E,
    pub c_inf: E,
    /// The challenge drawn on the GPU, already bound by a fold; None where the round's grind
    /// found no witness in its range: the chain stopped there, before the round's fold.
    pub r: Option<E>,
    /// The round's grind (rounds with proof of work), as an offer for the challenger.
    pub offer: Option<GrindOffer<F>>,
}

/// Hands a fold's old tables to `batch`: back to the pool once the fold is submitted.
fn lend_tables(batch: &mut Batch<'_>, (f, w): (Table, Table)) {
    for b in f.buffers.into_iter().chain(w.buffers) {
        batch.lend(b);
    }
}

/// The challenge a fold binds: given, or the last one a chain drew on the GPU.
enum FoldChallenge<'a, E: Field> {
    Value(E),
    Chain(&'a wgpu::Buffer),
}

/// f and w on the GPU.
pub struct GpuSumcheck<F: Poseidon2Field = BabyBear, E: GpuExtension<F> = Ext4<F>> {
    ctx: Arc<GpuContext>,
    ntt: Arc<GpuNtt>,
    f: Table,
    w: Table,
    vars: usize,
    /// Entries of one segment at most: 2^max_seg_log extension values fill at most one binding.
    max_seg_log: usize,
    /// Bound where a kernel's optional buffers are unused (two: writable bindings may not alias).
    placeholder: wgpu::Buffer,
    spare: wgpu::Buffer,
    /// Set while the transcript grinds after every round: the grind then runs in the round's
    /// own submission (see [`set_grind_ahead`](Self::set_grind_ahead)).
    ahead: Option<GrindAhead<F>>,
    /// Tests only: the end of a chained grind's range (a small one makes the chain stop).
    chain_range: Option<u32>,
    /// Equality weights not yet written into w (w has no table meanwhile).
    lazy: Option<LazyEq<E>>,
    /// Slot weights not yet written into w (w has no table meanwhile).
    lazy_slots: Option<LazySlots<E>>,
    /// f and w hold the polynomials at bit-reversed indices
    /// ([`with_reversed_indices`](Self::with_reversed_indices)).
    reversed: bool,
}

/// Rust twin of `BaseParams` in wgsl/sumcheck/base.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BaseParams {
    r: [u32; 4],
    r_hi: [u32; 4],
    count: u32,
    groups: u32,
    first: u32,
    _pad: u32,
}

impl<F: Poseidon2Field, E: GpuExtension<F>> Drop for GpuSumcheck<F, E> {
    fn drop(&mut self) {
        for b in self.f.buffers.drain(..).chain(self.w.buffers.drain(..)) {
            self.ctx.recycle_storage(b);
        }
        if let Some(lazy) = self.lazy.take() {
            for b in [lazy.tables, lazy.coords, lazy.coeffs] {
                self.ctx.recycle_storage(b);
            }
        }
    }
}

impl<F: Poseidon2Field, E: GpuExtension<F>> GpuSumcheck<F, E> {
    /// Bytes of one extension element.
    const BYTES: u64 = 4 * E::WORDS as u64;

    /// The words of `r` as a parameter block's two vec4 (X^0..X^3, X^4..X^7; zeros past the
    /// degree).
    fn challenge_words(r: E) -> ([u32; 4], [u32; 4]) {
        let mut words = [0u32; 8];
        words[..E::WORDS].copy_from_slice(ext_as_words::<F, E>(&[r]));
        ([words[0], words[1], words[2], words[3]], [words[4], words[5], words[6], words[7]])
    }

    /// An error unless the extension is the one the transcript kernels play (degree 4).
    fn check_transcript_extension(what: &str) -> Result<()> {
        if E::ID != crate::field::ExtensionId::Degree4 {
            return Err(GpuError::InvalidInput(format!("{what} on the GPU plays degree-4 transcripts; this sumcheck is over the {} extension", E::ID.name())));
        }
        Ok(())
    }

    /// log2 of the most extension entries one binding holds on `ctx`'s adapter.
    fn max_segment_log(ctx: &GpuContext) -> Result<usize> {
        let entries = ctx.max_binding_bytes() / Self::BYTES;
        // Segments of at least 256 entries keep every range offset a multiple of 256 bytes.
        if entries < 256 {
            return Err(GpuError::TooLarge {
                what: "a sumcheck table segment of 256 entries".into(),
                needed: 256 * Self::BYTES,
                limit: ctx.max_binding_bytes(),
            });
        }
        Ok(entries.ilog2() as usize)
    }

    /// Uploads f and w (equal powers of two, at most 2^28 entries) to `ntt`'s GPU (the NTT
    /// computes select weights as a transform). Tables larger than one binding are split into
    /// segments.
    pub fn new(ntt: Arc<GpuNtt>, f: &[E], w: &[E]) -> Result<Self> {
        let ctx = ntt.context().clone();
        if f.len() != w.len() || !f.len().is_power_of_two() {
            return Err(GpuError::InvalidInput(format!("sumcheck tables of {} and {} entries (need equal powers of two)", f.len(), w.len())));
        }
        let vars = f.len().trailing_zeros() as usize;
        if vars > MAX_VARS {
            return Err(GpuError::InvalidInput(format!("a sumcheck over 2^{vars} entries exceeds 2^{MAX_VARS}")));
        }
        let max_seg_log = Self::max_segment_log(&ctx)?;
        let seg_log = vars.min(max_seg_log);
        ctx.memory().try_reserve("the sumcheck tables", 2 * Self::BYTES * f.len() as u64)?;
        let upload = |label: &str, values: &[E]| Table {
            buffers: values
                .chunks(1 << seg_log)
                .map(|segment| {
                    let buffer = ctx.pooled_for_upload(label, segment.len() * E::WORDS);
                    ctx.write(&buffer, ext_as_words::<F, E>(segment));
                    buffer
                })
                .collect(),
            seg_log,
            words: E::WORDS,
        };
        let started = std::time::Instant::now();
        let (f, w) = (upload("sumcheck f", f), upload("sumcheck w", w));
        tracing::debug!(vars, ms = started.elapsed().as_secs_f64() * 1e3, "sumcheck tables uploaded");
        let (placeholder, spare) = (ctx.storage("sumcheck placeholder", E::WORDS), ctx.storage("sumcheck placeholder", E::WORDS));
        Ok(Self { ctx, ntt, f, w, vars, max_seg_log, placeholder, spare, ahead: None, chain_range: None, lazy: None, lazy_slots: None, reversed: false })
    }

    /// A sumcheck over a base-field f already on the GPU (`f_base`: 2^vars base-field words, e.g.
    /// a committed message; the sumcheck takes it over) and w = 0; build w with the `add_*`
    /// weights or [`set_lazy_eq_weights`](Self::set_lazy_eq_weights). Nothing is uploaded, and
    /// w's table is made only when weights are first written into it.
    pub fn from_base(ntt: Arc<GpuNtt>, f_base: wgpu::Buffer, vars: usize) -> Result<Self> {
        let ctx = ntt.context().clone();
        if vars > MAX_VARS {
            return Err(GpuError::InvalidInput(format!("a sumcheck over 2^{vars} entries exceeds 2^{MAX_VARS}")));
        }
        if f_base.size() < (4u64 << vars) {
            return Err(GpuError::InvalidInput(format!("the base table holds {} bytes, fewer than 2^{vars} words", f_base.size())));
        }
        let max_seg_log = Self::max_segment_log(&ctx)?;
        let seg_log = vars.min(max_seg_log);
        let w = Table { buffers: Vec::new(), seg_log, words: E::WORDS };
        let f = Table { buffers: vec![f_base], seg_log, words: 1 };
        let (placeholder, spare) = (ctx.storage("sumcheck placeholder", E::WORDS), ctx.storage("sumcheck placeholder", E::WORDS));
        Ok(Self { ctx, ntt, f, w, vars, max_seg_log, placeholder, spare, ahead: None, chain_range: None, lazy: None, lazy_slots: None, reversed: false })
    }

    /// The same tables read at bit-reversed indices: entry i of f (and of w) is the
    /// polynomial's value at rev_m(i), so the rounds, which bind the table's last variable,
    /// bind the polynomial's first (a sumcheck that binds the first variable first, kept in
    /// the order the kernels bind). Every step keeps the polynomial's own order at its seam:
    /// points, select variables, slots and the tables read back are the polynomial's, and a
    /// commitment of f reads it as [`message_layout`](Self::message_layout) says. Slots are
    /// the exception: their offsets index the tables as held, and a slot's entries are its
    /// column's at bit-reversed indices within it (each column of a stack in p3-sumcheck's
    /// prefix layout, held so, is one such slot). Set before lazy weights are.
    pub fn with_reversed_indices(mut self) -> Self {
        debug_assert!(self.lazy.is_none() && self.lazy_slots.is_none());
        self.reversed = true;
        self
    }

    /// Whether the tables are held at bit-reversed indices.
    pub fn has_reversed_indices(&self) -> bool {
        self.reversed
    }

    /// How a codeword's message of f (rows of 2^fold entries of the polynomial) lies in
    /// [`f_buffer`](Self::f_buffer).
    pub fn message_layout(&self) -> crate::reorder::MessageLayout {
        if self.reversed {
            crate::reorder::MessageLayout::ReversedIndices { words: self.f.words }
        } else {
            crate::reorder::MessageLayout::Rows
        }
    }

    /// `point` as the table is indexed: reversed where the indices are.
    fn table_point<'p>(&self, point: &'p [E]) -> std::borrow::Cow<'p, [E]> {
        if self.reversed {
            std::borrow::Cow::Owned(point.iter().rev().copied().collect())
        } else {
            std::borrow::Cow::Borrowed(point)
        }
    }

    /// `points` as the table is indexed.
    fn table_points(&self, points: &[Vec<E>]) -> Vec<Vec<E>> {
        points.iter().map(|p| self.table_point(p).into_owned()).collect()
    }

    /// A table read back in the polynomial's order.
    fn polynomial_order(&self, mut values: Vec<E>) -> Vec<E> {
        if self.reversed && values.len() > 1 {
            p3_util::reverse_slice_index_bits(&mut values);
        }
        values
    }

    /// What a round needs of w: lazy weights, or a table (zeros if no weights were added).
    fn ensure_weights_for_rounds(&mut self) -> Result<()> {
        if self.lazy.is_some() || self.lazy_slots.is_some() {
            return Ok(());
        }
        self.ensure_weights()
    }

    /// Makes w's table (zeros) where there is none yet: before weights are first added, or
    /// when lazy equality weights are written out.
    fn ensure_weights(&mut self) -> Result<()> {
        if !self.w.buffers.is_empty() {
            return Ok(());
        }
        let seg_log = self.vars.min(self.max_seg_log);
        self.ctx.memory().try_reserve("the sumcheck weights", Self::BYTES << self.vars)?;
        let ctx = self.ctx.clone();
        let buffers: Vec<wgpu::Buffer> = (0..1usize << (self.vars - seg_log)).map(|_| ctx.pooled_storage("sumcheck w", E::WORDS << seg_log)).collect();
        let cleared = ctx.scoped("sumcheck weights", || {
            let mut encoder = ctx.encoder("clear weights");
            for b in &buffers {
                encoder.clear_buffer(b, 0, None);
            }
            ctx.submit(encoder)
        });
        self.w = Table { buffers, seg_log, words: E::WORDS };
        cleared
    }

    /// `w = Σ_j scales[j]·eq(points[j], ·)` (coordinate 0 paired with the top bit), kept
    /// unwritten for the next `rounds` rounds (see `LazyEq`): those rounds form w's entries
    /// where they use them, and their folds bind f alone; w is written as a table once they
    /// are played (or earlier, when other weights are added). Needs a w without weights yet;
    /// with weights already there, or no rounds, the weights are added as by
    /// [`add_eq_weights`](Self::add_eq_weights).
    pub fn set_lazy_eq_weights(&mut self, points: &[Vec<E>], scales: &[E], rounds: usize) -> Result<()> {
        if points.len() != scales.len() {
            return Err(GpuError::InvalidInput(format!("{} points with {} scales", points.len(), scales.len())));
        }
        for p in points {
            self.check_point(p)?;
        }
        let rounds = rounds.min(self.vars);
        if rounds == 0 || points.is_empty() || !self.w.buffers.is_empty() || self.lazy.is_some() || self.lazy_slots.is_some() {
            return self.add_eq_weights(points, scales);
        }
        let points = &self.table_points(points);
        let vars = self.vars;
        // The high tables cover the coordinates every round keeps; the low ones the rest but
        // the one each round binds, split near half at the last round.
        let hi_bits = (vars - rounds) / 2;
        let stride = (1usize << hi_bits) + (0..rounds).map(|t| 1usize << (vars - t - 1 - hi_bits)).sum::<usize>();
        // Each point's high table, then its low table for each round; built on all cores (at
        // n = 24, 32K entries for two points: 0.24 ms on one core of a build machine).
        let ranges: Vec<(usize, std::ops::Range<usize>)> =
            (0..points.len()).flat_map(|j| std::iter::once((j, 0..hi_bits)).chain((0..rounds).map(move |t| (j, hi_bits..vars - 1 - t)))).collect();
        let tables: Vec<E> = {
            use rayon::prelude::*;
            ranges.par_iter().map(|(j, r)| eq_table(&points[*j][r.clone()], E::ONE)).collect::<Vec<_>>().concat()
        };
        debug_assert_eq!(tables.len(), stride * points.len());
        let coords: Vec<E> = points.iter().flat_map(|p| (0..=rounds).map(|t| bound_coordinate(p, t))).collect();
        let ctx = self.ctx.clone();
        ctx.check_binding_size("the lazy weights' tables", tables.len() as u64 * Self::BYTES)?;
        let lazy = LazyEq {
            points: points.to_vec(),
            scales: scales.to_vec(),
            bound: 0,
            rounds,
            vars,
            hi_bits,
            stride,
            tables: ctx.upload_pooled("lazy weight tables", ext_as_words::<F, E>(&tables)),
            coords: ctx.upload_pooled("lazy weight coordinates", ext_as_words::<F, E>(&coords)),
            coeffs: ctx.storage("lazy weight coefficients", 3 * E::WORDS * points.len()),
        };
        ctx.write(&lazy.coeffs, ext_as_words::<F, E>(&lazy.coeff_words()));
        self.lazy = Some(lazy);
        Ok(())
    }

    /// Writes lazy equality weights out as w's table (of the current size); nothing without.
    /// The lazy weights stay until the table is written (on an error, w has no table again).
    fn materialize_weights(&mut self) -> Result<()> {
        if let Some(lazy) = self.lazy_slots.as_ref() {
            let sets = lazy.weight_sets();
            let sets: Vec<(Slots<'_, E>, &[E])> =
                sets.iter().map(|s| (Slots { point: &s.point, offsets: &s.offsets, successor: s.successor }, s.scales.as_slice())).collect();
            let written = self.ensure_weights().and_then(|()| self.write_slot_weights(&sets));
            if let Err(e) = written {
                for b in std::mem::take(&mut self.w.buffers) {
                    self.ctx.recycle_storage(b);
                }
                return Err(e);
            }
            self.lazy_slots = None;
            return Ok(());
        }
        let Some(lazy) = self.lazy.as_ref() else { return Ok(()) };
        let vars = self.vars;
        let points: Vec<Vec<E>> = lazy.points.iter().map(|p| p[..vars].to_vec()).collect();
        let scales = lazy.scales.clone();
        let written = self.ensure_weights().and_then(|()| self.write_eq_weights(&points, &scales));
        if let Err(e) = written {
            for b in std::mem::take(&mut self.w.buffers) {
                self.ctx.recycle_storage(b);
            }
            return Err(e);
        }
        let lazy = self.lazy.take().expect("checked above");
        for b in [lazy.tables, lazy.coords, lazy.coeffs] {
            self.ctx.recycle_storage(b);
        }
        Ok(())
    }

    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// A copy of f and w in buffers of its own, made on the GPU in one submission (to open one
    /// committed f more than once). An error while equality weights are kept unwritten.
    pub fn duplicate(&self) -> Result<Self> {
        if self.lazy.is_some() || self.lazy_slots.is_some() {
            return Err(GpuError::InvalidInput("a sumcheck whose weights are not written yet (lazy equality weights) cannot be copied".into()));
        }
        let ctx = self.ctx.clone();
        let bytes: u64 = self.f.buffers.iter().chain(&self.w.buffers).map(|b| b.size()).sum();
        ctx.memory().try_reserve("a copy of the sumcheck tables", bytes)?;
        let mut encoder = ctx.encoder("copy sumcheck tables");
        let mut copy = |table: &Table, label: &str| Table {
            buffers: table
                .buffers
                .iter()
                .map(|b| {
                    let copy = ctx.pooled_storage(label, (b.size() / 4) as usize);
                    encoder.copy_buffer_to_buffer(b, 0, &copy, 0, b.size());
                    copy
                })
                .collect(),
            seg_log: table.seg_log,
            words: table.words,
        };
        let (f, w) = (copy(&self.f, "sumcheck f"), copy(&self.w, "sumcheck w"));
        let copied = Self {
            ctx: ctx.clone(),
            ntt: self.ntt.clone(),
            f,
            w,
            vars: self.vars,
            max_seg_log: self.max_seg_log,
            placeholder: ctx.storage("sumcheck placeholder", E::WORDS),
            spare: ctx.storage("sumcheck placeholder", E::WORDS),
            ahead: None,
            chain_range: None,
            lazy: None,
            lazy_slots: None,
            reversed: self.reversed,
        };
        ctx.submit(encoder)?;
        Ok(copied)
    }

    /// While set, each round's submission also runs the proof-of-work grind that a transcript
    /// makes right after observing the round's two values (h(0) then h(∞), 8 base words), from
    /// the challenger state `ahead` publishes, and leaves the result in `ahead` for the
    /// challenger ([`GrindAhead`]): one GPU round trip per round instead of two.
    pub fn set_grind_ahead(&mut self, ahead: Option<GrindAhead<F>>) {
        self.ahead = ahead;
    }

    /// m: the tables hold 2^m entries.
    pub fn num_variables(&self) -> usize {
        self.vars
    }

    /// f's table on the GPU as one buffer (2^m elements, `E::WORDS` words each, or 1 before a
    /// base-field f's first fold), e.g. to encode it. An error while f is split over bindings
    /// (larger than one binding).
    pub fn f_buffer(&self) -> Result<&wgpu::Buffer> {
        match self.f.buffers.as_slice() {
            [one] => Ok(one),
            _ => Err(GpuError::TooLarge {
                what: format!("the sumcheck's f (2^{} entries) as one buffer", self.vars),
                needed: ((self.f.words * 4) as u64) << self.vars,
                limit: self.ctx.max_binding_bytes(),
            }),
        }
    }

    fn size(&self) -> usize {
        1 << self.vars
    }

    /// Segments of f and w (the same split).
    fn segments(&self) -> usize {
        1 << (self.vars - self.f.seg_log)
    }

    fn groups_for(items: usize) -> usize {
        items.div_ceil(THREADS).clamp(1, MAX_REDUCE_GROUPS)
    }
    /// Records the reduction of `groups` partial pairs in `partials` to one pair: returns the
    /// buffer holding it (2 `E::WORDS` words) and the intermediate buffers, for the pool once submitted.
    fn record_reduction(&self, dispatches: &mut Vec<Dispatch>, mut partials: wgpu::Buffer, mut groups: usize) -> Result<(wgpu::Buffer, Vec<wgpu::Buffer>)> {
        let pipeline = self.ctx.pipeline_over(F::ID, E::ID, Kernel::SumPartials, &[])?;
        let mut spare = Vec::new();
        while groups > 1 {
            let next = Self::groups_for(groups);
            let out = self.ctx.pooled_storage("sumcheck partials", 2 * E::WORDS * next);
            let params = self.ctx.uniform("sum params", &RoundParams { count: groups as u32, groups: next as u32, first: 0, _pad: 0 });
            let bind = self.ctx.bind_buffers(&pipeline, &[&params, &partials, &self.placeholder, &out]);
            dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: next as u32 });
            spare.push(std::mem::replace(&mut partials, out));
            groups = next;
        }
        Ok((partials, spare))
    }

    /// Reduces `groups` partial pairs in `partials` to one pair and reads it back (with what a
    /// grind run ahead found). `dispatches` (recorded so far, in one compute pass) end with the
    /// kernel that wrote them.
    fn finish_reduction(&self, mut batch: Batch<'_>, mut dispatches: Vec<Dispatch>, partials: wgpu::Buffer, groups: usize) -> Result<(E, E)> {
        let (partials, spare) = self.record_reduction(&mut dispatches, partials, groups)?;
        // Grinding ahead is a speed-up: if it cannot be set up, the round goes on without it.
        let ahead = match self.ahead.as_ref().and_then(|a| a.target()) {
            Some((grinder, bits, sponge, pending)) => {
                // (It records nothing when it fails.)
                match grinder.record_after_observing(&mut dispatches, &sponge, &pending, &partials, 0, 2 * E::WORDS, bits) {
                    Ok(record) => Some((grinder, record)),
                    Err(e) => {
                        tracing::debug!("not grinding ahead in this round: {e}");
                        None
                    }
                }
            }
            None => None,
        };
        batch.record(&dispatches);
        // The pair and what the grind found, in one readback.
        let pair = batch.read(&partials, 0, 2 * E::WORDS);
        let grind = ahead.map(|(_, record)| record.read_in(&mut batch));
        spare.into_iter().chain([partials]).for_each(|b| batch.lend(b));
        let readback = self.ctx.run(batch)?;
        if let (Some(grind), Some(a)) = (grind, &self.ahead) {
            match grind.offer(&readback) {
                Ok(offer) => a.offer(offer),
                // The challenger then grinds on its own.
                Err(e) => tracing::warn!("ignoring a malformed grind-ahead result: {e}"),
            }
        }
        let v = ext_from_words::<F, E>(readback.get(pair)?.to_vec())?;
        Ok((v[0], v[1]))
    }

    /// `h(0) = Σ_i f[2i]·w[2i]` and `h(∞) = Σ_i (f[2i+1] − f[2i])·(w[2i+1] − w[2i])`.
    pub fn round_coefficients(&mut self) -> Result<(E, E)> {
        if self.vars == 0 {
            return Err(GpuError::InvalidInput("no variable left for a sumcheck round".into()));
        }
        self.ensure_weights_for_rounds()?;
        if self.lazy_slots.is_some() {
            return self.lazy_slot_round();
        }
        self.ctx.scoped("sumcheck round", || {
            let mut dispatches = Vec::new();
            let (partials, groups) = self.record_round(&mut dispatches)?;
            self.finish_reduction(self.ctx.batch("sumcheck"), dispatches, partials, groups)
        })
    }

    /// `fold(r)` then `round_coefficients()`, recorded into one submission (one wait instead
    /// of a submission for the fold and another for the round). As with `fold`, after an error
    /// the tables are unusable.
    pub fn fold_then_round(&mut self, r: E) -> Result<(E, E)> {
        if self.vars < 2 {
            return Err(GpuError::InvalidInput(format!("a fold and a round need two variables; {} left", self.vars)));
        }
        self.ensure_weights_for_rounds()?;
        if self.lazy_slots.is_some() {
            // The fold is submitted, the round's evaluations wait (one wait).
            self.fold(r)?;
            return self.round_coefficients();
        }
        let ctx = self.ctx.clone();
        ctx.scoped("sumcheck fold and round", || {
            let mut dispatches = Vec::new();
            let mut batch = ctx.batch("sumcheck");
            let old = self.record_fold(&mut dispatches, r)?;
            lend_tables(&mut batch, old);
            let (partials, groups) = self.record_round(&mut dispatches)?;
            self.finish_reduction(batch, dispatches, partials, groups)
        })
    }

    /// Records the round kernel, one dispatch per segment: returns the partial pairs and how
    /// many.
    fn record_round(&self, dispatches: &mut Vec<Dispatch>) -> Result<(wgpu::Buffer, usize)> {
        let pairs = self.f.segment_len() / 2;
        let segments = self.segments();
        let groups = match &self.lazy {
            Some(lazy) if lazy.bound >= lazy.rounds => {
                return Err(GpuError::InvalidInput(format!("lazy weights cover {} rounds; {} were played", lazy.rounds, lazy.bound)));
            }
            // A thread's pairs must share their low index (wgsl/sumcheck/lazy_weights.wgsl): a
            // grid stride of a multiple of 2^lo_bits, or one stride over the segment.
            Some(lazy) => Self::groups_for(pairs).max(pairs.min(1 << lazy.lo_bits()) / THREADS),
            None => Self::groups_for(pairs),
        };
        let partials = self.ctx.pooled_storage("sumcheck partials", 2 * E::WORDS * groups * segments);
        if let Some(lazy) = &self.lazy {
            let pipeline = self.ctx.pipeline_over(F::ID, E::ID, if self.is_base() { Kernel::LazyRoundBase } else { Kernel::LazyRound }, &[])?;
            for j in 0..segments {
                let params = LazyParams {
                    count: pairs as u32,
                    groups: groups as u32,
                    first: (j * groups) as u32,
                    offset: (j * pairs) as u32,
                    points: lazy.points.len() as u32,
                    lo_bits: lazy.lo_bits() as u32,
                    lo_at: lazy.lo_at(lazy.bound) as u32,
                    stride: lazy.stride as u32,
                };
                let params = self.ctx.uniform("lazy round params", &params);
                let bind = self
                    .ctx
                    .bind_ranges(&pipeline, &[(&params, 0, None), self.f.range(j), (&lazy.tables, 0, None), (&lazy.coeffs, 0, None), (&partials, 0, None)]);
                dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: groups as u32 });
            }
            return Ok((partials, groups * segments));
        }
        let pipeline = self.ctx.pipeline_over(F::ID, E::ID, if self.is_base() { Kernel::RoundBase } else { Kernel::SumcheckRound }, &[])?;
        for j in 0..segments {
            let first = (j * groups) as u32;
            let params = if self.is_base() {
                self.ctx.uniform("round params", &BaseParams { r: [0; 4], r_hi: [0; 4], count: pairs as u32, groups: groups as u32, first, _pad: 0 })
            } else {
                self.ctx.uniform("round params", &RoundParams { count: pairs as u32, groups: groups as u32, first, _pad: 0 })
            };
            let bind = self.ctx.bind_ranges(&pipeline, &[(&params, 0, None), self.f.range(j), self.w.range(j), (&partials, 0, None)]);
            dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: groups as u32 });
        }
        Ok((partials, groups * segments))
    }

    /// Binds the last variable of f and w to `r` (a base-field f becomes an extension table). After an
    /// error the tables are unusable (a proof in progress fails and is made again elsewhere).
    pub fn fold(&mut self, r: E) -> Result<()> {
        if self.vars == 0 {
            return Err(GpuError::InvalidInput("no variable left to fold".into()));
        }
        self.ensure_weights_for_rounds()?;
        let ctx = self.ctx.clone();
        ctx.scoped("sumcheck fold", || {
            let mut dispatches = Vec::new();
            let mut batch = ctx.batch("sumcheck fold");
            let old = self.record_fold(&mut dispatches, r)?;
            lend_tables(&mut batch, old);
            batch.record(&dispatches);
            ctx.send(batch)
        })
    }

    /// Records the fold of the last variable, one dispatch per segment, and swaps in the folded
    /// tables (segment j folds into entries j·s/2.. of the result, s the segment length).
    /// Returns the old tables, for the pool once the fold is submitted (another thread sharing
    /// the context could otherwise take them and submit writes before the fold reads them).
    fn record_fold(&mut self, dispatches: &mut Vec<Dispatch>, r: E) -> Result<(Table, Table)> {
        self.record_fold_with(dispatches, FoldChallenge::Value(r))
    }

    /// [`record_fold`](Self::record_fold) at a challenge given or drawn on the GPU (a chain's);
    /// returns the old tables instead of recycling them.
    fn record_fold_with(&mut self, dispatches: &mut Vec<Dispatch>, challenge: FoldChallenge<'_, E>) -> Result<(Table, Table)> {
        let (r, chain) = match challenge {
            FoldChallenge::Value(r) => (r, None),
            FoldChallenge::Chain(buffer) => (E::ZERO, Some(buffer)),
        };
        let (r_words, r_hi) = Self::challenge_words(r);
        let per_segment = self.f.segment_len() / 2;
        let out_seg_log = (self.vars - 1).min(self.max_seg_log);
        let out_segments = 1usize << (self.vars - 1 - out_seg_log);
        let fresh = |label: &str| Table {
            buffers: (0..out_segments).map(|_| self.ctx.pooled_storage(label, E::WORDS << out_seg_log)).collect(),
            seg_log: out_seg_log,
            words: E::WORDS,
        };
        // Lazy weights have no table to fold (their folds scale the coefficients).
        let f_only = self.w.buffers.is_empty();
        let f_out = fresh("sumcheck f");
        let w_out = if f_only { Table { buffers: Vec::new(), seg_log: out_seg_log, words: E::WORDS } } else { fresh("sumcheck w") };
        // Where segment j's folded entries go in the result.
        fn out_range(out: &Table, j: usize, per_segment: usize) -> (&wgpu::Buffer, u64, Option<u64>) {
            let start = j * per_segment;
            let at = start & (out.segment_len() - 1);
            let bytes = 4 * out.words;
            (&out.buffers[start >> out.seg_log], (at * bytes) as u64, Some((per_segment * bytes) as u64))
        }
        let groups = per_segment.div_ceil(THREADS) as u32;
        let whole = |b| (b, 0u64, None);
        // Chained folds read the challenge from the chain (an extra binding after the others).
        let kernel = |plain: Kernel, chained: Kernel| self.ctx.pipeline_over(F::ID, E::ID, if chain.is_some() { chained } else { plain }, &[]);
        fn with_chain<'a>(mut ranges: Vec<(&'a wgpu::Buffer, u64, Option<u64>)>, chain: Option<&'a wgpu::Buffer>) -> Vec<(&'a wgpu::Buffer, u64, Option<u64>)> {
            ranges.extend(chain.map(|c| (c, 0, None)));
            ranges
        }
        if self.is_base() {
            let base = kernel(Kernel::FoldBase, Kernel::FoldBaseChained)?;
            let single = kernel(Kernel::FoldSingle, Kernel::FoldSingleChained)?;
            let base_params = self.fold_uniform(&BaseParams { r: r_words, r_hi, count: per_segment as u32, groups: 0, first: 0, _pad: 0 }, chain.is_some());
            let params = self.fold_uniform(&FoldParams { r: r_words, r_hi, half: per_segment as u32, _pad: [0; 3] }, chain.is_some());
            for j in 0..self.segments() {
                let bind = self.ctx.bind_ranges(
                    &base,
                    &with_chain(vec![whole(&base_params), self.f.range(j), whole(&self.placeholder), out_range(&f_out, j, per_segment)], chain),
                );
                dispatches.push(Dispatch { pipeline: (*base).clone(), bind, groups });
                if f_only {
                    continue;
                }
                let bind = self.ctx.bind_ranges(
                    &single,
                    &with_chain(vec![whole(&params), self.w.range(j), whole(&self.placeholder), out_range(&w_out, j, per_segment), whole(&self.spare)], chain),
                );
                dispatches.push(Dispatch { pipeline: (*single).clone(), bind, groups });
            }
        } else if f_only {
            let single = kernel(Kernel::FoldSingle, Kernel::FoldSingleChained)?;
            let params = self.fold_uniform(&FoldParams { r: r_words, r_hi, half: per_segment as u32, _pad: [0; 3] }, chain.is_some());
            for j in 0..self.segments() {
                let bind = self.ctx.bind_ranges(
                    &single,
                    &with_chain(vec![whole(&params), self.f.range(j), whole(&self.placeholder), out_range(&f_out, j, per_segment), whole(&self.spare)], chain),
                );
                dispatches.push(Dispatch { pipeline: (*single).clone(), bind, groups });
            }
        } else {
            let pipeline = kernel(Kernel::SumcheckFold, Kernel::FoldPairsChained)?;
            let params = self.fold_uniform(&FoldParams { r: r_words, r_hi, half: per_segment as u32, _pad: [0; 3] }, chain.is_some());
            for j in 0..self.segments() {
                let bind = self.ctx.bind_ranges(
                    &pipeline,
                    &with_chain(
                        vec![whole(&params), self.f.range(j), self.w.range(j), out_range(&f_out, j, per_segment), out_range(&w_out, j, per_segment)],
                        chain,
                    ),
                );
                dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups });
            }
        }
        // Lazy weights: the bound coordinate scales the coefficients, on the GPU after a
        // chained fold, here otherwise.
        if let Some(lazy) = self.lazy.as_mut() {
            match chain {
                Some(chain) => {
                    let pipeline = self.ctx.pipeline_over(F::ID, E::ID, Kernel::LazyCoeffs, &[])?;
                    let params = LazyCoeffParams { points: lazy.points.len() as u32, t: lazy.bound as u32, rounds_plus_one: (lazy.rounds + 1) as u32, _pad: 0 };
                    let params = self.ctx.uniform("lazy coefficient params", &params);
                    let bind = self.ctx.bind_buffers(&pipeline, &[&params, &lazy.coords, &lazy.coeffs, chain]);
                    dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: 1 });
                    lazy.bound += 1;
                }
                None => {
                    lazy.bind(r);
                    // (After the last lazy round w is written out below instead.)
                    if lazy.bound < lazy.rounds {
                        self.ctx.write(&lazy.coeffs, ext_as_words::<F, E>(&lazy.coeff_words()));
                    }
                }
            }
        }
        // (A chain binds lazy slot terms on the GPU, and here once its challenges are back.)
        if let (Some(lazy), None) = (self.lazy_slots.as_mut(), chain) {
            lazy.bind(r);
        }
        let old = (std::mem::replace(&mut self.f, f_out), std::mem::replace(&mut self.w, w_out));
        self.vars -= 1;
        // Past the rounds the lazy tables cover, w becomes a table (chains do it after their
        // readback, when the challenges are known here).
        let lazy_done = self.lazy.as_ref().is_some_and(|l| l.bound >= l.rounds) || self.lazy_slots.as_ref().is_some_and(|l| l.bound >= l.rounds);
        if chain.is_none() && lazy_done {
            self.materialize_weights()?;
        }
        Ok(old)
    }

    /// A fold's params: cached when they hold no challenge (chained folds), fresh otherwise.
    fn fold_uniform<T: bytemuck::Pod>(&self, params: &T, chained: bool) -> wgpu::Buffer {
        if chained {
            self.ctx.uniform("fold params", params)
        } else {
            self.ctx.uniform_once("fold params", params)
        }
    }

    /// Plays `rounds` sumcheck rounds with one wait, their transcript on the GPU (each round is
    /// submitted once recorded, see `GpuContext::early_submits`): each
    /// round's h(0), h(∞) are observed by a duplex challenger starting from `sponge` with
    /// `pending` inputs (Plonky3's `DuplexChallenger` state), a `bits`-bit grind follows where
    /// `bits` > 0 (the smallest witness in one range), the challenge is drawn and the tables are
    /// folded at it (wgsl/sumcheck/chain.wgsl) — what p3-sumcheck's `ProverTranscript::round`
    /// does, so the host replays the rounds from what comes back and checks each challenge.
    /// Returns the rounds played: all of them, or up to the one whose grind found no witness
    /// (its `r` is None, its fold not done; the caller goes on round by round). `grinder`
    /// provides the Poseidon2 instance of the transcript. After an error the tables are those
    /// from before the chain, unless writing lazy weights out after it failed: then the
    /// sumcheck is unusable (a proof in progress fails).
    pub fn play_chain(&mut self, rounds: usize, sponge: &[F; WIDTH], pending: &[F], bits: usize, grinder: &GpuGrinder<F>) -> Result<Vec<ChainedRound<F, E>>> {
        Self::check_transcript_extension("a chain of sumcheck rounds")?;
        if rounds == 0 || rounds > self.vars {
            return Err(GpuError::InvalidInput(format!("a chain of {rounds} rounds over {} variables", self.vars)));
        }
        if pending.len() >= RATE {
            return Err(GpuError::InvalidInput(format!("{} pending inputs (a duplex challenger holds at most {})", pending.len(), RATE - 1)));
        }
        if !Arc::ptr_eq(grinder.poseidon2().context(), &self.ctx) {
            return Err(GpuError::InvalidInput("the grinder lives on another GPU context".into()));
        }
        let mask = if bits > 0 { pow_mask(bits)? } else { 0 };
        // Lazy weights must cover the chain's rounds; otherwise w is written out first.
        if self.lazy.as_ref().is_some_and(|l| l.bound + rounds > l.rounds) || self.lazy_slots.as_ref().is_some_and(|l| l.bound + rounds > l.rounds) {
            self.materialize_weights()?;
        }
        self.ensure_weights_for_rounds()?;
        let lazy_start = self.lazy.as_ref().map(|l| l.bound);
        let ctx = self.ctx.clone();
        let mut state = ChainState { sponge: [0; WIDTH], pending: [0; RATE], info: [pending.len() as u32, 0, 0, mask], r: [0; 4], range: [0; 4] };
        state.sponge.copy_from_slice(crate::field::as_words(sponge));
        state.pending[..pending.len()].copy_from_slice(crate::field::as_words(pending));
        if bits > 0 {
            state.range[0] = self.chain_range.unwrap_or_else(|| range_end(bits));
        }
        let vars = self.vars;
        ctx.scoped("sumcheck chain", || {
            let mut batch = ctx.batch("sumcheck chain");
            let chain = batch.upload("sumcheck chain", bytemuck::cast_slice(&[state]));
            // Bound where a round does not grind (the kernels' layout has the grind's buffers).
            let unused = [batch.scratch("chain grind params", WIDTH + 4), batch.scratch("chain grind best", 1)];
            // Lazy slot terms' coefficients as they are now, for the GPU to bind round by round.
            let slot_coeffs = self.lazy_slots.as_ref().map(|l| batch.upload("lazy slot coefficients", ext_as_words::<F, E>(&l.coefficients())));
            let lanes = ctx.tuning().transcript_consts();
            let observe = ctx.pipeline_over(F::ID, E::ID, Kernel::ChainObserve, &lanes)?;
            let sample = ctx.pipeline_over(F::ID, E::ID, Kernel::ChainSample, &lanes)?;
            // Per round played: where its pair, its challenge and its grind come back.
            let (mut reads, mut retired) = (Vec::with_capacity(rounds), Vec::new());
            let mut recorded = Ok(());
            for k in 0..=rounds {
                let mut dispatches = Vec::new();
                if k > 0 {
                    match self.record_fold_with(&mut dispatches, FoldChallenge::Chain(&chain)) {
                        Ok(old) => retired.push(old),
                        Err(e) => {
                            recorded = Err(e);
                            break;
                        }
                    }
                }
                if k == rounds {
                    batch.record(&dispatches);
                    break;
                }
                let round = (|| -> Result<(wgpu::Buffer, Option<GrindAheadRecord<F>>)> {
                    let pair = match &slot_coeffs {
                        Some(coeffs) => self.record_lazy_slot_round(&mut batch, &mut dispatches, k, coeffs, &chain)?,
                        None => {
                            let (partials, groups) = self.record_round(&mut dispatches)?;
                            let (pair, used) = self.record_reduction(&mut dispatches, partials, groups)?;
                            used.into_iter().for_each(|b| batch.lend(b));
                            pair
                        }
                    };
                    let record = if bits > 0 { Some(grinder.device_grind(bits, state.range[0])?) } else { None };
                    let (params, best) = record.as_ref().map_or((&unused[0], &unused[1]), |r| (r.params(), r.best()));
                    let bind = grinder.poseidon2().bind(&observe, &[&chain, &pair, params, best]);
                    dispatches.push(Dispatch { pipeline: (*observe).clone(), bind, groups: 1 });
                    if let Some(r) = &record {
                        grinder.record_device_grind(&mut dispatches, r)?;
                    }
                    let bind = grinder.poseidon2().bind(&sample, &[&chain, &pair, params, best]);
                    dispatches.push(Dispatch { pipeline: (*sample).clone(), bind, groups: 1 });
                    Ok((pair, record))
                })();
                let (pair, record) = match round {
                    Ok(r) => r,
                    Err(e) => {
                        recorded = Err(e);
                        break;
                    }
                };
                batch.record(&dispatches);
                // The pair and the grind's buffers are this round's alone; the chain state's
                // challenge changes every round, so it is copied now.
                let pair_slot = batch.read(&pair, 0, 8);
                let r_slot = batch.snapshot(&chain, (CHAIN_R_AT / 4) as usize, 4);
                reads.push((pair_slot, r_slot, record.map(|r| r.read_in(&mut batch))));
                batch.lend(pair);
                // Each round goes to the GPU once recorded, so the GPU runs it while the next
                // one is recorded (a round's dispatches and bind groups take the host ~0.1 ms).
                if k + 1 < rounds {
                    if let Err(e) = batch.submit_part() {
                        recorded = Err(e);
                        break;
                    }
                }
            }
            let info = batch.read(&chain, (CHAIN_INFO_AT / 4) as usize, 4);
            // (A batch that failed to record is dropped unrun: its buffers go back.)
            let read = recorded.and_then(|()| ctx.run(batch));
            let parsed = read.and_then(|readback| self.parse_chain(&readback, rounds, &reads, info));
            if let Ok(p) = &parsed {
                tracing::debug!(rounds, bits, played = p.iter().filter(|c| c.r.is_some()).count(), "sumcheck rounds played on the GPU");
            }
            // The tables after the rounds played: every fold's output is kept until now, as a
            // chain that stopped early leaves its later folds undone.
            let played = parsed.as_ref().map_or(0, |p| p.iter().filter(|c| c.r.is_some()).count());
            if played < retired.len() {
                let (f, w) = retired.swap_remove(played);
                for b in std::mem::replace(&mut self.f, f).buffers.into_iter().chain(std::mem::replace(&mut self.w, w).buffers) {
                    ctx.recycle_storage(b);
                }
            }
            self.vars = vars - played;
            for (f, w) in retired {
                for b in f.buffers.into_iter().chain(w.buffers) {
                    ctx.recycle_storage(b);
                }
            }
            // Lazy weights: the host's coefficients follow the challenges played (the GPU's
            // stopped where the chain did); after an error they are written back as they were.
            if let (Some(lazy), Some(start)) = (self.lazy.as_mut(), lazy_start) {
                lazy.bound = start;
                match &parsed {
                    Ok(p) => p.iter().filter_map(|c| c.r).for_each(|r| lazy.bind(r)),
                    Err(_) => ctx.write(&lazy.coeffs, ext_as_words::<F, E>(&lazy.coeff_words())),
                }
            }
            if let (Some(lazy), Ok(p)) = (self.lazy_slots.as_mut(), &parsed) {
                p.iter().filter_map(|c| c.r).for_each(|r| lazy.bind(r));
            }
            if self.lazy.as_ref().is_some_and(|l| l.bound >= l.rounds) || self.lazy_slots.as_ref().is_some_and(|l| l.bound >= l.rounds) {
                self.materialize_weights()?;
            }
            parsed
        })
    }

    /// Tests: chained grinds search `0..end` (None: the usual range), so a chain can be made
    /// to stop.
    #[doc(hidden)]
    pub fn set_chain_range(&mut self, end: Option<u32>) {
        self.chain_range = end;
    }

    /// The rounds a chain played, from its readback.
    fn parse_chain(
        &self,
        readback: &Readback,
        rounds: usize,
        reads: &[(ReadSlot, ReadSlot, Option<GrindRead<F>>)],
        info: ReadSlot,
    ) -> Result<Vec<ChainedRound<F, E>>> {
        let info = readback.get(info)?;
        let (stopped, played) = (info[1] != 0, info[2] as usize);
        if played > rounds || stopped == (played == rounds) || reads.len() != rounds {
            return Err(GpuError::Device(format!("a sumcheck chain of {rounds} rounds reports {played} played (stopped: {stopped})")));
        }
        let mut out = Vec::with_capacity(played + 1);
        for (k, (pair, r, grind)) in reads.iter().enumerate().take(played.min(rounds - 1) + 1) {
            let pair = ext_from_words::<F, E>(readback.get(*pair)?.to_vec())?;
            let r = if k < played { Some(ext_from_words::<F, E>(readback.get(*r)?.to_vec())?[0]) } else { None };
            let offer = grind.as_ref().map(|g| g.offer(readback)).transpose()?;
            out.push(ChainedRound { c0: pair[0], c_inf: pair[1], r, offer });
        }
        Ok(out)
    }

    fn check_point(&self, point: &[E]) -> Result<()> {
        if point.len() != self.vars {
            return Err(GpuError::InvalidInput(format!("a point of {} coordinates for {} variables", point.len(), self.vars)));
        }
        Ok(())
    }

    /// `w[x] += Σ_j scales[j]·eq(points[j], x)`, coordinate 0 paired with the top bit of x.
    pub fn add_eq_weights(&mut self, points: &[Vec<E>], scales: &[E]) -> Result<()> {
        if points.len() != scales.len() {
            return Err(GpuError::InvalidInput(format!("{} points with {} scales", points.len(), scales.len())));
        }
        if points.is_empty() {
            return Ok(());
        }
        for p in points {
            self.check_point(p)?;
        }
        self.materialize_weights()?;
        self.ensure_weights()?;
        let points = self.table_points(points);
        self.write_eq_weights(&points, scales)
    }

    /// The body of [`add_eq_weights`](Self::add_eq_weights), onto w's table as it is.
    fn write_eq_weights(&self, points: &[Vec<E>], scales: &[E]) -> Result<()> {
        // eq(p, x) = eq(p_hi, x_hi) · eq(p_lo, x_lo), split at the low `low` bits: the two
        // small tables per point are built here (2^(m-low) + 2^low entries), the kernel does
        // one product per entry and point. Split in half, the host builds ~2^(m/2 + 1) entries
        // per point (at m = 24 a fixed 8-bit low table left 2^16 for the high one: ~2.5 ms of
        // host time per point on the H200's host, measured as round 0's weights step).
        let low = self.vars.div_ceil(2);
        let (mut highs, mut lows) = (Vec::new(), Vec::new());
        for (p, &s) in points.iter().zip(scales) {
            let (hi, lo) = p.split_at(self.vars - low);
            highs.extend(eq_table(hi, E::ONE));
            lows.extend(eq_table(lo, s));
        }
        self.dispatch_weights(Kernel::AddEqWeights, &highs, &lows, points.len(), 1, low)
    }

    /// `w[x] += Σ_j scales[j]·vars[j]^x`.
    pub fn add_select_weights(&mut self, vars: &[F], scales: &[E]) -> Result<()> {
        if vars.len() != scales.len() {
            return Err(GpuError::InvalidInput(format!("{} select variables with {} scales", vars.len(), scales.len())));
        }
        if vars.is_empty() {
            return Ok(());
        }
        self.materialize_weights()?;
        self.ensure_weights()?;
        if self.reversed {
            // Entry x of the table weighs v^rev(x), rev(x) = rev_L(x_lo) 2^(m-L) + rev(x_hi):
            // the split tables hold those powers, and the kernel is the split one.
            use rayon::prelude::*;
            let m = self.vars;
            let low = m.div_ceil(2);
            let (hi_len, lo_len) = (1usize << (m - low), 1usize << low);
            let mut highs = vec![E::ZERO; hi_len * vars.len()];
            let mut lows = vec![E::ZERO; lo_len * vars.len()];
            highs.par_chunks_mut(hi_len).zip(lows.par_chunks_mut(lo_len)).zip(vars.par_iter().zip(scales)).for_each(|((hi, lo), (&v, &s))| {
                for (x, p) in v.powers().take(hi_len).enumerate() {
                    hi[reverse_low_bits(x, m - low)] = E::from(p);
                }
                for (x, p) in v.exp_power_of_2(m - low).powers().take(lo_len).enumerate() {
                    lo[reverse_low_bits(x, low)] = s * p;
                }
            });
            return self.dispatch_weights(Kernel::AddSplitSelectWeights, &highs, &lows, vars.len(), 1, low);
        }
        // Many variables over a large table: split powers (v^(x_hi 2^L) and s v^x_lo, built
        // here: 2^(m/2 + 1) entries per variable), four multiplications per entry and variable.
        if vars.len() >= SPLIT_SELECT_MIN_VARS && self.vars >= SPLIT_SELECT_MIN_LOG {
            use rayon::prelude::*;
            let low = self.vars.div_ceil(2);
            let (hi_len, lo_len) = (1usize << (self.vars - low), 1usize << low);
            // Filled on all cores: at n = 28 (round 1) hundreds of variables make ~10^6 entries.
            let mut highs = vec![E::ZERO; hi_len * vars.len()];
            let mut lows = vec![E::ZERO; lo_len * vars.len()];
            highs.par_chunks_mut(hi_len).zip(lows.par_chunks_mut(lo_len)).zip(vars.par_iter().zip(scales)).for_each(|((hi, lo), (&v, &s))| {
                for (slot, p) in hi.iter_mut().zip(v.exp_power_of_2(low).powers()) {
                    *slot = E::from(p);
                }
                for (slot, p) in lo.iter_mut().zip(v.powers()) {
                    *slot = s * p;
                }
            });
            return self.dispatch_weights(Kernel::AddSplitSelectWeights, &highs, &lows, vars.len(), 1, low);
        }
        // Per variable, its squares v^(2^b) for b < m (at least one entry: v itself).
        let per_var = self.vars.max(1);
        let squares: Vec<E> = vars
            .iter()
            .flat_map(|&v| {
                let mut s = v;
                (0..per_var).map(move |_| {
                    let out = E::from(s);
                    s = s.square();
                    out
                })
            })
            .collect();
        self.dispatch_weights(Kernel::AddSelectWeights, &squares, scales, vars.len(), 4, per_var)
    }

    /// `f(point) = Σ_x f[x]·eq(point, x)`: one pass over f against the point's chunked equality
    /// tables (eval.wgsl), one submission, one readback of the value.
    pub fn eval(&self, point: &[E]) -> Result<E> {
        self.check_point(point)?;
        let tables = eq_chunk_tables(&self.table_point(point));
        self.ctx.scoped("sumcheck eval", || {
            let chunks = tables.len() >> EVAL_CHUNK_BITS;
            let mut batch = self.ctx.batch("sumcheck eval");
            let tables = batch.upload("eval tables", ext_as_words::<F, E>(&tables));
            let mut dispatches = Vec::new();
            let (partials, groups) = self.record_eval(&mut dispatches, &tables, chunks)?;
            let (value, zero) = self.finish_reduction(batch, dispatches, partials, groups)?;
            debug_assert_eq!(zero, E::ZERO);
            Ok(value)
        })
    }

    /// Checks `slots` against the tables: a point of at most m coordinates, each slot inside.
    fn check_slots(&self, slots: &Slots<'_, E>) -> Result<()> {
        let k = slots.point.len();
        if k > self.vars {
            return Err(GpuError::InvalidInput(format!("slots of 2^{k} entries in a table of 2^{}", self.vars)));
        }
        if let Some(&bad) = slots.offsets.iter().find(|&&o| o.checked_add(1 << k).is_none_or(|end| end > self.size())) {
            return Err(GpuError::InvalidInput(format!("a slot of 2^{k} entries from entry {bad} runs past the table's 2^{}", self.vars)));
        }
        Ok(())
    }

    /// Each slot of each set evaluated at its set's point (see [`Slots`]):
    /// `Σ_i f[offset + s(i)]·eq(point, i)`, s(i) = i or the successor's min(i + 1, 2^k − 1). One
    /// submission and one readback of the values for all the sets.
    pub fn eval_slots(&self, sets: &[Slots<'_, E>]) -> Result<Vec<Vec<E>>> {
        for set in sets {
            self.check_slots(set)?;
        }
        // At reversed indices a slot's plain value is its entries at the reversed point; its
        // successor view is read through the reversed indices (the kernel's `reversed`).
        let points: Vec<std::borrow::Cow<'_, [E]>> =
            sets.iter().map(|s| if s.successor { std::borrow::Cow::Borrowed(s.point) } else { self.table_point(s.point) }).collect();
        let reads: Vec<SlotRead<'_, E>> = sets
            .iter()
            .zip(&points)
            .map(|(s, p)| SlotRead { point: p, offsets: s.offsets, shift: u32::from(s.successor), reversed: self.reversed && s.successor })
            .collect();
        self.read_slots(&reads)
    }

    /// Each slot of each read `(point, offsets, shift)` evaluated at its point, entry i of the
    /// slot replaced by entry min(i + shift, 2^k − 1) (slots checked by the caller). One
    /// submission and one readback; reads at the same point share its tables.
    fn read_slots(&self, sets: &[SlotRead<'_, E>]) -> Result<Vec<Vec<E>>> {
        let total: usize = sets.iter().map(|s| s.offsets.len()).sum();
        if total == 0 {
            return Ok(sets.iter().map(|_| Vec::new()).collect());
        }
        let ctx = self.ctx.clone();
        ctx.scoped("sumcheck slot evaluations", || {
            let mut batch = ctx.batch("sumcheck slot evaluations");
            let mut dispatches = Vec::new();
            let values = self.record_slot_reads(&mut batch, &mut dispatches, sets)?;
            batch.record(&dispatches);
            let read = batch.read(&values, 0, E::WORDS * total);
            let readback = ctx.run(batch)?;
            let mut values = ext_from_words::<F, E>(readback.get(read)?.to_vec())?.into_iter();
            Ok(sets.iter().map(|s| values.by_ref().take(s.offsets.len()).collect()).collect())
        })
    }

    /// Records [`read_slots`](Self::read_slots)' work into `batch` (at least one slot): returns
    /// the buffer its values end in, the reads' slots end to end.
    fn record_slot_reads(&self, batch: &mut Batch<'_>, dispatches: &mut Vec<Dispatch>, sets: &[SlotRead<'_, E>]) -> Result<wgpu::Buffer> {
        let total: usize = sets.iter().map(|s| s.offsets.len()).sum();
        // Every slot of every read in one evaluation dispatch per segment and one sum
        // (wgsl/sumcheck/slot_eval.wgsl): a round of lazy slot weights reads hundreds of slots
        // at tens of points, and a dispatch per point cost more than the reads themselves.
        let mut tables = PlacedEqTables::default();
        let mut slots: Vec<u32> = Vec::with_capacity(8 * total);
        let mut owners: Vec<u32> = Vec::new();
        for &SlotRead { point, offsets, shift, reversed } in sets {
            if offsets.is_empty() {
                continue;
            }
            let k = point.len();
            if k >= 32 || shift >= 1 << 8 {
                return Err(GpuError::InvalidInput(format!("a slot of 2^{k} entries shifted by {shift} rows (at most 2^31 entries and 255 rows)")));
            }
            let (hi_at, lo_at, low) = tables.place(std::borrow::Cow::Borrowed(point));
            // Enough workgroups per slot to fill the GPU for a large slot, each over at least
            // 2^12 entries (and a power of two of the 2^(k - low) rows).
            let groups = ((1usize << k) >> 12).clamp(1, 256).min(1 << (k - low));
            for &offset in offsets {
                let first = u32::try_from(owners.len()).map_err(|_| GpuError::InvalidInput("more than 2^32 workgroups of slot reads".into()))?;
                let packed = low as u32 | (shift << 8) | (u32::from(reversed) << 16);
                slots.extend_from_slice(&[offset as u32, 1 << k, packed, groups as u32, first, hi_at, lo_at, 0]);
                owners.extend(std::iter::repeat_n((slots.len() / 8 - 1) as u32, groups));
            }
        }
        let ctx = &self.ctx;
        let eval = ctx.pipeline_over(F::ID, E::ID, Kernel::EvalSlotPartials, &[])?;
        let sum = ctx.pipeline_over(F::ID, E::ID, Kernel::SumSlotPartials, &[])?;
        let placed = tables.points();
        let tables = tables.tables;
        ctx.check_binding_size("the slot reads' equality tables", tables.len() as u64 * Self::BYTES)?;
        ctx.check_binding_size("the slot reads' partial sums", (owners.len() * self.segments()) as u64 * Self::BYTES)?;
        // One description (32 bytes) per slot and one owner word per workgroup: a witness of
        // very many short columns is refused here, not by wgpu's validation.
        ctx.check_binding_size("the slot reads' descriptions", (slots.len() * 4) as u64)?;
        ctx.check_binding_size("the slot reads' workgroup owners", (owners.len() * 4) as u64)?;
        let values = batch.scratch("slot values", E::WORDS * total);
        let tables_buffer = batch.upload("slot eq tables", ext_as_words::<F, E>(&tables));
        let slot_words = batch.upload("slot descriptions", &slots);
        let owner_words = batch.upload("slot workgroup owners", &owners);
        let total_groups = owners.len();
        let partials = batch.scratch("slot partials", E::WORDS * total_groups * self.segments());
        let first = dispatches.len();
        for j in 0..self.segments() {
            let segment = self.f.segment_len();
            let params = SlotEvalParams {
                base: u32::from(self.is_base()),
                seg_offset: (j * segment) as u32,
                seg_size: segment as u32,
                segment: j as u32,
                total_groups: total_groups as u32,
                _pad: [0; 3],
            };
            let params = ctx.uniform("slot eval params", &params);
            let bind = ctx.bind_ranges(
                &eval,
                &[(&params, 0, None), self.f.range(j), (&tables_buffer, 0, None), (&slot_words, 0, None), (&owner_words, 0, None), (&partials, 0, None)],
            );
            dispatches.push(Dispatch { pipeline: (*eval).clone(), bind, groups: total_groups as u32 });
        }
        let params = ctx
            .uniform("slot sum params", &SlotSumParams { count: total as u32, total_groups: total_groups as u32, segments: self.segments() as u32, _pad: 0 });
        let bind = ctx.bind_ranges(&sum, &[(&params, 0, None), (&partials, 0, None), (&slot_words, 0, None), (&values, 0, None)]);
        dispatches.push(Dispatch { pipeline: (*sum).clone(), bind, groups: total as u32 });
        tracing::debug!(dispatches = dispatches.len() - first, tables = placed, slots = total, "slot reads recorded");
        Ok(values)
    }

    /// `w[offset + i] += scale·eq(point, i)` over each slot of each set (see [`Slots`]; with
    /// `successor`, the weight under which Σ f·w is the successor view's value), one scale per
    /// slot, in one submission.
    pub fn add_slot_weights(&mut self, sets: &[(Slots<'_, E>, &[E])]) -> Result<()> {
        for (set, scales) in sets {
            self.check_slots(set)?;
            if scales.len() != set.offsets.len() {
                return Err(GpuError::InvalidInput(format!("{} slots with {} scales", set.offsets.len(), scales.len())));
            }
        }
        if sets.iter().all(|(s, _)| s.offsets.is_empty()) {
            return Ok(());
        }
        self.materialize_weights()?;
        self.ensure_weights()?;
        self.write_slot_weights(sets)
    }

    /// Slot weights kept unwritten for the next `rounds` rounds (see `lazy_slots`): those
    /// rounds combine slot evaluations of f (on the GPU in a chain, else here after one wait a
    /// round) and their folds bind f alone; w is written at the folded size once they are
    /// played (or earlier, when other weights are added). Needs a w without weights yet, slots
    /// aligned to their size (as a stacked layout's are) and at least one round; otherwise the
    /// weights are added as by [`add_slot_weights`](Self::add_slot_weights).
    pub fn set_lazy_slot_weights(&mut self, sets: &[(Slots<'_, E>, &[E])], rounds: usize) -> Result<()> {
        for (set, scales) in sets {
            self.check_slots(set)?;
            if scales.len() != set.offsets.len() {
                return Err(GpuError::InvalidInput(format!("{} slots with {} scales", set.offsets.len(), scales.len())));
            }
        }
        // (At reversed indices the weights are stored: the lazy rounds read slots in order.)
        if self.reversed || !self.w.buffers.is_empty() || self.lazy.is_some() || self.lazy_slots.is_some() {
            return self.add_slot_weights(sets);
        }
        match LazySlots::new(sets, rounds.min(self.vars)) {
            Some(lazy) => {
                tracing::debug!(rounds = lazy.rounds, sets = sets.len(), "slot weights kept lazy");
                self.lazy_slots = Some(lazy);
                Ok(())
            }
            None => self.add_slot_weights(sets),
        }
    }

    /// A round's h(0) and h(∞) from the slot evaluations lazy slot weights need.
    fn lazy_slot_round(&mut self) -> Result<(E, E)> {
        let lazy = self.lazy_slots.as_ref().expect("called with lazy slot weights");
        if lazy.bound >= lazy.rounds {
            return Err(GpuError::InvalidInput(format!("lazy weights cover {} rounds; {} were played", lazy.rounds, lazy.bound)));
        }
        let started = std::time::Instant::now();
        let sets = lazy_slot_reads(lazy.plan_at(lazy.bound));
        let values = self.read_slots(&sets)?;
        let read = started.elapsed();
        let out = lazy.round(&values);
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        tracing::debug!(
            reads = sets.len(),
            slots = sets.iter().map(|s| s.offsets.len()).sum::<usize>(),
            read_ms = ms(read),
            combine_ms = ms(started.elapsed() - read),
            "lazy slot round"
        );
        Ok(out)
    }

    /// Records round `k` of a chain over lazy slot weights: the round's slot reads, then one
    /// workgroup (wgsl/sumcheck/lazy_slot_round.wgsl) that binds the terms' coefficients
    /// `coeffs` to the challenge the chain drew last (from its second round) and combines the
    /// values into h(0), h(∞). Returns the pair's buffer (pooled; the caller lends it).
    fn record_lazy_slot_round(
        &self,
        batch: &mut Batch<'_>,
        dispatches: &mut Vec<Dispatch>,
        k: usize,
        coeffs: &wgpu::Buffer,
        chain: &wgpu::Buffer,
    ) -> Result<wgpu::Buffer> {
        let lazy = self.lazy_slots.as_ref().expect("called with lazy slot weights");
        let t = lazy.bound + k;
        let plan = lazy.plan_at(t);
        let sets = lazy_slot_reads(plan);
        let values = self.record_slot_reads(batch, dispatches, &sets)?;
        let terms = batch.upload("lazy slot terms", &plan.term_words(lazy.term_groups()));
        let constants = batch.upload("lazy slot round constants", ext_as_words::<F, E>(&lazy.round_constants(t)));
        let params = LazySlotParams { terms: lazy.terms() as u32, bind: u32::from(k > 0), _pad: [0; 2] };
        let params = self.ctx.uniform("lazy slot round params", &params);
        let pair = self.ctx.pooled_storage("lazy slot round pair", 8);
        let pipeline = self.ctx.pipeline_over(F::ID, E::ID, Kernel::LazySlotRound, &[])?;
        let bind = self.ctx.bind_buffers(&pipeline, &[&params, &values, &terms, &constants, coeffs, &pair, chain]);
        dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: 1 });
        Ok(pair)
    }

    /// The body of [`add_slot_weights`](Self::add_slot_weights), onto w's table as it is: every
    /// slot of every set in one dispatch per segment and layer (wgsl/sumcheck/slot_weights.wgsl),
    /// the slots of a layer pairwise disjoint (a stacked table's columns are; a column opened in
    /// several batches, or at its successor view, is in as many layers).
    fn write_slot_weights(&self, sets: &[(Slots<'_, E>, &[E])]) -> Result<()> {
        use std::collections::BTreeMap;
        let mut tables = PlacedEqTables::default();
        // Per layer: the entries it covers (start -> end), its slot words and workgroup owners.
        type Layer = (BTreeMap<usize, usize>, Vec<u32>, Vec<u32>);
        let mut layers: Vec<Layer> = Vec::new();
        for (set, scales) in sets {
            if set.offsets.is_empty() {
                continue;
            }
            let k = set.point.len();
            // As in `eval_slots`: plain weights at the reversed point, successor weights
            // through the reversed indices.
            let reversed = self.reversed && set.successor;
            let point = if set.successor { std::borrow::Cow::Borrowed(set.point) } else { self.table_point(set.point) };
            let (hi_at, lo_at, low) = tables.place(point);
            // Runs of at least 2^11 entries (eight a thread), so a large slot fills the GPU.
            let size = 1usize << k;
            let groups = (size >> 11).max(1);
            for (&start, &scale) in set.offsets.iter().zip(scales.iter()) {
                let end = start + size;
                let free = |taken: &BTreeMap<usize, usize>| {
                    taken.range(..=start).next_back().is_none_or(|(_, &e)| e <= start) && taken.range(start..end).next().is_none()
                };
                let layer = match layers.iter().position(|(taken, _, _)| free(taken)) {
                    Some(l) => l,
                    None => {
                        layers.push((BTreeMap::new(), Vec::new(), Vec::new()));
                        layers.len() - 1
                    }
                };
                let (taken, slots, owners) = &mut layers[layer];
                taken.insert(start, end);
                let first = u32::try_from(owners.len()).map_err(|_| GpuError::InvalidInput("more than 2^32 workgroups of slot weights".into()))?;
                let scale_at = tables.tables.len() as u32;
                tables.tables.push(scale);
                let packed = low as u32 | (u32::from(set.successor) << 8) | (u32::from(reversed) << 16);
                slots.extend_from_slice(&[start as u32, size as u32, packed, groups as u32, first, hi_at, lo_at, scale_at]);
                owners.extend(std::iter::repeat_n((slots.len() / 8 - 1) as u32, groups));
            }
        }
        if layers.is_empty() {
            return Ok(());
        }
        let placed = tables.points();
        let tables = tables.tables;
        let ctx = self.ctx.clone();
        ctx.scoped("sumcheck slot weights", || {
            let pipeline = ctx.pipeline_over(F::ID, E::ID, Kernel::AddSlotWeights, &[])?;
            ctx.check_binding_size("the slot weights' equality tables and scales", tables.len() as u64 * Self::BYTES)?;
            let mut batch = ctx.batch("sumcheck slot weights");
            let tables = batch.upload("slot weight tables", ext_as_words::<F, E>(&tables));
            let mut dispatches = Vec::new();
            for (_, slots, owners) in &layers {
                // One description (32 bytes) per slot and one owner word per workgroup.
                ctx.check_binding_size("the slot weights' descriptions", (slots.len() * 4) as u64)?;
                ctx.check_binding_size("the slot weights' workgroup owners", (owners.len() * 4) as u64)?;
                let (slot_words, owner_words) = (batch.upload("slot weight descriptions", slots), batch.upload("slot weight owners", owners));
                for j in 0..self.segments() {
                    let segment = self.w.segment_len();
                    let params = SlotWeightParams { seg_offset: (j * segment) as u32, seg_size: segment as u32, total_groups: owners.len() as u32, _pad: 0 };
                    let params = ctx.uniform("slot weight params", &params);
                    let bind =
                        ctx.bind_ranges(&pipeline, &[(&params, 0, None), (&tables, 0, None), (&slot_words, 0, None), (&owner_words, 0, None), self.w.range(j)]);
                    dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: owners.len() as u32 });
                }
            }
            tracing::debug!(dispatches = dispatches.len(), layers = layers.len(), tables = placed, "slot weights recorded");
            batch.record(&dispatches);
            ctx.send(batch)
        })
    }

    /// Records the evaluation kernel over f against `chunks` chunk tables of 256 entries in
    /// `tables` (eval.wgsl), one dispatch per segment: returns the partial pairs (value, 0) and
    /// how many.
    fn record_eval(&self, dispatches: &mut Vec<Dispatch>, tables: &wgpu::Buffer, chunks: usize) -> Result<(wgpu::Buffer, usize)> {
        let segment = self.f.segment_len();
        // Rows of 256 entries, whole rows per workgroup (wgsl/sumcheck/eval.wgsl).
        let rows = (segment >> EVAL_CHUNK_BITS).max(1);
        if segment < 1 << EVAL_CHUNK_BITS && self.segments() > 1 {
            return Err(GpuError::InvalidInput(format!("an evaluation over segments of {segment} entries (need 256 or more)")));
        }
        // Enough workgroups to fill the GPU, each over up to 256 rows.
        let rows_per_group = (rows / MAX_REDUCE_GROUPS).clamp(1, 1 << EVAL_CHUNK_BITS);
        let groups = rows / rows_per_group;
        let pipeline = self.ctx.pipeline_over(F::ID, E::ID, Kernel::EvalPartials, &[])?;
        let partials = self.ctx.pooled_storage("sumcheck partials", 2 * E::WORDS * groups * self.segments());
        for j in 0..self.segments() {
            let params = EvalParams {
                size: segment as u32,
                groups: groups as u32,
                chunks: chunks as u32,
                base: u32::from(self.is_base()),
                offset: (j * segment) as u32,
                first: (j * groups) as u32,
                rows: rows_per_group as u32,
                _pad: 0,
            };
            let params = self.ctx.uniform("eval params", &params);
            let bind = self.ctx.bind_ranges(&pipeline, &[(&params, 0, None), self.f.range(j), (tables, 0, None), (&partials, 0, None)]);
            dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: groups as u32 });
        }
        Ok((partials, groups * self.segments()))
    }

    /// Records into `batch`, after work that leaves a Merkle root's 8 words at the start of
    /// `root`, the sponge script `script` (wgsl/sumcheck/sponge_step.wgsl): a duplex challenger
    /// in the state it gives observes the root, draws each point z and observes f's value at
    /// `expand_from_univariate(z, m)` (computed here: sumcheck/power_tables, then the
    /// evaluation), then grinds `script.grind_bits` bits (none at 0) over one range. Once the
    /// batch has run, [`finish_sponge_script`](Self::finish_sponge_script) gives what it found.
    /// Records nothing and reads nothing when it returns an error.
    pub fn record_sponge_script(&self, batch: &mut Batch<'_>, root: &wgpu::Buffer, script: &SpongeScript<F>) -> Result<SpongeScriptRecord<F>> {
        Self::check_transcript_extension("a sponge script")?;
        if script.pending.len() >= RATE {
            return Err(GpuError::InvalidInput(format!("{} pending inputs (a duplex challenger holds at most {})", script.pending.len(), RATE - 1)));
        }
        if script.samples > MAX_SCRIPT_SAMPLES {
            return Err(GpuError::InvalidInput(format!("{} points in one sponge script (at most {MAX_SCRIPT_SAMPLES})", script.samples)));
        }
        if !Arc::ptr_eq(script.grinder.poseidon2().context(), &self.ctx) {
            return Err(GpuError::InvalidInput("the grinder lives on another GPU context".into()));
        }
        if root.size() < (DIGEST_ELEMS * 4) as u64 {
            return Err(GpuError::InvalidInput(format!("a root buffer of {} bytes", root.size())));
        }
        let mask = if script.grind_bits > 0 { pow_mask(script.grind_bits)? } else { 0 };
        let ctx = &self.ctx;
        let samples = script.samples;
        let chunks = self.vars.div_ceil(EVAL_CHUNK_BITS).max(1);
        let step_pipeline = ctx.pipeline_over(F::ID, E::ID, Kernel::SpongeStep, &ctx.tuning().transcript_consts())?;
        let tables_pipeline = ctx.pipeline_over(F::ID, E::ID, Kernel::PowerTables, &[])?;
        let grind = if script.grind_bits > 0 { Some(script.grinder.device_grind(script.grind_bits, range_end(script.grind_bits))?) } else { None };
        let mut state = SpongeState { sponge: [0; WIDTH], pending: [0; RATE], info: [script.pending.len() as u32, 0, 0, 0] };
        state.sponge.copy_from_slice(crate::field::as_words(&script.sponge));
        state.pending[..script.pending.len()].copy_from_slice(crate::field::as_words(&script.pending));
        let state = batch.upload("sponge script state", bytemuck::cast_slice(&[state]));
        let points = batch.scratch("sponge script points", 4 * samples.max(1));
        let tables = batch.scratch("sponge script tables", (4 * chunks) << EVAL_CHUNK_BITS);
        // Bound where the script does not grind (the kernel's layout has the grind's buffers).
        let (params, best) = match &grind {
            Some(g) => (g.params().clone(), g.best().clone()),
            None => (batch.scratch("sponge script grind params", WIDTH + 4), batch.scratch("sponge script grind best", 1)),
        };
        let mut values = Vec::with_capacity(samples);
        let recorded = (|| -> Result<Vec<Dispatch>> {
            let mut dispatches = Vec::new();
            // Observe what the last step left (the root; then each value), then draw a point
            // (k < samples) or set up the grind (k = samples; without a grind nothing follows
            // the last value, so it is not observed here).
            for k in 0..samples + usize::from(grind.is_some()) {
                let (observed, words): (&wgpu::Buffer, u32) = if k == 0 { (root, DIGEST_ELEMS as u32) } else { (&values[k - 1], 4) };
                let step = SpongeStep {
                    observe: [0, words, u32::from(k < samples), k as u32],
                    grind: [mask, grind.as_ref().map_or(0, |_| range_end(script.grind_bits))],
                    _pad: [0; 2],
                };
                let step = ctx.uniform("sponge script step", &step);
                let bind = script.grinder.poseidon2().bind(&step_pipeline, &[&step, &state, observed, &points, &params, &best]);
                dispatches.push(Dispatch { pipeline: (*step_pipeline).clone(), bind, groups: 1 });
                if k == samples {
                    break;
                }
                let cfg = ctx.uniform(
                    "sponge script tables params",
                    &PowerTablesParams { vars: self.vars as u32, point: k as u32, reversed: u32::from(self.reversed), _pad: 0 },
                );
                let bind = ctx.bind_ranges(&tables_pipeline, &[(&cfg, 0, None), (&points, 0, None), (&tables, 0, None)]);
                dispatches.push(Dispatch { pipeline: (*tables_pipeline).clone(), bind, groups: chunks as u32 });
                let (partials, groups) = self.record_eval(&mut dispatches, &tables, chunks)?;
                let (value, used) = self.record_reduction(&mut dispatches, partials, groups)?;
                values.push(value);
                used.into_iter().for_each(|b| batch.lend(b));
            }
            if let Some(g) = &grind {
                script.grinder.record_device_grind(&mut dispatches, g)?;
            }
            Ok(dispatches)
        })();
        let dispatches = match recorded {
            Ok(d) => d,
            Err(e) => {
                values.into_iter().for_each(|b| batch.lend(b));
                if let Some(g) = grind {
                    g.lend_to(batch);
                }
                return Err(e);
            }
        };
        batch.record(&dispatches);
        let samples = values.iter().enumerate().map(|(k, value)| (batch.read(&points, 4 * k, 4), batch.read(value, 0, 4))).collect();
        values.into_iter().for_each(|b| batch.lend(b));
        Ok(SpongeScriptRecord { samples, grind: grind.map(|g| g.read_in(batch)) })
    }

    /// What a [`record_sponge_script`](Self::record_sponge_script) played, from its batch's
    /// readback.
    pub fn finish_sponge_script(&self, record: SpongeScriptRecord<F>, readback: &Readback) -> Result<SpongeScriptValues<F, E>> {
        let mut points = Vec::with_capacity(record.samples.len());
        let mut answers = Vec::with_capacity(record.samples.len());
        for (point, value) in record.samples {
            points.push(ext_from_words::<F, E>(readback.get(point)?.to_vec())?[0]);
            answers.push(ext_from_words::<F, E>(readback.get(value)?.to_vec())?[0]);
        }
        let offer = record.grind.map(|g| g.offer(readback)).transpose()?;
        Ok(SpongeScriptValues { points, answers, offer })
    }

    /// A table's 2^m entries, read back segment by segment.
    fn read_table(&self, table: &Table) -> Result<Vec<u32>> {
        let words = table.words << self.vars;
        if let [one] = table.buffers.as_slice() {
            return self.ctx.submit_and_read(self.ctx.encoder("sumcheck table"), one, words);
        }
        let mut out = Vec::with_capacity(words);
        for b in &table.buffers {
            out.extend(self.ctx.submit_and_read(self.ctx.encoder("sumcheck table"), b, table.words << table.seg_log)?);
        }
        Ok(out)
    }

    /// f's table (a base-field f lifted into the extension).
    pub fn evals(&self) -> Result<Vec<E>> {
        let words = self.read_table(&self.f)?;
        if self.is_base() {
            return Ok(self.polynomial_order(words_to::<F>(words)?.into_iter().map(E::from).collect()));
        }
        Ok(self.polynomial_order(ext_from_words::<F, E>(words)?))
    }

    /// f's table, and in the same submission a grind run ahead of a transcript that observes
    /// f next and then grinds: `ahead` is the grinder, the
    /// grind's bits and the challenger state before f is observed. The grind is left out (None)
    /// where f is not one extension buffer or cannot be recorded; the caller's challenger takes
    /// the offer only if its state is the one searched.
    #[allow(clippy::type_complexity)]
    pub fn evals_then_grind(&self, ahead: Option<GrindFrom<'_, F>>) -> Result<(Vec<E>, Option<GrindOffer<F>>)> {
        let (Some((grinder, bits, sponge, pending)), false, [f]) = (ahead, self.is_base(), self.f.buffers.as_slice()) else {
            return Ok((self.evals()?, None));
        };
        let words = self.f.words << self.vars;
        let mut dispatches = Vec::new();
        // At reversed indices the transcript observes f in the polynomial's order: a reordered
        // copy is ground over and read.
        let reordered = match self.reversed {
            true => {
                let copy = self.ctx.pooled_storage("f in the polynomial's order", words);
                match crate::reorder::reverse_bits_dispatch(&self.ctx, f, &copy, self.vars, 0, self.f.words) {
                    Ok(d) => dispatches.push(d),
                    Err(e) => {
                        self.ctx.recycle_storage(copy);
                        return Err(e);
                    }
                }
                Some(copy)
            }
            false => None,
        };
        let f = reordered.as_ref().unwrap_or(f);
        let record = match grinder.record_after_observing(&mut dispatches, sponge, pending, f, 0, words, bits) {
            Ok(record) => record,
            Err(e) => {
                tracing::debug!("the final polynomial's grind runs on its own: {e}");
                if let Some(copy) = reordered {
                    self.ctx.recycle_storage(copy);
                }
                return Ok((self.evals()?, None));
            }
        };
        let mut batch = self.ctx.batch("f, then a grind");
        if let Some(copy) = reordered.clone() {
            batch.lend(copy);
        }
        batch.record(&dispatches);
        let evals = batch.read(f, 0, words);
        let grind = record.read_in(&mut batch);
        let readback = self.ctx.run(batch)?;
        // A malformed offer is left out: the challenger then grinds on its own.
        let offer = grind.offer(&readback).map_err(|e| tracing::warn!("ignoring a malformed grind-ahead result: {e}")).ok();
        Ok((ext_from_words::<F, E>(readback.get(evals)?.to_vec())?, offer))
    }

    /// Whether f is still the base-field table it started as.
    pub fn is_base(&self) -> bool {
        self.f.words == 1
    }

    /// w's table (for tests and diagnostics).
    /// An error while the weights are lazy ([`set_lazy_eq_weights`](Self::set_lazy_eq_weights)).
    pub fn weights(&self) -> Result<Vec<E>> {
        if self.lazy.is_some() || self.lazy_slots.is_some() {
            return Err(GpuError::InvalidInput("the weights are not stored yet (lazy equality weights)".into()));
        }
        if self.w.buffers.is_empty() {
            return Ok(vec![E::ZERO; self.size()]);
        }
        Ok(self.polynomial_order(ext_from_words::<F, E>(self.read_table(&self.w)?)?))
    }

    /// One weights kernel over w, one dispatch per segment, with `count` points (their tables
    /// in `points` and `scales`, the same number of entries per point in each); each thread
    /// covers `per_thread` entries. Points whose tables exceed one binding go in batches.
    fn dispatch_weights(&self, kernel: Kernel, points: &[E], scales: &[E], count: usize, per_thread: usize, vars: usize) -> Result<()> {
        let per_point = (points.len() / count.max(1)).max(scales.len() / count.max(1)).max(1);
        let batch = ((self.ctx.max_binding_bytes() / Self::BYTES) as usize / per_point).max(1);
        self.ctx.scoped("sumcheck weights", || {
            let mut recording = self.ctx.batch("sumcheck weights");
            let segment = self.w.segment_len();
            let groups = segment.div_ceil(per_thread).div_ceil(THREADS);
            let recorded = (0..count).step_by(batch).try_for_each(|first| {
                let n = batch.min(count - first);
                let cut = |t: &[E]| {
                    let per = t.len() / count;
                    self.upload_table("sumcheck points", &t[first * per..(first + n) * per])
                };
                let (points, scales) = (cut(points), cut(scales));
                let recorded = (0..self.segments()).try_for_each(|j| {
                    let at = WeightParams {
                        size: segment as u32,
                        vars: vars as u32,
                        count: n as u32,
                        groups: groups as u32,
                        offset: (j * segment) as u32,
                        total: self.size() as u32,
                        _pad: [0; 2],
                    };
                    self.record_kernel(recording.encoder(), kernel, &points, &scales, at, self.w.range(j))
                });
                recording.lend(points);
                recording.lend(scales);
                recorded
            });
            recorded.and_then(|()| self.ctx.send(recording))
        })
    }

    /// A pooled buffer holding `values` (one zero when empty: bindings hold at least one).
    fn upload_table(&self, label: &str, values: &[E]) -> wgpu::Buffer {
        let values = if values.is_empty() { &[E::ZERO][..] } else { values };
        self.ctx.upload_pooled(label, ext_as_words::<F, E>(values))
    }

    /// Records one weights-family kernel (wgsl/sumcheck/weights.wgsl) over `table` (a range).
    fn record_kernel(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        kernel: Kernel,
        points: &wgpu::Buffer,
        scales: &wgpu::Buffer,
        params: WeightParams,
        table: (&wgpu::Buffer, u64, Option<u64>),
    ) -> Result<()> {
        let pipeline = self.ctx.pipeline_over(F::ID, E::ID, kernel, &[])?;
        let groups = params.groups;
        let params = self.ctx.uniform("weight params", &params);
        let bind = self.ctx.bind_ranges(&pipeline, &[(&params, 0, None), (points, 0, None), (scales, 0, None), table, (&self.placeholder, 0, None)]);
        self.ctx.record_dispatch(encoder, kernel.entry_point(), &pipeline, &bind, groups, None);
        Ok(())
    }

    /// `w[x] += Σ_j scales[j]·ω^(indices[j]·x)`, ω the 2^log_domain-th root of unity Plonky3's
    /// two-adic domains use: the select weights of the points ω^index. For many points this is
    /// one NTT of the sparse vector of scales (2^log_domain x `E::WORDS` words), not one power per point
    /// and entry.
    pub fn add_select_weights_at(&mut self, log_domain: usize, indices: &[usize], scales: &[E]) -> Result<()> {
        if indices.len() != scales.len() {
            return Err(GpuError::InvalidInput(format!("{} indices with {} scales", indices.len(), scales.len())));
        }
        if log_domain > F::TWO_ADICITY {
            return Err(GpuError::InvalidInput(format!("a domain of 2^{log_domain} exceeds {}'s 2^{}", F::ID.name(), F::TWO_ADICITY)));
        }
        if let Some(&bad) = indices.iter().find(|&&i| i >> log_domain != 0) {
            return Err(GpuError::InvalidInput(format!("index {bad} outside a domain of 2^{log_domain}")));
        }
        if indices.is_empty() {
            return Ok(());
        }
        self.materialize_weights()?;
        self.ensure_weights()?;
        let omega = <F as p3_field::TwoAdicField>::two_adic_generator(log_domain);
        // Per entry and point the direct kernel spends ~7.5 multiplications (a power step and
        // a scale by an extension element); the transform ~2 per element and level over its 4
        // columns. Both ran at ~7e11 multiplications/s on the H200 (direct: 10.2 ms at m = 23 in
        // a 2^24 domain; the NTT 2^24 x 16 in 16.7 ms), so weigh them 4 : 1. The transform's
        // table must fit one binding.
        let direct_cost = indices.len().saturating_mul(4) << self.vars;
        let transform_cost = (1usize << log_domain) * log_domain.max(1);
        if log_domain < self.vars || direct_cost <= transform_cost || (Self::BYTES << log_domain) > self.ctx.max_binding_bytes() {
            let vars: Vec<F> = indices.iter().map(|&i| omega.exp_u64(i as u64)).collect();
            return self.add_select_weights(&vars, scales);
        }
        // S: the scales summed per distinct index.
        let mut sparse: std::collections::BTreeMap<usize, E> = std::collections::BTreeMap::new();
        for (&i, &s) in indices.iter().zip(scales) {
            *sparse.entry(i).or_insert(E::ZERO) += s;
        }
        let index_words: Vec<u32> = sparse.keys().flat_map(|&i| std::iter::once(i as u32).chain(std::iter::repeat_n(0, E::WORDS - 1))).collect();
        let sums: Vec<E> = sparse.values().copied().collect();
        self.ctx.scoped("sumcheck select weights", || {
            let mut batch = self.ctx.batch("select weights");
            let table = self.ctx.pooled_storage("select table", E::WORDS << log_domain);
            let points = batch.upload("select indices", &index_words);
            let sums_buf = self.upload_table("select scales", &sums);
            let zero = self.upload_table("select scales", &[]);
            batch.lend(sums_buf.clone());
            batch.lend(zero.clone());
            batch.encoder().clear_buffer(&table, 0, None);
            let scatter = WeightParams {
                size: 1 << log_domain,
                vars: 0,
                count: sums.len() as u32,
                groups: sums.len().div_ceil(THREADS) as u32,
                offset: 0,
                total: 1 << log_domain,
                _pad: [0; 2],
            };
            if let Err(e) = self.record_kernel(batch.encoder(), Kernel::ScatterScales, &points, &sums_buf, scatter, (&table, 0, None)) {
                batch.lend(table);
                return Err(e);
            }
            // The table is the transform's to reuse as work space (its result is the batch's).
            // At reversed indices entry i takes the transform's entry rev_m(i), which its
            // bit-reversed output holds at i·2^(log_domain - m): read at that stride.
            let spec = NttSpec { bit_reversed_output: self.reversed && log_domain > 0, ..NttSpec::<F>::forward(log_domain, E::WORDS) };
            let stride_log = if self.reversed { (log_domain - self.vars) as u32 } else { 0 };
            let transformed = self.ntt.record_with(batch.encoder(), NttSource::GivenUp(table), &spec, None)?;
            batch.lend(transformed.clone());
            let segment = self.w.segment_len();
            (0..self.segments()).try_for_each(|j| {
                let add = WeightParams {
                    size: segment as u32,
                    vars: stride_log,
                    count: 0,
                    groups: segment.div_ceil(THREADS) as u32,
                    offset: (j * segment) as u32,
                    total: self.size() as u32,
                    _pad: [0; 2],
                };
                self.record_kernel(batch.encoder(), Kernel::AddTablePrefix, &transformed, &zero, add, self.w.range(j))
            })?;
            self.ctx.send(batch)
        })
    }
}

/// The WGSL twins of this file's parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] = &[
    crate::shaders::twin_layout!(RoundParams as "RoundParams" in "sumcheck/round" { count, groups, first }),
    crate::shaders::twin_layout!(FoldParams as "FoldParams" in "sumcheck/fold" { r, r_hi, half }),
    crate::shaders::twin_layout!(WeightParams as "WeightParams" in "sumcheck/weights" { size, vars, count, groups, offset, total }),
    crate::shaders::twin_layout!(EvalParams as "EvalParams" in "sumcheck/eval" { size, groups, chunks, base, offset, first, rows }),
    crate::shaders::twin_layout!(SpongeState as "SpongeState" in "sumcheck/sponge_step" { sponge, pending, info }),
    crate::shaders::twin_layout!(SpongeStep as "SpongeStep" in "sumcheck/sponge_step" { observe, grind }),
    crate::shaders::twin_layout!(PowerTablesParams as "PowerTablesParams" in "sumcheck/power_tables" { vars, point, reversed }),
    crate::shaders::twin_layout!(LazyParams as "LazyParams" in "sumcheck/lazy_weights" { count, groups, first, offset, points, lo_bits, lo_at, stride }),
    crate::shaders::twin_layout!(LazyCoeffParams as "LazyCoeffParams" in "sumcheck/lazy_coeffs" { points, t, rounds_plus_one }),
    crate::shaders::twin_layout!(ChainState as "ChainState" in "sumcheck/chain_state" { sponge, pending, info, r, range }),
    crate::shaders::twin_layout!(BaseParams as "BaseParams" in "sumcheck/base" { r, r_hi, count, groups, first }),
    crate::shaders::twin_layout!(SlotEvalParams as "SlotEvalParams" in "sumcheck/slot_eval" { base, seg_offset, seg_size, segment, total_groups }),
    crate::shaders::twin_layout!(SlotSumParams as "SlotSumParams" in "sumcheck/slot_sum" { count, total_groups, segments }),
    crate::shaders::twin_layout!(SlotWeightParams as "SlotWeightParams" in "sumcheck/slot_weights" { seg_offset, seg_size, total_groups }),
    crate::shaders::twin_layout!(LazySlotParams as "LazySlotParams" in "sumcheck/lazy_slot_round" { terms, bind }),
];
