//! The masked base case that closes a hiding run (p3-whir's `BaseCaseZkProver`): a fresh
//! codeword and fresh mask blinds are committed, the masked claim bound, and the hidden
//! message, randomness and masks revealed one-time padded by them; spot checks open the last
//! oracle (folded where the data lies), the fresh codeword and each mask group with its blind.
//! Everything here is the size of the last fold and the masks.

use p3_field::{dot_product, TwoAdicField};
use p3_whir::transcript::zk::{ZkBaseCaseProverTranscript, ZkBaseCaseShape};
use p3_whir::{BaseCaseZkConfig, BaseCaseZkProof, BlindedMask, MaskOpeningPair, QueryOpenings, SharedProofOpening, ZkWhirConfig};
use p3_zk_codes::{ZkEncoding, ZkEncodingWithRandomness};
use rand::distr::{Distribution, StandardUniform};
use rand::{CryptoRng, RngExt};

use super::batch::Masks;
use super::{beside_host_work, closed, ExtMmcs, HidingChallenger, MaskData};
use crate::backend::{Backend, PathsOf, RootOf};
use crate::error::ProverError;
use crate::rounds::query_openings;
use crate::{ProverField, WhirExtension};
use p3_commit::Mmcs;

/// Rows of a one-matrix extension-field commitment at `indices`, with their multi-proof.
fn open_mask<F: ProverField, E: WhirExtension<F>, M: Mmcs<F>>(
    mmcs: &ExtMmcs<F, E, M>,
    indices: &[usize],
    data: &MaskData<F, E, M>,
) -> SharedProofOpening<E, PathsOf<F, M>> {
    let (values, proof) = mmcs.open_multi_batch(indices, data);
    SharedProofOpening { rows: values.into_iter().map(|mut per_matrix| per_matrix.swap_remove(0)).collect(), proof }
}

/// `work` on each mask group, each on a thread of its own (a group alone is too small to fill
/// the host's cores); `what` names the work if a thread panics.
fn side_by_side<T: Send, R: Send>(groups: impl Iterator<Item = T>, what: &str, work: impl Fn(T) -> R + Sync) -> Result<Vec<R>, ProverError> {
    let work = &work;
    let done = std::thread::scope(|scope| {
        let handles: Vec<_> = groups.map(|group| scope.spawn(move || work(group))).collect();
        handles.into_iter().map(|h| h.join()).collect::<Result<Vec<_>, _>>()
    });
    done.map_err(|_| ProverError::Input(format!("{what} panicked")))
}

/// A mask group's oracle: its root and what opens it.
type MaskOracle<F, E, M> = (RootOf<F, M>, MaskData<F, E, M>);

/// A mask group's members' fresh messages and randomness.
type MemberBlinds<E> = (Vec<Vec<E>>, Vec<Vec<E>>);

/// The base case's proof over the MMCS `M`'s types.
pub(super) type BaseCaseProof<F, E, M> = BaseCaseZkProof<F, E, M>;

/// The base case's fresh values: its fresh message and randomness, and per mask group a blind
/// per member. They come from the generator alone, right after the last batch's masks, so a
/// run may draw them ahead and commit the blinds beside the device's last round.
pub(super) struct FreshValues<F: ProverField, E: WhirExtension<F>, M: Mmcs<F>> {
    message: Vec<E>,
    randomness: Vec<E>,
    blinds: Vec<MemberBlinds<E>>,
    /// Each group's blinds committed, where that was done ahead.
    blind_oracles: Option<Vec<MaskOracle<F, E, M>>>,
}

/// Draws the fresh message and randomness, then per group a blind per member (message then
/// randomness, interleaved), in p3-whir's order.
pub(super) fn draw_fresh<F, E, M, R>(base: &BaseCaseZkConfig<F>, rng: &mut R) -> FreshValues<F, E, M>
where
    F: ProverField,
    M: Mmcs<F>,
    E: WhirExtension<F> + TwoAdicField,
    R: CryptoRng,
    StandardUniform: Distribution<E>,
{
    let code = &base.code;
    let message: Vec<E> = (0..code.message_len).map(|_| rng.random()).collect();
    let randomness: Vec<E> = (0..code.randomness_len).map(|_| rng.random()).collect();
    let blinds: Vec<MemberBlinds<E>> = base
        .mask_groups
        .iter()
        .map(|group| {
            let encoding = group.shape.encoding::<E>();
            (0..group.width).map(|_| (encoding.sample_message(rng), encoding.sample_randomness(rng))).unzip()
        })
        .collect();
    FreshValues { message, randomness, blinds, blind_oracles: None }
}

impl<F: ProverField, E: WhirExtension<F> + TwoAdicField, M: Mmcs<F>> FreshValues<F, E, M> {
    /// Commits each group's blinds (the groups side by side on the host), where not done yet.
    pub(super) fn commit_blinds(&mut self, base: &BaseCaseZkConfig<F>, mmcs: &ExtMmcs<F, E, M>) -> Result<(), ProverError>
    where
        StandardUniform: Distribution<E>,
        M: Mmcs<F, Commitment: Send> + Sync,
        MaskData<F, E, M>: Send,
    {
        if self.blind_oracles.is_some() {
            return Ok(());
        }
        let committed = side_by_side(base.mask_groups.iter().zip(&self.blinds), "committing a mask group's blinds", |(group, (messages, randomness))| {
            mmcs.commit_matrix(group.shape.encoding::<E>().encode_batch_with_randomness(messages, randomness))
        })?;
        self.blind_oracles = Some(committed);
        Ok(())
    }
}

/// Proves the base case with its own transcript driver on `challenger`: `source_*` are the last
/// fold's message, its folded randomness and its weights; `source` is the last oracle (and
/// whether its rows are base-field), opened at the spot-check positions; `fresh` its fresh
/// values ([`draw_fresh`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn prove_base_case<F, E, S, K, C>(
    config: &ZkWhirConfig<E, F, K>,
    backend: &S,
    mmcs: &ExtMmcs<F, E, S::Mmcs>,
    source_message: &[E],
    source_randomness: &[E],
    source_covector: &[E],
    masks: &Masks<F, E, S::Mmcs>,
    source: (&S::Committed, bool),
    challenger: &mut C,
    fresh: FreshValues<F, E, S::Mmcs>,
) -> Result<BaseCaseProof<F, E, S::Mmcs>, ProverError>
where
    F: ProverField,
    E: WhirExtension<F> + TwoAdicField,
    S: Backend<F, E>,
    K: HidingChallenger<F, S::Mmcs>,
    C: HidingChallenger<F, S::Mmcs>,
    StandardUniform: Distribution<E>,
    MaskData<F, E, S::Mmcs>: Send + Sync,
{
    let base = config.base_case_config();
    check_inputs(&base, source_message.len(), source_randomness.len(), source_covector.len(), masks)?;
    let mut transcript = ZkBaseCaseProverTranscript::<C, F, E>::new(challenger, ZkBaseCaseShape::new(&base));
    let played = (|| {
        let started = std::time::Instant::now();
        let fresh = commit_fresh(&base, backend, mmcs, fresh)?;
        transcript.fresh_commitment(fresh.main.0.clone());
        for (commitment, _) in &fresh.blind_oracles {
            transcript.blind_commitment(commitment.clone());
        }
        let fresh_at = started.elapsed();

        // μ_g = ⟨g̃, W⟩ + Σ ⟨s̃'_i, u_i⟩, the blinds in the masks' order.
        let mut masked_claim = dot_product::<E, _, _>(fresh.message.iter().copied(), source_covector.iter().copied());
        for (message, covector) in fresh.blinds.iter().flat_map(|(messages, _)| messages).zip(&masks.covectors) {
            masked_claim += dot_product::<E, _, _>(message.iter().copied(), covector.iter().copied());
        }
        transcript.claim(masked_claim);
        let gamma: E = transcript.gamma();
        let blind = |fresh: &[E], hidden: &[E]| -> Vec<E> { fresh.iter().zip(hidden).map(|(&f, &h)| f + gamma * h).collect() };
        let blinded_message = blind(&fresh.message, source_message);
        let blinded_randomness = blind(&fresh.randomness, source_randomness);
        transcript.reveal(&blinded_message, &blinded_randomness);
        let mut blinded_masks = Vec::with_capacity(masks.messages.len());
        let members = fresh.blinds.iter().flat_map(|(messages, randomness)| messages.iter().zip(randomness));
        for ((message, randomness), (hidden_message, hidden_randomness)) in members.zip(masks.messages.iter().zip(&masks.randomness)) {
            let blinded = BlindedMask { message: blind(message, hidden_message), randomness: blind(randomness, hidden_randomness) };
            transcript.reveal(&blinded.message, &blinded.randomness);
            blinded_masks.push(blinded);
        }
        let revealed_at = started.elapsed();

        let pow_witness = transcript.spot_check_pow();
        let ground_at = started.elapsed();
        let (source_openings, fresh_main_openings, mask_openings) = open_spot_checks(&mut transcript, backend, mmcs, &fresh, masks, source)?;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        tracing::debug!(
            fresh_and_blinds_ms = ms(fresh_at),
            blinds_past_fresh_ms = ms(fresh.blinds_wait),
            claim_and_reveals_ms = ms(revealed_at - fresh_at),
            grind_ms = ms(ground_at - revealed_at),
            openings_ms = ms(started.elapsed() - ground_at),
            "hiding base case"
        );
        Ok(BaseCaseZkProof {
            fresh_main_commitment: fresh.main.0.clone(),
            fresh_mask_commitments: fresh.blind_oracles.iter().map(|(c, _)| c.clone()).collect(),
            masked_claim,
            blinded_message,
            blinded_randomness,
            blinded_masks,
            pow_witness,
            source_openings,
            fresh_main_openings,
            mask_openings,
        })
    })();
    closed(transcript, played, |t| t.finish())
}

/// The base case's fresh values, committed: the fresh message and randomness with their
/// codeword, and per mask group a blind per member with the group's oracle.
struct Fresh<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>> {
    message: Vec<E>,
    randomness: Vec<E>,
    main: (RootOf<F, S::Mmcs>, S::Committed),
    blinds: Vec<MemberBlinds<E>>,
    blind_oracles: Vec<MaskOracle<F, E, S::Mmcs>>,
    /// How long the blinds' commits went on past the fresh codeword's.
    blinds_wait: std::time::Duration,
}

/// Commits the fresh values: the folded code's encoding of [message | randomness | 0] where
/// the backend commits, while the groups' blinds are committed on the host (unless they were
/// ahead).
fn commit_fresh<F, E, S>(
    base: &BaseCaseZkConfig<F>,
    backend: &S,
    mmcs: &ExtMmcs<F, E, S::Mmcs>,
    mut values: FreshValues<F, E, S::Mmcs>,
) -> Result<Fresh<F, E, S>, ProverError>
where
    F: ProverField,
    E: WhirExtension<F> + TwoAdicField,
    S: Backend<F, E>,
    StandardUniform: Distribution<E>,
    MaskData<F, E, S::Mmcs>: Send + Sync,
{
    let code = &base.code;
    // `FoldedRsCode::encode_column` transforms [message | randomness | 0] over its domain and
    // commits a row an element. Its coefficients past the next power of two of the message and
    // randomness are zero, so it is that message's codeword at the rate that fills the domain
    // (each element a row of its D base coefficients, as `ExtensionMmcs` hashes it).
    let filled = (code.message_len + code.randomness_len).next_power_of_two();
    let mut coeffs = Vec::with_capacity(filled);
    coeffs.extend_from_slice(&values.message);
    coeffs.extend_from_slice(&values.randomness);
    coeffs.resize(filled, E::ZERO);
    let log_inv_rate = (code.domain_size / filled).ilog2() as usize;
    let (main, blinds, blinds_wait) = beside_host_work(
        || backend.commit(&E::flatten_to_base(coeffs), E::DIMENSION, log_inv_rate),
        move || values.commit_blinds(base, mmcs).map(|()| values),
    )?;
    let FreshValues { message, randomness, blinds, blind_oracles } = blinds?;
    let blind_oracles = blind_oracles.ok_or_else(|| ProverError::Input("the base case's blinds were not committed".into()))?;
    Ok(Fresh { message, randomness, main: main?, blinds, blind_oracles, blinds_wait })
}

/// The spot checks after the grind: the source positions and every group's drawn, then the
/// masks opened on the host (each group's carried oracle and fresh blinds, the groups side by
/// side) while the fresh codeword and the last oracle (`source`, with whether its rows are
/// base-field) open where the backend keeps them, read back in one wait.
#[allow(clippy::type_complexity)]
fn open_spot_checks<F, E, S, C>(
    transcript: &mut ZkBaseCaseProverTranscript<'_, C, F, E>,
    backend: &S,
    mmcs: &ExtMmcs<F, E, S::Mmcs>,
    fresh: &Fresh<F, E, S>,
    masks: &Masks<F, E, S::Mmcs>,
    (source, source_base): (&S::Committed, bool),
) -> Result<(QueryOpenings<F, E, PathsOf<F, S::Mmcs>>, SharedProofOpening<E, PathsOf<F, S::Mmcs>>, Vec<MaskOpeningPair<E, PathsOf<F, S::Mmcs>>>), ProverError>
where
    F: ProverField,
    E: WhirExtension<F> + TwoAdicField,
    S: Backend<F, E>,
    C: HidingChallenger<F, S::Mmcs>,
    MaskData<F, E, S::Mmcs>: Send + Sync,
{
    let positions = transcript.source_queries();
    let mask_positions: Vec<Vec<usize>> = (0..fresh.blind_oracles.len()).map(|group| transcript.mask_queries(group)).collect();
    let blind_oracles = &fresh.blind_oracles;
    let open_masks = || -> Result<(Vec<MaskOpeningPair<E, PathsOf<F, S::Mmcs>>>, std::time::Duration), ProverError> {
        let started = std::time::Instant::now();
        let groups = blind_oracles.iter().zip(&masks.groups).zip(&mask_positions);
        let opened = side_by_side(groups, "opening a mask group", |(((_, blinds), (_, carried)), positions)| MaskOpeningPair {
            carried: open_mask(mmcs, positions, carried),
            fresh: open_mask(mmcs, positions, blinds),
        })?;
        Ok((opened, started.elapsed()))
    };
    let open_device = || -> Result<_, ProverError> {
        let source = backend.open(source, &positions)?;
        let fresh_main = backend.open(&fresh.main.1, &positions)?;
        let mut read = backend.read_openings(vec![source, fresh_main])?.into_iter();
        let (Some((source_rows, source_proof)), Some((rows, proof))) = (read.next(), read.next()) else {
            return Err(ProverError::Input("the base case's two openings were not both read back".into()));
        };
        let source_openings = query_openings::<F, E, _>(source_rows, source_proof, source_base);
        Ok((source_openings, SharedProofOpening { rows: rows.into_iter().map(E::reconstitute_from_base).collect(), proof }))
    };
    let started = std::time::Instant::now();
    let (opened, masks_opened, masks_past) = beside_host_work(open_device, open_masks)?;
    let (mask_openings, masks_took) = masks_opened?;
    tracing::debug!(
        device_ms = (started.elapsed() - masks_past).as_secs_f64() * 1e3,
        masks_ms = masks_took.as_secs_f64() * 1e3,
        masks_past_device_ms = masks_past.as_secs_f64() * 1e3,
        "hiding base case openings"
    );
    let (source_openings, fresh_main_openings) = opened?;
    Ok((source_openings, fresh_main_openings, mask_openings))
}

/// The last fold's message, randomness and weights, and the mask groups, against the base
/// case's configuration.
fn check_inputs<F: ProverField, E: WhirExtension<F>, M: Mmcs<F>>(
    base: &BaseCaseZkConfig<F>,
    message: usize,
    randomness: usize,
    weights: usize,
    masks: &Masks<F, E, M>,
) -> Result<(), ProverError> {
    let code = &base.code;
    if message != code.message_len || randomness != code.randomness_len || weights != code.message_len {
        return Err(ProverError::Input(format!(
            "a base case of {message} message values, {randomness} randomness values and {weights} weights, for a code of {} and {}",
            code.message_len, code.randomness_len
        )));
    }
    let widths: Vec<usize> = masks.groups.iter().map(|(w, _)| *w).collect();
    let expected: Vec<usize> = base.mask_groups.iter().map(|g| g.width).collect();
    if widths != expected {
        return Err(ProverError::Input(format!("mask groups of widths {widths:?}, the configuration's {expected:?}")));
    }
    let filled = (code.message_len + code.randomness_len).next_power_of_two();
    if !code.domain_size.is_power_of_two() || code.domain_size < filled {
        return Err(ProverError::Params(format!("a base-case code of {filled} message and randomness values over a domain of {}", code.domain_size)));
    }
    Ok(())
}
