//! Shared test set-up: one GPU context per field-multiply variant, opened once per test binary.
//! Without an adapter the GPU tests skip with a message, unless WHIR_REQUIRE_GPU=1 (CI), where
//! they fail.
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use p3_baby_bear::BabyBear;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::{GpuContext, GpuOptions, MulVariant};

fn require_gpu() -> bool {
    std::env::var("WHIR_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

fn open(variant: MulVariant) -> Option<Arc<GpuContext>> {
    open_with(GpuOptions { mul_variant: Some(variant), ..env_options() })
}

/// The environment's settings (WHIR_LIMITS=webgpu in CI's strict pass), which every test
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

/// Contexts for every multiply variant the adapter supports (u64 needs SHADER_INT64).
pub fn contexts() -> Vec<Arc<GpuContext>> {
    static U64: OnceLock<Option<Arc<GpuContext>>> = OnceLock::new();
    static EMU: OnceLock<Option<Arc<GpuContext>>> = OnceLock::new();
    let emu = EMU.get_or_init(|| open(MulVariant::Emulated)).clone();
    let u64 = U64
        .get_or_init(|| {
            let has_int64 = emu.as_ref().is_some_and(|c| c.summary().shader_int64);
            if emu.is_some() && !has_int64 {
                eprintln!("adapter lacks SHADER_INT64: u64 multiply variant not tested here");
                return None;
            }
            open(MulVariant::U64)
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
    shared.iter().filter_map(|c| open_with(GpuOptions { mul_variant: Some(c.mul_variant()), spin_us: Some(spin_us), ..env_options() })).collect()
}

/// A fresh seed each run, printed so a failure can be replayed with WHIR_TEST_SEED.
pub fn rng() -> StdRng {
    let seed = std::env::var("WHIR_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random::<u64>());
    eprintln!("WHIR_TEST_SEED={seed}");
    StdRng::seed_from_u64(seed)
}

pub fn random_vec(rng: &mut StdRng, n: usize) -> Vec<BabyBear> {
    (0..n).map(|_| rng.random()).collect()
}
