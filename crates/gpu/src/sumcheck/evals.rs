//! Evaluations read back, a sponge script played on the device from a published state (a
//! root observed, points sampled and f evaluated at them, a grind), and the final polynomial
//! with the grind after it.

use super::*;

impl<F: Poseidon2Field, E: GpuExtension<F>> GpuSumcheck<F, E> {
    /// Records the evaluation kernel over f against `chunks` chunk tables of 256 entries in
    /// `tables` (eval.wgsl), one dispatch per segment: returns the partial pairs (value, 0) and
    /// how many.
    pub(super) fn record_eval(&self, dispatches: &mut Vec<Dispatch>, tables: &wgpu::Buffer, chunks: usize) -> Result<(wgpu::Buffer, usize)> {
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
    /// in the state it gives observes the root and `script.after_root`, draws each point z and
    /// observes f's value there (`script.values`: at `expand_from_univariate(z, m)`, or f's
    /// values and a tail read as one univariate polynomial's coefficients; computed here:
    /// sumcheck/power_tables, the evaluation, sumcheck/powers_tail), then grinds
    /// `script.grind_bits` bits (none at 0) over one range. Once the batch has run,
    /// [`finish_sponge_script`](Self::finish_sponge_script) gives what it found. Records nothing
    /// and reads nothing when it returns an error.
    pub fn record_sponge_script(&self, batch: &mut Batch<'_>, root: &wgpu::Buffer, script: &SpongeScript<F>) -> Result<SpongeScriptRecord<F>> {
        self.check_sponge_script(root, script)?;
        let mask = if script.grind_bits > 0 { pow_mask(script.grind_bits)? } else { 0 };
        let ctx = &self.ctx;
        let samples = script.samples;
        let chunks = self.vars.div_ceil(EVAL_CHUNK_BITS).max(1);
        let step_pipeline = ctx.pipeline_over(F::ID, E::ID, Kernel::SpongeStep, &ctx.tuning().transcript_consts())?;
        let grind = if script.grind_bits > 0 { Some(script.grinder.device_grind(script.grind_bits, range_end(script.grind_bits))?) } else { None };
        let mut state = SpongeState { sponge: [0; WIDTH], pending: [0; RATE], info: [script.pending.len() as u32, 0, 0, 0] };
        state.sponge.copy_from_slice(crate::field::as_words(&script.sponge));
        state.pending[..script.pending.len()].copy_from_slice(crate::field::as_words(&script.pending));
        let state = batch.upload("sponge script state", bytemuck::cast_slice(&[state]));
        // Two vec4 a point (sumcheck/sponge_step.wgsl).
        let points = batch.scratch("sponge script points", 8 * samples.max(1));
        let tables = batch.scratch("sponge script tables", (E::WORDS * chunks) << EVAL_CHUNK_BITS);
        let after_root =
            (!script.after_root.is_empty()).then(|| batch.upload("sponge script words after the root", crate::field::as_words(&script.after_root)));
        let tail = match &script.values {
            // Bound even when empty (a binding holds at least a word).
            ScriptValues::PowersWithTail(tail) if tail.is_empty() => Some((batch.scratch("sponge script tail", E::WORDS), 0)),
            ScriptValues::PowersWithTail(tail) => Some((batch.upload("sponge script tail", crate::field::as_words(tail)), tail.len() / E::WORDS)),
            ScriptValues::Expansion => None,
        };
        // Bound where the script does not grind (the kernel's layout has the grind's buffers).
        let (params, best) = match &grind {
            Some(g) => (g.params().clone(), g.best().clone()),
            None => (batch.scratch("sponge script grind params", WIDTH + 4), batch.scratch("sponge script grind best", 1)),
        };
        let mut values = Vec::with_capacity(samples);
        let recorded = (|| -> Result<Vec<Dispatch>> {
            let mut dispatches = Vec::new();
            // A step observes `words` words, then draws point k or (`last`) sets up the grind.
            let step = |observed: &wgpu::Buffer, words: usize, k: usize, last: bool| {
                let grind = match (&grind, last) {
                    (Some(_), true) => [mask, range_end(script.grind_bits)],
                    _ => [0, 0],
                };
                let step = SpongeStep { observe: [0, words as u32, u32::from(!last && k < samples), k as u32], grind, _pad: [0; 2] };
                let step = ctx.uniform("sponge script step", &step);
                let bind = script.grinder.poseidon2().bind(&step_pipeline, &[&step, &state, observed, &points, &params, &best]);
                Dispatch { pipeline: (*step_pipeline).clone(), bind, groups: 1 }
            };
            // The root alone where words follow it (a step that neither draws nor grinds).
            if after_root.is_some() {
                dispatches.push(step(root, DIGEST_ELEMS, samples, false));
            }
            // Observe what the last step left (the root, or the words after it; then each
            // value), then draw a point (k < samples) or set up the grind (k = samples; without
            // a grind nothing follows the last value, so it is not observed here).
            for k in 0..samples + usize::from(grind.is_some()) {
                let (observed, words) = match (k, &after_root) {
                    (0, Some(words)) => (words, script.after_root.len()),
                    (0, None) => (root, DIGEST_ELEMS),
                    _ => (&values[k - 1], E::WORDS),
                };
                dispatches.push(step(observed, words, k, k == samples));
                if k == samples {
                    break;
                }
                let (value, used) = self.record_point_value(&mut dispatches, k, &points, &tables, tail.as_ref())?;
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
        let samples = values.iter().enumerate().map(|(k, value)| (batch.read(&points, 8 * k, E::WORDS), batch.read(value, 0, E::WORDS))).collect();
        values.into_iter().for_each(|b| batch.lend(b));
        Ok(SpongeScriptRecord { samples, grind: grind.map(|g| g.read_in(batch)) })
    }

    /// Records f's value at point k of `points` (drawn on the GPU) into a fresh buffer: the
    /// point's chunk tables into `tables` (its expansion's, or with `tail` its powers'), the
    /// evaluation and its reduction, then `tail`'s part where given (its buffer and length).
    /// Returns the value's buffer and the buffers the reduction is done with.
    fn record_point_value(
        &self,
        dispatches: &mut Vec<Dispatch>,
        k: usize,
        points: &wgpu::Buffer,
        tables: &wgpu::Buffer,
        tail: Option<&(wgpu::Buffer, usize)>,
    ) -> Result<(wgpu::Buffer, Vec<wgpu::Buffer>)> {
        let ctx = &self.ctx;
        let chunks = self.vars.div_ceil(EVAL_CHUNK_BITS).max(1);
        let pipeline = ctx.pipeline_over(F::ID, E::ID, Kernel::PowerTables, &[])?;
        let cfg = PowerTablesParams { vars: self.vars as u32, point: k as u32, reversed: u32::from(self.reversed), monomial: u32::from(tail.is_some()) };
        let cfg = ctx.uniform("sponge script tables params", &cfg);
        let bind = ctx.bind_ranges(&pipeline, &[(&cfg, 0, None), (points, 0, None), (tables, 0, None)]);
        dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: chunks as u32 });
        let (partials, groups) = self.record_eval(dispatches, tables, chunks)?;
        let (value, used) = self.record_reduction(dispatches, partials, groups)?;
        if let Some((tail, len)) = tail {
            let pipeline = ctx.pipeline_over(F::ID, E::ID, Kernel::AddPowersTail, &[])?;
            let cfg = ctx.uniform("sponge script tail params", &PowersTailParams { vars: self.vars as u32, point: k as u32, len: *len as u32, _pad: 0 });
            let bind = ctx.bind_buffers(&pipeline, &[&cfg, points, tail, &value]);
            dispatches.push(Dispatch { pipeline: (*pipeline).clone(), bind, groups: 1 });
        }
        Ok((value, used))
    }

    /// A sponge script's request checked before anything is recorded.
    fn check_sponge_script(&self, root: &wgpu::Buffer, script: &SpongeScript<F>) -> Result<()> {
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
        if script.after_root.len() > MAX_SCRIPT_WORDS_AFTER_ROOT {
            return Err(GpuError::InvalidInput(format!(
                "{} words observed after the root in one sponge script (at most {MAX_SCRIPT_WORDS_AFTER_ROOT})",
                script.after_root.len()
            )));
        }
        if let ScriptValues::PowersWithTail(tail) = &script.values {
            if tail.len() % E::WORDS != 0 || tail.len() / E::WORDS > MAX_SCRIPT_TAIL {
                return Err(GpuError::InvalidInput(format!(
                    "a tail of {} words (whole extension elements of {} words, at most {MAX_SCRIPT_TAIL} of them)",
                    tail.len(),
                    E::WORDS
                )));
            }
        }
        Ok(())
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
    pub(super) fn read_table(&self, table: &Table) -> Result<Vec<u32>> {
        let words = table.words << self.vars;
        let read = |buffer: &wgpu::Buffer, words: usize| {
            let mut batch = self.ctx.batch("sumcheck table");
            let slot = batch.read(buffer, 0, words);
            self.ctx.run(batch)?.into_words(slot)
        };
        if let [one] = table.buffers.as_slice() {
            return read(one, words);
        }
        // A segment a transfer: no copy of the whole table on the device.
        let mut out = Vec::with_capacity(words);
        for b in &table.buffers {
            out.extend(read(b, table.words << table.seg_log)?);
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
        let mut batch = self.ctx.batch("f, then a grind");
        // At reversed indices the transcript observes f in the polynomial's order: a reordered
        // copy is ground over and read.
        let reordered = match self.reversed {
            true => {
                let copy = batch.scratch("f in the polynomial's order", words);
                dispatches.push(crate::reorder::reverse_bits_dispatch(&self.ctx, f, &copy, self.vars, 0, self.f.words)?);
                Some(copy)
            }
            false => None,
        };
        let f = reordered.as_ref().unwrap_or(f);
        let record = match grinder.record_after_observing(&mut dispatches, sponge, pending, f, 0, words, bits) {
            Ok(record) => record,
            Err(e) => {
                tracing::debug!("the final polynomial's grind runs on its own: {e}");
                drop(batch);
                return Ok((self.evals()?, None));
            }
        };
        batch.record(&dispatches);
        let evals = batch.read(f, 0, words);
        let grind = record.read_in(&mut batch);
        let readback = self.ctx.run(batch)?;
        // A malformed offer is left out: the challenger then grinds on its own.
        let offer = grind.offer(&readback).map_err(|e| tracing::warn!("ignoring a malformed grind-ahead result: {e}")).ok();
        Ok((ext_from_words::<F, E>(readback.get(evals)?.to_vec())?, offer))
    }
}
