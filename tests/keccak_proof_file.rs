//! Proof files over Plonky3's Keccak configuration (`KeccakProofFileOf`): the file names its
//! hash (`p3-keccak/<extension>`), round-trips, and is checked by p3-whir's verifier with
//! Plonky3's Keccak MMCS and challenger; a Poseidon2 reader refuses a Keccak file (and a Keccak
//! reader a Poseidon2 one) with a message naming the flag that reads it; the size bounds hold for
//! `[u64; 4]` digests (postcard varints of up to 40 bytes); and a Keccak file is untrusted input
//! like any other: non-canonical encodings, truncations and a few hundred random mutations are
//! refused without a panic. The proofs are made by Plonky3's `WhirProver` on the CPU (the GPU's
//! are byte-equal to it: tests/keccak_whir.rs).

mod common;

use p3_baby_bear::BabyBear;
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_field::extension::BinomialExtensionField;
use p3_koala_bear::KoalaBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::layout::{Table, Witness};
use p3_whir::WhirProver;
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::RngExt;
use whir_wgpu::verifier::hash::{cpu_keccak_mmcs, keccak_challenger, CpuKeccakMmcs, KeccakChallenger};
use whir_wgpu::verifier::{
    opening_protocol, proof_file_extension, proof_file_hash, FileParamsFloor, HidingProofFileOf, KeccakProofFileOf, Params, ProofError, ProofFile, ProofFileOf,
    Soundness, TableLayout, WhirExtension, WhirField, Workload, EF,
};

fn params(num_vars: usize, fold: usize, log_inv_rate: usize, points: usize) -> Params {
    Params { num_vars, fold, log_inv_rate, security_bits: 60, pow_bits: 10, soundness: Soundness::Johnson, points, leaf: Default::default() }
}

/// A Keccak proof of random values (or tables) for `p` over `E`, made by Plonky3's prover on the
/// CPU, as a file's bytes.
fn keccak_file<F, E>(p: &Params, tables: Option<&Workload>, rng: &mut StdRng) -> Vec<u8>
where
    F: WhirField + p3_challenger::fs::TranscriptField + Ord,
    E: WhirExtension<F>,
    StandardUniform: Distribution<F>,
{
    let config = p.config_over::<E, KeccakChallenger<F>>().expect("feasible parameters");
    let pcs = WhirProver::<E, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, KeccakChallenger<F>, TableLayout<F, E>>::new(
        config,
        Radix2DFTSmallBatch::default(),
        cpu_keccak_mmcs::<F>(0),
    );
    let mut challenger = keccak_challenger::<F>();
    let columns: Vec<Table<F>> = match tables {
        Some(w) => {
            w.observe(&mut challenger);
            w.tables.iter().map(|&(v, c)| Table::new(RowMajorMatrix::new((0..c << v).map(|_| rng.random()).collect(), 1 << v))).collect()
        }
        None => vec![Table::new(RowMajorMatrix::new((0..1usize << p.num_vars).map(|_| rng.random()).collect(), 1 << p.num_vars))],
    };
    let (commitment, data) = pcs.commit(Witness::new(columns, p.fold), &mut challenger).expect("commit");
    let protocol = tables.map_or_else(|| opening_protocol(p), |w| w.protocol(p.fold));
    let proof = postcard::to_allocvec(&pcs.open(data, protocol, &mut challenger).expect("open")).unwrap();
    match tables {
        Some(w) => KeccakProofFileOf::<F, E>::new_tables(p, w.clone(), commitment, proof).to_bytes(),
        None => KeccakProofFileOf::<F, E>::new(p, commitment, proof).to_bytes(),
    }
}

fn check(bytes: &[u8], expected: &Params) -> Result<(), ProofError> {
    KeccakProofFileOf::<BabyBear>::from_bytes(bytes).and_then(|f| f.verify(expected))
}

/// Re-encodes the varint ending at or after `pos` one byte longer (same value).
fn overlong(bytes: &[u8], pos: usize) -> Vec<u8> {
    let end = (pos..bytes.len()).find(|&i| bytes[i] < 0x80).expect("a varint ends");
    let mut out = bytes.to_vec();
    out[end] |= 0x80;
    out.insert(end + 1, 0);
    out
}

#[test]
fn keccak_files_name_their_hash_and_verify_with_plonky3s_keccak_verifier() {
    let mut rng = common::rng();
    let p = params(10, 2, 1, 2);
    let bytes = keccak_file::<BabyBear, EF>(&p, None, &mut rng);
    assert_eq!(proof_file_hash(&bytes).unwrap(), "keccak");
    assert_eq!(proof_file_extension(&bytes).unwrap(), "babybear^4");
    let file = KeccakProofFileOf::<BabyBear>::from_bytes(&bytes).unwrap();
    assert_eq!(file.hash, "p3-keccak/babybear^4");
    assert_eq!(file.to_bytes(), bytes, "one canonical form");
    file.verify(&p).unwrap();
    // Read through the bounded reader too, for the expected parameters and for the file's own.
    KeccakProofFileOf::<BabyBear>::read(&bytes[..], Some(&p)).unwrap().verify(&p).unwrap();
    let floor = FileParamsFloor { min_security_bits: 60, allow_conjectured: false };
    KeccakProofFileOf::<BabyBear>::read(&bytes[..], None).unwrap().verify_file_params(floor).unwrap();
    // Other parameters than the file's are refused, as for Poseidon2 files.
    let err = file.verify(&params(10, 2, 2, 2)).unwrap_err().to_string();
    assert!(err.contains("rate"), "{err}");

    // KoalaBear^8, and a multi-table file.
    type K8 = BinomialExtensionField<KoalaBear, 8>;
    let p8 = Params { security_bits: 100, ..params(9, 3, 1, 1) };
    let bytes = keccak_file::<KoalaBear, K8>(&p8, None, &mut rng);
    assert_eq!(proof_file_extension(&bytes).unwrap(), "koalabear^8");
    KeccakProofFileOf::<KoalaBear, K8>::from_bytes(&bytes).unwrap().verify(&p8).unwrap();
    let workload = Workload::parse("8x3,2*6x2").unwrap();
    let pt = workload.params_checked(&params(0, 2, 1, 1)).unwrap();
    let bytes = keccak_file::<BabyBear, EF>(&pt, Some(&workload), &mut rng);
    let file = KeccakProofFileOf::<BabyBear>::from_bytes(&bytes).unwrap();
    file.verify_tables(&pt, &workload).unwrap();
    let err = file.verify_tables(&pt, &Workload::parse("8x3,2*6x1").unwrap()).unwrap_err().to_string();
    assert!(err.contains("tables"), "{err}");
}

#[test]
fn each_reader_refuses_the_other_hash_naming_the_flag() {
    let mut rng = common::rng();
    let p = params(10, 2, 1, 1);
    let keccak = keccak_file::<BabyBear, EF>(&p, None, &mut rng);
    let evals = common::random_vec(&mut rng, 1 << p.num_vars);
    let poseidon2 = {
        use whir_wgpu::prover::{CpuProver, Plonky3Pieces};
        CpuProver.prove(&p, &evals).unwrap().proof_file(&p).to_bytes()
    };
    assert_eq!(proof_file_hash(&poseidon2).unwrap(), "poseidon2");

    let read_by_poseidon2 = [ProofFile::from_bytes(&keccak).unwrap_err(), ProofFile::read(&keccak[..], Some(&p)).unwrap_err()];
    for err in read_by_poseidon2.map(|e| e.to_string()) {
        assert!(err.contains("Keccak") && err.contains("--hash keccak"), "{err}");
    }
    let err = KeccakProofFileOf::<BabyBear>::from_bytes(&poseidon2).unwrap_err().to_string();
    assert!(err.contains("Poseidon2") && err.contains("--hash poseidon2"), "{err}");
    // The hiding reader refuses a plain file as one that does not hide; another extension's
    // reader names the file's extension.
    let err = HidingProofFileOf::<BabyBear>::from_bytes_with(&keccak, Default::default()).unwrap_err().to_string();
    assert!(err.contains("does not hide"), "{err}");
    let err = KeccakProofFileOf::<BabyBear, BinomialExtensionField<BabyBear, 5>>::from_bytes(&keccak).unwrap_err().to_string();
    assert!(err.contains("babybear^4") && err.contains("babybear^5"), "{err}");
    let err = ProofFileOf::<KoalaBear>::from_bytes(&keccak).unwrap_err().to_string();
    assert!(err.contains("--hash keccak"), "{err}");
}

#[test]
fn keccak_size_bounds_hold_for_real_proofs() {
    let mut rng = common::rng();
    for p in [params(6, 1, 1, 1), params(10, 2, 2, 3), params(12, 4, 1, 1), params(11, 3, 3, 2), params(8, 8, 1, 1)] {
        let actual = keccak_file::<BabyBear, EF>(&p, None, &mut rng).len();
        let bound = KeccakProofFileOf::<BabyBear>::max_bytes(&p).unwrap();
        assert!(actual <= bound, "{p:?}: {actual} bytes over the bound {bound}");
        assert!(bound <= 4 * actual + 2048, "{p:?}: bound {bound} is loose for {actual} bytes");
    }
    // Multi-table files: the bound of their own table list.
    for spec in ["8x3,2*6x2", "10x1", "3*7x5"] {
        let workload = Workload::parse(spec).unwrap();
        let p = workload.params_checked(&params(0, 2, 1, 1)).unwrap();
        let actual = keccak_file::<BabyBear, EF>(&p, Some(&workload), &mut rng).len();
        let bound = KeccakProofFileOf::<BabyBear>::max_bytes_tables(&p, &workload).unwrap();
        assert!(actual <= bound && bound <= 4 * actual + 4096, "{spec}: {actual} bytes, bound {bound}");
    }
}

#[test]
fn keccak_files_are_untrusted_input() {
    let mut rng = common::rng();
    let p = params(10, 2, 1, 2);
    let bytes = keccak_file::<BabyBear, EF>(&p, None, &mut rng);
    check(&bytes, &p).unwrap();
    // The commitment's cap length re-encoded one byte longer: the same value, refused as
    // non-canonical (the hash name's length is at 16, the name, then the cap's length and lanes).
    // Its first lane re-encoded longer is refused too (as malformed where it had 10 bytes).
    let cap_len = 16 + 1 + bytes[16] as usize;
    let err = check(&overlong(&bytes, cap_len), &p).unwrap_err().to_string();
    assert!(err.contains("canonical"), "{err}");
    assert!(check(&overlong(&bytes, cap_len + 1), &p).is_err());
    for cut in [0, 8, 20, bytes.len() / 2, bytes.len() - 1] {
        assert!(check(&bytes[..cut], &p).is_err(), "truncated at {cut}");
    }
    let mut tried = 0;
    for round in 0..300 {
        let mut m = bytes.clone();
        match round % 6 {
            0 => {
                let i = rng.random_range(0..m.len());
                m[i] ^= 1 << rng.random_range(0..8);
            }
            1 => {
                let i = rng.random_range(0..m.len());
                m[i] = rng.random();
            }
            2 => m.truncate(rng.random_range(0..m.len())),
            3 => {
                let i = rng.random_range(0..=m.len());
                let extra: Vec<u8> = (0..rng.random_range(1..16)).map(|_| rng.random()).collect();
                m.splice(i..i, extra);
            }
            4 => m = overlong(&m, rng.random_range(8..m.len())),
            _ => {
                let (i, j) = (rng.random_range(0..m.len()), rng.random_range(0..m.len()));
                m.swap(i, j);
            }
        }
        if m == bytes {
            continue;
        }
        tried += 1;
        match std::panic::catch_unwind(|| check(&m, &p).map_err(|e| e.to_string())) {
            Ok(Err(_)) => {}
            Ok(Ok(())) => panic!("mutation {round} verified"),
            Err(_) => panic!("mutation {round} panicked"),
        }
    }
    assert!(tried >= 250, "only {tried} mutations differed");
}

/// A hiding proof over the Keccak configuration, made by p3-whir's `HidingWhirPcs` over Plonky3's
/// CPU pieces and Keccak MMCS at the points its commitment fixes, as a file's bytes.
fn keccak_hiding_file(p: &Params, masks: whir_wgpu::verifier::ZkMasks, rng: &mut StdRng) -> Vec<u8> {
    use p3_multilinear_util::poly::Poly;
    use rand::SeedableRng;
    use whir_wgpu::verifier::{hiding_points_over, zk_config, Keccak, KeccakHidingProofFileOf, ParamSource};
    let config = zk_config::<BabyBear, EF, KeccakChallenger<BabyBear>>(p, masks, ParamSource::Flags).unwrap();
    let pcs = p3_whir::HidingWhirPcs::<EF, BabyBear, Radix2DFTSmallBatch<BabyBear>, CpuKeccakMmcs<BabyBear>, KeccakChallenger<BabyBear>, StdRng>::new(
        config,
        Radix2DFTSmallBatch::default(),
        cpu_keccak_mmcs(0),
        StdRng::seed_from_u64(rng.random()),
    );
    let mut challenger = keccak_challenger::<BabyBear>();
    let witness = Poly::new((0..1usize << p.num_vars).map(|_| rng.random()).collect::<Vec<BabyBear>>());
    let (commitment, data) = pcs.commit(witness, &mut challenger).unwrap();
    let points = hiding_points_over::<BabyBear, EF, Keccak>(&commitment, p);
    let proof = postcard::to_allocvec(&pcs.open(data, points, &mut challenger).unwrap()).unwrap();
    KeccakHidingProofFileOf::<BabyBear>::new(p, masks, commitment, proof).to_bytes()
}

#[test]
fn keccak_hiding_files_verify_and_are_refused_by_poseidon2s_reader() {
    use whir_wgpu::verifier::{KeccakHidingProofFileOf, ReadLimits, ZkMasks};
    let mut rng = common::rng();
    let p = Params { log_inv_rate: 2, ..params(14, 3, 2, 2) };
    let masks = ZkMasks::DEFAULT;
    let bytes = keccak_hiding_file(&p, masks, &mut rng);
    assert_eq!(proof_file_hash(&bytes).unwrap(), "keccak");
    let file = KeccakHidingProofFileOf::<BabyBear>::from_bytes_with(&bytes, ReadLimits::default()).unwrap();
    assert_eq!(file.to_bytes(), bytes);
    file.verify(&p, masks).unwrap();
    KeccakHidingProofFileOf::<BabyBear>::read_with(&bytes[..], ReadLimits::default()).unwrap().verify(&p, masks).unwrap();
    let bound = KeccakHidingProofFileOf::<BabyBear>::max_bytes(&p, masks).unwrap();
    assert!(bytes.len() <= bound && bound <= 4 * bytes.len() + 4096, "{} bytes, bound {bound}", bytes.len());
    let err = HidingProofFileOf::<BabyBear>::from_bytes_with(&bytes, ReadLimits::default()).unwrap_err().to_string();
    assert!(err.contains("--hash keccak"), "{err}");
    // A plain Keccak reader refuses it as hiding; mutations are refused without a panic.
    assert!(KeccakProofFileOf::<BabyBear>::from_bytes(&bytes).unwrap_err().to_string().contains("hiding"));
    for round in 0..60 {
        let mut m = bytes.clone();
        let i = rng.random_range(0..m.len());
        m[i] ^= 1 << (round % 8);
        let verdict = std::panic::catch_unwind(|| {
            KeccakHidingProofFileOf::<BabyBear>::from_bytes_with(&m, ReadLimits::default()).and_then(|f| f.verify(&p, masks)).is_ok()
        });
        assert!(matches!(verdict, Ok(false)), "mutation {round} at byte {i}: {verdict:?}");
    }
}
