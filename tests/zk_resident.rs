//! The resident hiding PCS ([`GpuHidingPcs`]: HVZK-WHIR with the witness, its folds, the
//! masked sumchecks' plain rounds, out-of-domain answers and power constraints on the GPU) and
//! its CPU twin against Plonky3's own `HidingWhirPcs` over the CPU pieces: for the same
//! generator seed, witness, points and challenger state, the same commitment and proof bytes,
//! accepted by p3-whir's verifier; refused calls leave the challenger and the generator as they
//! were. Both field-multiply variants, fresh seeds (WHIR_TEST_SEED replays one).

mod common;

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_challenger::FieldChallenger;
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_field::extension::{BinomialExtensionField, QuinticTrinomialExtensionField};
use p3_field::{PrimeCharacteristicRing, TwoAdicField};
use p3_koala_bear::KoalaBear;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_whir::{FoldingFactor, HidingWhirPcs, ProtocolParameters, QueryOpenings, ZkParameters, ZkWhirConfig};
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::{GpuChallenger, GpuContext, GpuGrinder, GpuMerkle, GpuNtt, GpuPoseidon2, Poseidon2Constants};
use whir_wgpu::prover::backend::CpuBackend;
use whir_wgpu::prover::backend::GpuBackend;
use whir_wgpu::prover::{CpuHidingPcs, DriverOptions, GpuHidingPcs, HidingPcs, ProverError, ProverField, WhirExtension, ZkProof, EF, F};
use whir_wgpu::verifier::hash::{cpu_mmcs_with, CpuMmcs, LeafSponge};

type Stock = HidingWhirPcs<EF, F, Radix2DFTSmallBatch<F>, CpuMmcs<F>, GpuChallenger<F>, StdRng>;

use common::zk::{shapes, Shape};

/// A fresh transcript over Plonky3's Poseidon2 constants, grinding on `grinder` where given
/// (every side grinds the smallest witness, so the transcripts agree at any PoW).
fn challenger<B: ProverField>(grinder: Option<Arc<GpuGrinder<B>>>) -> GpuChallenger<B> {
    GpuChallenger::new(Poseidon2Constants::<B>::plonky3_default().to_cpu(), grinder)
}

fn gpu_backend<B: ProverField>(ctx: &Arc<GpuContext>) -> (GpuBackend<B>, Arc<GpuGrinder<B>>) {
    let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<B>::plonky3_default()));
    let steps = GpuBackend::new(Arc::new(GpuNtt::new(ctx.clone())), Arc::new(GpuMerkle::new(poseidon2.clone()))).unwrap();
    (steps, Arc::new(GpuGrinder::new(poseidon2)))
}

/// Commits to `witness` and opens it at `points` with `pcs` from a fresh challenger; returns
/// the root and the proof's bytes.
fn prove<B, E, C, P>(pcs: &P, witness: &Poly<B>, points: &[Point<E>], mut challenger: C) -> (P::Commitment, Vec<u8>)
where
    B: ProverField,
    E: WhirExtension<B>,
    P: MultilinearPcs<E, C, Val = B, Witness = Poly<B>, OpeningProtocol = Vec<Point<E>>>,
    P::ProverError: std::fmt::Debug,
{
    prove_on(pcs, witness, points, &mut challenger)
}

/// [`prove`] on the caller's challenger, left where the proof leaves it.
fn prove_on<B, E, C, P>(pcs: &P, witness: &Poly<B>, points: &[Point<E>], challenger: &mut C) -> (P::Commitment, Vec<u8>)
where
    B: ProverField,
    E: WhirExtension<B>,
    P: MultilinearPcs<E, C, Val = B, Witness = Poly<B>, OpeningProtocol = Vec<Point<E>>>,
    P::ProverError: std::fmt::Debug,
{
    let (root, data) = pcs.commit(witness.clone(), challenger).unwrap();
    let proof = pcs.open(data, points.to_vec(), challenger).unwrap();
    (root, postcard::to_allocvec(&proof).unwrap())
}

/// The twin and the GPU (every context) against `HidingWhirPcs` over `shapes`, in `E` over `B`.
fn check_grid<B, E>(rng: &mut StdRng, shapes: &[Shape])
where
    B: ProverField,
    E: WhirExtension<B> + TwoAdicField + whir_wgpu::gpu::GpuExtension<B>,
    StandardUniform: Distribution<B> + Distribution<E>,
{
    let contexts = common::contexts();
    for shape in shapes {
        let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<B>()).collect());
        let points: Vec<Point<E>> = (0..shape.points).map(|_| Point::new((0..shape.vars).map(|_| rng.random()).collect())).collect();
        let seed = rng.random::<u64>();
        let stock = HidingWhirPcs::<E, B, Radix2DFTSmallBatch<B>, CpuMmcs<B>, GpuChallenger<B>, StdRng>::new(
            shape.config_over::<B, E>(),
            Radix2DFTSmallBatch::default(),
            cpu_mmcs_with::<B>(0, LeafSponge::Width16),
            StdRng::seed_from_u64(seed),
        );
        let (root, expected) = prove(&stock, &witness, &points, challenger(None));
        let what = format!("{shape:?} over {} seed {seed}", E::NAME);

        let twin = CpuHidingPcs::<B, E>::new(shape.config_over::<B, E>(), CpuBackend::default(), StdRng::seed_from_u64(seed));
        let (twin_root, twin_bytes) = prove(&twin, &witness, &points, challenger(None));
        assert_eq!(root, twin_root, "the twin's commitment, {what}");
        assert!(twin_bytes == expected, "the twin's proof bytes differ from HidingWhirPcs's, {what}");

        for (ctx, lazy) in contexts.iter().flat_map(|c| [(c, false), (c, true)]) {
            let what = format!("{what} ({:?}, lazy first weights {lazy})", ctx.mul_variant());
            let (steps, grinder) = gpu_backend::<B>(ctx);
            let options = DriverOptions { lazy_first_weights: Some(lazy), ..DriverOptions::default() };
            let gpu = GpuHidingPcs::<B, E>::new(shape.config_over::<B, E>(), steps, StdRng::seed_from_u64(seed)).with_options(options);
            // Every grind on the device, however few its bits.
            let mut ch = challenger(Some(grinder)).with_gpu_min_bits(1);
            let (gpu_root, data) = gpu.commit(witness.clone(), &mut ch).unwrap();
            let (proof, times) = gpu.open_timed(data, points.clone(), &mut ch).unwrap();
            let gpu_bytes = postcard::to_allocvec(&proof).unwrap();
            // Each round with out-of-domain samples or a query grind plays them in its commit's
            // submission.
            let heads = gpu.config().round_parameters().iter().filter(|r| r.ood_samples > 0 || r.pow_bits > 0).count();
            assert_eq!(times.heads_played, heads, "rounds whose head the GPU played, {what}");
            // Every masked batch's rounds chained on the device, where its wire fits the
            // device's chain (longer masks play on the host).
            let config = gpu.config();
            let masked_rounds: usize = (0..=config.n_rounds()).map(|r| config.round_folding_factor(r)).sum();
            let fits = shape.ell_zk.max(3) - 3 <= whir_wgpu::gpu::transcript::MAX_WIRE_REST;
            assert_eq!(times.rounds_chained, if fits { masked_rounds } else { 0 }, "masked rounds the GPU chained, {what}");
            assert_eq!(root, gpu_root, "the GPU's commitment, {what}");
            assert!(gpu_bytes == expected, "the GPU's proof bytes differ from HidingWhirPcs's, {what}");
            let received = postcard::from_bytes(&gpu_bytes).unwrap();
            gpu.verify(&gpu_root, &received, &mut challenger(None), points.clone())
                .unwrap_or_else(|e| panic!("p3-whir rejects the GPU's proof, {what}: {e:?}"));
            for (point, value) in points.iter().zip(&received.evals) {
                assert_eq!(witness.eval_base(point), *value, "the revealed evaluation, {what}");
            }
        }
    }
}

#[test]
fn resident_hiding_pcs_is_plonky3s() {
    check_grid::<F, EF>(&mut common::rng(), &shapes());
}

/// A configuration whose masked rounds grind (100 bits, the Johnson bound: 7, 8 and 9 bits in
/// its three batches; the grid's shapes grind in their query rounds only), every grind on the
/// device: the bytes are `HidingWhirPcs`'s.
#[test]
fn masked_rounds_that_grind_are_plonky3s() {
    let shape = Shape {
        vars: 13,
        fold: FoldingFactor::Constant(3),
        rate: 3,
        soundness: p3_whir::SecurityAssumption::JohnsonBound,
        pow_bits: 12,
        points: 2,
        security: 100,
        ell_zk: 4,
    };
    let config = shape.config();
    assert!(
        config.starting_folding_pow_bits() > 0 && config.round_parameters().iter().all(|r| r.folding_pow_bits > 0),
        "every masked batch of the shape must grind"
    );
    check_grid::<F, EF>(&mut common::rng(), &[shape]);
}

/// Masks longer than the device's chained rounds observe (a wire past `MAX_WIRE_REST` values
/// after its pair) and the longest a wire chains: the batches play on the host, or chained, and
/// the proofs are `HidingWhirPcs`'s.
#[test]
fn long_masks_are_plonky3s() {
    let longest = 3 + whir_wgpu::gpu::transcript::MAX_WIRE_REST;
    let shapes: Vec<Shape> = [longest, longest + 1, 16].iter().map(|&ell_zk| Shape { ell_zk, ..shapes()[0].clone() }).collect();
    check_grid::<F, EF>(&mut common::rng(), &shapes);
}

/// The 128-bit extensions: BabyBear^5 and ^8, KoalaBear^5 (quintic trinomial) and ^8, over
/// the grid's round, no-round and multi-round shapes.
#[test]
fn resident_hiding_pcs_over_other_extensions() {
    let mut rng = common::rng();
    let shapes: Vec<Shape> = [0, 1, 5].iter().map(|&i| shapes()[i].clone()).collect();
    check_grid::<BabyBear, BinomialExtensionField<BabyBear, 5>>(&mut rng, &shapes);
    check_grid::<BabyBear, BinomialExtensionField<BabyBear, 8>>(&mut rng, &shapes);
    check_grid::<KoalaBear, QuinticTrinomialExtensionField<KoalaBear>>(&mut rng, &shapes);
    check_grid::<KoalaBear, BinomialExtensionField<KoalaBear, 8>>(&mut rng, &shapes);
}

/// A refused open — a point of the wrong arity, more points than the security budget allows
/// — is an error that leaves the challenger and the generator where they were: commit, refused
/// open, commit gives the transcript and the root that commit, commit gives.
#[test]
fn refused_openings_leave_the_transcript_and_generator_untouched() {
    let mut rng = common::rng();
    // p3-whir's budget fixture: 100 bits with 32 bits of grinding refuses 2^14 points.
    let shape = shapes()[0].clone();
    let config = || {
        let protocol = ProtocolParameters {
            security_level: 100,
            pow_bits: 32,
            round_log_inv_rates: vec![],
            folding_factor: shape.fold.clone(),
            soundness_type: shape.soundness,
            starting_log_inv_rate: shape.rate,
        };
        ZkWhirConfig::<EF, F, GpuChallenger<F>>::new(shape.vars, protocol, ZkParameters { ell_zk: 4, mask_log_inv_rate: 1 }).expect("the budget fixture")
    };
    assert!(config().validate_initial_claims(1 << 14).is_err(), "the budget fixture must refuse 2^14 points");
    let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
    let point = Point::rand(&mut rng, shape.vars);
    let seed = rng.random::<u64>();
    let refusals: [(&str, Vec<Point<EF>>); 2] =
        [("coordinates", vec![point.clone(), Point::new(vec![EF::ONE; shape.vars - 1])]), ("opening points", vec![point; 1 << 14])];

    // The reference: commit, commit.
    let stock = Stock::new(config(), Radix2DFTSmallBatch::default(), cpu_mmcs_with::<F>(0, LeafSponge::Width16), StdRng::seed_from_u64(seed));
    let mut ch = challenger(None);
    let _ = stock.commit(witness.clone(), &mut ch).unwrap();
    let (expected_root, _) = stock.commit(witness.clone(), &mut ch).unwrap();
    let expected_next: EF = ch.sample_algebra_element();

    for (says, refused) in &refusals {
        let twin = CpuHidingPcs::new(config(), CpuBackend::default(), StdRng::seed_from_u64(seed));
        check_refusal("the twin", &twin, &witness, refused, says, (&expected_root, expected_next));
        for ctx in common::contexts() {
            let (steps, _) = gpu_backend(&ctx);
            let gpu = GpuHidingPcs::new(config(), steps, StdRng::seed_from_u64(seed));
            check_refusal(&format!("the GPU ({:?})", ctx.mul_variant()), &gpu, &witness, refused, says, (&expected_root, expected_next));
        }
    }
}

/// Commit, an open of `refused` (which must fail, saying `says`, with the transcript as it
/// was), commit: the second root and the transcript after it must be `expected`'s.
fn check_refusal<P>(name: &str, pcs: &P, witness: &Poly<F>, refused: &[Point<EF>], says: &str, expected: (&P::Commitment, EF))
where
    P: MultilinearPcs<EF, GpuChallenger<F>, Val = F, Witness = Poly<F>, OpeningProtocol = Vec<Point<EF>>, ProverError = ProverError>,
    P::Commitment: PartialEq + std::fmt::Debug,
{
    let mut ch = challenger(None);
    let (_, data) = pcs.commit(witness.clone(), &mut ch).unwrap();
    let before: EF = ch.clone().sample_algebra_element();
    let error = pcs.open(data, refused.to_vec(), &mut ch).err().unwrap_or_else(|| panic!("{name}: the open ({says}) must be refused")).to_string();
    assert!(error.contains(says), "{name}: the refusal says {error:?}, expected it to name {says:?}");
    assert_eq!(ch.clone().sample_algebra_element::<EF>(), before, "{name}: a refused open ({says}) moved the transcript");
    let (root, _) = pcs.commit(witness.clone(), &mut ch).unwrap();
    assert_eq!(&root, expected.0, "{name}: a refused open ({says}) moved the generator");
    assert_eq!(ch.sample_algebra_element::<EF>(), expected.1, "{name}: the transcript after a refused open ({says})");
}

/// p3-whir's own rejections, on the resident GPU prover's proofs: each proof field altered
/// (revealed values, out-of-domain answers, wires, grinds, roots, reveals, truncations, missing
/// openings) is refused by the verifier with an error, not a panic, and the proof as made is
/// accepted.
#[test]
fn altered_resident_proofs_are_rejected() {
    let mut rng = common::rng();
    let shape = shapes()[5].clone();
    let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
    let points: Vec<Point<EF>> = (0..shape.points).map(|_| Point::rand(&mut rng, shape.vars)).collect();
    for ctx in common::contexts() {
        let (steps, grinder) = gpu_backend::<F>(&ctx);
        let gpu = GpuHidingPcs::<F, EF>::new(shape.config(), steps, StdRng::seed_from_u64(rng.random()));
        let mut ch = challenger(Some(grinder));
        let (root, data) = gpu.commit(witness.clone(), &mut ch).unwrap();
        let proof = gpu.open(data, points.clone(), &mut ch).unwrap();
        let verify = |proof: &ZkProof<F, EF>, root: &whir_wgpu::prover::Commitment<F>| gpu.verify(root, proof, &mut challenger(None), points.clone());
        verify(&proof, &root).expect("the proof as made verifies");
        assert!(proof.rounds.len() >= 2 && !proof.rounds[0].ood_answers.is_empty(), "the shape must have rounds with out-of-domain answers");
        let one = EF::ONE;
        type Alter = fn(&mut ZkProof<F, EF>, EF);
        let alterations: Vec<(&str, Alter)> = vec![
            ("a revealed evaluation", |p, one| p.evals[0] += one),
            ("an extra evaluation", |p, one| p.evals.push(one)),
            ("an out-of-domain answer", |p, one| p.rounds[0].ood_answers[0] += one),
            ("a missing out-of-domain answer", |p, _| {
                p.rounds[0].ood_answers.pop();
            }),
            ("a sumcheck wire", |p, one| p.sumchecks[0].round_coefficients[0][0] += one),
            ("a sumcheck's mask total", |p, one| p.sumchecks[1].mu_tilde += one),
            ("a truncated sumcheck list", |p, _| {
                p.sumchecks.pop();
            }),
            ("truncated rounds", |p, _| {
                p.rounds.pop();
            }),
            ("a round's grind", |p, _| p.rounds[1].pow_witness += F::ONE),
            ("a missing query opening", |p, _| match &mut p.rounds[0].openings {
                QueryOpenings::Base(o) => {
                    o.rows.pop();
                }
                QueryOpenings::Extension(o) => {
                    o.rows.pop();
                }
            }),
            ("a round's root", |p, _| p.rounds[0].commitment = p.rounds[1].commitment.clone()),
            ("a switch mask's root", |p, _| p.rounds[0].mask_commitment = p.rounds[1].mask_commitment.clone()),
            ("a sumcheck mask's root", |p, _| p.sumcheck_mask_commitments[0] = p.sumcheck_mask_commitments[1].clone()),
            ("the base case's masked claim", |p, one| p.base_case.masked_claim += one),
            ("the base case's revealed message", |p, one| p.base_case.blinded_message[0] += one),
            ("the base case's revealed randomness", |p, one| p.base_case.blinded_randomness[0] += one),
            ("a revealed mask", |p, one| p.base_case.blinded_masks[0].message[0] += one),
            ("a truncated base-case reveal", |p, _| {
                p.base_case.blinded_message.pop();
            }),
            ("the base case's fresh root", |p, _| p.base_case.fresh_main_commitment = p.rounds[0].commitment.clone()),
        ];
        for (what, alter) in alterations {
            let mut altered = proof.clone();
            alter(&mut altered, one);
            let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| verify(&altered, &root)));
            match verdict {
                Ok(Err(_)) => {}
                Ok(Ok(())) => panic!("{what} altered: the proof still verifies ({:?})", ctx.mul_variant()),
                Err(_) => panic!("{what} altered: the verifier panicked ({:?})", ctx.mul_variant()),
            }
        }
        // Another commitment.
        let (other, _) = gpu.commit(Poly::new(witness.as_slice().iter().map(|&v| v + F::ONE).collect()), &mut challenger(None)).unwrap();
        assert!(verify(&proof, &other).is_err(), "a proof verified against another commitment");
    }
}

/// Generic over the challenger: over Plonky3's own `DuplexChallenger` the GPU plays the
/// transcript on a challenger of its own over the same sponge (grinding on the device) and
/// hands the duplex back where a run over it leaves it: `HidingWhirPcs`'s bytes over the duplex
/// (over a smallest-witness grinder where the shape grinds: upstream's grinder returns any
/// witness), the same samples after, and p3-whir's verifier over the duplex accepts. The twin,
/// which plays over the duplex itself, gives the same bytes where nothing is ground.
#[test]
fn resident_hiding_pcs_over_plonky3s_duplex_challenger() {
    use p3_challenger::CanSample;
    type Duplex = whir_wgpu::verifier::StockChallenger<F>;
    let duplex = || Duplex::new(Poseidon2Constants::<F>::plonky3_default().to_cpu());
    let mut rng = common::rng();
    let contexts = common::contexts();
    for shape in shapes() {
        let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
        let points: Vec<Point<EF>> = (0..shape.points).map(|_| Point::rand(&mut rng, shape.vars)).collect();
        let seed = rng.random::<u64>();
        let config = || shape.config_with::<F, EF, Duplex>();
        let stock = HidingWhirPcs::<EF, F, Radix2DFTSmallBatch<F>, CpuMmcs<F>, Duplex, StdRng>::new(
            config(),
            Radix2DFTSmallBatch::default(),
            cpu_mmcs_with::<F>(0, LeafSponge::Width16),
            StdRng::seed_from_u64(seed),
        );
        // Where nothing is ground, Plonky3's own run over the duplex is the reference; where it
        // grinds, its grinder may return any witness, so the reference is `HidingWhirPcs` over
        // the same sponge with a smallest-witness grinder (ours, on the CPU).
        let (root, expected, after) = if shape.pow_bits == 0 {
            let mut ch = duplex();
            let (root, bytes) = prove_on(&stock, &witness, &points, &mut ch);
            (root, bytes, CanSample::<F>::sample(&mut ch))
        } else {
            let smallest = Stock::new(shape.config(), Radix2DFTSmallBatch::default(), cpu_mmcs_with::<F>(0, LeafSponge::Width16), StdRng::seed_from_u64(seed));
            let mut ch = challenger(None);
            let (root, bytes) = prove_on(&smallest, &witness, &points, &mut ch);
            (root, bytes, CanSample::<F>::sample(&mut ch))
        };
        if shape.pow_bits == 0 {
            let twin = HidingPcs::<CpuBackend<F, EF>, F, EF, Duplex>::new(config(), CpuBackend::default(), StdRng::seed_from_u64(seed));
            let (twin_root, twin_bytes) = prove(&twin, &witness, &points, duplex());
            assert!(twin_root == root && twin_bytes == expected, "the twin over the duplex, {shape:?}");
        }
        for ctx in &contexts {
            // The GPU steps take the duplex's sponge over (grinding on the device) and hand it
            // back where the reference run leaves its own.
            let (steps, _) = gpu_backend::<F>(ctx);
            let gpu = HidingPcs::<GpuBackend<F>, F, EF, Duplex>::new(config(), steps, StdRng::seed_from_u64(seed));
            let mut ch = duplex();
            let (gpu_root, gpu_bytes) = prove_on(&gpu, &witness, &points, &mut ch);
            assert!(gpu_root == root && gpu_bytes == expected, "the GPU over the duplex, {shape:?} ({:?})", ctx.mul_variant());
            assert_eq!(CanSample::<F>::sample(&mut ch), after, "the duplex after the GPU's run, {shape:?}");
            let proof: ZkProof<F, EF> = postcard::from_bytes(&gpu_bytes).unwrap();
            stock.verify(&gpu_root, &proof, &mut duplex(), points.clone()).unwrap_or_else(|e| panic!("{shape:?}: p3-whir's verifier over the duplex: {e:?}"));
        }
    }
}

/// Two proofs of one witness at the same points under different generators differ in every
/// masked part: every root, every sumcheck wire and mask total, every out-of-domain answer and
/// the base case's claim and reveals; the revealed evaluations are the same.
#[test]
fn different_generators_mask_every_part() {
    let mut rng = common::rng();
    let shape = shapes()[5].clone();
    let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
    let points: Vec<Point<EF>> = (0..shape.points).map(|_| Point::rand(&mut rng, shape.vars)).collect();
    for ctx in common::contexts() {
        let seed = rng.random::<u64>();
        let proof = |seed: u64| {
            let (steps, grinder) = gpu_backend::<F>(&ctx);
            let gpu = GpuHidingPcs::<F, EF>::new(shape.config(), steps, StdRng::seed_from_u64(seed));
            let mut ch = challenger(Some(grinder));
            let (root, data) = gpu.commit(witness.clone(), &mut ch).unwrap();
            (root, gpu.open(data, points.clone(), &mut ch).unwrap())
        };
        let ((root_a, a), (root_b, b)) = (proof(seed), proof(seed ^ 1));
        let what = format!("seeds {seed} and {} ({:?})", seed ^ 1, ctx.mul_variant());
        assert_eq!(a.evals, b.evals, "the revealed evaluations, {what}");
        assert_ne!(root_a, root_b, "the commitments, {what}");
        let all_differ = |x: &[EF], y: &[EF]| x.len() == y.len() && x.iter().zip(y).all(|(u, v)| u != v);
        for (i, (x, y)) in a.sumchecks.iter().zip(&b.sumchecks).enumerate() {
            assert_ne!(x.mu_tilde, y.mu_tilde, "batch {i}'s mask total, {what}");
            for (j, (u, v)) in x.round_coefficients.iter().zip(&y.round_coefficients).enumerate() {
                assert!(all_differ(u, v), "batch {i} round {j}'s wire, {what}");
            }
        }
        for (i, (x, y)) in a.sumcheck_mask_commitments.iter().zip(&b.sumcheck_mask_commitments).enumerate() {
            assert_ne!(x, y, "batch {i}'s mask root, {what}");
        }
        for (i, (x, y)) in a.rounds.iter().zip(&b.rounds).enumerate() {
            assert_ne!(x.commitment, y.commitment, "round {i}'s root, {what}");
            assert_ne!(x.mask_commitment, y.mask_commitment, "round {i}'s switch mask root, {what}");
            assert!(all_differ(&x.ood_answers, &y.ood_answers), "round {i}'s out-of-domain answers, {what}");
        }
        let (x, y) = (&a.base_case, &b.base_case);
        assert_ne!(x.masked_claim, y.masked_claim, "the base case's masked claim, {what}");
        assert!(all_differ(&x.blinded_message, &y.blinded_message), "the base case's revealed message, {what}");
        assert!(all_differ(&x.blinded_randomness, &y.blinded_randomness), "the base case's revealed randomness, {what}");
        for (i, (u, v)) in x.blinded_masks.iter().zip(&y.blinded_masks).enumerate() {
            assert!(all_differ(&u.message, &v.message), "revealed mask {i}, {what}");
        }
    }
}

/// A GPU failure at any readback of a hiding proof (injected) is an error, not a panic — the
/// transcript drivers abandoned mid-run included — and the context proves correctly after it.
#[test]
fn gpu_failures_mid_proof_are_errors() {
    let mut rng = common::rng();
    let shape = shapes()[5].clone();
    let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
    let points: Vec<Point<EF>> = (0..shape.points).map(|_| Point::rand(&mut rng, shape.vars)).collect();
    let seed = rng.random::<u64>();
    let stock = Stock::new(shape.config(), Radix2DFTSmallBatch::default(), cpu_mmcs_with::<F>(0, LeafSponge::Width16), StdRng::seed_from_u64(seed));
    let (_, expected) = prove(&stock, &witness, &points, challenger(None));
    for ctx in common::fresh_contexts() {
        let (mut failed, mut skip) = (0, 0);
        loop {
            let (steps, grinder) = gpu_backend::<F>(&ctx);
            let gpu = GpuHidingPcs::<F, EF>::new(shape.config(), steps, StdRng::seed_from_u64(seed));
            ctx.faults().fail_readbacks(skip, 1);
            let mut ch = challenger(Some(grinder));
            let outcome = gpu.commit(witness.clone(), &mut ch).and_then(|(_, data)| gpu.open(data, points.clone(), &mut ch));
            let left = ctx.faults().injected_failures_left();
            ctx.faults().fail_readbacks(0, 0);
            match outcome {
                Err(ProverError::Gpu(_)) => failed += 1,
                Err(e) => panic!("readback {skip} failed: expected a GPU error, got {e}"),
                Ok(proof) => {
                    assert_eq!(left, 1, "readback {skip} failed but the proof came back");
                    assert!(postcard::to_allocvec(&proof).unwrap() == expected, "the proof after the injected failures");
                    break;
                }
            }
            // Every readback up to the tenth, then every fifth.
            skip += if skip < 10 { 1 } else { 5 };
        }
        assert!(failed >= 10, "only {failed} readbacks failed a hiding proof ({:?})", ctx.mul_variant());
    }
}

/// A hiding proof file's size bound (`HidingProofFileOf::max_bytes`, what a reader holds at
/// most whatever the file claims) is above every real proof over a grid of parameters and
/// masks, and not far above it; a file past it is refused before it is read whole.
#[test]
fn hiding_files_are_bounded_by_their_parameters() {
    use whir_wgpu::verifier::{hiding_points, zk_config, HidingProofFileOf, ParamSource, Params, ReadLimits, Soundness, ZkMasks};
    let mut rng = common::rng();
    let params = |num_vars, fold, log_inv_rate, soundness, points| Params {
        num_vars,
        fold,
        log_inv_rate,
        security_bits: 32,
        pow_bits: 0,
        soundness,
        points,
        leaf: LeafSponge::Width16,
    };
    let grid = [
        (params(12, 4, 2, Soundness::Capacity, 1), ZkMasks::DEFAULT),
        (params(12, 4, 2, Soundness::Unique, 2), ZkMasks { ell_zk: 3, mask_log_inv_rate: 2 }),
        (params(14, 3, 2, Soundness::Johnson, 3), ZkMasks { ell_zk: 8, mask_log_inv_rate: 1 }),
        (params(15, 4, 3, Soundness::Capacity, 1), ZkMasks { ell_zk: 4, mask_log_inv_rate: 3 }),
    ];
    for (p, masks) in grid {
        let config = zk_config::<F, EF, GpuChallenger<F>>(&p, masks, ParamSource::Flags).unwrap();
        let pcs = CpuHidingPcs::new(config, CpuBackend::default(), StdRng::seed_from_u64(rng.random()));
        let witness = Poly::new((0..1usize << p.num_vars).map(|_| rng.random::<F>()).collect());
        let mut ch = challenger(None);
        let (root, data) = pcs.commit(witness, &mut ch).unwrap();
        let proof = pcs.open(data, hiding_points::<F, EF>(&root, &p), &mut ch).unwrap();
        let bytes = HidingProofFileOf::<F, EF>::new(&p, masks, root, postcard::to_allocvec(&proof).unwrap()).to_bytes();
        let bound = HidingProofFileOf::<F, EF>::max_bytes(&p, masks).unwrap();
        let what = format!("{p}, {masks}: a file of {} bytes, bound {bound}", bytes.len());
        assert!(bytes.len() <= bound, "the bound is below a real proof: {what}");
        assert!(bound <= 4 * bytes.len(), "the bound is loose: {what}");
        let file = HidingProofFileOf::<F, EF>::read_with(bytes.as_slice(), ReadLimits::default()).unwrap();
        file.verify(&p, masks).unwrap_or_else(|e| panic!("{what}: {e}"));
        // Past the bound (however the rest would decode): refused while reading, naming it.
        let mut long = bytes.clone();
        long.resize(bound + 1, 0);
        let err = HidingProofFileOf::<F, EF>::read_with(long.as_slice(), ReadLimits::default()).unwrap_err().to_string();
        assert!(err.contains("larger than any proof for its parameters"), "{what}: {err}");
        let err = HidingProofFileOf::<F, EF>::from_bytes_with(&long, ReadLimits::default()).unwrap_err().to_string();
        assert!(err.contains("larger than any proof for its parameters"), "{what}: {err}");
    }
}

/// The base case's fresh codeword, committed where the steps commit: [message | randomness]
/// padded to a power of two and encoded at the rate that fills the domain has the root of the
/// whole domain's transform of [message | randomness | 0] committed by `ExtensionMmcs` (p3-whir's
/// `FoldedRsCode::encode_column` and `commit_matrix`), and its openings are that tree's, on the
/// GPU and the twin, over degrees 4 and 8.
#[test]
fn the_base_case_codeword_commits_as_plonky3_encodes_it() {
    use p3_commit::{ExtensionMmcs, Mmcs};
    use p3_dft::TwoAdicSubgroupDft;
    use p3_matrix::dense::RowMajorMatrix;
    use whir_wgpu::prover::backend::Backend;
    fn check<B: ProverField, E: WhirExtension<B> + whir_wgpu::gpu::GpuExtension<B>>(rng: &mut StdRng)
    where
        StandardUniform: Distribution<E>,
    {
        for ctx in common::contexts() {
            let (gpu, _) = gpu_backend::<B>(&ctx);
            let cpu = CpuBackend::<B, E>::default();
            let mmcs = ExtensionMmcs::<B, E, _>::new(Backend::<B, E>::mmcs(&gpu));
            // (message + randomness values, log2 of the domain): a partial power of two, a full one.
            for (values, log_domain) in [(5usize, 4usize), (8, 3), (100, 9), (3000, 13)] {
                let coeffs: Vec<E> = (0..values).map(|_| rng.random()).collect();
                let mut whole = coeffs.clone();
                whole.resize(1 << log_domain, E::ZERO);
                let codeword = Radix2DFTSmallBatch::<B>::default().dft_algebra_batch(RowMajorMatrix::new_col(whole));
                let (expected, data) = mmcs.commit_matrix(codeword);
                let filled = values.next_power_of_two();
                let mut message = coeffs;
                message.resize(filled, E::ZERO);
                let rate = log_domain - filled.ilog2() as usize;
                let message = E::flatten_to_base(message);
                let positions = [0usize, (1 << log_domain) - 1, 3 % (1 << log_domain)];
                let (rows, _) = mmcs.open_batch(positions[1], &data).unpack();
                for (name, (root, opened)) in [
                    ("twin", {
                        let (root, c) = Backend::<B, E>::commit(&cpu, &message, E::DIMENSION, rate).unwrap();
                        let o = Backend::<B, E>::open(&cpu, &c, &positions).unwrap();
                        (root, Backend::<B, E>::read_openings(&cpu, vec![o]).unwrap())
                    }),
                    ("gpu", {
                        let (root, c) = Backend::<B, E>::commit(&gpu, &message, E::DIMENSION, rate).unwrap();
                        let o = Backend::<B, E>::open(&gpu, &c, &positions).unwrap();
                        (root, Backend::<B, E>::read_openings(&gpu, vec![o]).unwrap())
                    }),
                ] {
                    assert!(root == expected, "{name}: {values} values over 2^{log_domain} ({}, {:?})", E::NAME, ctx.mul_variant());
                    let (opened_rows, _) = &opened[0];
                    assert_eq!(opened_rows[1], E::flatten_to_base(rows[0].clone()), "{name}: the last row opened");
                }
            }
        }
    }
    let mut rng = common::rng();
    check::<F, EF>(&mut rng);
    check::<KoalaBear, BinomialExtensionField<KoalaBear, 8>>(&mut rng);
}

/// Prover data opened by a PCS of another configuration (another fold or rate) is refused
/// with an error naming both shapes, not a panic or a wrong proof.
#[test]
fn data_from_another_configuration_is_refused() {
    let mut rng = common::rng();
    let shape = shapes()[0].clone();
    let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
    let points: Vec<Point<EF>> = (0..2).map(|_| Point::rand(&mut rng, shape.vars)).collect();
    let other_fold = Shape { fold: FoldingFactor::Constant(3), ..shape.clone() };
    let other_rate = Shape { rate: 3, ..shape.clone() };
    for other in [other_fold, other_rate] {
        let committing = CpuHidingPcs::new(shape.config(), CpuBackend::default(), StdRng::seed_from_u64(1));
        let opening = CpuHidingPcs::new(other.config(), CpuBackend::default(), StdRng::seed_from_u64(1));
        let mut ch = challenger(None);
        let (_, data) = committing.commit(witness.clone(), &mut ch).unwrap();
        let err = opening.open(data, points.clone(), &mut ch).err().expect("data of another configuration must be refused").to_string();
        assert!(err.contains("committed as"), "{err}");
    }
}

/// The hiding run over the comparing backend (the twin as reference, the GPU as candidate):
/// every step's outputs compared where they are made — roots, round coefficients, evaluations,
/// OOD answers, openings, the final f and w, the base case's transform — and the proof still
/// `HidingWhirPcs`'s.
#[test]
fn every_hiding_step_matches_the_twin() {
    use whir_wgpu::prover::backend::ComparingBackend;
    let mut rng = common::rng();
    for shape in [shapes()[0].clone(), shapes()[5].clone()] {
        let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
        let points: Vec<Point<EF>> = (0..shape.points).map(|_| Point::rand(&mut rng, shape.vars)).collect();
        let seed = rng.random::<u64>();
        let stock = Stock::new(shape.config(), Radix2DFTSmallBatch::default(), cpu_mmcs_with::<F>(0, LeafSponge::Width16), StdRng::seed_from_u64(seed));
        let (root, expected) = prove(&stock, &witness, &points, challenger(None));
        for ctx in common::contexts() {
            let (steps, grinder) = gpu_backend::<F>(&ctx);
            let comparing = ComparingBackend::new(CpuBackend::<F, EF>::default(), steps);
            let pcs = HidingPcs::<_, F, EF>::new(shape.config(), comparing, StdRng::seed_from_u64(seed));
            let (ours, bytes) = prove(&pcs, &witness, &points, challenger(Some(grinder)));
            assert!(ours == root && bytes == expected, "{shape:?} ({:?})", ctx.mul_variant());
        }
    }
}

/// Resident hiding proofs on an adapter whose binding limit is far below the proof's data (the
/// strict profile with a 64 KiB binding, as n = 24 meets WebGPU's 128 MiB): the witness's
/// and each round's hiding codewords are encoded in column blocks, each block's randomness rows
/// added where it is transformed, and hashed as row chunks — and the proofs are
/// `HidingWhirPcs`'s byte for byte. The hiding codeword's message takes the plain one's binding
/// (no padded copy of twice its rows).
#[test]
fn resident_hiding_proofs_split_over_small_bindings_are_plonky3s() {
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    let binding = 64u64 << 10;
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(binding) }), ..Default::default() }) else {
        return;
    };
    let mut rng = common::rng();
    let shape = |vars, fold, rate| Shape {
        vars,
        fold: FoldingFactor::Constant(fold),
        rate,
        soundness: p3_whir::SecurityAssumption::CapacityBound,
        pow_bits: 3,
        points: 2,
        security: 32,
        ell_zk: 4,
    };
    for shape in [shape(14, 2, 1), shape(14, 4, 2), shape(13, 3, 2)] {
        // The witness's codeword (4 bytes an entry of 2^(n + rate)) exceeds the binding.
        assert!(4u64 << (shape.vars + shape.rate) > binding);
        let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
        let points: Vec<Point<EF>> = (0..shape.points).map(|_| Point::rand(&mut rng, shape.vars)).collect();
        let seed = rng.random::<u64>();
        let stock = Stock::new(shape.config(), Radix2DFTSmallBatch::default(), cpu_mmcs_with::<F>(0, LeafSponge::Width16), StdRng::seed_from_u64(seed));
        let (root, expected) = prove(&stock, &witness, &points, challenger(None));
        let (steps, grinder) = gpu_backend::<F>(&ctx);
        let gpu = GpuHidingPcs::<F, EF>::new(shape.config(), steps, StdRng::seed_from_u64(seed));
        let (gpu_root, gpu_bytes) = prove(&gpu, &witness, &points, challenger(Some(grinder)));
        assert!(gpu_root == root && gpu_bytes == expected, "{shape:?} under a {binding}-byte binding: the proofs differ");
    }
}

/// The hiding codeword's randomness rows added by cosets (a small transform a workgroup) and,
/// past a workgroup's coset (over 1024 rows), by Horner: the GPU's root is the twin's
/// (`[message | randomness | 0]` transformed whole) for randomness of 1 to 1100 rows, both
/// multiply variants.
#[test]
fn hiding_codewords_match_the_twin_for_any_randomness_rows() {
    use whir_wgpu::prover::backend::Backend;
    let mut rng = common::rng();
    let (n, fold, rate) = (12usize, 2usize, 2usize);
    let poly: Vec<F> = (0..1usize << n).map(|_| rng.random()).collect();
    for ctx in common::contexts() {
        let (gpu, _) = gpu_backend::<F>(&ctx);
        for t in [1usize, 5, 100, 1024, 1100] {
            let randomness: Vec<F> = (0..t << fold).map(|_| rng.random()).collect();
            let (expected, _, _) = Backend::<F, EF>::commit_hiding_message(&CpuBackend::<F, EF>::default(), &poly, &randomness, fold, rate).unwrap();
            let (ours, _, _) = Backend::<F, EF>::commit_hiding_message(&gpu, &poly, &randomness, fold, rate).unwrap();
            assert!(ours == expected, "{t} randomness rows ({:?})", ctx.mul_variant());
        }
    }
}

/// A round head the device played wrong (its out-of-domain points moved) is caught where the
/// run replays it: the opening fails with `ProverError::PlayedAhead`, it does not come back as a
/// proof; the untampered steps give `HidingWhirPcs`'s bytes from the same state.
#[test]
fn a_round_head_played_wrong_is_refused() {
    let mut rng = common::rng();
    let shape = shapes()[5].clone();
    assert!(shape.config().round_parameters().iter().any(|r| r.ood_samples > 0), "the shape must have out-of-domain samples");
    let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
    let points: Vec<Point<EF>> = (0..shape.points).map(|_| Point::rand(&mut rng, shape.vars)).collect();
    let seed = rng.random::<u64>();
    for ctx in common::contexts() {
        let (steps, grinder) = gpu_backend::<F>(&ctx);
        let pcs = HidingPcs::<_, F, EF>::new(shape.config(), common::tampered::MovedHeadPoints(steps), StdRng::seed_from_u64(seed));
        let mut ch = challenger(Some(grinder));
        let (_, data) = pcs.commit(witness.clone(), &mut ch).unwrap();
        match pcs.open(data, points.clone(), &mut ch) {
            Err(ProverError::PlayedAhead(why)) => assert!(why.contains("out-of-domain point"), "{why}"),
            other => panic!("a tampered head gave {:?} ({:?})", other.map(|_| "a proof"), ctx.mul_variant()),
        }
    }
}
