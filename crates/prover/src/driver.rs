//! Our own WHIR driver: p3-whir 0.8's protocol, step by step as its PCS adapter (`commit`, the
//! claim phase of `open`) and `WhirProver::{prove, round, final_round}` play it, with every step
//! that touches a codeword behind [`CodewordSteps`] and every sumcheck step behind
//! [`SumcheckSteps`]. On the GPU the input is uploaded once: it is encoded and committed, then
//! stays as the sumcheck's f; the claim phase evaluates it there, the initial fold folds it there,
//! each folded f is encoded where it lies, and only roots, round coefficients, claim and OOD
//! answers, opened rows with sibling digests, PoW witnesses and the final polynomial come back.
//! [`CpuCodewords`] with [`CpuSumcheck`] is the plain-Rust twin and the reference the tests
//! compare with. The transcript and the proof are the upstream prover's, byte for byte
//! (smallest-witness grinding on both sides), built from public pieces: `WhirProverTranscript` /
//! `WhirShape` for the rounds, p3-sumcheck's sumcheck transcript for each batch, and — because
//! the layout's prover-side claim transcripts are crate-private — its verifier-side claim
//! registry, which plays the same transcript once it is given the values.

use std::time::{Duration, Instant};

use crate::lookahead::WhirChallenger;
use p3_commit::Mmcs;
use p3_dft::{Radix2DFTSmallBatch, TwoAdicSubgroupDft};
use p3_matrix::dense::RowMajorMatrix;
use p3_merkle_tree::PrunedMerklePaths;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_sumcheck::layout::observe_commitment;
use p3_sumcheck::strategy::{Basis, VariableOrder};
use p3_sumcheck::transcript::{ProverTranscript, SumcheckShape};
use p3_sumcheck::OpeningProtocol;
use p3_sumcheck::SumcheckData;
use p3_whir::parameters::WhirConfig;
use p3_whir::transcript::WhirProverTranscript;
use p3_whir::{PcsProof, QueryOpenings, SharedProofOpening, WhirDomain, WhirProof, WhirQueryPoint, WhirRoundProof, WhirShape};
use whir_gpu::{CommittedCodeword, GpuCodewords, GpuSumcheck, MessageLayout, PendingRows, PowClock, SpongeScript, SpongeScriptValues};
use whir_verifier::hash::{CpuMmcs, LeafSponge};

use crate::claims::{check_protocol, play_claims, Points, Stacking};

use crate::error::ProverError;
use crate::opening_protocol;
use crate::options::DriverOptions;
use crate::sumcheck::{powers_from, reverse_rows_and_columns, CpuSumcheck, SumcheckSteps};
use crate::Params;
use crate::{Commitment, ProverField, WhirExtension, EF};
use p3_baby_bear::BabyBear;

type Proof<F, E> = PcsProof<F, E, CpuMmcs<F>>;
/// A message given block by block: `blocks(b, write)` hands block b to `write` in one or more
/// pieces ([`CodewordSteps::commit_message_blocks`]).
pub type Blocks<'a, F = BabyBear> = dyn Fn(usize, &mut dyn FnMut(&[F])) + Sync + 'a;
type Paths<F> = PrunedMerklePaths<F, 8>;
/// Opened rows (base-field words) with their pruned multi-proof.
pub type OpenedRows<F = BabyBear> = (Vec<Vec<F>>, Paths<F>);

/// The codeword steps of a WHIR proof: encode a message and commit to the codeword's rows, and
/// open rows with Plonky3's pruned multi-proof. Messages are row-major base-field words; an
/// extension-field message is given as its base coefficients (D words per element), which is
/// how `ExtensionMmcs` hashes its rows and how a base-field DFT encodes it.
pub trait CodewordSteps<F: ProverField = BabyBear, E: WhirExtension<F> = EF<F>> {
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
    type Sumcheck: SumcheckSteps<F, E>;

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
    /// [`reverse_rows_and_columns`] of the table). By default (suffix order only) gathered
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
        head: Option<&SpongeScript<F>>,
    ) -> Result<(Commitment<F>, Self::Committed, Option<SpongeScriptValues<F, E>>), ProverError> {
        let _ = head;
        let (root, committed) = self.commit_folded(sumcheck, fold, log_inv_rate)?;
        Ok((root, committed, None))
    }

    /// The driver enters `step` of round `round` (for profiles; nothing by default).
    fn enter_step(&self, _round: usize, _step: Step) {}
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
impl<F: ProverField, E: WhirExtension<F>, S: CodewordSteps<F, E>> CodewordSteps<F, E> for &S {
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
        head: Option<&SpongeScript<F>>,
    ) -> Result<(Commitment<F>, Self::Committed, Option<SpongeScriptValues<F, E>>), ProverError> {
        (**self).commit_folded_with_head(sumcheck, fold, log_inv_rate, head)
    }
    fn enter_step(&self, round: usize, step: Step) {
        (**self).enter_step(round, step)
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

impl<F: ProverField, E: WhirExtension<F>> CodewordSteps<F, E> for CpuCodewords<F, E> {
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
        let codeword = self.dft.dft_batch(RowMajorMatrix::new(padded, width));
        Ok(self.mmcs.commit_matrix(codeword))
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

/// The GPU's codewords over the degree-4, 5 and 8 extensions (`E` decides the sumcheck's
/// tables and the width of a folded codeword's rows).
impl<F: ProverField, E: WhirExtension<F> + whir_gpu::GpuExtension<F>> CodewordSteps<F, E> for GpuCodewords<F> {
    type Committed = CommittedCodeword<F>;
    type Sumcheck = GpuSumcheck<F, E>;

    fn leaf_sponge(&self) -> LeafSponge {
        self.merkle().leaf_sponge()
    }

    /// Over the constants the GPU permutations hold.
    fn mmcs(&self) -> CpuMmcs<F> {
        let merkle = self.merkle();
        whir_verifier::hash::cpu_mmcs_over::<F>(merkle.poseidon2().constants().to_cpu(), merkle.wide_leaves().map(|w| w.constants().to_cpu()), 0)
    }

    /// The message is uploaded once: encoded, committed, and kept as the sumcheck's f.
    fn commit_message(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        let vars = message.len().trailing_zeros() as usize;
        let (committed, buffer) = self.commit_keep(message, width, log_inv_rate)?;
        let sumcheck = GpuSumcheck::from_base(self.ntt().clone(), buffer, vars)?;
        Ok((Commitment::new(vec![committed.root()]), committed, sumcheck))
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
    ) -> Result<(Commitment<F>, Self::Committed, Self::Sumcheck), ProverError> {
        let vars = (blocks * block_len).trailing_zeros() as usize;
        let layout = match order {
            VariableOrder::Suffix => MessageLayout::Rows,
            VariableOrder::Prefix => MessageLayout::ReversedIndices { words: 1 },
        };
        let (committed, buffer) =
            self.commit_blocks_keep(blocks, block_len, width, log_inv_rate, layout, |b, write| block(b, &mut |piece| write(whir_gpu::field::as_words(piece))))?;
        let sumcheck = GpuSumcheck::from_base(self.ntt().clone(), buffer, vars)?;
        let sumcheck = if order == VariableOrder::Prefix { sumcheck.with_reversed_indices() } else { sumcheck };
        Ok((Commitment::new(vec![committed.root()]), committed, sumcheck))
    }

    /// Encodes f where the sumcheck left it: nothing crosses the bus but the root.
    fn commit_folded(&self, sumcheck: &mut Self::Sumcheck, fold: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        self.commit_folded_with_head(sumcheck, fold, log_inv_rate, None).map(|(root, committed, _)| (root, committed))
    }

    /// The commit and, before its wait, the root observed, the out-of-domain answers and the
    /// query grind (`GpuCodewords::commit_then_script`): one round trip instead of three or more.
    fn commit_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        fold: usize,
        log_inv_rate: usize,
        head: Option<&SpongeScript<F>>,
    ) -> Result<(Commitment<F>, Self::Committed, Option<SpongeScriptValues<F, E>>), ProverError> {
        let m = sumcheck.num_variables();
        if fold > m {
            return Err(ProverError::Input(format!("a fold of {fold} variables of a {m}-variable polynomial")));
        }
        let (rows, width) = (1 << (m - fold), E::WORDS << fold);
        // (Over degree 8 `commit_then_script` commits alone: the caller plays the head.)
        let (committed, values) = match head {
            Some(head) => self.commit_then_script(sumcheck, rows, width, log_inv_rate, head)?,
            None => (self.commit_buffer_as(sumcheck.f_buffer()?, rows, width, log_inv_rate, sumcheck.message_layout())?, None),
        };
        Ok((Commitment::new(vec![committed.root()]), committed, values))
    }

    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment<F>, Self::Committed), ProverError> {
        let committed = GpuCodewords::commit(self, message, width, log_inv_rate)?;
        Ok((Commitment::new(vec![committed.root()]), committed))
    }

    /// Gathered on the GPU and left there: every opening of a proof is read back in one
    /// transfer at its end, so the rounds do not wait for them.
    type Opening = PendingRows;

    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError> {
        Ok(self.open_deferred(committed, indices)?)
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

    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<Vec<OpenedRows<F>>, ProverError> {
        Ok(GpuCodewords::read_openings(self, openings)?.into_iter().map(|o| (o.rows, PrunedMerklePaths { sibling_hashes: o.siblings })).collect())
    }

    fn begin_reading_openings(&self, openings: Vec<Self::Opening>) -> Result<Box<dyn FnOnce() -> Result<Vec<OpenedRows<F>>, ProverError> + '_>, ProverError> {
        let reading = self.start_reading_openings(openings)?;
        Ok(Box::new(move || {
            Ok(self.finish_reading_openings(reading)?.into_iter().map(|o| (o.rows, PrunedMerklePaths { sibling_hashes: o.siblings })).collect())
        }))
    }
}

/// The steps of a WHIR round, as the per-round breakdown names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// Encode + Merkle commit (upload, NTT, tree, root).
    Commit,
    /// Claim phase: evaluations at the commitment OOD and opening points.
    Claims,
    /// Out-of-domain answers of the folded polynomial.
    Ood,
    /// Proof-of-work grinding (query PoW, and sumcheck PoW moved here from its rounds).
    Pow,
    /// Gathering the opened rows and paths (deferred on the GPU).
    Open,
    /// The round's constraint weights (equality and select).
    Weights,
    /// Sumcheck rounds: round polynomials, challenges, folds; the final polynomial's readback.
    Sumcheck,
    /// Reading every opening back at the proof's end.
    Readback,
}

impl Step {
    pub const ALL: [Step; 8] = [Step::Commit, Step::Claims, Step::Ood, Step::Pow, Step::Open, Step::Weights, Step::Sumcheck, Step::Readback];

    pub fn name(self) -> &'static str {
        match self {
            Step::Commit => "commit",
            Step::Claims => "claims",
            Step::Ood => "ood",
            Step::Pow => "pow",
            Step::Open => "open",
            Step::Weights => "weights",
            Step::Sumcheck => "sumcheck",
            Step::Readback => "readback",
        }
    }
}

/// The profile label of a step: "round:step".
pub fn step_label(round: usize, step: Step) -> String {
    format!("{round}:{}", step.name())
}

/// Time of one step of one round: wall time on the host, and GPU time (the sum of its
/// submissions' timestamps) where the adapter has timestamp queries.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTime {
    pub wall: Duration,
    pub gpu: Option<Duration>,
    pub submissions: u32,
}

/// Per-round breakdown of a driven proof: round 0 is the commitment, the claim phase and the
/// initial fold; rounds 1..=R are WHIR's rounds; the last is the final round.
#[derive(Clone, Debug, Default)]
pub struct RoundBreakdown {
    pub rounds: Vec<Vec<(Step, StepTime)>>,
}

impl RoundBreakdown {
    /// One step's time summed over rounds.
    pub fn total(&self, step: Step) -> StepTime {
        let mut t = StepTime::default();
        for (s, v) in self.rounds.iter().flatten() {
            if *s == step {
                t.wall += v.wall;
                t.submissions += v.submissions;
                if let Some(g) = v.gpu {
                    t.gpu = Some(t.gpu.unwrap_or_default() + g);
                }
            }
        }
        t
    }

    /// Fills in GPU times from a context profile labelled by [`step_label`]; a label with a
    /// "/pow" suffix (GPU grinding inside a step, e.g. a sumcheck's) counts as that round's PoW.
    pub fn add_gpu(&mut self, spans: &[whir_gpu::ProfileSpan]) {
        for (_, time) in self.rounds.iter_mut().flatten() {
            time.gpu = Some(Duration::ZERO);
            time.submissions = 0;
        }
        for span in spans {
            let Some((round, step)) = parse_label(&span.label) else { continue };
            if self.rounds.len() <= round {
                self.rounds.resize(round + 1, Vec::new());
            }
            let steps = &mut self.rounds[round];
            let at = match steps.iter().position(|(s, _)| *s == step) {
                Some(i) => i,
                None => {
                    steps.push((step, StepTime { gpu: Some(Duration::ZERO), ..StepTime::default() }));
                    steps.len() - 1
                }
            };
            let time = &mut steps[at].1;
            time.gpu = Some(time.gpu.unwrap_or_default() + span.gpu);
            time.submissions += span.submissions;
        }
    }
}

/// (round, step) of a profile label made by [`step_label`], possibly with a "/pow" suffix.
fn parse_label(label: &str) -> Option<(usize, Step)> {
    let (round, rest) = label.split_once(':')?;
    let (name, sub) = match rest.split_once('/') {
        Some((name, sub)) => (name, Some(sub)),
        None => (rest, None),
    };
    let step = match sub {
        Some("pow") => Step::Pow,
        Some(_) => return None,
        None => *Step::ALL.iter().find(|s| s.name() == name)?,
    };
    Some((round.parse().ok()?, step))
}

/// Wall-clock recorder of the breakdown: each `enter` closes the step before it, so the
/// steps cover the proof end to end. Grinding inside a sumcheck is moved to `Pow`.
pub(crate) struct StepClock {
    breakdown: RoundBreakdown,
    open: Option<(usize, Step, Instant, Duration)>,
    /// The challenger's grinding clock, where it keeps one (grinds then count as `Pow`).
    pow_clock: Option<PowClock>,
    /// The open step as a tracing span (for a timeline of the proof's threads).
    span: Option<tracing::span::EnteredSpan>,
}

impl StepClock {
    pub(crate) fn new<F: ProverField, C: WhirChallenger<F>>(challenger: &C) -> Self {
        Self { breakdown: RoundBreakdown::default(), open: None, pow_clock: challenger.pow_clock(), span: None }
    }

    pub(crate) fn enter<F: ProverField, E: WhirExtension<F>, S: CodewordSteps<F, E>>(&mut self, steps: &S, round: usize, step: Step) {
        self.close();
        steps.enter_step(round, step);
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
        self.pow_clock.as_ref().map_or(Duration::ZERO, PowClock::elapsed)
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

/// Where a driven proof spent its time: the per-round breakdown and its sums.
#[derive(Clone, Debug, Default)]
pub struct DriverTimes {
    /// Encode + commit of every codeword (upload, NTT, Merkle tree, root readback).
    pub commit: Duration,
    /// Row and path openings.
    pub open: Duration,
    /// Proof-of-work grinding (query and sumcheck PoW).
    pub pow: Duration,
    /// Everything else: claim phase, sumcheck and folding, OOD evaluations, transcript.
    pub other: Duration,
    /// Until the commitment is bound (the PCS `commit` phase).
    pub commit_phase: Duration,
    /// Claim phase (evaluations at the opening and OOD points) and the initial fold.
    pub claims: Duration,
    /// Constraint weights and sumcheck rounds of every round after the initial fold.
    pub sumcheck: Duration,
    /// Out-of-domain evaluations of the folded polynomials.
    pub ood: Duration,
    /// Every step of every round.
    pub breakdown: RoundBreakdown,
    /// Out-of-domain answers computed before their commit's wait (the round's head played
    /// where f lies), out of all the rounds' answers.
    pub head_answers: usize,
    /// Query grinds run on the GPU ahead of the transcript and offered to the challenger (it
    /// takes each only if its state is the one searched): each round's with its commit, the
    /// final one with the final polynomial's readback.
    pub head_grinds: usize,
}

impl DriverTimes {
    pub(crate) fn from_breakdown(breakdown: RoundBreakdown, commit_phase: Duration, total: Duration, (head_answers, head_grinds): (usize, usize)) -> Self {
        let wall = |step| breakdown.total(step).wall;
        let (commit, open, pow) = (wall(Step::Commit), wall(Step::Open) + wall(Step::Readback), wall(Step::Pow));
        let initial = |step| breakdown.rounds.first().and_then(|r| r.iter().find(|(s, _)| *s == step)).map_or(Duration::ZERO, |(_, t)| t.wall);
        let claims = wall(Step::Claims) + initial(Step::Weights) + initial(Step::Sumcheck);
        let sumcheck = wall(Step::Weights) + wall(Step::Sumcheck) - initial(Step::Weights) - initial(Step::Sumcheck);
        Self {
            commit,
            open,
            pow,
            other: total.saturating_sub(commit + open + pow),
            commit_phase,
            claims,
            sumcheck,
            ood: wall(Step::Ood),
            breakdown,
            head_answers,
            head_grinds,
        }
    }
}

/// An opening in the proof's form: base-field rows for the first codeword, extension-field
/// rows (from their base words) for the folded ones.
fn query_openings<F: ProverField, E: WhirExtension<F>>(rows: Vec<Vec<F>>, proof: Paths<F>, base: bool) -> QueryOpenings<F, E, Paths<F>> {
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
fn query_var<F: ProverField>(log_folded_domain_size: usize, num_variables: usize, index: usize) -> F {
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
fn run_rounds<F: ProverField, E: WhirExtension<F>, S: SumcheckSteps<F, E>, C: WhirChallenger<F>>(
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

fn play_rounds<F: ProverField, E: WhirExtension<F>, S: SumcheckSteps<F, E>, C: WhirChallenger<F>>(
    sumcheck: &mut S,
    data: &mut SumcheckData<F, E>,
    challenger: &mut C,
    rounds: usize,
    pow_bits: usize,
    link: Option<&whir_gpu::GrindAhead<F>>,
) -> Result<Point<E>, ProverError> {
    let mut transcript = ProverTranscript::<C, F, E>::new(challenger, SumcheckShape::new(rounds, pow_bits, Basis::Evaluation));
    let mut challenges: Vec<E> = Vec::with_capacity(rounds);
    // A challenge drawn but not yet bound by a fold.
    let mut unfolded: Option<E> = None;
    let mut step = || -> Result<(), ProverError> {
        // The transcript's state once it is seeded: where rounds on the device start.
        if let Some((grinder, sponge, pending)) = link.and_then(|l| l.transcript_state()) {
            if let Some(chained) = sumcheck.play_chain(rounds, &sponge, &pending, pow_bits, &grinder) {
                let chained = chained?;
                if let Some(l) = link {
                    l.queue(chained.iter().filter_map(|c| c.offer.clone()));
                }
                for c in chained {
                    let r = data.observe_and_sample(&mut transcript, c.c0, c.c_inf);
                    challenges.push(r);
                    match c.r {
                        Some(gpu) if gpu == r => {}
                        Some(gpu) => {
                            return Err(ProverError::Gpu(whir_gpu::GpuError::Device(format!(
                                "the GPU drew sumcheck challenge {gpu:?} where the transcript draws {r:?}"
                            ))));
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

/// What [`prove_with_steps`] returns: the commitment, the proof and where the time went.
pub type Proved<F, E> = (Commitment<F>, PcsProof<F, E, CpuMmcs<F>>, DriverTimes);

/// Commits to `evals` (2^n values) and opens them at `params.points` transcript points, as
/// Plonky3's `WhirProver` would with a smallest-witness grinder, the challenges in `E` (the
/// field's degree-4 extension on the GPU steps; any [`WhirExtension`] on the CPU twin): returns
/// the commitment, the proof and where the time went.
pub fn prove_with_steps<F: ProverField, E: WhirExtension<F>, S: CodewordSteps<F, E>, C: WhirChallenger<F>>(
    steps: &S,
    params: &Params,
    evals: &[F],
    challenger: &mut C,
    options: DriverOptions,
) -> Result<Proved<F, E>, ProverError> {
    let config = params.config_over::<E, C>()?;
    if evals.len() != 1usize << params.num_vars {
        return Err(ProverError::Input(format!("{} evaluations given for n = {} (need 2^n)", evals.len(), params.num_vars)));
    }
    check_leaf_sponge(steps.leaf_sponge(), params.leaf)?;
    let started = Instant::now();
    let mut clock = StepClock::new(challenger);

    // Commit (the PCS adapter's `commit`): the layout's message, encoded and committed.
    // The suffix layout of one table of one column commits the evaluations as they are (rows of
    // 2^fold consecutive values; p3-sumcheck's `write_stacked_slots`), so they are the message.
    clock.enter(steps, 0, Step::Commit);
    let (root, committed, sumcheck) = steps.commit_message(evals, 1 << config.round_folding_factor(0), params.log_inv_rate)?;
    observe_commitment::<F, _, _>(challenger, root.clone());
    let commit_phase = started.elapsed();

    let protocol = opening_protocol(params);
    let stacking = Stacking::new(protocol.table_shapes());
    let opened = Opened { codeword: std::sync::Arc::new(committed), sumcheck, stacking: &stacking };
    let (proof, counts) = open_with_steps(steps, &config, opened, &protocol, Points::Drawn, challenger, options, &mut clock)?;
    Ok((root, proof, DriverTimes::from_breakdown(clock.finish(), commit_phase, started.elapsed(), counts)))
}

/// What an opening starts from: the committed codeword and the stacked polynomial as the
/// sumcheck's f (w = 0), with where the tables lie in it.
pub(crate) struct Opened<'a, F: ProverField, E: WhirExtension<F>, S: CodewordSteps<F, E>> {
    pub codeword: std::sync::Arc<S::Committed>,
    pub sumcheck: S::Sumcheck,
    pub stacking: &'a Stacking,
}

/// The PCS adapter's `open` (or `open_at`, with `points` given) after `commit`: the claim phase,
/// then the WHIR run (`WhirProver::prove`), as Plonky3 plays them with a smallest-witness
/// grinder. Returns the proof and how many out-of-domain answers and grinds were played ahead
/// where f lies.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn open_with_steps<F: ProverField, E: WhirExtension<F>, S: CodewordSteps<F, E>, C: WhirChallenger<F>>(
    steps: &S,
    config: &WhirConfig<E, F, C>,
    opened: Opened<'_, F, E, S>,
    protocol: &OpeningProtocol,
    points: Points<'_, E>,
    challenger: &mut C,
    options: DriverOptions,
    clock: &mut StepClock,
) -> Result<(Proof<F, E>, (usize, usize)), ProverError> {
    let Opened { codeword: mut committed, mut sumcheck, stacking } = opened;
    let num_vars = stacking.num_variables();
    if num_vars != config.num_variables() || sumcheck.num_variables() != num_vars {
        return Err(ProverError::Input(format!(
            "a committed polynomial of {} variables opened under a configuration of {}",
            sumcheck.num_variables(),
            config.num_variables()
        )));
    }
    let fold0 = config.round_folding_factor(0);

    // Claim phase (the adapter's `open`): commitment OOD claims, then the opening claims. The
    // layout's prover-side claim transcripts are private to p3-sumcheck; its verifier-side
    // registry plays the same transcript given the values, so each point is read from a trial run
    // on copies, the value computed where f lies, and the real step played with it.
    clock.enter(steps, 0, Step::Claims);
    check_protocol(stacking, protocol, points)?;
    let claims = protocol.checked_num_claims().and_then(|n| n.checked_add(config.commitment_ood_samples()));
    config
        .validate_initial_claims(claims.ok_or_else(|| ProverError::Params("too many opening claims".into()))?)
        .map_err(|e| ProverError::Params(e.to_string()))?;
    let claims = play_claims(&mut sumcheck, stacking, protocol, points, config.commitment_ood_samples(), challenger)?;
    let initial_ood_answers = claims.ood_answers.clone();
    let opening_evals = claims.evals.clone();

    // Where the steps can, each round's commitment, out-of-domain answers and query grind are
    // played where f lies, before the commit's wait, from the transcript state published here;
    // the transcript below replays them and checks each point drawn.
    let head_link = if options.round_heads { challenger.track_state_throughout() } else { None };
    let gpu_min_bits = challenger.device_min_bits();
    let (mut head_answers, mut head_grinds) = (0, 0);

    // The WHIR run (`WhirProver::prove`).
    let shape = WhirShape::new(config, protocol.num_openings());
    let mut transcript = WhirProverTranscript::<C, F, E>::new(challenger, shape);
    // Everything between here and `finish` plays the transcript; a step that fails (a GPU error)
    // leaves it unfinished, and p3's transcript panics when dropped unfinished, so it is
    // forgotten instead (a few small allocations) and the error returned.
    let played = (|| -> Result<_, ProverError> {
        // Initial fold: the batching challenge α, then w = Σ α^i eq(z_i, ·) over every claim
        // (the registry's own batched constraint) and the first fold's sumcheck rounds.
        let mut initial_sumcheck = SumcheckData::default();
        transcript.delegate_initial_fold(|ch| -> Result<(), ProverError> {
            clock.enter(steps, 0, Step::Weights);
            let alpha = claims.registry.batching_challenge(ch);
            // Formed where used in the initial fold's rounds, not stored (the largest table),
            // from the size the options say and where the steps can.
            // From 2^24 cells up, for one polynomial as for a stacked witness: a stacked
            // witness's lazy slot weights halve its live peak at fold 4 (H200, zkVM witness:
            // 952 -> 480-505 MiB, the single polynomial's) for ~3 ms of its open (the chained
            // rounds' slot reads and the weights written at the folded size).
            let lazy = options.lazy_first_weights_at(num_vars);
            let lazy = lazy.then_some(fold0);
            claims.add_initial_weights(&mut sumcheck, alpha, lazy)?;
            clock.enter(steps, 0, Step::Sumcheck);
            run_rounds(&mut sumcheck, &mut initial_sumcheck, ch, fold0, config.starting_folding_pow_bits(), options.device_rounds).map(|_| ())
        })?;

        let mut rounds = Vec::with_capacity(config.n_rounds());
        // Openings, read back at the end (their values feed no transcript step).
        let mut pending = Vec::with_capacity(config.n_rounds() + 1);
        let mut base_round = true;
        for round in 0..config.n_rounds() {
            let num_variables = num_vars - config.total_folded_through(round);
            let round_params = &config.round_parameters()[round];
            let fold_next = config.round_folding_factor(round + 1);

            // Commit to the folded polynomial (`commit_extension`, suffix order: as is).
            clock.enter(steps, round + 1, Step::Commit);
            let query_bits = transcript.shape().rounds[round].query_pow_bits;
            let head = head_link.as_ref().and_then(|l| l.transcript_state()).map(|(grinder, sponge, pending)| SpongeScript {
                grinder,
                sponge,
                pending,
                // The round's out-of-domain samples, then its query grind.
                samples: round_params.ood_samples,
                // Below the GPU's threshold the challenger grinds on the CPU.
                grind_bits: if query_bits >= gpu_min_bits { query_bits } else { 0 },
            });
            let head = head.filter(|h| h.samples > 0 || h.grind_bits > 0);
            let (next_root, next_committed, played) = steps.commit_folded_with_head(&mut sumcheck, fold_next, round_params.log_inv_rate, head.as_ref())?;
            // The GPU expanded its points over f's variables: those must be the round's.
            let played = played.filter(|_| sumcheck.num_variables() == num_variables);
            transcript.commitment(next_root.clone());

            // Out-of-domain samples of the folded polynomial.
            clock.enter(steps, round + 1, Step::Ood);
            let mut ood_points = Vec::with_capacity(round_params.ood_samples);
            let mut ood_answers = Vec::with_capacity(round_params.ood_samples);
            for i in 0..round_params.ood_samples {
                let z = transcript.ood_point();
                let point = Point::expand_from_univariate(z, num_variables);
                let eval = match played.as_ref().map(|p| (p.points.get(i), p.answers.get(i))) {
                    Some((Some(&drawn), Some(&answer))) if drawn == z => {
                        head_answers += 1;
                        answer
                    }
                    Some((Some(drawn), _)) => {
                        return Err(ProverError::Gpu(whir_gpu::GpuError::Device(format!(
                            "the GPU drew out-of-domain point {drawn:?} where the transcript draws {z:?}"
                        ))));
                    }
                    _ => sumcheck.eval(&point)?,
                };
                transcript.ood_answer(eval);
                ood_answers.push(eval);
                ood_points.push(point);
            }

            clock.enter(steps, round + 1, Step::Pow);
            // The grind played with the head, taken only if the transcript is where it searched.
            if let (Some(link), Some(offer)) = (head_link.as_ref(), played.and_then(|p| p.offer)) {
                head_grinds += 1;
                link.queue([offer]);
            }
            let pow_witness = transcript.query_pow(round);
            let indices = transcript.query_indices(round);

            // STIR openings of the previous codeword. (Upstream folds each row at the folding
            // randomness; those values only update the claimed sum, which no message carries.)
            clock.enter(steps, round + 1, Step::Open);
            pending.push((steps.open(&committed, &indices)?, base_round));
            // The previous codeword is done with once its openings are gathered: its memory
            // goes back before this round's weights and sumcheck.
            committed = std::sync::Arc::new(next_committed);

            // γ-batched constraint (the carried claim keeps coefficient 1; OOD claims take γ^1..,
            // STIR claims the powers after them), then this round's sumcheck.
            clock.enter(steps, round + 1, Step::Weights);
            let gamma = transcript.round_batching();
            let eq_scales = powers_from(gamma, 1, ood_points.len());
            let select_scales = powers_from(gamma, 1 + ood_points.len(), indices.len());
            sumcheck.add_eq_weights(&ood_points, &eq_scales)?;
            // The query points are ω^index of the folded domain (Plonky3's two-adic domain).
            debug_assert_eq!(
                query_var::<F>(round_params.log_folded_domain_size, round_params.num_variables, 1),
                <F as p3_field::TwoAdicField>::two_adic_generator(round_params.log_folded_domain_size)
            );
            sumcheck.add_select_weights_at(round_params.log_folded_domain_size, &indices, &select_scales)?;
            clock.enter(steps, round + 1, Step::Sumcheck);
            let mut sumcheck_data = SumcheckData::default();
            let _folding_randomness = transcript
                .delegate_round_fold(|ch| run_rounds(&mut sumcheck, &mut sumcheck_data, ch, fold_next, round_params.folding_pow_bits, options.device_rounds))?;
            base_round = false;
            rounds.push((next_root, ood_answers, pow_witness, sumcheck_data));
        }

        // Final round: the polynomial in the clear, the last queries, the closing sumcheck.
        let final_round = config.n_rounds();
        // The final polynomial comes back with the query grind that follows observing it, run
        // ahead on the GPU from the transcript's state here (taken only if the challenger's
        // state is the one searched); that submission is then mostly the grind's, so it counts
        // as PoW (the steps may still read f alone, e.g. f split over bindings).
        let final_bits = transcript.shape().final_pow_bits;
        let grind_from = head_link.as_ref().and_then(|l| l.transcript_state()).filter(|_| final_bits > 0 && final_bits >= gpu_min_bits);
        clock.enter(steps, final_round + 1, if grind_from.is_some() { Step::Pow } else { Step::Sumcheck });
        let (evals, final_offer) =
            sumcheck.evals_then_grind(grind_from.as_ref().map(|(grinder, sponge, pending)| (grinder.as_ref(), final_bits, sponge, pending.as_slice())))?;
        let final_poly = Poly::new(evals);
        transcript.final_poly(final_poly.as_slice());
        clock.enter(steps, final_round + 1, Step::Pow);
        if let (Some(link), Some(offer)) = (head_link.as_ref(), final_offer) {
            head_grinds += 1;
            link.queue([offer]);
        }
        let final_pow_witness = transcript.query_pow(final_round);
        let indices = transcript.query_indices(final_round);
        clock.enter(steps, final_round + 1, Step::Open);
        pending.push((steps.open(&committed, &indices)?, base_round));
        // Every opening comes back in one transfer, under way while the closing sumcheck runs.
        clock.enter(steps, final_round + 1, Step::Readback);
        let (openings, bases): (Vec<_>, Vec<bool>) = pending.into_iter().unzip();
        let opened = steps.begin_reading_openings(openings)?;
        clock.enter(steps, final_round + 1, Step::Sumcheck);
        let final_sumcheck = transcript
            .delegate_final_fold(|ch| {
                let mut data = SumcheckData::default();
                run_rounds(&mut sumcheck, &mut data, ch, config.final_sumcheck_rounds(), config.final_folding_pow_bits(), options.device_rounds).map(|_| data)
            })
            .transpose()?;

        // The openings, and the round proofs assembled.
        clock.enter(steps, final_round + 1, Step::Readback);
        let mut openings: Vec<_> = opened()?.into_iter().zip(bases).map(|((rows, proof), base)| query_openings(rows, proof, base)).collect();
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
        Ok((initial_sumcheck, rounds, final_poly, final_pow_witness, final_openings, final_sumcheck))
    })();
    let (initial_sumcheck, rounds, final_poly, final_pow_witness, final_openings, final_sumcheck) = match played {
        Ok(played) => {
            transcript.finish();
            challenger.stop_tracking();
            played
        }
        Err(e) => {
            std::mem::forget(transcript);
            challenger.stop_tracking();
            return Err(e);
        }
    };
    let whir = WhirProof { initial_ood_answers, initial_sumcheck, rounds, final_poly: Some(final_poly), final_pow_witness, final_openings, final_sumcheck };
    Ok((PcsProof { whir, evals: opening_evals }, (head_answers, head_grinds)))
}
