//! Where a GPU grind's time goes: for many random transcript states at a few difficulties, the
//! smallest witness w (the candidates that must be tried) and the wall time of `GpuGrinder::grind`
//! (one submission per range, readback included). A least-squares line time = a + b * w separates
//! the per-candidate cost (b) from what does not depend on w (a: round trips, and the workgroups
//! past the hit that only return). `cargo run --release --example grind_probe [BITS,..] [STATES]`

use std::sync::Arc;
use std::time::Instant;

use p3_baby_bear::BabyBear;
use p3_challenger::{CanObserve, DuplexChallenger};
use p3_field::PrimeField32;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::{transcript::GrindState, GpuContext, GpuGrinder, GpuPoseidon2, Poseidon2Constants};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bits_list: Vec<usize> = args.get(1).map_or("16,20,22", |s| s.as_str()).split(',').filter_map(|x| x.trim().parse().ok()).collect();
    // At least two states, so the line through them is defined.
    let states: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(40).max(2);
    let constants = Poseidon2Constants::default_babybear();
    let perm = constants.to_cpu();
    let ctx = Arc::new(GpuContext::new_default().expect("GPU"));
    println!("{}", ctx.summary());
    let grinder = GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx, constants)));
    let mut rng = StdRng::seed_from_u64(7);
    for bits in bits_list {
        let mut points = Vec::with_capacity(states);
        // Warm-up (pipelines, clocks).
        for _ in 0..3 {
            let state = GrindState::new(&[BabyBear::new(rng.random_range(0..1000)); 16], &[]).expect("state");
            let _ = grinder.grind(&state, bits).expect("grind");
        }
        for _ in 0..states {
            let mut c = DuplexChallenger::<BabyBear, _, 16, 8>::new(perm.clone());
            for _ in 0..rng.random_range(1..8) {
                c.observe(rng.random::<BabyBear>());
            }
            let state = GrindState::new(&c.sponge_state, &c.input_buffer).expect("state");
            let t = Instant::now();
            let w = grinder.grind(&state, bits).expect("grind");
            let ms = t.elapsed().as_secs_f64() * 1e3;
            points.push((w.as_canonical_u32() as f64, ms));
        }
        let n = points.len() as f64;
        let (mx, my) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
        let mut sorted: Vec<f64> = points.iter().map(|p| p.1).collect();
        sorted.sort_by(f64::total_cmp);
        let summary = format!(
            "bits {bits:2}: {states} states, mean witness {:.2} x 2^bits, mean {my:.3} ms, median {:.3} ms",
            mx / (1u64 << bits) as f64,
            sorted[sorted.len() / 2]
        );
        // A line needs witnesses that differ, and a cost per candidate above the noise.
        let slope = sxy / sxx;
        if sxx > 0.0 && slope > 0.0 {
            let intercept = my - slope * mx;
            println!("{summary}; fit {intercept:.3} ms + {:.3} ns x witness ({:.0} M candidates/s past the fixed part)", slope * 1e6, 1e-3 / slope);
        } else {
            println!("{summary}; no fit (witnesses too alike or timings too noisy)");
        }
    }
}
