//! Evaluations of f and of slots of it (columns of a stacked witness, plain or as successor views) at points, and slot weights, stored or formed where the rounds use them.

use super::*;

impl<F: Poseidon2Field, E: GpuExtension<F>> GpuSumcheck<F, E> {
    /// `f(point) = Σ_x f[x]·eq(point, x)`: one pass over f against the point's chunked equality
    /// tables (eval.wgsl), one submission, one readback of the value.
    pub fn eval(&self, point: &[E]) -> Result<E> {
        self.check_point(point)?;
        self.eval_against(eq_chunk_tables(&self.table_point(point)))
    }

    /// `Σ_b f(b)·y^b`, b the index in the polynomial's order (read through bit-reversed
    /// indices where the table is held so): f's entries read as the coefficients of a
    /// univariate polynomial and evaluated at y. The same pass as [`eval`](Self::eval),
    /// against power tables.
    pub fn eval_powers(&self, y: E) -> Result<E> {
        let m = self.vars;
        // Index bit i of the table weighs y^(2^i), or y^(2^(m-1-i)) at bit-reversed indices.
        let factor = |i: usize| y.exp_power_of_2(if self.reversed { m - 1 - i } else { i });
        let chunks = m.div_ceil(EVAL_CHUNK_BITS).max(1);
        let mut tables = Vec::with_capacity(chunks << EVAL_CHUNK_BITS);
        for c in 0..chunks {
            let bits = (m - (c * EVAL_CHUNK_BITS).min(m)).min(EVAL_CHUNK_BITS);
            let factors: Vec<E> = (0..bits).map(|i| factor(c * EVAL_CHUNK_BITS + i)).collect();
            tables.extend((0..1usize << EVAL_CHUNK_BITS).map(|k| {
                if k >> bits != 0 {
                    return E::ZERO;
                }
                factors.iter().enumerate().filter(|&(i, _)| (k >> i) & 1 == 1).map(|(_, &v)| v).product()
            }));
        }
        self.eval_against(tables)
    }

    /// Σ_x f[x]·Π_c T_c[chunk c of x], the chunk tables `tables` (256 entries each).
    fn eval_against(&self, tables: Vec<E>) -> Result<E> {
        self.ctx.scoped("sumcheck eval", || {
            let chunks = tables.len() >> EVAL_CHUNK_BITS;
            let mut batch = self.ctx.batch("sumcheck eval");
            let tables = batch.upload("eval tables", ext_as_words::<F, E>(&tables));
            let mut dispatches = Vec::new();
            let (partials, groups) = self.record_eval(&mut dispatches, &tables, chunks)?;
            let (value, zero) = self.finish_reduction(batch, dispatches, partials, groups)?;
            // The evaluation's partial pairs carry a zero second half: anything else came back
            // corrupted.
            if zero != E::ZERO {
                return Err(GpuError::Device("an evaluation's reduction came back with a nonzero second half (a corrupted readback)".into()));
            }
            Ok(value)
        })
    }

    /// Checks `slots` against the tables: a point of at most m coordinates, each slot inside.
    pub(super) fn check_slots(&self, slots: &Slots<'_, E>) -> Result<()> {
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
    pub(super) fn read_slots(&self, sets: &[SlotRead<'_, E>]) -> Result<Vec<Vec<E>>> {
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
    pub(super) fn record_slot_reads(&self, batch: &mut Batch<'_>, dispatches: &mut Vec<Dispatch>, sets: &[SlotRead<'_, E>]) -> Result<wgpu::Buffer> {
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
    pub(super) fn lazy_slot_round(&mut self) -> Result<(E, E)> {
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
    pub(super) fn record_lazy_slot_round(
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
        let pair = self.ctx.pooled_storage("lazy slot round pair", 2 * E::WORDS);
        let pipeline = self.ctx.pipeline_over(F::ID, E::ID, Kernel::LazySlotRound, &[])?;
        let bind = self.ctx.bind_buffers(&pipeline, &[&params, &values, &terms, &constants, coeffs, &pair, chain]);
        dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: 1 });
        Ok(pair)
    }

    /// The body of [`add_slot_weights`](Self::add_slot_weights), onto w's table as it is: every
    /// slot of every set in one dispatch per segment and layer (wgsl/sumcheck/slot_weights.wgsl),
    /// the slots of a layer pairwise disjoint (a stacked table's columns are; a column opened in
    /// several batches, or at its successor view, is in as many layers).
    pub(super) fn write_slot_weights(&self, sets: &[(Slots<'_, E>, &[E])]) -> Result<()> {
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
}
