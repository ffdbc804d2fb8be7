//! Zero-knowledge WHIR: p3-whir's hiding PCS (`HidingWhirPcs`, HVZK-WHIR of eprint 2026/391)
//! over the protocol's steps ([`Backend`]), so the witness's oracle, its folds, the masked
//! sumchecks' plain rounds, the out-of-domain answers and the power constraints run where the
//! data lies (on the GPU with `GpuCodewords`), and the masks, their small oracles, the wire
//! polynomials and the masked base case's reveals on the host (its fresh codeword's transform
//! where the backend transforms). For the same generator, witness, points and challenger state
//! its proof is `HidingWhirPcs`'s, byte for byte ([`HidingPcs`]), with a challenger whose grind
//! is deterministic (the GPU's: the smallest witness; Plonky3's `DuplexChallenger` grinds any
//! witness, so with it two runs agree at zero PoW only).
//!
//! ```text
//!     commit: randomness rows drawn, [message | randomness | 0] encoded and committed
//!     open:   masked sumcheck batch -> code-switching rounds (each a masked batch) -> masked base case
//! ```

mod base_case;
mod batch;
mod pcs;

pub use pcs::{CpuHidingPcs, GpuHidingPcs, HidingPcs, HidingProverData, StockHidingPcs};

use p3_challenger::{CanObserve, CanSampleUniformBits, FieldChallenger, GrindingChallenger};
use p3_commit::{ExtensionMmcs, Mmcs};
use p3_dft::Radix2Dit;
use p3_field::{dot_product, HornerIter, TwoAdicField};
use p3_matrix::dense::RowMajorMatrix;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_sumcheck::zk::ZkSumcheckData;
use p3_whir::transcript::zk::{ZkWhirProverTranscript, ZkWhirShape};
use p3_whir::{QueryOpenings, SharedProofOpening, ZkRoundProof, ZkWhirConfig, ZkWhirProof};
use p3_zk_codes::{ReedSolomonZkEncoding, ZkEncoding, ZkEncodingWithRandomness};
use rand::distr::{Distribution, StandardUniform};
use rand::{CryptoRng, RngExt};
use std::time::{Duration, Instant};
use whir_verifier::hash::CpuMmcs;

use self::base_case::{draw_fresh, prove_base_case, BaseCaseProof, FreshValues};
use self::batch::{commit_masks, draw_masks, masked_batch, BatchMasks, Masks};
use crate::backend::{Backend, CommitmentOf, PathsOf, RootOf};
use crate::error::ProverError;
use crate::lookahead::{HidingRoundHead, Lookahead, PlayedHead, RoundHead, WhirChallenger};
use crate::options::DriverOptions;
use crate::rounds::query_openings;
use crate::sumcheck::SumcheckState;
use crate::{ProverField, WhirExtension};

/// Where a hiding opening's wall time went, step by step (summed over rounds). Steps that only
/// submit GPU work (folds, weights) are waited for by the next step that reads back, so their
/// GPU time lands there.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HidingTimes {
    /// The claimed values at the points, and binding them.
    pub claims: Duration,
    /// The masked sumcheck batches: plain rounds, wires, grinds (their masks are committed
    /// ahead, on the host beside the device's work: the time that goes on past the device's
    /// is in `switch_masks` or, for the first batch, `constraints`).
    pub batches: Duration,
    /// Each round's folded oracle with its randomness rows, encoded and committed, with the
    /// round's head where the device plays it (the out-of-domain answers, the query grind).
    pub oracles: Duration,
    /// Each round's switch mask, then its batch's masks (and in the last round the base
    /// case's blinds), encoded and committed on the host while the round's oracle commits on
    /// the device: the time the host went on past the device. (A head played on the device
    /// waits for the switch mask's root: that wait is in `oracles`.)
    pub switch_masks: Duration,
    /// The out-of-domain answers (replayed only, where the device played the head).
    pub ood: Duration,
    /// The query grind (where the head did not play it), the indices, and the old oracle's
    /// rows opened and folded.
    pub queries: Duration,
    /// The constraints' weights (the claims' first, then each round's) and the claim update.
    pub constraints: Duration,
    /// The base case, with the last fold's f and w read back.
    pub base_case: Duration,
    /// Rounds whose head (the out-of-domain answers, and the query grind where it runs on the
    /// device) was played where f lies, in the oracle commit's submission.
    pub heads_played: usize,
    /// Masked sumcheck rounds played where the tables lie, chained a batch at a time (one
    /// wait a batch) and replayed here.
    pub rounds_chained: usize,
}

impl HidingTimes {
    /// Every step's time.
    pub fn total(&self) -> Duration {
        self.claims + self.batches + self.oracles + self.switch_masks + self.ood + self.queries + self.constraints + self.base_case
    }

    /// (name, time) for each step, in the order above.
    pub fn steps(&self) -> [(&'static str, Duration); 8] {
        [
            ("claims", self.claims),
            ("batches", self.batches),
            ("oracles", self.oracles),
            ("switch masks", self.switch_masks),
            ("ood", self.ood),
            ("queries", self.queries),
            ("constraints", self.constraints),
            ("base case", self.base_case),
        ]
    }
}

/// The time since the last lap, and the step under way as a span (a `hiding step` in
/// timelines).
struct Lap(Instant, Option<tracing::span::EnteredSpan>);

impl Lap {
    fn start(step: &'static str) -> Self {
        let mut lap = Self(Instant::now(), None);
        lap.enter(step);
        lap
    }

    fn next(&mut self) -> Duration {
        let now = Instant::now();
        let lap = now - self.0;
        self.0 = now;
        lap
    }

    /// `step` is under way (the step before it is over).
    fn enter(&mut self, step: &'static str) {
        self.1 = None;
        self.1 = Some(tracing::info_span!("hiding step", step).entered());
    }

    /// No step is under way.
    fn leave(&mut self) {
        self.1 = None;
    }
}

/// A hiding proof: p3-whir's `ZkWhirProof` over the MMCS `M`'s types (Poseidon2's by default;
/// the bytes `HidingWhirPcs` writes).
pub type ZkProof<F, E, M = CpuMmcs<F>> = ZkWhirProof<F, E, M>;

/// The extension-field MMCS the masks and folded oracles are committed with.
type ExtMmcs<F, E, M> = ExtensionMmcs<F, E, M>;
/// A mask oracle kept for its openings.
type MaskData<F, E, M> = <ExtMmcs<F, E, M> as Mmcs<E>>::ProverData<RowMajorMatrix<E>>;
/// The mask codes' encoding (p3-whir's `MaskCodeShape::encoding`).
type MaskEncoding<E> = ReedSolomonZkEncoding<E, Radix2Dit<E>>;

/// The challenger a hiding run needs, observing the roots of `M` (Poseidon2's MMCS by default).
pub trait HidingChallenger<F: ProverField, M: Mmcs<F> = CpuMmcs<F>>:
    FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F> + CanObserve<RootOf<F, M>> + Clone
{
}
impl<F: ProverField, M: Mmcs<F>, C> HidingChallenger<F, M> for C where
    C: FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F> + CanObserve<RootOf<F, M>> + Clone
{
}

/// The oracle a round opens: the witness's (base-field rows) or a fold's (extension rows).
struct Oracle<C> {
    committed: C,
    base: bool,
}

/// Commits `poly` as `HidingWhirProver::commit` does, drawing its randomness from `rng`.
pub(crate) fn commit_hiding<F, E, S, C, R>(
    backend: &S,
    config: &ZkWhirConfig<E, F, C>,
    poly: &[F],
    rng: &mut R,
) -> Result<HidingCommitment<F, E, S>, ProverError>
where
    F: ProverField,
    E: WhirExtension<F>,
    S: Backend<F, E>,
    C: FieldChallenger<F> + GrindingChallenger<Witness = F>,
    R: CryptoRng,
    StandardUniform: Distribution<F>,
{
    let folding = config.round_folding_factor(0);
    let randomness: Vec<F> = (0..config.oracle_randomness()[0] << folding).map(|_| rng.random()).collect();
    let (root, committed, sumcheck) = backend.commit_hiding_message(poly, &randomness, folding, config.starting_log_inv_rate)?;
    Ok((root, Committed { committed, sumcheck, randomness, shape: CommitShape::of(config) }))
}

/// A hiding commitment's root and what its open needs.
pub(crate) type HidingCommitment<F, E, S> = (CommitmentOf<F, E, S>, Committed<F, E, S>);

/// What an open needs of a commitment: the oracle, the sumcheck holding the witness, the
/// randomness rows' values, and the shape it was committed in (checked against the
/// configuration that opens it).
pub(crate) struct Committed<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>> {
    pub committed: S::Committed,
    pub sumcheck: S::Sumcheck,
    pub randomness: Vec<F>,
    pub shape: CommitShape,
}

/// The numbers a hiding commitment was made with: variables, first fold, rate exponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CommitShape {
    vars: usize,
    fold: usize,
    log_inv_rate: usize,
}

impl CommitShape {
    fn of<F: ProverField, E: WhirExtension<F>, C>(config: &ZkWhirConfig<E, F, C>) -> Self
    where
        C: FieldChallenger<F> + GrindingChallenger<Witness = F>,
    {
        Self { vars: config.num_variables(), fold: config.round_folding_factor(0), log_inv_rate: config.starting_log_inv_rate }
    }
}

/// Runs the hiding opening (`HidingWhirProver::prove`) for `claims`, already bound to the
/// transcript, over the committed witness: its driver on `challenger`, masks from `rng`, the
/// first weights lazy where `options` say.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prove_hiding<F, E, S, K, C, R>(
    backend: &S,
    config: &ZkWhirConfig<E, F, K>,
    data: Committed<F, E, S>,
    claims: &[(Point<E>, E)],
    challenger: &mut C,
    rng: &mut R,
    options: DriverOptions,
    times: &mut HidingTimes,
) -> Result<ZkProof<F, E, S::Mmcs>, ProverError>
where
    F: ProverField,
    E: WhirExtension<F> + TwoAdicField,
    S: Backend<F, E>,
    K: HidingChallenger<F, S::Mmcs>,
    C: WhirChallenger<F> + CanObserve<RootOf<F, S::Mmcs>>,
    R: CryptoRng,
    StandardUniform: Distribution<E> + Distribution<F>,
    MaskData<F, E, S::Mmcs>: Send + Sync,
{
    // Data committed under another configuration (another PCS's) would open other rows.
    let expected = CommitShape::of(config);
    if data.shape != expected || data.randomness.len() != config.oracle_randomness()[0] << expected.fold {
        return Err(ProverError::Input(format!(
            "the prover data was committed as {:?} with {} randomness values; this configuration opens {expected:?} with {} (open it with the PCS that committed it)",
            data.shape,
            data.randomness.len(),
            config.oracle_randomness()[0] << expected.fold
        )));
    }
    // Where the challenger can, each round's commitments, out-of-domain answers and query
    // grind are played where f lies, from the transcript state published here; the run
    // replays them and checks each point drawn.
    let link = if options.round_heads || options.device_rounds { challenger.track_state_throughout() } else { None };
    let device_min_bits = challenger.device_min_bits();
    let mut transcript = ZkWhirProverTranscript::<C, F, E>::new(challenger, ZkWhirShape::new(config));
    let lazy_first_weights = options.lazy_first_weights_at(config.num_variables());
    let run = HidingRun { backend, config, mmcs: ExtensionMmcs::new(backend.mmcs()), lazy_first_weights, link, options, device_min_bits };
    let played = run.play(&mut transcript, data, claims, rng, times);
    let proof = closed(transcript, played, |t| t.finish());
    challenger.stop_tracking();
    proof
}

/// `device_work` (the backend's) on this thread while `host_work` runs on another — a host step
/// that needs nothing the device step makes runs while the device works — with how long the
/// host work went on after the device work was done.
fn beside_host_work<A, B: Send>(device_work: impl FnOnce() -> A, host_work: impl FnOnce() -> B + Send) -> Result<(A, B, Duration), ProverError> {
    std::thread::scope(|scope| {
        let host = scope.spawn(host_work);
        let device = device_work();
        let device_done = Instant::now();
        let host = host.join().map_err(|_| ProverError::Input("a hiding step's host work panicked".into()))?;
        Ok((device, host, device_done.elapsed()))
    })
}

/// A transcript driver closed after its run: `finish`ed when the run succeeded; leaked when it
/// failed, since p3's drivers panic when dropped unfinished and the prover side has no abort
/// (the leak is the driver's small pattern state), so the error reaches the caller.
fn closed<T, D>(driver: D, played: Result<T, ProverError>, finish: impl FnOnce(D)) -> Result<T, ProverError> {
    match played {
        Ok(value) => {
            finish(driver);
            Ok(value)
        }
        Err(e) => {
            std::mem::forget(driver);
            Err(e)
        }
    }
}

/// What a hiding run carries from step to step.
struct Run<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>> {
    /// f (the folded message) and w (the source side's weights) where the backend keeps them.
    sumcheck: S::Sumcheck,
    /// Σ f·w.
    sum: E,
    masks: Masks<F, E, S::Mmcs>,
    /// Each masked batch's proof data and mask root, for the proof.
    sumchecks: Vec<ZkSumcheckData<F, E>>,
    mask_roots: Vec<RootOf<F, S::Mmcs>>,
    /// The last batch's challenges, and the last oracle's randomness folded at them.
    gammas: Vec<E>,
    oracle_randomness: Vec<E>,
    /// The oracle the next round opens.
    oracle: Oracle<S::Committed>,
    /// The masked batches' mask code, built once (its DFT keeps its twiddles between batches).
    encoding: MaskEncoding<E>,
    /// The base case's fresh values, drawn and their blinds committed in the last round.
    fresh: Option<FreshValues<F, E, S::Mmcs>>,
    lap: Lap,
}

/// A round's next oracle and switch mask, committed ([`HidingRun::commit_round`]).
struct RoundCommitments<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>> {
    root: RootOf<F, S::Mmcs>,
    committed: S::Committed,
    /// The next oracle's randomness.
    fresh: Vec<E>,
    /// The switch mask: the old oracle's folded randomness, then `pad_len` pad values.
    mask_message: Vec<E>,
    mask_randomness: Vec<E>,
    pad_len: usize,
    mask_root: RootOf<F, S::Mmcs>,
    mask_data: MaskData<F, E, S::Mmcs>,
    /// The round's masked batch's masks, committed beside the oracle.
    batch_masks: BatchMasks<F, E, S::Mmcs>,
}

struct HidingRun<'a, F: ProverField, E: WhirExtension<F>, S: Backend<F, E>, C> {
    backend: &'a S,
    config: &'a ZkWhirConfig<E, F, C>,
    mmcs: ExtMmcs<F, E, S::Mmcs>,
    /// Lazy equality weights for the first batch (`SumcheckState::set_lazy_eq_weights`).
    lazy_first_weights: bool,
    /// The published transcript state the rounds' heads and the masked batches' chains are
    /// played from, if the challenger publishes one.
    link: Option<Lookahead<F>>,
    /// Which of them are played ahead.
    options: DriverOptions,
    /// The least grind played on the device (below it the challenger grinds itself).
    device_min_bits: usize,
}

impl<F, E, S, K> HidingRun<'_, F, E, S, K>
where
    F: ProverField,
    E: WhirExtension<F> + TwoAdicField,
    S: Backend<F, E>,
    K: HidingChallenger<F, S::Mmcs>,
    StandardUniform: Distribution<E> + Distribution<F>,
    MaskData<F, E, S::Mmcs>: Send + Sync,
{
    /// Where the rounds' heads are played from, if they are played ahead.
    fn heads(&self) -> Option<&Lookahead<F>> {
        self.link.as_ref().filter(|_| self.options.round_heads)
    }

    /// Where the masked batches' rounds are chained from, if they are.
    fn chains(&self) -> Option<&Lookahead<F>> {
        self.link.as_ref().filter(|_| self.options.device_rounds)
    }

    /// The whole opening: the first masked batch, the code-switching rounds (each ending in
    /// its masked batch), the masked base case.
    fn play<C: WhirChallenger<F> + CanObserve<RootOf<F, S::Mmcs>>, R: CryptoRng>(
        &self,
        transcript: &mut ZkWhirProverTranscript<'_, C, F, E>,
        data: Committed<F, E, S>,
        claims: &[(Point<E>, E)],
        rng: &mut R,
        times: &mut HidingTimes,
    ) -> Result<ZkProof<F, E, S::Mmcs>, ProverError> {
        let mut run = self.first_batch(transcript, data, claims, rng, times)?;
        let rounds = (0..self.config.n_rounds()).map(|round| self.round(transcript, &mut run, round, rng, times)).collect::<Result<Vec<_>, _>>()?;
        let base_case = self.base_case(transcript, &mut run, rng)?;
        times.base_case += run.lap.next();
        run.lap.leave();
        let Run { sumchecks, mask_roots, .. } = run;
        Ok(ZkWhirProof { evals: claims.iter().map(|(_, v)| *v).collect(), sumchecks, sumcheck_mask_commitments: mask_roots, rounds, base_case })
    }

    /// The initial relation (W = Σ α^i eq(z_i, ·), claim Σ α^i v_i) and its masked batch.
    fn first_batch<C: WhirChallenger<F> + CanObserve<RootOf<F, S::Mmcs>>, R: CryptoRng>(
        &self,
        transcript: &mut ZkWhirProverTranscript<'_, C, F, E>,
        data: Committed<F, E, S>,
        claims: &[(Point<E>, E)],
        rng: &mut R,
        times: &mut HidingTimes,
    ) -> Result<Run<F, E, S>, ProverError> {
        let mut lap = Lap::start("constraints");
        let config = self.config;
        let Committed { committed, mut sumcheck, randomness, .. } = data;
        let alpha: E = transcript.initial_batching();
        let coeffs: Vec<E> = alpha.powers().collect_n(claims.len());
        let points: Vec<Point<E>> = claims.iter().map(|(p, _)| p.clone()).collect();
        let mut sum: E = claims.iter().zip(&coeffs).map(|((_, v), &c)| c * *v).sum();
        // The first batch's masks are committed on the host while the weights are set.
        let (encoding, folding) = (config.sumcheck_mask().encoding::<E>(), config.round_folding_factor(0));
        let drawn = draw_masks(&encoding, folding, rng);
        let (mmcs, encoding_ref) = (&self.mmcs, &encoding);
        let (weights, masks, _) = beside_host_work(
            || {
                // Where the options say so, the first batch's rounds form the weights where they
                // use them (no 2^n table); the batch's closing scale writes them out.
                if self.lazy_first_weights {
                    sumcheck.set_lazy_eq_weights(&points, &coeffs, folding)
                } else {
                    sumcheck.add_eq_weights(&points, &coeffs)
                }
            },
            || commit_masks(encoding_ref, mmcs, drawn),
        )?;
        weights?;
        times.constraints += lap.next();
        lap.enter("batches");

        let ell_zk = encoding.message_len();
        let batch = transcript.delegate_initial_fold(|ch| {
            masked_batch(&mut sumcheck, &mut sum, ell_zk, masks, (folding, config.starting_folding_pow_bits()), E::ZERO, ch, self.chains())
        })?;
        let mut run = Run {
            sumcheck,
            sum,
            masks: Masks::new(),
            sumchecks: Vec::new(),
            mask_roots: Vec::new(),
            gammas: Vec::new(),
            oracle_randomness: Vec::new(),
            oracle: Oracle { committed, base: true },
            encoding,
            fresh: None,
            lap,
        };
        times.rounds_chained += batch.chained;
        run.gammas = run.masks.record_batch(batch, &mut run.sumchecks, &mut run.mask_roots, config.zk().ell_zk);
        // The randomness folds with the message (mixed field: base chunks, extension weights).
        run.oracle_randomness = fold_limb_chunks(&randomness, config.oracle_randomness()[0], &run.gammas)?;
        times.batches += run.lap.next();
        Ok(run)
    }

    /// One code-switching round: the folded message committed as the next oracle beside its
    /// switch mask, the private out-of-domain answers, the old oracle's rows opened and folded
    /// at the queries, the constraints they make, and the round's masked batch.
    fn round<C: WhirChallenger<F> + CanObserve<RootOf<F, S::Mmcs>>, R: CryptoRng>(
        &self,
        transcript: &mut ZkWhirProverTranscript<'_, C, F, E>,
        run: &mut Run<F, E, S>,
        round: usize,
        rng: &mut R,
        times: &mut HidingTimes,
    ) -> Result<ZkRoundProof<F, E, S::Mmcs>, ProverError> {
        let config = self.config;
        let params = &config.round_parameters()[round];
        let message_len = 1usize << run.sumcheck.num_variables();
        run.lap.enter("oracles");
        // The round's head (out-of-domain samples, then the query grind), played where f lies
        // where the challenger publishes its state; below the device's threshold the
        // challenger grinds itself.
        let grind_bits = if params.pow_bits >= self.device_min_bits { params.pow_bits } else { 0 };
        let head = self.heads().and_then(Lookahead::state).map(|state| RoundHead { state, samples: params.ood_samples, grind_bits });
        let head = head.filter(|h| h.samples > 0 || h.grind_bits > 0);
        let (next, played, mask_wait) = self.commit_round(run, round, head, rng)?;
        transcript.oracle_commitment(next.root.clone());
        transcript.switch_mask_commitment(next.mask_root.clone());
        times.oracles += run.lap.next().saturating_sub(mask_wait);
        times.switch_masks += mask_wait;
        times.heads_played += usize::from(played.is_some());
        run.lap.enter("ood");

        let (rhos, ood_answers) = ood_answers(transcript, &mut run.sumcheck, params.ood_samples, &next.mask_message, played.as_ref())?;
        times.ood += run.lap.next();
        run.lap.enter("queries");

        // The grind played with the head, taken only if the transcript is where it searched.
        if let (Some(link), Some(offer)) = (self.link.as_ref(), played.and_then(|p| p.grind)) {
            link.queue([offer]);
        }
        let pow_witness = transcript.query_pow(round);
        let indices = transcript.query_indices(round);
        let (openings, folded) = self.open_and_fold(&run.oracle, &indices, &run.gammas)?;
        let generator = F::two_adic_generator(params.log_folded_domain_size);
        let query_points: Vec<E> = indices.iter().map(|&i| E::from(generator.exp_u64(i as u64))).collect();
        times.queries += run.lap.next();
        run.lap.enter("constraints");

        // Carried claim (coefficient 1), OOD answers γ^(1+i), query openings γ^(1+t+q).
        let combination: E = transcript.round_batching();
        let coeffs: Vec<E> = combination.shifted_powers(combination).collect_n(rhos.len() + indices.len());
        let (ood_coeffs, query_coeffs) = coeffs.split_at(rhos.len());
        let carried = run.sum + run.masks.aux;
        let joint = carried
            + dot_product::<E, _, _>(ood_coeffs.iter().copied(), ood_answers.iter().copied())
            + dot_product::<E, _, _>(query_coeffs.iter().copied(), folded.iter().copied());
        // Source side: the fresh constraints as power covectors on f's weights.
        run.sumcheck.add_select_weights_at(params.log_folded_domain_size, &indices, query_coeffs)?;
        run.sumcheck.add_power_weights(&rhos, ood_coeffs)?;
        // Mask side: the switch mask's covector; the identity fixes the source's increment.
        let covector = switch_mask_covector(message_len, run.oracle_randomness.len(), next.pad_len, &rhos, ood_coeffs, &query_points, query_coeffs);
        run.sum += joint - carried - dot_product::<E, _, _>(covector.iter().copied(), next.mask_message.iter().copied());
        run.masks.push_switch_mask(covector, next.mask_message, next.mask_randomness, next.mask_data);
        times.constraints += run.lap.next();
        run.lap.enter("batches");

        // The next masked batch, the mask total riding as its auxiliary constant.
        let (aux, folding_next, ell_zk) = (run.masks.aux, config.round_folding_factor(round + 1), run.encoding.message_len());
        let masks = next.batch_masks;
        let batch = transcript.delegate_round_fold(|ch| {
            masked_batch(&mut run.sumcheck, &mut run.sum, ell_zk, masks, (folding_next, params.folding_pow_bits), aux, ch, self.chains())
        })?;
        times.rounds_chained += batch.chained;
        run.gammas = run.masks.record_batch(batch, &mut run.sumchecks, &mut run.mask_roots, config.zk().ell_zk);
        run.oracle_randomness = fold_limb_chunks(&next.fresh, config.oracle_randomness()[round + 1], &run.gammas)?;
        run.oracle = Oracle { committed: next.committed, base: false };
        times.batches += run.lap.next();
        Ok(ZkRoundProof { commitment: next.root, mask_commitment: next.mask_root, ood_answers, pow_witness, openings })
    }

    /// A round's two commitments: the folded message as the next interleaved ZK oracle, and
    /// the code-switch mask (the old oracle's folded randomness, then a pad); their values
    /// drawn in p3-whir's order, the mask encoded and committed on the host while the oracle
    /// commits where f lies, and `head` played there after both roots where the backend can.
    /// The round's masked batch's masks are drawn next (the generator's order: nothing else
    /// draws before the batch) and committed on the host after the switch mask. Returns them
    /// with what the head found and how long the host went on past the oracle.
    #[allow(clippy::type_complexity)]
    fn commit_round<R: CryptoRng>(
        &self,
        run: &mut Run<F, E, S>,
        round: usize,
        head: Option<RoundHead<F>>,
        rng: &mut R,
    ) -> Result<(RoundCommitments<F, E, S>, Option<PlayedHead<F, E>>, Duration), ProverError> {
        let config = self.config;
        let folding_next = config.round_folding_factor(round + 1);
        let fresh: Vec<E> = (0..config.oracle_randomness()[round + 1] << folding_next).map(|_| rng.random()).collect();
        let mask_shape = &config.switch_masks()[round];
        let pad_len = config.round_parameters()[round].ood_samples;
        let mut mask_message = run.oracle_randomness.clone();
        mask_message.extend((0..pad_len).map(|_| rng.random::<E>()));
        let mask_randomness: Vec<E> = (0..mask_shape.randomness_len).map(|_| rng.random()).collect();
        let log_inv_rate = config.inv_rate(round).trailing_zeros() as usize;
        let drawn = draw_masks(&run.encoding, folding_next, rng);
        // After the last round's batch the base case draws its fresh values: drawn here (the
        // generator's order holds) and their blinds committed beside the last round.
        let base_fresh = (round + 1 == config.n_rounds()).then(|| {
            let base = config.base_case_config();
            (draw_fresh::<F, E, S::Mmcs, R>(&base, rng), base)
        });
        let (mmcs, message, randomness, encoding) = (&self.mmcs, &mask_message, &mask_randomness, &run.encoding);
        // The mask's root reaches the head once it is committed (None if its work failed).
        let (root_sender, root_receiver) = std::sync::mpsc::sync_channel(1);
        let awaited_root = || root_receiver.recv().ok();
        let (oracle, ((mask_root, mask_data), batch_masks, base_fresh), mask_wait) = beside_host_work(
            || {
                let head = head.map(|head| HidingRoundHead { head, mask_message: message, mask_root: &awaited_root });
                self.backend.commit_hiding_folded_with_head(&mut run.sumcheck, &fresh, folding_next, log_inv_rate, head)
            },
            move || {
                let (root, data) = mmcs.commit_matrix(mask_shape.encoding::<E>().encode_with_randomness(message, randomness));
                // The device side may not be listening (no head): nothing to do then.
                let _ = root_sender.send(root.clone());
                let batch_masks = commit_masks(encoding, mmcs, drawn);
                let base_fresh = base_fresh.map(|(mut values, base)| values.commit_blinds(&base, mmcs).map(|()| values));
                ((root, data), batch_masks, base_fresh)
            },
        )?;
        let (root, committed, played) = oracle?;
        run.fresh = base_fresh.transpose()?;
        let next = RoundCommitments { root, committed, fresh, mask_message, mask_randomness, pad_len, mask_root, mask_data, batch_masks };
        Ok((next, played, mask_wait))
    }

    /// The masked base case over the virtual folded oracle.
    fn base_case<C: WhirChallenger<F> + CanObserve<RootOf<F, S::Mmcs>>, R: CryptoRng>(
        &self,
        transcript: &mut ZkWhirProverTranscript<'_, C, F, E>,
        run: &mut Run<F, E, S>,
        rng: &mut R,
    ) -> Result<BaseCaseProof<F, E, S::Mmcs>, ProverError> {
        run.lap.enter("base case");
        let source_message = run.sumcheck.evals()?;
        let source_covector = run.sumcheck.weights_table()?;
        let fresh = match run.fresh.take() {
            Some(fresh) => fresh,
            None => draw_fresh(&self.config.base_case_config(), rng),
        };
        let oracle = &run.oracle;
        transcript.delegate_base_case(|ch| {
            // No head follows: the reveals' many observations need not publish the state.
            ch.stop_tracking();
            prove_base_case(
                self.config,
                self.backend,
                &self.mmcs,
                &source_message,
                &run.oracle_randomness,
                &source_covector,
                &run.masks,
                (&oracle.committed, oracle.base),
                ch,
                fresh,
            )
        })
    }

    /// Opens `oracle` at `indices` in one multiproof and folds each row at `gammas`.
    #[allow(clippy::type_complexity)]
    fn open_and_fold(
        &self,
        oracle: &Oracle<S::Committed>,
        indices: &[usize],
        gammas: &[E],
    ) -> Result<(QueryOpenings<F, E, PathsOf<F, S::Mmcs>>, Vec<E>), ProverError> {
        let opening = self.backend.open(&oracle.committed, indices)?;
        let (rows, proof) = self.backend.read_openings(vec![opening])?.pop().ok_or_else(|| ProverError::Input("no opening read back".into()))?;
        let point = Point::new(gammas.to_vec());
        let openings = query_openings::<F, E, _>(rows, proof, oracle.base);
        let folded = match &openings {
            QueryOpenings::Base(SharedProofOpening { rows, .. }) => rows.iter().map(|row| Poly::new(row.clone()).eval_base(&point)).collect(),
            QueryOpenings::Extension(SharedProofOpening { rows, .. }) => rows.iter().map(|row| Poly::new(row.clone()).eval_ext::<F>(&point)).collect(),
        };
        Ok((openings, folded))
    }
}

/// A round's private out-of-domain samples: each point drawn and answered over the oracle's
/// message (f) followed by the switch mask's message, read as one univariate polynomial — the
/// answer the device played with the round's head where it did (its point checked against the
/// one drawn), else computed where f lies. Returns the points and the answers.
fn ood_answers<F, E, C, T>(
    transcript: &mut ZkWhirProverTranscript<'_, C, F, E>,
    sumcheck: &mut T,
    samples: usize,
    mask_message: &[E],
    played: Option<&PlayedHead<F, E>>,
) -> Result<(Vec<E>, Vec<E>), ProverError>
where
    F: ProverField,
    E: WhirExtension<F> + TwoAdicField,
    C: FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F>,
    T: SumcheckState<F, E>,
{
    let message_len = 1u64 << sumcheck.num_variables();
    let mut rhos = Vec::with_capacity(samples);
    let mut answers = Vec::with_capacity(samples);
    for i in 0..samples {
        let rho: E = transcript.ood_point();
        let answer = match played.map(|p| (p.points.get(i), p.answers.get(i))) {
            Some((Some(&drawn), Some(&answer))) if drawn == rho => answer,
            Some((Some(drawn), _)) => {
                return Err(ProverError::PlayedAhead(format!("the GPU drew out-of-domain point {drawn:?} where the transcript draws {rho:?}")));
            }
            _ => {
                let tail: E = mask_message.iter().copied().horner(rho);
                sumcheck.eval_powers(rho)? + tail * rho.exp_u64(message_len)
            }
        };
        transcript.ood_answer(answer);
        rhos.push(rho);
        answers.push(answer);
    }
    Ok((rhos, answers))
}

/// Σ_b eq(b, γ)·chunk_b over the 2^k chunks of `chunk` values: randomness folded with the
/// message it pads (p3-whir's `fold_limb_chunks`).
fn fold_limb_chunks<F: ProverField, A: Copy, E>(values: &[A], chunk: usize, gammas: &[E]) -> Result<Vec<E>, ProverError>
where
    E: WhirExtension<F> + p3_field::Algebra<A>,
{
    if Some(values.len()) != chunk.checked_shl(gammas.len() as u32) {
        return Err(ProverError::Input(format!("{} randomness values in 2^{} chunks of {chunk}", values.len(), gammas.len())));
    }
    let eq = Poly::new_from_point(gammas, E::ONE);
    let mut out = E::zero_vec(chunk);
    for (b, &weight) in eq.as_slice().iter().enumerate() {
        for (dst, &src) in out.iter_mut().zip(&values[b * chunk..(b + 1) * chunk]) {
            *dst += weight * src;
        }
    }
    Ok(out)
}

/// The switch mask's covector (p3-whir's `switch_mask_covector`): each OOD point ρ weighs
/// randomness and pad entry s by c·ρ^(|message| + s), each query point x the randomness by
/// c·x^(|message| + s).
fn switch_mask_covector<E: p3_field::Field>(
    message_len: usize,
    randomness_len: usize,
    pad_len: usize,
    rhos: &[E],
    ood_coeffs: &[E],
    query_points: &[E],
    query_coeffs: &[E],
) -> Vec<E> {
    let mut covector = E::zero_vec(randomness_len + pad_len);
    for (&rho, &c) in rhos.iter().zip(ood_coeffs) {
        let mut term = c * rho.exp_u64(message_len as u64);
        for dst in &mut covector {
            *dst += term;
            term *= rho;
        }
    }
    for (&x, &c) in query_points.iter().zip(query_coeffs) {
        let mut term = c * x.exp_u64(message_len as u64);
        for dst in covector.iter_mut().take(randomness_len) {
            *dst += term;
            term *= x;
        }
    }
    covector
}
