//! A comparing backend: [`ComparingBackend`] runs every step on a reference (the CPU twin) and on
//! a candidate (the GPU backend, or a test's), hands the candidate's results on, and stops the
//! proof at the first step whose outputs differ, naming it (round, step, operation) in
//! [`ProverError::Mismatch`]. Steps without outputs of their own (a fold, added weights) are
//! checked through the next step that reads what they changed. For tests and for bisecting a
//! wrong proof down to the step that made it.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use crate::lookahead::{HidingRoundHead, Lookahead, MaskedWires, PlayedGrind, PlayedHead, PlayedRound, RoundHead, TranscriptState};
use p3_field::HornerIter;
use p3_multilinear_util::point::Point;

use super::{Backend, OpenedRows};
use crate::breakdown::Step;
use crate::error::ProverError;
use crate::sumcheck::{SlotSet, SumcheckState};
use crate::{Commitment, ProverField, WhirExtension};
use whir_verifier::hash::CpuMmcs;
use whir_verifier::hash::LeafSponge;

/// The round and step the driver is in, shared by the codeword and sumcheck sides.
#[derive(Clone, Default)]
struct Position(Arc<Mutex<Option<(usize, Step)>>>);

impl Position {
    fn set(&self, round: usize, step: Step) {
        if let Ok(mut at) = self.0.lock() {
            *at = Some((round, step));
        }
    }

    /// "round R, step S: operation" (or the operation alone before the first step).
    fn name(&self, operation: &str) -> String {
        match self.0.lock().ok().and_then(|at| *at) {
            Some((round, step)) => format!("round {round}, step {}: {operation}", step.name()),
            None => operation.to_string(),
        }
    }

    /// `Ok` where the outputs agree, else the mismatch named at this position.
    fn check<T: PartialEq + Debug>(&self, operation: &str, reference: &T, candidate: &T) -> Result<(), ProverError> {
        if reference == candidate {
            return Ok(());
        }
        Err(ProverError::Mismatch {
            step: self.name(operation),
            detail: format!("the reference gives {}, the candidate {}", short(reference), short(candidate)),
        })
    }
}

/// A value's debug form, cut to a readable length.
fn short<T: Debug>(value: &T) -> String {
    let text = format!("{value:?}");
    match text.char_indices().nth(160) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}

/// Runs `reference` and `candidate` side by side (see the module docs). The proof is the
/// candidate's; the reference is only compared with.
pub struct ComparingBackend<A, B> {
    reference: A,
    candidate: B,
    at: Position,
}

impl<A, B> ComparingBackend<A, B> {
    /// `candidate`'s outputs checked against `reference`'s at every step.
    pub fn new(reference: A, candidate: B) -> Self {
        Self { reference, candidate, at: Position::default() }
    }

    /// The side whose outputs are used.
    pub fn candidate(&self) -> &B {
        &self.candidate
    }

    fn compare_openings<F: ProverField>(&self, reference: &[OpenedRows<F>], candidate: &[OpenedRows<F>]) -> Result<(), ProverError> {
        self.at.check("openings: count", &reference.len(), &candidate.len())?;
        for (k, (a, b)) in reference.iter().zip(candidate).enumerate() {
            self.at.check(&format!("opening {k}: rows"), &a.0, &b.0)?;
            self.at.check(&format!("opening {k}: sibling digests"), &a.1.sibling_hashes, &b.1.sibling_hashes)?;
        }
        Ok(())
    }
}

/// Over backends of Poseidon2 trees (`CpuMmcs`), whose roots and paths it compares.
impl<F: ProverField, E: WhirExtension<F>, A: Backend<F, E, Mmcs = CpuMmcs<F>>, B: Backend<F, E, Mmcs = CpuMmcs<F>>> Backend<F, E> for ComparingBackend<A, B> {
    type Committed = (A::Committed, B::Committed);
    type Opening = (A::Opening, B::Opening);
    type Sumcheck = ComparingSumcheck<A::Sumcheck, B::Sumcheck>;
    /// The comparing backend plays nothing ahead: every transcript step on the caller's challenger.
    type Transcript = A::Transcript;

    /// The candidate's (a reference hashing otherwise differs at the first root).
    type Mmcs = CpuMmcs<F>;

    fn leaf_sponge(&self) -> Option<LeafSponge> {
        self.candidate.leaf_sponge()
    }

    fn mmcs(&self) -> CpuMmcs<F> {
        self.candidate.mmcs()
    }

    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let (a_root, a) = self.reference.commit(message, width, log_inv_rate)?;
        let (b_root, b) = self.candidate.commit(message, width, log_inv_rate)?;
        self.at.check("commit: root", &a_root, &b_root)?;
        Ok((b_root, (a, b)))
    }

    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError> {
        Ok((self.reference.open(&committed.0, indices)?, self.candidate.open(&committed.1, indices)?))
    }

    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<Vec<OpenedRows<F>>, ProverError> {
        let (a, b): (Vec<_>, Vec<_>) = openings.into_iter().unzip();
        let (a, b) = (self.reference.read_openings(a)?, self.candidate.read_openings(b)?);
        self.compare_openings(&a, &b)?;
        Ok(b)
    }

    #[allow(clippy::type_complexity)]
    fn begin_reading_openings(&self, openings: Vec<Self::Opening>) -> Result<Box<dyn FnOnce() -> Result<Vec<OpenedRows<F>>, ProverError> + '_>, ProverError> {
        let (a, b): (Vec<_>, Vec<_>) = openings.into_iter().unzip();
        let reading = self.candidate.begin_reading_openings(b)?;
        let a = self.reference.read_openings(a)?;
        Ok(Box::new(move || {
            let b = reading()?;
            self.compare_openings(&a, &b)?;
            Ok(b)
        }))
    }

    fn commit_message(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        let (a_root, a, a_sum) = self.reference.commit_message(message, width, log_inv_rate)?;
        let (b_root, b, b_sum) = self.candidate.commit_message(message, width, log_inv_rate)?;
        self.at.check("commit: root", &a_root, &b_root)?;
        Ok((b_root, (a, b), ComparingSumcheck { reference: a_sum, candidate: b_sum, at: self.at.clone() }))
    }

    fn commit_message_blocks(
        &self,
        blocks: usize,
        block_len: usize,
        width: usize,
        log_inv_rate: usize,
        order: p3_sumcheck::strategy::VariableOrder,
        block: &super::Blocks<'_, F>,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        let (a_root, a, a_sum) = self.reference.commit_message_blocks(blocks, block_len, width, log_inv_rate, order, block)?;
        let (b_root, b, b_sum) = self.candidate.commit_message_blocks(blocks, block_len, width, log_inv_rate, order, block)?;
        self.at.check("commit: root", &a_root, &b_root)?;
        Ok((b_root, (a, b), ComparingSumcheck { reference: a_sum, candidate: b_sum, at: self.at.clone() }))
    }

    fn commit_folded(&self, sumcheck: &mut Self::Sumcheck, fold: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let (a_root, a) = self.reference.commit_folded(&mut sumcheck.reference, fold, log_inv_rate)?;
        let (b_root, b) = self.candidate.commit_folded(&mut sumcheck.candidate, fold, log_inv_rate)?;
        self.at.check("commit: root of the folded polynomial", &a_root, &b_root)?;
        Ok((b_root, (a, b)))
    }

    /// The candidate plays the script; the values it found are checked against the reference's
    /// f at the points it drew (the driver checks the points against the transcript's).
    fn commit_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        fold: usize,
        log_inv_rate: usize,
        head: Option<&RoundHead<F>>,
    ) -> Result<(Commitment<F>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        let (a_root, a) = self.reference.commit_folded(&mut sumcheck.reference, fold, log_inv_rate)?;
        let (b_root, b, played) = self.candidate.commit_folded_with_head(&mut sumcheck.candidate, fold, log_inv_rate, head)?;
        self.at.check("commit: root of the folded polynomial", &a_root, &b_root)?;
        if let Some(played) = &played {
            for (k, (&z, &value)) in played.points.iter().zip(&played.answers).enumerate() {
                let expected = sumcheck.reference.eval_univariate(z)?;
                self.at.check(&format!("value {k} of the script played with the commit"), &expected, &value)?;
            }
        }
        Ok((b_root, (a, b), played))
    }

    fn enter_step(&self, round: usize, step: Step) {
        self.at.set(round, step);
        self.reference.enter_step(round, step);
        self.candidate.enter_step(round, step);
    }

    fn commit_hiding_message(
        &self,
        poly: &[F],
        randomness: &[F],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        let (a_root, a, a_sum) = self.reference.commit_hiding_message(poly, randomness, fold, log_inv_rate)?;
        let (b_root, b, b_sum) = self.candidate.commit_hiding_message(poly, randomness, fold, log_inv_rate)?;
        self.at.check("hiding commit: root", &a_root, &b_root)?;
        Ok((b_root, (a, b), ComparingSumcheck { reference: a_sum, candidate: b_sum, at: self.at.clone() }))
    }

    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let (a_root, a) = self.reference.commit_hiding_folded(&mut sumcheck.reference, randomness, fold, log_inv_rate)?;
        let (b_root, b) = self.candidate.commit_hiding_folded(&mut sumcheck.candidate, randomness, fold, log_inv_rate)?;
        self.at.check("hiding commit: root of the folded polynomial", &a_root, &b_root)?;
        Ok((b_root, (a, b)))
    }

    /// The candidate plays the head; the answers it found are checked against the reference's
    /// f and the mask's message at the points it drew (the hiding run checks the points).
    fn commit_hiding_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
        head: Option<HidingRoundHead<'_, F, E>>,
    ) -> Result<(Commitment<F>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        let mask_message = head.as_ref().map(|h| h.mask_message.to_vec());
        let (a_root, a) = self.reference.commit_hiding_folded(&mut sumcheck.reference, randomness, fold, log_inv_rate)?;
        let (b_root, b, played) = self.candidate.commit_hiding_folded_with_head(&mut sumcheck.candidate, randomness, fold, log_inv_rate, head)?;
        self.at.check("hiding commit: root of the folded polynomial", &a_root, &b_root)?;
        if let (Some(played), Some(mask_message)) = (&played, mask_message) {
            let m = sumcheck.reference.num_variables();
            for (k, (&z, &value)) in played.points.iter().zip(&played.answers).enumerate() {
                let tail: E = mask_message.iter().copied().horner(z);
                let expected = sumcheck.reference.eval_powers(z)? + tail * z.exp_power_of_2(m);
                self.at.check(&format!("out-of-domain answer {k} played with the hiding commit"), &expected, &value)?;
            }
        }
        Ok((b_root, (a, b), played))
    }
}

/// The sumcheck side of [`ComparingBackend`].
pub struct ComparingSumcheck<A, B> {
    reference: A,
    candidate: B,
    at: Position,
}

impl<F: ProverField, E: WhirExtension<F>, A: SumcheckState<F, E>, B: SumcheckState<F, E>> SumcheckState<F, E> for ComparingSumcheck<A, B> {
    fn num_variables(&self) -> usize {
        self.candidate.num_variables()
    }

    fn duplicate(&self) -> Result<Self, ProverError> {
        Ok(Self { reference: self.reference.duplicate()?, candidate: self.candidate.duplicate()?, at: self.at.clone() })
    }

    fn round_coefficients(&mut self) -> Result<(E, E), ProverError> {
        let a = self.reference.round_coefficients()?;
        let b = self.candidate.round_coefficients()?;
        self.at.check("round coefficients h(0), h(inf)", &a, &b)?;
        Ok(b)
    }

    fn fold(&mut self, r: E) -> Result<(), ProverError> {
        self.reference.fold(r)?;
        self.candidate.fold(r)
    }

    fn fold_then_round(&mut self, r: E) -> Result<(E, E), ProverError> {
        let a = self.reference.fold_then_round(r)?;
        let b = self.candidate.fold_then_round(r)?;
        self.at.check("fold, then round coefficients h(0), h(inf)", &a, &b)?;
        Ok(b)
    }

    fn add_eq_weights(&mut self, points: &[Point<E>], scales: &[E]) -> Result<(), ProverError> {
        self.reference.add_eq_weights(points, scales)?;
        self.candidate.add_eq_weights(points, scales)
    }

    fn add_select_weights(&mut self, vars: &[F], scales: &[E]) -> Result<(), ProverError> {
        self.reference.add_select_weights(vars, scales)?;
        self.candidate.add_select_weights(vars, scales)
    }

    fn set_lazy_eq_weights(&mut self, points: &[Point<E>], scales: &[E], rounds: usize) -> Result<(), ProverError> {
        self.reference.set_lazy_eq_weights(points, scales, rounds)?;
        self.candidate.set_lazy_eq_weights(points, scales, rounds)
    }

    fn add_select_weights_at(&mut self, log_domain: usize, indices: &[usize], scales: &[E]) -> Result<(), ProverError> {
        self.reference.add_select_weights_at(log_domain, indices, scales)?;
        self.candidate.add_select_weights_at(log_domain, indices, scales)
    }

    fn eval(&mut self, point: &Point<E>) -> Result<E, ProverError> {
        let a = self.reference.eval(point)?;
        let b = self.candidate.eval(point)?;
        self.at.check("evaluation of f", &a, &b)?;
        Ok(b)
    }

    fn eval_univariate(&mut self, y: E) -> Result<E, ProverError> {
        let a = self.reference.eval_univariate(y)?;
        let b = self.candidate.eval_univariate(y)?;
        self.at.check("evaluation of f at a univariate point", &a, &b)?;
        Ok(b)
    }

    fn weights_table(&mut self) -> Result<Vec<E>, ProverError> {
        let a = self.reference.weights_table()?;
        let b = self.candidate.weights_table()?;
        self.at.check("the weights w", &a, &b)?;
        Ok(b)
    }

    fn scale_weights(&mut self, s: E) -> Result<(), ProverError> {
        self.reference.scale_weights(s)?;
        self.candidate.scale_weights(s)
    }

    fn add_power_weights(&mut self, vars: &[E], scales: &[E]) -> Result<(), ProverError> {
        self.reference.add_power_weights(vars, scales)?;
        self.candidate.add_power_weights(vars, scales)
    }

    fn eval_powers(&mut self, y: E) -> Result<E, ProverError> {
        let a = self.reference.eval_powers(y)?;
        let b = self.candidate.eval_powers(y)?;
        self.at.check("f's coefficients evaluated at a point", &a, &b)?;
        Ok(b)
    }

    fn evals(&mut self) -> Result<Vec<E>, ProverError> {
        let a = self.reference.evals()?;
        let b = self.candidate.evals()?;
        self.at.check("f's evaluation table", &a, &b)?;
        Ok(b)
    }

    fn eval_slots(&mut self, sets: &[SlotSet<E>]) -> Result<Vec<Vec<E>>, ProverError> {
        let a = self.reference.eval_slots(sets)?;
        let b = self.candidate.eval_slots(sets)?;
        self.at.check("evaluations of table columns (slots of f)", &a, &b)?;
        Ok(b)
    }

    fn add_slot_weights(&mut self, sets: &[(SlotSet<E>, Vec<E>)]) -> Result<(), ProverError> {
        self.reference.add_slot_weights(sets)?;
        self.candidate.add_slot_weights(sets)
    }

    fn set_lazy_slot_weights(&mut self, sets: &[(SlotSet<E>, Vec<E>)], rounds: usize) -> Result<(), ProverError> {
        self.reference.set_lazy_slot_weights(sets, rounds)?;
        self.candidate.set_lazy_slot_weights(sets, rounds)
    }

    fn evals_then_grind(&mut self, grind: Option<(&TranscriptState<F>, usize)>) -> Result<(Vec<E>, Option<PlayedGrind<F>>), ProverError> {
        let a = self.reference.evals()?;
        let (b, offer) = self.candidate.evals_then_grind(grind)?;
        self.at.check("f's evaluation table (with the grind after it)", &a, &b)?;
        Ok((b, offer))
    }

    fn set_grind_ahead(&mut self, ahead: Option<Lookahead<F>>) {
        self.candidate.set_grind_ahead(ahead)
    }

    /// The candidate plays the chain; the reference replays its rounds at the challenges the
    /// candidate drew (the driver checks those against the transcript's).
    fn play_chain(
        &mut self,
        rounds: usize,
        state: &TranscriptState<F>,
        bits: usize,
        wires: Option<&MaskedWires<E>>,
    ) -> Option<Result<Vec<PlayedRound<F, E>>, ProverError>> {
        let chain = match self.candidate.play_chain(rounds, state, bits, wires)? {
            Ok(chain) => chain,
            Err(e) => return Some(Err(e)),
        };
        for (k, c) in chain.iter().enumerate() {
            let replayed =
                self.reference.round_coefficients().and_then(|a| self.at.check(&format!("chained sumcheck round {k}: h(0), h(inf)"), &a, &(c.c0, c.c_inf)));
            if let Err(e) = replayed.and_then(|()| c.r.map_or(Ok(()), |r| self.reference.fold(r))) {
                return Some(Err(e));
            }
        }
        Some(Ok(chain))
    }
}
