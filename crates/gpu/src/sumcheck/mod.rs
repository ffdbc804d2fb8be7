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

mod chain;
pub use chain::{ChainWire, WireRound, MAX_WIRE_POLY, MAX_WIRE_REST};
mod evals;
mod lazy_slots;
mod params;
mod rounds;
mod slots;
mod weights;
use lazy_slots::LazySlots;
#[cfg(test)]
pub(crate) use params::WGSL_TWINS;
use params::*;

const THREADS: usize = 256;
/// Most workgroups a reduction launches (a grid-stride loop covers the rest).
const MAX_REDUCE_GROUPS: usize = 1024;
/// Largest table: 2^28 entries (n = 28 proofs' first table), indexed with 32-bit integers; tables
/// over one binding are split into segments.
const MAX_VARS: usize = 28;

/// Slots of the tables at one point: slot c is the 2^k entries from entry `offsets[c]` (k the
/// point's coordinates), read as a multilinear polynomial over {0,1}^k — one column of a stacked
/// table — or, with `successor`, as its successor view (entry i replaced by entry
/// min(i + 1, 2^k − 1): the column shifted by one row, its last row repeated).
#[derive(Clone, Copy, Debug)]
pub struct Slots<'a, E = Ext4> {
    /// The point (k coordinates) every slot is read at.
    pub point: &'a [E],
    /// Each slot's first entry in the table.
    pub offsets: &'a [usize],
    /// Whether the slots are read as their successor views.
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
/// Most words one sponge script observes between the root and its first point.
pub const MAX_SCRIPT_WORDS_AFTER_ROOT: usize = 64;
/// Most tail values of one sponge script's [`ScriptValues::PowersWithTail`].
pub const MAX_SCRIPT_TAIL: usize = 1 << 16;

/// A duplex-sponge script to run on the GPU after a Merkle root is computed
/// ([`GpuSumcheck::record_sponge_script`]): from the challenger state `sponge` with `pending`
/// inputs (Plonky3's `DuplexChallenger`), observe the root, then `after_root`; `samples` times,
/// sample an extension element z and observe f's value there as `values` says; then grind
/// `grind_bits` bits (0: no grind) from the state reached.
pub struct SpongeScript<F: Poseidon2Field = BabyBear> {
    /// The grinder whose Poseidon2 plays the script (and grinds).
    pub grinder: Arc<GpuGrinder<F>>,
    /// The challenger's sponge state before the script.
    pub sponge: [F; WIDTH],
    /// The challenger's pending inputs (fewer than its rate).
    pub pending: Vec<F>,
    /// Points drawn and evaluated, at most [`MAX_SCRIPT_SAMPLES`].
    pub samples: usize,
    /// Proof-of-work bits ground after the samples (0: no grind).
    pub grind_bits: usize,
    /// Words observed after the root, before the first point (a second commitment's root);
    /// empty for none.
    pub after_root: Vec<F>,
    /// What f's value at each point is.
    pub values: ScriptValues<F>,
}

/// What a [`SpongeScript`] observes at each point z it draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptValues<F> {
    /// f at z's univariate expansion, `expand_from_univariate(z, m)`.
    Expansion,
    /// `Σ_x f_x·z^x + z^(2^m)·Σ_s tail_s·z^s`, x in the polynomial's order: f's values followed
    /// by `tail` read as one univariate polynomial's coefficients (a message with values
    /// appended to it). `tail` holds extension elements, their coefficients in
    /// order (the extension's degree in words a value).
    PowersWithTail(Vec<F>),
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
    /// The points drawn, in order.
    pub points: Vec<E>,
    /// f's value at each point's univariate expansion, in the same order.
    pub answers: Vec<E>,
    /// The grind, as an offer for the challenger; None without one.
    pub offer: Option<GrindOffer<F>>,
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
    /// The tables' buffers, back to `ctx`'s pool.
    fn give_back(self, ctx: &GpuContext) {
        [self.tables, self.coords, self.coeffs].into_iter().for_each(|b| ctx.recycle_storage(b));
    }

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
/// whose GPU time it cuts most (docs/benchmarks-history.md), take it.
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
#[derive(Default)]
struct Table {
    buffers: Vec<wgpu::Buffer>,
    seg_log: usize,
    /// Words per entry: 1 (base field) or the extension's `E::WORDS`.
    words: usize,
}

impl Table {
    /// The table's buffers, back to `ctx`'s pool (the table owns them).
    fn give_back(self, ctx: &GpuContext) {
        self.buffers.into_iter().for_each(|b| ctx.recycle_storage(b));
    }

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

/// A sumcheck round played on the GPU by [`GpuSumcheck::play_chain`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainedRound<F: Poseidon2Field = BabyBear, E = Ext4<F>> {
    /// The round polynomial's h(0) and h(∞).
    pub c0: E,
    /// The round polynomial's h(∞).
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

impl<F: Poseidon2Field, E: GpuExtension<F>> Drop for GpuSumcheck<F, E> {
    fn drop(&mut self) {
        std::mem::take(&mut self.f).give_back(&self.ctx);
        std::mem::take(&mut self.w).give_back(&self.ctx);
        if let Some(lazy) = self.lazy.take() {
            lazy.give_back(&self.ctx);
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
            let mut batch = ctx.batch("clear weights");
            for b in &buffers {
                batch.clear(b);
            }
            ctx.send(batch)
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
        // n = 24, 32K entries for two points; docs/benchmarks-history.md).
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
                std::mem::take(&mut self.w).give_back(&self.ctx);
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
            std::mem::take(&mut self.w).give_back(&self.ctx);
            return Err(e);
        }
        self.lazy.take().expect("checked above").give_back(&self.ctx);
        Ok(())
    }

    /// The GPU context the tables live on.
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
        let mut batch = ctx.batch("copy sumcheck tables");
        let mut copy = |table: &Table, label: &str| Table {
            buffers: table
                .buffers
                .iter()
                .map(|b| {
                    let copy = ctx.pooled_storage(label, (b.size() / 4) as usize);
                    batch.encoder().copy_buffer_to_buffer(b, 0, &copy, 0, b.size());
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
        ctx.send(batch)?;
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
}
