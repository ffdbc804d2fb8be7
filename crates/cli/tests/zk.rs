//! `whir prove --zk` and hiding proof files (format version 4): proofs verified by p3-whir's
//! hiding verifier through `whir verify`, the same bytes on the GPU's pieces as on Plonky3's CPU
//! pieces for one mask seed, masks that change with the seed (and with the operating system's
//! generator by default), and every hostile or mismatched file refused with one clear error.

use std::path::Path;
use std::process::Output;

use whir_prover::ProofFile;
use whir_verifier::{HidingProofFileOf, ReadLimits};

mod common;
use common::{stderr, stdout, whir, TempDir};

/// A hiding run small enough for a software adapter: the masks' randomness fits the codes'
/// slack at rate 1/4.
const SHAPE: [&str; 10] = ["--vars", "10", "--fold", "2", "--rate", "2", "--security", "40", "--pow-bits", "0"];

/// Exit status 1 with an `error:` line that contains `says`: a handled error, not a panic.
fn assert_refused(o: &Output, says: &str, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{what}: {err}");
    assert!(err.contains("error: ") && !err.contains("panicked") && err.contains(says), "{what}: {err}");
}

/// `whir prove --zk` of SHAPE into `out` with `extra` flags; panics unless it succeeded.
fn prove_zk(out: &Path, extra: &[&str]) -> Output {
    let o = whir(&[&["prove", "--zk", "--force", "--out", out.to_str().unwrap()][..], &SHAPE[..], extra].concat());
    assert!(o.status.success(), "prove --zk {extra:?}: {}", stderr(&o));
    o
}

fn verify(file: &Path, extra: &[&str]) -> Output {
    whir(&[&["verify", file.to_str().unwrap()][..], &SHAPE[..], extra].concat())
}

/// A hiding proof verifies against the verifier's parameters and masks, says it hides and with
/// which masks, and one for other parameters or masks is refused naming the difference; over
/// BabyBear^4 and KoalaBear^8, and at several points.
#[test]
fn hiding_proofs_verify_and_name_their_masks() {
    let dir = TempDir::new("verify");
    for extra in [&[][..], &["--field", "koalabear", "--extension", "8"][..]] {
        let file = dir.file("p.whir");
        let o = prove_zk(&file, &[&["--backend", "cpu", "--mask-seed", "5"][..], extra].concat());
        assert!(stdout(&o).contains("hiding proof (ell_zk 4, masks at rate 2^-1"), "{}", stdout(&o));
        assert!(stderr(&o).contains("--mask-seed 5 makes the masks reproducible"), "the seed is said to be for tests: {}", stderr(&o));
        let ok = verify(&file, &[&["--zk"][..], extra].concat());
        assert!(ok.status.success(), "{extra:?}: {}", stderr(&ok));
        assert!(stdout(&ok).contains("verified: a hiding proof (ell_zk 4, masks at rate 2^-1)"), "{}", stdout(&ok));
        assert_refused(&verify(&file, &[&["--zk-ell", "5"][..], extra].concat()), "masks are ell_zk 4", "other masks");
        assert_refused(&verify(&file, &[&["--zk-mask-rate", "2"][..], extra].concat()), "masks at rate 2^-2 expected", "other mask rate");
        let other = whir(
            &[&["verify", file.to_str().unwrap(), "--vars", "11", "--fold", "2", "--rate", "2", "--security", "40", "--pow-bits", "0"][..], extra].concat(),
        );
        assert_refused(&other, "vars 10 (expected 11)", "other parameters");
        let own = whir(&["verify", file.to_str().unwrap(), "--accept-file-params", "--min-security", "40"]);
        assert!(own.status.success() && stdout(&own).contains("hiding proof"), "{}", stderr(&own));
    }
    // Several points, each fixed by the commitment.
    let file = dir.file("points.whir");
    prove_zk(&file, &["--backend", "cpu", "--points", "3"]);
    let ok = verify(&file, &["--points", "3"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert_refused(&verify(&file, &[]), "points 3 (expected 1)", "the points");
}

/// For one mask seed the resident GPU prover (`--backend gpu`) and Plonky3's hiding PCS over
/// the GPU's pieces (`--backend gpu-pieces`) write Plonky3's CPU pieces' bytes.
#[test]
fn the_gpu_provers_prove_the_same_bytes() {
    let dir = TempDir::new("gpu");
    let cpu = dir.file("cpu.whir");
    prove_zk(&cpu, &["--backend", "cpu", "--mask-seed", "9"]);
    for (backend, says) in [("gpu", "the GPU, resident"), ("gpu-pieces", "over the GPU's pieces")] {
        let gpu = dir.file(&format!("{backend}.whir"));
        let o = whir(&[&["prove", "--zk", "--force", "--out", gpu.to_str().unwrap(), "--backend", backend, "--mask-seed", "9"][..], &SHAPE[..]].concat());
        if !o.status.success() && stderr(&o).contains("GPU") && std::env::var("WHIR_REQUIRE_GPU").as_deref() != Ok("1") {
            eprintln!("skipping: no GPU backend ({})", stderr(&o));
            return;
        }
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains(says), "{}", stdout(&o));
        assert_eq!(std::fs::read(&cpu).unwrap(), std::fs::read(&gpu).unwrap(), "--backend {backend}'s hiding proof differs from the CPU pieces'");
    }
}

/// The masks follow the seed: the same seed gives the same bytes, another seed another
/// commitment (so other points and every masked value), and proofs without a seed (the
/// operating system's generator) differ from each other.
#[test]
fn the_masks_follow_their_generator() {
    let dir = TempDir::new("seeds");
    let read = |name: &str| {
        let bytes = std::fs::read(dir.file(name)).unwrap();
        HidingProofFileOf::<p3_baby_bear::BabyBear>::from_bytes_with(&bytes, ReadLimits::default()).unwrap()
    };
    for (name, seed) in [("a.whir", Some("1")), ("b.whir", Some("1")), ("c.whir", Some("2")), ("d.whir", None), ("e.whir", None)] {
        let mut extra = vec!["--backend", "cpu"];
        extra.extend(seed.map(|s| ["--mask-seed", s]).into_iter().flatten());
        let o = prove_zk(&dir.file(name), &extra);
        if seed.is_none() {
            assert!(stdout(&o).contains("masks from the operating system's generator"), "{}", stdout(&o));
        }
    }
    assert_eq!(std::fs::read(dir.file("a.whir")).unwrap(), std::fs::read(dir.file("b.whir")).unwrap(), "one seed, one proof");
    let (a, c, d, e) = (read("a.whir"), read("c.whir"), read("d.whir"), read("e.whir"));
    assert_ne!(a.commitment, c.commitment, "another seed, the same commitment");
    assert_ne!(d.commitment, e.commitment, "two proofs from the operating system's generator share their masks");
    assert_ne!(a.evaluations().unwrap(), c.evaluations().unwrap(), "the points follow the commitment");
}

/// Hostile and mismatched files: a flipped byte, a truncated file, a hiding file read as a
/// plain one and a plain one demanded as hiding, a forged mask length in the header, a file
/// over the read limit; and the requests `prove --zk` cannot serve.
#[test]
fn hostile_hiding_files_and_requests_are_refused() {
    let dir = TempDir::new("hostile");
    let file = dir.file("p.whir");
    prove_zk(&file, &["--backend", "cpu", "--mask-seed", "3"]);
    let bytes = std::fs::read(&file).unwrap();
    let write = |name: &str, b: &[u8]| {
        let p = dir.file(name);
        std::fs::write(&p, b).unwrap();
        p
    };
    for at in [bytes.len() / 3, bytes.len() / 2, bytes.len() - 40] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x10;
        let o = verify(&write("flipped.whir", &flipped), &[]);
        assert_eq!(o.status.code(), Some(1), "a byte flipped at {at}: {}", stderr(&o));
        assert!(stderr(&o).contains("error: ") && !stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    assert_refused(&verify(&write("short.whir", &bytes[..bytes.len() / 2]), &[]), "truncated", "a truncated file");
    let mut longer = bytes.clone();
    longer.extend([0u8; 4]);
    assert_refused(&verify(&write("long.whir", &longer), &[]), "unexpected bytes", "bytes appended");
    let plain = ProofFile::from_bytes(&bytes).unwrap_err().to_string();
    assert!(plain.contains("hiding (zero-knowledge) proof"), "{plain}");
    // ell_zk in the header: after the magic, version, parameters and hash.
    let parsed = HidingProofFileOf::<p3_baby_bear::BabyBear>::from_bytes_with(&bytes, ReadLimits::default()).unwrap();
    let mut forged = parsed.clone();
    forged.masks.ell_zk = 1_000_000;
    let forged = write("forged.whir", &forged.to_bytes());
    assert_refused(&whir(&["verify", forged.to_str().unwrap(), "--accept-file-params", "--min-security", "40"]), "ell_zk must be", "a forged ell_zk");
    // Past what any proof for its parameters and masks can be (well under the read limit):
    // refused having read at most that bound, naming it.
    let mut huge = bytes.clone();
    huge.resize(bytes.len() + (2 << 20), 0);
    assert_refused(&verify(&write("huge.whir", &huge), &["--max-proof-mib", "1"]), "larger than any proof for its parameters", "a file over its bound");
    // A plain file demanded as hiding.
    let plain_file = dir.file("plain.whir");
    let o = whir(&[&["prove", "--backend", "cpu", "--force", "--out", plain_file.to_str().unwrap()][..], &SHAPE[..]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_refused(&verify(&plain_file, &["--zk"]), "does not hide", "a plain file under --zk");
    assert_refused(&whir(&["prove", "--zk", "--tables", "6x2,4x3", "--out", dir.file("t.whir").to_str().unwrap()]), "one polynomial", "--zk --tables");
    let o = whir(&["prove", "--mask-seed", "1", "--out", dir.file("s.whir").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "--mask-seed without --zk: {}", stderr(&o));
    assert_refused(
        &whir(&["prove", "--zk", "--vars", "8", "--fold", "4", "--security", "40", "--pow-bits", "0", "--out", dir.file("x.whir").to_str().unwrap()]),
        "masks' randomness must fit",
        "an infeasible hiding shape",
    );
}
