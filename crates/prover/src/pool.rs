//! Several proofs (or PCS commits and openings) in flight on a GPU context, or on several (the
//! GPUs of a host): a [`ProofPool`] takes a stream of jobs, runs up to N of them at once on each
//! context on threads that share it, admits each only when its estimated GPU memory fits the
//! context's budget beside the jobs already running there, moves a job that fails on one GPU to
//! the others, and hands the results back in the order the jobs came.
//!
//! What it buys (BENCHMARKS.md, "Throughput"): a proof's host work and round trips are covered
//! by the other proofs' GPU work, so the device's queue stays busy. One queue runs the proofs'
//! kernels one after another, so on one context the gain stops where the queue is full.
//! [`ProofPool::on_queues`] opens several queues of one device (Vulkan's compute-only family),
//! whose work overlaps, so it gains more.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

use whir_gpu::{AdapterSummary, GpuError};

use p3_commit::MultilinearPcs;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_whir::ZkWhirConfig;
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::{CryptoRng, SeedableRng};
use whir_gpu::GpuChallenger;
use whir_verifier::hash::LeafSponge;

use crate::error::ProverError;
use crate::provers::{cpu_unless_refused, estimated_gpu_bytes, GpuProver, ProverOutput};
use crate::{Commitment, Params, WhirExtension, ZkProof, F};

/// Proofs in flight at once on a hardware adapter when the caller does not say: eight in flight
/// gave few more proofs per second than four for twice the latency (docs/benchmarks-history.md).
pub const DEFAULT_IN_FLIGHT: usize = 4;

/// Proofs in flight by default on `adapter`: one on a software renderer (its "GPU" is the host's
/// cores, which one proof already fills), [`DEFAULT_IN_FLIGHT`] on hardware.
pub fn default_in_flight(adapter: &AdapterSummary) -> usize {
    if adapter.is_software() {
        1
    } else {
        DEFAULT_IN_FLIGHT
    }
}

/// Jobs in flight on each queue of [`ProofPool::on_queues`] when the caller does not say: two
/// gave the most proofs per second, or close to it; more only lengthened the latency
/// (BENCHMARKS.md, "Throughput").
pub const DEFAULT_IN_FLIGHT_PER_QUEUE: usize = 2;

/// Queues a throughput pool opens when the caller has no better count: 4 compute-only queues
/// came close to 8's proofs per second with half the threads (BENCHMARKS.md, "Throughput").
pub const DEFAULT_QUEUES: usize = 4;

/// A prover with `driver`'s settings on each of `queues` queues of the device `options` names.
fn queue_provers(options: whir_gpu::GpuOptions, queues: usize, driver: crate::DriverOptions) -> Result<Vec<GpuProver>, ProverError> {
    Ok(GpuProver::open_queues(options, queues)?.into_iter().map(|b| b.with_driver_options(driver)).collect())
}

/// The most jobs a pool keeps in flight on one context (a thread each).
pub const MAX_IN_FLIGHT: usize = 256;

/// How a [`ProofPool`] runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolOptions {
    /// Jobs in flight at once on each context (at least 1); `None`: [`default_in_flight`] for
    /// its adapter.
    pub in_flight: Option<usize>,
}

/// One proof for [`ProofPool::prove_many`]: its parameters and its 2^n evaluations.
#[derive(Clone, Debug)]
pub struct ProofJob {
    /// The proof's parameters.
    pub params: Params,
    /// The polynomial's 2^n evaluations.
    pub evals: Vec<F>,
}

/// One hiding proof for [`ProofPool::prove_hiding_many`]: a polynomial and the points it is
/// opened at.
#[derive(Clone, Debug)]
pub struct HidingJob<E> {
    /// The polynomial's 2^n evaluations.
    pub witness: Poly<F>,
    /// The opening points.
    pub points: Vec<Point<E>>,
}

/// A hiding job's result: its commitment and its proof, made from a fresh challenger
/// ([`Plonky3Pieces::challenger`](crate::Plonky3Pieces::challenger)), which is where a verifier starts.
#[derive(Clone)]
pub struct HidingOutput<E: WhirExtension<F>> {
    /// The commitment (observed by the challenger before the opening).
    pub commitment: Commitment<F>,
    /// The proof (`HidingWhirPcs`'s bytes for the job's generator).
    pub proof: ZkProof<F, E>,
}

/// Keeps up to N jobs in flight on each of its [`GpuProver`]s' contexts (see the module docs).
///
/// ```no_run
/// # use whir_prover::{GpuProver, PoolOptions, ProofJob, ProofPool, Params};
/// let pool = ProofPool::new(GpuProver::open_default()?, PoolOptions::default())?;
/// let jobs: Vec<ProofJob> = vec![]; // your polynomials
/// for (i, proof) in pool.prove_many(jobs).into_iter().enumerate() {
///     let proof = proof?; // each job's own result: one failure leaves the others alone
/// #   let _ = (i, proof);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ProofPool {
    lanes: Vec<Lane>,
}

/// One context of the pool: its prover, its jobs in flight and its memory budget.
struct Lane {
    prover: GpuProver,
    in_flight: usize,
    admission: Admission,
}

/// The fallback of [`ProofPool::run_job`] once no GPU of the pool could run a job: the job and
/// the last GPU error.
type Fallback<'a, J, R> = &'a (dyn Fn(&J, ProverError) -> Result<R, ProverError> + Sync);

impl ProofPool {
    /// A pool over `prover`'s context, admitting jobs against the context's memory budget
    /// (`GpuOptions::memory_mib`; none: jobs are admitted by count alone).
    pub fn new(prover: GpuProver, options: PoolOptions) -> Result<Self, ProverError> {
        Self::over(vec![prover], options)
    }

    /// A pool over `queues` contexts on queues of one device of the adapter `options` names
    /// ([`GpuContext::on_queues`](whir_gpu::GpuContext::on_queues): on Vulkan one device with
    /// that many queues, of a compute-only family where the adapter has one, so that their work
    /// overlaps), a [`GpuProver`] each with `driver`'s settings, and `pool.in_flight` jobs on
    /// each (default [`DEFAULT_IN_FLIGHT_PER_QUEUE`]). The memory budget
    /// (`options.memory_mib`) is shared out between the queues. Where the adapter's graphics backend is not Vulkan
    /// or the adapter offers fewer queues, the error says so; one queue opens everywhere.
    ///
    /// ```no_run
    /// # use whir_prover::{DriverOptions, PoolOptions, ProofPool, DEFAULT_QUEUES};
    /// let pool = ProofPool::on_queues(whir_gpu::GpuOptions::from_env()?, DEFAULT_QUEUES, DriverOptions::from_env()?, PoolOptions::default())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_queues(options: whir_gpu::GpuOptions, queues: usize, driver: crate::DriverOptions, pool: PoolOptions) -> Result<Self, ProverError> {
        let provers = queue_provers(options, queues, driver)?;
        Self::over_queues(provers, queues, pool)
    }

    /// A pool over every GPU of the host (`adapters`: `None` for the hardware adapters of one
    /// prover, [`whir_gpu::pool_adapters`]; or indices of [`whir_gpu::list_adapters`], an
    /// index twice for two devices on one adapter), with `queues` queues on each as
    /// [`on_queues`](Self::on_queues) opens them, `options` for each but its adapter. A job
    /// that fails on one GPU moves to the others, then to the CPU (see [`over`](Self::over)).
    pub fn on_host(
        options: whir_gpu::GpuOptions,
        adapters: Option<&[usize]>,
        queues: usize,
        driver: crate::DriverOptions,
        pool: PoolOptions,
    ) -> Result<Self, ProverError> {
        let listed = whir_gpu::list_adapters();
        let indices = match adapters {
            Some(given) => given.to_vec(),
            None => whir_gpu::pool_adapters(&listed),
        };
        if indices.is_empty() {
            let what = if adapters.is_some() {
                "no adapters given".to_string()
            } else {
                format!("no hardware GPU adapter here ({} adapters listed, none of them hardware)", listed.len())
            };
            return Err(ProverError::Input(format!("a pool over the host's GPUs: {what}; name adapters by index (whir info lists them)")));
        }
        let mut provers = Vec::new();
        for &i in &indices {
            let Some(summary) = listed.get(i) else {
                return Err(ProverError::Input(format!(
                    "a pool over the host's GPUs: there is no adapter {i} ({} listed; whir info lists them)",
                    listed.len()
                )));
            };
            let options = whir_gpu::GpuOptions { adapter: whir_gpu::AdapterSelector::Index(i), ..options.clone() };
            let opened = queue_provers(options, queues, driver)
                .map_err(|e| ProverError::Input(format!("a pool over the host's GPUs: adapter {i} ({summary}) with {queues} queues: {e}")))?;
            provers.extend(opened);
        }
        Self::over_queues(provers, queues, pool)
    }

    /// [`over`](Self::over) with the per-queue default: a lone queue keeps
    /// [`default_in_flight`] jobs, several keep [`DEFAULT_IN_FLIGHT_PER_QUEUE`] each.
    fn over_queues(provers: Vec<GpuProver>, queues: usize, pool: PoolOptions) -> Result<Self, ProverError> {
        let Some(first) = provers.first() else {
            return Err(ProverError::Input("a proof pool needs at least one GPU prover".into()));
        };
        let adapter = first.context().summary();
        let per_queue = pool.in_flight.unwrap_or(if queues == 1 || adapter.is_software() { default_in_flight(adapter) } else { DEFAULT_IN_FLIGHT_PER_QUEUE });
        Self::over(provers, PoolOptions { in_flight: Some(per_queue) })
    }

    /// A pool over several contexts (the GPUs of a host, or several contexts of one adapter),
    /// each keeping `options.in_flight` jobs in flight (by default [`default_in_flight`] for its
    /// adapter) within its own memory budget. Jobs go to whichever context has a thread free,
    /// so a faster device takes more of them. A job that fails on one device (lost, out of
    /// memory, over its limits or budget) is tried on the others before the CPU.
    pub fn over(provers: Vec<GpuProver>, options: PoolOptions) -> Result<Self, ProverError> {
        if provers.is_empty() {
            return Err(ProverError::Input("a proof pool needs at least one GPU prover".into()));
        }
        match options.in_flight {
            Some(0) => return Err(ProverError::Input("a proof pool needs at least one job in flight (in_flight = 0 given)".into())),
            Some(n) if n > MAX_IN_FLIGHT => {
                return Err(ProverError::Input(format!("{n} jobs in flight on each GPU is more than the {MAX_IN_FLIGHT} a pool runs (a thread each)")))
            }
            _ => {}
        }
        // Each context's budget is counted by one lane: a context given twice would be filled twice over.
        for (i, b) in provers.iter().enumerate() {
            if let Some(j) = provers[..i].iter().position(|a| std::sync::Arc::ptr_eq(a.context(), b.context())) {
                return Err(ProverError::Input(format!(
                    "provers {j} and {i} of the proof pool share one context; give each its own (GpuProver::open per GPU), or raise in_flight"
                )));
            }
        }
        let lanes = provers
            .into_iter()
            .map(|prover| {
                let in_flight = options.in_flight.unwrap_or_else(|| default_in_flight(prover.context().summary()));
                let admission = Admission::new(prover.context().memory().budget());
                Lane { prover, in_flight, admission }
            })
            .collect();
        Ok(Self { lanes })
    }

    /// Jobs run at once, over every context.
    pub fn in_flight(&self) -> usize {
        self.lanes.iter().map(|l| l.in_flight).sum()
    }

    /// The prover of the pool's first context.
    pub fn prover(&self) -> &GpuProver {
        &self.lanes[0].prover
    }

    /// The provers of the pool's contexts, in order.
    pub fn provers(&self) -> impl Iterator<Item = &GpuProver> {
        self.lanes.iter().map(|l| &l.prover)
    }

    /// Proves every job, up to [`in_flight`](Self::in_flight) at once, each admitted when its
    /// estimated peak ([`estimated_gpu_bytes`]) fits its context's budget beside the proofs
    /// running there; the results in the jobs' order. Each job's result is its own: a bad
    /// input, a GPU failure (the proof moves to the pool's other GPUs, then to the CPU, with a
    /// warning, as [`GpuProver`]'s `prove` does) or a panic reaches that job's slot alone. A
    /// proof refused for the budget while others ran is tried again alone before it moves on;
    /// one over every context's budget is refused.
    pub fn prove_many(&self, jobs: impl IntoIterator<Item = ProofJob, IntoIter: Send>) -> Vec<Result<ProverOutput, ProverError>> {
        let driver = self.prover().driver_options();
        let estimate = |job: &ProofJob| self.lanes.iter().map(|l| estimated_gpu_bytes(&job.params, l.prover.context().tuning(), &driver)).max().unwrap_or(0);
        let fallback = |job: &ProofJob, e: ProverError| cpu_unless_refused(Err(e), &job.params, &job.evals, self.prover().fallback_memory());
        let mut out = Vec::new();
        self.run_with(jobs, &estimate, &|prover: &GpuProver, job: &ProofJob| prover.prove_on_gpu(&job.params, &job.evals), &fallback, &mut |_, r| out.push(r));
        out
    }

    /// Zero-knowledge proofs ([`GpuHidingPcs`](crate::GpuHidingPcs): commit, then open at the
    /// job's points, from a fresh challenger) of every job under `config`, Merkle leaves hashed
    /// by `leaf`, up to [`in_flight`](Self::in_flight) at once; the results in the jobs' order.
    /// Each job's masks come from a `StdRng` forked from `rng` (32 bytes of it) as the job is
    /// taken, in the jobs' order, so the same generator gives the same proofs however the jobs
    /// are scheduled; a job retried on another context reuses its fork. A real proof's `rng`
    /// draws from the operating system.
    pub fn prove_hiding_many<E, R>(
        &self,
        config: &ZkWhirConfig<E, F, GpuChallenger<F>>,
        leaf: LeafSponge,
        jobs: impl IntoIterator<Item = HidingJob<E>, IntoIter: Send>,
        rng: &mut R,
    ) -> Vec<Result<HidingOutput<E>, ProverError>>
    where
        E: WhirExtension<F> + whir_gpu::GpuExtension<F> + p3_field::TwoAdicField,
        R: CryptoRng + Send,
        StandardUniform: Distribution<E> + Distribution<F>,
    {
        let driver = self.prover().driver_options();
        let ext_words = <E as p3_field::BasedVectorSpace<F>>::DIMENSION;
        // The hiding oracles are the plain prover's codewords (their randomness rows added in
        // place), its tables too; the masks are small.
        let shape =
            Params { num_vars: config.num_variables(), fold: config.round_folding_factor(0), log_inv_rate: config.starting_log_inv_rate, ..Params::default() };
        let estimate = |_: &(HidingJob<E>, [u8; 32])| {
            self.lanes.iter().map(|l| crate::provers::estimated_gpu_bytes_over(&shape, l.prover.context().tuning(), &driver, ext_words)).max().unwrap_or(0)
        };
        let work = |prover: &GpuProver, (job, seed): &(HidingJob<E>, [u8; 32])| -> Result<HidingOutput<E>, ProverError> {
            let pcs = prover.hiding_pcs::<E, GpuChallenger<F>, StdRng>(config.clone(), leaf, StdRng::from_seed(*seed))?;
            let mut challenger = crate::Plonky3Pieces::challenger(prover);
            let (commitment, data) = pcs.commit(job.witness.clone(), &mut challenger)?;
            let proof = pcs.open(data, job.points.clone(), &mut challenger)?;
            Ok(HidingOutput { commitment, proof })
        };
        // `StdRng::from_rng`'s 32 bytes, kept as a seed so a retried job forks the same generator.
        let forked = jobs.into_iter().map(|job| {
            let mut seed = [0u8; 32];
            rng.fill_bytes(&mut seed);
            (job, seed)
        });
        self.run_many(forked, estimate, work)
    }

    /// Runs `work` on every job (a proof, a PCS commit or opening on `prover.pcs(..)`; each
    /// thread's `prover` is a [`GpuProver::worker`] of one of the pool's), up to
    /// [`in_flight`](Self::in_flight) at once, each admitted when `estimate(job)` bytes of GPU
    /// memory fit its context's budget beside the jobs running there; the results in the jobs'
    /// order. A job whose work returns a GPU error (other than bad input) is tried on the
    /// pool's other contexts; after the last, its error is its result.
    pub fn run_many<J: Send, R: Send>(
        &self,
        jobs: impl IntoIterator<Item = J, IntoIter: Send>,
        estimate: impl Fn(&J) -> u64 + Sync,
        work: impl Fn(&GpuProver, &J) -> Result<R, ProverError> + Sync,
    ) -> Vec<Result<R, ProverError>> {
        let mut out = Vec::new();
        self.run_ordered(jobs, estimate, work, |_, result| out.push(result));
        out
    }

    /// [`run_many`](Self::run_many) handing each result to `sink(index, result)` as soon as it
    /// and every result before it are done, in the jobs' order: for a stream of jobs whose
    /// results are written out as they come (a proving service). Jobs are taken from `jobs` only
    /// as a slot frees (under a lock of their own: an iterator that computes its items computes
    /// them one at a time, and one that waits for its next item holds up no result), so a long
    /// stream is never held in memory at once. A panic in the iterator itself (the caller's
    /// code, not a job's) stops the pool and reaches the caller.
    pub fn run_ordered<J: Send, R: Send>(
        &self,
        jobs: impl IntoIterator<Item = J, IntoIter: Send>,
        estimate: impl Fn(&J) -> u64 + Sync,
        work: impl Fn(&GpuProver, &J) -> Result<R, ProverError> + Sync,
        mut sink: impl FnMut(usize, Result<R, ProverError>),
    ) {
        self.run_with(jobs, &estimate, &work, &|_, e| Err(e), &mut sink);
    }

    fn run_with<J: Send, R: Send>(
        &self,
        jobs: impl IntoIterator<Item = J, IntoIter: Send>,
        estimate: &(impl Fn(&J) -> u64 + Sync),
        work: &(impl Fn(&GpuProver, &J) -> Result<R, ProverError> + Sync),
        fallback: Fallback<'_, J, R>,
        sink: &mut dyn FnMut(usize, Result<R, ProverError>),
    ) {
        // No job is taken more than `window` places ahead of the first result not yet handed
        // on, so a slow job holds back at most that many finished results, not a whole stream.
        let window = REORDER_WINDOW_PER_SLOT.saturating_mul(self.in_flight());
        let feed = Feed { jobs: Mutex::new(jobs.into_iter().enumerate()), progress: Mutex::new(Progress::default()), moved_on: Condvar::new() };
        let feed = &feed;
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<R, ProverError>)>();
        std::thread::scope(|scope| {
            // If this closure ends early (`sink` panics, a thread cannot be spawned), the
            // threads waiting for it to move on stop before the scope waits for them.
            let _close = CloseOnDrop(feed);
            for (home, lane) in self.lanes.iter().enumerate() {
                for _ in 0..lane.in_flight {
                    let tx = tx.clone();
                    scope.spawn(move || {
                        // Worker provers of this thread's own, one per context it runs on.
                        let mut workers: Vec<Option<GpuProver>> = vec![None; self.lanes.len()];
                        loop {
                            // A thread of a lost context leaves its jobs to the others while
                            // any other context is sound (the last ones run the fallback).
                            if self.lanes[home].lost().is_some() && self.lanes.iter().any(|l| l.lost().is_none()) {
                                break;
                            }
                            // The locks are held only to take the next job, never across its work.
                            let Some((index, job)) = feed.take(window) else { break };
                            // Every job taken gives a result (the receiver waits for each in turn).
                            let result = caught(index, || self.run_job(&mut workers, home, index, &job, estimate, work, fallback));
                            if tx.send((index, result)).is_err() {
                                break;
                            }
                        }
                    });
                }
            }
            drop(tx);
            // Results come back in any order; each is handed on once all before it are.
            let mut waiting = BTreeMap::new();
            let mut due = 0;
            for (index, result) in rx {
                waiting.insert(index, result);
                while let Some(result) = waiting.remove(&due) {
                    sink(due, result);
                    due += 1;
                }
                feed.handed_on(due);
            }
        });
    }

    /// One job: estimated, then run on its thread's own context and, if that fails on the GPU,
    /// on each other sound context in turn (admitted on each; a panic in the estimate or the
    /// work caught as its error); `fallback` once every context has failed it.
    #[allow(clippy::too_many_arguments)]
    fn run_job<J, R>(
        &self,
        workers: &mut [Option<GpuProver>],
        home: usize,
        index: usize,
        job: &J,
        estimate: &(impl Fn(&J) -> u64 + Sync),
        work: &(impl Fn(&GpuProver, &J) -> Result<R, ProverError> + Sync),
        fallback: Fallback<'_, J, R>,
    ) -> Result<R, ProverError> {
        let _span = tracing::info_span!("pool job", job = index).entered();
        let bytes = caught(index, || Ok(estimate(job)))?;
        let order = std::iter::once(home).chain((0..self.lanes.len()).filter(|&l| l != home));
        let mut last = None;
        for l in order {
            let lane = &self.lanes[l];
            if lane.lost().is_some() {
                continue;
            }
            let prover = workers[l].get_or_insert_with(|| lane.prover.worker());
            let e = match lane.run_admitted(prover, index, job, bytes, work) {
                Err(ProverError::Gpu(e)) if !matches!(e, GpuError::InvalidInput(_) | GpuError::Shader { .. }) => ProverError::Gpu(e),
                Err(e @ ProverError::PlayedAhead(_)) => e,
                Err(ProverError::Panicked { job, message }) => match lane.lost() {
                    // A panic on a lost device is the device's failure, not the job's: a GPU
                    // error, which the fallback (the CPU for proofs) takes.
                    Some(why) => ProverError::Gpu(GpuError::Device(format!("GPU {l} was lost: {why}"))),
                    None => return Err(ProverError::Panicked { job, message }),
                },
                other => return other,
            };
            if self.lanes.len() > 1 {
                let adapter = &lane.prover.context().summary().name;
                match lane.lost() {
                    Some(why) => tracing::warn!(job = index, "GPU {l} ({adapter}) is lost ({why}); its jobs move to the pool's other GPUs"),
                    None => tracing::warn!(job = index, "GPU {l} ({adapter}) failed the job ({e}); trying the pool's other GPUs"),
                }
            }
            last = Some(e);
        }
        let e = last.unwrap_or_else(|| ProverError::Gpu(GpuError::Device("every GPU of the proof pool is lost".into())));
        caught(index, || fallback(job, e))
    }
}

/// Finished results a pool may hold for an earlier, slower job, per job in flight.
const REORDER_WINDOW_PER_SLOT: usize = 4;

/// The jobs not yet taken, and how far taking and handing on have got: two locks, so that a
/// stream whose next job is not there yet (a service waiting for requests) never holds up the
/// results of the jobs already taken.
struct Feed<I> {
    jobs: Mutex<I>,
    progress: Mutex<Progress>,
    moved_on: Condvar,
}

#[derive(Default)]
struct Progress {
    /// One past the highest index taken.
    taken: usize,
    /// Results handed on so far (all below this index).
    handed_on: usize,
    /// No more jobs are to be taken (the results are no longer wanted).
    closed: bool,
}

/// Closes the feed when the results' receiver ends, however it ends.
struct CloseOnDrop<'a, I>(&'a Feed<I>);

impl<I> Drop for CloseOnDrop<'_, I> {
    fn drop(&mut self) {
        self.0.progress.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.0.moved_on.notify_all();
    }
}

impl<J, I: Iterator<Item = (usize, J)>> Feed<I> {
    /// The next job and its index, once the jobs taken lie within `window` of the first result
    /// not yet handed on (each thread may take one past it); None when there are no more, the
    /// feed is closed, or the jobs' iterator panicked.
    fn take(&self, window: usize) -> Option<(usize, J)> {
        {
            let mut p = self.progress.lock().ok()?;
            while !p.closed && p.taken >= p.handed_on.saturating_add(window) {
                p = self.moved_on.wait(p).ok()?;
            }
            if p.closed {
                return None;
            }
        }
        let (index, job) = self.jobs.lock().ok()?.next()?;
        let mut p = self.progress.lock().ok()?;
        p.taken = p.taken.max(index + 1);
        Some((index, job))
    }

    fn handed_on(&self, due: usize) {
        self.progress.lock().unwrap_or_else(|p| p.into_inner()).handed_on = due;
        self.moved_on.notify_all();
    }
}

impl Lane {
    /// Why this lane's device was lost, if it was.
    fn lost(&self) -> Option<String> {
        self.prover.context().lost()
    }

    /// `work` on `job` once admitted here (a panic caught as its error), and run again alone if
    /// the budget refused it while others held memory.
    fn run_admitted<J, R>(
        &self,
        prover: &GpuProver,
        index: usize,
        job: &J,
        bytes: u64,
        work: &(impl Fn(&GpuProver, &J) -> Result<R, ProverError> + Sync),
    ) -> Result<R, ProverError> {
        let run = || caught(index, || work(prover, job));
        let admitted = tracing::info_span!("pool admission").entered();
        let ticket = self.admission.admit(index, bytes)?;
        drop(admitted);
        let result = run();
        drop(ticket);
        match result {
            // The context's own check refused it beside the others' memory: once more, alone.
            Err(ProverError::Gpu(GpuError::OverBudget { .. })) => {
                tracing::debug!(job = index, "refused for the memory budget beside other jobs; running it alone");
                let admitted = tracing::info_span!("pool admission", alone = true).entered();
                let _alone = self.admission.admit_alone();
                drop(admitted);
                run()
            }
            other => other,
        }
    }
}

/// `f`'s result, or its panic as job `index`'s error.
fn caught<T>(index: usize, f: impl FnOnce() -> Result<T, ProverError>) -> Result<T, ProverError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| Err(ProverError::Panicked { job: index, message: panic_message(&*panic) }))
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_else(|| "(no message)".into())
}

/// Admission by memory: the bytes the running jobs are estimated to need, under the budget.
struct Admission {
    budget: Option<u64>,
    reserved: Mutex<Reserved>,
    freed: Condvar,
}

#[derive(Default)]
struct Reserved {
    bytes: u64,
    jobs: usize,
    /// A job runs alone (see [`Admission::admit_alone`]): nothing else is admitted.
    alone: bool,
}

/// A job's place in the budget, given back when dropped.
struct Ticket<'a> {
    admission: &'a Admission,
    bytes: u64,
    /// Whether other jobs may run beside it (not for a job admitted alone).
    shared: bool,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut reserved = self.admission.reserved.lock().unwrap_or_else(|p| p.into_inner());
        reserved.bytes -= self.bytes;
        reserved.jobs -= 1;
        if !self.shared {
            reserved.alone = false;
        }
        self.admission.freed.notify_all();
    }
}

impl Admission {
    fn new(budget: Option<u64>) -> Self {
        Self { budget, reserved: Mutex::new(Reserved::default()), freed: Condvar::new() }
    }

    /// Waits until `bytes` fit beside the jobs running (and no job runs alone); an error at
    /// once for a job that could never fit the budget.
    fn admit(&self, job: usize, bytes: u64) -> Result<Ticket<'_>, ProverError> {
        if let Some(budget) = self.budget.filter(|&b| bytes > b) {
            return Err(ProverError::Gpu(GpuError::OverBudget {
                what: format!("job {job} of the proof pool (estimated peak)"),
                needed_mib: mib(bytes),
                budget_mib: mib(budget),
            }));
        }
        // Without a budget jobs are admitted by count alone, and hold no bytes.
        let (budget, bytes) = self.budget.map_or((u64::MAX, 0), |b| (b, bytes));
        let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
        while reserved.alone || bytes > budget - reserved.bytes {
            reserved = self.freed.wait(reserved).unwrap_or_else(|p| p.into_inner());
        }
        reserved.bytes += bytes;
        reserved.jobs += 1;
        Ok(Ticket { admission: self, bytes, shared: true })
    }

    /// Waits until no job runs, then admits one that nothing joins until it ends.
    fn admit_alone(&self) -> Ticket<'_> {
        let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
        while reserved.jobs > 0 || reserved.alone {
            reserved = self.freed.wait(reserved).unwrap_or_else(|p| p.into_inner());
        }
        reserved.jobs += 1;
        reserved.alone = true;
        Ticket { admission: self, bytes: 0, shared: false }
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}
