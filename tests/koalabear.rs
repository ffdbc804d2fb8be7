//! WHIR over KoalaBear^4 (SP1 Hypercube's field and extension) with KoalaBear's Poseidon2: our
//! driver (the CPU twin, and resident GPU codewords and sumcheck in both multiply variants) and
//! the GPU PCS against Plonky3's own `WhirProver` over the same field, byte for byte, accepted
//! by the stock verifier; proof files that name their field.

mod common;

use std::sync::Arc;

use p3_challenger::{CanObserve, FieldChallenger};
use p3_koala_bear::KoalaBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_multilinear_util::point::Point;
use p3_sumcheck::layout::{Layout, PrefixProver, SuffixProver, Table};
use p3_sumcheck::{OpeningProtocol, PrescribedPointPcs};
use rand::rngs::StdRng;
use rand::RngExt;
use whir_wgpu::gpu::{GpuChallenger, GpuContext, GpuGrinder, GpuMerkle, GpuNtt, GpuPoseidon2, Poseidon2Constants};
use whir_wgpu::prover::backend::GpuBackend;
use whir_wgpu::prover::backend::{ComparingBackend, CpuBackend};
use whir_wgpu::prover::prove_with_backend;
use whir_wgpu::prover::{
    CpuProver, CpuWhirPcs, DriverOptions, GpuMode, GpuProver, GpuWhirPcs, Params, Plonky3Pieces, ProofFile, ProofFileOf, Soundness, WhirField, EF,
};
use whir_wgpu::verifier::proof_file_field;

type K = KoalaBear;
type EK = EF<K>;

fn random_k(rng: &mut StdRng, n: usize) -> Vec<K> {
    (0..n).map(|_| rng.random()).collect()
}

/// A transcript over KoalaBear's default Poseidon2, grinding on `grinder` where given.
fn challenger(grinder: Option<Arc<GpuGrinder<K>>>) -> GpuChallenger<K> {
    GpuChallenger::new(Poseidon2Constants::<K>::plonky3_default().to_cpu(), grinder)
}

fn poseidon2(ctx: &Arc<GpuContext>) -> Arc<GpuPoseidon2<K>> {
    Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<K>::plonky3_default()))
}

fn gpu_backend(ctx: &Arc<GpuContext>) -> GpuBackend<K> {
    GpuBackend::new(Arc::new(GpuNtt::new(ctx.clone())), Arc::new(GpuMerkle::new(poseidon2(ctx)))).unwrap()
}

/// Shapes as the BabyBear grid draws them (n 6..=13, fold 1..=4, rate 1..=3, Johnson and unique
/// decoding, PoW 0 / 5 / 8, 1..=3 points); infeasible draws are skipped.
fn grid(rng: &mut StdRng, count: usize) -> Vec<Params> {
    common::random_params(rng, count, 6..=13, |p| p.config::<GpuChallenger<K>>().is_ok())
}

/// Plonky3's `WhirProver` over KoalaBear (its CPU DFT and `MerkleTreeMmcs`, the smallest-witness
/// grinder): the commitment and proof bytes, and the file.
fn reference(p: &Params, evals: &[K]) -> ((Vec<u8>, Vec<u8>), ProofFileOf<K>) {
    let out = CpuProver.prove(p, evals).unwrap();
    let bytes = (postcard::to_allocvec(&out.commitment).unwrap(), out.proof.clone());
    (bytes, out.proof_file(p))
}

#[test]
fn cpu_twin_matches_plonky3_over_koalabear() {
    let mut rng = common::rng();
    for p in grid(&mut rng, 10) {
        let evals = random_k(&mut rng, 1 << p.num_vars);
        let (expected, file) = reference(&p, &evals);
        let (commitment, proof, _) = prove_with_backend(&CpuBackend::<K>::default(), &p, &evals, &mut challenger(None), DriverOptions::default()).unwrap();
        let ours = (postcard::to_allocvec(&commitment).unwrap(), postcard::to_allocvec(&proof).unwrap());
        assert!(ours == expected, "{p:?}: the twin's proof differs from Plonky3's");
        ProofFileOf::<K>::from_bytes(&file.to_bytes()).unwrap().verify(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    }
}

/// Resident GPU codewords and sumcheck beside the twin (a comparing backend names the first step
/// that differs), the transcript's grinds on the CPU and then on the GPU (round heads and chains
/// played where f lies), with stored and lazy first weights.
#[test]
fn resident_gpu_matches_plonky3_over_koalabear() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let steps = gpu_backend(&ctx);
        let grinder = Arc::new(GpuGrinder::new(poseidon2(&ctx)));
        for p in grid(&mut rng, 6) {
            let evals = random_k(&mut rng, 1 << p.num_vars);
            let (expected, _) = reference(&p, &evals);
            for lazy in [false, true] {
                let options = DriverOptions { lazy_first_weights: Some(lazy), ..DriverOptions::default() };
                let compared = ComparingBackend::new(CpuBackend::<K>::default(), &steps);
                let (commitment, proof, _) = prove_with_backend(&compared, &p, &evals, &mut challenger(None), options)
                    .unwrap_or_else(|e| panic!("{p:?} ({:?}, lazy {lazy}): {e}", ctx.mul_variant()));
                let ours = (postcard::to_allocvec(&commitment).unwrap(), postcard::to_allocvec(&proof).unwrap());
                assert!(ours == expected, "{p:?} ({:?}, lazy {lazy}): the GPU proof differs from Plonky3's", ctx.mul_variant());
                let mut on_gpu = challenger(Some(grinder.clone())).with_gpu_min_bits(1);
                let (commitment, proof, _) = prove_with_backend::<_, whir_wgpu::gpu::Ext4<KoalaBear>, _, _>(&steps, &p, &evals, &mut on_gpu, options)
                    .unwrap_or_else(|e| panic!("{p:?} ({:?}, GPU grinds): {e}", ctx.mul_variant()));
                let ours = (postcard::to_allocvec(&commitment).unwrap(), postcard::to_allocvec(&proof).unwrap());
                assert!(ours == expected, "{p:?} ({:?}, GPU grinds, lazy {lazy}): the GPU proof differs from Plonky3's", ctx.mul_variant());
            }
        }
    }
}

/// The backend users call: `GpuProver::<KoalaBear>::over(ctx)` proves on the GPU, the same bytes
/// as Plonky3's, in a file the stock verifier accepts.
#[test]
fn gpu_backend_proves_over_koalabear() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let backend = GpuProver::<K>::over(ctx.clone());
        for p in grid(&mut rng, 3) {
            let evals = random_k(&mut rng, 1 << p.num_vars);
            let (expected, _) = reference(&p, &evals);
            let out = backend.prove(&p, &evals).unwrap();
            assert_eq!(out.path, "gpu", "{p:?}: proved on the GPU");
            assert!((postcard::to_allocvec(&out.commitment).unwrap(), out.proof.clone()) == expected, "{p:?} ({:?}): the proofs differ", ctx.mul_variant());
            ProofFileOf::<K>::from_bytes(&out.proof_file(&p).to_bytes()).unwrap().verify(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        }
    }
}

/// Plonky3's prover with our GPU encoder, MMCS and grinder (`GpuMode::Pieces`) over KoalaBear:
/// the same bytes.
#[test]
fn gpu_pieces_over_koalabear_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let backend = GpuProver::<K>::over(ctx.clone()).with_mode(GpuMode::Pieces);
        for p in grid(&mut rng, 2) {
            let evals = random_k(&mut rng, 1 << p.num_vars);
            let (expected, _) = reference(&p, &evals);
            let out = backend.prove(&p, &evals).unwrap();
            assert_eq!(out.path, "gpu-pieces");
            assert!((postcard::to_allocvec(&out.commitment).unwrap(), out.proof.clone()) == expected, "{p:?} ({:?}): the proofs differ", ctx.mul_variant());
        }
    }
}

/// Resident proofs whose codewords and sumcheck tables exceed a 64 KiB binding (split into
/// column blocks, row chunks and table segments), over KoalaBear: Plonky3's bytes.
#[test]
fn koalabear_proofs_split_over_small_bindings_match_plonky3() {
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    let mut rng = common::rng();
    let binding = 64u64 << 10;
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(binding) }), ..Default::default() }) else {
        return;
    };
    let steps = gpu_backend(&ctx);
    for (n, fold, rate) in [(13, 1, 1), (14, 4, 1), (13, 2, 2)] {
        let p = Params {
            num_vars: n,
            fold,
            log_inv_rate: rate,
            security_bits: 60,
            pow_bits: 5,
            soundness: Soundness::Johnson,
            points: 2,
            leaf: Default::default(),
        };
        assert!(16u64 << n > binding && 16u64 << (n + rate - 1) > binding);
        let evals = random_k(&mut rng, 1 << n);
        let (expected, _) = reference(&p, &evals);
        let (commitment, proof, _) =
            prove_with_backend::<_, whir_wgpu::gpu::Ext4<KoalaBear>, _, _>(&steps, &p, &evals, &mut challenger(None), DriverOptions::default())
                .unwrap_or_else(|e| panic!("{p:?}: {e}"));
        let ours = (postcard::to_allocvec(&commitment).unwrap(), postcard::to_allocvec(&proof).unwrap());
        assert!(ours == expected, "{p:?} under a {binding}-byte binding: the proofs differ");
    }
}

/// The transcript's permutation here (whir-gpu's constant tables) is Plonky3's default
/// KoalaBear Poseidon2, `WhirField::permutation()`, on random states: the reference prover and
/// the stock verifier hash alike.
#[test]
fn the_transcript_permutation_is_plonky3s_default() {
    use p3_symmetric::Permutation;
    let mut rng = common::rng();
    let ours = Poseidon2Constants::<K>::plonky3_default().to_cpu();
    let plonky3 = <K as WhirField>::permutation();
    for _ in 0..64 {
        let state: [K; 16] = std::array::from_fn(|_| rng.random());
        assert_eq!(ours.permute(state), plonky3.permute(state));
    }
}

/// A proof file names its field: read as the other field's it is refused, saying which it is.
#[test]
fn proof_files_name_their_field() {
    let mut rng = common::rng();
    let p =
        Params { num_vars: 8, fold: 2, log_inv_rate: 1, security_bits: 60, pow_bits: 0, soundness: Soundness::Johnson, points: 1, leaf: Default::default() };
    let (_, koala) = reference(&p, &random_k(&mut rng, 1 << 8));
    let koala = koala.to_bytes();
    assert_eq!(proof_file_field(&koala).unwrap(), "koalabear");
    let err = ProofFile::from_bytes(&koala).unwrap_err().to_string();
    assert!(err.contains("over koalabear") && err.contains("read it as a koalabear^4 proof"), "{err}");
    let baby = CpuProver.prove(&p, &common::random_vec(&mut rng, 1 << 8)).unwrap().proof_file(&p).to_bytes();
    assert_eq!(proof_file_field(&baby).unwrap(), "babybear");
    let err = ProofFileOf::<K>::from_bytes(&baby).unwrap_err().to_string();
    assert!(err.contains("over babybear"), "{err}");
    ProofFile::from_bytes(&baby).unwrap().verify(&p).unwrap();
    // The readers that stop early say the same (the field before the parameters, the size
    // bound or the body), whatever the file's values are.
    let err = ProofFile::read(std::io::Cursor::new(&koala), Some(&Params { num_vars: 9, ..p.clone() })).unwrap_err().to_string();
    assert!(err.contains("over koalabear"), "{err}");
    // A BabyBear file whose domain KoalaBear cannot hold is still named as BabyBear's.
    let big = Params { num_vars: 26, fold: 1, log_inv_rate: 1, pow_bits: 10, ..p.clone() };
    let mut forged = ProofFile::from_bytes(&baby).unwrap();
    forged.params = big;
    let err = ProofFileOf::<K>::from_bytes(&forged.to_bytes()).unwrap_err().to_string();
    assert!(err.contains("over babybear"), "{err}");
}

/// KoalaBear's two-adic subgroup is 2^24: a codeword of more rows is refused by name, with a
/// way out, where BabyBear (2^27) takes it.
#[test]
fn koalabear_domains_past_2_24_are_refused() {
    let p =
        Params { num_vars: 25, fold: 1, log_inv_rate: 1, security_bits: 60, pow_bits: 10, soundness: Soundness::Johnson, points: 1, leaf: Default::default() };
    let err = p.config::<GpuChallenger<K>>().map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("koalabear's 2^24") && err.contains("--fold 2"), "{err}");
    p.config::<GpuChallenger>().expect("BabyBear's domain holds it");
}

/// The GPU PCS over KoalaBear, in both layouts, with drawn and prescribed points and an outer
/// protocol on the same challenger: the bytes of Plonky3's `WhirProver` over KoalaBear, and its
/// own `verify` / `verify_at` accept them.
#[test]
fn gpu_pcs_matches_plonky3_over_koalabear() {
    let mut rng = common::rng();
    for prescribed in [false, true] {
        check_pcs::<SuffixProver<K, EK>>(&mut rng, prescribed, SuffixProver::<K, EK>::new_witness);
        check_pcs::<PrefixProver<K, EK>>(&mut rng, prescribed, PrefixProver::<K, EK>::new_witness);
    }
}

type Witness = p3_sumcheck::layout::Witness<K>;

/// Commits `witness` and opens it as `protocol` says with `pcs`, from a transcript that has seen
/// `outer`; prescribed points are drawn by the outer protocol after the commitment. Checked by
/// `pcs`'s own verifier; returns the commitment and proof bytes.
fn prove_pcs<P>(pcs: &P, witness: Witness, protocol: &OpeningProtocol, outer: &[K], prescribed: bool) -> (Vec<u8>, Vec<u8>)
where
    P: PrescribedPointPcs<
        EK,
        GpuChallenger<K>,
        Val = K,
        Witness = Witness,
        OpeningProtocol = OpeningProtocol,
        Commitment = whir_wgpu::prover::Commitment<K>,
        Proof = whir_wgpu::prover::WhirPcsProof<K>,
    >,
    P::ProverError: std::fmt::Debug,
    P::Error: std::fmt::Debug,
{
    let points_after_commit = |ch: &mut GpuChallenger<K>| -> Vec<Point<EK>> {
        if !prescribed {
            return Vec::new();
        }
        let r: EK = ch.sample_algebra_element();
        ch.observe_algebra_element(r);
        let shapes = protocol.table_shapes();
        protocol.iter_openings().map(|(t, _)| Point::new((0..shapes[t].num_variables()).map(|_| ch.sample_algebra_element()).collect())).collect()
    };
    let mut prover = challenger(None);
    prover.observe_slice(outer);
    let (commitment, data) = pcs.commit(witness, &mut prover).unwrap();
    let points = points_after_commit(&mut prover);
    let proof = if prescribed { pcs.open_at(data, protocol, &points, &mut prover) } else { pcs.open(data, protocol.clone(), &mut prover) }.unwrap();
    let mut verifier = challenger(None);
    verifier.observe_slice(outer);
    if prescribed {
        pcs.observe_commitment(&commitment, &mut verifier);
        assert_eq!(points_after_commit(&mut verifier), points);
        let evals = pcs.verify_at(&commitment, &proof, protocol, &points, &mut verifier).expect("verify_at accepts");
        assert_eq!(evals, proof.evals);
    } else {
        pcs.verify(&commitment, &proof, &mut verifier, protocol.clone()).expect("verify accepts");
    }
    (postcard::to_allocvec(&commitment).unwrap(), postcard::to_allocvec(&proof).unwrap())
}

fn check_pcs<L: Layout<K, EK>>(rng: &mut StdRng, prescribed: bool, new_witness: impl Fn(Vec<Table<K>>, usize) -> Witness) {
    let fold = rng.random_range(1..=3);
    let tables = [(rng.random_range(5..=8), rng.random_range(1..=3)), (rng.random_range(3..=6), rng.random_range(1..=2))];
    let batches = [(0, vec![0], vec![0]), (1, (0..tables[1].1).collect::<Vec<_>>(), vec![]), (0, vec![tables[0].1 - 1], vec![])];
    let (protocol, params) = common::table_protocol(&tables, &batches, fold);
    let params = Params { log_inv_rate: rng.random_range(1..=2), ..params };
    let config = params.config::<GpuChallenger<K>>().unwrap();
    let values: Vec<Table<K>> = tables.iter().map(|&(v, w)| Table::new(RowMajorMatrix::new(random_k(rng, w << v), 1 << v))).collect();
    let outer = random_k(rng, 3);
    let stock = CpuWhirPcs::<L, K>::new(config.clone(), CpuBackend::default());
    let expected = prove_pcs(stock.stock(), new_witness(values.clone(), fold), &protocol, &outer, prescribed);
    assert!(
        prove_pcs(&stock, new_witness(values.clone(), fold), &protocol, &outer, prescribed) == expected,
        "{params:?}: the twin's proof differs from Plonky3's"
    );
    for ctx in common::contexts() {
        // The initial weights stored, and formed where the rounds use them (lazy slot weights).
        for lazy in [false, true] {
            let options = DriverOptions { lazy_first_weights: Some(lazy), ..DriverOptions::default() };
            let pcs = GpuWhirPcs::<L, K>::new(config.clone(), gpu_backend(&ctx)).with_options(options);
            let ours = prove_pcs(&pcs, new_witness(values.clone(), fold), &protocol, &outer, prescribed);
            assert!(ours == expected, "{params:?} ({:?}, prescribed {prescribed}, lazy {lazy}): the GPU PCS's proof differs from Plonky3's", ctx.mul_variant());
        }
    }
}
