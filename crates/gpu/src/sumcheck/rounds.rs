//! Sumcheck rounds where the tables lie: the round polynomial's coefficients reduced over segments, and folds at a challenge (with the next round's coefficients in the same submission).

use super::*;

impl<F: Poseidon2Field, E: GpuExtension<F>> GpuSumcheck<F, E> {
    pub(super) fn size(&self) -> usize {
        1 << self.vars
    }

    /// Segments of f and w (the same split).
    pub(super) fn segments(&self) -> usize {
        1 << (self.vars - self.f.seg_log)
    }

    pub(super) fn groups_for(items: usize) -> usize {
        items.div_ceil(THREADS).clamp(1, MAX_REDUCE_GROUPS)
    }
    /// Records the reduction of `groups` partial pairs in `partials` to one pair: returns the
    /// buffer holding it (2 `E::WORDS` words) and the intermediate buffers, for the pool once submitted.
    pub(super) fn record_reduction(
        &self,
        dispatches: &mut Vec<Dispatch>,
        mut partials: wgpu::Buffer,
        mut groups: usize,
    ) -> Result<(wgpu::Buffer, Vec<wgpu::Buffer>)> {
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
    pub(super) fn finish_reduction(&self, mut batch: Batch<'_>, mut dispatches: Vec<Dispatch>, partials: wgpu::Buffer, groups: usize) -> Result<(E, E)> {
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
    pub(super) fn record_round(&self, dispatches: &mut Vec<Dispatch>) -> Result<(wgpu::Buffer, usize)> {
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
    pub(super) fn record_fold(&mut self, dispatches: &mut Vec<Dispatch>, r: E) -> Result<(Table, Table)> {
        self.record_fold_with(dispatches, FoldChallenge::Value(r))
    }

    /// [`record_fold`](Self::record_fold) at a challenge given or drawn on the GPU (a chain's);
    /// returns the old tables instead of recycling them.
    pub(super) fn record_fold_with(&mut self, dispatches: &mut Vec<Dispatch>, challenge: FoldChallenge<'_, E>) -> Result<(Table, Table)> {
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
        self.record_lazy_fold(dispatches, r, chain)?;
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

    /// A fold's binding of the lazy weights: the bound coordinate scales the equality weights'
    /// coefficients (on the GPU after a chained fold, here otherwise) and binds the slot terms.
    fn record_lazy_fold(&mut self, dispatches: &mut Vec<Dispatch>, r: E, chain: Option<&wgpu::Buffer>) -> Result<()> {
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
                    // (After the last lazy round the fold writes w out instead: `record_fold_with`.)
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
        Ok(())
    }

    /// A fold's params: cached when they hold no challenge (chained folds), fresh otherwise.
    pub(super) fn fold_uniform<T: bytemuck::Pod>(&self, params: &T, chained: bool) -> wgpu::Buffer {
        if chained {
            self.ctx.uniform("fold params", params)
        } else {
            self.ctx.uniform_once("fold params", params)
        }
    }
}
