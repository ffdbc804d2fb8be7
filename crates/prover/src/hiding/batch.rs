//! A masked sumcheck batch (p3-sumcheck's `into_zk_sumcheck`, Construction 6.3 of eprint
//! 2026/391) over the protocol's sumcheck steps, and the mask state a hiding run carries from
//! batch to batch (p3-whir's `ProverMasks`): the plain rounds' (h(0), h(∞)) come from where f
//! and w lie; the masks, their oracle and the wire polynomials are small and stay on the host.

use p3_challenger::{CanObserve, FieldChallenger, GrindingChallenger};
use p3_commit::Mmcs;
use p3_field::TwoAdicField;
use p3_field::{dot_product, Field, HornerIter};
use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::zk::{ZkProverTranscript, ZkSumcheckData, ZkSumcheckShape};
use p3_zk_codes::{ZkEncoding, ZkEncodingWithRandomness};
use rand::distr::{Distribution, StandardUniform};
use rand::CryptoRng;

use super::{closed, ExtMmcs, MaskData, MaskEncoding};
use crate::backend::RootOf;
use crate::error::ProverError;
use crate::lookahead::{Lookahead, MaskedWire, MaskedWires};
use crate::sumcheck::SumcheckState;
use crate::{ProverField, WhirExtension};

/// What a masked batch leaves: its challenges γ, its combining challenge ε, its masks and
/// their oracle, and its proof data.
pub(super) struct MaskedBatch<F: ProverField, E: WhirExtension<F>, M: Mmcs<F>> {
    pub gammas: Vec<E>,
    pub eps: E,
    pub masks: Vec<Vec<E>>,
    pub mask_randomness: Vec<Vec<E>>,
    pub oracle: (RootOf<F, M>, MaskData<F, E, M>),
    pub data: ZkSumcheckData<F, E>,
    /// Rounds played where the tables lie (chained), each challenge checked here.
    pub chained: usize,
}

/// A masked batch's masks, drawn and committed ahead of it: they depend on the generator
/// alone, not on the transcript, so their encoding and commitment run on the host while the
/// device works on the backend before the batch.
pub(super) struct BatchMasks<F: ProverField, E: WhirExtension<F>, M: Mmcs<F>> {
    pub masks: Vec<Vec<E>>,
    pub randomness: Vec<Vec<E>>,
    pub oracle: (RootOf<F, M>, MaskData<F, E, M>),
}

/// A batch of `folding` rounds' masks drawn from `rng` in p3-sumcheck's order
/// (`sample_masks`: every mask's message, then every mask's randomness).
pub(super) fn draw_masks<E, R>(encoding: &MaskEncoding<E>, folding: usize, rng: &mut R) -> (Vec<Vec<E>>, Vec<Vec<E>>)
where
    E: Field + TwoAdicField,
    R: CryptoRng,
    StandardUniform: Distribution<E>,
{
    let masks: Vec<Vec<E>> = (0..folding).map(|_| encoding.sample_message(rng)).collect();
    let randomness: Vec<Vec<E>> = masks.iter().map(|_| encoding.sample_randomness(rng)).collect();
    (masks, randomness)
}

/// Drawn masks encoded with their randomness and committed as one matrix (on the host).
pub(super) fn commit_masks<F: ProverField, E: WhirExtension<F> + TwoAdicField, M: Mmcs<F>>(
    encoding: &MaskEncoding<E>,
    mmcs: &ExtMmcs<F, E, M>,
    (masks, randomness): (Vec<Vec<E>>, Vec<Vec<E>>),
) -> BatchMasks<F, E, M>
where
    StandardUniform: Distribution<E>,
{
    let codeword: RowMajorMatrix<E> = encoding.encode_batch_with_randomness(&masks, &randomness);
    BatchMasks { oracle: mmcs.commit_matrix(codeword), masks, randomness }
}

/// h(γ) for the quadratic h with h(0) = c0, h(1) = c1 and leading coefficient c∞.
fn extrapolate<E: Field>(c0: E, c1: E, c_inf: E, gamma: E) -> E {
    c0 + (c1 - c0 - c_inf) * gamma + c_inf * gamma.square()
}

/// A mask summed over {0,1}: 2 s[0] + Σ_{i≥1} s[i].
fn endpoints<E: Field>(mask: &[E]) -> E {
    mask[0].double() + mask[1..].iter().copied().sum::<E>()
}

/// A batch's wire polynomials' known parts: round j's h_j is
/// 2^(k-j)(s_j + Σ_{l<j} s_l(γ_l)) + 2^(k-j-1)(later masks' endpoints) + ε(plain pair + aux·2^-j),
/// of which only the pair and the earlier masks at their challenges are unknown before the
/// round. The wire drops h(1)'s coefficient (the verifier recovers it from the claim).
fn masked_wires<E: Field>(masks: &[Vec<E>], eps: E, aux: E, h_len: usize) -> MaskedWires<E> {
    let folding = masks.len();
    let mut future: E = masks.iter().map(|m| endpoints(m)).sum();
    let pow2: Vec<E> = E::TWO.powers().collect_n(folding + 1);
    let half = E::TWO.inverse();
    let mut aux_carry = aux;
    let rounds = (1..=folding)
        .map(|j| {
            aux_carry *= half;
            let mask = &masks[j - 1];
            future -= endpoints(mask);
            let live = pow2[folding - j];
            let mut h = E::zero_vec(h_len);
            for (hi, &c) in h.iter_mut().zip(mask) {
                *hi += live * c;
            }
            if j < folding {
                h[0] += pow2[folding - j - 1] * future;
            }
            h[0] += eps * aux_carry;
            MaskedWire { at_zero: h[0], at_inf: h[2], share: live, rest: h[3..].to_vec(), mask: mask.clone() }
        })
        .collect();
    MaskedWires { scale: eps, rounds }
}

/// Round j's wire, [h(0), h(2), h(3), ...] in monomial coefficients, from its plain pair and
/// Σ_{l<j} s_l(γ_l).
fn wire_of<E: Field>(round: &MaskedWire<E>, eps: E, (c0, c_inf): (E, E), past: E) -> Vec<E> {
    let mut wire = Vec::with_capacity(2 + round.rest.len());
    wire.push(round.at_zero + round.share * past + eps * c0);
    wire.push(round.at_inf + eps * c_inf);
    wire.extend_from_slice(&round.rest);
    wire
}

/// Plays one masked batch of `folding` rounds over `state` (f and w, Σ f·w = `sum`) with its
/// own transcript driver on `challenger`: binds `sum + aux`, binds the masks' oracle (`masks`,
/// drawn and committed ahead: [`draw_masks`], [`commit_masks`]), and per round sends the masked
/// wire polynomial and binds f's first variable to the challenge. Where `link` publishes the
/// transcript and the backend can, the rounds are chained where the tables lie (one wait for the
/// batch) and replayed here, each challenge checked. On return w and `sum` are scaled by ε, as
/// p3-sumcheck leaves them.
#[allow(clippy::too_many_arguments)]
pub(super) fn masked_batch<F, E, S, C, M>(
    state: &mut S,
    sum: &mut E,
    ell_zk: usize,
    masks: BatchMasks<F, E, M>,
    (folding, pow_bits): (usize, usize),
    aux: E,
    challenger: &mut C,
    link: Option<&Lookahead<F>>,
) -> Result<MaskedBatch<F, E, M>, ProverError>
where
    F: ProverField,
    E: WhirExtension<F> + TwoAdicField,
    S: SumcheckState<F, E>,
    C: FieldChallenger<F> + GrindingChallenger<Witness = F> + CanObserve<RootOf<F, M>>,
    M: Mmcs<F>,
{
    let shape = batch_shape(state.num_variables(), &masks.masks, ell_zk, (folding, pow_bits))?;
    let BatchMasks { masks, randomness: mask_randomness, oracle: (root, oracle) } = masks;
    let mut transcript = ZkProverTranscript::<C, F, E>::new(challenger, shape);
    let played = (|| {
        transcript.bind_claim(*sum + aux);

        // μ̃ = 2^(k-1) Σ_l (2 s_l[0] + Σ_{i≥1} s_l[i]): every mask summed over {0,1}^k.
        let mu_tilde = E::TWO.exp_u64((folding - 1) as u64) * masks.iter().map(|m| endpoints(m)).sum::<E>();
        let mut data = ZkSumcheckData { mu_tilde, ..ZkSumcheckData::default() };
        let eps: E = transcript.masks(root.clone(), mu_tilde);
        let wires = masked_wires(&masks, eps, aux, ell_zk.max(3));

        // The transcript's state once ε is drawn: where rounds on the device start.
        let chained = match link.and_then(Lookahead::state).and_then(|at| state.play_chain(folding, &at, pow_bits, Some(&wires))) {
            Some(chained) => chained?,
            None => Vec::new(),
        };
        if let Some(link) = link {
            link.queue(chained.iter().filter_map(|c| c.grind.clone()));
        }
        let mut gammas = Vec::with_capacity(folding);
        let mut past = E::ZERO;
        // A challenge drawn but not yet bound by a fold.
        let mut unfolded: Option<E> = None;
        for (j, round) in wires.rounds.iter().enumerate() {
            let (pair, device_r) = match chained.get(j) {
                Some(c) => ((c.c0, c.c_inf), c.r),
                // Each round's fold goes with the next round's coefficients (one round trip).
                None => match unfolded.take() {
                    None => (state.round_coefficients()?, None),
                    Some(r) => (state.fold_then_round(r)?, None),
                },
            };
            let wire = wire_of(round, eps, pair, past);
            let (gamma, witness) = transcript.round(&wire);
            match device_r {
                Some(r) if r == gamma => {}
                Some(r) => {
                    return Err(ProverError::PlayedAhead(format!("the backend drew masked sumcheck challenge {r:?} where the transcript draws {gamma:?}")))
                }
                // Played here, or the chain stopped at this round's grind: not folded yet.
                None => unfolded = Some(gamma),
            }
            data.round_coefficients.push(wire);
            data.pow_witnesses.extend(witness);
            past += round.mask.iter().copied().horner::<E, E>(gamma);
            // The plain sum advances with the plain round (the aux carry reaches the wire only).
            *sum = extrapolate(pair.0, *sum - pair.0, pair.1, gamma);
            gammas.push(gamma);
        }
        if let Some(r) = unfolded {
            state.fold(r)?;
        }
        state.scale_weights(eps)?;
        *sum *= eps;
        let chained = chained.iter().filter(|c| c.r.is_some()).count();
        Ok(MaskedBatch { gammas, eps, masks, mask_randomness, oracle: (root, oracle), data, chained })
    })();
    closed(transcript, played, |t| t.finish())
}

/// The shape of a masked batch of `folding` rounds over `vars` variables with `masks` of
/// `ell_zk` values each, checked (p3-sumcheck's own validation included).
fn batch_shape<F: ProverField, E: WhirExtension<F>>(
    vars: usize,
    masks: &[Vec<E>],
    ell_zk: usize,
    (folding, pow_bits): (usize, usize),
) -> Result<ZkSumcheckShape, ProverError> {
    let shape = ZkSumcheckShape::new_inherited(folding, ell_zk, pow_bits);
    shape.validate::<F>().map_err(|e| ProverError::Params(format!("a masked sumcheck batch of {folding} rounds: {e:?}")))?;
    if folding == 0 || folding > vars {
        return Err(ProverError::Input(format!("a masked batch of {folding} rounds over {vars} variables")));
    }
    if masks.len() != folding || masks.iter().any(|m| m.len() != ell_zk) || ell_zk < 3 {
        return Err(ProverError::Input(format!(
            "{} masks of {:?} values for a masked batch of {folding} rounds with masks of {ell_zk} values (at least 3)",
            masks.len(),
            masks.iter().map(Vec::len).collect::<Vec<_>>()
        )));
    }
    Ok(shape)
}

/// The masks a hiding run has committed so far, their claims' covectors and the running total
/// Σ ⟨covector, message⟩ (p3-whir's `ProverMasks`), grouped as they were committed.
pub(super) struct Masks<F: ProverField, E: WhirExtension<F>, M: Mmcs<F>> {
    pub messages: Vec<Vec<E>>,
    pub randomness: Vec<Vec<E>>,
    pub covectors: Vec<Vec<E>>,
    pub groups: Vec<(usize, MaskData<F, E, M>)>,
    pub aux: E,
}

impl<F: ProverField, E: WhirExtension<F>, M: Mmcs<F>> Masks<F, E, M> {
    pub fn new() -> Self {
        Self { messages: Vec::new(), randomness: Vec::new(), covectors: Vec::new(), groups: Vec::new(), aux: E::ZERO }
    }

    /// Takes in a finished batch: its proof data and mask root go to the proof, older
    /// covectors (and the total) are scaled by ε/2^k, and each new mask's covector (powers of
    /// its γ) joins them. Returns the batch's challenges.
    pub fn record_batch(
        &mut self,
        batch: MaskedBatch<F, E, M>,
        sumchecks: &mut Vec<ZkSumcheckData<F, E>>,
        roots: &mut Vec<RootOf<F, M>>,
        ell_zk: usize,
    ) -> Vec<E> {
        let folding = batch.gammas.len();
        sumchecks.push(batch.data);
        roots.push(batch.oracle.0.clone());
        let scale = batch.eps * E::TWO.exp_u64(folding as u64).inverse();
        for covector in &mut self.covectors {
            covector.iter_mut().for_each(|c| *c *= scale);
        }
        self.aux *= scale;
        for (gamma, message) in batch.gammas.iter().zip(&batch.masks) {
            let covector: Vec<E> = gamma.powers().collect_n(ell_zk);
            self.aux += dot_product::<E, _, _>(covector.iter().copied(), message.iter().copied());
            self.covectors.push(covector);
        }
        self.messages.extend(batch.masks);
        self.randomness.extend(batch.mask_randomness);
        self.groups.push((folding, batch.oracle.1));
        batch.gammas
    }

    /// Takes in a code-switching round's mask.
    pub fn push_switch_mask(&mut self, covector: Vec<E>, message: Vec<E>, randomness: Vec<E>, data: MaskData<F, E, M>) {
        self.aux += dot_product::<E, _, _>(covector.iter().copied(), message.iter().copied());
        self.covectors.push(covector);
        self.messages.push(message);
        self.randomness.push(randomness);
        self.groups.push((1, data));
    }
}
