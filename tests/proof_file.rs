//! Proof files are untrusted input: the verifier checks a proof against the parameters it
//! expects, every header value is validated before anything is built, reading is bounded by what
//! the parameters allow, a file is accepted only in its one canonical byte form, and a few hundred
//! random mutations of a valid file (fresh seed each run) are all rejected without a panic.

mod common;

use std::io::Read;

use rand::rngs::StdRng;
use rand::RngExt;
use whir_wgpu::prover::{CpuProver, FileParamsFloor, Params, Plonky3Pieces, ProofError, ProofFile, ReadLimits, Soundness};

fn params(num_vars: usize, fold: usize, log_inv_rate: usize, points: usize) -> Params {
    Params { num_vars, fold, log_inv_rate, security_bits: 60, pow_bits: 10, soundness: Soundness::Johnson, points, leaf: Default::default() }
}

fn proof_bytes(p: &Params, rng: &mut StdRng) -> Vec<u8> {
    let evals = common::random_vec(rng, 1 << p.num_vars);
    CpuProver.prove(p, &evals).unwrap().proof_file(p).to_bytes()
}

/// Re-encodes the varint starting at `pos` one byte longer (same value): `b` becomes `b | 0x80, 0`.
fn overlong(bytes: &[u8], pos: usize) -> Vec<u8> {
    let end = (pos..bytes.len()).find(|&i| bytes[i] < 0x80).expect("a varint ends");
    let mut out = bytes.to_vec();
    out[end] |= 0x80;
    out.insert(end + 1, 0);
    out
}

/// Offsets of the header's varints: version, the seven parameters, the hash name's length.
fn header_varints(p: &Params) -> Vec<usize> {
    let params_len = postcard::to_allocvec(p).unwrap().len();
    assert_eq!(params_len, 7, "one byte per small parameter");
    // 8 magic bytes, the version at 8, parameters from 9, the hash name's length after them.
    (8..9 + params_len + 1).collect()
}

fn check(bytes: &[u8], expected: &Params) -> Result<(), ProofError> {
    ProofFile::from_bytes(bytes).and_then(|f| f.verify(expected))
}

#[test]
fn the_verifier_decides_the_parameters_not_the_file() {
    let mut rng = common::rng();
    let weak = Params { security_bits: 1, pow_bits: 0, ..params(10, 2, 1, 1) };
    let bytes = proof_bytes(&weak, &mut rng);
    let file = ProofFile::from_bytes(&bytes).unwrap();
    // Expecting 60 bits: rejected, naming what differs.
    let strong = params(10, 2, 1, 1);
    let err = file.verify(&strong).unwrap_err().to_string();
    assert!(err.contains("security 1 (expected 60)") && err.contains("pow-bits 0 (expected 10)"), "{err}");
    // Taking the file's word only with an explicit floor.
    let err = file.verify_file_params(FileParamsFloor::default()).unwrap_err().to_string();
    assert!(err.contains("security = 1 bits, below the 80 bits accepted"), "{err}");
    let floor = |min_security_bits| FileParamsFloor { min_security_bits, allow_conjectured: false };
    file.verify_file_params(floor(1)).expect("accepted at a 1-bit floor");
    file.verify(&weak).expect("accepted when the verifier expects exactly these parameters");

    // A level resting on the capacity conjecture clears a floor only when that is accepted.
    let conjectured = Params { soundness: Soundness::Capacity, ..params(10, 2, 1, 1) };
    let file = ProofFile::from_bytes(&proof_bytes(&conjectured, &mut rng)).unwrap();
    let err = file.verify_file_params(floor(1)).unwrap_err().to_string();
    assert!(err.contains("capacity bound (a conjecture") && err.contains("--allow-conjecture"), "{err}");
    file.verify_file_params(FileParamsFloor { min_security_bits: 1, allow_conjectured: true }).expect("conjecture accepted");
    assert!(conjectured.warnings().iter().any(|w| w.contains("conjecture")), "{:?}", conjectured.warnings());
    assert!(!params(10, 2, 1, 1).warnings().iter().any(|w| w.contains("conjecture")));
}

#[test]
fn non_canonical_encodings_are_rejected() {
    let mut rng = common::rng();
    let p = params(10, 2, 1, 2);
    let bytes = proof_bytes(&p, &mut rng);
    check(&bytes, &p).expect("the canonical file verifies");
    for pos in header_varints(&p) {
        let err = check(&overlong(&bytes, pos), &p).unwrap_err().to_string();
        assert!(err.contains("canonical"), "overlong varint at {pos}: {err}");
    }
    // Inside the body: the first vector length, re-wrapped in a canonical outer file.
    let mut file = ProofFile::from_bytes(&bytes).unwrap();
    file.proof = overlong(&file.proof, 0);
    let err = check(&file.to_bytes(), &p).unwrap_err().to_string();
    assert!(err.contains("proof body is not in canonical form"), "{err}");
    let mut appended = bytes.clone();
    appended.push(0);
    assert!(check(&appended, &p).unwrap_err().to_string().contains("unexpected bytes"));
}

#[test]
fn header_values_are_checked_before_anything_is_built() {
    let mut rng = common::rng();
    let p = params(10, 2, 1, 1);
    let file = ProofFile::from_bytes(&proof_bytes(&p, &mut rng)).unwrap();
    let forged = |f: &dyn Fn(&mut Params)| {
        let mut forged = file.clone();
        f(&mut forged.params);
        let started = std::time::Instant::now();
        let err = ProofFile::from_bytes(&forged.to_bytes()).unwrap_err().to_string();
        assert!(started.elapsed().as_secs() < 5, "{err}: took {:?}", started.elapsed());
        err
    };
    let err = forged(&|p| p.pow_bits = 40);
    assert!(err.contains("the proof file's header says pow-bits = 40") && !err.contains("--pow-bits 40"), "{err}");
    for points in [1usize << 27, 1 << 32, usize::MAX] {
        let err = forged(&|p| p.points = points);
        assert!(err.contains(&format!("the proof file's header says points = {points}")), "{err}");
    }
    let err = forged(&|p| p.num_vars = 40);
    assert!(err.contains("the proof file's header says vars = 40") && !err.contains("--vars"), "{err}");
    let err = forged(&|p| p.log_inv_rate = usize::MAX);
    assert!(err.contains("the proof file's header says rate ="), "{err}");
    let err = forged(&|p| p.security_bits = 0);
    assert!(err.contains("the proof file's header says security = 0"), "{err}");
    let err = forged(&|p| p.fold = 1000);
    assert!(err.contains("the proof file's header says fold = 1000"), "{err}");
    // Feasible-looking but infeasible for p3-whir: still the file's fault, in words.
    let err = forged(&|p| p.security_bits = 250);
    assert!(err.contains("the proof file's header holds infeasible parameters") && err.contains("corrupted or forged"), "{err}");
}

#[test]
fn reading_is_bounded_by_the_parameters() {
    let mut rng = common::rng();
    let p = params(10, 2, 1, 1);
    let bytes = proof_bytes(&p, &mut rng);
    let limit = ProofFile::max_bytes(&p).unwrap();
    // An endless source (like /dev/zero), and a valid file with endless garbage after it.
    for (what, expected) in [("zeros", Some(&p)), ("zeros", None)] {
        let err = ProofFile::read(std::io::repeat(0), expected).unwrap_err().to_string();
        assert!(err.contains("larger than any proof") || err.contains("not a whir-wgpu proof file"), "{what}: {err}");
    }
    for expected in [Some(&p), None] {
        let endless = std::io::Cursor::new(bytes.clone()).chain(std::io::repeat(7));
        let err = ProofFile::read(endless, expected).unwrap_err().to_string();
        assert!(err.contains(&format!("({limit} bytes at most)")), "{err}");
    }
    let file = ProofFile::read(std::io::Cursor::new(bytes.clone()), None).unwrap();
    file.verify(&p).unwrap();
    ProofFile::read(std::io::Cursor::new(bytes), Some(&p)).unwrap().verify(&p).unwrap();
}

/// A header may name parameters whose largest proof is gigabytes (n = 28 folded at once): the
/// absolute read limit holds all the same, for the file's parameters and for a verifier that
/// expects those very parameters, and says how to raise it; a raised limit is honoured.
#[test]
fn a_forged_header_cannot_raise_the_read_limit() {
    let mut rng = common::rng();
    let p = params(10, 2, 1, 1);
    let bytes = proof_bytes(&p, &mut rng);
    let mut forged = ProofFile::from_bytes(&bytes).unwrap();
    forged.params = Params {
        num_vars: 28,
        fold: 28,
        log_inv_rate: 1,
        security_bits: 100,
        pow_bits: 20,
        soundness: Soundness::Johnson,
        points: 1,
        leaf: Default::default(),
    };
    let claimed = ProofFile::max_bytes(&forged.params).unwrap();
    assert!(claimed > 1 << 32, "the forged parameters allow {claimed} bytes");
    let limit = ReadLimits::DEFAULT_MAX_FILE_BYTES;
    for expected in [None, Some(&forged.params)] {
        let endless = std::io::Cursor::new(forged.to_bytes()).chain(std::io::repeat(0));
        let err = ProofFile::read(endless, expected).unwrap_err().to_string();
        assert!(err.contains(&format!("larger than the {limit} bytes (64.0 MiB) a verifier reads")) && err.contains("--max-proof-mib"), "{err}");
    }
    // from_bytes holds the same limit for bytes already in memory.
    let mut padded = forged.clone();
    padded.proof.resize(limit + 1, 0);
    let err = ProofFile::from_bytes(&padded.to_bytes()).unwrap_err().to_string();
    assert!(err.contains("a verifier reads from one proof file"), "{err}");
    // A lower limit refuses a real proof over it; the proof's own size passes.
    let err = ProofFile::read_with(std::io::Cursor::new(&bytes), Some(&p), ReadLimits::new(bytes.len() - 1)).unwrap_err().to_string();
    assert!(err.contains(&format!("larger than the {} bytes", bytes.len() - 1)), "{err}");
    ProofFile::read_with(std::io::Cursor::new(&bytes), Some(&p), ReadLimits::new(bytes.len())).unwrap().verify(&p).unwrap();
    // (And 1 KiB for each column a table list in a file of that size could name: at most 65,536.)
    assert!(ProofFile::max_verify_memory_with(&forged.params, ReadLimits::default()).unwrap() <= (8 << 20) + 8 * limit + (64 << 20));
}

#[test]
fn a_bad_soundness_tag_is_named_as_such() {
    let mut rng = common::rng();
    let p = params(10, 2, 1, 1);
    let mut bytes = proof_bytes(&p, &mut rng);
    // Magic (8 bytes), version (1), then vars, fold, rate, security, pow-bits, soundness.
    let soundness_at = 8 + 1 + 5;
    assert_eq!(bytes[soundness_at], 0, "Johnson is variant 0");
    bytes[soundness_at] = 7;
    let err = ProofFile::read(std::io::Cursor::new(&bytes), None).unwrap_err().to_string();
    assert!(err.contains("the soundness tag is not one of johnson, capacity, unique"), "{err}");
    assert!(!err.contains("field element"), "{err}");
}

#[test]
fn size_bounds_hold_for_real_proofs() {
    let mut rng = common::rng();
    for p in [params(6, 1, 1, 1), params(10, 2, 2, 3), params(12, 4, 1, 1), params(11, 3, 3, 2), params(8, 8, 1, 1)] {
        let actual = proof_bytes(&p, &mut rng).len();
        let bound = ProofFile::max_bytes(&p).unwrap();
        assert!(actual <= bound, "{p:?}: {actual} bytes over the bound {bound}");
        assert!(bound <= 4 * actual + 2048, "{p:?}: bound {bound} is loose for {actual} bytes");
        eprintln!("{p:?}: {actual} bytes, bound {bound}");
    }
}

#[test]
fn random_mutations_are_rejected_without_panics() {
    let mut rng = common::rng();
    let p = params(10, 2, 1, 2);
    let bytes = proof_bytes(&p, &mut rng);
    let header = header_varints(&p);
    let mut tried = 0;
    for round in 0..300 {
        let mut m = bytes.clone();
        let kind = round % 9;
        match kind {
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
                let i = rng.random_range(0..m.len());
                let n = rng.random_range(1..16).min(m.len() - i);
                m.drain(i..i + n);
            }
            4 => {
                let i = rng.random_range(0..=m.len());
                let extra: Vec<u8> = (0..rng.random_range(1..16)).map(|_| rng.random()).collect();
                m.splice(i..i, extra);
            }
            5 => m.extend((0..rng.random_range(1..64)).map(|_| rng.random::<u8>())),
            6 => m = overlong(&m, header[rng.random_range(0..header.len())]),
            7 => {
                // A header value replaced by any byte, including continuation bytes.
                m[header[rng.random_range(0..header.len())]] = rng.random();
            }
            _ => {
                let (i, j) = (rng.random_range(0..m.len()), rng.random_range(0..m.len()));
                m.swap(i, j);
            }
        }
        if m == bytes {
            continue;
        }
        tried += 1;
        let verdict = std::panic::catch_unwind(|| check(&m, &p).map_err(|e| e.to_string()));
        match verdict {
            Ok(Err(_)) => {}
            Ok(Ok(())) => panic!("mutation {round} (kind {kind}) verified"),
            Err(_) => panic!("mutation {round} (kind {kind}) panicked"),
        }
    }
    assert!(tried >= 250, "only {tried} mutations differed");
}

#[test]
fn pow_witnesses_follow_the_grind_schedule() {
    let mut rng = common::rng();
    for p in [params(10, 2, 1, 1), params(12, 4, 1, 1), params(11, 3, 2, 2)] {
        let file = ProofFile::from_bytes(&proof_bytes(&p, &mut rng)).unwrap();
        let witnesses = file.pow_witnesses().unwrap();
        let config = p.config::<whir_wgpu::gpu::GpuChallenger>().unwrap();
        // The bits of every grind, in the proof's order: a sumcheck round carries a witness only
        // when it grinds, a round's query grind always (0 at 0 bits).
        let folds = |bits: usize, rounds: usize| vec![bits; if bits > 0 { rounds } else { 0 }];
        let mut bits = folds(config.starting_folding_pow_bits(), config.round_folding_factor(0));
        for r in config.round_parameters() {
            bits.push(r.pow_bits);
            bits.extend(folds(r.folding_pow_bits, r.folding_factor));
        }
        bits.push(config.final_round_config().pow_bits);
        bits.extend(folds(config.final_folding_pow_bits(), config.final_sumcheck_rounds()));
        assert_eq!(witnesses.len(), bits.len(), "{p:?}: one witness per grind");
        for (w, b) in witnesses.iter().zip(&bits) {
            // Nothing is ground at 0 bits, and the verifier wants witness 0 there.
            if *b == 0 {
                assert_eq!(*w, 0, "{p:?}");
            }
        }
        assert!(bits.iter().any(|&b| b > 0) && witnesses.iter().any(|&w| w > 0), "{p:?}: some grind found a nonzero witness");
    }
}
