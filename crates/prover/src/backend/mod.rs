//! Our own WHIR driver: p3-whir 0.8's protocol, step by step as its PCS adapter (`commit`, the
//! claim phase of `open`) and `WhirProver::{prove, round, final_round}` play it, with every step
//! that touches a codeword behind [`WhirBackend`] and every sumcheck step behind
//! [`SumcheckState`]. On the GPU the input is uploaded once: it is encoded and committed, then
//! stays as the sumcheck's f; the claim phase evaluates it there, the initial fold folds it there,
//! each folded f is encoded where it lies, and only roots, round coefficients, claim and OOD
//! answers, opened rows with sibling digests, PoW witnesses and the final polynomial come back.
//! [`CpuCodewords`] with [`CpuSumcheck`] is the plain-Rust twin and the reference the tests
//! compare with. The transcript and the proof are the upstream prover's, byte for byte
//! (smallest-witness grinding on both sides), built from public pieces: `WhirProverTranscript` /
//! `WhirShape` for the rounds, p3-sumcheck's sumcheck transcript for each batch, and — because
//! the layout's prover-side claim transcripts are crate-private — its verifier-side claim
//! registry, which plays the same transcript once it is given the values.

use crate::breakdown::{step_label, Step};
use crate::lookahead::{HidingRoundHead, Lookahead, PlayedGrind, PlayedHead, RoundHead, SpongeWords, WhirChallenger, SPONGE_WIDTH};
use p3_commit::Mmcs;
use p3_dft::{Radix2DFTSmallBatch, TwoAdicSubgroupDft};
use p3_matrix::dense::RowMajorMatrix;
use p3_merkle_tree::PrunedMerklePaths;
use p3_multilinear_util::point::Point;
use p3_sumcheck::strategy::{Basis, VariableOrder};
use p3_sumcheck::transcript::{ProverTranscript, SumcheckShape};
use p3_sumcheck::SumcheckData;
use p3_symmetric::Permutation;
use p3_whir::{PcsProof, QueryOpenings, SharedProofOpening, WhirDomain, WhirQueryPoint};
use whir_gpu::GpuChallenger;
use whir_gpu::{
    record::MessageLayout, record::PendingRows, record::RowsSlot, transcript::ScriptValues, transcript::SpongeScript, CommittedCodeword, GpuCodewords,
    GpuSumcheck,
};
use whir_verifier::hash::{CpuMmcs, LeafSponge};

use crate::claims::Stacking;

use crate::error::ProverError;
use crate::sumcheck::{reverse_rows_and_columns, CpuSumcheck, SumcheckState};
use crate::{Commitment, ProverField, WhirExtension, EF};
use p3_baby_bear::BabyBear;

mod gpu;

pub(crate) type Proof<F, E> = PcsProof<F, E, CpuMmcs<F>>;
/// A message given block by block: `blocks(b, write)` hands block b to `write` in one or more
/// pieces ([`WhirBackend::commit_message_blocks`]).
pub type Blocks<'a, F = BabyBear> = dyn Fn(usize, &mut dyn FnMut(&[F])) + Sync + 'a;
pub(crate) type Paths<F> = PrunedMerklePaths<F, 8>;
/// Opened rows (base-field words) with their pruned multi-proof.
pub type OpenedRows<F = BabyBear> = (Vec<Vec<F>>, Paths<F>);

/// The one backend trait of the WHIR protocol: its coarse steps, with what a backend keeps as
/// associated types — a committed codeword ([`Committed`](Self::Committed)), an opening not yet
/// read ([`Opening`](Self::Opening)), the sumcheck's tables ([`Sumcheck`](Self::Sumcheck), whose
/// steps are [`SumcheckState`]'s). The CPU twin ([`CpuCodewords`]), the GPU
/// (`whir_gpu::GpuCodewords`) and the comparing backend ([`ComparingBackend`](crate::steps::ComparingBackend))
/// implement it; the protocol ([`prove_with_steps`](crate::steps::prove_with_steps), the PCS) runs over it.
///
/// Codeword steps encode a message and commit to the codeword's rows, and open rows with
/// Plonky3's pruned multi-proof. Messages are row-major base-field words; an extension-field
/// message is given as its base coefficients (D words per element), which is how
/// `ExtensionMmcs` hashes its rows and how a base-field DFT encodes it. Steps that play the
/// transcript ahead where the data lies do so through the [`lookahead`](crate::steps::Lookahead) types,
/// offered by the challenger; by default a backend plays nothing ahead.
pub trait WhirBackend<F: ProverField = BabyBear, E: WhirExtension<F> = EF<F>> {
    /// A committed codeword and whatever its openings need.
    type Committed;

    /// How the commitments hash Merkle leaves (a proof's `Params::leaf` must be the same).
    fn leaf_sponge(&self) -> LeafSponge;

    /// Plonky3's MMCS hashing as these steps hash (their Poseidon2 constants, their leaf
    /// sponge): what their proofs verify with.
    fn mmcs(&self) -> CpuMmcs<F>;

    /// Encodes `message` (rows of `width` words, a power-of-two number of them) at rate
    /// 2^-log_inv_rate and commits to the codeword's rows.
    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError>;

    /// An opening made by [`open`](Self::open), read by [`read_openings`](Self::read_openings).
    type Opening;

    /// Opens the codeword rows at `indices` (in order, repeats included) with their pruned
    /// multi-proof. The values may stay where they are until `read_openings`: no transcript step
    /// depends on them (the rows' folded values only update the claimed sum).
    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError>;

    /// The rows and pruned multi-proofs of `openings`, in order.
    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<Vec<OpenedRows<F>>, ProverError>;

    /// [`read_openings`](Self::read_openings) in two halves: what is returned gives the rows
    /// when called, and where the steps can, their readback is already under way (the GPU's:
    /// submitted, waited for only then), so other work waited for in between covers it.
    #[allow(clippy::type_complexity)]
    fn begin_reading_openings(&self, openings: Vec<Self::Opening>) -> Result<Box<dyn FnOnce() -> Result<Vec<OpenedRows<F>>, ProverError> + '_>, ProverError> {
        let rows = self.read_openings(openings)?;
        Ok(Box::new(move || Ok(rows)))
    }

    /// The sumcheck state: f, then its folds, and the weights w.
    type Sumcheck: SumcheckState<F, E>;

    /// [`commit`](Self::commit) of the first message, which then becomes the sumcheck's f
    /// (with w = 0): the claim phase evaluates it and the initial fold folds it in place.
    #[allow(clippy::type_complexity)]
    fn commit_message(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError>;

    /// [`commit_message`](Self::commit_message) of a table of `blocks` blocks of `block_len`
    /// values, given block by block (`block(b, write)` hands block b to `write` in pieces), e.g.
    /// the columns of a stacked witness where they lie. `order` is the variable order the
    /// rounds will bind: `Suffix`, the table is the message and f; `Prefix`, the table is the
    /// polynomial at bit-reversed indices, kept so as f (its rounds then bind the polynomial's
    /// first variable: `with_reversed_indices`), and the message is the polynomial with its
    /// 2^fold blocks transposed (p3-sumcheck's `write_stacked_message` in prefix order, i.e.
    /// `reverse_rows_and_columns` of the table). By default (suffix order only) gathered
    /// into one message; the GPU's are written straight into staging memory.
    #[allow(clippy::type_complexity)]
    fn commit_message_blocks(
        &self,
        blocks: usize,
        block_len: usize,
        width: usize,
        log_inv_rate: usize,
        order: VariableOrder,
        block: &Blocks<'_, F>,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        if order != VariableOrder::Suffix {
            return Err(ProverError::Input("these codeword steps commit suffix-order messages only".into()));
        }
        let message = gather_blocks(blocks, block_len, block)?;
        self.commit_message(&message, width, log_inv_rate)
    }

    /// Encodes the sumcheck's current f (rows of 2^fold extension elements) at rate
    /// 2^-log_inv_rate and commits to it, as `commit` does its message.
    fn commit_folded(&self, sumcheck: &mut Self::Sumcheck, fold: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError>;

    /// [`commit_folded`](Self::commit_folded), and the transcript steps after the commitment
    /// that `head` describes played where f lies: the values they found, or None where these
    /// steps do not play them (the default; the caller plays them itself).
    #[allow(clippy::type_complexity)]
    fn commit_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        fold: usize,
        log_inv_rate: usize,
        head: Option<&RoundHead<F>>,
    ) -> Result<(Commitment<F>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        let _ = head;
        let (root, committed) = self.commit_folded(sumcheck, fold, log_inv_rate)?;
        Ok((root, committed, None))
    }

    /// The driver enters `step` of round `round` (for profiles; nothing by default).
    fn enter_step(&self, _round: usize, _step: Step) {}

    /// A challenger of these steps that continues a duplex sponge from `words`, grinding and
    /// playing ahead where the data lies (the protocol hands it a caller's challenger's
    /// transcript: [`WhirChallenger::sponge_words`]), or None where these steps play nothing
    /// ahead (the default: the protocol runs over the caller's challenger itself).
    fn device_transcript(&self, words: SpongeWords<F>) -> Option<whir_gpu::GpuChallenger<F>> {
        let _ = words;
        None
    }

    /// Commits the first oracle of a hiding proof: `poly` (2^n values in their natural
    /// order) folded `fold` variables at a time in prefix order, with `randomness` (Plonky3's
    /// limb-major order: t values per column b at `randomness[b·t..]`) as t rows after the
    /// message, at rate 2^-log_inv_rate of the message's rows (p3-whir's `zk_padded_matrix`
    /// and `dft_batch`). The sumcheck's f is then `poly` held at bit-reversed indices, w = 0.
    #[allow(clippy::type_complexity)]
    fn commit_hiding_message(
        &self,
        poly: &[F],
        randomness: &[F],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError>;

    /// Commits the sumcheck's current f as a hiding round's oracle: rows of 2^fold extension
    /// elements in prefix order, `randomness` (limb-major, extension elements) as rows after
    /// them, at rate 2^-log_inv_rate of the message's rows (`dft_algebra_batch`).
    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed), ProverError>;

    /// [`commit_hiding_folded`](Self::commit_hiding_folded), and the transcript steps after the
    /// commitment that `head` describes played where f lies: the values they found, or None
    /// where these steps do not play them (the default; the caller plays them itself).
    #[allow(clippy::type_complexity)]
    fn commit_hiding_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
        head: Option<HidingRoundHead<'_, F, E>>,
    ) -> Result<(Commitment<F>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        let _ = head;
        let (root, committed) = self.commit_hiding_folded(sumcheck, randomness, fold, log_inv_rate)?;
        Ok((root, committed, None))
    }
}

/// Plonky3's limb-major randomness (t values per column, column b's at `randomness[b·t..]`)
/// as t rows of `width` columns.
pub(crate) fn randomness_rows<T: Copy>(randomness: &[T], width: usize) -> Result<Vec<T>, ProverError> {
    if width == 0 || !randomness.len().is_multiple_of(width) {
        return Err(ProverError::Input(format!("{} randomness values over {width} columns", randomness.len())));
    }
    let t = randomness.len() / width;
    Ok((0..t).flat_map(|j| (0..width).map(move |b| randomness[b * t + j])).collect())
}

/// A hiding codeword's message padded to `height` rows: `message` (row-major, `width` a row),
/// then the randomness rows, then zeros.
fn hiding_padded<T: Copy + Default>(message: &[T], randomness_rows: &[T], width: usize, height: usize) -> Result<Vec<T>, ProverError> {
    let total = message.len() + randomness_rows.len();
    if width == 0 || height.checked_mul(width).is_none_or(|cells| cells < total) {
        return Err(ProverError::Input(format!("{total} message and randomness values do not fit {height} rows of {width}")));
    }
    let mut padded = vec![T::default(); height * width];
    padded[..message.len()].copy_from_slice(message);
    padded[message.len()..total].copy_from_slice(randomness_rows);
    Ok(padded)
}

/// The table of `blocks` blocks of `block_len` values that `block` hands out, in one vector.
fn gather_blocks<F: ProverField>(blocks: usize, block_len: usize, block: &Blocks<'_, F>) -> Result<Vec<F>, ProverError> {
    let mut table = Vec::with_capacity(blocks * block_len);
    for b in 0..blocks {
        block(b, &mut |piece| table.extend_from_slice(piece));
    }
    if table.len() != blocks * block_len {
        return Err(ProverError::Input(format!("blocks of {} values in all, not {blocks} x {block_len}", table.len())));
    }
    Ok(table)
}

/// An error unless steps hashing leaves with `steps` make the proofs of parameters asking for
/// `params`.
pub(crate) fn check_leaf_sponge(steps: LeafSponge, params: LeafSponge) -> Result<(), ProverError> {
    if steps != params {
        return Err(ProverError::Input(format!(
            "the parameters ask for Merkle leaves hashed with Poseidon2 of width {}, but these steps hash them with width {} \
             (build the steps with that leaf sponge: `CpuCodewords::hashing_leaves`, `GpuMerkle::with_wide_leaves`)",
            params.width(),
            steps.width()
        )));
    }
    Ok(())
}

/// Steps by reference (a comparing backend over steps a test keeps).
impl<F: ProverField, E: WhirExtension<F>, S: WhirBackend<F, E>> WhirBackend<F, E> for &S {
    type Committed = S::Committed;
    type Opening = S::Opening;
    type Sumcheck = S::Sumcheck;

    fn leaf_sponge(&self) -> LeafSponge {
        (**self).leaf_sponge()
    }
    fn mmcs(&self) -> CpuMmcs<F> {
        (**self).mmcs()
    }

    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        (**self).commit(message, width, log_inv_rate)
    }
    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError> {
        (**self).open(committed, indices)
    }
    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<Vec<OpenedRows<F>>, ProverError> {
        (**self).read_openings(openings)
    }
    #[allow(clippy::type_complexity)]
    fn begin_reading_openings(&self, openings: Vec<Self::Opening>) -> Result<Box<dyn FnOnce() -> Result<Vec<OpenedRows<F>>, ProverError> + '_>, ProverError> {
        (**self).begin_reading_openings(openings)
    }
    fn commit_message(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        (**self).commit_message(message, width, log_inv_rate)
    }
    fn commit_message_blocks(
        &self,
        blocks: usize,
        block_len: usize,
        width: usize,
        log_inv_rate: usize,
        order: VariableOrder,
        block: &Blocks<'_, F>,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        (**self).commit_message_blocks(blocks, block_len, width, log_inv_rate, order, block)
    }
    fn commit_folded(&self, sumcheck: &mut Self::Sumcheck, fold: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        (**self).commit_folded(sumcheck, fold, log_inv_rate)
    }
    fn commit_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        fold: usize,
        log_inv_rate: usize,
        head: Option<&RoundHead<F>>,
    ) -> Result<(Commitment<F>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        (**self).commit_folded_with_head(sumcheck, fold, log_inv_rate, head)
    }
    fn enter_step(&self, round: usize, step: Step) {
        (**self).enter_step(round, step)
    }
    fn device_transcript(&self, words: SpongeWords<F>) -> Option<whir_gpu::GpuChallenger<F>> {
        (**self).device_transcript(words)
    }
    fn commit_hiding_message(
        &self,
        poly: &[F],
        randomness: &[F],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        (**self).commit_hiding_message(poly, randomness, fold, log_inv_rate)
    }
    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        (**self).commit_hiding_folded(sumcheck, randomness, fold, log_inv_rate)
    }
    fn commit_hiding_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
        head: Option<HidingRoundHead<'_, F, E>>,
    ) -> Result<(Commitment<F>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        (**self).commit_hiding_folded_with_head(sumcheck, randomness, fold, log_inv_rate, head)
    }
}

/// Plonky3 on the CPU: `Radix2DFTSmallBatch` and `MerkleTreeMmcs` (the CPU backend's). The
/// reference twin.
#[derive(Clone)]
pub struct CpuCodewords<F: ProverField = BabyBear, E: WhirExtension<F> = EF<F>> {
    dft: Radix2DFTSmallBatch<F>,
    mmcs: CpuMmcs<F>,
    leaf: LeafSponge,
    extension: std::marker::PhantomData<E>,
}

impl<F: ProverField, E: WhirExtension<F>> Default for CpuCodewords<F, E> {
    fn default() -> Self {
        Self::hashing_leaves(LeafSponge::Width16)
    }
}

impl<F: ProverField, E: WhirExtension<F>> CpuCodewords<F, E> {
    /// The twin with leaves hashed by `leaf` (the default: width 16), over Plonky3's default
    /// Poseidon2 constants.
    pub fn hashing_leaves(leaf: LeafSponge) -> Self {
        Self { dft: Radix2DFTSmallBatch::default(), mmcs: whir_verifier::hash::cpu_mmcs_with::<F>(0, leaf), leaf, extension: std::marker::PhantomData }
    }

    /// The twin over any Poseidon2 constants: nodes (and width-16 leaves) hashed with `perm`,
    /// leaves with `wide` where given (width 24), as the GPU steps built from the same
    /// constants hash them.
    pub fn with_permutations(perm: whir_verifier::hash::Perm<F>, wide: Option<whir_verifier::hash::Perm24<F>>) -> Self {
        let leaf = if wide.is_some() { LeafSponge::Width24 } else { LeafSponge::Width16 };
        Self { dft: Radix2DFTSmallBatch::default(), mmcs: whir_verifier::hash::cpu_mmcs_over::<F>(perm, wide, 0), leaf, extension: std::marker::PhantomData }
    }
}

impl<F: ProverField, E: WhirExtension<F>> CpuCodewords<F, E> {
    /// The transform of `padded` (rows of `width` words, the codeword's height) committed.
    fn commit_padded(&self, padded: Vec<F>, width: usize) -> (Commitment<F>, <CpuMmcs<F> as Mmcs<F>>::ProverData<RowMajorMatrix<F>>) {
        let codeword = self.dft.dft_batch(RowMajorMatrix::new(padded, width));
        self.mmcs.commit_matrix(codeword)
    }
}

impl<F: ProverField, E: WhirExtension<F>> WhirBackend<F, E> for CpuCodewords<F, E> {
    type Committed = <CpuMmcs<F> as Mmcs<F>>::ProverData<RowMajorMatrix<F>>;
    type Sumcheck = CpuSumcheck<F, E>;

    fn leaf_sponge(&self) -> LeafSponge {
        self.leaf
    }

    fn mmcs(&self) -> CpuMmcs<F> {
        self.mmcs.clone()
    }

    fn commit_message(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        let (root, committed) = self.commit(message, width, log_inv_rate)?;
        let w = E::zero_vec(message.len());
        let f = message.iter().copied().map(E::from).collect();
        Ok((root, committed, CpuSumcheck::new(f, w)?))
    }

    /// In prefix order the table is reordered into the message first.
    fn commit_message_blocks(
        &self,
        blocks: usize,
        block_len: usize,
        width: usize,
        log_inv_rate: usize,
        order: VariableOrder,
        block: &Blocks<'_, F>,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        let table = gather_blocks(blocks, block_len, block)?;
        if order == VariableOrder::Suffix {
            return self.commit_message(&table, width, log_inv_rate);
        }
        if !width.is_power_of_two() || width > table.len() {
            return Err(ProverError::Input(format!("rows of {width} values of a table of {}", table.len())));
        }
        let (root, committed) = self.commit(&reverse_rows_and_columns(&table, width.trailing_zeros() as usize), width, log_inv_rate)?;
        let f = table.iter().copied().map(E::from).collect();
        Ok((root, committed, CpuSumcheck::new(f, E::zero_vec(table.len()))?.with_reversed_indices()))
    }

    fn commit_folded(&self, sumcheck: &mut Self::Sumcheck, fold: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let message = sumcheck.message(fold)?;
        self.commit(&E::flatten_to_base(message), E::DIMENSION << fold, log_inv_rate)
    }

    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let mut padded = F::zero_vec(message.len() << log_inv_rate);
        padded[..message.len()].copy_from_slice(message);
        Ok(self.commit_padded(padded, width))
    }

    fn commit_hiding_message(
        &self,
        poly: &[F],
        randomness: &[F],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        if !poly.len().is_power_of_two() || fold > poly.len().trailing_zeros() as usize {
            return Err(ProverError::Input(format!("a polynomial of {} values folded {fold} variables at a time", poly.len())));
        }
        let (width, rows) = (1usize << fold, poly.len() >> fold);
        // Row r, column b: poly[b·rows + r] (the message's 2^fold chunks side by side).
        let message: Vec<F> = (0..rows).flat_map(|r| (0..width).map(move |b| poly[b * rows + r])).collect();
        let padded = hiding_padded(&message, &randomness_rows(randomness, width)?, width, rows << log_inv_rate)?;
        let (root, committed) = self.commit_padded(padded, width);
        let mut table = poly.iter().copied().map(E::from).collect::<Vec<E>>();
        p3_util::reverse_slice_index_bits(&mut table);
        Ok((root, committed, CpuSumcheck::new(table, E::zero_vec(poly.len()))?.with_reversed_indices()))
    }

    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let message = sumcheck.message(fold)?;
        let rows = message.len() >> fold;
        let padded = hiding_padded(&message, &randomness_rows(randomness, 1 << fold)?, 1 << fold, rows << log_inv_rate)?;
        Ok(self.commit_padded(E::flatten_to_base(padded), E::DIMENSION << fold))
    }

    type Opening = OpenedRows<F>;

    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError> {
        let (values, proof) = self.mmcs.open_multi_batch(indices, committed);
        Ok((values.into_iter().map(|mut m| m.swap_remove(0)).collect(), proof))
    }

    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<Vec<OpenedRows<F>>, ProverError> {
        Ok(openings)
    }
}

/// An opening in the proof's form: base-field rows for the first codeword, extension-field
/// rows (from their base words) for the folded ones.
pub(crate) fn query_openings<F: ProverField, E: WhirExtension<F>>(rows: Vec<Vec<F>>, proof: Paths<F>, base: bool) -> QueryOpenings<F, E, Paths<F>> {
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
/// Where the steps can, the rounds and their transcript run where the tables are (the GPU: one
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
pub(crate) struct Opened<'a, F: ProverField, E: WhirExtension<F>, S: WhirBackend<F, E>> {
    pub codeword: std::sync::Arc<S::Committed>,
    pub sumcheck: S::Sumcheck,
    pub stacking: &'a Stacking,
}

/// The challenger a run plays over in place of `challenger` where `steps` offer one over the
/// device that continues its sponge ([`WhirChallenger::sponge_words`]), with the permutation
/// checked on a random state; None to play over `challenger` itself. A permutation that is
/// not the device's keeps the run on the host, said once in a log line.
pub(crate) fn device_transcript<F, E, S, C>(steps: &S, challenger: &C) -> Option<GpuChallenger<F>>
where
    F: ProverField,
    E: WhirExtension<F>,
    S: WhirBackend<F, E>,
    C: WhirChallenger<F>,
{
    let words = challenger.sponge_words()?;
    let probe: [F; SPONGE_WIDTH] = std::array::from_fn(|_| F::from_u32(rand::random::<u32>()));
    let device = steps.device_transcript(words)?;
    if challenger.permute(probe) != Some(device.inner().permutation.permute(probe)) {
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

/// The words of a device challenger's sponge now (what a caller's challenger resumes from).
pub(crate) fn words_of<F: ProverField>(device: &GpuChallenger<F>) -> SpongeWords<F> {
    let inner = device.inner();
    SpongeWords { state: inner.sponge_state, inputs: inner.input_buffer.clone(), outputs: inner.output_buffer.clone() }
}
