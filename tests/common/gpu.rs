//! Shared GPU test set-up, for the workspace's tests and whir-gpu's own (`#[path]`-included by
//! crates/gpu/tests): one GPU context per field-multiply variant, opened once per test binary.
//! Without an adapter the GPU tests skip with a message, unless WHIR_REQUIRE_GPU=1 (CI), where
//! they fail. Names whir-gpu directly (a dev-dependency of the workspace's root package too).
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use p3_baby_bear::BabyBear;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_gpu::{GpuContext, GpuError, GpuOptions, LimitsProfile, MulVariant};

fn require_gpu() -> bool {
    std::env::var("WHIR_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// The options a test context of `variant` starts from: the environment's, and where it names
/// no limits profile, the emulated multiply in the strict profile (see [`contexts`]).
pub fn options_for(variant: MulVariant) -> GpuOptions {
    let mut options = GpuOptions { mul_variant: Some(variant), ..env_options() };
    if variant == MulVariant::Emulated && options.limits.is_none() {
        options.limits = Some(LimitsProfile::WebGpu { max_binding_bytes: None });
    }
    options
}

fn open(variant: MulVariant) -> Option<Arc<GpuContext>> {
    open_with(options_for(variant))
}

/// The environment's settings (WHIR_LIMITS=apple-m1 in CI's Apple pass), which every test
/// context starts from.
pub fn env_options() -> GpuOptions {
    GpuOptions::from_env().expect("the WHIR_* settings")
}

pub fn open_with(options: GpuOptions) -> Option<Arc<GpuContext>> {
    let variant = options.mul_variant.map_or("default".into(), |v| format!("{v:?}"));
    match GpuContext::new(options) {
        Ok(ctx) => Some(Arc::new(ctx)),
        Err(e) => {
            if require_gpu() {
                panic!("WHIR_REQUIRE_GPU=1 but the {variant} GPU context failed: {e}");
            }
            eprintln!("skipping {variant} GPU tests: {e}");
            None
        }
    }
}

/// Contexts for both field-multiply variants, each in the profile it meets in practice: the u64
/// multiply on the adapter's own limits (adapters with SHADER_INT64), and the emulated one in
/// the strict profile (WebGPU's default limits and no optional features, as a browser grants
/// them). Where WHIR_LIMITS names a profile, both run in it (the strict one has no u64; in the
/// Apple M1 one only u64 runs).
pub fn contexts() -> Vec<Arc<GpuContext>> {
    static U64: OnceLock<Option<Arc<GpuContext>>> = OnceLock::new();
    static EMU: OnceLock<Option<Arc<GpuContext>>> = OnceLock::new();
    // An Apple M1 has SHADER_INT64, where the prover takes the u64 multiply: its pass runs
    // that variant alone.
    let m1 = env_options().limits == Some(LimitsProfile::AppleM1);
    let emu = EMU.get_or_init(|| if m1 { None } else { open(MulVariant::Emulated) }).clone();
    let u64 = U64
        .get_or_init(|| {
            if emu.is_none() && !m1 {
                return None;
            }
            match GpuContext::new(options_for(MulVariant::U64)) {
                Ok(ctx) => Some(Arc::new(ctx)),
                Err(GpuError::Int64Unsupported(name)) => {
                    eprintln!("{name} lacks SHADER_INT64 (or the profile leaves it out): the u64 multiply variant is not tested here");
                    None
                }
                Err(e) if require_gpu() => panic!("WHIR_REQUIRE_GPU=1 but the U64 GPU context failed: {e}"),
                Err(e) => {
                    eprintln!("skipping U64 GPU tests: {e}");
                    None
                }
            }
        })
        .clone();
    u64.into_iter().chain(emu).collect()
}

/// Contexts of their own, for tests that inject faults or count transfers: the shared ones
/// above serve tests running in parallel threads, whose traffic and faults would mix in.
pub fn fresh_contexts() -> Vec<Arc<GpuContext>> {
    let shared = contexts();
    shared.iter().filter_map(|c| open(c.mul_variant())).collect()
}

/// Contexts of their own whose waits spin on `poll` for up to `spin_us` before blocking (the
/// default on hardware adapters, off on software ones).
pub fn spinning_contexts(spin_us: u64) -> Vec<Arc<GpuContext>> {
    let shared = contexts();
    shared.iter().filter_map(|c| open_with(GpuOptions { spin_us: Some(spin_us), ..options_for(c.mul_variant()) })).collect()
}

/// Fresh contexts of each variant [`contexts`] opens whose transcript kernels take the other
/// form (`GpuTuning::transcript_lanes`: each permutation over 16 invocations, or over one),
/// so that a test over both lists covers both.
pub fn other_transcript_contexts() -> Vec<Arc<GpuContext>> {
    contexts()
        .iter()
        .filter_map(|c| {
            let mut options = options_for(c.mul_variant());
            options.tuning.transcript_lanes = !c.tuning().transcript_lanes;
            open_with(options)
        })
        .collect()
}

/// A fresh seed each run, printed so a failure can be replayed with WHIR_TEST_SEED. Also routes
/// the library's warnings (a GPU step redone on the CPU, and why) into the test's captured
/// output, so a failing test shows them.
pub fn rng() -> StdRng {
    let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter(tracing_subscriber::EnvFilter::new("warn")).try_init();
    let seed = std::env::var("WHIR_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| rand::rng().random::<u64>());
    eprintln!("WHIR_TEST_SEED={seed}");
    StdRng::seed_from_u64(seed)
}

pub fn random_vec(rng: &mut StdRng, n: usize) -> Vec<BabyBear> {
    (0..n).map(|_| rng.random()).collect()
}

/// Opens rows as the prover does: the gather recorded and sent in one batch, read back in
/// another.
pub fn open_deferred<F: whir_gpu::Poseidon2Field>(
    merkle: &whir_gpu::GpuMerkle<F>,
    tree: &whir_gpu::GpuMerkleTree<F>,
    rows: whir_gpu::record::RowSource<'_>,
    indices: &[usize],
    cap_height: usize,
) -> whir_gpu::Result<whir_gpu::OpenedRows<F>> {
    let ctx = merkle.poseidon2().context();
    let mut batch = ctx.batch("openings");
    let pending = merkle.record_openings(&mut batch, tree, rows, indices, cap_height)?;
    ctx.send(batch)?;
    let mut read = ctx.batch("openings readback");
    let slot = pending.read(&mut read);
    let readback = ctx.run(read)?;
    slot.finish(&readback)
}
