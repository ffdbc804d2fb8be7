//! The prover API: CPU and GPU backends make byte-identical proof files that the stock p3-whir
//! verifier accepts after a serialization round trip; flipped bytes and bad parameters are
//! rejected with plain messages.

mod common;

use rand::RngExt;
use whir_wgpu::prover::{Backend, CpuBackend, GpuBackend, Params, ProofFile, Soundness};

fn params(num_vars: usize, fold: usize, log_inv_rate: usize, points: usize) -> Params {
    // Small sizes keep CI fast; 60-bit security with a 10-bit PoW budget is feasible for them.
    Params { num_vars, fold, log_inv_rate, security_bits: 60, pow_bits: 10, soundness: Soundness::Johnson, points }
}

#[test]
fn backends_make_identical_proofs_the_stock_verifier_accepts() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let gpu = GpuBackend::new(ctx);
        for p in [params(8, 1, 1, 1), params(10, 2, 2, 2), params(13, 4, 1, 1), params(12, 3, 1, 3)] {
            let evals = common::random_vec(&mut rng, 1 << p.num_vars);
            let cpu_file = ProofFile::new(&p, &CpuBackend.prove(&p, &evals).unwrap()).to_bytes();
            let gpu_file = ProofFile::new(&p, &gpu.prove(&p, &evals).unwrap()).to_bytes();
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
    let p = Params { num_vars: 24, fold: 4, log_inv_rate: 1, security_bits: 100, pow_bits: 20, soundness: Soundness::Johnson, points: 1 };
    let err = CpuBackend.prove(&p, &[]).unwrap_err().to_string();
    assert!(err.contains("use --pow-bits 22"), "{err}");

    let p = params(3, 4, 1, 1);
    let err = p.config::<whir_wgpu::gpu::GpuChallenger>().unwrap_err().to_string();
    assert!(err.contains("use --fold 3 or less"), "{err}");

    let p = params(8, 1, 1, 1);
    let err = CpuBackend.prove(&p, &common::random_vec(&mut common::rng(), 100)).unwrap_err().to_string();
    assert!(err.contains("100 evaluations given for n = 8"), "{err}");

    let err = ProofFile::from_bytes(b"not a proof").unwrap_err().to_string();
    assert!(err.contains("not a whir-wgpu proof file"), "{err}");
}
