//! The GPU backend: `Backend` for whir-gpu's `GpuCodewords`, the message uploaded once and
//! every step where the data lies, with the round head composed on the device after a root.

use p3_commit::Mmcs;
use p3_merkle_tree::MerkleCap;
use p3_sumcheck::strategy::VariableOrder;
use whir_gpu::{
    record::MessageLayout,
    record::PendingRows,
    record::RowsSlot,
    transcript::ScriptValues,
    transcript::SpongeScript,
    transcript::{GrindAhead, GrindOffer, GrindState, InnerChallenger},
    CommittedCodeword, GpuChallenger, GpuCodewords, GpuGrinder, GpuSumcheck,
};
use whir_gpu::{CpuKeccakMmcs, KeccakDigest};
use whir_verifier::hash::{CpuMmcs, LeafSponge};

use super::{randomness_rows, Backend, Blocks, OpenedRows, PathsOf};
use crate::breakdown::{step_label, Step};
use crate::error::ProverError;
use crate::lookahead::{duplex_words, GrindClock, Lookahead, LookaheadLink, MaskedWires, PlayedRound, TranscriptState};
use crate::lookahead::{HidingRoundHead, NoTranscript, PlayedGrind, PlayedHead, RoundHead, SpongeTranscript, SpongeWords, WhirChallenger, SPONGE_WIDTH};
use crate::sumcheck::{SlotSet, SumcheckState};
use crate::{Commitment, ProverField, WhirExtension};
use p3_challenger::{CanObserve, CanSampleUniformBits, FieldChallenger, GrindingChallenger};
use p3_merkle_tree::PrunedMerklePaths;
use p3_multilinear_util::point::Point;
use p3_symmetric::Permutation;
use std::any::Any;
use std::sync::Arc;

/// The GPU backend: whir-gpu's codewords (an NTT and a Merkle tree builder on one context) with
/// the sumcheck, the round heads and the transcript played where the data lies; its trees hash
/// with Poseidon2 (digests `[F; 8]`, the default) or Keccak (`GpuBackend<F, KeccakDigest>` over a
/// `GpuMerkle::with_keccak` builder).
pub type GpuBackend<F = p3_baby_bear::BabyBear, D = [F; 8]> = GpuCodewords<F, D>;

/// A digest the GPU backend's trees give ([`whir_gpu::TreeDigest`]), with what its proofs
/// verify with: Poseidon2's `[F; 8]` (`CpuMmcs`, the transcript continued on the device) or
/// Keccak's `[u64; 4]` (`CpuKeccakMmcs`: Plonky3's Keccak configuration, whose transcript is
/// the host's Keccak challenger).
pub trait GpuDigest<F: ProverField>: whir_gpu::TreeDigest {
    /// Plonky3's MMCS over this digest.
    type Mmcs: Mmcs<F, Commitment = MerkleCap<F, Self>, MultiProof: Send + Sync> + Clone + Send + Sync;
    /// The challenger a backend of these trees continues a caller's sponge on.
    type Transcript: SpongeTranscript<F> + CanObserve<MerkleCap<F, Self>>;
    /// Whether the device plays transcript steps after a root (round heads): Poseidon2's
    /// duplex only.
    const DEVICE_SPONGE: bool;

    /// The MMCS hashing as `codewords` hash.
    fn mmcs(codewords: &GpuCodewords<F, Self>) -> Self::Mmcs;
    /// The leaf sponge, where leaves hash with Poseidon2.
    fn leaf_sponge(codewords: &GpuCodewords<F, Self>) -> Option<LeafSponge>;
    /// The pruned multi-proof of these sibling digests.
    fn paths(siblings: Vec<Self>) -> <Self::Mmcs as Mmcs<F>>::MultiProof;
    /// A challenger continuing the sponge `words` on `codewords`' device, where there is one.
    fn device_transcript(codewords: &GpuCodewords<F, Self>, words: SpongeWords<F>) -> Option<Self::Transcript>;
    /// The words a device sponge observes for `root`, where it observes them (Poseidon2's).
    fn sponge_words(root: &MerkleCap<F, Self>) -> Option<Vec<F>>;
}

/// Poseidon2 trees: the verifier's `CpuMmcs` over the constants the GPU permutations hold.
impl<F: ProverField> GpuDigest<F> for [F; 8]
where
    GpuChallenger<F>: SpongeTranscript<F> + CanObserve<MerkleCap<F, [F; 8]>>,
{
    type Mmcs = CpuMmcs<F>;
    type Transcript = GpuChallenger<F>;
    const DEVICE_SPONGE: bool = true;

    fn mmcs(codewords: &GpuCodewords<F, Self>) -> CpuMmcs<F> {
        let merkle = codewords.merkle();
        whir_verifier::hash::cpu_mmcs_over::<F>(merkle.poseidon2().constants().to_cpu(), merkle.wide_leaves().map(|w| w.constants().to_cpu()), 0)
    }
    fn leaf_sponge(codewords: &GpuCodewords<F, Self>) -> Option<LeafSponge> {
        Some(codewords.merkle().leaf_sponge())
    }
    fn paths(siblings: Vec<Self>) -> PrunedMerklePaths<F, 8> {
        PrunedMerklePaths { sibling_hashes: siblings }
    }
    /// The GPU's challenger over the width-16 permutation its trees hash with, with a grinder
    /// of its own (so runs in flight together never share one).
    fn device_transcript(codewords: &GpuCodewords<F, Self>, words: SpongeWords<F>) -> Option<GpuChallenger<F>> {
        let poseidon2 = codewords.merkle().poseidon2().clone();
        let mut inner = whir_gpu::transcript::InnerChallenger::<F>::new(poseidon2.constants().to_cpu());
        (inner.sponge_state, inner.input_buffer, inner.output_buffer) = (words.state, words.inputs, words.outputs);
        Some(GpuChallenger::continuing(inner, Some(std::sync::Arc::new(whir_gpu::GpuGrinder::new(poseidon2)))))
    }
    fn sponge_words(root: &MerkleCap<F, Self>) -> Option<Vec<F>> {
        Some(root.roots().iter().flatten().copied().collect())
    }
}

/// Keccak trees: Plonky3's Keccak MMCS; no sponge on the device.
impl<F: ProverField> GpuDigest<F> for KeccakDigest {
    type Mmcs = CpuKeccakMmcs<F>;
    type Transcript = NoTranscript<F>;
    const DEVICE_SPONGE: bool = false;

    fn mmcs(_: &GpuCodewords<F, Self>) -> CpuKeccakMmcs<F> {
        whir_verifier::hash::cpu_keccak_mmcs::<F>(0)
    }
    fn leaf_sponge(_: &GpuCodewords<F, Self>) -> Option<LeafSponge> {
        None
    }
    fn paths(siblings: Vec<Self>) -> PrunedMerklePaths<u64, 4> {
        PrunedMerklePaths { sibling_hashes: siblings }
    }
    fn device_transcript(_: &GpuCodewords<F, Self>, _: SpongeWords<F>) -> Option<NoTranscript<F>> {
        None
    }
    fn sponge_words(_: &MerkleCap<F, Self>) -> Option<Vec<F>> {
        None
    }
}

/// The GPU's codewords over the degree-4, 5 and 8 extensions (`E` decides the sumcheck's
/// tables and the width of a folded codeword's rows), their trees hashed as `D` says.
impl<F: ProverField, E: WhirExtension<F> + whir_gpu::GpuExtension<F>, D: GpuDigest<F>> Backend<F, E> for GpuCodewords<F, D> {
    type Committed = CommittedCodeword<F>;
    type Sumcheck = GpuSumcheck<F, E>;
    type Transcript = D::Transcript;
    type Mmcs = D::Mmcs;

    fn leaf_sponge(&self) -> Option<LeafSponge> {
        D::leaf_sponge(self)
    }

    fn mmcs(&self) -> D::Mmcs {
        D::mmcs(self)
    }

    fn device_transcript(&self, words: SpongeWords<F>) -> Option<D::Transcript> {
        D::device_transcript(self, words)
    }

    /// The message is uploaded once: encoded, committed, and kept as the sumcheck's f.
    fn commit_message(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(MerkleCap<F, D>, Self::Committed, Self::Sumcheck), ProverError> {
        let vars = message.len().trailing_zeros() as usize;
        let (committed, buffer) = self.commit_keep(message, width, log_inv_rate)?;
        let sumcheck = GpuSumcheck::from_base(self.ntt().clone(), buffer, vars)?;
        Ok((MerkleCap::new(vec![committed.root_digest::<D>()?]), committed, sumcheck))
    }

    /// Each block written straight into staging memory on all cores, then as `commit_message`.
    fn commit_message_blocks(
        &self,
        blocks: usize,
        block_len: usize,
        width: usize,
        log_inv_rate: usize,
        order: VariableOrder,
        block: &Blocks<'_, F>,
    ) -> Result<(MerkleCap<F, D>, Self::Committed, Self::Sumcheck), ProverError> {
        let vars = (blocks * block_len).trailing_zeros() as usize;
        let layout = match order {
            VariableOrder::Suffix => MessageLayout::Rows,
            VariableOrder::Prefix => MessageLayout::ReversedIndices { words: 1 },
        };
        let (committed, buffer) =
            self.commit_blocks_keep(blocks, block_len, width, log_inv_rate, layout, |b, write| block(b, &mut |piece| write(whir_gpu::field::as_words(piece))))?;
        let sumcheck = GpuSumcheck::from_base(self.ntt().clone(), buffer, vars)?;
        let sumcheck = if order == VariableOrder::Prefix { sumcheck.with_reversed_indices() } else { sumcheck };
        Ok((MerkleCap::new(vec![committed.root_digest::<D>()?]), committed, sumcheck))
    }

    /// Encodes f where the sumcheck left it: nothing crosses the bus but the root.
    fn commit_folded(&self, sumcheck: &mut Self::Sumcheck, fold: usize, log_inv_rate: usize) -> Result<(MerkleCap<F, D>, Self::Committed), ProverError> {
        self.commit_folded_with_head(sumcheck, fold, log_inv_rate, None).map(|(root, committed, _)| (root, committed))
    }

    /// The commit and, before its wait, the round's head played from its root (`commit_with_head`):
    /// one round trip instead of three or more.
    fn commit_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        fold: usize,
        log_inv_rate: usize,
        head: Option<&RoundHead<F>>,
    ) -> Result<(MerkleCap<F, D>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        let m = sumcheck.num_variables();
        if fold > m {
            return Err(ProverError::Input(format!("a fold of {fold} variables of a {m}-variable polynomial")));
        }
        let (rows, width) = (1 << (m - fold), E::WORDS << fold);
        // A head is a Poseidon2 duplex's: played on the device over Poseidon2 roots only.
        let head = head.filter(|_| D::DEVICE_SPONGE);
        let (committed, played) = match head.and_then(|head| sponge_script(head, Vec::new(), ScriptValues::Expansion)) {
            Some(script) => commit_with_head(self, sumcheck, rows, width, log_inv_rate, &script)?,
            None => (self.commit_buffer(sumcheck.f_buffer()?, rows, width, log_inv_rate, sumcheck.message_layout())?, None),
        };
        Ok((MerkleCap::new(vec![committed.root_digest::<D>()?]), committed, played))
    }

    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(MerkleCap<F, D>, Self::Committed), ProverError> {
        let committed = GpuCodewords::<F, D>::commit(self, message, width, log_inv_rate)?;
        Ok((MerkleCap::new(vec![committed.root_digest::<D>()?]), committed))
    }

    /// The polynomial is uploaded once: reordered, laid out with its randomness rows, encoded
    /// and committed, and kept (at bit-reversed indices) as the sumcheck's f.
    fn commit_hiding_message(
        &self,
        poly: &[F],
        randomness: &[F],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(MerkleCap<F, D>, Self::Committed, Self::Sumcheck), ProverError> {
        let vars = poly.len().trailing_zeros() as usize;
        let (committed, reversed) = self.commit_hiding_polynomial(poly, fold, &randomness_rows(randomness, 1 << fold)?, log_inv_rate)?;
        let sumcheck = GpuSumcheck::from_base(self.ntt().clone(), reversed, vars)?.with_reversed_indices();
        Ok((MerkleCap::new(vec![committed.root_digest::<D>()?]), committed, sumcheck))
    }

    /// f encoded where the sumcheck left it, its randomness rows uploaded beside it.
    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(MerkleCap<F, D>, Self::Committed), ProverError> {
        self.commit_hiding_folded_with_head(sumcheck, randomness, fold, log_inv_rate, None).map(|(root, committed, _)| (root, committed))
    }

    /// The commit and, before its wait, the hiding round's head played from its root and the
    /// switch mask's (asked for once the tree is on the GPU): one round trip for the commit,
    /// the out-of-domain answers and the query grind.
    fn commit_hiding_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
        head: Option<HidingRoundHead<'_, F, E, MerkleCap<F, D>>>,
    ) -> Result<(MerkleCap<F, D>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        let m = sumcheck.num_variables();
        if fold > m {
            return Err(ProverError::Input(format!("a fold of {fold} variables of a {m}-variable polynomial")));
        }
        let rows = randomness_rows(randomness, 1 << fold)?;
        let words = E::flatten_to_base(rows);
        let head = head.filter(|_| D::DEVICE_SPONGE);
        let ctx = self.context().clone();
        let (committed, played) = ctx.scoped("hiding codeword commit", || {
            let mut batch = ctx.batch("hiding codeword commit");
            let recorded = self.record_commit_hiding(
                &mut batch,
                sumcheck.f_buffer()?,
                1 << (m - fold),
                E::WORDS << fold,
                sumcheck.message_layout(),
                &words,
                log_inv_rate,
            )?;
            let script = match head {
                Some(head) => {
                    let root = recorded.root_buffer().clone();
                    // The tree goes to the GPU while the mask's root is awaited and the script recorded.
                    batch.submit_part()?;
                    (head.mask_root)().and_then(|mask_root| {
                        let after_root = D::sponge_words(&mask_root)?;
                        let tail = ScriptValues::PowersWithTail(E::flatten_to_base(head.mask_message.to_vec()));
                        let script = sponge_script(&head.head, after_root, tail)?;
                        sumcheck.record_sponge_script(&mut batch, &root, &script).map_err(|e| warn_once_head_left_out(&e)).ok()
                    })
                }
                None => None,
            };
            let readback = ctx.run(batch)?;
            let committed = recorded.finish(&readback)?;
            Ok((committed, script.and_then(|s| finished_script(sumcheck, s, &readback))))
        })?;
        Ok((MerkleCap::new(vec![committed.root_digest::<D>()?]), committed, played))
    }

    /// Gathered on the GPU and left there: every opening of a proof is read back in one
    /// transfer at its end, so the rounds do not wait for them.
    type Opening = PendingRows;

    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError> {
        let ctx = self.context();
        let mut batch = ctx.batch("codeword openings");
        let pending = self.record_open(&mut batch, committed, indices)?;
        ctx.send(batch)?;
        Ok(pending)
    }

    /// Tags the GPU work that follows for the context's profile (`GpuProfiler::begin`).
    fn enter_step(&self, round: usize, step: Step) {
        let ctx = self.ntt().context();
        ctx.profiler().label(&step_label(round, step));
        tracing::trace!(
            round,
            step = step.name(),
            buffer_kib = ctx.memory().buffer_bytes() >> 10,
            peak_kib = ctx.memory().peak_buffer_bytes().unwrap_or(0) >> 10,
            pooled_kib = ctx.memory().pooled_bytes() >> 10,
            "GPU memory at step"
        );
    }

    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<Vec<OpenedRows<F, PathsOf<F, D::Mmcs>>>, ProverError> {
        <Self as Backend<F, E>>::begin_reading_openings(self, openings)?()
    }

    /// One batch reads every opening; submitted here, waited for when the rows are asked for.
    fn begin_reading_openings(
        &self,
        openings: Vec<Self::Opening>,
    ) -> Result<Box<dyn FnOnce() -> Result<Vec<OpenedRows<F, PathsOf<F, D::Mmcs>>>, ProverError> + '_>, ProverError> {
        let ctx = self.context();
        let mut batch = ctx.batch("codeword openings readback");
        let slots: Vec<RowsSlot> = openings.into_iter().map(|o| o.read(&mut batch)).collect();
        let in_flight = ctx.submit_batch(batch)?;
        Ok(Box::new(move || {
            let readback = ctx.finish_batch(in_flight)?;
            slots
                .into_iter()
                .map(|slot| {
                    let o = slot.finish_digests::<F, D>(&readback)?;
                    Ok((o.rows, D::paths(o.siblings)))
                })
                .collect()
        }))
    }
}

/// The round head composed on the GPU: f committed (`GpuCodewords::record_commit`) and, in
/// the same wait, `script` played from the root the tree leaves on the device
/// (`GpuSumcheck::record_sponge_script`: the root observed, each out-of-domain point drawn and f
/// evaluated there, the query grind). The values come back with the root; None where the script
/// could not be recorded or came back malformed: the protocol then plays those steps itself.
#[allow(clippy::type_complexity)]
fn commit_with_head<F: ProverField, E: WhirExtension<F> + whir_gpu::GpuExtension<F>, D: GpuDigest<F>>(
    codewords: &GpuCodewords<F, D>,
    sumcheck: &GpuSumcheck<F, E>,
    rows: usize,
    width: usize,
    log_inv_rate: usize,
    script: &SpongeScript<F>,
) -> Result<(CommittedCodeword<F>, Option<PlayedHead<F, E>>), ProverError> {
    let ctx = codewords.ntt().context().clone();
    Ok(ctx.scoped("codeword commit", || {
        let mut batch = ctx.batch("codeword commit and round head");
        let recorded = codewords.record_commit(&mut batch, sumcheck.f_buffer()?, rows, width, log_inv_rate, sumcheck.message_layout())?;
        let root = recorded.root_buffer().clone();
        // The tree goes to the GPU while the script is recorded.
        batch.submit_part()?;
        let script = sumcheck.record_sponge_script(&mut batch, &root, script).map_err(|e| warn_once_head_left_out(&e)).ok();
        let readback = ctx.run(batch)?;
        let committed = recorded.finish(&readback)?;
        Ok((committed, script.and_then(|s| finished_script(sumcheck, s, &readback))))
    })?)
}

/// The sponge script that plays `head` on the device after its root: `after_root` observed
/// next, each point's value as `values` says; None where the head's state was published by
/// another backend's challenger (no GPU grinder to play it with).
fn sponge_script<F: ProverField>(head: &RoundHead<F>, after_root: Vec<F>, values: ScriptValues<F>) -> Option<SpongeScript<F>> {
    Some(SpongeScript {
        grinder: grinder_of(&head.state)?,
        sponge: head.state.sponge,
        pending: head.state.pending.clone(),
        samples: head.samples,
        grind_bits: head.grind_bits,
        after_root,
        values,
    })
}

/// What a round head played on the GPU found; None where it came back malformed (the commit
/// stands; the protocol plays those steps itself).
fn finished_script<F: ProverField, E: WhirExtension<F> + whir_gpu::GpuExtension<F>>(
    sumcheck: &GpuSumcheck<F, E>,
    record: whir_gpu::transcript::SpongeScriptRecord<F>,
    readback: &whir_gpu::record::Readback,
) -> Option<PlayedHead<F, E>> {
    match sumcheck.finish_sponge_script(record, readback) {
        Ok(v) => Some(PlayedHead { points: v.points, answers: v.answers, grind: v.offer.map(played) }),
        Err(e) => {
            tracing::warn!("a round head played on the GPU came back malformed ({e}); the host plays it");
            None
        }
    }
}

/// Warns once per process that a round head could not be recorded after its root (later ones at
/// debug level): the protocol plays those steps on the host.
fn warn_once_head_left_out(e: &whir_gpu::GpuError) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!("a round head after a Merkle root could not be recorded ({e}); its steps run on their own");
    } else {
        tracing::debug!("no round head after this Merkle root: {e}");
    }
}

/// The GPU's sumcheck over the degree-4, 5 and 8 extensions; the rounds' transcript is
/// played on the GPU (`play_chain`), lazy weights included.
impl<F: ProverField, E: WhirExtension<F> + whir_gpu::GpuExtension<F>> SumcheckState<F, E> for whir_gpu::GpuSumcheck<F, E> {
    fn num_variables(&self) -> usize {
        whir_gpu::GpuSumcheck::num_variables(self)
    }
    fn duplicate(&self) -> Result<Self, ProverError> {
        Ok(whir_gpu::GpuSumcheck::duplicate(self)?)
    }
    fn round_coefficients(&mut self) -> Result<(E, E), ProverError> {
        Ok(whir_gpu::GpuSumcheck::round_coefficients(self)?)
    }
    fn fold(&mut self, r: E) -> Result<(), ProverError> {
        Ok(whir_gpu::GpuSumcheck::fold(self, r)?)
    }
    fn fold_then_round(&mut self, r: E) -> Result<(E, E), ProverError> {
        Ok(whir_gpu::GpuSumcheck::fold_then_round(self, r)?)
    }
    fn add_eq_weights(&mut self, points: &[Point<E>], scales: &[E]) -> Result<(), ProverError> {
        let points: Vec<Vec<E>> = points.iter().map(|p| p.as_slice().to_vec()).collect();
        Ok(whir_gpu::GpuSumcheck::add_eq_weights(self, &points, scales)?)
    }
    fn add_select_weights(&mut self, vars: &[F], scales: &[E]) -> Result<(), ProverError> {
        Ok(whir_gpu::GpuSumcheck::add_select_weights(self, vars, scales)?)
    }
    fn set_lazy_eq_weights(&mut self, points: &[Point<E>], scales: &[E], rounds: usize) -> Result<(), ProverError> {
        let points: Vec<Vec<E>> = points.iter().map(|p| p.as_slice().to_vec()).collect();
        Ok(whir_gpu::GpuSumcheck::set_lazy_eq_weights(self, &points, scales, rounds)?)
    }
    fn eval(&mut self, point: &Point<E>) -> Result<E, ProverError> {
        Ok(whir_gpu::GpuSumcheck::eval(self, point.as_slice())?)
    }
    fn add_select_weights_at(&mut self, log_domain: usize, indices: &[usize], scales: &[E]) -> Result<(), ProverError> {
        Ok(whir_gpu::GpuSumcheck::add_select_weights_at(self, log_domain, indices, scales)?)
    }

    fn evals(&mut self) -> Result<Vec<E>, ProverError> {
        Ok(whir_gpu::GpuSumcheck::evals(self)?)
    }

    fn weights_table(&mut self) -> Result<Vec<E>, ProverError> {
        Ok(whir_gpu::GpuSumcheck::weights(self)?)
    }

    fn scale_weights(&mut self, s: E) -> Result<(), ProverError> {
        Ok(whir_gpu::GpuSumcheck::scale_weights(self, s)?)
    }

    fn add_power_weights(&mut self, vars: &[E], scales: &[E]) -> Result<(), ProverError> {
        Ok(whir_gpu::GpuSumcheck::add_power_weights(self, vars, scales)?)
    }

    fn eval_powers(&mut self, y: E) -> Result<E, ProverError> {
        Ok(whir_gpu::GpuSumcheck::eval_powers(self, y)?)
    }

    fn eval_slots(&mut self, sets: &[SlotSet<E>]) -> Result<Vec<Vec<E>>, ProverError> {
        let sets: Vec<whir_gpu::transcript::Slots<'_, E>> =
            sets.iter().map(|s| whir_gpu::transcript::Slots { point: s.point.as_slice(), offsets: &s.offsets, successor: s.successor }).collect();
        Ok(whir_gpu::GpuSumcheck::eval_slots(self, &sets)?)
    }

    fn add_slot_weights(&mut self, sets: &[(SlotSet<E>, Vec<E>)]) -> Result<(), ProverError> {
        let sets: Vec<(whir_gpu::transcript::Slots<'_, E>, &[E])> = sets
            .iter()
            .map(|(s, scales)| (whir_gpu::transcript::Slots { point: s.point.as_slice(), offsets: &s.offsets, successor: s.successor }, scales.as_slice()))
            .collect();
        Ok(whir_gpu::GpuSumcheck::add_slot_weights(self, &sets)?)
    }

    fn set_lazy_slot_weights(&mut self, sets: &[(SlotSet<E>, Vec<E>)], rounds: usize) -> Result<(), ProverError> {
        let sets: Vec<(whir_gpu::transcript::Slots<'_, E>, &[E])> = sets
            .iter()
            .map(|(s, scales)| (whir_gpu::transcript::Slots { point: s.point.as_slice(), offsets: &s.offsets, successor: s.successor }, scales.as_slice()))
            .collect();
        Ok(whir_gpu::GpuSumcheck::set_lazy_slot_weights(self, &sets, rounds)?)
    }

    fn evals_then_grind(&mut self, grind: Option<(&TranscriptState<F>, usize)>) -> Result<(Vec<E>, Option<PlayedGrind<F>>), ProverError> {
        let grinder = grind.and_then(|(state, _)| grinder_of(state));
        let grind = grind.zip(grinder.as_deref()).map(|((state, bits), grinder)| (grinder, bits, &state.sponge, state.pending.as_slice()));
        let (evals, offer) = whir_gpu::GpuSumcheck::evals_then_grind(self, grind)?;
        Ok((evals, offer.map(played)))
    }

    fn set_grind_ahead(&mut self, ahead: Option<Lookahead<F>>) {
        whir_gpu::GpuSumcheck::set_grind_ahead(self, ahead.and_then(|a| a.link().as_any().downcast_ref::<GrindAhead<F>>().cloned()))
    }

    fn play_chain(
        &mut self,
        rounds: usize,
        state: &TranscriptState<F>,
        bits: usize,
        wires: Option<&MaskedWires<E>>,
    ) -> Option<Result<Vec<PlayedRound<F, E>>, ProverError>> {
        let wire = wires.map(|w| whir_gpu::transcript::ChainWire {
            scale: w.scale,
            rounds: w
                .rounds
                .iter()
                .map(|r| whir_gpu::transcript::WireRound { at_zero: r.at_zero, at_inf: r.at_inf, share: r.share, rest: r.rest.clone(), poly: r.mask.clone() })
                .collect(),
        });
        // Wires longer than the device's chain observes play on the host.
        if wire.as_ref().is_some_and(|w| !w.fits()) {
            return None;
        }
        // A state another backend's challenger published: nothing played here.
        let grinder = grinder_of(state)?;
        let chained = whir_gpu::GpuSumcheck::play_chain(self, rounds, &state.sponge, &state.pending, bits, &grinder, wire.as_ref());
        Some(
            chained
                .map_err(ProverError::from)
                .map(|rounds| rounds.into_iter().map(|c| PlayedRound { c0: c.c0, c_inf: c.c_inf, r: c.r, grind: c.offer.map(played) }).collect()),
        )
    }
}

/// The GPU's challenger hands its sponge back to a caller's challenger as Plonky3's duplex
/// would hold it.
impl<F: ProverField> SpongeTranscript<F> for GpuChallenger<F>
where
    GpuChallenger<F>: WhirChallenger<F>,
{
    fn words(&self) -> SpongeWords<F> {
        duplex_words(self.inner())
    }
    fn permute_state(&self, state: [F; SPONGE_WIDTH]) -> [F; SPONGE_WIDTH] {
        self.inner().permutation.permute(state)
    }
}

/// The fast transcript: grinds on the GPU, and offers every kind of speculation.
impl<F: ProverField> WhirChallenger<F> for GpuChallenger<F>
where
    GpuChallenger<F>: FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F> + CanObserve<Commitment<F>>,
    InnerChallenger<F>: FieldChallenger<F> + GrindingChallenger<Witness = F>,
{
    /// Plonky3's challenger inside (the GPU one's clones share its speculation).
    type Trial = InnerChallenger<F>;

    fn trial(&self) -> InnerChallenger<F> {
        self.inner().clone()
    }
    fn track_state(&mut self) -> Option<Lookahead<F>> {
        GpuChallenger::track_state(self).map(Lookahead::new)
    }
    fn track_state_throughout(&mut self) -> Option<Lookahead<F>> {
        GpuChallenger::track_state_throughout(self).map(Lookahead::new)
    }
    fn grind_ahead(&mut self, bits: usize) -> Option<Lookahead<F>> {
        GpuChallenger::grind_ahead(self, bits).map(Lookahead::new)
    }
    fn stop_grinding_ahead(&mut self) {
        GpuChallenger::stop_grinding_ahead(self)
    }
    fn stop_tracking(&mut self) {
        GpuChallenger::stop_tracking(self)
    }
    fn device_min_bits(&self) -> usize {
        GpuChallenger::gpu_min_bits(self)
    }
    fn pow_clock(&self) -> Option<GrindClock> {
        let clock = GpuChallenger::pow_clock(self);
        Some(GrindClock::new(move || clock.elapsed()))
    }
}

/// The GPU challenger's link to the backend that plays with it.
impl<F: ProverField> LookaheadLink<F> for GrindAhead<F> {
    fn state(&self) -> Option<TranscriptState<F>> {
        self.transcript_state().map(|(grinder, sponge, pending)| TranscriptState::new(grinder, sponge, pending))
    }
    fn queue(&self, grinds: Vec<PlayedGrind<F>>) {
        GrindAhead::queue(self, grinds.into_iter().map(offer_of))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A grind the GPU played, as the protocol passes it on.
fn played<F: ProverField>(offer: GrindOffer<F>) -> PlayedGrind<F> {
    PlayedGrind { base: offer.state.base, witness_slot: offer.state.witness_slot, bits: offer.bits, witness: offer.witness, searched_end: offer.searched_end }
}

/// A grind played ahead, as the GPU challenger takes it.
fn offer_of<F: ProverField>(grind: PlayedGrind<F>) -> GrindOffer<F> {
    GrindOffer {
        state: GrindState { base: grind.base, witness_slot: grind.witness_slot },
        bits: grind.bits,
        witness: grind.witness,
        searched_end: grind.searched_end,
    }
}

/// The GPU grinder a transcript state was published with; None where another backend's
/// challenger published it (the backend then plays nothing ahead from it).
fn grinder_of<F: ProverField>(state: &TranscriptState<F>) -> Option<Arc<GpuGrinder<F>>> {
    let grinder = state.device().clone().downcast::<GpuGrinder<F>>().ok();
    if grinder.is_none() {
        tracing::debug!("a transcript state whose device is not this field's GPU grinder (an `Arc<GpuGrinder<F>>`): its steps play on the host");
    }
    grinder
}
