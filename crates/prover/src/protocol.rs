//! The protocol as p3-whir reads it: a single polynomial committed and opened
//! ([`prove_with_backend`]), and the opening: the claim phase, the initial fold, the rounds (commit, OOD,
//! query PoW, queries, openings, combined constraint, sumcheck) and the final round, each a
//! method of its own over [`Backend`] and any [`WhirChallenger`]. What the challenger can
//! play ahead (each round's head and the final grind played where f lies) is offered through the
//! challenger, and every value it offers is checked against the transcript replayed here.

use std::sync::Arc;

use crate::lookahead::{ConfigChallenger, Lookahead, RoundHead};
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_sumcheck::{OpeningProtocol, SumcheckData};
use p3_whir::parameters::WhirConfig;
use p3_whir::transcript::WhirProverTranscript;
use p3_whir::{PcsProof, QueryOpenings, WhirProof, WhirRoundProof, WhirShape};

use crate::claims::{check_protocol, play_claims, Claims, Points};
use std::time::{Duration, Instant};

use p3_sumcheck::layout::observe_commitment;
use whir_verifier::hash::CpuMmcs;

use crate::backend::{check_leaf_sponge, Backend, CommitmentOf, PathsOf, Proof, RootOf};
use crate::breakdown::{DriverTimes, RoundBreakdown, Step, StepTime};
use crate::claims::Stacking;
use crate::error::ProverError;
use crate::lookahead::GrindClock;
use crate::lookahead::WhirChallenger;
use crate::options::DriverOptions;
use crate::rounds::{query_openings, query_var, run_rounds, Opened};
use crate::sumcheck::{powers_from, SumcheckState};
use crate::Params;
use crate::{ProverField, WhirExtension};
use p3_challenger::CanObserve;
use whir_verifier::opening_protocol;

/// What [`prove_with_backend`] returns: the commitment, the proof and where the time went.
pub type Proved<F, E, M = CpuMmcs<F>> = (RootOf<F, M>, PcsProof<F, E, M>, DriverTimes);

/// Commits to `evals` (2^n values) and opens them at `params.points` transcript points, as
/// Plonky3's `WhirProver` would with a smallest-witness grinder, the challenges in `E` (the
/// field's degree-4 extension on the GPU backend; any [`WhirExtension`] on the CPU twin): returns
/// the commitment, the proof and where the time went.
pub fn prove_with_backend<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>, C: WhirChallenger<F> + CanObserve<CommitmentOf<F, E, S>>>(
    backend: &S,
    params: &Params,
    evals: &[F],
    challenger: &mut C,
    options: DriverOptions,
) -> Result<Proved<F, E, S::Mmcs>, ProverError> {
    let config = params.config_over::<E, C>()?;
    if evals.len() != 1usize << params.num_vars {
        return Err(ProverError::Input(format!("{} evaluations given for n = {} (need 2^n)", evals.len(), params.num_vars)));
    }
    check_leaf_sponge(backend.leaf_sponge(), params.leaf)?;
    let started = Instant::now();
    let mut clock = StepClock::new(challenger);

    // Commit (the PCS adapter's `commit`): the layout's message, encoded and committed.
    // The suffix layout of one table of one column commits the evaluations as they are (rows of
    // 2^fold consecutive values; p3-sumcheck's `write_stacked_slots`), so they are the message.
    clock.enter(backend, 0, Step::Commit);
    let (root, committed, sumcheck) = backend.commit_message(evals, 1 << config.round_folding_factor(0), params.log_inv_rate)?;
    observe_commitment::<F, _, _>(challenger, root.clone());
    let commit_phase = started.elapsed();

    let protocol = opening_protocol(params);
    let stacking = Stacking::new(protocol.table_shapes());
    let opened = Opened { codeword: std::sync::Arc::new(committed), sumcheck, stacking: &stacking };
    let (proof, counts) = open_with_backend(backend, &config, opened, &protocol, Points::Drawn, challenger, options, &mut clock)?;
    Ok((root, proof, DriverTimes::from_breakdown(clock.finish(), commit_phase, started.elapsed(), counts)))
}

/// A round's proof before its openings are read back: the root, the out-of-domain answers, the
/// query grind's witness and the round's sumcheck.
type RoundParts<F, E, M> = (RootOf<F, M>, Vec<E>, F, SumcheckData<F, E>);

/// The final round's parts: the polynomial, the query grind's witness, the closing sumcheck,
/// and every round's openings read back (the final round's last).
type FinalParts<F, E, M> = (Poly<E>, F, Option<SumcheckData<F, E>>, Vec<QueryOpenings<F, E, PathsOf<F, M>>>);

/// The PCS adapter's `open` (or `open_at`, with `points` given) after `commit`: the claim phase,
/// then the WHIR run (`WhirProver::prove`), as Plonky3 plays them with a smallest-witness
/// grinder. Returns the proof and how many out-of-domain answers and grinds were played ahead
/// where f lies.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn open_with_backend<
    F: ProverField,
    E: WhirExtension<F>,
    S: Backend<F, E>,
    C: WhirChallenger<F> + CanObserve<CommitmentOf<F, E, S>>,
    K: ConfigChallenger<F>,
>(
    backend: &S,
    config: &WhirConfig<E, F, K>,
    opened: Opened<'_, F, E, S>,
    protocol: &OpeningProtocol,
    points: Points<'_, E>,
    challenger: &mut C,
    options: DriverOptions,
    clock: &mut StepClock,
) -> Result<(Proof<F, E, S::Mmcs>, (usize, usize)), ProverError> {
    let Opened { codeword, mut sumcheck, stacking } = opened;
    let num_vars = stacking.num_variables();
    if num_vars != config.num_variables() || sumcheck.num_variables() != num_vars {
        return Err(ProverError::Input(format!(
            "a committed polynomial of {} variables opened under a configuration of {}",
            sumcheck.num_variables(),
            config.num_variables()
        )));
    }

    // Claim phase (the adapter's `open`): commitment OOD claims, then the opening claims. The
    // layout's prover-side claim transcripts are private to p3-sumcheck; its verifier-side
    // registry plays the same transcript given the values, so each point is read from a trial run
    // on copies, the value computed where f lies, and the real step played with it.
    clock.enter(backend, 0, Step::Claims);
    check_protocol(stacking, protocol, points)?;
    let claims = protocol.checked_num_claims().and_then(|n| n.checked_add(config.commitment_ood_samples()));
    config
        .validate_initial_claims(claims.ok_or_else(|| ProverError::Params("too many opening claims".into()))?)
        .map_err(|e| ProverError::Params(e.to_string()))?;
    let claims = play_claims(&mut sumcheck, stacking, protocol, points, config.commitment_ood_samples(), challenger)?;

    // Where the challenger can, each round's commitment, out-of-domain answers and query grind
    // are played where f lies, before the commit's wait, from the transcript state published
    // here; the transcript replays them and checks each point drawn.
    let head = if options.round_heads { challenger.track_state_throughout() } else { None };
    let device_min_bits = challenger.device_min_bits();

    // The WHIR run (`WhirProver::prove`).
    let shape = WhirShape::new(config, protocol.num_openings());
    let transcript = WhirProverTranscript::<C, F, E>::new(challenger, shape);
    let (played, transcript, counts) = {
        let mut run = WhirRun {
            backend,
            config,
            options,
            clock,
            transcript,
            sumcheck,
            committed: codeword,
            pending: Vec::new(),
            base_round: true,
            head,
            device_min_bits,
            played_ahead: (0, 0),
            num_vars,
        };
        let played = run.play(&claims);
        // The rest of the run (f, the last codeword, openings) goes back here.
        let WhirRun { transcript, played_ahead, .. } = run;
        (played, transcript, played_ahead)
    };
    // p3's transcript panics when dropped unfinished; after a failed step (a GPU error) it is
    // forgotten instead (a few small allocations) and the error returned.
    let whir = match played {
        Ok(whir) => {
            transcript.finish();
            challenger.stop_tracking();
            whir
        }
        Err(e) => {
            std::mem::forget(transcript);
            challenger.stop_tracking();
            return Err(e);
        }
    };
    let whir = WhirProof { initial_ood_answers: claims.ood_answers, ..whir };
    Ok((PcsProof { whir, evals: claims.evals }, counts))
}

/// One WHIR run after the claim phase: the transcript, f and its weights, the codeword the next
/// queries open, the openings not yet read back, and what the challenger plays ahead.
struct WhirRun<'a, 't, F: ProverField, E: WhirExtension<F>, S: Backend<F, E>, C: WhirChallenger<F> + CanObserve<CommitmentOf<F, E, S>>, K> {
    backend: &'a S,
    config: &'a WhirConfig<E, F, K>,
    options: DriverOptions,
    clock: &'a mut StepClock,
    transcript: WhirProverTranscript<'t, C, F, E>,
    sumcheck: S::Sumcheck,
    /// The codeword the next round's queries open.
    committed: Arc<S::Committed>,
    /// Openings, read back at the end (their values feed no transcript step), each with whether
    /// its rows are base-field ones (the first codeword's).
    pending: Vec<(S::Opening, bool)>,
    base_round: bool,
    /// The published transcript state the challenger plays ahead from, if it does.
    head: Option<Lookahead<F>>,
    /// The least grind played ahead (below it the challenger grinds itself).
    device_min_bits: usize,
    /// Out-of-domain answers and grinds played ahead and taken.
    played_ahead: (usize, usize),
    num_vars: usize,
}

impl<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>, C: WhirChallenger<F> + CanObserve<CommitmentOf<F, E, S>>, K: ConfigChallenger<F>>
    WhirRun<'_, '_, F, E, S, C, K>
{
    /// The initial fold, every round, the final round, and the proof assembled (its initial
    /// out-of-domain answers are the caller's).
    fn play(&mut self, claims: &Claims<F, E>) -> Result<WhirProof<F, E, S::Mmcs>, ProverError> {
        let initial_sumcheck = self.initial_fold(claims)?;
        let mut rounds = Vec::with_capacity(self.config.n_rounds());
        for round in 0..self.config.n_rounds() {
            rounds.push(self.round(round)?);
        }
        let (final_poly, final_pow_witness, final_sumcheck, mut openings) = self.final_round()?;
        let final_openings = openings.pop().expect("the final round's opening");
        let rounds = rounds
            .into_iter()
            .zip(openings)
            .map(|((root, ood_answers, pow_witness, sumcheck), openings)| WhirRoundProof {
                commitment: Some(root),
                ood_answers,
                pow_witness,
                openings,
                sumcheck,
            })
            .collect();
        Ok(WhirProof {
            initial_ood_answers: Vec::new(),
            initial_sumcheck,
            rounds,
            final_poly: Some(final_poly),
            final_pow_witness,
            final_openings,
            final_sumcheck,
        })
    }

    /// The batching challenge α, then w = Σ α^i eq(z_i, ·) over every claim (the registry's own
    /// batched constraint) and the first fold's sumcheck rounds.
    fn initial_fold(&mut self, claims: &Claims<F, E>) -> Result<SumcheckData<F, E>, ProverError> {
        let (backend, config, options, num_vars) = (self.backend, self.config, self.options, self.num_vars);
        let (sumcheck, clock) = (&mut self.sumcheck, &mut *self.clock);
        let mut initial_sumcheck = SumcheckData::default();
        self.transcript.delegate_initial_fold(|ch| -> Result<(), ProverError> {
            clock.enter(backend, 0, Step::Weights);
            let alpha = claims.registry.batching_challenge(ch);
            // Formed where used in the initial fold's rounds, not stored (the largest table),
            // from the size the options say and where the backend can: from 2^24 cells up, for one
            // polynomial as for a stacked witness, it halves the live peak (BENCHMARKS.md).
            let lazy = options.lazy_first_weights_at(num_vars).then_some(config.round_folding_factor(0));
            claims.add_initial_weights(sumcheck, alpha, lazy)?;
            clock.enter(backend, 0, Step::Sumcheck);
            run_rounds(sumcheck, &mut initial_sumcheck, ch, config.round_folding_factor(0), config.starting_folding_pow_bits(), options.device_rounds)
                .map(|_| ())
        })?;
        Ok(initial_sumcheck)
    }

    /// Round `round`: commit to the folded polynomial, its out-of-domain samples, the query grind
    /// and queries, the openings of the previous codeword, the γ-batched constraint and the
    /// round's sumcheck.
    fn round(&mut self, round: usize) -> Result<RoundParts<F, E, S::Mmcs>, ProverError> {
        let (backend, config) = (self.backend, self.config);
        let num_variables = self.num_vars - config.total_folded_through(round);
        let round_params = &config.round_parameters()[round];
        let fold_next = config.round_folding_factor(round + 1);

        // Commit to the folded polynomial (`commit_extension`, suffix order: as is), with the
        // round's head played where f lies where the challenger offers its state.
        self.clock.enter(backend, round + 1, Step::Commit);
        let query_bits = self.transcript.shape().rounds[round].query_pow_bits;
        let head = self.head.as_ref().and_then(Lookahead::state).map(|state| RoundHead {
            state,
            // The round's out-of-domain samples, then its query grind.
            samples: round_params.ood_samples,
            // Below the device's threshold the challenger grinds on the CPU.
            grind_bits: if query_bits >= self.device_min_bits { query_bits } else { 0 },
        });
        let head = head.filter(|h| h.samples > 0 || h.grind_bits > 0);
        let (next_root, next_committed, played) = backend.commit_folded_with_head(&mut self.sumcheck, fold_next, round_params.log_inv_rate, head.as_ref())?;
        // The GPU expanded its points over f's variables: those must be the round's.
        let played = played.filter(|_| self.sumcheck.num_variables() == num_variables);
        self.transcript.commitment(next_root.clone());

        // Out-of-domain samples of the folded polynomial.
        self.clock.enter(backend, round + 1, Step::Ood);
        let mut ood_points = Vec::with_capacity(round_params.ood_samples);
        let mut ood_answers = Vec::with_capacity(round_params.ood_samples);
        for i in 0..round_params.ood_samples {
            let z = self.transcript.ood_point();
            let point = Point::expand_from_univariate(z, num_variables);
            let eval = match played.as_ref().map(|p| (p.points.get(i), p.answers.get(i))) {
                Some((Some(&drawn), Some(&answer))) if drawn == z => {
                    self.played_ahead.0 += 1;
                    answer
                }
                Some((Some(drawn), _)) => {
                    return Err(ProverError::PlayedAhead(format!("the GPU drew out-of-domain point {drawn:?} where the transcript draws {z:?}")));
                }
                _ => self.sumcheck.eval(&point)?,
            };
            self.transcript.ood_answer(eval);
            ood_answers.push(eval);
            ood_points.push(point);
        }

        self.clock.enter(backend, round + 1, Step::Pow);
        // The grind played with the head, taken only if the transcript is where it searched.
        if let (Some(link), Some(offer)) = (self.head.as_ref(), played.and_then(|p| p.grind)) {
            self.played_ahead.1 += 1;
            link.queue([offer]);
        }
        let pow_witness = self.transcript.query_pow(round);
        let indices = self.transcript.query_indices(round);

        // STIR openings of the previous codeword. (Upstream folds each row at the folding
        // randomness; those values only update the claimed sum, which no message carries.)
        self.clock.enter(backend, round + 1, Step::Open);
        self.pending.push((backend.open(&self.committed, &indices)?, self.base_round));
        // The previous codeword is done with once its openings are gathered: its memory goes
        // back before this round's weights and sumcheck.
        self.committed = Arc::new(next_committed);

        // γ-batched constraint (the carried claim keeps coefficient 1; OOD claims take γ^1..,
        // STIR claims the powers after them), then this round's sumcheck.
        self.clock.enter(backend, round + 1, Step::Weights);
        let gamma = self.transcript.round_batching();
        let eq_scales = powers_from(gamma, 1, ood_points.len());
        let select_scales = powers_from(gamma, 1 + ood_points.len(), indices.len());
        self.sumcheck.add_eq_weights(&ood_points, &eq_scales)?;
        // The query points are ω^index of the folded domain (Plonky3's two-adic domain).
        debug_assert_eq!(
            query_var::<F>(round_params.log_folded_domain_size, round_params.num_variables, 1),
            <F as p3_field::TwoAdicField>::two_adic_generator(round_params.log_folded_domain_size)
        );
        self.sumcheck.add_select_weights_at(round_params.log_folded_domain_size, &indices, &select_scales)?;
        self.clock.enter(backend, round + 1, Step::Sumcheck);
        let mut sumcheck_data = SumcheckData::default();
        let (sumcheck, device_rounds) = (&mut self.sumcheck, self.options.device_rounds);
        let _folding_randomness =
            self.transcript.delegate_round_fold(|ch| run_rounds(sumcheck, &mut sumcheck_data, ch, fold_next, round_params.folding_pow_bits, device_rounds))?;
        self.base_round = false;
        Ok((next_root, ood_answers, pow_witness, sumcheck_data))
    }

    /// The final round: the polynomial in the clear, the last queries, the closing sumcheck;
    /// then every opening read back (one transfer, under way while the closing sumcheck runs),
    /// in the rounds' order, the final round's last.
    fn final_round(&mut self) -> Result<FinalParts<F, E, S::Mmcs>, ProverError> {
        let (backend, config) = (self.backend, self.config);
        let final_round = config.n_rounds();
        // The final polynomial comes back with the query grind that follows observing it, run
        // ahead on the GPU from the transcript's state here (taken only if the challenger's
        // state is the one searched); that submission is then mostly the grind's, so it counts
        // as PoW (the backend may still read f alone, e.g. f split over bindings).
        let final_bits = self.transcript.shape().final_pow_bits;
        let grind_from = self.head.as_ref().and_then(Lookahead::state).filter(|_| final_bits > 0 && final_bits >= self.device_min_bits);
        self.clock.enter(backend, final_round + 1, if grind_from.is_some() { Step::Pow } else { Step::Sumcheck });
        let (evals, final_offer) = self.sumcheck.evals_then_grind(grind_from.as_ref().map(|state| (state, final_bits)))?;
        let final_poly = Poly::new(evals);
        self.transcript.final_poly(final_poly.as_slice());
        self.clock.enter(backend, final_round + 1, Step::Pow);
        if let (Some(link), Some(offer)) = (self.head.as_ref(), final_offer) {
            self.played_ahead.1 += 1;
            link.queue([offer]);
        }
        let final_pow_witness = self.transcript.query_pow(final_round);
        let indices = self.transcript.query_indices(final_round);
        self.clock.enter(backend, final_round + 1, Step::Open);
        self.pending.push((backend.open(&self.committed, &indices)?, self.base_round));
        // Every opening comes back in one transfer, under way while the closing sumcheck runs.
        self.clock.enter(backend, final_round + 1, Step::Readback);
        let (openings, bases): (Vec<_>, Vec<bool>) = std::mem::take(&mut self.pending).into_iter().unzip();
        let opened = backend.begin_reading_openings(openings)?;
        self.clock.enter(backend, final_round + 1, Step::Sumcheck);
        let (sumcheck, device_rounds) = (&mut self.sumcheck, self.options.device_rounds);
        let final_sumcheck = self
            .transcript
            .delegate_final_fold(|ch| {
                let mut data = SumcheckData::default();
                run_rounds(sumcheck, &mut data, ch, config.final_sumcheck_rounds(), config.final_folding_pow_bits(), device_rounds).map(|_| data)
            })
            .transpose()?;
        self.clock.enter(backend, final_round + 1, Step::Readback);
        let openings = opened()?.into_iter().zip(bases).map(|((rows, proof), base)| query_openings(rows, proof, base)).collect();
        Ok((final_poly, final_pow_witness, final_sumcheck, openings))
    }
}

/// Wall-clock recorder of the breakdown: each `enter` closes the step before it, so the
/// steps cover the proof end to end. Grinding inside a sumcheck is moved to `Pow`.
pub(crate) struct StepClock {
    breakdown: RoundBreakdown,
    open: Option<(usize, Step, Instant, Duration)>,
    /// The challenger's grinding clock, where it keeps one (grinds then count as `Pow`).
    pow_clock: Option<GrindClock>,
    /// The open step as a tracing span (for a timeline of the proof's threads).
    span: Option<tracing::span::EnteredSpan>,
}

impl StepClock {
    pub(crate) fn new<F: ProverField, C: WhirChallenger<F>>(challenger: &C) -> Self {
        Self { breakdown: RoundBreakdown::default(), open: None, pow_clock: challenger.pow_clock(), span: None }
    }

    pub(crate) fn enter<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>>(&mut self, backend: &S, round: usize, step: Step) {
        self.close();
        backend.enter_step(round, step);
        self.span = Some(tracing::info_span!("step", round, step = step.name()).entered());
        self.open = Some((round, step, Instant::now(), self.pow_elapsed()));
    }

    fn add(&mut self, round: usize, step: Step, wall: Duration) {
        if self.breakdown.rounds.len() <= round {
            self.breakdown.rounds.resize(round + 1, Vec::new());
        }
        let steps = &mut self.breakdown.rounds[round];
        match steps.iter_mut().find(|(s, _)| *s == step) {
            Some((_, t)) => t.wall += wall,
            None => steps.push((step, StepTime { wall, ..StepTime::default() })),
        }
    }

    fn pow_elapsed(&self) -> Duration {
        self.pow_clock.as_ref().map_or(Duration::ZERO, GrindClock::elapsed)
    }

    fn close(&mut self) {
        self.span = None;
        if let Some((round, step, at, pow_at)) = self.open.take() {
            let wall = at.elapsed();
            let pow = self.pow_elapsed().saturating_sub(pow_at).min(wall);
            if step != Step::Pow && !pow.is_zero() {
                self.add(round, Step::Pow, pow);
            }
            self.add(round, step, if step == Step::Pow { wall } else { wall - pow });
        }
    }

    pub(crate) fn finish(mut self) -> RoundBreakdown {
        self.close();
        self.breakdown
    }
}
