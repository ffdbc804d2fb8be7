//! The provers a user picks: [`CpuProver`] (Plonky3 on the host) and [`GpuProver`] (one GPU
//! context, its pieces, its resident prover and its PCSs), and [`Plonky3Pieces`], what both hand
//! out for Plonky3's own `WhirProver` (a code, an MMCS, a challenger). `Plonky3Pieces::prove`
//! runs `WhirProver` over those pieces by default; the GPU prover overrides it with the resident
//! protocol over the [`GpuBackend`](crate::backend::GpuBackend).

use crate::backend::GpuBackend;
use std::sync::Arc;
use std::time::{Duration, Instant};

use p3_baby_bear::BabyBear;
use p3_commit::{Mmcs, MultilinearPcs};
use p3_dft::Radix2DFTSmallBatch;
use p3_matrix::dense::RowMajorMatrix;
use p3_merkle_tree::PrunedMerklePaths;
use p3_sumcheck::layout::{Layout, Table};
use p3_whir::{WhirDomain, WhirProver};
use whir_gpu::{
    profile::TransferCounts, GpuChallenger, GpuContext, GpuDft, GpuGrinder, GpuMerkle, GpuMmcs, GpuNtt, GpuPoseidon2, GpuTuning, Poseidon2Constants,
};
use whir_verifier::hash::{CpuMmcs, LeafSponge};

use crate::breakdown::RoundBreakdown;
use crate::error::ProverError;
use crate::options::DriverOptions;
use crate::protocol::prove_with_backend;
use crate::timing::{PhaseClock, PhaseTimes, TimedDomain, TimedMmcs};
use crate::Params;
use crate::{Commitment, GpuWhirDomain, GpuWhirPcs, ProofFileOf, ProverField, ProverLayout, EF};
use whir_verifier::opening_protocol;

/// What a prove call returns.
#[derive(Clone, Debug)]
pub struct ProverOutput<F: ProverField = BabyBear> {
    /// The Merkle root of the committed codeword.
    pub commitment: Commitment<F>,
    /// postcard-serialized `p3_whir::PcsProof`.
    pub proof: Vec<u8>,
    /// Wall time of the commit phase (encode + Merkle tree).
    pub commit_time: Duration,
    /// Wall time of the opening phase (OOD, sumcheck, PoW, queries, later rounds' commits).
    pub open_time: Duration,
    /// Encode, Merkle and PoW time over both phases; the rest is sumcheck and transcript work.
    pub phases: PhaseTimes,
    /// Host <-> GPU traffic of this proof (GPU backends).
    pub transfers: Option<TransferCounts>,
    /// Which path made the proof: "cpu", "gpu" (resident driver), "gpu-pieces", or "cpu
    /// (fallback)" after a GPU failure.
    pub path: &'static str,
    /// Every step of every round (resident driver), with GPU times when profiled.
    pub breakdown: Option<RoundBreakdown>,
    /// High-water mark of the device's buffer memory during the proof (GPU backends, where
    /// the wgpu backend counts it): pools, staging and every resident buffer included.
    pub peak_gpu_bytes: Option<u64>,
}

impl<F: ProverField> ProverOutput<F> {
    /// Commit and open together.
    pub fn total(&self) -> Duration {
        self.commit_time + self.open_time
    }

    /// Time outside encode, Merkle and PoW: sumcheck, folding, OOD and transcript work.
    pub fn sumcheck_and_other(&self) -> Duration {
        self.total().saturating_sub(self.phases.codewords() + self.phases.pow)
    }

    /// The proof as a proof file for `params`, the parameters it was made with.
    pub fn proof_file(&self, params: &Params) -> ProofFileOf<F> {
        ProofFileOf::new(params, self.commitment.clone(), self.proof.clone())
    }
}

/// The pieces Plonky3's `WhirProver` proves with — its code, its MMCS, its challenger — and a
/// proof of one polynomial (by default `WhirProver` over those pieces), over the field `F`.
pub trait Plonky3Pieces<F: ProverField = BabyBear> {
    /// The Reed–Solomon code and query map.
    type Domain: WhirDomain<F, EF<F>>;
    /// The Merkle commitment scheme (proofs in Plonky3's `MerkleTreeMmcs` format).
    type Mmcs: Mmcs<F, Commitment = Commitment<F>, MultiProof = PrunedMerklePaths<F, 8>> + Clone + Sync;

    /// The prover's name, as outputs give it (`cpu`, `gpu`, `gpu-pieces`).
    fn name(&self) -> &'static str;
    /// The code Plonky3's prover encodes with.
    fn domain(&self) -> Self::Domain;
    /// The MMCS, its leaves hashed by `leaf` (a proof's `Params::leaf`).
    fn mmcs(&self, leaf: LeafSponge) -> Self::Mmcs;
    /// A fresh transcript (its grinder returns the smallest witness).
    fn challenger(&self) -> GpuChallenger<F>;

    /// Commits to the 2^n evaluations `evals` and opens them at `params.points` points. The
    /// default runs Plonky3's own `WhirProver` with this prover's pieces.
    fn prove(&self, params: &Params, evals: &[F]) -> Result<ProverOutput<F>, ProverError>
    where
        Self: Sized,
    {
        prove_with_pieces(self, params, evals)
    }
}

/// Plonky3's `WhirProver` with `prover`'s domain, MMCS and challenger, timed per phase.
pub fn prove_with_pieces<F: ProverField, B: Plonky3Pieces<F>>(prover: &B, params: &Params, evals: &[F]) -> Result<ProverOutput<F>, ProverError> {
    prove_with_parts::<F, EF<F>, _, _>(prover.domain(), prover.mmcs(params.leaf), prover.challenger(), prover.name(), params, evals)
}

/// Plonky3's `WhirProver` over `F` with its challenges in `E`, from a domain, an MMCS and a
/// challenger, timed per phase; `path` names it in the output.
fn prove_with_parts<F, E, D, M>(
    domain: D,
    mmcs: M,
    mut challenger: GpuChallenger<F>,
    path: &'static str,
    params: &Params,
    evals: &[F],
) -> Result<ProverOutput<F>, ProverError>
where
    F: ProverField,
    E: crate::WhirExtension<F>,
    D: WhirDomain<F, E>,
    M: Mmcs<F, Commitment = Commitment<F>, MultiProof = PrunedMerklePaths<F, 8>> + Clone + Sync,
{
    let config = params.config_over::<E, GpuChallenger<F>>()?;
    if evals.len() != 1usize << params.num_vars {
        return Err(ProverError::Input(format!("{} evaluations given for n = {} (need 2^n)", evals.len(), params.num_vars)));
    }
    let clock = PhaseClock::default();
    let domain = TimedDomain { inner: domain, clock: clock.clone() };
    let mmcs = TimedMmcs { inner: mmcs, clock: clock.clone() };
    let pcs = WhirProver::<E, F, TimedDomain<D>, TimedMmcs<M>, GpuChallenger<F>, ProverLayout<F, E>>::new(config, domain, mmcs);
    let witness = ProverLayout::<F, E>::new_witness(vec![Table::new(RowMajorMatrix::new(evals.to_vec(), evals.len()))], params.fold);
    let start = Instant::now();
    let (commitment, data) = pcs.commit(witness, &mut challenger).map_err(|e| ProverError::Params(e.to_string()))?;
    let commit_time = start.elapsed();
    let start = Instant::now();
    let proof = pcs.open(data, opening_protocol(params), &mut challenger).map_err(|e| ProverError::Params(e.to_string()))?;
    let open_time = start.elapsed();
    let proof = postcard::to_allocvec(&proof).map_err(|e| ProverError::Proof(whir_verifier::ProofError::ProofFile(e.to_string())))?;
    let phases = PhaseTimes { pow: challenger.pow_time(), ..clock.times() };
    Ok(ProverOutput { commitment, proof, commit_time, open_time, phases, transfers: None, path, breakdown: None, peak_gpu_bytes: None })
}

/// A fresh transcript over `F`'s default Poseidon2 (Plonky3's constants), grinding on
/// `grinder` where given.
pub(crate) fn new_challenger<F: ProverField>(grinder: Option<Arc<GpuGrinder<F>>>) -> GpuChallenger<F> {
    GpuChallenger::new(Poseidon2Constants::<F>::plonky3_default().to_cpu(), grinder)
}

/// Plonky3 on the CPU: `Radix2DFTSmallBatch`, `MerkleTreeMmcs`, the smallest-witness CPU grinder.
#[derive(Clone, Default)]
pub struct CpuProver;

impl CpuProver {
    /// [`Plonky3Pieces::prove`] with the challenges in any extension `E` of `F` (degree 4, 5 or 8).
    pub fn prove_over<F: ProverField, E: crate::WhirExtension<F>>(&self, params: &Params, evals: &[F]) -> Result<ProverOutput<F>, ProverError> {
        prove_with_parts::<F, E, _, _>(
            Radix2DFTSmallBatch::<F>::default(),
            whir_verifier::hash::cpu_mmcs_with::<F>(0, params.leaf),
            new_challenger::<F>(None),
            "cpu",
            params,
            evals,
        )
    }
}

impl<F: ProverField> Plonky3Pieces<F> for CpuProver {
    type Domain = Radix2DFTSmallBatch<F>;
    type Mmcs = CpuMmcs<F>;

    fn name(&self) -> &'static str {
        "cpu"
    }
    fn domain(&self) -> Self::Domain {
        Radix2DFTSmallBatch::default()
    }
    fn mmcs(&self, leaf: LeafSponge) -> Self::Mmcs {
        whir_verifier::hash::cpu_mmcs_with::<F>(0, leaf)
    }
    fn challenger(&self) -> GpuChallenger<F> {
        new_challenger::<F>(None)
    }
}

/// How [`GpuProver`] proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuMode {
    /// Our driver (`driver.rs`) with everything resident on the GPU: each codeword is encoded
    /// and committed with one wait and stays there, and so do the sumcheck's tables
    /// (folding, weights, evaluations, rounds); only roots, round coefficients, answers, PoW
    /// witnesses and the openings come back.
    Resident,
    /// Plonky3's `WhirProver` with our GPU encoder, MMCS and grinder (the reference path: every
    /// codeword crosses the bus to the host and back).
    Pieces,
}

/// GPU memory a resident proof of `params` holds at its peak (live buffers, idle pools not
/// counted): the first codeword's bytes times a factor by fold, from the measured peaks rounded
/// up, plus 16 MiB of tables and small buffers. From n = 24 to 26 the lean peaks (lazy first
/// weights, trimmed narrow trees; docs/benchmarks-history.md, "Memory-lean resident proofs");
/// elsewhere the earlier peaks (split codewords from n = 27 keep whole trees).
/// `tuning` is the context's and `driver` the driver's: the lean figures hold with their
/// memory-lean defaults (lazy first weights, trimmed narrow trees).
pub fn estimated_gpu_bytes(params: &Params, tuning: &GpuTuning, driver: &DriverOptions) -> u64 {
    estimated_gpu_bytes_over(params, tuning, driver, 4)
}

/// [`estimated_gpu_bytes`] with the challenges in an extension of `ext_words` words (4, 5 or 8).
/// Degree 8 doubles the extension-valued buffers (the sumcheck's tables, the later codewords)
/// and leaves the base-field ones: twice the degree-4 estimate bounds it (the high-water marks:
/// docs/benchmarks-history.md, seventeenth session).
pub fn estimated_gpu_bytes_over(params: &Params, tuning: &GpuTuning, driver: &DriverOptions, ext_words: usize) -> u64 {
    let codeword = 4u64.checked_shl((params.num_vars + params.log_inv_rate) as u32).unwrap_or(u64::MAX);
    let lean_defaults = driver.lazy_first_weights != Some(false) && tuning.codeword_tree_lowest.is_none();
    let lean = (24..=26).contains(&params.num_vars) && lean_defaults;
    let factor = match (params.fold, lean) {
        (0 | 1, true) => 9,
        (2 | 3, true) => 7,
        (_, true) => 5,
        (0 | 1, false) => 15,
        (2, false) => 11,
        (3, false) => 9,
        (_, false) => 7,
    };
    let bytes = codeword.saturating_mul(factor).saturating_add(16 << 20);
    if ext_words > 4 {
        bytes.saturating_mul(2)
    } else {
        bytes
    }
}

/// Host memory a CPU proof of `params` holds at its peak: Plonky3's `WhirProver` (the CPU
/// backend's, and the PCS's on the CPU) over the extension `E`, with the proof file written and
/// verified before it is kept; `tables` for a multi-table witness. An upper bound fitted to peaks
/// measured with `/usr/bin/time` (n = 12 to 20, fold 1 to 14, rate 1 and 3, degrees 4, 5 and 8;
/// docs/benchmarks-history.md, "CPU prover memory"), with a quarter more for headroom. Its terms:
/// - the first codeword (4 bytes x 2^(n + rate)) times 2.5, and the later rounds' codewords,
///   extension-valued, times 14 / fold at degree 4 (fewer, larger folds commit less);
/// - the sumcheck's extension-valued tables, 2 / fold times 2^n extension elements;
/// - the first round's small-value sumcheck, whose grids hold about six times 3^fold extension
///   elements (this term makes large folds infeasible: 3^16 elements are 0.8 GB at degree 4);
/// - the proof, at most [`ProofFileOf::max_bytes`], held as a proof, its bytes and a file, and
///   verified in 8 MiB + 8 times the file's bytes.
pub fn estimated_cpu_bytes<F: ProverField, E: crate::WhirExtension<F>>(params: &Params, tables: Option<&crate::Workload>) -> Result<u64, ProverError> {
    let proof = match tables {
        Some(t) => ProofFileOf::<F, E>::max_bytes_tables(params, t)?,
        None => ProofFileOf::<F, E>::max_bytes(params)?,
    } as f64;
    let ef = (E::DIMENSION * 4) as f64;
    let (n, rate, fold) = (params.num_vars as i32, params.log_inv_rate as i32, params.fold as i32);
    let codeword = 4.0 * 2f64.powi(n + rate);
    let later_rounds = 14.0 / fold as f64 * ef / 16.0;
    let sumcheck = 2.0 / fold as f64 * 2f64.powi(n) * ef;
    let small_value_grids = 6.0 * 3f64.powi(fold) * ef;
    let runtime = 24.0 * (1u64 << 20) as f64;
    let bytes = 1.25 * (runtime + (2.5 + later_rounds) * codeword + sumcheck + small_value_grids + 12.0 * proof + (8u64 << 20) as f64);
    Ok(if bytes >= u64::MAX as f64 { u64::MAX } else { bytes as u64 })
}

/// Host memory CPU proofs may take: a budget in bytes, and where it came from (a flag, what
/// the machine has), for messages. The caller decides it (`whir` reads the machine at its edge);
/// [`check`](Self::check) refuses a CPU proof estimated not to fit, before anything is allocated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostMemory {
    /// The budget.
    pub bytes: u64,
    /// What the budget is, as the message says it: "budget (--memory 4096)", ...
    pub source: String,
}

impl HostMemory {
    /// An error unless a CPU proof of `params` over `E` (of `tables`, where given) fits:
    /// [`estimated_cpu_bytes`] against the budget.
    pub fn check<F: ProverField, E: crate::WhirExtension<F>>(&self, params: &Params, tables: Option<&crate::Workload>) -> Result<(), ProverError> {
        let needed = estimated_cpu_bytes::<F, E>(params, tables)?;
        if needed <= self.bytes {
            return Ok(());
        }
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let what = match tables {
            Some(t) => format!(
                "a CPU proof of {} table{} at fold {}, rate 2^-{} (stacked to n = {})",
                t.tables.len(),
                if t.tables.len() == 1 { "" } else { "s" },
                params.fold,
                params.log_inv_rate,
                params.num_vars
            ),
            None => format!("a CPU proof at n = {}, fold {}, rate 2^-{}", params.num_vars, params.fold, params.log_inv_rate),
        };
        // Past fold 12 the first round's sumcheck grids (3^fold) are most of it.
        let hint = if params.fold > 12 {
            "use a smaller --fold (the CPU prover's first round holds about 6 x 3^fold extension elements), prove on a GPU, or give a larger --memory if the machine has more"
        } else {
            "use fewer variables or a lower --rate, prove on a GPU (--backend gpu), or give a larger --memory if the machine has more"
        };
        Err(ProverError::OverMemory { what, needed_mib: mib(needed), budget_mib: mib(self.bytes), budget: self.source.clone(), hint: hint.into() })
    }
}

/// whir-gpu: GPU NTT encoder, GPU Merkle trees, GPU grinding.
#[derive(Clone)]
pub struct GpuProver<F: ProverField = BabyBear> {
    ntt: Arc<GpuNtt>,
    merkle: Arc<GpuMerkle<F>>,
    /// The same with leaves hashed by Poseidon2 of width 24 (`LeafSponge::Width24`).
    wide_merkle: Arc<GpuMerkle<F>>,
    grinder: Arc<GpuGrinder<F>>,
    mode: GpuMode,
    /// Time every submission of a resident proof on the GPU (timestamp queries).
    profile: bool,
    /// How the resident driver plays the transcript.
    driver: DriverOptions,
    /// Each proof starts the context's memory high-water mark afresh (its own peak); off for a
    /// [`worker`](Self::worker), whose proofs share the context with others in flight.
    own_peak: bool,
    /// The host memory a proof made on the CPU after a GPU failure may take (none: not checked).
    fallback_memory: Option<HostMemory>,
}

impl GpuProver {
    /// A BabyBear prover on `ctx`.
    pub fn new(ctx: Arc<GpuContext>) -> Self {
        Self::over(ctx)
    }

    /// With the environment's settings: the context's ([`whir_gpu::GpuOptions::from_env`]: `WHIR_ADAPTER`
    /// or the high-performance adapter, `WHIR_LIMITS`, ...) and the driver's
    /// ([`DriverOptions::from_env`]).
    pub fn open_default() -> Result<Self, ProverError> {
        Ok(Self::new(Arc::new(GpuContext::new_default()?)).with_driver_options(DriverOptions::from_env()?))
    }

    /// On a context made with `options` (adapter, limits profile, memory budget, ...).
    pub fn open(options: whir_gpu::GpuOptions) -> Result<Self, ProverError> {
        Ok(Self::new(Arc::new(GpuContext::new(options)?)))
    }

    /// A prover on each of `queues` queues of one device of the adapter `options` names
    /// ([`GpuContext::on_queues`]: the budget shared out between them).
    pub fn open_queues(options: whir_gpu::GpuOptions, queues: usize) -> Result<Vec<Self>, ProverError> {
        Ok(GpuContext::on_queues(options, queues)?.into_iter().map(|c| Self::new(Arc::new(c))).collect())
    }
}

impl<F: ProverField> GpuProver<F> {
    /// A prover over `F` on `ctx` (one context serves every field).
    pub fn over(ctx: Arc<GpuContext>) -> Self {
        let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F>::plonky3_default()));
        let wide = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F, 24>::plonky3_default()));
        Self {
            ntt: Arc::new(GpuNtt::new(ctx)),
            merkle: Arc::new(GpuMerkle::new(poseidon2.clone())),
            wide_merkle: Arc::new(GpuMerkle::new(poseidon2.clone()).with_wide_leaves(wide).expect("one context")),
            grinder: Arc::new(GpuGrinder::new(poseidon2)),
            mode: GpuMode::Resident,
            profile: false,
            driver: DriverOptions::default(),
            own_peak: true,
            fallback_memory: None,
        }
    }

    /// The resident driver plays the transcript as `options` say (the defaults: every step
    /// played ahead where it can be).
    pub fn with_driver_options(mut self, options: DriverOptions) -> Self {
        self.driver = options;
        self
    }

    /// Resident proofs time each step's submissions with GPU timestamps (where the adapter has
    /// them) and report them in [`ProverOutput::breakdown`]. Costs two extra command buffers
    /// per submission.
    pub fn with_profile(mut self, profile: bool) -> Self {
        self.profile = profile;
        self
    }

    /// A proof the GPU cannot make is proved on the CPU only if its estimate fits `memory`
    /// ([`HostMemory::check`]); otherwise that error is returned, with the GPU's failure.
    pub fn with_fallback_memory(mut self, memory: HostMemory) -> Self {
        self.fallback_memory = Some(memory);
        self
    }

    /// The host memory a CPU fallback may take, where set.
    pub fn fallback_memory(&self) -> Option<&HostMemory> {
        self.fallback_memory.as_ref()
    }

    /// The same GPU, proving the given way.
    pub fn with_mode(mut self, mode: GpuMode) -> Self {
        self.mode = mode;
        self
    }

    /// How this prover proves.
    pub fn mode(&self) -> GpuMode {
        self.mode
    }

    /// A prover for another thread proving beside this one: the same context (pipelines,
    /// pools, budget), NTT twiddle tables and settings, with Merkle and grinding state of its
    /// own (the buffers a small tree binds in place of its missing levels, which a kernel
    /// writes, and the grinder's kept parameters), so two proofs in flight never bind one
    /// writable buffer. Its proofs leave the context's memory high-water mark to the caller
    /// (their `peak_gpu_bytes` is the context's since the caller last reset it), their
    /// `transfers` count every proof's traffic in the meantime, and they are not profiled
    /// (GPU timestamps are kept per context, and proofs in flight together would mix theirs).
    pub fn worker(&self) -> Self {
        let poseidon2 = self.merkle.poseidon2().clone();
        let wide = self.wide_merkle.wide_leaves().expect("the wide builder's").clone();
        Self {
            merkle: Arc::new(GpuMerkle::new(poseidon2.clone())),
            wide_merkle: Arc::new(GpuMerkle::new(poseidon2.clone()).with_wide_leaves(wide).expect("one context")),
            grinder: Arc::new(GpuGrinder::new(poseidon2)),
            own_peak: false,
            profile: false,
            ..self.clone()
        }
    }

    /// The tree builder whose leaves hash with `leaf`.
    fn merkle_for(&self, leaf: LeafSponge) -> &Arc<GpuMerkle<F>> {
        match leaf {
            LeafSponge::Width16 => &self.merkle,
            LeafSponge::Width24 => &self.wide_merkle,
        }
    }

    /// How the resident driver plays the transcript.
    pub fn driver_options(&self) -> DriverOptions {
        self.driver
    }

    /// What a resident proof must bind whole, checked against the adapter's binding limit
    /// before any work starts. Codewords and sumcheck tables larger than one binding are split
    /// (column blocks and row chunks, table segments); what is not: the message of a split
    /// codeword (the input, 2^n words), the folded polynomial that is encoded next (2^(n -
    /// fold) extension elements), and one column of the first codeword.
    fn check_resident_fits(&self, params: &Params, ext_words: usize) -> Result<(), ProverError> {
        let ctx = self.context();
        let (n, rate, fold) = (params.num_vars as u32, params.log_inv_rate as u32, params.fold as u32);
        let codeword = 4u64.checked_shl(n + rate).unwrap_or(u64::MAX);
        if codeword > ctx.max_binding_bytes() {
            ctx.check_binding_size("the input (the message of a first codeword split into column blocks)", 4u64 << n)?;
            ctx.check_binding_size("one column of the first codeword", 4u64.checked_shl(n + rate - fold.min(n)).unwrap_or(u64::MAX))?;
        }
        ctx.check_binding_size("the polynomial folded in the first round", (4 * ext_words as u64) << (n - fold.min(n)))?;
        ctx.memory().check(
            &format!("a resident proof at n = {}, fold {}, rate 2^-{} (estimated peak)", params.num_vars, params.fold, params.log_inv_rate),
            estimated_gpu_bytes_over(params, ctx.tuning(), &self.driver, ext_words),
        )?;
        Ok(())
    }

    /// Our driver over resident codewords; GPU failures are returned as `ProverError::Gpu`.
    pub fn prove_resident(&self, params: &Params, evals: &[F]) -> Result<ProverOutput<F>, ProverError> {
        self.prove_resident_over::<EF<F>>(params, evals)
    }

    /// [`prove_resident`](Self::prove_resident) with the challenges in the extension `E` (the
    /// field's degree-4, 5 or 8 one; the proof is `WhirProver`'s over `E`). Over degrees 5 and
    /// 8 the rounds under lazy weights (the first fold's, from 2^24 cells) are played on the
    /// host, round by round; every other transcript step is played on the GPU as over degree 4.
    pub fn prove_resident_over<E: crate::WhirExtension<F> + whir_gpu::GpuExtension<F>>(
        &self,
        params: &Params,
        evals: &[F],
    ) -> Result<ProverOutput<F>, ProverError> {
        self.check_resident_fits(params, E::WORDS)?;
        let backend = GpuBackend::new(self.ntt.clone(), self.merkle_for(params.leaf).clone())?;
        let ctx = self.context();
        let before = ctx.transfers().transfer_counts();
        let mut challenger = new_challenger(Some(self.grinder.clone()));
        let profiling = self.profile && ctx.profiler().begin();
        if self.own_peak {
            ctx.memory().reset_peak_buffer_bytes();
        }
        let started = Instant::now();
        let proved = prove_with_backend::<F, E, _, _>(&backend, params, evals, &mut challenger, self.driver);
        let total = started.elapsed();
        // (Before the profile's own readback.)
        let transfers = ctx.transfers().transfer_counts() - before;
        let spans = if profiling { ctx.profiler().end() } else { Ok(None) };
        let (commitment, proof, mut times) = proved?;
        if let Some(spans) = spans? {
            times.breakdown.add_gpu(spans.iter().map(|s| (&*s.label, s.gpu, s.submissions)));
        }
        let proof = postcard::to_allocvec(&proof).map_err(|e| ProverError::Proof(whir_verifier::ProofError::ProofFile(e.to_string())))?;
        Ok(ProverOutput {
            commitment,
            proof,
            commit_time: times.commit_phase,
            open_time: total.saturating_sub(times.commit_phase),
            phases: PhaseTimes {
                pow: times.pow,
                commit: times.commit,
                open: times.open,
                claims: times.claims,
                sumcheck: times.sumcheck,
                ood: times.ood,
                ..PhaseTimes::default()
            },
            transfers: Some(transfers),
            path: "gpu",
            peak_gpu_bytes: ctx.memory().peak_buffer_bytes(),
            breakdown: Some(times.breakdown),
        })
    }

    /// The GPU context this prover proves on.
    pub fn context(&self) -> &Arc<GpuContext> {
        self.ntt.context()
    }

    /// [`Plonky3Pieces::prove`] on this GPU alone: a GPU failure is returned, not proved again on the
    /// CPU (a [`ProofPool`](crate::ProofPool) over several GPUs moves it to another first).
    pub fn prove_on_gpu(&self, params: &Params, evals: &[F]) -> Result<ProverOutput<F>, ProverError>
    where
        Self: Plonky3Pieces<F>,
    {
        let before = self.context().transfers().transfer_counts();
        match self.mode {
            GpuMode::Resident => self.prove_resident(params, evals),
            GpuMode::Pieces => {
                if self.own_peak {
                    self.context().memory().reset_peak_buffer_bytes();
                }
                prove_with_pieces(self, params, evals).map(|out| ProverOutput {
                    transfers: Some(self.context().transfers().transfer_counts() - before),
                    peak_gpu_bytes: self.context().memory().peak_buffer_bytes(),
                    ..out
                })
            }
        }
    }

    /// WHIR as a Plonky3 PCS on this GPU for `config` (any layout of tables; see
    /// [`GpuWhirPcs`]), over the challenger `config` names (`WhirConfig<EF, F, C>`, as
    /// `WhirProver` is configured: the GPU's [`GpuChallenger`], whose transcript steps are played
    /// ahead on the device, or Plonky3's own `DuplexChallenger`), playing the transcript as this
    /// prover's driver options say.
    pub fn pcs<C: crate::WhirChallenger<F> + p3_challenger::CanObserve<Commitment<F>>>(
        &self,
        config: p3_whir::parameters::WhirConfig<EF<F>, F, C>,
    ) -> Result<GpuWhirPcs<ProverLayout<F>, F, C>, ProverError> {
        self.pcs_in(config)
    }

    /// [`pcs`](Self::pcs) in p3-sumcheck's layout `L` (`SuffixProver` or `PrefixProver`).
    pub fn pcs_in<L: Layout<F, EF<F>>, C: crate::WhirChallenger<F> + p3_challenger::CanObserve<Commitment<F>>>(
        &self,
        config: p3_whir::parameters::WhirConfig<EF<F>, F, C>,
    ) -> Result<GpuWhirPcs<L, F, C>, ProverError> {
        self.pcs_over::<L, EF<F>, C>(config)
    }

    /// [`pcs_in`](Self::pcs_in) with the challenges in the extension `E` (degree 4, 5 or 8).
    pub fn pcs_over<
        L: Layout<F, E>,
        E: crate::WhirExtension<F> + whir_gpu::GpuExtension<F>,
        C: crate::WhirChallenger<F> + p3_challenger::CanObserve<Commitment<F>>,
    >(
        &self,
        config: p3_whir::parameters::WhirConfig<E, F, C>,
    ) -> Result<crate::WhirPcs<GpuBackend<F>, L, F, E, C>, ProverError> {
        self.pcs_hashing_leaves::<L, E, C>(config, LeafSponge::Width16)
    }

    /// [`pcs_over`](Self::pcs_over) with Merkle leaves hashed by `leaf` (width 24: p3-whir's
    /// KoalaBear benchmark's `PaddingFreeSponge<Poseidon2KoalaBear<24>, 24, 16, 8>`).
    pub fn pcs_hashing_leaves<
        L: Layout<F, E>,
        E: crate::WhirExtension<F> + whir_gpu::GpuExtension<F>,
        C: crate::WhirChallenger<F> + p3_challenger::CanObserve<Commitment<F>>,
    >(
        &self,
        config: p3_whir::parameters::WhirConfig<E, F, C>,
        leaf: LeafSponge,
    ) -> Result<crate::WhirPcs<GpuBackend<F>, L, F, E, C>, ProverError> {
        let backend = GpuBackend::new(self.ntt.clone(), self.merkle_for(leaf).clone())?;
        Ok(crate::WhirPcs::<GpuBackend<F>, L, F, E, C>::new(config, backend).with_options(self.driver))
    }

    /// WHIR over Plonky3's Keccak configuration on this GPU (p3-whir's `WhirProver` with the
    /// Keccak MMCS `MerkleTreeMmcs<F, u64, SerializingHasher<PaddingFreeSponge<KeccakF, 25, 17,
    /// 4>>, CompressionFunctionFromHasher<.., 2, 4>, 2, 4>`, resident as [`pcs_over`](Self::pcs_over)
    /// is): over a Keccak challenger (`SerializingChallenger32<F, GpuKeccakHash<F>>`, whose grinds
    /// run on the GPU, or Plonky3's own), its proofs `WhirProver`'s, byte for byte where the
    /// grinder returns the smallest witness.
    pub fn keccak_pcs_over<L, E, C>(&self, config: p3_whir::parameters::WhirConfig<E, F, C>) -> Result<crate::GpuKeccakWhirPcs<L, F, E, C>, ProverError>
    where
        L: Layout<F, E>,
        E: crate::WhirExtension<F> + whir_gpu::GpuExtension<F>,
        C: crate::WhirChallenger<F> + p3_challenger::CanObserve<p3_merkle_tree::MerkleCap<F, whir_gpu::KeccakDigest>>,
    {
        let backend = self.keccak_backend()?;
        Ok(crate::WhirPcs::new(config, backend).with_options(self.driver))
    }

    /// The GPU backend over Keccak trees on this context (a Keccak tree builder beside the
    /// Poseidon2 one).
    fn keccak_backend(&self) -> Result<GpuBackend<F, whir_gpu::KeccakDigest>, ProverError> {
        let merkle = Arc::new(GpuMerkle::new(self.merkle.poseidon2().clone()).with_keccak());
        Ok(GpuBackend::<F, whir_gpu::KeccakDigest>::over(self.ntt.clone(), merkle)?)
    }

    /// Zero-knowledge WHIR over Plonky3's Keccak configuration on this GPU (p3-whir's
    /// `HidingWhirPcs` with the Keccak MMCS, resident as [`hiding_pcs`](Self::hiding_pcs) is):
    /// over a Keccak challenger (`SerializingChallenger32<F, GpuKeccakHash<F>>`, grinding on the
    /// GPU, or Plonky3's own), its masks forked from `rng`.
    pub fn keccak_hiding_pcs<E, C, R>(
        &self,
        config: p3_whir::ZkWhirConfig<E, F, C>,
        rng: R,
    ) -> Result<crate::GpuHidingPcs<F, E, C, R, whir_gpu::KeccakDigest>, ProverError>
    where
        E: crate::WhirExtension<F> + whir_gpu::GpuExtension<F> + p3_field::TwoAdicField,
        C: crate::WhirChallenger<F> + p3_challenger::CanObserve<p3_merkle_tree::MerkleCap<F, whir_gpu::KeccakDigest>>,
        R: rand::CryptoRng,
        rand::distr::StandardUniform: rand::distr::Distribution<E> + rand::distr::Distribution<F>,
    {
        let backend = self.keccak_backend()?;
        Ok(crate::GpuHidingPcs::new(config, backend, rng).with_options(self.driver))
    }

    /// Zero-knowledge WHIR on this GPU for `config` (p3-whir's `HidingWhirPcs`, resident:
    /// see [`GpuHidingPcs`](crate::GpuHidingPcs)), its Merkle leaves hashed by `leaf`, its masks
    /// forked from `rng`.
    pub fn hiding_pcs<E, C, R>(&self, config: p3_whir::ZkWhirConfig<E, F, C>, leaf: LeafSponge, rng: R) -> Result<crate::GpuHidingPcs<F, E, C, R>, ProverError>
    where
        E: crate::WhirExtension<F> + whir_gpu::GpuExtension<F> + p3_field::TwoAdicField,
        C: crate::WhirChallenger<F> + p3_challenger::CanObserve<Commitment<F>>,
        R: rand::CryptoRng,
        rand::distr::StandardUniform: rand::distr::Distribution<E> + rand::distr::Distribution<F>,
    {
        let backend = GpuBackend::new(self.ntt.clone(), self.merkle_for(leaf).clone())?;
        Ok(crate::GpuHidingPcs::new(config, backend, rng).with_options(self.driver))
    }
}

impl<F: ProverField> Plonky3Pieces<F> for GpuProver<F>
where
    GpuWhirDomain<F>: WhirDomain<F, EF<F>>,
    GpuMmcs<F>: Mmcs<F, Commitment = Commitment<F>, MultiProof = PrunedMerklePaths<F, 8>> + Clone + Sync,
{
    type Domain = GpuWhirDomain<F>;
    type Mmcs = GpuMmcs<F>;

    fn name(&self) -> &'static str {
        match self.mode {
            GpuMode::Resident => "gpu",
            GpuMode::Pieces => "gpu-pieces",
        }
    }
    fn domain(&self) -> Self::Domain {
        // The reference path encodes on the GPU from the one-column threshold, as it always has.
        GpuWhirDomain::new(GpuDft::new(Some(self.ntt.clone())).with_cpu_threshold(whir_gpu::plumbing::DEFAULT_CPU_THRESHOLD).encoder())
    }
    fn mmcs(&self, leaf: LeafSponge) -> Self::Mmcs {
        GpuMmcs::new(self.merkle_for(leaf).clone(), 0)
    }
    fn challenger(&self) -> GpuChallenger<F> {
        new_challenger(Some(self.grinder.clone()))
    }

    /// The resident driver (or the pieces path, by mode). A GPU failure mid-proof (device lost,
    /// out of memory, a size over the adapter's limits) proves again on the CPU, with a warning:
    /// the result is always a proof the verifier accepts, or an error.
    fn prove(&self, params: &Params, evals: &[F]) -> Result<ProverOutput<F>, ProverError> {
        let result = self.prove_on_gpu(params, evals);
        cpu_unless_refused(result, params, evals, self.fallback_memory.as_ref())
    }
}

impl<F: ProverField> GpuProver<F> {
    /// [`Plonky3Pieces::prove`] with the challenges in the extension `E` (degree 4, 5 or 8): the resident
    /// driver, and after a GPU failure the CPU's proof over `E` (with a warning).
    pub fn prove_over<E: crate::WhirExtension<F> + whir_gpu::GpuExtension<F>>(&self, params: &Params, evals: &[F]) -> Result<ProverOutput<F>, ProverError> {
        cpu_unless_refused_over::<F, E>(self.prove_resident_over::<E>(params, evals), params, evals, self.fallback_memory.as_ref())
    }
}

/// A GPU proof's result, or after a GPU failure the CPU's proof (with a warning); a proof over
/// the caller's memory budget stays refused, as asked.
/// A fallback that `memory` does not hold is refused, naming the GPU's failure too.
pub(crate) fn cpu_unless_refused<F: ProverField>(
    result: Result<ProverOutput<F>, ProverError>,
    params: &Params,
    evals: &[F],
    memory: Option<&HostMemory>,
) -> Result<ProverOutput<F>, ProverError> {
    cpu_unless_refused_over::<F, EF<F>>(result, params, evals, memory)
}

/// [`cpu_unless_refused`] with the challenges in `E`.
fn cpu_unless_refused_over<F: ProverField, E: crate::WhirExtension<F>>(
    result: Result<ProverOutput<F>, ProverError>,
    params: &Params,
    evals: &[F],
    memory: Option<&HostMemory>,
) -> Result<ProverOutput<F>, ProverError> {
    match result {
        Err(ProverError::Gpu(e @ whir_gpu::GpuError::OverBudget { .. })) => Err(ProverError::Gpu(e)),
        Err(e @ (ProverError::Gpu(_) | ProverError::PlayedAhead(_))) => {
            if let Some(Err(refused)) = memory.map(|m| m.check::<F, E>(params, None)) {
                return Err(ProverError::Params(format!("the GPU cannot make this proof ({e}), and the CPU cannot either: {refused}")));
            }
            tracing::warn!("the GPU cannot make this proof ({e}); proving on the CPU instead");
            let out = CpuProver.prove_over::<F, E>(params, evals)?;
            Ok(ProverOutput { path: "cpu (fallback)", ..out })
        }
        other => other,
    }
}
