//! Proof-of-work grinding at 16, 20 and 24 bits: the GPU grinder (submission and readback
//! included), our CPU grinder (smallest witness, rayon) and Plonky3's `DuplexChallenger::grind`
//! (any witness, all cores), on the same transcript states, in one process.
//! `cargo bench --bench grind`; WHIR_BENCH_BITS=16,20 picks the difficulties.

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use p3_baby_bear::BabyBear;
use p3_challenger::{CanObserve, DuplexChallenger, GrindingChallenger};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::{transcript::cpu_grind, transcript::GrindState, GpuContext, GpuGrinder, GpuOptions, GpuPoseidon2, MulVariant, Poseidon2Constants};

fn main() {
    let bits_list: Vec<usize> =
        std::env::var("WHIR_BENCH_BITS").ok().map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect()).unwrap_or_else(|| vec![16, 20, 24]);
    let constants = Poseidon2Constants::default_babybear();
    let perm = constants.to_cpu();
    let grinders: Vec<(MulVariant, GpuGrinder)> = MulVariant::ALL
        .iter()
        .filter_map(|&v| GpuContext::new(GpuOptions { mul_variant: Some(v), ..GpuOptions::from_env().expect("the WHIR_* settings") }).ok().map(|c| (v, c)))
        .map(|(v, ctx)| (v, GpuGrinder::new(Arc::new(GpuPoseidon2::new(Arc::new(ctx), constants.clone())))))
        .collect();
    // Several transcript states, so a lucky small witness does not decide the figure.
    let mut rng = StdRng::seed_from_u64(99);
    let transcripts: Vec<DuplexChallenger<BabyBear, _, 16, 8>> = (0..8)
        .map(|_| {
            let mut c = DuplexChallenger::new(perm.clone());
            for _ in 0..rng.random_range(1..12) {
                c.observe(rng.random::<BabyBear>());
            }
            c
        })
        .collect();
    let states: Vec<GrindState> =
        transcripts.iter().map(|c| GrindState::new(&c.sponge_state, &c.input_buffer).expect("a challenger holds under a rate of input")).collect();

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("grind");
    group.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
    for bits in bits_list {
        for (v, g) in &grinders {
            let mut i = 0;
            group.bench_function(BenchmarkId::new(format!("gpu_{v:?}"), bits), |b| {
                b.iter(|| {
                    i += 1;
                    g.grind(&states[i % states.len()], bits).expect("grind")
                })
            });
        }
        let mut i = 0;
        group.bench_function(BenchmarkId::new("cpu_ours_smallest", bits), |b| {
            b.iter(|| {
                i += 1;
                cpu_grind(&perm, &states[i % states.len()], bits).expect("grind")
            })
        });
        let mut i = 0;
        group.bench_function(BenchmarkId::new("cpu_plonky3", bits), |b| {
            b.iter(|| {
                i += 1;
                transcripts[i % transcripts.len()].clone().grind(bits)
            })
        });
    }
    group.finish();
    c.final_summary();
}
