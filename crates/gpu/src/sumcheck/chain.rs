//! Rounds chained on the device: each round's coefficients observed, its grind and challenge drawn, and the fold, from a published transcript state, in one submission.

use super::*;

/// Most values a [`ChainWire`] round observes after its pair.
pub const MAX_WIRE_REST: usize = 6;
/// Most coefficients of a [`ChainWire`] round's polynomial.
pub const MAX_WIRE_POLY: usize = 1 << 10;

/// What each round of a chain observes in place of its pair (h(0), h(∞)): the pair moved by
/// known terms, with known values after it. With s = `scale`, round j observes
/// `(at_zero_j + s·h(0) + share_j·Σ_{l<j} poly_l(r_l), at_inf_j + s·h(∞), rest_j...)`, r_l
/// being round l's challenge: known parts given ahead, the earlier rounds' polynomials summed
/// at their challenges on the GPU (a masked sumcheck's wire polynomials, for one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainWire<E> {
    /// The pair's factor.
    pub scale: E,
    /// Each round's terms, as many as the chain's rounds.
    pub rounds: Vec<WireRound<E>>,
}

/// One round's terms in a [`ChainWire`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireRound<E> {
    /// Added to the scaled h(0).
    pub at_zero: E,
    /// Added to the scaled h(∞).
    pub at_inf: E,
    /// The factor of the earlier rounds' polynomial values in the first value.
    pub share: E,
    /// Values observed after the pair (the same count every round, at most [`MAX_WIRE_REST`]).
    pub rest: Vec<E>,
    /// This round's polynomial, lowest coefficient first, at this round's challenge summed
    /// into the later rounds' first values (the same count every round, at most
    /// [`MAX_WIRE_POLY`]).
    pub poly: Vec<E>,
}

impl<E: Copy + Default> ChainWire<E> {
    /// Whether a chain can observe this wire: every round with the same counts, within
    /// [`MAX_WIRE_REST`] and [`MAX_WIRE_POLY`] (otherwise the rounds play on the host).
    pub fn fits(&self) -> bool {
        let (rest, poly) = self.rounds.first().map_or((0, 0), |r| (r.rest.len(), r.poly.len()));
        rest <= MAX_WIRE_REST && poly <= MAX_WIRE_POLY && self.rounds.iter().all(|r| r.rest.len() == rest && r.poly.len() == poly)
    }

    /// The wire's terms as the kernel reads them ([scale, running sum, then per round at_zero,
    /// at_inf, share, rest, poly]) and their counts, checked against a chain of `rounds`.
    fn layout(&self, rounds: usize) -> Result<(Vec<E>, ChainWireParams)> {
        let (rest, poly) = self.rounds.first().map_or((0, 0), |r| (r.rest.len(), r.poly.len()));
        if self.rounds.len() != rounds {
            return Err(GpuError::InvalidInput(format!("a chain of {rounds} rounds with a wire of {} rounds", self.rounds.len())));
        }
        if !self.fits() {
            return Err(GpuError::InvalidInput(format!(
                "a chain wire's rounds observe {:?} values after the pair and sum polynomials of {:?} coefficients (the same counts every round, at most {MAX_WIRE_REST} and {MAX_WIRE_POLY})",
                self.rounds.iter().map(|r| r.rest.len()).collect::<Vec<_>>(),
                self.rounds.iter().map(|r| r.poly.len()).collect::<Vec<_>>()
            )));
        }
        let mut terms = vec![self.scale, E::default()];
        for r in &self.rounds {
            terms.extend([r.at_zero, r.at_inf, r.share]);
            terms.extend_from_slice(&r.rest);
            terms.extend_from_slice(&r.poly);
        }
        Ok((terms, ChainWireParams { rest: rest as u32, poly: poly as u32, _pad: [0; 2] }))
    }
}

/// What a chain's rounds play their transcript with: the chain state on the device, the
/// grinder (its Poseidon2 plays the transcript), the grind's bits and range, buffers bound
/// where a round does not grind, and the transcript kernels.
#[derive(Clone, Copy)]
struct ChainTranscript<'a, F: Poseidon2Field> {
    chain: &'a wgpu::Buffer,
    grinder: &'a GpuGrinder<F>,
    bits: usize,
    range: u32,
    unused: &'a [wgpu::Buffer; 2],
    /// The wire's terms and counts, where the rounds observe a [`ChainWire`].
    wire: Option<(&'a wgpu::Buffer, &'a wgpu::Buffer)>,
    observe: &'a wgpu::ComputePipeline,
    sample: &'a wgpu::ComputePipeline,
}

impl<F: Poseidon2Field, E: GpuExtension<F>> GpuSumcheck<F, E> {
    /// Plays `rounds` sumcheck rounds with one wait, their transcript on the GPU (each round is
    /// submitted once recorded, see `GpuTransfers::early_submits`): each
    /// round's h(0), h(∞) are observed by a duplex challenger starting from `sponge` with
    /// `pending` inputs (Plonky3's `DuplexChallenger` state), a `bits`-bit grind follows where
    /// `bits` > 0 (the smallest witness in one range), the challenge is drawn and the tables are
    /// folded at it (wgsl/sumcheck/chain.wgsl) — what p3-sumcheck's `ProverTranscript::round`
    /// does, so the host replays the rounds from what comes back and checks each challenge.
    /// With a `wire`, each round observes its pair moved by the wire's terms instead
    /// ([`ChainWire`]; the rounds read back are the plain pairs).
    /// Returns the rounds played: all of them, or up to the one whose grind found no witness
    /// (its `r` is None, its fold not done; the caller goes on round by round). `grinder`
    /// provides the Poseidon2 instance of the transcript. After an error the tables are those
    /// from before the chain, unless writing lazy weights out after it failed: then the
    /// sumcheck is unusable (a proof in progress fails).
    pub fn play_chain(
        &mut self,
        rounds: usize,
        sponge: &[F; WIDTH],
        pending: &[F],
        bits: usize,
        grinder: &GpuGrinder<F>,
        wire: Option<&ChainWire<E>>,
    ) -> Result<Vec<ChainedRound<F, E>>> {
        let wire = wire.map(|w| w.layout(rounds)).transpose()?;
        self.check_chain(rounds, pending, grinder)?;
        let mask = if bits > 0 { pow_mask(bits)? } else { 0 };
        // Lazy weights must cover the chain's rounds; otherwise w is written out first.
        if self.lazy.as_ref().is_some_and(|l| l.bound + rounds > l.rounds) || self.lazy_slots.as_ref().is_some_and(|l| l.bound + rounds > l.rounds) {
            self.materialize_weights()?;
        }
        self.ensure_weights_for_rounds()?;
        let lazy_start = self.lazy.as_ref().map(|l| l.bound);
        let ctx = self.ctx.clone();
        let mut state = ChainState { sponge: [0; WIDTH], pending: [0; RATE], info: [pending.len() as u32, 0, 0, mask], r: [0; 8], range: [0; 4] };
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
            let observe = ctx.pipeline_over(F::ID, E::ID, if wire.is_some() { Kernel::ChainObserveWire } else { Kernel::ChainObserve }, &lanes)?;
            let sample = ctx.pipeline_over(F::ID, E::ID, Kernel::ChainSample, &lanes)?;
            let wire = wire.map(|(terms, params)| (batch.upload("chain wire", ext_as_words::<F, E>(&terms)), ctx.uniform("chain wire params", &params)));
            let wire = wire.as_ref().map(|(terms, params)| (terms, params));
            let transcript = ChainTranscript { chain: &chain, grinder, bits, range: state.range[0], unused: &unused, wire, observe: &observe, sample: &sample };
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
                let round = self.record_chain_round(&mut batch, &mut dispatches, k, slot_coeffs.as_ref(), &transcript);
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
                let pair_slot = batch.read(&pair, 0, 2 * E::WORDS);
                let r_slot = batch.snapshot(&chain, (CHAIN_R_AT / 4) as usize, E::WORDS);
                reads.push((pair_slot, r_slot, record.map(|r| r.read_in(&mut batch))));
                batch.lend(pair);
                // Each round goes to the GPU once recorded, so the GPU runs it while the next
                // one is recorded (recording a round's dispatches and bind groups takes host
                // time; docs/benchmarks-history.md).
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
            self.settle_chain(&parsed, retired, vars, lazy_start)?;
            parsed
        })
    }

    /// A chain's arguments against the tables: rounds within the variables, a duplex state's
    /// pending inputs, a grinder on this context.
    fn check_chain(&self, rounds: usize, pending: &[F], grinder: &GpuGrinder<F>) -> Result<()> {
        if rounds == 0 || rounds > self.vars {
            return Err(GpuError::InvalidInput(format!("a chain of {rounds} rounds over {} variables", self.vars)));
        }
        if pending.len() >= RATE {
            return Err(GpuError::InvalidInput(format!("{} pending inputs (a duplex challenger holds at most {})", pending.len(), RATE - 1)));
        }
        if !Arc::ptr_eq(grinder.poseidon2().context(), &self.ctx) {
            return Err(GpuError::InvalidInput("the grinder lives on another GPU context".into()));
        }
        Ok(())
    }

    /// Records round k of a chain into `dispatches`: its pair (h(0), h(∞)), observed on the
    /// chain's transcript, its grind where the chain grinds, its challenge drawn. Returns the
    /// pair's buffer and the grind's record.
    fn record_chain_round(
        &self,
        batch: &mut Batch<'_>,
        dispatches: &mut Vec<Dispatch>,
        k: usize,
        slot_coeffs: Option<&wgpu::Buffer>,
        transcript: &ChainTranscript<'_, F>,
    ) -> Result<(wgpu::Buffer, Option<GrindAheadRecord<F>>)> {
        let ChainTranscript { chain, grinder, bits, range, unused, wire, observe, sample } = *transcript;
        let pair = match slot_coeffs {
            Some(coeffs) => self.record_lazy_slot_round(batch, dispatches, k, coeffs, chain)?,
            None => {
                let (partials, groups) = self.record_round(dispatches)?;
                let (pair, used) = self.record_reduction(dispatches, partials, groups)?;
                used.into_iter().for_each(|b| batch.lend(b));
                pair
            }
        };
        let record = if bits > 0 { Some(grinder.device_grind(bits, range)?) } else { None };
        let (params, best) = record.as_ref().map_or((&unused[0], &unused[1]), |r| (r.params(), r.best()));
        let bind = match wire {
            Some((terms, counts)) => grinder.poseidon2().bind(observe, &[chain, &pair, params, best, terms, counts]),
            None => grinder.poseidon2().bind(observe, &[chain, &pair, params, best]),
        };
        dispatches.push(Dispatch { pipeline: observe.clone(), bind, groups: 1 });
        if let Some(r) = &record {
            grinder.record_device_grind(dispatches, r)?;
        }
        let bind = grinder.poseidon2().bind(sample, &[chain, &pair, params, best]);
        dispatches.push(Dispatch { pipeline: sample.clone(), bind, groups: 1 });
        Ok((pair, record))
    }

    /// The tables after a chain that played what `parsed` says of `vars` variables: every fold's
    /// output (`retired`, the tables each fold replaced) was kept until now, as a chain that
    /// stopped early leaves its later folds undone; lazy weights' coefficients follow the
    /// challenges played (the GPU's stopped where the chain did), or after an error are written
    /// back as they were at `lazy_start`.
    fn settle_chain(
        &mut self,
        parsed: &Result<Vec<ChainedRound<F, E>>>,
        mut retired: Vec<(Table, Table)>,
        vars: usize,
        lazy_start: Option<usize>,
    ) -> Result<()> {
        let ctx = self.ctx.clone();
        let played = parsed.as_ref().map_or(0, |p| p.iter().filter(|c| c.r.is_some()).count());
        if played < retired.len() {
            let (f, w) = retired.swap_remove(played);
            std::mem::replace(&mut self.f, f).give_back(&ctx);
            std::mem::replace(&mut self.w, w).give_back(&ctx);
        }
        self.vars = vars - played;
        for (f, w) in retired {
            f.give_back(&ctx);
            w.give_back(&ctx);
        }
        if let (Some(lazy), Some(start)) = (self.lazy.as_mut(), lazy_start) {
            lazy.bound = start;
            match parsed {
                Ok(p) => p.iter().filter_map(|c| c.r).for_each(|r| lazy.bind(r)),
                Err(_) => ctx.write(&lazy.coeffs, ext_as_words::<F, E>(&lazy.coeff_words())),
            }
        }
        if let (Some(lazy), Ok(p)) = (self.lazy_slots.as_mut(), parsed) {
            p.iter().filter_map(|c| c.r).for_each(|r| lazy.bind(r));
        }
        if self.lazy.as_ref().is_some_and(|l| l.bound >= l.rounds) || self.lazy_slots.as_ref().is_some_and(|l| l.bound >= l.rounds) {
            self.materialize_weights()?;
        }
        Ok(())
    }

    /// Tests: chained grinds search `0..end` (None: the usual range), so a chain can be made
    /// to stop.
    #[doc(hidden)]
    pub fn set_chain_range(&mut self, end: Option<u32>) {
        self.chain_range = end;
    }

    /// The rounds a chain played, from its readback.
    pub(super) fn parse_chain(
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
}
