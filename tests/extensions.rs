//! WHIR with its challenges in the 128-bit extensions (BabyBear's binomial extensions of
//! degree 5 and 8, KoalaBear's of degree 8 and its quintic trinomial one): our driver's CPU twin
//! against Plonky3's `WhirProver` over the same field and extension, byte for byte, in proof
//! files the stock verifier accepts, over a random grid. (The GPU steps run the degree-4
//! extensions; these configurations prove on the CPU.)

mod common;

use p3_baby_bear::BabyBear;
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_field::extension::{BinomialExtensionField, QuinticTrinomialExtensionField};
use p3_koala_bear::KoalaBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::layout::{Layout, SuffixProver, Table};
use p3_whir::WhirProver;
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::RngExt;
use whir_wgpu::gpu::{GpuChallenger, Poseidon2Constants};
use whir_wgpu::prover::{opening_protocol, prove_with_steps, CpuCodewords, DriverOptions, Params, ProofFileOf, ProverField, Soundness, WhirExtension};
use whir_wgpu::verifier::hash::{cpu_mmcs, CpuMmcs};

fn challenger<F: ProverField>() -> GpuChallenger<F> {
    GpuChallenger::new(Poseidon2Constants::<F>::plonky3_default().to_cpu(), None)
}

/// Shapes drawn as the degree-4 grids draw them; infeasible ones skipped.
fn grid<F: ProverField, E: WhirExtension<F>>(rng: &mut StdRng, count: usize) -> Vec<Params> {
    common::random_params(rng, count, 6..=12, |p| p.config_over::<E, GpuChallenger<F>>().is_ok())
}

/// Our twin's proof of fresh evaluations equals `WhirProver`'s over `F` and `E`, and a proof
/// file of it verifies with the stock verifier (and is refused as another extension's).
fn check<F: ProverField, E: WhirExtension<F>>(rng: &mut StdRng)
where
    StandardUniform: Distribution<F>,
{
    for p in grid::<F, E>(rng, 4) {
        let evals: Vec<F> = (0..1usize << p.num_vars).map(|_| rng.random()).collect();
        let config = p.config_over::<E, GpuChallenger<F>>().unwrap();
        let stock = WhirProver::<E, F, Radix2DFTSmallBatch<F>, CpuMmcs<F>, GpuChallenger<F>, SuffixProver<F, E>>::new(config, Radix2DFTSmallBatch::default(), cpu_mmcs::<F>(0));
        let witness = SuffixProver::<F, E>::new_witness(vec![Table::new(RowMajorMatrix::new(evals.clone(), evals.len()))], p.fold);
        let mut ch = challenger::<F>();
        let (root, data) = stock.commit(witness, &mut ch).unwrap();
        let expected = stock.open(data, opening_protocol(&p), &mut ch).unwrap();
        let (commitment, proof, _) =
            prove_with_steps(&CpuCodewords::<F, E>::default(), &p, &evals, &mut challenger::<F>(), DriverOptions::default()).unwrap_or_else(|e| panic!("{} {p:?}: {e}", E::NAME));
        assert!(commitment == root, "{} {p:?}: the commitments differ", E::NAME);
        let bytes = postcard::to_allocvec(&proof).unwrap();
        assert!(bytes == postcard::to_allocvec(&expected).unwrap(), "{} {p:?}: the twin's proof differs from Plonky3's", E::NAME);
        let file = ProofFileOf::<F, E>::new(&p, commitment, bytes).to_bytes();
        assert_eq!(whir_wgpu::prover::proof_file_extension(&file).unwrap(), E::NAME);
        ProofFileOf::<F, E>::from_bytes(&file).unwrap().verify(&p).unwrap_or_else(|e| panic!("{} {p:?}: {e}", E::NAME));
        let err = ProofFileOf::<F>::from_bytes(&file).unwrap_err().to_string();
        assert!(err.contains(&format!("over {}", E::NAME)), "{err}");
    }
}

#[test]
fn babybear_degree_5_and_8_match_plonky3() {
    let mut rng = common::rng();
    check::<BabyBear, BinomialExtensionField<BabyBear, 5>>(&mut rng);
    check::<BabyBear, BinomialExtensionField<BabyBear, 8>>(&mut rng);
}

#[test]
fn koalabear_quintic_and_degree_8_match_plonky3() {
    let mut rng = common::rng();
    check::<KoalaBear, QuinticTrinomialExtensionField<KoalaBear>>(&mut rng);
    check::<KoalaBear, BinomialExtensionField<KoalaBear, 8>>(&mut rng);
}

/// The named 128-bit configurations are feasible where p3-whir says so, and say why where not.
#[test]
fn configurations_at_128_bits() {
    let at = |fold, soundness, pow_bits| Params { num_vars: 24, fold, log_inv_rate: 1, security_bits: 128, pow_bits, soundness, points: 1 };
    // KoalaBear^8, capacity bound, fold 4, rate 1: p3-whir's own KoalaBear benchmark.
    at(4, Soundness::Capacity, 20).config_over::<BinomialExtensionField<KoalaBear, 8>, GpuChallenger<KoalaBear>>().expect("KoalaBear^8 at 128 bits (capacity)");
    // BabyBear^8 under the Johnson bound.
    at(4, Soundness::Johnson, 22).config_over::<BinomialExtensionField<BabyBear, 8>, GpuChallenger<BabyBear>>().expect("BabyBear^8 at 128 bits (Johnson)");
    // A degree-4 extension cannot: |BabyBear^4| < 2^124; the message says why.
    let err = at(4, Soundness::Johnson, 22).config::<GpuChallenger<BabyBear>>().map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("infeasible"), "{err}");
}
