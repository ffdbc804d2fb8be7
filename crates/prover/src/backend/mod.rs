//! The backend: every step of the WHIR protocol that touches a codeword behind one trait,
//! [`Backend`], with its sumcheck state behind [`SumcheckState`] — in the shape of risc0's HAL:
//! the trait here, the plain-Rust twin ([`CpuBackend`] with [`CpuSumcheck`], the reference the
//! tests compare with) in `cpu.rs`, the GPU's (whir-gpu's codewords and sumcheck) in `gpu.rs`,
//! the only file of the protocol's side that names whir-gpu, and [`ComparingBackend`] (both at
//! once, every answer compared) in `compare.rs`.
//!
//! The protocol over a backend ([`prove_with_backend`](crate::prove_with_backend), the PCSs) is p3-whir 0.8's, step by
//! step as its PCS adapter and `WhirProver::{prove, round, final_round}` play it. On the GPU the
//! input is uploaded once: it is encoded and committed, then stays as the sumcheck's f; the
//! claim phase evaluates it there, the initial fold folds it there, each folded f is encoded
//! where it lies, and only roots, round coefficients, claim and OOD answers, opened rows with
//! sibling digests, PoW witnesses and the final polynomial come back. The transcript and the
//! proof are the upstream prover's, byte for byte (smallest-witness grinding on both sides).

use crate::breakdown::Step;
use p3_commit::Mmcs;
use p3_merkle_tree::PrunedMerklePaths;
use p3_sumcheck::strategy::VariableOrder;
use p3_whir::PcsProof;
use whir_verifier::hash::{CpuMmcs, LeafSponge};

use crate::error::ProverError;
use crate::{ProverField, WhirExtension, EF};
use p3_baby_bear::BabyBear;

mod compare;
mod cpu;
mod gpu;

pub use crate::claims::Stacking;
pub use crate::lookahead::{
    ConfigChallenger, GrindClock, HidingRoundHead, Lookahead, LookaheadLink, MaskedWire, MaskedWires, NoTranscript, PlayedGrind, PlayedHead, PlayedRound,
    RoundHead, SpongeTranscript, SpongeWords, TranscriptState, SPONGE_WIDTH,
};
pub use crate::sumcheck::{CpuSumcheck, SlotSet, SumcheckState};
pub use compare::{ComparingBackend, ComparingSumcheck};
pub use cpu::CpuBackend;
pub use gpu::GpuBackend;

pub(crate) type Proof<F, E, M = CpuMmcs<F>> = PcsProof<F, E, M>;
/// The commitment (a Merkle cap) of the MMCS `M`.
pub type RootOf<F, M> = <M as Mmcs<F>>::Commitment;
/// The pruned multi-proof of the MMCS `M`.
pub type PathsOf<F, M> = <M as Mmcs<F>>::MultiProof;
/// The commitment of a backend's proofs.
pub type CommitmentOf<F, E, S> = RootOf<F, <S as Backend<F, E>>::Mmcs>;
/// A commitment of the MMCS `M` and what the backend keeps of it (`C`).
pub type Committing<F, M, C> = (RootOf<F, M>, C);
/// Openings read back, each with its multi-proof of the MMCS `M`.
pub type OpenedRowsOf<F, M> = Vec<OpenedRows<F, PathsOf<F, M>>>;
/// A message given block by block: `blocks(b, write)` hands block b to `write` in one or more
/// pieces ([`Backend::commit_message_blocks`]).
pub type Blocks<'a, F = BabyBear> = dyn Fn(usize, &mut dyn FnMut(&[F])) + Sync + 'a;
pub(crate) type Paths<F> = PrunedMerklePaths<F, 8>;
/// Opened rows (base-field words) with their pruned multi-proof (Poseidon2's by default).
pub type OpenedRows<F = BabyBear, P = Paths<F>> = (Vec<Vec<F>>, P);

/// The one backend trait of the WHIR protocol: its coarse steps, with what a backend keeps as
/// associated types — a committed codeword ([`Committed`](Self::Committed)), an opening not yet
/// read ([`Opening`](Self::Opening)), the sumcheck's tables ([`Sumcheck`](Self::Sumcheck), whose
/// steps are [`SumcheckState`]'s). The CPU twin ([`CpuBackend`]), the GPU ([`GpuBackend`],
/// whir-gpu's codewords) and the comparing backend ([`ComparingBackend`])
/// implement it; the protocol ([`prove_with_backend`](crate::prove_with_backend), the PCS) runs over it.
///
/// Codeword steps encode a message and commit to the codeword's rows, and open rows with
/// Plonky3's pruned multi-proof. Messages are row-major base-field words; an extension-field
/// message is given as its base coefficients (D words per element), which is how
/// `ExtensionMmcs` hashes its rows and how a base-field DFT encodes it. Steps that play the
/// transcript ahead where the data lies do so through the [`Lookahead`] types,
/// offered by the challenger; by default a backend plays nothing ahead.
pub trait Backend<F: ProverField = BabyBear, E: WhirExtension<F> = EF<F>> {
    /// A committed codeword and whatever its openings need.
    type Committed;

    /// Plonky3's MMCS whose commitments and multi-proofs these steps make (`MerkleTreeMmcs`
    /// over Poseidon2 or over Keccak): what their proofs verify with. (Its roots and paths
    /// cross threads: the hiding run commits and opens its masks beside the device's work.)
    type Mmcs: Mmcs<F, Commitment: Send + Sync, MultiProof: Send + Sync> + Clone + Send + Sync;

    /// How the commitments hash Merkle leaves where they hash them with Poseidon2 (a proof's
    /// `Params::leaf` must be the same); None for other hashes.
    fn leaf_sponge(&self) -> Option<LeafSponge>;

    /// Plonky3's MMCS hashing as these steps hash (their constants, their leaf sponge): what
    /// their proofs verify with.
    fn mmcs(&self) -> Self::Mmcs;

    /// Encodes `message` (rows of `width` words, a power-of-two number of them) at rate
    /// 2^-log_inv_rate and commits to the codeword's rows.
    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<Committing<F, Self::Mmcs, Self::Committed>, ProverError>;

    /// An opening made by [`open`](Self::open), read by [`read_openings`](Self::read_openings).
    type Opening;

    /// Opens the codeword rows at `indices` (in order, repeats included) with their pruned
    /// multi-proof. The values may stay where they are until `read_openings`: no transcript step
    /// depends on them (the rows' folded values only update the claimed sum).
    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError>;

    /// The rows and pruned multi-proofs of `openings`, in order.
    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<OpenedRowsOf<F, Self::Mmcs>, ProverError>;

    /// [`read_openings`](Self::read_openings) in two halves: what is returned gives the rows
    /// when called, and where the backend can, their readback is already under way (the GPU's:
    /// submitted, waited for only then), so other work waited for in between covers it.
    #[allow(clippy::type_complexity)]
    fn begin_reading_openings(
        &self,
        openings: Vec<Self::Opening>,
    ) -> Result<Box<dyn FnOnce() -> Result<OpenedRowsOf<F, Self::Mmcs>, ProverError> + '_>, ProverError> {
        let rows = self.read_openings(openings)?;
        Ok(Box::new(move || Ok(rows)))
    }

    /// The sumcheck state: f, then its folds, and the weights w.
    type Sumcheck: SumcheckState<F, E>;

    /// [`commit`](Self::commit) of the first message, which then becomes the sumcheck's f
    /// (with w = 0): the claim phase evaluates it and the initial fold folds it in place.
    #[allow(clippy::type_complexity)]
    fn commit_message(&self, message: &[F], width: usize, log_inv_rate: usize)
        -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Self::Sumcheck), ProverError>;

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
    ) -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Self::Sumcheck), ProverError> {
        if order != VariableOrder::Suffix {
            return Err(ProverError::Input("this backend commits suffix-order messages only".into()));
        }
        let message = gather_blocks(blocks, block_len, block)?;
        self.commit_message(&message, width, log_inv_rate)
    }

    /// Encodes the sumcheck's current f (rows of 2^fold extension elements) at rate
    /// 2^-log_inv_rate and commits to it, as `commit` does its message.
    fn commit_folded(&self, sumcheck: &mut Self::Sumcheck, fold: usize, log_inv_rate: usize)
        -> Result<Committing<F, Self::Mmcs, Self::Committed>, ProverError>;

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
    ) -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        let _ = head;
        let (root, committed) = self.commit_folded(sumcheck, fold, log_inv_rate)?;
        Ok((root, committed, None))
    }

    /// The driver enters `step` of round `round` (for profiles; nothing by default).
    fn enter_step(&self, _round: usize, _step: Step) {}

    /// The challenger these steps continue a caller's duplex sponge on
    /// ([`device_transcript`](Self::device_transcript)).
    type Transcript: SpongeTranscript<F> + p3_challenger::CanObserve<RootOf<F, Self::Mmcs>>;

    /// A challenger of these steps that continues a duplex sponge from `words`, grinding and
    /// playing ahead where the data lies (the protocol hands it a caller's challenger's
    /// transcript: [`WhirChallenger::sponge_words`](crate::WhirChallenger::sponge_words)), or None
    /// where these steps play nothing ahead (the default: the protocol runs over the caller's
    /// challenger itself).
    fn device_transcript(&self, words: SpongeWords<F>) -> Option<Self::Transcript> {
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
    ) -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Self::Sumcheck), ProverError>;

    /// Commits the sumcheck's current f as a hiding round's oracle: rows of 2^fold extension
    /// elements in prefix order, `randomness` (limb-major, extension elements) as rows after
    /// them, at rate 2^-log_inv_rate of the message's rows (`dft_algebra_batch`).
    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<Committing<F, Self::Mmcs, Self::Committed>, ProverError>;

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
        head: Option<HidingRoundHead<'_, F, E, RootOf<F, Self::Mmcs>>>,
    ) -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
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

/// An error unless a backend hashing leaves with `hashed` makes the proofs of parameters asking
/// for `params` (a backend that hashes leaves with another hash than Poseidon2 passes).
pub(crate) fn check_leaf_sponge(hashed: Option<LeafSponge>, params: LeafSponge) -> Result<(), ProverError> {
    let Some(hashed) = hashed else {
        return Ok(());
    };
    if hashed != params {
        return Err(ProverError::Input(format!(
            "the parameters ask for Merkle leaves hashed with Poseidon2 of width {}, but this backend hashes them with width {} \
             (build the backend with that leaf sponge: `CpuBackend::hashing_leaves`, `GpuMerkle::with_wide_leaves`)",
            params.width(),
            hashed.width()
        )));
    }
    Ok(())
}

/// A backend by reference (a comparing backend over backends a test keeps).
impl<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>> Backend<F, E> for &S {
    type Committed = S::Committed;
    type Opening = S::Opening;
    type Sumcheck = S::Sumcheck;
    type Transcript = S::Transcript;
    type Mmcs = S::Mmcs;

    fn leaf_sponge(&self) -> Option<LeafSponge> {
        (**self).leaf_sponge()
    }
    fn mmcs(&self) -> S::Mmcs {
        (**self).mmcs()
    }

    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<Committing<F, Self::Mmcs, Self::Committed>, ProverError> {
        (**self).commit(message, width, log_inv_rate)
    }
    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError> {
        (**self).open(committed, indices)
    }
    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<OpenedRowsOf<F, Self::Mmcs>, ProverError> {
        (**self).read_openings(openings)
    }
    #[allow(clippy::type_complexity)]
    fn begin_reading_openings(
        &self,
        openings: Vec<Self::Opening>,
    ) -> Result<Box<dyn FnOnce() -> Result<OpenedRowsOf<F, Self::Mmcs>, ProverError> + '_>, ProverError> {
        (**self).begin_reading_openings(openings)
    }
    fn commit_message(
        &self,
        message: &[F],
        width: usize,
        log_inv_rate: usize,
    ) -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Self::Sumcheck), ProverError> {
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
    ) -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Self::Sumcheck), ProverError> {
        (**self).commit_message_blocks(blocks, block_len, width, log_inv_rate, order, block)
    }
    fn commit_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<Committing<F, Self::Mmcs, Self::Committed>, ProverError> {
        (**self).commit_folded(sumcheck, fold, log_inv_rate)
    }
    fn commit_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        fold: usize,
        log_inv_rate: usize,
        head: Option<&RoundHead<F>>,
    ) -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        (**self).commit_folded_with_head(sumcheck, fold, log_inv_rate, head)
    }
    fn enter_step(&self, round: usize, step: Step) {
        (**self).enter_step(round, step)
    }
    fn device_transcript(&self, words: SpongeWords<F>) -> Option<S::Transcript> {
        (**self).device_transcript(words)
    }
    fn commit_hiding_message(
        &self,
        poly: &[F],
        randomness: &[F],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Self::Sumcheck), ProverError> {
        (**self).commit_hiding_message(poly, randomness, fold, log_inv_rate)
    }
    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<Committing<F, Self::Mmcs, Self::Committed>, ProverError> {
        (**self).commit_hiding_folded(sumcheck, randomness, fold, log_inv_rate)
    }
    fn commit_hiding_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[E],
        fold: usize,
        log_inv_rate: usize,
        head: Option<HidingRoundHead<'_, F, E, RootOf<F, Self::Mmcs>>>,
    ) -> Result<(RootOf<F, Self::Mmcs>, Self::Committed, Option<PlayedHead<F, E>>), ProverError> {
        (**self).commit_hiding_folded_with_head(sumcheck, randomness, fold, log_inv_rate, head)
    }
}
