//! WHIR with its challenges in the 128-bit extensions (BabyBear's binomial extensions of
//! degree 5 and 8, KoalaBear's of degree 8 and its quintic trinomial one): our driver's CPU twin
//! against Plonky3's `WhirProver` over the same field and extension, byte for byte, in proof
//! files the stock verifier accepts, over a random grid; then the GPU's resident driver and PCS
//! over the same extensions, against the same.

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
use whir_wgpu::prover::backend::CpuBackend;
use whir_wgpu::prover::prove_with_backend;
use whir_wgpu::prover::{DriverOptions, Params, ProofFileOf, ProverField, Soundness, WhirExtension};
use whir_wgpu::verifier::hash::{cpu_mmcs, CpuMmcs};
use whir_wgpu::verifier::opening_protocol;

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
    // Four random shapes, and one at 128 bits (the first regime p3-whir finds feasible there).
    let at_128 = [Soundness::Unique, Soundness::Johnson, Soundness::Capacity]
        .into_iter()
        .map(|soundness| Params { num_vars: 12, fold: 2, log_inv_rate: 2, security_bits: 128, pow_bits: 20, soundness, points: 1, leaf: Default::default() })
        .find(|p| p.config_over::<E, GpuChallenger<F>>().is_ok())
        .unwrap_or_else(|| panic!("no 128-bit regime feasible over {} at n = 12", E::NAME));
    for p in grid::<F, E>(rng, 4).into_iter().chain([at_128]) {
        let evals: Vec<F> = (0..1usize << p.num_vars).map(|_| rng.random()).collect();
        let config = p.config_over::<E, GpuChallenger<F>>().unwrap();
        let stock = WhirProver::<E, F, Radix2DFTSmallBatch<F>, CpuMmcs<F>, GpuChallenger<F>, SuffixProver<F, E>>::new(
            config,
            Radix2DFTSmallBatch::default(),
            cpu_mmcs::<F>(0),
        );
        let witness = SuffixProver::<F, E>::new_witness(vec![Table::new(RowMajorMatrix::new(evals.clone(), evals.len()))], p.fold);
        let mut ch = challenger::<F>();
        let (root, data) = stock.commit(witness, &mut ch).unwrap();
        let expected = stock.open(data, opening_protocol(&p), &mut ch).unwrap();
        let (commitment, proof, _) = prove_with_backend(&CpuBackend::<F, E>::default(), &p, &evals, &mut challenger::<F>(), DriverOptions::default())
            .unwrap_or_else(|e| panic!("{} {p:?}: {e}", E::NAME));
        assert!(commitment == root, "{} {p:?}: the commitments differ", E::NAME);
        let bytes = postcard::to_allocvec(&proof).unwrap();
        assert!(bytes == postcard::to_allocvec(&expected).unwrap(), "{} {p:?}: the twin's proof differs from Plonky3's", E::NAME);
        let file = ProofFileOf::<F, E>::new(&p, commitment, bytes).to_bytes();
        assert_eq!(whir_wgpu::verifier::proof_file_extension(&file).unwrap(), E::NAME);
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
    let at = |fold, soundness, pow_bits| Params {
        num_vars: 24,
        fold,
        log_inv_rate: 1,
        security_bits: 128,
        pow_bits,
        soundness,
        points: 1,
        leaf: Default::default(),
    };
    // KoalaBear^8, capacity bound, fold 4, rate 1: p3-whir's own KoalaBear benchmark.
    at(4, Soundness::Capacity, 20).config_over::<BinomialExtensionField<KoalaBear, 8>, GpuChallenger<KoalaBear>>().expect("KoalaBear^8 at 128 bits (capacity)");
    // BabyBear^8 under the Johnson bound.
    at(4, Soundness::Johnson, 22).config_over::<BinomialExtensionField<BabyBear, 8>, GpuChallenger<BabyBear>>().expect("BabyBear^8 at 128 bits (Johnson)");
    // A degree-4 extension cannot: |BabyBear^4| < 2^124; the message says why.
    let err = at(4, Soundness::Johnson, 22).config::<GpuChallenger<BabyBear>>().map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("infeasible"), "{err}");
}

/// The PCS over the 128-bit extensions: two tables with successor views, in both layouts, with
/// drawn and prescribed points, our twin against `WhirProver` (its `stock()`), byte for byte,
/// accepted by `verify` / `verify_at`.
fn check_pcs<F: ProverField, E: WhirExtension<F>, L: Layout<F, E>>(
    rng: &mut StdRng,
    new_witness: impl Fn(Vec<Table<F>>, usize) -> p3_sumcheck::layout::Witness<F>,
) where
    StandardUniform: Distribution<F>,
{
    use whir_wgpu::prover::CpuWhirPcs;
    let fold = rng.random_range(1..=3);
    let tables = [(rng.random_range(5..=8), 2), (rng.random_range(3..=6), 1)];
    let (protocol, p) = common::table_protocol(&tables, &[(0, vec![0, 1], vec![1]), (1, vec![0], vec![0])], fold);
    let config = p.config_over::<E, GpuChallenger<F>>().unwrap();
    let values: Vec<Table<F>> = tables.iter().map(|&(v, w)| Table::new(RowMajorMatrix::new((0..w << v).map(|_| rng.random()).collect(), 1 << v))).collect();
    let twin = CpuWhirPcs::<L, F, E>::new(config, CpuBackend::default());
    for prescribed in [false, true] {
        let ours = prove_pcs(&twin, new_witness(values.clone(), fold), &protocol, prescribed);
        let theirs = prove_pcs(twin.stock(), new_witness(values.clone(), fold), &protocol, prescribed);
        assert!(ours == theirs, "{} {p:?} (prescribed {prescribed}): the twin's PCS proof differs from Plonky3's", E::NAME);
    }
}

/// Commits `witness` with `pcs` after an outer protocol's observation, draws the points
/// (prescribed: the outer protocol samples them after the commitment), opens, and checks the
/// proof with `pcs`'s own verifier on the same transcript: the proof's bytes.
fn prove_pcs<F: ProverField, E: WhirExtension<F>, P>(
    pcs: &P,
    witness: p3_sumcheck::layout::Witness<F>,
    protocol: &p3_sumcheck::OpeningProtocol,
    prescribed: bool,
) -> Vec<u8>
where
    P: p3_sumcheck::PrescribedPointPcs<
        E,
        GpuChallenger<F>,
        Val = F,
        Witness = p3_sumcheck::layout::Witness<F>,
        OpeningProtocol = p3_sumcheck::OpeningProtocol,
        Commitment = whir_wgpu::prover::Commitment<F>,
    >,
    P: p3_sumcheck::PrescribedPointPcs<E, GpuChallenger<F>, Proof = whir_wgpu::prover::WhirPcsProof<F, E>>,
    P::ProverError: std::fmt::Debug,
    P::Error: std::fmt::Debug,
{
    use p3_challenger::{CanObserve, FieldChallenger};
    use p3_multilinear_util::point::Point;
    let points_from = |ch: &mut GpuChallenger<F>| -> Vec<Point<E>> {
        let shapes = protocol.table_shapes();
        protocol.iter_openings().map(|(t, _)| Point::new((0..shapes[t].num_variables()).map(|_| ch.sample_algebra_element()).collect())).collect()
    };
    let mut ch = challenger::<F>();
    ch.observe(F::ONE);
    let (root, data) = pcs.commit(witness, &mut ch).unwrap();
    let points = if prescribed { points_from(&mut ch) } else { Vec::new() };
    let proof = if prescribed { pcs.open_at(data, protocol, &points, &mut ch) } else { pcs.open(data, protocol.clone(), &mut ch) }.unwrap();
    let mut verifier = challenger::<F>();
    verifier.observe(F::ONE);
    if prescribed {
        pcs.observe_commitment(&root, &mut verifier);
        assert_eq!(points_from(&mut verifier), points);
        pcs.verify_at(&root, &proof, protocol, &points, &mut verifier).expect("verify_at accepts");
    } else {
        pcs.verify(&root, &proof, &mut verifier, protocol.clone()).expect("verify accepts");
    }
    postcard::to_allocvec(&proof).unwrap()
}

#[test]
fn the_pcs_over_degree_8_and_quintic_matches_plonky3() {
    use p3_sumcheck::layout::PrefixProver;
    let mut rng = common::rng();
    type B8 = BinomialExtensionField<BabyBear, 8>;
    type K5 = QuinticTrinomialExtensionField<KoalaBear>;
    check_pcs::<BabyBear, B8, SuffixProver<BabyBear, B8>>(&mut rng, SuffixProver::<BabyBear, B8>::new_witness);
    check_pcs::<BabyBear, B8, PrefixProver<BabyBear, B8>>(&mut rng, PrefixProver::<BabyBear, B8>::new_witness);
    check_pcs::<KoalaBear, K5, SuffixProver<KoalaBear, K5>>(&mut rng, SuffixProver::<KoalaBear, K5>::new_witness);
    check_pcs::<KoalaBear, K5, PrefixProver<KoalaBear, K5>>(&mut rng, PrefixProver::<KoalaBear, K5>::new_witness);
}

/// The GPU's resident driver over the 128-bit extensions it runs (BabyBear^8, KoalaBear^8, the
/// quintic ones): its proofs equal `WhirProver`'s byte for byte and verify, over a random grid
/// and one 128-bit shape, with the CPU's grinds and the GPU's, lazy first weights on and off;
/// both multiply variants.
fn check_gpu_over<F: ProverField, E8: WhirExtension<F> + whir_wgpu::gpu::GpuExtension<F>>(rng: &mut StdRng)
where
    StandardUniform: Distribution<F>,
{
    use std::sync::Arc;
    use whir_wgpu::gpu::{GpuGrinder, GpuMerkle, GpuNtt, GpuPoseidon2};
    use whir_wgpu::prover::backend::GpuBackend;
    let at_128 = [Soundness::Johnson, Soundness::Capacity, Soundness::Unique]
        .into_iter()
        .flat_map(|soundness| {
            [4, 2].map(|fold| Params { num_vars: 12, fold, log_inv_rate: 1, security_bits: 128, pow_bits: 20, soundness, points: 1, leaf: Default::default() })
        })
        .find(|p| p.config_over::<E8, GpuChallenger<F>>().is_ok())
        .unwrap_or_else(|| panic!("no 128-bit regime over {} at n = 12", E8::NAME));
    let shapes: Vec<Params> = grid::<F, E8>(rng, 4).into_iter().chain([at_128]).collect();
    for ctx in common::contexts() {
        let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F>::plonky3_default()));
        let steps = GpuBackend::new(Arc::new(GpuNtt::new(ctx.clone())), Arc::new(GpuMerkle::new(poseidon2.clone()))).unwrap();
        let grinder = Arc::new(GpuGrinder::new(poseidon2));
        for (k, p) in shapes.iter().enumerate() {
            let evals: Vec<F> = (0..1usize << p.num_vars).map(|_| rng.random()).collect();
            // (The twin's proofs equal WhirProver's: the tests above.)
            let (root, proof, _) = prove_with_backend(&CpuBackend::<F, E8>::default(), p, &evals, &mut challenger::<F>(), DriverOptions::default()).unwrap();
            let expected = (postcard::to_allocvec(&root).unwrap(), postcard::to_allocvec(&proof).unwrap());
            let options = DriverOptions { lazy_first_weights: Some(k % 2 == 0), ..DriverOptions::default() };
            let what = format!("{} {p:?} ({:?}, lazy {:?})", E8::NAME, ctx.mul_variant(), options.lazy_first_weights);
            for gpu_grinds in [false, true] {
                let mut ch = if gpu_grinds {
                    GpuChallenger::new(Poseidon2Constants::<F>::plonky3_default().to_cpu(), Some(grinder.clone())).with_gpu_min_bits(1)
                } else {
                    challenger::<F>()
                };
                let (commitment, proof, _) = prove_with_backend::<F, E8, _, _>(&steps, p, &evals, &mut ch, options).unwrap_or_else(|e| panic!("{what}: {e}"));
                let ours = (postcard::to_allocvec(&commitment).unwrap(), postcard::to_allocvec(&proof).unwrap());
                assert!(ours == expected, "{what} (GPU grinds {gpu_grinds}): the GPU proof differs from Plonky3's");
                if gpu_grinds {
                    let file = ProofFileOf::<F, E8>::new(p, commitment, ours.1).to_bytes();
                    ProofFileOf::<F, E8>::from_bytes(&file).unwrap().verify(p).unwrap_or_else(|e| panic!("{what}: {e}"));
                }
            }
        }
    }
}

#[test]
fn gpu_proofs_over_babybear_8_match_plonky3() {
    check_gpu_over::<BabyBear, BinomialExtensionField<BabyBear, 8>>(&mut common::rng());
}

#[test]
fn gpu_proofs_over_koalabear_8_match_plonky3() {
    check_gpu_over::<KoalaBear, BinomialExtensionField<KoalaBear, 8>>(&mut common::rng());
}

#[test]
fn gpu_proofs_over_the_quintic_extensions_match_plonky3() {
    let mut rng = common::rng();
    check_gpu_over::<BabyBear, BinomialExtensionField<BabyBear, 5>>(&mut rng);
    check_gpu_over::<KoalaBear, QuinticTrinomialExtensionField<KoalaBear>>(&mut rng);
}

/// The GPU PCS over BabyBear^8, KoalaBear^8 and the quintic extensions (`WhirPcs` over `GpuBackend`): two tables with
/// successor views, both layouts, drawn and prescribed points, against `WhirProver`, byte for
/// byte, accepted by its verifier; both multiply variants.
#[test]
fn the_gpu_pcs_over_degree_8_and_5_matches_plonky3() {
    use p3_sumcheck::layout::PrefixProver;
    use std::sync::Arc;
    use whir_wgpu::gpu::{GpuMerkle, GpuNtt, GpuPoseidon2};
    use whir_wgpu::prover::backend::GpuBackend;
    use whir_wgpu::prover::WhirPcs;
    fn check<F: ProverField, E8: WhirExtension<F> + whir_wgpu::gpu::GpuExtension<F>, L: Layout<F, E8>>(
        rng: &mut StdRng,
        ctx: &Arc<whir_wgpu::gpu::GpuContext>,
        new_witness: impl Fn(Vec<Table<F>>, usize) -> p3_sumcheck::layout::Witness<F>,
    ) where
        StandardUniform: Distribution<F>,
    {
        let fold = rng.random_range(1..=3);
        let tables = [(rng.random_range(5..=8), 2), (rng.random_range(3..=6), 1)];
        let (protocol, p) = common::table_protocol(&tables, &[(0, vec![0, 1], vec![1]), (1, vec![0], vec![0])], fold);
        let config = p.config_over::<E8, GpuChallenger<F>>().unwrap();
        let values: Vec<Table<F>> = tables.iter().map(|&(v, w)| Table::new(RowMajorMatrix::new((0..w << v).map(|_| rng.random()).collect(), 1 << v))).collect();
        let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F>::plonky3_default()));
        let steps = GpuBackend::new(Arc::new(GpuNtt::new(ctx.clone())), Arc::new(GpuMerkle::new(poseidon2))).unwrap();
        let gpu = WhirPcs::<GpuBackend<F>, L, F, E8>::new(config, steps);
        for prescribed in [false, true] {
            let ours = prove_pcs(&gpu, new_witness(values.clone(), fold), &protocol, prescribed);
            let theirs = prove_pcs(gpu.stock(), new_witness(values.clone(), fold), &protocol, prescribed);
            assert!(ours == theirs, "{} {p:?} ({:?}, prescribed {prescribed}): the GPU PCS proof differs from Plonky3's", E8::NAME, ctx.mul_variant());
        }
    }
    type B8 = BinomialExtensionField<BabyBear, 8>;
    type K8 = BinomialExtensionField<KoalaBear, 8>;
    let mut rng = common::rng();
    type B5 = BinomialExtensionField<BabyBear, 5>;
    type K5 = QuinticTrinomialExtensionField<KoalaBear>;
    for ctx in common::contexts() {
        check::<BabyBear, B8, SuffixProver<BabyBear, B8>>(&mut rng, &ctx, SuffixProver::<BabyBear, B8>::new_witness);
        check::<BabyBear, B8, PrefixProver<BabyBear, B8>>(&mut rng, &ctx, PrefixProver::<BabyBear, B8>::new_witness);
        check::<KoalaBear, K8, SuffixProver<KoalaBear, K8>>(&mut rng, &ctx, SuffixProver::<KoalaBear, K8>::new_witness);
        check::<KoalaBear, K8, PrefixProver<KoalaBear, K8>>(&mut rng, &ctx, PrefixProver::<KoalaBear, K8>::new_witness);
        check::<BabyBear, B5, PrefixProver<BabyBear, B5>>(&mut rng, &ctx, PrefixProver::<BabyBear, B5>::new_witness);
        check::<KoalaBear, K5, SuffixProver<KoalaBear, K5>>(&mut rng, &ctx, SuffixProver::<KoalaBear, K5>::new_witness);
    }
}
