//! Several proofs in flight on one context (`ProofPool`): each proof is byte for byte the proof
//! made alone and the stock verifier accepts it; PCS commits and openings run through the pool
//! likewise; a stress run with more jobs than slots keeps a GPU failure, a bad input and a panic
//! (in the work or in its memory estimate) each to its own job; the memory budget caps how many
//! run at once and refuses at once a job that could never fit.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use p3_commit::MultilinearPcs;
use p3_sumcheck::layout::Witness;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::{GpuError, GpuOptions};
use whir_wgpu::prover::{
    estimated_gpu_bytes, random_tables, DriverOptions, GpuProver, Params, Plonky3Pieces, PoolOptions, ProofFile, ProofJob, ProofPool, ProverError, Soundness,
    Workload,
};

fn params(num_vars: usize, fold: usize, log_inv_rate: usize) -> Params {
    Params { num_vars, fold, log_inv_rate, security_bits: 60, pow_bits: 10, soundness: Soundness::Johnson, points: 1, leaf: Default::default() }
}

/// Random jobs of mixed shapes (n 8 to 11, folds 1 to 4, rates 1 and 2).
fn jobs(rng: &mut StdRng, count: usize) -> Vec<ProofJob> {
    (0..count)
        .map(|_| {
            let p = params(rng.random_range(8..=11), rng.random_range(1..=4), rng.random_range(1..=2));
            let evals = common::random_vec(rng, 1 << p.num_vars);
            ProofJob { params: p, evals }
        })
        .collect()
}

/// Each job proved alone, one after another: the proof bytes.
fn alone(backend: &GpuProver, jobs: &[ProofJob]) -> Vec<Vec<u8>> {
    jobs.iter().map(|j| backend.prove(&j.params, &j.evals).expect("a lone proof").proof).collect()
}

#[test]
fn proofs_in_flight_together_are_the_lone_proofs_and_verify() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let backend = GpuProver::new(ctx.clone());
        let jobs = jobs(&mut rng, 8);
        let lone = alone(&backend, &jobs);
        let pool = ProofPool::new(backend, PoolOptions { in_flight: Some(4) }).unwrap();
        assert_eq!(pool.in_flight(), 4);
        let outputs = pool.prove_many(jobs.clone());
        assert_eq!(outputs.len(), jobs.len());
        for (i, (out, job)) in outputs.into_iter().zip(&jobs).enumerate() {
            let out = out.unwrap_or_else(|e| panic!("job {i} ({:?}): {e}", job.params));
            assert_eq!(out.path, "gpu", "job {i} on {:?}", ctx.mul_variant());
            assert!(out.proof == lone[i], "job {i} ({:?}) made beside others differs from its lone proof", job.params);
            out.proof_file(&job.params).verify(&job.params).unwrap_or_else(|e| panic!("job {i}: the stock verifier rejected it: {e}"));
        }
    }
}

#[test]
fn pcs_commits_and_openings_in_flight_are_the_lone_ones() {
    let workload = Workload::parse("9x3,2*7x2,5x1").unwrap();
    let base = params(0, 2, 1);
    let p = workload.params(&base);
    let config = p.config::<whir_wgpu::gpu::GpuChallenger>().unwrap();
    let mut rng = common::rng();
    let seeds: Vec<u64> = (0..6).map(|_| rng.random()).collect();
    for ctx in common::contexts() {
        let backend = GpuProver::new(ctx);
        let prove = |backend: &GpuProver, seed: &u64| -> Result<Vec<u8>, ProverError> {
            let tables = random_tables(&workload, &mut StdRng::seed_from_u64(*seed));
            let pcs = backend.pcs(config.clone())?;
            let mut challenger = backend.challenger();
            workload.observe(&mut challenger);
            let (root, data) = pcs.commit(Witness::new(tables, base.fold), &mut challenger)?;
            let proof = pcs.open(data, workload.protocol(base.fold), &mut challenger)?;
            Ok(ProofFile::new_tables(&p, workload.clone(), root, postcard::to_allocvec(&proof).unwrap()).to_bytes())
        };
        let lone: Vec<Vec<u8>> = seeds.iter().map(|s| prove(&backend, s).unwrap()).collect();
        let pool = ProofPool::new(backend, PoolOptions { in_flight: Some(3) }).unwrap();
        let together = pool.run_many(seeds.clone(), |_| 0, prove);
        for (i, (file, lone)) in together.into_iter().zip(&lone).enumerate() {
            let file = file.unwrap();
            assert!(file == *lone, "PCS job {i} made beside others differs from its lone proof");
            ProofFile::from_bytes(&file).and_then(|f| f.verify_tables(&p, &workload)).unwrap_or_else(|e| panic!("PCS job {i}: {e}"));
        }
    }
}

/// What the stress run does to a job.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    Prove,
    /// Its GPU readbacks fail (on its thread alone): proved on the CPU instead, same bytes.
    DeviceFails,
    /// Given the wrong number of evaluations.
    BadInput,
    Panics,
    /// Its memory estimate panics.
    EstimatePanics,
}

#[test]
fn a_stress_run_keeps_each_failure_to_its_own_job() {
    let mut rng = common::rng();
    // A context of its own: the faults injected here must not reach other tests' proofs.
    let Some(ctx) = common::fresh_contexts().into_iter().next() else { return };
    let backend = GpuProver::new(ctx.clone());
    let jobs = jobs(&mut rng, 14);
    let lone = alone(&backend, &jobs);
    let mut fates = vec![Fate::Prove; jobs.len()];
    for (at, fate) in [(2, Fate::DeviceFails), (5, Fate::BadInput), (6, Fate::Panics), (9, Fate::EstimatePanics), (11, Fate::DeviceFails)] {
        fates[at] = fate;
    }
    let work: Vec<(ProofJob, Fate)> = jobs.iter().cloned().zip(fates.iter().copied()).collect();
    // More jobs than slots, more threads than the default: every slot is reused.
    let pool = ProofPool::new(backend, PoolOptions { in_flight: Some(5) }).unwrap();
    let outputs = pool.run_many(
        work,
        |(_, fate)| if *fate == Fate::EstimatePanics { panic!("estimate with a bug") } else { 0 },
        |backend, (job, fate)| match fate {
            Fate::Prove => backend.prove(&job.params, &job.evals),
            Fate::DeviceFails => {
                backend.context().faults().fail_readbacks_on_this_thread(1, 1_000);
                let out = backend.prove(&job.params, &job.evals);
                backend.context().faults().fail_readbacks_on_this_thread(0, 0);
                out
            }
            Fate::BadInput => backend.prove(&job.params, &job.evals[1..]),
            Fate::Panics => panic!("job with a bug"),
            Fate::EstimatePanics => unreachable!("a job whose estimate panicked is not run"),
        },
    );
    for (i, out) in outputs.into_iter().enumerate() {
        match (fates[i], out) {
            (Fate::Prove, Ok(out)) => {
                assert_eq!(out.path, "gpu", "job {i}: a failure elsewhere reached it");
                assert!(out.proof == lone[i], "job {i} differs from its lone proof");
            }
            (Fate::DeviceFails, Ok(out)) => {
                assert_eq!(out.path, "cpu (fallback)", "job {i}: its injected failure did not strike");
                assert!(out.proof == lone[i], "job {i}'s CPU fallback differs from its lone proof");
                out.proof_file(&jobs[i].params).verify(&jobs[i].params).unwrap();
            }
            (Fate::BadInput, Err(e)) => {
                let text = e.to_string();
                assert!(text.contains("evaluations given for n ="), "job {i}: {text}");
            }
            (Fate::Panics, Err(ProverError::Panicked { job, message })) => {
                assert_eq!((job, message.as_str()), (i, "job with a bug"));
            }
            (Fate::EstimatePanics, Err(ProverError::Panicked { job, message })) => {
                assert_eq!((job, message.as_str()), (i, "estimate with a bug"));
            }
            (fate, out) => panic!("job {i} ({fate:?}): unexpected {:?}", out.map(|o| o.path)),
        }
    }
    assert_eq!(ctx.faults().injected_failures_left(), 0, "no fault was left over for other threads");
}

#[test]
fn the_budget_caps_the_jobs_running_and_refuses_one_that_never_fits() {
    let Some(first) = common::contexts().into_iter().next() else { return };
    let small = params(9, 2, 1);
    let estimate = estimated_gpu_bytes(&small, first.tuning(), &DriverOptions::default());
    // Room for two of them at once, not three.
    let budget_mib = (estimate * 5 / 2).div_ceil(1 << 20);
    let options = GpuOptions { memory_mib: Some(budget_mib), ..common::options_for(first.mul_variant()) };
    let Some(ctx) = common::open_with(options) else { return };
    let pool = ProofPool::new(GpuProver::new(ctx.clone()), PoolOptions { in_flight: Some(4) }).unwrap();

    let mut rng = common::rng();
    let mut jobs: Vec<ProofJob> = (0..6).map(|_| ProofJob { params: small.clone(), evals: common::random_vec(&mut rng, 1 << small.num_vars) }).collect();
    // Its estimate alone is over the budget: refused before its (absent) input is looked at.
    jobs.insert(3, ProofJob { params: params(22, 1, 1), evals: Vec::new() });
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (tuning, driver) = (ctx.tuning().clone(), DriverOptions::default());
    let outputs = pool.run_many(
        jobs.clone(),
        |job| estimated_gpu_bytes(&job.params, &tuning, &driver),
        |backend, job| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            let out = backend.prove(&job.params, &job.evals);
            running.fetch_sub(1, Ordering::SeqCst);
            out
        },
    );
    assert!(most.load(Ordering::SeqCst) <= 2, "{} jobs ran at once under a budget for two", most.load(Ordering::SeqCst));
    for (i, out) in outputs.into_iter().enumerate() {
        if i == 3 {
            match out {
                Err(ProverError::Gpu(GpuError::OverBudget { what, .. })) => assert!(what.contains("job 3"), "{what}"),
                other => panic!("the oversized job: {:?}", other.map(|o| o.path)),
            }
            continue;
        }
        let out = out.unwrap_or_else(|e| panic!("job {i}: {e}"));
        assert_eq!(out.path, "gpu");
        out.proof_file(&jobs[i].params).verify(&jobs[i].params).unwrap();
    }
    if let Some(peak) = ctx.memory().peak_buffer_bytes() {
        assert!(peak <= budget_mib << 20, "peak {peak} bytes over the {budget_mib} MiB budget");
    }
}

#[test]
fn pool_options_are_checked_and_the_default_follows_the_adapter() {
    let Some(ctx) = common::contexts().into_iter().next() else { return };
    let backend = GpuProver::new(ctx.clone());
    let err = ProofPool::new(backend.clone(), PoolOptions { in_flight: Some(0) }).err().expect("0 in flight refused").to_string();
    assert!(err.contains("at least one job in flight"), "{err}");
    let pool = ProofPool::new(backend.clone(), PoolOptions::default()).unwrap();
    let expected = if ctx.summary().is_software() { 1 } else { whir_wgpu::prover::DEFAULT_IN_FLIGHT };
    assert_eq!(pool.in_flight(), expected);
    let err = ProofPool::over(vec![backend.clone(), backend.clone()], PoolOptions::default()).err().expect("one context twice refused").to_string();
    assert!(err.contains("share one context"), "{err}");
    let err = ProofPool::over(Vec::new(), PoolOptions::default()).err().expect("no prover refused").to_string();
    assert!(err.contains("at least one GPU prover"), "{err}");
    // Nothing to do is no error.
    assert!(pool.prove_many(Vec::new()).is_empty());
}

/// A pool over two contexts of one adapter (as over two GPUs): jobs run on both, and when one
/// device is destroyed mid-stream its jobs move to the other, none lost, each the lone proof.
#[test]
fn a_pool_over_two_devices_loses_no_proof_when_one_is_lost() {
    let Some(first) = common::contexts().into_iter().next() else { return };
    let open = || common::open_with(common::options_for(first.mul_variant()));
    let (Some(a), Some(b)) = (open(), open()) else { return };
    let mut rng = common::rng();
    let jobs = jobs(&mut rng, 12);
    let lone = alone(&GpuProver::new(first.clone()), &jobs);
    let pool = ProofPool::over(vec![GpuProver::new(a.clone()), GpuProver::new(b.clone())], PoolOptions { in_flight: Some(2) }).unwrap();
    assert_eq!(pool.in_flight(), 4);
    let on_b = AtomicUsize::new(0);
    let destroyed = std::sync::atomic::AtomicBool::new(false);
    let work: Vec<(usize, ProofJob)> = jobs.iter().cloned().enumerate().collect();
    // (Job 0 is left to run undisturbed wherever it lands, so some work is in flight first.)
    let outputs = pool.run_many(
        work,
        |_| 0,
        |backend, (i, job)| {
            let here_b = Arc::ptr_eq(backend.context(), &b);
            if here_b {
                on_b.fetch_add(1, Ordering::SeqCst);
                // The first job to reach b, while a proves others, loses b's device under it:
                // that job (and any other b had in flight) must move to a.
                if *i > 0 && !destroyed.swap(true, Ordering::SeqCst) {
                    b.device().destroy();
                }
            }
            backend.prove_on_gpu(&job.params, &job.evals)
        },
    );
    for (i, out) in outputs.into_iter().enumerate() {
        let out = out.unwrap_or_else(|e| panic!("job {i} was lost: {e}"));
        assert_eq!(out.path, "gpu");
        assert!(out.proof == lone[i], "job {i} differs from its lone proof");
    }
    assert!(destroyed.load(Ordering::SeqCst), "device b was never destroyed (it took {} jobs)", on_b.load(Ordering::SeqCst));
    assert!(b.lost().is_some(), "device b's loss was not reported");
    assert!(a.lost().is_none());
}

/// A slow first job holds back at most the reorder window of later results: the pool takes no
/// job more than 4 per slot past the first result not yet handed on. A sink that panics stops
/// the pool instead of leaving its threads waiting.
#[test]
fn a_slow_job_holds_back_a_bounded_window_and_a_panicking_sink_stops_the_pool() {
    let Some(ctx) = common::contexts().into_iter().next() else { return };
    let pool = ProofPool::new(GpuProver::new(ctx), PoolOptions { in_flight: Some(2) }).unwrap();
    let window = 4 * pool.in_flight();
    let first_done = std::sync::atomic::AtomicBool::new(false);
    let furthest_while_first_ran = AtomicUsize::new(0);
    let mut handed = Vec::new();
    pool.run_ordered(
        0..100usize,
        |_| 0,
        |_, &i| {
            if i == 0 {
                std::thread::sleep(std::time::Duration::from_millis(300));
                first_done.store(true, Ordering::SeqCst);
            } else if !first_done.load(Ordering::SeqCst) {
                furthest_while_first_ran.fetch_max(i, Ordering::SeqCst);
            }
            Ok(i * 10)
        },
        |index, result| handed.push((index, result.unwrap())),
    );
    assert_eq!(handed, (0..100).map(|i| (i, i * 10)).collect::<Vec<_>>(), "every result, in order");
    let furthest = furthest_while_first_ran.load(Ordering::SeqCst);
    assert!(furthest > 0 && furthest < window, "while job 0 ran, job {furthest} started (window {window})");

    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.run_ordered(0..1_000usize, |_| 0, |_, &i| Ok(i), |index, _| assert!(index < 3, "the sink gives up at 3"));
    }));
    assert!(stopped.is_err(), "the sink's panic reaches the caller");
}

/// A service's stream: the next request comes only once the last result is out. The pool hands
/// each result on while it waits for the next job, rather than holding it behind the wait.
#[test]
fn a_stream_that_waits_for_its_results_is_served() {
    let Some(ctx) = common::contexts().into_iter().next() else { return };
    let pool = ProofPool::new(GpuProver::new(ctx), PoolOptions { in_flight: Some(3) }).unwrap();
    let (requests, incoming) = std::sync::mpsc::channel::<usize>();
    requests.send(0).unwrap();
    let mut client = Some(requests);
    let mut served = Vec::new();
    pool.run_ordered(
        incoming,
        |_| 0,
        |_, &request| Ok(request * 2),
        |index, result| {
            served.push((index, result.unwrap()));
            match index {
                9 => client = None, // the client hangs up: the stream ends
                _ => client.as_ref().unwrap().send(index + 1).unwrap(),
            }
        },
    );
    assert_eq!(served, (0..10).map(|i| (i, i * 2)).collect::<Vec<_>>());
}

/// Queues preferred in a compute-only family (`GpuTuning::compute_only_queues`, the default)
/// or in the graphics family, through `ProofPool::on_queues`: where they open they prove as
/// the usual context does, one job a queue by default on a software adapter. A software
/// adapter has one family for everything, so both ask the same family; where it offers one
/// queue (llvmpipe), two are an error that says so, and only that branch runs in CI: the
/// compute-only family proves on the H200 (`whir bench --concurrency ... --queues`, which
/// byte-compares every proof with its lone proof).
#[test]
fn queues_of_either_family_make_the_lone_proofs_or_say_why_not() {
    let Some(first) = common::contexts().into_iter().next() else { return };
    let mut rng = common::rng();
    let jobs = jobs(&mut rng, 2);
    let lone = alone(&GpuProver::new(first.clone()), &jobs);
    for compute_only in [true, false] {
        let mut options = common::options_for(first.mul_variant());
        options.tuning.compute_only_queues = compute_only;
        match ProofPool::on_queues(options, 2, whir_wgpu::prover::DriverOptions::default(), PoolOptions::default()) {
            Ok(pool) => {
                let per_queue = if first.summary().is_software() { 1 } else { whir_wgpu::prover::DEFAULT_IN_FLIGHT_PER_QUEUE };
                assert_eq!(pool.in_flight(), 2 * per_queue);
                for (i, out) in pool.prove_many(jobs.clone()).into_iter().enumerate() {
                    assert!(out.unwrap().proof == lone[i], "job {i} on queues (compute only {compute_only}) differs from its lone proof");
                }
            }
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("offers 1") || e.contains("need a Vulkan adapter"), "compute_only_queues {compute_only}: {e}");
            }
        }
    }
}

/// `ProofPool::on_host`: a pool over adapters named by index (here the test adapter twice, as
/// two GPUs) proves the lone proofs; every hardware adapter by default, which a software-only
/// machine has none of (a clear error); no adapters, or an index `whir info` does not list, are
/// clear errors too.
#[test]
fn a_pool_over_the_hosts_adapters_makes_the_lone_proofs() {
    let Some(first) = common::contexts().into_iter().next() else { return };
    let driver = whir_wgpu::prover::DriverOptions::default();
    let options = common::options_for(first.mul_variant());
    let listed = whir_wgpu::gpu::list_adapters();
    let ours = first.summary();
    let index = listed.iter().position(|a| a.name == ours.name && a.backend == ours.backend).expect("the test adapter is listed");
    let pool = ProofPool::on_host(options.clone(), Some(&[index, index]), 1, driver, PoolOptions::default()).unwrap();
    assert_eq!(pool.in_flight(), 2 * whir_wgpu::prover::default_in_flight(ours));
    let mut rng = common::rng();
    let jobs = jobs(&mut rng, 3);
    let lone = alone(&GpuProver::new(first.clone()), &jobs);
    for (i, out) in pool.prove_many(jobs.clone()).into_iter().enumerate() {
        assert!(out.unwrap().proof == lone[i], "job {i} on two devices of adapter {index} differs from its lone proof");
    }
    match ProofPool::on_host(options.clone(), None, 1, driver, PoolOptions::default()) {
        Ok(pool) => assert!(!whir_wgpu::gpu::pool_adapters(&listed).is_empty() && pool.in_flight() >= 1),
        Err(e) => assert!(whir_wgpu::gpu::pool_adapters(&listed).is_empty() && e.to_string().contains("no hardware GPU adapter"), "{e}"),
    }
    let err = ProofPool::on_host(options.clone(), Some(&[]), 1, driver, PoolOptions::default()).err().expect("no adapters refused").to_string();
    assert!(err.contains("no adapters given"), "{err}");
    let err = ProofPool::on_host(options, Some(&[listed.len()]), 1, driver, PoolOptions::default()).err().expect("an unlisted adapter refused").to_string();
    assert!(err.contains(&format!("there is no adapter {}", listed.len())), "{err}");
}

/// Contexts on queues of one device (`GpuContext::on_queues`; on Vulkan the device is opened
/// by us, a wgpu device wrapping each queue): a pool over them proves every job as the usual
/// context does, and the stock verifier accepts them. As many queues as the adapter's family
/// offers (a software adapter may offer one); more is an error that says how many there are,
/// as is 0 or more than `MAX_QUEUES`.
#[test]
fn a_pool_over_queues_of_one_device_makes_the_lone_proofs() {
    let Some(first) = common::contexts().into_iter().next() else { return };
    let options = common::options_for(first.mul_variant());
    for bad in [0, whir_wgpu::gpu::MAX_QUEUES + 1] {
        let err = whir_wgpu::gpu::GpuContext::on_queues(options.clone(), bad).map(|_| ()).unwrap_err();
        assert!(err.to_string().contains("queues asked for"), "{bad}: {err}");
    }
    // One wgpu trace directory cannot take several devices' traces.
    let traced = GpuOptions { trace_dir: Some(std::env::temp_dir()), ..options.clone() };
    let err = whir_wgpu::gpu::GpuContext::on_queues(traced, 2).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("trace one queue"), "{err}");
    let mut contexts = Vec::new();
    for count in 1..=whir_wgpu::gpu::MAX_QUEUES {
        match whir_wgpu::gpu::GpuContext::on_queues(options.clone(), count) {
            Ok(c) => {
                assert_eq!(c.len(), count);
                contexts = c;
                if count == 4 {
                    break;
                }
            }
            Err(e) => {
                assert!(count > 1, "one queue must open wherever a context does: {e}");
                assert!(e.to_string().contains(&format!("offers {}", count - 1)) || e.to_string().contains("Vulkan"), "{count} queues: {e}");
                break;
            }
        }
    }
    let mut rng = common::rng();
    let jobs = jobs(&mut rng, 6);
    let lone = alone(&GpuProver::new(first.clone()), &jobs);
    // Each context submits to a queue of its own.
    let queues: Vec<String> =
        contexts.iter().filter_map(|c| unsafe { c.queue().as_hal::<whir_wgpu::gpu::wgpu::hal::api::Vulkan>() }.map(|q| format!("{:?}", q.as_raw()))).collect();
    let distinct: std::collections::HashSet<&String> = queues.iter().collect();
    assert_eq!(distinct.len(), queues.len(), "contexts share a queue: {queues:?}");
    let backends: Vec<GpuProver> = contexts.into_iter().map(|c| GpuProver::new(Arc::new(c))).collect();
    let queues = backends.len();
    let pool = ProofPool::over(backends, PoolOptions { in_flight: Some(2) }).unwrap();
    assert_eq!(pool.in_flight(), 2 * queues);
    for (i, (out, job)) in pool.prove_many(jobs.clone()).into_iter().zip(&jobs).enumerate() {
        let out = out.unwrap_or_else(|e| panic!("job {i} on {queues} queue(s): {e}"));
        assert_eq!(out.path, "gpu");
        assert!(out.proof == lone[i], "job {i} on {queues} queue(s) differs from its lone proof");
        out.proof_file(&job.params).verify(&job.params).unwrap_or_else(|e| panic!("job {i}: the stock verifier rejected it: {e}"));
    }
}

/// Issue 56, 2: hiding jobs in flight together (a generator forked per job, in the jobs'
/// order) give `HidingWhirPcs`'s proofs for those forks, byte for byte, and p3-whir's verifier
/// accepts each; the same generator gives the same proofs in flight one at a time.
#[test]
fn hiding_proofs_in_flight_are_plonky3s_for_their_forks() {
    use p3_dft::Radix2DFTSmallBatch;
    use p3_multilinear_util::point::Point;
    use p3_multilinear_util::poly::Poly;
    use p3_whir::{FoldingFactor, HidingWhirPcs, ProtocolParameters, SecurityAssumption, ZkParameters, ZkWhirConfig};
    use whir_wgpu::gpu::GpuChallenger;
    use whir_wgpu::prover::{HidingJob, Plonky3Pieces, EF, F};
    use whir_wgpu::verifier::hash::{cpu_mmcs_with, CpuMmcs, LeafSponge};
    let mut rng = common::rng();
    let vars = 12;
    let protocol = ProtocolParameters {
        security_level: 32,
        pow_bits: 5,
        round_log_inv_rates: vec![],
        folding_factor: FoldingFactor::Constant(3),
        soundness_type: SecurityAssumption::JohnsonBound,
        starting_log_inv_rate: 2,
    };
    let config = ZkWhirConfig::<EF, F, GpuChallenger>::new(vars, protocol, ZkParameters { ell_zk: 4, mask_log_inv_rate: 1 }).unwrap();
    let jobs: Vec<HidingJob<EF>> = (0..5)
        .map(|i| HidingJob { witness: Poly::new(common::random_vec(&mut rng, 1 << vars)), points: (0..i % 3).map(|_| Point::rand(&mut rng, vars)).collect() })
        .collect();
    let seed = rng.random::<u64>();
    for ctx in common::contexts() {
        let backend = GpuProver::new(ctx.clone());
        let mut outputs = Vec::new();
        for in_flight in [3, 1] {
            let pool = ProofPool::new(backend.clone(), PoolOptions { in_flight: Some(in_flight) }).unwrap();
            let proofs = pool.prove_hiding_many(&config, LeafSponge::Width16, jobs.clone(), &mut StdRng::seed_from_u64(seed));
            outputs.push(proofs.into_iter().map(|r| r.unwrap()).map(|o| (o.commitment, postcard::to_allocvec(&o.proof).unwrap())).collect::<Vec<_>>());
        }
        assert!(outputs[0] == outputs[1], "{:?}: 3 in flight and 1 in flight differ", ctx.mul_variant());
        let mut forks = StdRng::seed_from_u64(seed);
        for (job, (root, bytes)) in jobs.iter().zip(&outputs[0]) {
            let stock = HidingWhirPcs::<EF, F, Radix2DFTSmallBatch<F>, CpuMmcs<F>, GpuChallenger, StdRng>::new(
                config.clone(),
                Radix2DFTSmallBatch::default(),
                cpu_mmcs_with::<F>(0, LeafSponge::Width16),
                StdRng::from_rng(&mut forks),
            );
            let mut challenger = Plonky3Pieces::challenger(&backend);
            let (expected_root, data) = stock.commit(job.witness.clone(), &mut challenger).unwrap();
            let expected = stock.open(data, job.points.clone(), &mut challenger).unwrap();
            assert!(root == &expected_root && bytes == &postcard::to_allocvec(&expected).unwrap(), "{:?}: a pooled hiding proof differs", ctx.mul_variant());
            stock.verify(root, &expected, &mut Plonky3Pieces::challenger(&backend), job.points.clone()).unwrap();
        }
    }
}
