//! The protocol's pieces shared by the plain and the hiding runs: sumcheck batches played over
//! a challenger (on the device where the backend and the challenger can), query openings in the
//! proof's form, and the challenger a run plays over.

use p3_dft::Radix2DFTSmallBatch;
use p3_multilinear_util::point::Point;
use p3_sumcheck::strategy::Basis;
use p3_sumcheck::transcript::{ProverTranscript, SumcheckShape};
use p3_sumcheck::SumcheckData;
use p3_whir::{QueryOpenings, SharedProofOpening, WhirDomain, WhirQueryPoint};

use crate::backend::Backend;
use crate::claims::Stacking;
use crate::error::ProverError;
use crate::lookahead::{Lookahead, SpongeTranscript, WhirChallenger, SPONGE_WIDTH};
use crate::sumcheck::SumcheckState;
use crate::{ProverField, WhirExtension, EF};

/// An opening in the proof's form: base-field rows for the first codeword, extension-field
/// rows (from their base words) for the folded ones.
pub(crate) fn query_openings<F: ProverField, E: WhirExtension<F>, P>(rows: Vec<Vec<F>>, proof: P, base: bool) -> QueryOpenings<F, E, P> {
    if base {
        QueryOpenings::Base(SharedProofOpening { rows, proof })
    } else {
        QueryOpenings::Extension(SharedProofOpening { rows: ext_rows(rows), proof })
    }
}

/// Extension-field rows from the base words a codeword opening returns.
fn ext_rows<F: ProverField, E: WhirExtension<F>>(rows: Vec<Vec<F>>) -> Vec<Vec<E>> {
    rows.into_iter().map(E::reconstitute_from_base).collect()
}

/// The point a query index stands for: ω^index in the folded domain (p3-whir's two-adic domain).
pub(crate) fn query_var<F: ProverField>(log_folded_domain_size: usize, num_variables: usize, index: usize) -> F {
    match <Radix2DFTSmallBatch<F> as WhirDomain<F, EF<F>>>::query_point(&Radix2DFTSmallBatch::default(), log_folded_domain_size, num_variables, index) {
        WhirQueryPoint::Univariate(v) => v,
        WhirQueryPoint::Multilinear(_) => unreachable!("the two-adic domain queries univariate points"),
    }
}

/// `rounds` sumcheck rounds (`SumcheckProver::compute_sumcheck_polynomials` without a new
/// constraint): observe h(0) and h(∞), grind if asked, sample r, bind the last variable to r.
/// Where the backend can, the rounds and their transcript run where the tables are (the GPU: one
/// submission for the batch) and the transcript here replays them, checking each challenge;
/// else each round's grind runs in the round's own submission where the GPU grinds.
pub(crate) fn run_rounds<F: ProverField, E: WhirExtension<F>, S: SumcheckState<F, E>, C: WhirChallenger<F>>(
    sumcheck: &mut S,
    data: &mut SumcheckData<F, E>,
    challenger: &mut C,
    rounds: usize,
    pow_bits: usize,
    on_device: bool,
) -> Result<Point<E>, ProverError> {
    let on_device = on_device && rounds > 0;
    let link = if on_device { challenger.track_state() } else { None };
    let ahead = if link.is_none() && rounds > 0 && pow_bits > 0 { challenger.grind_ahead(pow_bits) } else { None };
    let linked = link.is_some() || ahead.is_some();
    sumcheck.set_grind_ahead(ahead);
    let played = play_rounds(sumcheck, data, challenger, rounds, pow_bits, link.as_ref());
    if linked {
        sumcheck.set_grind_ahead(None);
        challenger.stop_grinding_ahead();
    }
    played
}

fn play_rounds<F: ProverField, E: WhirExtension<F>, S: SumcheckState<F, E>, C: WhirChallenger<F>>(
    sumcheck: &mut S,
    data: &mut SumcheckData<F, E>,
    challenger: &mut C,
    rounds: usize,
    pow_bits: usize,
    link: Option<&Lookahead<F>>,
) -> Result<Point<E>, ProverError> {
    let mut transcript = ProverTranscript::<C, F, E>::new(challenger, SumcheckShape::new(rounds, pow_bits, Basis::Evaluation));
    let mut challenges: Vec<E> = Vec::with_capacity(rounds);
    // A challenge drawn but not yet bound by a fold.
    let mut unfolded: Option<E> = None;
    let mut step = || -> Result<(), ProverError> {
        // The transcript's state once it is seeded: where rounds on the device start.
        if let Some(state) = link.and_then(Lookahead::state) {
            if let Some(chained) = sumcheck.play_chain(rounds, &state, pow_bits, None) {
                let chained = chained?;
                if let Some(l) = link {
                    l.queue(chained.iter().filter_map(|c| c.grind.clone()));
                }
                for c in chained {
                    let r = data.observe_and_sample(&mut transcript, c.c0, c.c_inf);
                    challenges.push(r);
                    match c.r {
                        Some(gpu) if gpu == r => {}
                        Some(gpu) => {
                            return Err(ProverError::PlayedAhead(format!("the GPU drew sumcheck challenge {gpu:?} where the transcript draws {r:?}")));
                        }
                        // The chain stopped at this round's grind: on from here round by round.
                        None => unfolded = Some(r),
                    }
                }
            }
        }
        while challenges.len() < rounds {
            // Each round's fold goes with the next round's coefficients (one GPU round trip).
            let (c0, c_inf) = match unfolded.take() {
                None => sumcheck.round_coefficients()?,
                Some(r) => sumcheck.fold_then_round(r)?,
            };
            let r = data.observe_and_sample(&mut transcript, c0, c_inf);
            challenges.push(r);
            unfolded = Some(r);
        }
        if let Some(r) = unfolded {
            sumcheck.fold(r)?;
        }
        Ok(())
    };
    if let Err(e) = step() {
        // p3's transcript panics when dropped unfinished; the proof is abandoned anyway.
        std::mem::forget(transcript);
        return Err(e);
    }
    transcript.finish();
    Ok(Point::new(challenges))
}

/// What an opening starts from: the committed codeword and the stacked polynomial as the
/// sumcheck's f (w = 0), with where the tables lie in it.
pub(crate) struct Opened<'a, F: ProverField, E: WhirExtension<F>, S: Backend<F, E>> {
    pub codeword: std::sync::Arc<S::Committed>,
    pub sumcheck: S::Sumcheck,
    pub stacking: &'a Stacking,
}

/// The challenger a run plays over in place of `challenger` where `backend` offers one that
/// continues its sponge ([`WhirChallenger::sponge_words`]), with the permutation checked on a
/// random state; None to play over `challenger` itself. A permutation that is not the
/// backend's keeps the run on the host, said once in a log line.
pub(crate) fn device_transcript<F, E, S, C>(backend: &S, challenger: &C) -> Option<S::Transcript>
where
    F: ProverField,
    E: WhirExtension<F>,
    S: Backend<F, E>,
    C: WhirChallenger<F>,
{
    let words = challenger.sponge_words()?;
    let probe: [F; SPONGE_WIDTH] = std::array::from_fn(|_| F::from_u32(rand::random::<u32>()));
    let device = backend.device_transcript(words)?;
    if challenger.permute(probe) != Some(device.permute_state(probe)) {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            tracing::info!(
                "the caller's challenger permutes with other constants than the device's Poseidon2: its transcript steps and grinds stay on the host"
            )
        });
        return None;
    }
    Some(device)
}
