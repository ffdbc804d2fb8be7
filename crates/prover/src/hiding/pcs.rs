//! The hiding PCS: `p3_commit::MultilinearPcs` with the types and semantics of p3-whir's
//! `HidingWhirPcs` over the protocol's steps.

use std::sync::Mutex;

use crate::backend::GpuBackend;
use p3_challenger::CanObserve;
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_field::TwoAdicField;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_whir::transcript::zk::{observe_claims, observe_commitment};
use p3_whir::{HidingWhirPcs, ZkVerifierError, ZkWhirConfig};
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::{CryptoRng, SeedableRng};
use whir_gpu::GpuChallenger;
use whir_verifier::hash::CpuMmcs;

use super::MaskData;
use super::{commit_hiding, prove_hiding, Committed, HidingTimes, ZkProof};
use crate::backend::{Backend, CpuBackend, RootOf};
use crate::error::ProverError;
use crate::lookahead::SpongeTranscript;
use crate::options::DriverOptions;
use crate::rounds::device_transcript;
use crate::sumcheck::SumcheckState;
use crate::{ProverField, WhirChallenger, WhirExtension, EF};
use p3_baby_bear::BabyBear;

/// p3-whir's own hiding PCS over the CPU pieces: the verifier side of [`HidingPcs`], and the
/// reference its proofs equal.
pub type StockHidingPcs<F = BabyBear, E = EF<F>, C = GpuChallenger<F>, R = StdRng, M = CpuMmcs<F>> = HidingWhirPcs<E, F, Radix2DFTSmallBatch<F>, M, C, R>;
/// A hiding proof over the backend `S`'s MMCS with where its time went.
type TimedProof<F, E, S> = (ZkProof<F, E, <S as Backend<F, E>>::Mmcs>, HidingTimes);
/// p3-whir's hiding PCS hashing as the backend `S` does (its MMCS).
type StockOf<S, F, E, C> = StockHidingPcs<F, E, C, StdRng, <S as Backend<F, E>>::Mmcs>;

/// Zero-knowledge WHIR over the backend `S` (p3-whir's `HidingWhirPcs`, HVZK-WHIR): commits a
/// polynomial with randomness rows under its oracle, and opens it at the caller's points with
/// masked sumchecks, code-switching rounds and a masked base case, so the proof reveals nothing
/// of the polynomial beyond the claimed values. Built from a `ZkWhirConfig` and a generator as
/// `HidingWhirPcs::new` is, with its randomness discipline: each `commit` and each `open`
/// forks a `StdRng` from the caller's generator, and a call refused (a point of the wrong
/// arity, too many points for the budget) leaves the challenger and the generator untouched.
/// For the same generator, witness, points and challenger state its proof is
/// `HidingWhirPcs`'s, byte for byte (with a challenger that grinds deterministically, as the
/// GPU's does; Plonky3's `DuplexChallenger` grinds any witness), and p3-whir's verifier
/// accepts it.
pub struct HidingPcs<S: Backend<F, E>, F: ProverField = BabyBear, E: WhirExtension<F> = EF<F>, C = GpuChallenger<F>, R = StdRng> {
    config: ZkWhirConfig<E, F, C>,
    backend: S,
    rng: Mutex<R>,
    options: DriverOptions,
    stock: StockOf<S, F, E, C>,
}

/// The hiding PCS with every large step where the polynomial lies, on the GPU (its trees
/// Poseidon2's; `GpuHidingPcs<F, E, C, R, KeccakDigest>` hashes them with Keccak).
pub type GpuHidingPcs<F = BabyBear, E = EF<F>, C = GpuChallenger<F>, R = StdRng, D = [F; 8]> = HidingPcs<GpuBackend<F, D>, F, E, C, R>;

/// The same protocol over the plain-Rust backend (the reference twin).
pub type CpuHidingPcs<F = BabyBear, E = EF<F>, C = GpuChallenger<F>, R = StdRng> = HidingPcs<CpuBackend<F, E>, F, E, C, R>;

/// What a hiding commitment keeps until it is opened: the oracle, the polynomial as the
/// sumcheck's f (on the GPU for [`GpuHidingPcs`]) and its randomness rows.
pub struct HidingProverData<S: Backend<F, E>, F: ProverField = BabyBear, E: WhirExtension<F> = EF<F>> {
    inner: Committed<F, E, S>,
}

impl<S, F, E, C, R> HidingPcs<S, F, E, C, R>
where
    F: ProverField,
    E: WhirExtension<F> + TwoAdicField,
    S: Backend<F, E>,
    C: WhirChallenger<F> + CanObserve<RootOf<F, S::Mmcs>>,
    R: CryptoRng,
    StandardUniform: Distribution<E> + Distribution<F>,
    MaskData<F, E, S::Mmcs>: Send + Sync,
{
    /// As `HidingWhirPcs::new(config, dft, mmcs, rng)`: the configuration, the backend in place
    /// of the DFT and the MMCS (proofs hashed as the backend hashes, [`Backend::mmcs`]), and
    /// the generator every commit and open forks its masks from.
    pub fn new(config: ZkWhirConfig<E, F, C>, backend: S, rng: R) -> Self {
        // The verifier side draws nothing; its generator is never used.
        let stock = StockHidingPcs::new(config.clone(), Radix2DFTSmallBatch::default(), backend.mmcs(), StdRng::seed_from_u64(0));
        Self { config, backend, rng: Mutex::new(rng), options: DriverOptions::default(), stock }
    }

    /// How the backend's steps are played (of [`DriverOptions`], the hiding run reads
    /// `lazy_first_weights`: the default forms the first weights lazily from 2^24 cells).
    pub fn with_options(mut self, options: DriverOptions) -> Self {
        self.options = options;
        self
    }

    /// The configuration it proves with.
    pub fn config(&self) -> &ZkWhirConfig<E, F, C> {
        &self.config
    }

    /// The backend it proves with.
    pub fn backend(&self) -> &S {
        &self.backend
    }

    /// p3-whir's own hiding PCS for the same configuration, hashing as the backend does.
    pub fn stock(&self) -> &StockOf<S, F, E, C> {
        &self.stock
    }

    /// [`open`](MultilinearPcs::open), with where the time went.
    pub fn open_timed(&self, prover_data: HidingProverData<S, F, E>, points: Vec<Point<E>>, challenger: &mut C) -> Result<TimedProof<F, E, S>, ProverError> {
        let started = std::time::Instant::now();
        self.check_points(&points)?;
        let mut data = prover_data.inner;
        // The claimed values, where the polynomial lies; nothing is observed or drawn yet.
        let claims: Vec<(Point<E>, E)> = points.into_iter().map(|p| data.sumcheck.eval(&p).map(|v| (p, v))).collect::<Result<_, _>>()?;
        observe_claims::<F, E, _>(challenger, &claims, self.config.num_variables());
        let mut times = HidingTimes { claims: started.elapsed(), ..HidingTimes::default() };
        let mut rng = self.fork()?;
        // A caller's duplex sponge is played on by the backend's challenger, as the plain PCS does.
        let proof = match device_transcript(&self.backend, challenger) {
            Some(mut device) => {
                let played = prove_hiding(&self.backend, &self.config, data, &claims, &mut device, &mut rng, self.options, &mut times);
                challenger.resume(device.words());
                played?
            }
            None => prove_hiding(&self.backend, &self.config, data, &claims, challenger, &mut rng, self.options, &mut times)?,
        };
        Ok((proof, times))
    }

    /// A fresh `StdRng` forked from the caller's generator (32 bytes of it), as
    /// `HidingWhirPcs` forks one per call.
    fn fork(&self) -> Result<StdRng, ProverError> {
        let mut rng = self.rng.lock().map_err(|_| ProverError::Input("the hiding PCS's generator was poisoned by a panic in another thread".into()))?;
        Ok(StdRng::from_rng(&mut *rng))
    }

    /// Checks an opening before anything is drawn or observed: how many points the
    /// configuration's budget allows, each point's arity, and the configuration's grinding.
    fn check_points(&self, points: &[Point<E>]) -> Result<(), ProverError> {
        self.config
            .validate_initial_claims(points.len())
            .map_err(|e| ProverError::Params(format!("{} opening points: {e} (open fewer points, or raise the security budget)", points.len())))?;
        let n = self.config.num_variables();
        if let Some((i, p)) = points.iter().enumerate().find(|(_, p)| p.num_variables() != n) {
            return Err(ProverError::Input(format!("opening point {i} has {} coordinates; the committed polynomial has {n} variables", p.num_variables())));
        }
        let pow_bits = self.config.max_pow_bits().max(self.config.base_case_config().pow_bits);
        if pow_bits > whir_verifier::MAX_POW_BITS {
            return Err(ProverError::Params(format!(
                "the configuration grinds {pow_bits} bits of proof of work, over the {} a witness can clear (lower the security level or raise the rate)",
                whir_verifier::MAX_POW_BITS
            )));
        }
        Ok(())
    }
}

impl<S, F, E, C, R> MultilinearPcs<E, C> for HidingPcs<S, F, E, C, R>
where
    F: ProverField,
    E: WhirExtension<F> + TwoAdicField,
    S: Backend<F, E>,
    C: WhirChallenger<F> + CanObserve<RootOf<F, S::Mmcs>>,
    R: CryptoRng,
    StandardUniform: Distribution<E> + Distribution<F>,
    MaskData<F, E, S::Mmcs>: Send + Sync,
{
    type Commitment = RootOf<F, S::Mmcs>;
    type Val = F;
    type ProverData = HidingProverData<S, F, E>;
    type Proof = ZkProof<F, E, S::Mmcs>;
    type Error = ZkVerifierError;
    type ProverError = ProverError;
    type Witness = Poly<F>;
    type OpeningProtocol = Vec<Point<E>>;

    fn num_vars(&self) -> usize {
        self.config.num_variables()
    }

    fn commit(&self, witness: Self::Witness, challenger: &mut C) -> Result<(Self::Commitment, Self::ProverData), Self::ProverError> {
        let n = self.config.num_variables();
        if witness.num_variables() != n {
            return Err(ProverError::Input(format!("a witness of {} variables for a configuration of {n}", witness.num_variables())));
        }
        let mut rng = self.fork()?;
        let (root, inner) = commit_hiding(&self.backend, &self.config, witness.as_slice(), &mut rng)?;
        drop(witness);
        self.observe_commitment(&root, challenger);
        Ok((root, HidingProverData { inner }))
    }

    fn observe_commitment(&self, commitment: &Self::Commitment, challenger: &mut C) {
        observe_commitment::<F, _, _>(challenger, commitment.clone());
    }

    fn open(&self, prover_data: Self::ProverData, protocol: Self::OpeningProtocol, challenger: &mut C) -> Result<Self::Proof, Self::ProverError> {
        self.open_timed(prover_data, protocol, challenger).map(|(proof, _)| proof)
    }

    fn verify(&self, commitment: &Self::Commitment, proof: &Self::Proof, challenger: &mut C, protocol: Self::OpeningProtocol) -> Result<(), Self::Error> {
        self.stock.verify(commitment, proof, challenger, protocol)
    }
}
