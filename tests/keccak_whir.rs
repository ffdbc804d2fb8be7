//! Plonky3's WHIR prover over its Keccak configuration (p3-whir's own Keccak lifecycle test:
//! `MerkleTreeMmcs<F, u64, SerializingHasher<PaddingFreeSponge<KeccakF, 25, 17, 4>>, ..>` and
//! `SerializingChallenger32<F, HashChallenger<u8, Keccak256Hash, 32>>`) with the GPU pieces:
//! `GpuWhirDomain` (GPU NTT), `GpuKeccakMmcs` (GPU Keccak trees, also under the prover's
//! `ExtensionMmcs`) and `GpuKeccakHash` (the transcript's grinds on the GPU). Against the same
//! prover on Plonky3's CPU pieces the proof bytes are equal (both grinding for the smallest
//! witness; without grinding, against Plonky3's stock challenger too), and the stock verifier,
//! with Plonky3's own challenger type, accepts them after a postcard round trip.

mod common;

use p3_baby_bear::BabyBear;
use p3_challenger::{HashChallenger, SerializingChallenger32};
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_field::extension::BinomialExtensionField;
use p3_keccak::Keccak256Hash;
use p3_koala_bear::KoalaBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::layout::{Layout, PrefixProver, SuffixProver, Table};
use p3_whir::{PcsProof, WhirConfig, WhirProver};
use rand::distr::{Distribution, StandardUniform};
use rand::RngExt;
use whir_wgpu::gpu::{CpuKeccakMmcs, GpuDft, GpuKeccak, GpuKeccakHash, GpuKeccakMmcs, GpuNtt};
use whir_wgpu::prover::GpuWhirDomain;

type StockChallenger<F> = SerializingChallenger32<F, HashChallenger<u8, Keccak256Hash, 32>>;
type OurChallenger<F> = SerializingChallenger32<F, GpuKeccakHash<F>>;

/// One field and layout: the GPU pieces' proof against the CPU pieces' (the same challenger
/// type, grinding on the GPU for the smallest witness) and, without grinding, the stock
/// challenger's; the stock verifier accepts it, and a flipped byte is refused.
fn check<F, L>(keccak: &GpuKeccak, rng: &mut rand::rngs::StdRng)
where
    F: whir_wgpu::gpu::Poseidon2Field + p3_challenger::fs::TranscriptField + Ord + p3_field::extension::HasTwoAdicBinomialExtension<4>,
    GpuWhirDomain<F>: p3_whir::WhirDomain<F, BinomialExtensionField<F, 4>>,
    L: Layout<F, BinomialExtensionField<F, 4>>,
    StandardUniform: Distribution<F>,
{
    type EF<F> = BinomialExtensionField<F, 4>;
    let ctx = keccak.context().clone();
    let ntt = std::sync::Arc::new(GpuNtt::new(ctx.clone()));
    for (n, fold, pow_bits) in [(10usize, 1usize, 0usize), (12, 2, 6), (14, 4, 8), (16, 4, 0)] {
        let values: Vec<F> = (0..1usize << n).map(|_| rng.random()).collect();
        let witness = || L::new_witness(vec![Table::new(RowMajorMatrix::new(values.clone(), values.len()))], fold);
        let config = WhirConfig::new(n, common::stock_params(fold, pow_bits)).expect("feasible parameters");
        let cpu_mmcs = GpuKeccakMmcs::<F>::new(None, 0).cpu().clone();
        let cpu_pcs = WhirProver::<EF<F>, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, OurChallenger<F>, L>::new(
            config.clone(),
            Radix2DFTSmallBatch::default(),
            cpu_mmcs.clone(),
        );
        let domain = GpuWhirDomain::new(GpuDft::new(Some(ntt.clone())).with_cpu_threshold(0).encoder());
        let gpu_pcs = WhirProver::<EF<F>, F, GpuWhirDomain<F>, GpuKeccakMmcs<F>, OurChallenger<F>, L>::new(
            config.clone(),
            domain,
            GpuKeccakMmcs::new(Some(keccak.clone()), 0),
        );
        let ours = || OurChallenger::<F>::new(GpuKeccakHash::new(vec![], Some(keccak.clone())));

        let mut ch = ours();
        let (cpu_commitment, data) = cpu_pcs.commit(witness(), &mut ch).unwrap();
        let cpu_proof = cpu_pcs.open(data, common::single_column_protocol(n, fold), &mut ch).unwrap();
        let before = ctx.transfers().transfer_counts();
        let mut ch = ours();
        let (gpu_commitment, data) = gpu_pcs.commit(witness(), &mut ch).unwrap();
        let gpu_proof = gpu_pcs.open(data, common::single_column_protocol(n, fold), &mut ch).unwrap();
        // The GPU pieces ran: the codewords' transforms and trees went up (not Plonky3's fallbacks).
        let after = ctx.transfers().transfer_counts();
        assert!(after.bytes_up >= before.bytes_up + (4u64 << n), "n={n}: {} bytes up", after.bytes_up - before.bytes_up);
        assert_eq!(gpu_commitment, cpu_commitment, "n={n} fold={fold}");
        let gpu_bytes = postcard::to_allocvec(&gpu_proof).unwrap();
        assert_eq!(gpu_bytes, postcard::to_allocvec(&cpu_proof).unwrap(), "proof bytes differ, n={n} fold={fold} pow={pow_bits} ({:?})", ctx.mul_variant());

        let stock = WhirProver::<EF<F>, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, StockChallenger<F>, L>::new(
            WhirConfig::new(n, common::stock_params(fold, pow_bits)).expect("feasible parameters"),
            Radix2DFTSmallBatch::default(),
            cpu_mmcs,
        );
        let stock_challenger = || StockChallenger::<F>::from_hasher(vec![], Keccak256Hash);
        if pow_bits == 0 {
            let mut ch = stock_challenger();
            let (commitment, data) = stock.commit(witness(), &mut ch).unwrap();
            let proof = stock.open(data, common::single_column_protocol(n, fold), &mut ch).unwrap();
            assert_eq!(commitment, gpu_commitment);
            assert_eq!(postcard::to_allocvec(&proof).unwrap(), gpu_bytes, "against the stock challenger, n={n} fold={fold}");
        }
        let proof: PcsProof<F, EF<F>, CpuKeccakMmcs<F>> = postcard::from_bytes(&gpu_bytes).unwrap();
        stock
            .verify(&gpu_commitment, &proof, &mut stock_challenger(), common::single_column_protocol(n, fold))
            .expect("the stock verifier accepts the GPU pieces' proof");
        let mut bad = gpu_bytes.clone();
        let i = rng.random_range(0..bad.len());
        bad[i] ^= 1;
        if let Ok(proof) = postcard::from_bytes::<PcsProof<F, EF<F>, CpuKeccakMmcs<F>>>(&bad) {
            assert!(
                stock.verify(&gpu_commitment, &proof, &mut stock_challenger(), common::single_column_protocol(n, fold)).is_err(),
                "flipped byte {i} accepted"
            );
        }
    }
}

#[test]
fn whir_over_gpu_keccak_pieces_equals_plonky3_and_verifies() {
    let mut rng = common::rng();
    // Contexts of this test's own: their transfer counts show the GPU pieces ran.
    for ctx in common::fresh_contexts() {
        let keccak = GpuKeccak::new(ctx);
        check::<KoalaBear, SuffixProver<KoalaBear, BinomialExtensionField<KoalaBear, 4>>>(&keccak, &mut rng);
        check::<KoalaBear, PrefixProver<KoalaBear, BinomialExtensionField<KoalaBear, 4>>>(&keccak, &mut rng);
        check::<BabyBear, SuffixProver<BabyBear, BinomialExtensionField<BabyBear, 4>>>(&keccak, &mut rng);
    }
}

/// The resident prover over Plonky3's Keccak configuration (`GpuProver::keccak_pcs_over`: the
/// message uploaded once, encoded and committed in Keccak trees, the claim phase and every
/// round where f lies, the Keccak transcript on the host grinding on the GPU): the same
/// commitment and proof bytes as `WhirProver` over Plonky3's CPU pieces with the same
/// challenger, accepted by the stock verifier with Plonky3's own Keccak challenger.
fn check_resident<F, L>(ctx: &std::sync::Arc<whir_wgpu::gpu::GpuContext>, rng: &mut rand::rngs::StdRng)
where
    F: whir_wgpu::prover::ProverField + p3_challenger::fs::TranscriptField + Ord,
    L: Layout<F, BinomialExtensionField<F, 4>>,
    StandardUniform: Distribution<F>,
{
    type EF<F> = BinomialExtensionField<F, 4>;
    let keccak = GpuKeccak::new(ctx.clone());
    let prover = whir_wgpu::prover::GpuProver::<F>::over(ctx.clone());
    for (n, fold, pow_bits) in [(10usize, 1usize, 0usize), (12, 2, 6), (13, 3, 4), (14, 4, 8), (16, 4, 0)] {
        let values: Vec<F> = (0..1usize << n).map(|_| rng.random()).collect();
        let witness = || L::new_witness(vec![Table::new(RowMajorMatrix::new(values.clone(), values.len()))], fold);
        let config = WhirConfig::new(n, common::stock_params(fold, pow_bits)).expect("feasible parameters");
        let cpu_mmcs = GpuKeccakMmcs::<F>::new(None, 0).cpu().clone();
        let cpu_pcs = WhirProver::<EF<F>, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, OurChallenger<F>, L>::new(
            config.clone(),
            Radix2DFTSmallBatch::default(),
            cpu_mmcs.clone(),
        );
        let resident = prover.keccak_pcs_over::<L, EF<F>, OurChallenger<F>>(config.clone()).unwrap();
        let ours = || OurChallenger::<F>::new(GpuKeccakHash::new(vec![], Some(keccak.clone())));
        let protocol = || common::single_column_protocol(n, fold);
        let what = format!("n={n} fold={fold} pow={pow_bits} ({:?})", ctx.mul_variant());

        let mut ch = ours();
        let (cpu_commitment, data) = cpu_pcs.commit(witness(), &mut ch).unwrap();
        let cpu_proof = cpu_pcs.open(data, protocol(), &mut ch).unwrap();
        let before = ctx.transfers().transfer_counts();
        let mut ch = ours();
        let (commitment, data) = resident.commit(witness(), &mut ch).unwrap();
        let proof = resident.open(data, protocol(), &mut ch).unwrap();
        // Resident: the message went up once, and the proof ran on the GPU (not a host fallback).
        let after = ctx.transfers().transfer_counts();
        assert!(after.bytes_up >= before.bytes_up + (4u64 << n), "{what}: {} bytes up", after.bytes_up - before.bytes_up);
        assert!(after.submissions > before.submissions + 2 * (n / fold) as u64, "{what}: {} submissions", after.submissions - before.submissions);
        assert_eq!(commitment, cpu_commitment, "{what}: commitments");
        let bytes = postcard::to_allocvec(&proof).unwrap();
        assert_eq!(bytes, postcard::to_allocvec(&cpu_proof).unwrap(), "{what}: proof bytes");

        let stock = WhirProver::<EF<F>, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, StockChallenger<F>, L>::new(
            WhirConfig::new(n, common::stock_params(fold, pow_bits)).expect("feasible parameters"),
            Radix2DFTSmallBatch::default(),
            cpu_mmcs,
        );
        let proof: PcsProof<F, EF<F>, CpuKeccakMmcs<F>> = postcard::from_bytes(&bytes).unwrap();
        stock
            .verify(&commitment, &proof, &mut StockChallenger::<F>::from_hasher(vec![], Keccak256Hash), protocol())
            .unwrap_or_else(|e| panic!("{what}: the stock verifier refuses the resident proof: {e:?}"));
    }
}

#[test]
fn resident_whir_over_keccak_equals_plonky3_and_verifies() {
    let mut rng = common::rng();
    // Contexts of this test's own: their transfer counts show the proofs ran on the GPU.
    for ctx in common::fresh_contexts() {
        check_resident::<KoalaBear, SuffixProver<KoalaBear, BinomialExtensionField<KoalaBear, 4>>>(&ctx, &mut rng);
        check_resident::<KoalaBear, PrefixProver<KoalaBear, BinomialExtensionField<KoalaBear, 4>>>(&ctx, &mut rng);
        check_resident::<BabyBear, SuffixProver<BabyBear, BinomialExtensionField<BabyBear, 4>>>(&ctx, &mut rng);
    }
}

/// The resident hiding PCS over Plonky3's Keccak configuration (`GpuProver::keccak_hiding_pcs`:
/// the witness, its folds and the masked sumchecks' plain rounds on the GPU in Keccak trees, the
/// masks' oracles committed with Plonky3's Keccak MMCS on the host): for the same generator seed,
/// witness, points and challenger, the same commitment and proof bytes as p3-whir's
/// `HidingWhirPcs` over the CPU pieces and the Keccak MMCS, accepted by its verifier with
/// Plonky3's own Keccak challenger; a flipped byte is refused.
fn check_hiding<F>(ctx: &std::sync::Arc<whir_wgpu::gpu::GpuContext>, rng: &mut rand::rngs::StdRng)
where
    F: whir_wgpu::prover::ProverField + p3_challenger::fs::TranscriptField + Ord,
    StandardUniform: Distribution<F> + Distribution<BinomialExtensionField<F, 4>>,
{
    use p3_multilinear_util::point::Point;
    use p3_multilinear_util::poly::Poly;
    use p3_whir::{HidingWhirPcs, ZkParameters, ZkWhirConfig, ZkWhirProof};
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    type EF<F> = BinomialExtensionField<F, 4>;
    type Hiding<F, C> = HidingWhirPcs<EF<F>, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, C, StdRng>;
    let keccak = GpuKeccak::new(ctx.clone());
    let prover = whir_wgpu::prover::GpuProver::<F>::over(ctx.clone());
    let cpu_mmcs = GpuKeccakMmcs::<F>::new(None, 0).cpu().clone();
    // (vars, fold, PoW, points): one round; two rounds or more with grinding.
    for (n, fold, pow_bits, points) in [(12usize, 4usize, 0usize, 2usize), (14, 3, 5, 3)] {
        let zk = || ZkParameters { ell_zk: 4, mask_log_inv_rate: 1 };
        let params = || {
            let mut p = common::stock_params(fold, pow_bits);
            (p.security_level, p.starting_log_inv_rate) = (32, 2);
            p
        };
        let config = ZkWhirConfig::<EF<F>, F, OurChallenger<F>>::new(n, params(), zk()).expect("a feasible hiding configuration");
        let witness = Poly::new((0..1usize << n).map(|_| rng.random()).collect::<Vec<F>>());
        let points: Vec<Point<EF<F>>> = (0..points).map(|_| Point::new((0..n).map(|_| rng.random()).collect())).collect();
        let seed: u64 = rng.random();
        let ours = || OurChallenger::<F>::new(GpuKeccakHash::new(vec![], Some(keccak.clone())));
        let what = format!("n={n} fold={fold} pow={pow_bits} ({:?})", ctx.mul_variant());

        let cpu = Hiding::<F, OurChallenger<F>>::new(config.clone(), Radix2DFTSmallBatch::default(), cpu_mmcs.clone(), StdRng::seed_from_u64(seed));
        let mut ch = ours();
        let (cpu_root, data) = cpu.commit(witness.clone(), &mut ch).unwrap();
        let cpu_proof = postcard::to_allocvec(&cpu.open(data, points.clone(), &mut ch).unwrap()).unwrap();
        let resident = prover.keccak_hiding_pcs::<EF<F>, OurChallenger<F>, StdRng>(config, StdRng::seed_from_u64(seed)).unwrap();
        let before = ctx.transfers().transfer_counts();
        let mut ch = ours();
        let (root, data) = resident.commit(witness, &mut ch).unwrap();
        let bytes = postcard::to_allocvec(&resident.open(data, points.clone(), &mut ch).unwrap()).unwrap();
        // Resident: the witness went up, and the rounds ran on the GPU.
        let after = ctx.transfers().transfer_counts();
        assert!(after.bytes_up >= before.bytes_up + (4u64 << n), "{what}: {} bytes up", after.bytes_up - before.bytes_up);
        assert!(after.submissions > before.submissions + (n / fold) as u64, "{what}: {} submissions", after.submissions - before.submissions);
        assert_eq!(root, cpu_root, "{what}: commitments");
        assert_eq!(bytes, cpu_proof, "{what}: proof bytes");

        let stock_config = ZkWhirConfig::<EF<F>, F, StockChallenger<F>>::new(n, params(), zk()).unwrap();
        let stock = Hiding::<F, StockChallenger<F>>::new(stock_config, Radix2DFTSmallBatch::default(), cpu_mmcs.clone(), StdRng::seed_from_u64(0));
        let verify = |bytes: &[u8]| -> bool {
            let Ok(proof) = postcard::from_bytes::<ZkWhirProof<F, EF<F>, CpuKeccakMmcs<F>>>(bytes) else { return false };
            stock.verify(&root, &proof, &mut StockChallenger::<F>::from_hasher(vec![], Keccak256Hash), points.clone()).is_ok()
        };
        assert!(verify(&bytes), "{what}: the stock verifier refuses the resident hiding proof");
        let mut flipped = bytes.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 1;
        assert!(!verify(&flipped), "{what}: a flipped byte verified");
    }
}

#[test]
fn resident_hiding_whir_over_keccak_equals_plonky3_and_verifies() {
    let mut rng = common::rng();
    // Contexts of this test's own: their transfer counts show the proofs ran on the GPU.
    for ctx in common::fresh_contexts() {
        check_hiding::<BabyBear>(&ctx, &mut rng);
        check_hiding::<KoalaBear>(&ctx, &mut rng);
    }
}

/// p3-whir's own Keccak lifecycle test (src/pcs/tests.rs, `keccak_tests`), its fixture verbatim
/// — a random KoalaBear table of 2^16 cells (`SmallRng` seed 1), fold 4, round rates 2^-4 then
/// 2^-7, security 32, no grinding, both layouts — run against the resident PCS over Plonky3's
/// own Keccak challenger type: its commit, open and verify through `MultilinearPcs`, its proof
/// byte for byte p3-whir's `WhirProver`'s, and the stock verifier's answer the same.
fn p3_whir_keccak_lifecycle<L: Layout<KoalaBear, BinomialExtensionField<KoalaBear, 4>>>(ctx: &std::sync::Arc<whir_wgpu::gpu::GpuContext>) {
    use p3_whir::{FoldingFactor, ProtocolParameters, SecurityAssumption};
    use rand::SeedableRng;
    type F = KoalaBear;
    type EF = BinomialExtensionField<F, 4>;
    let (num_variables, folding) = (16, 4);
    let witness = || {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        L::new_witness(vec![Table::rand(&mut rng, 1, num_variables)], folding)
    };
    let protocol = p3_sumcheck::OpeningProtocol::new(vec![p3_sumcheck::TableSpec::new(
        p3_sumcheck::TableShape::new(num_variables, 1),
        vec![p3_sumcheck::OpeningBatch::new(vec![0], vec![])],
    )]);
    assert_eq!(witness().table_shapes(), protocol.table_shapes());
    let params = ProtocolParameters {
        security_level: 32,
        pow_bits: 0,
        round_log_inv_rates: vec![4, 7],
        folding_factor: FoldingFactor::Constant(folding),
        soundness_type: SecurityAssumption::CapacityBound,
        starting_log_inv_rate: 1,
    };
    let config = WhirConfig::<EF, F, StockChallenger<F>>::new(witness().num_variables(), params).unwrap();
    let stock = WhirProver::<EF, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, StockChallenger<F>, L>::new(
        config.clone(),
        Radix2DFTSmallBatch::default(),
        GpuKeccakMmcs::<F>::new(None, 0).cpu().clone(),
    );
    let ours = whir_wgpu::prover::GpuProver::<F>::over(ctx.clone()).keccak_pcs_over::<L, EF, StockChallenger<F>>(config).unwrap();
    let challenger = || StockChallenger::<F>::from_hasher(vec![], Keccak256Hash);

    let mut ch = challenger();
    let (commitment, data) = ours.commit(witness(), &mut ch).unwrap();
    let proof = ours.open(data, protocol.clone(), &mut ch).unwrap();
    ours.verify(&commitment, &proof, &mut challenger(), protocol.clone()).expect("keccak verification failed");

    let mut ch = challenger();
    let (stock_commitment, data) = stock.commit(witness(), &mut ch).unwrap();
    let stock_proof = stock.open(data, protocol.clone(), &mut ch).unwrap();
    assert_eq!(commitment, stock_commitment, "{:?}: commitments", ctx.mul_variant());
    assert_eq!(postcard::to_allocvec(&proof).unwrap(), postcard::to_allocvec(&stock_proof).unwrap(), "{:?}: proof bytes", ctx.mul_variant());
    stock.verify(&commitment, &proof, &mut challenger(), protocol).expect("the stock verifier refuses the resident proof");
}

#[test]
fn p3_whir_keccak_lifecycle_test_passes_on_the_resident_pcs() {
    for ctx in common::contexts() {
        p3_whir_keccak_lifecycle::<SuffixProver<KoalaBear, BinomialExtensionField<KoalaBear, 4>>>(&ctx);
        p3_whir_keccak_lifecycle::<PrefixProver<KoalaBear, BinomialExtensionField<KoalaBear, 4>>>(&ctx);
    }
}
