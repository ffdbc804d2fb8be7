//! The `whir` command end to end: prove, verify, reject corrupted and missing files, explain
//! infeasible parameters and bad inputs.

use std::process::Command;

fn whir(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_whir")).args(args).env("XDG_RUNTIME_DIR", std::env::temp_dir()).output().expect("run whir")
}

/// Runs a `whir` command that needs the GPU and returns its stdout; None (the test skips) where it
/// failed for want of a GPU outside CI, a test failure on any other failure.
fn gpu_run(args: &[&str]) -> Option<String> {
    let out = whir(args);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() && stderr.contains("GPU") && std::env::var("WHIR_REQUIRE_GPU").as_deref() != Ok("1") {
        eprintln!("skipping: no GPU backend ({stderr})");
        return None;
    }
    assert!(out.status.success(), "{stdout}{stderr}");
    Some(stdout.into_owned())
}

#[test]
fn prove_verify_and_reject() {
    let dir = std::env::temp_dir().join(format!("whir-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let proof = dir.join("p.whir");
    let proof_s = proof.to_str().unwrap();

    let out = whir(&["prove", "--vars", "10", "--fold", "2", "--security", "60", "--pow-bits", "10", "--backend", "cpu", "--out", proof_s]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("verified") && stdout.contains("backend: cpu"), "{stdout}");

    let out = whir(&["verify", proof_s, "--vars", "10", "--fold", "2", "--security", "60", "--pow-bits", "10"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("verified: 60-bit security"), "{}", String::from_utf8_lossy(&out.stdout));

    let bytes = std::fs::read(&proof).unwrap();
    let bad = dir.join("bad.whir");
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    std::fs::write(&bad, &flipped).unwrap();
    let out = whir(&["verify", bad.to_str().unwrap()]);
    assert!(!out.status.success(), "a flipped byte verified");
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "), "{}", String::from_utf8_lossy(&out.stderr));

    std::fs::write(&bad, &bytes[..bytes.len() - 7]).unwrap();
    let out = whir(&["verify", bad.to_str().unwrap(), "--vars", "10", "--fold", "2", "--security", "60", "--pow-bits", "10"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated or corrupted"));

    let out = whir(&["verify", dir.join("missing.whir").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.whir"));

    let out = whir(&["prove", "--vars", "24", "--fold", "4", "--pow-bits", "20", "--backend", "cpu", "--out", proof_s]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("use --pow-bits 22"), "{}", String::from_utf8_lossy(&out.stderr));

    let input = dir.join("in.bin");
    let mut words: Vec<u8> = (0u32..256).flat_map(|v| v.to_le_bytes()).collect();
    words[4 * 17..4 * 18].copy_from_slice(&0x7800_0001u32.to_le_bytes());
    std::fs::write(&input, &words).unwrap();
    let out = whir(&[
        "prove",
        "--vars",
        "8",
        "--fold",
        "2",
        "--security",
        "60",
        "--pow-bits",
        "10",
        "--backend",
        "cpu",
        "--input",
        input.to_str().unwrap(),
        "--out",
        proof_s,
        "--force",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("byte offset 68"), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).ok();
}

/// `prove --backend gpu` reports each round's steps with wall and GPU time, and the peak GPU
/// buffer memory, in `--json` and in its table.
#[test]
fn gpu_proofs_report_rounds_gpu_time_and_peak_memory() {
    let dir = std::env::temp_dir().join(format!("whir-cli-rounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("p.whir");
    let args = ["prove", "--vars", "10", "--fold", "2", "--security", "60", "--pow-bits", "8", "--backend", "gpu", "--force", "--out", out.to_str().unwrap()];
    let json = whir(&[&args[..], &["--json"]].concat());
    if !json.status.success() && std::env::var("WHIR_REQUIRE_GPU").as_deref() != Ok("1") {
        eprintln!("skipping: no GPU backend ({})", String::from_utf8_lossy(&json.stderr));
        return;
    }
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    assert_eq!(v["backend"], "gpu");
    let rounds = v["rounds"].as_array().expect("rounds");
    assert!(rounds.len() >= 3, "round 0, WHIR rounds, the final round: {rounds:?}");
    assert!(rounds[0]["commit"]["wall_ms"].as_f64().unwrap() > 0.0);
    assert!(rounds.last().unwrap()["sumcheck"]["wall_ms"].as_f64().is_some());
    // Software Vulkan counts buffer memory and has timestamps; other adapters may not.
    if let Some(peak) = v["peak_gpu_bytes"].as_u64() {
        assert!(peak >= 4 << 11, "peak {peak} below the first codeword");
    }
    let text = whir(&args);
    assert!(text.status.success());
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("per round, wall ms (GPU ms)") && stdout.contains("  all "), "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `bench --tables` proves a multi-table witness with Plonky3's `WhirProver` and the GPU PCS,
/// compares the bytes (it fails if they differ) and reports both; a bad spec is a clear error.
#[test]
fn bench_tables_compares_the_gpu_pcs_with_plonky3() {
    let args =
        ["bench", "--tables", "6x3,2*5x2,3x17", "--fold", "2", "--rate", "1", "--security", "60", "--pow-bits", "8", "--reps", "1", "--gpu-warmup-ms", "0"];
    let Some(stdout) = gpu_run(&args) else { return };
    let row = stdout.lines().find(|l| l.starts_with("| 4 |")).unwrap_or_else(|| panic!("a row for 4 tables: {stdout}"));
    assert!(row.contains('x') && !row.contains("skipped"), "{row}");
    // Over Plonky3's own challenger (proofs checked by its verifier where they grind, by bytes
    // where they do not).
    for pow in ["8", "0"] {
        let security = if pow == "0" { "40" } else { "60" };
        let over_duplex =
            [&args[..7], &["--security", security, "--pow-bits", pow, "--reps", "1", "--gpu-warmup-ms", "0", "--challenger", "plonky3"][..]].concat();
        let stdout = gpu_run(&over_duplex).expect("the GPU ran above");
        let row = stdout.lines().find(|l| l.starts_with("| 4 |")).unwrap_or_else(|| panic!("a row for 4 tables: {stdout}"));
        assert!(row.contains('x') && !row.contains("skipped"), "{row}");
    }
    let bad = whir(&["bench", "--tables", "6x0", "--no-gpu"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.starts_with("error: ") && err.contains("6x0") && err.contains("columns"), "{err}");
}

/// `bench --zk` times Plonky3's hiding PCS over its CPU pieces and over the GPU's, with the
/// proofs compared byte for byte and verified (an error otherwise); an infeasible hiding shape
/// is a skipped cell with the reason, and flags it cannot combine with are refused.
#[test]
fn bench_zk_times_the_hiding_pcs_on_both_pieces() {
    let args = ["bench", "--zk", "--vars", "8,16", "--fold", "4", "--rate", "1", "--security", "40", "--pow-bits", "0", "--reps", "1", "--gpu-warmup-ms", "0"];
    let Some(stdout) = gpu_run(&args) else { return };
    let row = stdout.lines().find(|l| l.starts_with("| 16 | 4 | 1 |")).unwrap_or_else(|| panic!("a row for n = 16: {stdout}"));
    assert!(row.contains('x') && !row.contains("skipped"), "{row}");
    let small = stdout.lines().find(|l| l.starts_with("| 8 | 4 | 1 |")).unwrap_or_else(|| panic!("a row for n = 8: {stdout}"));
    assert!(small.contains("skipped: no hiding configuration for n = 8") && small.contains("--rate"), "{small}");
    let bad = whir(&["bench", "--zk", "--tables", "zkvm-small", "--no-gpu"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("--zk") && err.contains("--tables"), "{err}");
}

/// `bench --hash keccak` times WHIR over Plonky3's Keccak configuration, Plonky3's prover
/// beside the resident one (plain and `--zk`), each cell's proof compared with `WhirProver`'s
/// (`HidingWhirPcs`'s) and verified (an error otherwise); flags it cannot combine with are
/// refused.
#[test]
fn bench_keccak_compares_the_resident_prover_with_plonky3() {
    let args = [
        "bench",
        "--hash",
        "keccak",
        "--vars",
        "10,12",
        "--fold",
        "2,4",
        "--rate",
        "1",
        "--security",
        "40",
        "--pow-bits",
        "8",
        "--reps",
        "1",
        "--gpu-warmup-ms",
        "0",
    ];
    // Refused before any GPU work.
    for bad in [&["bench", "--hash", "keccak", "--tables", "zkvm-small"][..], &["bench", "--hash", "keccak", "--json", "k.json"], &["bench", "--hash", "sha"]] {
        let out = whir(bad);
        assert!(!out.status.success(), "{bad:?} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--hash") || err.contains("--json"), "{bad:?}: {err}");
    }
    let Some(stdout) = gpu_run(&args) else { return };
    for (n, fold) in [(10, 2), (12, 4)] {
        let row = stdout
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([n.to_string(), fold.to_string()].iter().map(String::as_str)))
            .unwrap_or_else(|| panic!("a row for n = {n} fold {fold}: {stdout}"));
        assert!(row.contains("WhirProver's bytes, verified"), "{row}");
    }
    // --zk: the hiding PCS over Keccak beside HidingWhirPcs, each proof its bytes and verified.
    let zk = [
        "bench",
        "--hash",
        "keccak",
        "--zk",
        "--vars",
        "12",
        "--fold",
        "3",
        "--rate",
        "2",
        "--security",
        "40",
        "--pow-bits",
        "8",
        "--reps",
        "1",
        "--gpu-warmup-ms",
        "0",
    ];
    let stdout = gpu_run(&zk).expect("ran above on this adapter");
    let row = stdout.lines().find(|l| l.split_whitespace().take(2).eq(["12", "3"])).unwrap_or_else(|| panic!("a row for n = 12 fold 3: {stdout}"));
    assert!(row.contains("HidingWhirPcs's bytes, verified"), "{row}");
}

/// `prove --hash keccak` writes a proof over Plonky3's Keccak configuration (on the CPU, and on
/// the GPU resident), one polynomial or tables, any extension; `verify` reads the hash the file
/// names, and refuses a file of the other hash where `--hash` asks for one, naming the flag that
/// reads it; flags that do not apply to Keccak are refused.
#[test]
fn prove_and_verify_over_keccak() {
    let dir = std::env::temp_dir().join(format!("whir-cli-keccak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let shape = ["--vars", "10", "--fold", "2", "--security", "60", "--pow-bits", "8"];
    let prove = |extra: &[&str], out: &str| -> Option<String> {
        let args: Vec<&str> = ["prove", "--hash", "keccak", "--force", "--out", out].iter().chain(extra).copied().collect();
        gpu_run(&args)
    };
    let cpu = path("cpu.whir");
    let stdout = prove(&[&shape[..], &["--backend", "cpu"]].concat(), &cpu).expect("the CPU proves without a GPU");
    assert!(stdout.contains("Keccak trees and transcript") && stdout.contains("verified"), "{stdout}");
    let out = whir(&[&["verify", cpu.as_str()][..], &shape].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("Keccak trees and transcript"), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let out = whir(&[&["verify", cpu.as_str(), "--hash", "poseidon2"][..], &shape].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--hash keccak"), "{err}");

    // A named configuration names Poseidon2's trees: a Keccak file is not one of its proofs; a
    // Poseidon2 leaf width does not apply to Keccak's.
    let out = whir(&["verify", cpu.as_str(), "--config", "babybear4", "--vars", "10", "--fold", "2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--hash keccak"), "{err}");
    let out = whir(&[&["verify", cpu.as_str(), "--hash", "keccak", "--leaf-width", "24"][..], &shape].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("leaf width"), "{err}");

    // A Poseidon2 file asked for as Keccak is refused, naming --hash poseidon2.
    let poseidon2 = path("poseidon2.whir");
    assert!(whir(&[&["prove", "--backend", "cpu", "--force", "--out", poseidon2.as_str()][..], &shape].concat()).status.success());
    let out = whir(&[&["verify", poseidon2.as_str(), "--hash", "keccak"][..], &shape].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--hash poseidon2"), "{err}");

    // A flipped byte of a Keccak file is refused.
    let mut bytes = std::fs::read(&cpu).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    let bad = path("bad.whir");
    std::fs::write(&bad, &bytes).unwrap();
    assert!(!whir(&[&["verify", bad.as_str()][..], &shape].concat()).status.success());

    // On the GPU, resident: KoalaBear^8 tables.
    let tables = path("tables.whir");
    let flags = ["--tables", "8x3,2*6x2", "--fold", "2", "--field", "koalabear", "--extension", "8", "--security", "60", "--pow-bits", "8", "--backend", "gpu"];
    if let Some(stdout) = prove(&flags, &tables) {
        assert!(stdout.contains("backend: gpu") && stdout.contains("verified"), "{stdout}");
        let out = whir(&["verify", tables.as_str(), "--tables", "8x3,2*6x2", "--fold", "2", "--security", "60", "--pow-bits", "8"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("koalabear^8, Keccak trees and transcript"), "{}", String::from_utf8_lossy(&out.stdout));
    }

    // A hiding proof over Keccak, on the CPU and resident on the GPU, verified as hiding.
    let zk_shape = ["--vars", "14", "--fold", "3", "--rate", "2", "--security", "60", "--pow-bits", "8"];
    for (backend, on) in [("cpu", "Plonky3's CPU pieces"), ("gpu", "the GPU, resident")] {
        let zk = path(&format!("zk-{backend}.whir"));
        let flags = [&zk_shape[..], &["--zk", "--mask-seed", "7", "--backend", backend]].concat();
        let stdout = if backend == "cpu" {
            let out = whir(&[&["prove", "--hash", "keccak", "--force", "--out", zk.as_str()][..], &flags].concat());
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        } else {
            let Some(stdout) = prove(&flags, &zk) else { continue };
            stdout
        };
        assert!(stdout.contains("hiding proof") && stdout.contains("Keccak trees and transcript") && stdout.contains(on), "{stdout}");
        let out = whir(&[&["verify", zk.as_str(), "--zk"][..], &zk_shape].concat());
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && stdout.contains("a hiding proof") && stdout.contains("Keccak"), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    }

    for (bad, why) in [
        (&["--leaf-width", "24"][..], "leaf width"),
        (&["--backend", "gpu-pieces"], "gpu-pieces"),
        (&["--config", "koalabear8-128"], "--config koalabear8-128 names Poseidon2 trees"),
        (&["--config", "babybear4", "--zk"], "--config babybear4 names Poseidon2 trees"),
    ] {
        let never = path("never.whir");
        let args: Vec<&str> = ["prove", "--hash", "keccak", "--vars", "10", "--out", never.as_str()].iter().chain(bad).copied().collect();
        let out = whir(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(why), "{bad:?}: {err}");
    }
    assert!(!std::path::Path::new(&path("never.whir")).exists());
    // `--hash poseidon2` is the default, and combines with everything the default does.
    assert!(whir(&[&["prove", "--hash", "poseidon2", "--leaf-width", "24", "--backend", "cpu", "--force", "--out", poseidon2.as_str()][..], &shape].concat())
        .status
        .success());
    std::fs::remove_dir_all(&dir).ok();
}

/// `bench --concurrency` proves through a proof pool at each level, checks every proof against
/// the same input's proof at the first level, and reports proofs/s beside Plonky3's; a level of
/// 0 and a flag it cannot combine with are refused.
#[test]
fn bench_concurrency_reports_throughput_beside_plonky3() {
    let dir = std::env::temp_dir().join(format!("whir-cli-throughput-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("t.json");
    let args = [
        "bench",
        "--vars",
        "9",
        "--fold",
        "2",
        "--rate",
        "1",
        "--security",
        "60",
        "--pow-bits",
        "8",
        "--concurrency",
        "1,3",
        "--proofs",
        "6",
        "--plonky3-parallel",
        "1,2",
        "--gpu-warmup-ms",
        "0",
        "--queue-profile",
        "--json",
        json.to_str().unwrap(),
        "--force",
    ];
    let Some(stdout) = gpu_run(&args) else { return };
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| 9 | 2 | 1 |")).collect();
    assert_eq!(rows.len(), 2, "a row per level: {stdout}");
    assert!(rows[1].starts_with("| 9 | 2 | 1 | default | 3 |") && rows[1].contains("x |"), "{}", rows[1]);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let gpu = v[0]["gpu"].as_array().expect("GPU levels");
    assert_eq!(gpu.len(), 2);
    assert!(gpu.iter().all(|l| l["proofs_per_s"].as_f64().unwrap() > 0.0));
    assert_eq!(v[0]["plonky3"].as_array().map(Vec::len), Some(2));
    // --queue-profile: each level's queue occupancy, where the adapter has timestamps inside
    // encoders (llvmpipe and the H200 do).
    for l in gpu {
        assert!(!l["queue"].is_null(), "no queue figures: {l}");
        let share = l["queue"]["busy_share"].as_f64().unwrap();
        assert!(share > 0.0 && share <= 1.0, "{l}");
        assert!(l["queue"]["submissions_per_proof"].as_f64().unwrap() >= 1.0, "{l}");
    }

    // Two contexts of adapter 0 (as two GPUs): each level on the first alone and on both.
    let two = [
        "bench",
        "--vars",
        "9",
        "--fold",
        "2",
        "--rate",
        "1",
        "--security",
        "60",
        "--pow-bits",
        "8",
        "--concurrency",
        "2",
        "--proofs",
        "6",
        "--plonky3-parallel",
        "1",
        "--gpu-warmup-ms",
        "0",
        "--devices",
        "0,0",
    ];
    let stdout = gpu_run(&two).expect("the GPU ran above");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| 9 | 2 | 1 |")).collect();
    assert_eq!(rows.len(), 2, "the first GPU alone, then both: {stdout}");
    assert!(rows[0].starts_with("| 9 | 2 | 1 | 0 | 2 |") && rows[1].starts_with("| 9 | 2 | 1 | 0,0 | 2 |"), "{stdout}");
    assert!(rows[1].split('|').nth(8).is_some_and(|c| c.trim().ends_with('x')), "a ratio to the first GPU alone: {}", rows[1]);
    // Queues on each of the devices: where the adapter offers two, the sets are labelled with
    // them; a software adapter offers one, and the error names the adapter and the count.
    let mut queued = two.to_vec();
    queued.extend(["--queues", "2"]);
    let out = whir(&queued);
    let (stdout, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| 9 | 2 | 1 |")).collect();
        assert!(rows.len() == 2 && rows[0].starts_with("| 9 | 2 | 1 | 0 x2 queues |") && rows[1].starts_with("| 9 | 2 | 1 | 0,0 x2 queues |"), "{stdout}");
    } else {
        assert!(err.contains("--devices: opening adapter 0") && err.contains("with 2 queues") && err.contains("offers 1"), "{err}");
    }
    for bad in ["7,x", "99", ""] {
        let out = whir(&["bench", "--vars", "9", "--concurrency", "1", "--devices", bad]);
        assert!(!out.status.success(), "--devices {bad:?} accepted");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--devices"), "{}", String::from_utf8_lossy(&out.stderr));
    }

    let zero = whir(&["bench", "--vars", "9", "--concurrency", "0"]);
    assert!(!zero.status.success());
    let err = String::from_utf8_lossy(&zero.stderr);
    assert!(err.contains("--concurrency 0"), "{err}");
    let both = whir(&["bench", "--concurrency", "2", "--no-gpu"]);
    assert!(!both.status.success() && String::from_utf8_lossy(&both.stderr).contains("--no-gpu"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `bench --kernel-profile` times one more proof's dispatches by kernel (printed, and in the
/// JSON with the GPU's cell); the flag has no meaning with --concurrency or --no-gpu.
#[test]
fn bench_kernel_profile_reports_gpu_time_per_kernel() {
    let dir = std::env::temp_dir().join(format!("whir-cli-kernels-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("k.json");
    let args = [
        "bench",
        "--vars",
        "10",
        "--fold",
        "2",
        "--rate",
        "1",
        "--security",
        "60",
        "--pow-bits",
        "16",
        "--reps",
        "1",
        "--gpu-warmup-ms",
        "0",
        "--no-pieces",
        "--kernel-profile",
        "--json",
        json.to_str().unwrap(),
        "--force",
    ];
    let Some(_) = gpu_run(&args) else { return };
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // Every adapter these tests run on (llvmpipe, the H200) has timestamp queries.
    let kernels = v[0]["gpu_kernels"].as_array().unwrap_or_else(|| panic!("no gpu_kernels in {v}"));
    assert!(kernels.iter().any(|k| k["kernel"] == "grind"), "16-bit grinds run on the GPU: {kernels:?}");
    assert!(kernels.iter().all(|k| k["dispatches"].as_u64().unwrap() >= 1 && k["gpu_ms"].as_f64().unwrap() >= 0.0));
    for clash in [&["bench", "--concurrency", "2", "--kernel-profile"][..], &["bench", "--no-gpu", "--kernel-profile"][..]] {
        let out = whir(clash);
        assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--kernel-profile"), "{clash:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `prove --tables` writes a multi-table proof file (format version 3) that `verify --tables`
/// accepts for those tables and refuses, naming what differs, for other tables, for one
/// polynomial, or for other parameters; the CPU and the GPU write the same file.
#[test]
fn prove_tables_writes_a_file_verify_tables_checks() {
    let dir = std::env::temp_dir().join(format!("whir-cli-tables-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cpu, gpu) = (dir.join("cpu.whir"), dir.join("gpu.whir"));
    let common = ["--tables", "6x3,5x2", "--fold", "2", "--security", "60", "--pow-bits", "8"];
    let prove = |backend: &str, out: &std::path::Path| whir(&[&["prove"][..], &common[..], &["--backend", backend, "--out", out.to_str().unwrap()]].concat());
    let made = prove("cpu", &cpu);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let verify = |args: &[&str]| whir(&[&["verify", cpu.to_str().unwrap()][..], args].concat());
    let ok = verify(&["--tables", "6x3,5x2", "--fold", "2", "--security", "60", "--pow-bits", "8"]);
    assert!(ok.status.success() && String::from_utf8_lossy(&ok.stdout).contains("2 tables"), "{}", String::from_utf8_lossy(&ok.stderr));
    for (args, says) in [
        (&["--tables", "6x3,5x3", "--fold", "2", "--security", "60", "--pow-bits", "8"][..], "not the 6x3,5x3 expected"),
        (&["--fold", "2", "--security", "60", "--pow-bits", "8"][..], "not one polynomial"),
        (&["--tables", "6x3,5x2", "--fold", "2", "--security", "60", "--pow-bits", "9"][..], "--tables 6x3,5x2 --fold 2"),
    ] {
        let out = verify(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{args:?}: {err}");
    }
    let on_gpu = prove("gpu", &gpu);
    if !on_gpu.status.success() && std::env::var("WHIR_REQUIRE_GPU").as_deref() != Ok("1") {
        eprintln!("skipping the GPU file: {}", String::from_utf8_lossy(&on_gpu.stderr));
        return;
    }
    assert!(on_gpu.status.success(), "{}", String::from_utf8_lossy(&on_gpu.stderr));
    assert!(std::fs::read(&cpu).unwrap() == std::fs::read(&gpu).unwrap(), "the GPU's file differs from the CPU's");
}

/// `--field koalabear`: proved on the GPU and on the CPU (the same bytes), the file names its
/// field, `verify` reads it as such by itself and refuses it under the other field's name;
/// values past KoalaBear's modulus are refused by name.
#[test]
fn koalabear_proofs_end_to_end() {
    let dir = std::env::temp_dir().join(format!("whir-cli-koala-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let shape = ["--vars", "10", "--fold", "2", "--security", "60", "--pow-bits", "8"];
    fn prove<'a>(backend: &'a str, out: &'a str, shape: &[&'a str]) -> Vec<&'a str> {
        [&["prove", "--field", "koalabear", "--backend", backend, "--out", out, "--force"][..], shape].concat()
    }
    let (cpu, gpu) = (path("cpu.whir"), path("gpu.whir"));
    let out = whir(&prove("cpu", &cpu, &shape));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("over koalabear^4") && stdout.contains("verified"), "{stdout}");
    if let Some(stdout) = gpu_run(&prove("gpu", &gpu, &shape)) {
        assert!(stdout.contains("backend: gpu"), "{stdout}");
        assert_eq!(std::fs::read(path("gpu.whir")).unwrap(), std::fs::read(path("cpu.whir")).unwrap(), "the GPU's proof file differs from the CPU's");
    }
    let out = whir(&[&["verify", &path("cpu.whir")][..], &shape[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("over koalabear^4"), "{}", String::from_utf8_lossy(&out.stdout));
    let out = whir(&[&["verify", &path("cpu.whir"), "--field", "babybear"][..], &shape[..]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("a proof over koalabear^4, not what --field babybear asks for"), "{stderr}");
    // 2^10 values, the last one KoalaBear's modulus.
    let mut input = vec![0u8; 4 << 10];
    input[(4 << 10) - 4..].copy_from_slice(&0x7f00_0001u32.to_le_bytes());
    std::fs::write(path("input.bin"), &input).unwrap();
    let (x, input) = (path("x.whir"), path("input.bin"));
    let mut args = prove("cpu", &x, &shape);
    args.extend(["--input", &input]);
    let out = whir(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("not a canonical koalabear value"), "{stderr}");
    // Tables through the PCS over KoalaBear: the GPU's file is the CPU's, and it verifies as
    // the tables it names.
    let tables = ["--tables", "9x2,7x3", "--fold", "2", "--security", "60", "--pow-bits", "8", "--field", "koalabear", "--force"];
    let (cpu_t, gpu_t) = (path("cpu-t.whir"), path("gpu-t.whir"));
    let out = whir(&[&["prove", "--backend", "cpu", "--out", &cpu_t][..], &tables[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    if gpu_run(&[&["prove", "--backend", "gpu", "--out", &gpu_t][..], &tables[..]].concat()).is_some() {
        assert_eq!(std::fs::read(&gpu_t).unwrap(), std::fs::read(&cpu_t).unwrap(), "the GPU PCS's file differs from the CPU's");
    }
    let out = whir(&["verify", &cpu_t, "--tables", "9x2,7x3", "--fold", "2", "--security", "60", "--pow-bits", "8"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("over koalabear^4"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--extension 5 / 8`: 128-bit configurations proved (on the CPU by default at this size),
/// verified by the extension the file names; on the GPU each gives the CPU's file byte for byte.
#[test]
fn extensions_of_degree_5_and_8_prove_and_verify() {
    let dir = std::env::temp_dir().join(format!("whir-cli-ext-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shape = ["--vars", "10", "--fold", "2", "--security", "60", "--pow-bits", "8"];
    for (field, degree) in [("babybear", "8"), ("koalabear", "5"), ("babybear", "5"), ("koalabear", "8")] {
        let out_path = dir.join(format!("{field}{degree}.whir"));
        let out_s = out_path.to_str().unwrap();
        let out = whir(&[&["prove", "--field", field, "--extension", degree, "--out", out_s, "--force"][..], &shape[..]].concat());
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains(&format!("over {field}^{degree}")) && stdout.contains("verified"), "{stdout}");
        let out = whir(&[&["verify", out_s][..], &shape[..]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("over {field}^{degree}")));
        let out = whir(&[&["verify", out_s, "--extension", "4"][..], &shape[..]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(&format!("a proof over {field}^{degree}, not what --extension 4 asks for")), "{stderr}");
    }
    for (field, degree) in [("babybear", "8"), ("koalabear", "8"), ("babybear", "5"), ("koalabear", "5")] {
        let gpu_path = dir.join(format!("{field}{degree}-gpu.whir"));
        if let Some(stdout) = gpu_run(
            &[&["prove", "--field", field, "--extension", degree, "--backend", "gpu", "--force", "--out", gpu_path.to_str().unwrap()][..], &shape[..]].concat(),
        ) {
            assert!(stdout.contains("backend: gpu") && stdout.contains("verified"), "{stdout}");
            assert_eq!(
                std::fs::read(&gpu_path).unwrap(),
                std::fs::read(dir.join(format!("{field}{degree}.whir"))).unwrap(),
                "{field}^{degree}: the GPU's file differs from the CPU's"
            );
        }
    }
    let out = whir(&["prove", "--extension", "6"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not an extension degree"));
    // The bench times Plonky3 over them (and the GPU over degree 8 where there is one).
    let out = whir(&[
        "bench",
        "--field",
        "koalabear",
        "--extension",
        "8",
        "--vars",
        "10",
        "--fold",
        "2",
        "--rate",
        "1",
        "--reps",
        "1",
        "--security",
        "60",
        "--pow-bits",
        "8",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("| 10 | 2 | 1 | koalabear^8 |"), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--config NAME`: each named configuration proves and verifies (`verify --config` checks the
/// file against it), `info` lists them, and a name clashing with the flags it sets, or unknown,
/// is refused with the names.
#[test]
fn named_configurations_prove_and_verify() {
    let dir = std::env::temp_dir().join(format!("whir-cli-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = whir(&["info"]);
    let info = String::from_utf8_lossy(&out.stdout);
    for c in whir_verifier::NAMED_CONFIGS {
        assert!(info.contains(c.name), "info lists {}: {info}", c.name);
        let file = dir.join(format!("{}.whir", c.name));
        let file = file.to_str().unwrap();
        let out = whir(&["prove", "--config", c.name, "--vars", "12", "--fold", "4", "--backend", "cpu", "--out", file, "--force"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}: {stdout}{}", c.name, String::from_utf8_lossy(&out.stderr));
        assert!(
            stdout.contains(&format!("over {}", c.extension()))
                && stdout.contains(&format!("{}-bit security ({} soundness)", c.security_bits, c.soundness.flag_value())),
            "{}: {stdout}",
            c.name
        );
        let out = whir(&["verify", file, "--config", c.name, "--vars", "12", "--fold", "4"]);
        assert!(out.status.success(), "{}: {}", c.name, String::from_utf8_lossy(&out.stderr));
    }
    // koalabear8-128 hashes leaves with Poseidon2-24: its file names that, the GPU's is the
    // CPU's byte for byte, and a verifier expecting width 16 refuses it by name.
    assert!(info.contains("Poseidon2-24 leaves"), "{info}");
    let kb8 = dir.join("koalabear8-128.whir");
    let kb8 = kb8.to_str().unwrap();
    let kb8_gpu = dir.join("koalabear8-128-gpu.whir");
    if gpu_run(&["prove", "--config", "koalabear8-128", "--vars", "12", "--fold", "4", "--backend", "gpu", "--out", kb8_gpu.to_str().unwrap(), "--force"])
        .is_some()
    {
        assert_eq!(std::fs::read(&kb8_gpu).unwrap(), std::fs::read(kb8).unwrap(), "the GPU's koalabear8-128 file differs from the CPU's");
    }
    let flags = ["--field", "koalabear", "--extension", "8", "--security", "128", "--soundness", "capacity", "--pow-bits", "20", "--vars", "12", "--fold", "4"];
    let out = whir(&[&["verify", kb8][..], &flags[..]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("leaf-width 24 (expected 16)"), "{stderr}");
    let out = whir(&[&["verify", kb8, "--leaf-width", "24"][..], &flags[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = whir(&["prove", "--vars", "10", "--leaf-width", "20"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("16 or 24"), "{}", String::from_utf8_lossy(&out.stderr));
    // Multi-table proofs over degree 8: the GPU PCS gives the CPU's file, which verifies.
    let (cpu_t, gpu_t) = (dir.join("t8-cpu.whir"), dir.join("t8-gpu.whir"));
    let tables = ["--tables", "9x2,7x3", "--config", "koalabear8-128", "--fold", "2", "--force"];
    let out = whir(&[&["prove", "--backend", "cpu", "--out", cpu_t.to_str().unwrap()][..], &tables[..]].concat());
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("over koalabear^8"), "{}", String::from_utf8_lossy(&out.stderr));
    if gpu_run(&[&["prove", "--backend", "gpu", "--out", gpu_t.to_str().unwrap()][..], &tables[..]].concat()).is_some() {
        assert_eq!(std::fs::read(&gpu_t).unwrap(), std::fs::read(&cpu_t).unwrap(), "the GPU PCS's koalabear^8 file differs from the CPU's");
    }
    let out = whir(&["verify", cpu_t.to_str().unwrap(), "--tables", "9x2,7x3", "--config", "koalabear8-128", "--fold", "2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // And over degree 5.
    let t5 = dir.join("t5.whir");
    let tables5 = ["--tables", "9x2,7x1", "--config", "babybear5-128", "--fold", "2", "--force"];
    let out = whir(&[&["prove", "--backend", "cpu", "--out", t5.to_str().unwrap()][..], &tables5[..]].concat());
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("over babybear^5"), "{}", String::from_utf8_lossy(&out.stderr));
    let t5_gpu = dir.join("t5-gpu.whir");
    if gpu_run(&[&["prove", "--backend", "gpu", "--out", t5_gpu.to_str().unwrap()][..], &tables5[..]].concat()).is_some() {
        assert_eq!(std::fs::read(&t5_gpu).unwrap(), std::fs::read(&t5).unwrap(), "the GPU PCS's babybear^5 file differs from the CPU's");
    }
    // A file checked against another configuration is refused.
    let out = whir(&["verify", dir.join("babybear8-128.whir").to_str().unwrap(), "--config", "koalabear8-128", "--vars", "12", "--fold", "4"]);
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let out = whir(&["prove", "--config", "koalabear8-128", "--field", "babybear"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("cannot be used with"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = whir(&["prove", "--config", "goldilocks"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("not a named configuration") && stderr.contains("koalabear8-128"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
