//! The `whir` command as a new user and as an attacker would use it: the verifier decides the
//! parameters, bad flags and hostile files get one clear error (never a panic, never unbounded
//! reads), outputs are never lost or half-written, and messages name what to change.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use whir_prover::ProofFile;

const SMALL: [&str; 10] = ["--vars", "10", "--fold", "2", "--security", "60", "--pow-bits", "10", "--backend", "cpu"];
const SMALL_VERIFY: [&str; 8] = ["--vars", "10", "--fold", "2", "--security", "60", "--pow-bits", "10"];

fn whir_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_whir"));
    cmd.args(args).env("XDG_RUNTIME_DIR", std::env::temp_dir()).env_remove("WHIR_ADAPTER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run whir")
}

fn whir(args: &[&str]) -> Output {
    whir_env(args, &[])
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit status 1 with an `error:` line: a handled error, not a panic (101) or a crash.
fn assert_clean_error(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{what}: {err}");
    assert!(err.contains("error: ") && !err.contains("panicked"), "{what}: {err}");
    err
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("whir-hardening-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn prove_small(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["prove"];
    args.extend(SMALL);
    args.extend(["--out", s(out)]);
    args.extend(extra);
    whir(&args)
}

#[test]
fn the_verifier_not_the_file_decides_the_parameters() {
    let dir = TempDir::new("params");
    let weak = dir.file("weak.whir");
    let out = whir(&["prove", "--vars", "12", "--security", "1", "--pow-bits", "0", "--backend", "cpu", "--out", s(&weak)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning: 1 bits of security is below 80"), "{}", stderr(&out));

    let out = whir(&["verify", s(&weak)]);
    let err = assert_clean_error(&out, "weak proof against the defaults");
    assert!(err.contains("security 1 (expected 100)") && err.contains("pow-bits 0 (expected 20)"), "{err}");
    assert!(!stdout(&out).contains("verified"));

    let err = assert_clean_error(&whir(&["verify", s(&weak), "--accept-file-params"]), "below the 80-bit floor");
    assert!(err.contains("below the 80 bits accepted"), "{err}");
    let out = whir(&["verify", s(&weak), "--accept-file-params", "--min-security", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("file's own parameters") && stdout(&out).contains("1-bit security"), "{}", stdout(&out));
    let out = whir(&["verify", s(&weak), "--vars", "12", "--security", "1", "--pow-bits", "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("verified: 1-bit security (johnson soundness), PoW budget 0 bits, n = 12"), "{}", stdout(&out));
    // Either the verifier's parameters or the file's, not both.
    let out = whir(&["verify", s(&weak), "--accept-file-params", "--vars", "12"]);
    assert!(!out.status.success());
}

#[test]
fn impossible_budgets_and_counts_are_refused_up_front() {
    for args in [["--pow-bits", "40"], ["--pow-bits", "31"], ["--pow-bits", "60"], ["--points", "10000000"]] {
        let started = Instant::now();
        let mut all = vec!["prove", "--vars", "12", "--backend", "cpu", "--out", "/nonexistent-dir/never.whir"];
        all.extend(args);
        let err = assert_clean_error(&whir(&all), &args.join(" "));
        assert!(err.contains(&format!("{} {}", args[0], args[1])), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10), "{args:?} took {:?}", started.elapsed());
    }
    let err = assert_clean_error(&whir(&["bench", "--vars", "10", "--fold", "2", "--rate", "1", "--pow-bits", "40", "--no-gpu", "--reps", "1"]), "bench --pow-bits 40");
    assert!(err.contains("--pow-bits 40 is over the 30 bits"), "{err}");
}

#[test]
fn hostile_proof_files_are_rejected_in_words() {
    let dir = TempDir::new("hostile");
    let good = dir.file("good.whir");
    assert!(prove_small(&good, &[]).status.success());
    let bytes = std::fs::read(&good).unwrap();
    let file = ProofFile::from_bytes(&bytes).unwrap();

    // Header values from the file are named as the file's, never as flags the user typed.
    let forged = dir.file("forged.whir");
    for (field, set) in [("pow-bits = 40", 0usize), ("points = 4294967296", 1), ("vars = 40", 2)] {
        let mut f = file.clone();
        match set {
            0 => f.params.pow_bits = 40,
            1 => f.params.points = 1 << 32,
            _ => f.params.num_vars = 40,
        }
        std::fs::write(&forged, f.to_bytes()).unwrap();
        for extra in [&["--accept-file-params", "--min-security", "1"][..], &SMALL_VERIFY[..]] {
            let started = Instant::now();
            let mut args = vec!["verify", s(&forged)];
            args.extend(extra);
            let err = assert_clean_error(&whir(&args), field);
            assert!(err.contains(&format!("the proof file's header says {field}")), "{err}");
            assert!(!err.contains(&format!("--{}", field.split(' ').next().unwrap())), "names a flag: {err}");
            assert!(started.elapsed() < Duration::from_secs(10), "{field} took {:?}", started.elapsed());
        }
    }

    // Corrupted bodies: words, not Debug dumps or serde's bare error names.
    let header_len = bytes.len() - file.proof.len();
    for i in (header_len..bytes.len()).step_by(bytes.len().div_ceil(40)) {
        let mut bad = bytes.clone();
        bad[i] ^= 0x5a;
        std::fs::write(&forged, &bad).unwrap();
        let mut args = vec!["verify", s(&forged)];
        args.extend(SMALL_VERIFY);
        let err = assert_clean_error(&whir(&args), "flipped body byte");
        for dump in ["{", "Serde Deserialization Error", "InvalidPowWitness", "SumcheckFailed", "Err("] {
            assert!(!err.contains(dump), "byte {i}: {err}");
        }
    }
}

#[test]
fn endless_inputs_are_read_with_a_bound() {
    let dir = TempDir::new("endless");
    let started = Instant::now();
    let err = assert_clean_error(&whir(&["prove", "--vars", "12", "--input", "/dev/zero", "--backend", "cpu", "--out", s(&dir.file("z.whir"))]), "--input /dev/zero");
    assert!(err.contains("holds more than 16384 bytes"), "{err}");
    let err = assert_clean_error(&whir(&["verify", "/dev/zero"]), "verify /dev/zero");
    assert!(err.contains("not a whir-wgpu proof file"), "{err}");
    let err = assert_clean_error(&whir(&["verify", "/dev/zero", "--accept-file-params"]), "verify /dev/zero, file params");
    assert!(err.contains("not a whir-wgpu proof file"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
}

/// A real proof followed by megabytes of padding is refused by its size bound without reading
/// the padding; a proof for other parameters than the verifier's is refused as such, naming the
/// difference, before its body is read (not as an oversized proof for the expected ones).
#[test]
fn oversized_and_foreign_proofs_are_refused_by_the_header() {
    let dir = TempDir::new("header");
    let proof = dir.file("p.whir");
    let out = prove_small(&proof, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut padded = std::fs::read(&proof).unwrap();
    padded.resize(padded.len() + (8 << 20), 0);
    let big = dir.file("big.whir");
    std::fs::write(&big, &padded).unwrap();
    let mut args = vec!["verify", s(&big)];
    args.extend(SMALL_VERIFY);
    let err = assert_clean_error(&whir(&args), "padded proof");
    assert!(err.contains("larger than any proof"), "{err}");
    let err = assert_clean_error(&whir(&["verify", s(&big)]), "proof for other parameters");
    assert!(err.contains("other parameters than the verifier expects"), "{err}");
    assert!(err.contains("--vars"), "the error gives the file's flags: {err}");
}

#[test]
fn outputs_are_never_lost() {
    let dir = TempDir::new("outputs");
    let input = dir.file("poly.bin");
    let words: Vec<u8> = (0u32..1024).flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&input, &words).unwrap();

    // --out equal to --input: refused, the polynomial intact.
    let err = assert_clean_error(&prove_small(&input, &["--input", s(&input)]), "--out = --input");
    assert!(err.contains("is the input file"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), words);
    let alias = dir.0.join(".").join("poly.bin");
    assert_clean_error(&prove_small(&alias, &["--input", s(&input), "--force"]), "--out aliasing --input");
    assert_eq!(std::fs::read(&input).unwrap(), words);

    // An existing file needs --force.
    let proof = dir.file("p.whir");
    std::fs::write(&proof, b"keep me").unwrap();
    let err = assert_clean_error(&prove_small(&proof, &[]), "existing --out");
    assert!(err.contains("already exists; pass --force"), "{err}");
    assert_eq!(std::fs::read(&proof).unwrap(), b"keep me");
    let out = prove_small(&proof, &["--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let good = std::fs::read(&proof).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&proof).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "a proof file is an ordinary, readable file");
    }
    assert!(ProofFile::from_bytes(&good).is_ok());

    // A run killed while writing (file-size limit) leaves the old proof whole.
    let cmd = format!(
        "ulimit -f 4; exec '{}' prove {} --force --out '{}' --seed 9",
        env!("CARGO_BIN_EXE_whir"),
        SMALL.join(" "),
        s(&proof)
    );
    let out = Command::new("sh").arg("-c").arg(&cmd).env("XDG_RUNTIME_DIR", std::env::temp_dir()).output().unwrap();
    assert!(!out.status.success(), "a 2 KiB file-size limit did not stop a {} byte proof", good.len());
    assert_eq!(std::fs::read(&proof).unwrap(), good, "the earlier proof was damaged");

    // Unwritable places fail before any proving (nothing on stdout).
    for (out_path, why) in [(dir.0.clone(), "is a directory"), (PathBuf::from("/proc/whir-test.whir"), "cannot create files in /proc")] {
        let o = whir(&["prove", "--vars", "22", "--fold", "4", "--pow-bits", "22", "--backend", "cpu", "--out", s(&out_path)]);
        let err = assert_clean_error(&o, why);
        assert!(err.contains(why), "{err}");
        assert!(stdout(&o).is_empty(), "proved before failing: {}", stdout(&o));
    }
    let o = whir(&["bench", "--vars", "10", "--fold", "2", "--rate", "1", "--security", "60", "--pow-bits", "10", "--no-gpu", "--json", "/proc/whir/out.json"]);
    assert_clean_error(&o, "bench --json to an unwritable place");
    assert!(stdout(&o).is_empty(), "benchmarked before failing: {}", stdout(&o));

    let err = assert_clean_error(&prove_small(&dir.file("x.whir"), &["--input", s(&input), "--seed", "3"]), "--seed with --input");
    assert!(err.contains("--seed has no effect with --input"), "{err}");
}

#[test]
fn messages_name_the_parameter_at_fault_and_a_value_that_works() {
    let cases: [(&[&str], &str, &str); 5] = [
        (&["--security", "0"], "--security 0 is out of range", "use --security 100"),
        (&["--pow-bits", "1000"], "--pow-bits 1000 is over the 30 bits", "use --pow-bits 20"),
        (&["--fold", "12", "--rate", "40"], "--rate 40 with n = 20 and fold 12", "use --rate 19 or less"),
        (&["--vars", "1"], "--fold 4 exceeds the polynomial's n = 1", "use --fold 1 or less"),
        (&["--vars", "24", "--fold", "4"], "derived proof-of-work of 22 bits", "use --pow-bits 22"),
    ];
    for (args, what, hint) in cases {
        let mut all = vec!["prove", "--backend", "cpu", "--out", "/nonexistent-dir/x.whir"];
        all.extend(args);
        let err = assert_clean_error(&whir(&all), what);
        assert!(err.contains(what) && err.contains(hint), "{args:?}: {err}");
        for wrong in ["check --vars, --fold and --rate", "raise --fold", "just send it directly"] {
            assert!(!err.contains(wrong), "{args:?}: {err}");
        }
    }
}

#[test]
fn adapter_errors_are_said_once_and_fail() {
    let dir = TempDir::new("adapter");
    let out = whir_env(&["prove", "--vars", "10", "--backend", "gpu", "--out", s(&dir.file("x.whir"))], &[("WHIR_ADAPTER", "garbage-adapter")]);
    let err = assert_clean_error(&out, "WHIR_ADAPTER=garbage");
    assert_eq!(err.matches("no adapter matches").count(), 1, "{err}");
    let out = whir(&["info", "--adapter", "garbage-adapter"]);
    let err = assert_clean_error(&out, "info with a bad selector");
    assert_eq!(err.matches("no adapter matches").count(), 1, "{err}");
}

#[test]
fn json_summaries_are_complete_and_errors_are_json_too() {
    let dir = TempDir::new("json");
    let proof = dir.file("p.whir");
    let out = prove_small(&proof, &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON object");
    for key in ["backend", "why", "adapter", "security_bits", "pow_bits", "soundness", "points", "out", "proof_bytes", "verified"] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["out"], s(&proof));
    assert_eq!(v["security_bits"], 60);
    let out = prove_small(&proof, &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("a JSON error");
    assert!(v["error"].as_str().unwrap().contains("already exists"), "{v}");
}

#[test]
fn a_bench_that_measures_nothing_fails() {
    let dir = TempDir::new("bench");
    let plot = dir.file("plot.svg");
    // n = 24 fold 4 needs 22 PoW bits: the only cell is infeasible.
    let out = whir(&["bench", "--vars", "24", "--fold", "4", "--rate", "1", "--no-gpu", "--plot", s(&plot)]);
    let err = assert_clean_error(&out, "all cells skipped");
    assert!(err.contains("every cell of the grid was skipped"), "{err}");
    assert!(!plot.exists(), "an empty plot was written");
}
