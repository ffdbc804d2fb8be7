//! Every kernel in its portable form compiled by Dawn, Chrome's WebGPU engine (its WGSL compiler
//! is Tint, not naga), with no error and no warning, and its compute pipeline built at WebGPU's
//! default limits: the emulated multiply (WGSL has no 64-bit integers), every kernel, with each
//! NTT tile an adapter under the strict profile can be given (2^6 to 2^12 words; the in-place and
//! butterfly-free variants too). naga accepts constructs Tint rejects (naga does no uniformity
//! analysis, for one), so a kernel only naga has checked may fail in a browser.
//!
//! The main kernels also run on Dawn and give Plonky3's answers: each operation runs here on a
//! wgpu context in the strict profile (WebGPU's default limits, the emulated multiply) that
//! writes wgpu's API trace; its answer is checked against Plonky3's (or the CPU twin's), then
//! `scripts/dawn/replay.mjs` replays the trace on Dawn (the same shaders, buffers, writes and
//! dispatches, in order) and saves what each submission reads back, and every answer must be
//! found in Dawn's readbacks word for word.
//!
//! Runs `scripts/dawn/compile.mjs` and `scripts/dawn/replay.mjs` under Node with the npm package `webgpu` (Dawn for Node) on
//! SwiftShader, Chrome's software Vulkan driver; `scripts/test.sh` installs both under
//! `target/dawn` and says where (`WHIR_DAWN_DIR`). Without them the test skips with a message,
//! unless WHIR_REQUIRE_GPU=1 (CI), where it fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use whir_wgpu::gpu::shaders::{compose_kernel, Kernel, MulVariant};
use whir_wgpu::gpu::{field::ExtensionId, field::FieldId};

/// Where the test command installed Dawn for Node and SwiftShader, if it did.
fn dawn_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("WHIR_DAWN_DIR").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dawn"));
    let ready = dir.join("node_modules/webgpu/index.js").is_file() && dir.join("swiftshader/vk_swiftshader_icd.json").is_file();
    ready.then_some(dir)
}

/// Dawn for Node and Node itself, or why the Dawn tests cannot run (after saying so, or
/// failing under WHIR_REQUIRE_GPU=1).
fn dawn_ready() -> Option<PathBuf> {
    let Some(dir) = dawn_dir() else {
        skip_or_fail("Dawn for Node or SwiftShader is not installed");
        return None;
    };
    if Command::new("node").arg("--version").output().is_err() {
        skip_or_fail("no `node` on the PATH");
        return None;
    }
    Some(dir)
}

/// Runs `scripts/dawn/<script>` under Node on SwiftShader with `manifest` (written to a file
/// beside `work`) and returns its JSON report, or None after a skip (no adapter for Dawn).
fn run_node(dir: &Path, script: &str, work: &Path, manifest: &[serde_json::Value]) -> Option<(serde_json::Value, std::process::ExitStatus)> {
    let manifest_path = work.join("manifest.json");
    std::fs::write(&manifest_path, serde_json::to_vec(manifest).unwrap()).unwrap();
    let manifest = &manifest_path;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/dawn").join(script);
    let run = Command::new("node")
        .arg(&script)
        .arg(dir.join("node_modules"))
        .arg(manifest)
        // SwiftShader for Dawn alone: the wgpu tests keep the system's driver.
        .env("VK_ICD_FILENAMES", dir.join("swiftshader/vk_swiftshader_icd.json"))
        .env("VK_DRIVER_FILES", dir.join("swiftshader/vk_swiftshader_icd.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: serde_json::Value = match stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok()) {
        Some(r) => r,
        None => panic!("{} gave no report (status {}):\n{stdout}\n{}", script.display(), run.status, String::from_utf8_lossy(&run.stderr)),
    };
    if let Some(e) = report.get("error") {
        if run.status.code() == Some(2) {
            skip_or_fail(&format!("{e}"));
            return None;
        }
    }
    Some((report, run.status))
}

/// Whether this is a pass in another limits profile: the Dawn tests choose their own profile,
/// so they run once, in the pass on the adapter's own limits.
fn other_profile_pass() -> bool {
    let profile = std::env::var("WHIR_LIMITS").unwrap_or_default();
    if !profile.is_empty() && profile != "adapter" {
        eprintln!("skipping the Dawn test under WHIR_LIMITS={profile}: it runs the same portable kernels in every profile (run without WHIR_LIMITS)");
        return true;
    }
    false
}

fn skip_or_fail(why: &str) {
    if std::env::var("WHIR_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("WHIR_REQUIRE_GPU=1 but the Dawn test cannot run: {why}");
    }
    eprintln!("skipping the Dawn test: {why} (scripts/test.sh installs Node's `webgpu` package and SwiftShader under target/dawn)");
}

/// Each kernel's portable composition: (a file name, the source, the entry point).
fn portable_kernels() -> Vec<(String, String, &'static str)> {
    let mut out = Vec::new();
    for kernel in Kernel::ALL {
        let defaults = kernel.default_consts();
        let mut variants: Vec<Vec<(&str, u32)>> = vec![defaults.to_vec()];
        if defaults.iter().any(|&(k, _)| k == "NTT_TILE") {
            variants = (6..=12)
                .flat_map(|tile_log| {
                    [(0, 0), (1, 0), (0, 1)].map(|(in_place, skip)| {
                        defaults
                            .iter()
                            .map(|&(k, v)| match k {
                                "NTT_TILE" => (k, 1u32 << tile_log),
                                "NTT_IN_PLACE" => (k, in_place),
                                "NTT_SKIP_BUTTERFLIES" => (k, skip),
                                _ => (k, v),
                            })
                            .collect()
                    })
                })
                .collect();
        }
        if defaults.iter().any(|&(k, _)| k == "TRANSCRIPT_LANES") {
            // The transcript kernels on one invocation too.
            variants.push(defaults.iter().map(|&(k, v)| if k == "TRANSCRIPT_LANES" { (k, 1) } else { (k, v) }).collect());
        }
        for consts in variants {
            let src = compose_kernel(FieldId::BabyBear, ExtensionId::Degree4, kernel, MulVariant::Emulated, &consts).unwrap();
            let tag: String = consts.iter().map(|(k, v)| format!("_{k}{v}")).collect();
            out.push((format!("{}_{kernel:?}{tag}.wgsl", kernel.source_name().replace('/', "_")), src, kernel.entry_point()));
        }
        // The field-generic kernels over the degree-8 extension too (their reductions fill all
        // 16 KiB of WebGPU's default workgroup memory there).
        for &ext in kernel.extensions().iter().filter(|&&e| e != ExtensionId::Degree4) {
            let src = compose_kernel(FieldId::BabyBear, ext, kernel, MulVariant::Emulated, defaults).unwrap();
            out.push((format!("{}_{}_ext{}.wgsl", kernel.source_name().replace('/', "_"), kernel.entry_point(), ext.words()), src, kernel.entry_point()));
        }
    }
    out
}

#[test]
fn every_kernel_compiles_in_dawn_at_webgpu_default_limits() {
    if other_profile_pass() {
        return;
    }
    let Some(dir) = dawn_ready() else { return };
    let out = tempfile::tempdir().unwrap();
    let kernels = portable_kernels();
    let mut manifest = Vec::new();
    for (name, src, entry) in &kernels {
        let file = out.path().join(name);
        std::fs::write(&file, src).unwrap();
        manifest.push(serde_json::json!({ "file": file, "entry": entry }));
    }
    let Some((report, status)) = run_node(&dir, "compile.mjs", out.path(), &manifest) else { return };
    // The whole report (each kernel's messages and times) beside the installation.
    let _ = std::fs::write(dir.join("compile-report.json"), serde_json::to_vec_pretty(&report).unwrap_or_default());
    let results = report["results"].as_array().expect("a results list");
    assert_eq!(results.len(), kernels.len(), "Dawn compiled {} of {} kernels", results.len(), kernels.len());
    let failures: Vec<String> = results
        .iter()
        .filter(|r| r["ok"] != true)
        .map(|r| {
            let file = Path::new(r["file"].as_str().unwrap_or("?")).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let messages: Vec<String> =
                r["messages"].as_array().into_iter().flatten().map(|m| format!("{} at {}:{}: {}", m["type"], m["line"], m["column"], m["message"])).collect();
            format!("{file}: {}; pipeline: {}", messages.join("; "), r["pipelineError"])
        })
        .collect();
    assert!(
        failures.is_empty() && status.success(),
        "Dawn ({}) rejects {} of {} kernels (status {status}; device lost: {}):\n{}",
        report["adapter"],
        failures.len(),
        kernels.len(),
        report["lost"],
        failures.join("\n")
    );
    eprintln!("Dawn ({}) compiled all {} kernels with no error or warning", report["adapter"], kernels.len());
}

/// One operation run on a traced wgpu context: its name, the trace's directory, and the answers
/// (checked against Plonky3's here) that Dawn must read back too, each as the words the GPU
/// holds them in.
struct TracedRun {
    name: &'static str,
    dir: tempfile::TempDir,
    answers: Vec<(String, Vec<u32>)>,
}

/// Runs `op` on a fresh context in the strict profile that traces into a new directory; `op`
/// checks its results against Plonky3's and returns the answers Dawn must read back. The
/// context (and with it the trace) is closed when `op` returns.
fn traced(name: &'static str, op: impl FnOnce(std::sync::Arc<whir_wgpu::gpu::GpuContext>) -> Vec<(String, Vec<u32>)>) -> Option<TracedRun> {
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    let dir = tempfile::tempdir().unwrap();
    let options = GpuOptions {
        limits: Some(LimitsProfile::WebGpu { max_binding_bytes: None }),
        mul_variant: Some(MulVariant::Emulated),
        trace_dir: Some(dir.path().to_path_buf()),
        ..common::env_options()
    };
    let ctx = common::open_with(options)?;
    let answers = op(ctx);
    // Every holder of the context has dropped it: wgpu closes the trace.
    Some(TracedRun { name, dir, answers })
}

/// wgpu's trace (RON, read with wgpu-core's own types) as JSON for the replay script.
fn trace_as_json(dir: &Path) {
    use wgpu_core::command::PointerReferences;
    use wgpu_core::device::trace::Action;
    let text = std::fs::read_to_string(dir.join("trace.ron")).expect("wgpu wrote a trace");
    let actions: Vec<Action<'static, PointerReferences>> =
        ron::from_str(&text).unwrap_or_else(|e| panic!("wgpu's trace in {} does not parse: {e}", dir.display()));
    std::fs::write(dir.join("actions.json"), serde_json::to_vec(&actions).unwrap()).unwrap();
}

fn contains(haystack: &[u32], needle: &[u32]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

fn words_of_ext(values: &[whir_wgpu::gpu::Ext4]) -> Vec<u32> {
    whir_wgpu::gpu::field::ext4_as_words(values).to_vec()
}

fn words_of(values: &[p3_baby_bear::BabyBear]) -> Vec<u32> {
    whir_wgpu::gpu::field::as_words(values).to_vec()
}

/// The NTT: forward, inverse, coset, a coset LDE (its zero tail) and the encoder's padded
/// message, on output buffers poisoned first; evaluations as the GPU stores them
/// (bit-reversed rows), each against Plonky3's.
fn ntt_run(ctx: std::sync::Arc<whir_wgpu::gpu::GpuContext>) -> Vec<(String, Vec<u32>)> {
    use p3_baby_bear::BabyBear;
    use p3_commit::Encoder;
    use p3_dft::{Radix2DFTSmallBatch, Radix2DitParallel, TwoAdicSubgroupDft};
    use p3_field::PrimeCharacteristicRing;
    use p3_matrix::bitrev::BitReversibleMatrix;
    use p3_matrix::dense::RowMajorMatrix;
    use rand::RngExt;
    use whir_wgpu::gpu::{GpuDft, GpuNtt};
    let mut rng = common::rng();
    let ntt = std::sync::Arc::new(GpuNtt::new(ctx));
    ntt.set_poison_outputs(true);
    let gpu = GpuDft::new(Some(ntt)).with_cpu_threshold(0);
    let (small, dit) = (Radix2DFTSmallBatch::<BabyBear>::default(), Radix2DitParallel::<BabyBear>::default());
    let matrix = |rng: &mut rand::rngs::StdRng, log_h: usize, w: usize| RowMajorMatrix::new(common::random_vec(rng, (1 << log_h) * w), w);
    let mut answers = Vec::new();

    let m = matrix(&mut rng, 10, 4);
    let got = gpu.dft_batch(m.clone()).bit_reverse_rows();
    assert_eq!(got, dit.dft_batch(m).bit_reverse_rows(), "dft 2^10 x 4");
    answers.push(("forward NTT 2^10 x 4".into(), words_of(&got.values)));

    let m = matrix(&mut rng, 9, 3);
    let got = gpu.idft_batch(m.clone());
    assert_eq!(got, small.idft_batch(m), "idft 2^9 x 3");
    answers.push(("inverse NTT 2^9 x 3".into(), words_of(&got.values)));

    let (m, shift) = (matrix(&mut rng, 8, 5), rng.random::<BabyBear>());
    let got = gpu.coset_dft_batch(m.clone(), shift).bit_reverse_rows();
    assert_eq!(got, dit.coset_dft_batch(m, shift).bit_reverse_rows(), "coset dft 2^8 x 5");
    answers.push(("coset NTT 2^8 x 5".into(), words_of(&got.values)));

    let (m, shift) = (matrix(&mut rng, 7, 2), rng.random::<BabyBear>());
    let got = gpu.coset_lde_batch(m.clone(), 2, shift).bit_reverse_rows();
    assert_eq!(got, dit.coset_lde_batch(m, 2, shift).bit_reverse_rows(), "coset lde 2^7 x 2, rate 1/4");
    answers.push(("coset LDE 2^7 x 2 to 2^9 (zero tail)".into(), words_of(&got.values)));

    let m = matrix(&mut rng, 8, 3);
    let mut padded = m.values.clone();
    padded.resize(m.values.len() << 1, BabyBear::ZERO);
    let got = gpu.encoder().encode_batch_padded(RowMajorMatrix::new(padded, 3), 1);
    assert_eq!(got, small.encode_batch(m, 1), "encode 2^8 x 3, rate 1/2");
    answers.push(("encoder 2^8 x 3, padded message".into(), words_of(&got.values)));
    answers
}

/// Batched Poseidon2 permutations, a Merkle tree of a small matrix and an opening's gather (rows
/// and pruned paths read together on the GPU), against Plonky3's permutation and
/// `MerkleTreeMmcs` (cap height 1).
fn poseidon2_merkle_run(ctx: std::sync::Arc<whir_wgpu::gpu::GpuContext>) -> Vec<(String, Vec<u32>)> {
    use p3_baby_bear::{BabyBear, Poseidon2BabyBear};
    use p3_commit::Mmcs;
    use p3_field::Field;
    use p3_matrix::dense::RowMajorMatrix;
    use p3_merkle_tree::MerkleTreeMmcs;
    use p3_symmetric::{PaddingFreeSponge, Permutation, TruncatedPermutation};
    use rand::RngExt;
    use std::sync::Arc;
    use whir_wgpu::gpu::{record::RowSource, record::TreeRows, record::TreeSpec, GpuMerkle, GpuPoseidon2, Poseidon2Constants};
    type Perm = Poseidon2BabyBear<16>;
    type Packed = <BabyBear as Field>::Packing;
    type CpuMmcs = MerkleTreeMmcs<Packed, Packed, PaddingFreeSponge<Perm, 16, 8, 8>, TruncatedPermutation<Perm, 2, 8, 16>, 2, 8>;
    let mut rng = common::rng();
    let constants = Poseidon2Constants::default_babybear();
    let perm = constants.to_cpu();
    let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), constants));
    let mut answers = Vec::new();

    let states: Vec<[BabyBear; 16]> = (0..300).map(|_| rng.random()).collect();
    let got = poseidon2.permute_batch(&states).unwrap();
    for (s, g) in states.iter().zip(&got) {
        assert_eq!(*g, perm.permute(*s), "Poseidon2 permutation");
    }
    answers.push(("Poseidon2, 300 states".into(), words_of(got.as_flattened())));

    let cpu = CpuMmcs::new(PaddingFreeSponge::new(perm.clone()), TruncatedPermutation::new(perm), 1);
    let merkle = GpuMerkle::new(poseidon2);
    let (log_h, width) = (9usize, 7usize);
    let values = common::random_vec(&mut rng, (1 << log_h) * width);
    let matrix = ctx.transfers().upload("matrix", whir_wgpu::gpu::field::as_words(&values));
    let tree = merkle.commit(TreeRows::Matrix(&matrix), TreeSpec::new(1 << log_h, width)).unwrap();
    let (cap, data) = cpu.commit_matrix(RowMajorMatrix::new(values, width));
    let layer_one: Vec<[BabyBear; 8]> = merkle.read_nodes(&tree, &[(log_h - 1, 0), (log_h - 1, 1)]).unwrap();
    assert_eq!(layer_one, cap.roots(), "Merkle cap (height 1) of 2^9 x 7");
    answers.push(("Merkle root of 2^9 x 7".into(), words_of(&tree.root().unwrap())));
    let indices: Vec<usize> = (0..5).map(|_| rng.random_range(0..1 << log_h)).collect();
    let opened = merkle.open_rows(&tree, RowSource::One(&matrix), &indices, 1).unwrap();
    let (rows, proof) = cpu.open_multi_batch(&indices, &data);
    assert_eq!(opened.rows, rows.into_iter().map(|mut r| r.remove(0)).collect::<Vec<_>>(), "opened rows");
    assert_eq!(opened.siblings, proof.sibling_hashes, "pruned paths");
    answers.push(("5 rows gathered".into(), words_of(&opened.rows.concat())));
    answers.push(("their pruned paths".into(), words_of(opened.siblings.as_flattened())));
    answers
}

/// Grinding: the smallest witness, as the CPU's search finds it, at a few difficulties.
fn grind_run(ctx: std::sync::Arc<whir_wgpu::gpu::GpuContext>) -> Vec<(String, Vec<u32>)> {
    use p3_baby_bear::BabyBear;
    use p3_challenger::{CanObserve, DuplexChallenger, GrindingChallenger};
    use p3_field::PrimeField32;
    use rand::RngExt;
    use std::sync::Arc;
    use whir_wgpu::gpu::{transcript::cpu_grind, transcript::GrindState, GpuChallenger, GpuGrinder, GpuPoseidon2, Poseidon2Constants};
    let mut rng = common::rng();
    let constants = Poseidon2Constants::default_babybear();
    let perm = constants.to_cpu();
    let grinder = Arc::new(GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx, constants))));
    let mut answers = Vec::new();
    for bits in [6usize, 9, 11] {
        let mut ours = GpuChallenger::new(perm.clone(), Some(grinder.clone())).with_gpu_min_bits(0);
        let mut stock = DuplexChallenger::<BabyBear, _, 16, 8>::new(perm.clone());
        for _ in 0..rng.random_range(1..12) {
            let x: BabyBear = rng.random();
            ours.observe(x);
            stock.observe(x);
        }
        let state = GrindState::new(&stock.sponge_state, &stock.input_buffer).unwrap();
        let witness = ours.grind(bits);
        assert_eq!(witness, cpu_grind(&perm, &state, bits).unwrap(), "smallest witness at {bits} bits");
        assert_eq!(ours.gpu_fallbacks(), 0, "the GPU grinder failed at {bits} bits");
        assert!(stock.check_witness(bits, witness));
        answers.push((format!("witness at {bits} bits"), vec![witness.as_canonical_u32()]));
    }
    answers
}

/// Keccak: permutations against `KeccakF`, a tree's layers against `MerkleTreeMmcs` over
/// Plonky3's Keccak hash (rows of 17 elements: a block and a half), and the smallest 8-bit
/// witness of Plonky3's Keccak transcript.
fn keccak_run(ctx: std::sync::Arc<whir_wgpu::gpu::GpuContext>) -> Vec<(String, Vec<u32>)> {
    use p3_baby_bear::BabyBear;
    use p3_challenger::{CanObserve, GrindingChallenger, HashChallenger, SerializingChallenger32};
    use p3_commit::Mmcs;
    use p3_field::{PrimeCharacteristicRing, PrimeField32};
    use p3_keccak::{Keccak256Hash, KeccakF};
    use p3_matrix::dense::RowMajorMatrix;
    use p3_merkle_tree::MerkleTreeMmcs;
    use p3_symmetric::{CompressionFunctionFromHasher, PaddingFreeSponge, Permutation, SerializingHasher};
    use rand::RngExt;
    use whir_wgpu::gpu::{GpuKeccak, GpuKeccakHash};
    type Sponge = PaddingFreeSponge<KeccakF, 25, 17, 4>;
    let lanes = |d: &[[u64; 4]]| -> Vec<u32> { d.iter().flatten().flat_map(|&l| [l as u32, (l >> 32) as u32]).collect() };
    let mut rng = common::rng();
    let keccak = GpuKeccak::new(ctx);
    let mut answers = Vec::new();
    let states: Vec<[u64; 25]> = (0..64).map(|_| std::array::from_fn(|_| rng.random())).collect();
    let got = keccak.permute_many(&states).unwrap();
    for (s, g) in states.iter().zip(&got) {
        assert_eq!(*g, KeccakF.permute(*s), "Keccak-f");
    }
    answers.push(("Keccak-f, 64 states".into(), got.iter().flatten().flat_map(|&l| [l as u32, (l >> 32) as u32]).collect()));
    let values = common::random_vec(&mut rng, 100 * 17);
    let matrix = RowMajorMatrix::new(values, 17);
    let layers = keccak.digest_layers(&matrix).unwrap();
    let sponge = Sponge::new(KeccakF);
    let cpu = MerkleTreeMmcs::<BabyBear, u64, SerializingHasher<Sponge>, CompressionFunctionFromHasher<Sponge, 2, 4>, 2, 4>::new(
        SerializingHasher::new(sponge),
        CompressionFunctionFromHasher::new(sponge),
        0,
    );
    let (cap, _) = cpu.commit(vec![matrix]);
    assert_eq!(layers.last().unwrap()[..], cap.roots()[..], "Keccak root of 100 x 17");
    answers.push(("Keccak leaf digests of 100 x 17".into(), lanes(&layers[0])));
    answers.push(("Keccak root of 100 x 17".into(), lanes(layers.last().unwrap())));
    let mut stock = SerializingChallenger32::<BabyBear, HashChallenger<u8, Keccak256Hash, 32>>::from_hasher(vec![], Keccak256Hash);
    let mut ours = SerializingChallenger32::<BabyBear, GpuKeccakHash<BabyBear>>::new(GpuKeccakHash::new(vec![], Some(keccak)));
    let x = BabyBear::from_u32(rng.random_range(0..1 << 30));
    stock.observe(x);
    ours.observe(x);
    let witness = ours.grind(8);
    let smallest = (0u32..).map(BabyBear::from_u32).find(|&w| stock.clone().check_witness(8, w)).unwrap();
    assert_eq!(witness, smallest, "the smallest Keccak witness at 8 bits");
    answers.push(("Keccak witness at 8 bits".into(), vec![witness.as_canonical_u32()]));
    answers
}

/// A sumcheck round with its fold (and a fold recorded with the next round), then the chain
/// kernel's rounds: its duplex steps (observe the round, grind, sample the challenge) and folds
/// on the GPU, against the CPU twin and a stock challenger.
fn sumcheck_run(ctx: std::sync::Arc<whir_wgpu::gpu::GpuContext>) -> Vec<(String, Vec<u32>)> {
    use p3_baby_bear::BabyBear;
    use p3_challenger::{CanObserve, DuplexChallenger, FieldChallenger, GrindingChallenger};
    use rand::RngExt;
    use std::sync::Arc;
    use whir_wgpu::gpu::{transcript::cpu_grind, Ext4, GpuGrinder, GpuNtt, GpuPoseidon2, GpuSumcheck, Poseidon2Constants};
    use whir_wgpu::prover::backend::{CpuSumcheck, SumcheckState};
    let mut rng = common::rng();
    let ext = |rng: &mut rand::rngs::StdRng, n: usize| -> Vec<Ext4> { (0..n).map(|_| rng.random()).collect() };
    let ntt = Arc::new(GpuNtt::new(ctx.clone()));
    let mut answers = Vec::new();

    let m = 7;
    let (f, w) = (ext(&mut rng, 1 << m), ext(&mut rng, 1 << m));
    let (mut cpu, mut gpu) = (CpuSumcheck::new(f.clone(), w.clone()).unwrap(), GpuSumcheck::new(ntt.clone(), &f, &w).unwrap());
    let c = SumcheckState::round_coefficients(&mut gpu).unwrap();
    assert_eq!(c, cpu.round_coefficients().unwrap(), "round 0");
    answers.push(("sumcheck round 0".into(), words_of_ext(&[c.0, c.1])));
    let r: Ext4 = rng.random();
    cpu.fold(r).unwrap();
    let c = SumcheckState::fold_then_round(&mut gpu, r).unwrap();
    assert_eq!(c, cpu.round_coefficients().unwrap(), "round 1 after a fold");
    answers.push(("sumcheck round 1 with the fold before it".into(), words_of_ext(&[c.0, c.1])));
    let r: Ext4 = rng.random();
    cpu.fold(r).unwrap();
    SumcheckState::fold(&mut gpu, r).unwrap();
    let folded = SumcheckState::evals(&mut gpu).unwrap();
    assert_eq!(folded, cpu.evals().unwrap(), "f folded twice");
    answers.push(("f folded twice".into(), words_of_ext(&folded)));

    let perm = whir_wgpu::prover::permutation();
    let grinder = GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx, Poseidon2Constants::default_babybear())));
    let (m, rounds, bits) = (6, 3, 5);
    let (f, w) = (ext(&mut rng, 1 << m), ext(&mut rng, 1 << m));
    let mut cpu = CpuSumcheck::new(f.clone(), w.clone()).unwrap();
    let mut gpu = GpuSumcheck::new(ntt, &f, &w).unwrap();
    let mut ch = DuplexChallenger::<BabyBear, _, 16, 8>::new(perm.clone());
    for _ in 0..11 {
        ch.observe(rng.random::<BabyBear>());
    }
    let chained = gpu.play_chain(rounds, &ch.sponge_state, &ch.input_buffer, bits, &grinder, None).unwrap();
    assert_eq!(chained.len(), rounds, "every chained round played");
    for (i, c) in chained.iter().enumerate() {
        assert_eq!((c.c0, c.c_inf), cpu.round_coefficients().unwrap(), "chained round {i}");
        ch.observe_algebra_element(c.c0);
        ch.observe_algebra_element(c.c_inf);
        let offer = c.offer.as_ref().expect("a grind per round");
        let smallest = cpu_grind(&perm, &offer.state, bits).unwrap();
        assert_eq!(offer.witness, Some(smallest), "chained round {i}'s witness");
        assert!(ch.check_witness(bits, smallest));
        let r: Ext4 = ch.sample_algebra_element();
        assert_eq!(c.r, Some(r), "chained round {i}'s challenge");
        cpu.fold(r).unwrap();
        answers.push((format!("chained round {i}: h(0), h(inf)"), words_of_ext(&[c.c0, c.c_inf])));
        answers.push((format!("chained round {i}: challenge"), words_of_ext(&[r])));
    }
    let folded = SumcheckState::evals(&mut gpu).unwrap();
    assert_eq!(folded, cpu.evals().unwrap(), "f after the chain");
    answers.push(("f after the chain".into(), words_of_ext(&folded)));
    answers
}

#[test]
fn main_kernels_run_in_dawn_with_plonky3s_answers() {
    if other_profile_pass() {
        return;
    }
    let Some(dawn) = dawn_ready() else { return };
    let runs: Vec<TracedRun> = [
        traced("ntt", ntt_run),
        traced("poseidon2 and merkle", poseidon2_merkle_run),
        traced("grind", grind_run),
        traced("sumcheck and chain", sumcheck_run),
        traced("keccak", keccak_run),
    ]
    .into_iter()
    .collect::<Option<_>>()
    .expect("a strict-profile context for every run");
    let manifest: Vec<serde_json::Value> = runs
        .iter()
        .map(|run| {
            trace_as_json(run.dir.path());
            serde_json::json!({ "name": run.name, "dir": run.dir.path() })
        })
        .collect();
    let out = tempfile::tempdir().unwrap();
    let Some((report, status)) = run_node(&dawn, "replay.mjs", out.path(), &manifest) else { return };
    let _ = std::fs::write(dawn.join("replay-report.json"), serde_json::to_vec_pretty(&report).unwrap_or_default());
    let traces = report["traces"].as_array().expect("a traces list");
    assert_eq!(traces.len(), runs.len(), "Dawn replayed {} of {} traces", traces.len(), runs.len());
    let mut failures = Vec::new();
    for (run, trace) in runs.iter().zip(traces) {
        for problem in trace["problems"].as_array().into_iter().flatten() {
            failures.push(format!("{}: {}", run.name, problem.as_str().unwrap_or_default()));
        }
        let readbacks: Vec<Vec<u32>> = trace["readbacks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let bytes = std::fs::read(run.dir.path().join(r["file"].as_str().unwrap())).unwrap();
                bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
            })
            .collect();
        for (what, words) in &run.answers {
            if !readbacks.iter().any(|r| contains(r, words)) {
                failures.push(format!("{}: Dawn did not read back {what} ({} words; {} readbacks)", run.name, words.len(), readbacks.len()));
            }
        }
        eprintln!(
            "Dawn replayed {}: {} submissions, {} dispatches, {} readbacks, {} answers checked, {:.0} ms",
            run.name,
            trace["submissions"],
            trace["dispatches"],
            readbacks.len(),
            run.answers.len(),
            trace["ms"].as_f64().unwrap_or(0.0)
        );
    }
    assert!(
        failures.is_empty() && status.success(),
        "Dawn ({}) does not give Plonky3's answers (status {status}; device lost: {}; uncaptured errors: {}):\n{}",
        report["adapter"],
        report["lost"],
        report["uncaptured"],
        failures.join("\n")
    );
}
