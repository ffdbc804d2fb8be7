//! The prover API: CPU and GPU backends make byte-identical proof files that the stock p3-whir
//! verifier accepts after a serialization round trip; flipped bytes and bad parameters are
//! rejected with plain messages.

mod common;

use rand::RngExt;
use whir_wgpu::prover::{CpuProver, GpuProver, Params, Plonky3Pieces, ProofFile, Soundness};

fn params(num_vars: usize, fold: usize, log_inv_rate: usize, points: usize) -> Params {
    // Small sizes keep CI fast; 60-bit security with a 10-bit PoW budget is feasible for them.
    Params { num_vars, fold, log_inv_rate, security_bits: 60, pow_bits: 10, soundness: Soundness::Johnson, points, leaf: Default::default() }
}

#[test]
fn backends_make_identical_proofs_the_stock_verifier_accepts() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let gpu = GpuProver::new(ctx);
        for p in [params(8, 1, 1, 1), params(10, 2, 2, 2), params(13, 4, 1, 1), params(12, 3, 1, 3)] {
            let evals = common::random_vec(&mut rng, 1 << p.num_vars);
            let cpu_file = CpuProver.prove(&p, &evals).unwrap().proof_file(&p).to_bytes();
            let gpu_file = gpu.prove(&p, &evals).unwrap().proof_file(&p).to_bytes();
            assert_eq!(gpu_file, cpu_file, "{p:?}");
            ProofFile::from_bytes(&gpu_file).unwrap().verify(&p).expect("stock verifier accepts");

            for _ in 0..8 {
                let mut bad = gpu_file.clone();
                let i = rng.random_range(0..bad.len());
                bad[i] ^= 1 << rng.random_range(0..8);
                let verdict = ProofFile::from_bytes(&bad).and_then(|f| f.verify(&p));
                assert!(verdict.is_err(), "flipped byte {i} of {} accepted", bad.len());
            }
            let truncated = ProofFile::from_bytes(&gpu_file[..gpu_file.len() / 2]).unwrap_err();
            assert!(truncated.to_string().contains("truncated or corrupted"), "{truncated}");
        }
    }
}

#[test]
fn bad_parameters_and_inputs_are_explained() {
    let p =
        Params { num_vars: 24, fold: 4, log_inv_rate: 1, security_bits: 100, pow_bits: 20, soundness: Soundness::Johnson, points: 1, leaf: Default::default() };
    let err = CpuProver.prove(&p, &[] as &[p3_baby_bear::BabyBear]).unwrap_err().to_string();
    assert!(err.contains("use --pow-bits 22"), "{err}");

    let p = params(3, 4, 1, 1);
    let err = p.config::<whir_wgpu::gpu::GpuChallenger>().unwrap_err().to_string();
    assert!(err.contains("use --fold 3 or less"), "{err}");

    let p = params(8, 1, 1, 1);
    let err = CpuProver.prove(&p, &common::random_vec(&mut common::rng(), 100)).unwrap_err().to_string();
    assert!(err.contains("100 evaluations given for n = 8"), "{err}");

    let err = ProofFile::from_bytes(b"not a proof").unwrap_err().to_string();
    assert!(err.contains("not a whir-wgpu proof file"), "{err}");

    // n = 28 fits BabyBear's 2^27 domain only folded: fold 2 at rate 1, as p3-whir takes it.
    let err = params(28, 1, 1, 1).config::<whir_wgpu::gpu::GpuChallenger>().unwrap_err().to_string();
    assert!(err.contains("use --fold 2 or more") && !err.contains("--rate 0"), "{err}");
    params(28, 2, 1, 1).config::<whir_wgpu::gpu::GpuChallenger>().expect("n = 28 at fold 2");
    let err = params(29, 4, 1, 1).config::<whir_wgpu::gpu::GpuChallenger>().unwrap_err().to_string();
    assert!(err.contains("1..=28 variables"), "{err}");
}

/// A GPU memory budget: a proof estimated not to fit is refused before any work, with an error
/// naming the budget (not moved to the CPU); one that fits proves within it; a buffer that
/// would overrun it at run time makes the step that asked for it fail.
#[test]
fn gpu_memory_budgets_refuse_what_does_not_fit() {
    use whir_wgpu::gpu::{GpuError, GpuOptions};
    use whir_wgpu::prover::{estimated_gpu_bytes, ProverError};
    let mut rng = common::rng();
    let p = params(12, 2, 1, 1);
    let evals = common::random_vec(&mut rng, 1 << 12);
    let estimate_mib = estimated_gpu_bytes(&p, &common::env_options().tuning, &Default::default()).div_ceil(1 << 20);
    let Some(tight) = common::open_with(GpuOptions { memory_mib: Some(estimate_mib - 1), ..common::env_options() }) else { return };
    match GpuProver::new(tight.clone()).prove(&p, &evals) {
        Err(ProverError::Gpu(GpuError::OverBudget { budget_mib, .. })) => assert_eq!(budget_mib, (estimate_mib - 1) as f64),
        other => panic!("expected a refusal naming the budget, got {:?}", other.map(|o| o.path)),
    }
    assert_eq!(tight.transfers().transfer_counts().submissions, 0, "refused before any work");

    let roomy = common::open_with(GpuOptions { memory_mib: Some(estimate_mib + 64), ..common::env_options() }).expect("context");
    let out = GpuProver::new(roomy.clone()).prove(&p, &evals).expect("fits");
    assert_eq!(out.path, "gpu");
    if let Some(peak) = out.peak_gpu_bytes {
        assert!(peak <= (estimate_mib + 64) << 20, "peak {peak} bytes over the budget");
    }
    ProofFile::from_bytes(&out.proof_file(&p).to_bytes()).unwrap().verify(&p).expect("verifies");

    // At run time: a buffer past the budget fails the scoped step that made it (where the
    // backend counts buffer memory; wgpu's Vulkan backend does).
    if roomy.memory().buffer_bytes() > 0 {
        let err = roomy.scoped("test step", || {
            let _big = roomy.memory().storage("too big", ((estimate_mib + 65) << 20) as usize / 4);
            Ok(())
        });
        assert!(matches!(err, Err(GpuError::OverBudget { .. })), "{err:?}");
        // And the next step is not blamed for it.
        roomy.scoped("next step", || Ok(())).expect("the overrun is reported once");
    }
}

/// The pre-flight estimate a memory budget is checked against covers what a resident proof
/// really holds at once (no idle pools kept), over folds 1-4 and rates 1-2.
#[test]
fn the_memory_estimate_covers_the_live_peak() {
    use whir_wgpu::gpu::GpuOptions;
    use whir_wgpu::prover::estimated_gpu_bytes;
    let mut rng = common::rng();
    let Some(ctx) = common::open_with(GpuOptions { pool_mib: Some(0), ..common::env_options() }) else { return };
    if ctx.memory().buffer_bytes() == 0 && ctx.memory().peak_buffer_bytes().is_none() {
        eprintln!("this backend keeps no buffer-memory count; nothing to compare");
        return;
    }
    let gpu = GpuProver::new(ctx);
    for (n, fold, rate) in [(14usize, 1usize, 1usize), (14, 2, 2), (15, 4, 1), (16, 1, 2), (16, 3, 1)] {
        let p = params(n, fold, rate, 1);
        if p.config::<whir_wgpu::gpu::GpuChallenger>().is_err() {
            continue;
        }
        let evals = common::random_vec(&mut rng, 1 << n);
        let out = gpu.prove(&p, &evals).unwrap();
        assert_eq!(out.path, "gpu");
        let peak = out.peak_gpu_bytes.expect("counted");
        let estimate = estimated_gpu_bytes(&p, gpu.context().tuning(), &Default::default());
        assert!(peak <= estimate, "n = {n} fold {fold} rate {rate}: live peak {peak} bytes over the estimate {estimate}");
        eprintln!("n = {n} fold {fold} rate {rate}: live peak {:.1} MiB, estimate {:.1} MiB", peak as f64 / 1048576.0, estimate as f64 / 1048576.0);
    }
}
