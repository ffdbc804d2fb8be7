//! WHIR as a Plonky3 PCS over a backend: [`WhirPcs`] implements
//! `p3_commit::MultilinearPcs` and `p3_sumcheck::PrescribedPointPcs` with the types and the
//! semantics of p3-whir's `WhirProver` over either layout (`SuffixProver`, the default, or
//! `PrefixProver`), so a stack that proves with `WhirProver` switches by changing one type: [`GpuWhirPcs`] encodes, commits,
//! plays the claim phase and the whole WHIR run where the stacked polynomial lies, and gives the
//! same proof bytes (smallest-witness grinding on both sides). The caller owns the challenger
//! between `commit` and `open`; `commit` binds the root and nothing else.

use std::sync::Arc;

use crate::backend::GpuBackend;
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_multilinear_util::point::Point;
use p3_sumcheck::layout::{observe_commitment, Layout, Witness};
use p3_sumcheck::strategy::VariableOrder;
use p3_sumcheck::{OpeningEvals, OpeningProtocol, PrescribedOpeningSecurity, PrescribedPointPcs};
use p3_whir::parameters::WhirConfig;
use p3_whir::{PcsProof, WhirProver};
use whir_gpu::GpuChallenger;
use whir_verifier::hash::CpuMmcs;

use crate::backend::{Backend, CommitmentOf, CpuBackend};
use crate::breakdown::DriverTimes;
use crate::claims::{Points, Stacking};
use crate::error::ProverError;
use crate::lookahead::SpongeTranscript;
use crate::options::DriverOptions;
use crate::protocol::{open_with_backend, StepClock};
use crate::rounds::device_transcript;
use crate::rounds::Opened;
use crate::sumcheck::SumcheckState;
use crate::{ProverField, ProverLayout, WhirChallenger, WhirExtension, EF};
use p3_baby_bear::BabyBear;
use p3_challenger::CanObserve;

/// p3-whir's own prover over the CPU pieces, in layout `L`, over the challenger `C`: the
/// verifier side of [`WhirPcs`].
pub type StockPcs<L = ProverLayout, F = BabyBear, E = EF<F>, C = GpuChallenger<F>> = WhirProver<E, F, Radix2DFTSmallBatch<F>, CpuMmcs<F>, C, L>;

/// The proof: p3-whir's `PcsProof` (the same bytes as `WhirProver`'s), over the MMCS `M`
/// (Poseidon2's `CpuMmcs` by default).
pub type WhirPcsProof<F = BabyBear, E = EF<F>, M = CpuMmcs<F>> = PcsProof<F, E, M>;

/// p3-whir's own prover over the CPU DFT and the MMCS of the backend `S`.
type StockOf<S, L, F, E, C> = WhirProver<E, F, Radix2DFTSmallBatch<F>, <S as Backend<F, E>>::Mmcs, C, L>;

/// WHIR over p3-sumcheck's layout `L` (`SuffixProver` or `PrefixProver`) of any number of
/// tables, on the backend `S`, over the challenger `C` (any [`WhirChallenger`]: the
/// GPU's by default, whose transcript steps the driver plays ahead on the device; Plonky3's own
/// `DuplexChallenger`, every step on the host; configured with `WhirConfig<E, F, C>` as
/// `WhirProver` is). In the prefix layout the stacked polynomial is held at
/// bit-reversed indices (the backend's `with_reversed_indices`), so that the rounds, which bind
/// the table's last variable, bind its first.
pub struct WhirPcs<S: Backend<F, E>, L = ProverLayout, F: ProverField = BabyBear, E: WhirExtension<F> = EF<F>, C = GpuChallenger<F>> {
    config: WhirConfig<E, F, C>,
    backend: S,
    options: DriverOptions,
    stock: StockOf<S, L, F, E, C>,
}

/// The GPU PCS: every step where the stacked polynomial lies (over the challenger `C`).
pub type GpuWhirPcs<L = ProverLayout, F = BabyBear, C = GpuChallenger<F>> = WhirPcs<GpuBackend<F>, L, F, EF<F>, C>;

/// The GPU PCS over Plonky3's Keccak configuration (its trees hashed with Keccak, digests
/// `[u64; 4]`; [`GpuProver::keccak_pcs_over`](crate::GpuProver::keccak_pcs_over)), over a
/// Keccak challenger `C` (e.g. `SerializingChallenger32<F, GpuKeccakHash<F>>`).
pub type GpuKeccakWhirPcs<L, F, E, C> = WhirPcs<GpuBackend<F, whir_gpu::KeccakDigest>, L, F, E, C>;

/// The same protocol on the plain-Rust backend (the reference twin).
pub type CpuWhirPcs<L = ProverLayout, F = BabyBear, E = EF<F>, C = GpuChallenger<F>> = WhirPcs<CpuBackend<F, E>, L, F, E, C>;

impl<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>, L: Layout<F, E>, C: WhirChallenger<F> + CanObserve<CommitmentOf<F, E, S>>> WhirPcs<S, L, F, E, C> {
    /// As `WhirProver::new(config, dft, mmcs)`: the configuration, and the backend in place of the
    /// DFT and the MMCS (the proofs use Plonky3's `MerkleTreeMmcs` format, hashed as the backend
    /// hashes: [`Backend::mmcs`], its constants and leaf sponge, which `verify` checks with).
    pub fn new(config: WhirConfig<E, F, C>, backend: S) -> Self {
        let stock = StockOf::<S, L, F, E, C>::new(config.clone(), Radix2DFTSmallBatch::default(), backend.mmcs());
        Self { config, backend, options: DriverOptions::default(), stock }
    }

    /// How the driver plays the transcript (the defaults: every step played ahead where it can).
    pub fn with_options(mut self, options: DriverOptions) -> Self {
        self.options = options;
        self
    }

    /// The configuration it proves with.
    pub fn config(&self) -> &WhirConfig<E, F, C> {
        &self.config
    }

    /// The backend it proves with.
    pub fn backend(&self) -> &S {
        &self.backend
    }

    /// p3-whir's own prover and verifier for the same configuration and layout.
    pub fn stock(&self) -> &StockOf<S, L, F, E, C> {
        &self.stock
    }

    /// [`open`](MultilinearPcs::open) or [`open_at`](PrescribedPointPcs::open_at), with where the
    /// time went.
    #[allow(clippy::type_complexity)]
    pub fn open_timed(
        &self,
        data: WhirPcsData<S, F, E>,
        protocol: &OpeningProtocol,
        points: Option<&[Point<E>]>,
        challenger: &mut C,
    ) -> Result<(WhirPcsProof<F, E, S::Mmcs>, DriverTimes), ProverError> {
        let started = std::time::Instant::now();
        let WhirPcsData { codeword, sumcheck, stacking } = data;
        // A clone of the data shares its f: this opening folds a copy.
        let sumcheck = Arc::try_unwrap(sumcheck).or_else(|shared| shared.duplicate())?;
        let points = points.map_or(Points::Drawn, Points::Given);
        let opened = Opened { codeword, sumcheck, stacking: &stacking };
        // A caller's duplex sponge (Plonky3's `DuplexChallenger`) is played on by the backend's
        // challenger over the same sponge, which grinds and plays ahead on the device, and
        // handed back in the state its own run would leave.
        let (proof, counts, clock) = match device_transcript(&self.backend, challenger) {
            Some(mut device) => {
                let mut clock = StepClock::new(&device);
                let played = open_with_backend(&self.backend, &self.config, opened, protocol, points, &mut device, self.options, &mut clock);
                challenger.resume(device.words());
                let (proof, counts) = played?;
                (proof, counts, clock)
            }
            None => {
                let mut clock = StepClock::new(challenger);
                let (proof, counts) = open_with_backend(&self.backend, &self.config, opened, protocol, points, challenger, self.options, &mut clock)?;
                (proof, counts, clock)
            }
        };
        Ok((proof, DriverTimes::from_breakdown(clock.finish(), Default::default(), started.elapsed(), counts)))
    }
}

/// What a commitment keeps until it is opened: the committed codeword and the stacked
/// polynomial as the sumcheck's f (resident on the GPU for [`GpuWhirPcs`]), with where the tables
/// lie in it. A clone shares them (no re-encoding; an opening of a shared one folds a copy of f);
/// the memory goes back when the last one is dropped or opened.
pub struct WhirPcsData<S: Backend<F, E>, F: ProverField = BabyBear, E: WhirExtension<F> = EF<F>> {
    codeword: Arc<S::Committed>,
    sumcheck: Arc<S::Sumcheck>,
    stacking: Arc<Stacking>,
}

impl<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>> Clone for WhirPcsData<S, F, E> {
    fn clone(&self) -> Self {
        Self { codeword: self.codeword.clone(), sumcheck: self.sumcheck.clone(), stacking: self.stacking.clone() }
    }
}

impl<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>> WhirPcsData<S, F, E> {
    /// Where the committed tables lie in the stacked polynomial.
    pub fn stacking(&self) -> &Stacking {
        &self.stacking
    }
}

impl<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>, L: Layout<F, E>, C: WhirChallenger<F> + CanObserve<CommitmentOf<F, E, S>>> MultilinearPcs<E, C>
    for WhirPcs<S, L, F, E, C>
{
    type Val = F;
    type Commitment = CommitmentOf<F, E, S>;
    type ProverData = WhirPcsData<S, F, E>;
    type Proof = WhirPcsProof<F, E, S::Mmcs>;
    type Error = p3_whir::pcs::verifier::errors::VerifierError;
    type ProverError = ProverError;
    type Witness = Witness<F>;
    type OpeningProtocol = OpeningProtocol;

    fn num_vars(&self) -> usize {
        self.config.num_variables()
    }

    /// The witness's columns are handed to the backend where they lie, as blocks of the stacked
    /// polynomial (no stacked copy on the host: in the suffix layout the blocks are its
    /// message; in the prefix layout they are the polynomial at bit-reversed indices, each
    /// column one slot read bit-reversed, and the backend reorders them into the message), encoded
    /// and committed; the root is observed, and nothing else. A witness of either constructor
    /// (`Witness::new` or `new_interleaved`) is committed in this PCS's layout: only its tables
    /// are read.
    fn commit(&self, witness: Witness<F>, challenger: &mut C) -> Result<(CommitmentOf<F, E, S>, WhirPcsData<S, F, E>), ProverError> {
        let n = self.config.num_variables();
        if witness.num_variables() != n {
            return Err(ProverError::Input(format!(
                "a witness of {} stacked variables for a configuration of {n} (the tables' cells, padded to a power of two, must number 2^{n})",
                witness.num_variables()
            )));
        }
        let fold0 = self.config.round_folding_factor(0);
        let stacking = Stacking::for_layout::<F, E, L>(witness.table_shapes());
        let order = stacking.variable_order();
        // The columns where they lie (p3-sumcheck's suffix layout: each column one slot of the
        // stacked message, back to back, largest tables first; zeros after the last), handed to
        // the backend in blocks of the smallest slot, not gathered into a message first. (The
        // suffix layout's prover reads the tables alone, whichever constructor made the witness.)
        let layout = <ProverLayout<F, E> as Layout<F, E>>::from_witness(witness);
        let mut slots: Vec<(usize, &[F])> = Vec::new();
        for (t, shape) in stacking.shapes().iter().enumerate() {
            let offsets = stacking.offsets(t, &(0..shape.width()).collect::<Vec<_>>())?;
            slots.extend(offsets.into_iter().zip(layout.table(t).iter_polys()));
        }
        slots.sort_unstable_by_key(|&(offset, _)| offset);
        let smallest = slots.iter().map(|(_, c)| c.len()).min().unwrap_or(1 << n);
        // Bit-reversed slots are gathered block by block: blocks of at most 2^12 values.
        let block_len = if order == VariableOrder::Prefix { smallest.min(1 << 12) } else { smallest };
        if slots.iter().any(|&(o, c)| !c.len().is_power_of_two() || o % block_len != 0 || o + c.len() > 1 << n) {
            return Err(ProverError::Input("the witness's columns do not tile its stacked polynomial".into()));
        }
        let zeros = F::zero_vec(block_len);
        let block = |b: usize, write: &mut dyn FnMut(&[F])| {
            let start = b * block_len;
            let at = slots.partition_point(|&(o, _)| o <= start);
            match at.checked_sub(1).map(|i| slots[i]) {
                Some((o, column)) if start < o + column.len() => match order {
                    VariableOrder::Suffix => write(&column[start - o..start - o + block_len]),
                    VariableOrder::Prefix => {
                        let bits = column.len().trailing_zeros() as usize;
                        let gathered: Vec<F> = (start - o..start - o + block_len).map(|i| column[crate::sumcheck::reverse_low_bits(i, bits)]).collect();
                        write(&gathered)
                    }
                },
                _ => write(&zeros),
            }
        };
        let (root, codeword, sumcheck) =
            self.backend.commit_message_blocks((1 << n) / block_len, block_len, 1 << fold0, self.config.starting_log_inv_rate, order, &block)?;
        drop(layout);
        self.observe_commitment(&root, challenger);
        Ok((root, WhirPcsData { codeword: Arc::new(codeword), sumcheck: Arc::new(sumcheck), stacking: Arc::new(stacking) }))
    }

    fn observe_commitment(&self, commitment: &CommitmentOf<F, E, S>, challenger: &mut C) {
        observe_commitment::<F, _, _>(challenger, commitment.clone());
    }

    fn open(&self, data: WhirPcsData<S, F, E>, protocol: OpeningProtocol, challenger: &mut C) -> Result<WhirPcsProof<F, E, S::Mmcs>, ProverError> {
        self.open_timed(data, &protocol, None, challenger).map(|(proof, _)| proof)
    }

    fn verify(
        &self,
        commitment: &CommitmentOf<F, E, S>,
        proof: &WhirPcsProof<F, E, S::Mmcs>,
        challenger: &mut C,
        protocol: OpeningProtocol,
    ) -> Result<(), Self::Error> {
        self.stock.verify(commitment, proof, challenger, protocol)
    }
}

impl<F: ProverField, E: WhirExtension<F>, S: Backend<F, E>, L: Layout<F, E>, C: WhirChallenger<F> + CanObserve<CommitmentOf<F, E, S>>> PrescribedPointPcs<E, C>
    for WhirPcs<S, L, F, E, C>
{
    fn prescribed_security(&self, protocol: &OpeningProtocol) -> Option<PrescribedOpeningSecurity> {
        self.stock.prescribed_security(protocol)
    }

    fn open_at(
        &self,
        data: WhirPcsData<S, F, E>,
        protocol: &OpeningProtocol,
        points: &[Point<E>],
        challenger: &mut C,
    ) -> Result<WhirPcsProof<F, E, S::Mmcs>, ProverError> {
        self.open_timed(data, protocol, Some(points), challenger).map(|(proof, _)| proof)
    }

    fn verify_at(
        &self,
        commitment: &CommitmentOf<F, E, S>,
        proof: &WhirPcsProof<F, E, S::Mmcs>,
        protocol: &OpeningProtocol,
        points: &[Point<E>],
        challenger: &mut C,
    ) -> Result<Vec<OpeningEvals<E>>, Self::Error> {
        self.stock.verify_at(commitment, proof, protocol, points, challenger)
    }
}
