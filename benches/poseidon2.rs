//! Poseidon2 permutations per second (width 16, and 24 on request) over BabyBear and KoalaBear: the GPU batch entry
//! (states already on the GPU: record, submit, wait) against Plonky3 on all CPU threads (packed
//! states, rayon), in one process. `cargo bench --bench poseidon2`; WHIR_BENCH_STATES=N sets the
//! batch (default 2^22). BabyBear's entries are `gpu_resident_<variant>` and `cpu_plonky3_..`;
//! WHIR_BENCH_KOALABEAR=1 adds KoalaBear's, the same with a `koalabear_` prefix;
//! WHIR_BENCH_WIDTH24=1 adds width 24 over both fields (`width24_`, `koalabear_width24_`).

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use p3_baby_bear::BabyBear;
use p3_field::{Field, PackedValue};
use p3_koala_bear::KoalaBear;
use p3_symmetric::Permutation;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use whir_wgpu::gpu::field::as_words;
use whir_wgpu::gpu::{GpuContext, GpuOptions, GpuPoseidon2, MulVariant, Poseidon2Constants};

/// The GPU (both multiply variants) and Plonky3 entries for one field.
macro_rules! bench_field {
    ($group:expr, $field:ty, $width:literal, $prefix:literal, $states:expr) => {{
        type Packed = <$field as Field>::Packing;
        let states: usize = $states;
        let mut rng = StdRng::seed_from_u64(7);
        let values: Vec<$field> = (0..states * $width).map(|_| rng.random()).collect();
        let constants = Poseidon2Constants::<$field, $width>::plonky3_default();
        for variant in MulVariant::ALL {
            let Ok(ctx) = GpuContext::new(GpuOptions { mul_variant: Some(variant), ..GpuOptions::from_env().expect("the WHIR_* settings") }) else {
                eprintln!("no {variant:?} GPU context");
                continue;
            };
            let ctx = Arc::new(ctx);
            let p2 = GpuPoseidon2::new(ctx.clone(), constants.clone());
            let input = ctx.transfers().upload("states", as_words(&values));
            let output = ctx.memory().storage("out", values.len());
            $group.bench_function(format!("{}gpu_resident_{variant:?}", $prefix), |b| {
                b.iter(|| {
                    let mut batch = ctx.batch("bench");
                    p2.record_permute(&mut batch, &input, &output, states).expect("record");
                    ctx.run(batch).expect("run");
                })
            });
        }
        let perm = constants.to_cpu();
        let width = Packed::WIDTH;
        let packed: Vec<[Packed; $width]> =
            values.chunks_exact($width * width).map(|chunk| core::array::from_fn(|j| Packed::from_fn(|lane| chunk[lane * $width + j]))).collect();
        $group.bench_function(format!("{}cpu_plonky3_{}_threads_{}_lanes", $prefix, rayon::current_num_threads(), width), |b| {
            b.iter_batched(|| packed.clone(), |mut s| s.par_iter_mut().for_each(|st| perm.permute_mut(st)), criterion::BatchSize::LargeInput)
        });
    }};
}

fn main() {
    let states: usize = std::env::var("WHIR_BENCH_STATES").ok().and_then(|s| s.parse().ok()).unwrap_or(1 << 22);
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("poseidon2_permutations");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(states as u64));
    bench_field!(group, BabyBear, 16, "", states);
    if std::env::var("WHIR_BENCH_KOALABEAR").is_ok_and(|v| v == "1") {
        bench_field!(group, KoalaBear, 16, "koalabear_", states);
    }
    if std::env::var("WHIR_BENCH_WIDTH24").is_ok_and(|v| v == "1") {
        bench_field!(group, BabyBear, 24, "width24_", states);
        bench_field!(group, KoalaBear, 24, "koalabear_width24_", states);
    }
    group.finish();
    c.final_summary();
}
