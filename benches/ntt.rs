//! GPU NTT against Plonky3's CPU DFT (`Radix2DFTSmallBatch`), log sizes 16..=24, widths 1 and 16,
//! both field-multiply variants, in one process.
//!
//! First prints a kernel profile from GPU timestamp queries (median of repeated runs, each
//! kernel's share, achieved bandwidth against a 3,930 GB/s WGSL copy kernel on the H200), then
//! runs criterion: `gpu_resident` (data already on the GPU: record, submit, wait),
//! `gpu_host` (GpuDft::dft_batch: upload, transform, readback) and `cpu` (Plonky3).
//!
//! `cargo bench --bench ntt`; WHIR_BENCH_LOGS=16,20 limits the sizes, WHIR_BENCH_PROFILE_ONLY=1
//! stops after the kernel profile.

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use p3_baby_bear::BabyBear;
use p3_dft::{Radix2DFTSmallBatch, TwoAdicSubgroupDft};
use p3_matrix::dense::RowMajorMatrix;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::field::as_words;
use whir_wgpu::gpu::{GpuContext, GpuDft, GpuNtt, GpuOptions, KernelTimer, MulVariant, NttSpec};

const WIDTHS: [usize; 2] = [1, 16];
const COPY_GBPS: f64 = 3930.0;

fn logs() -> Vec<usize> {
    std::env::var("WHIR_BENCH_LOGS")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| (16..=24).collect())
}

fn gpus() -> Vec<Arc<GpuNtt>> {
    MulVariant::ALL
        .iter()
        .filter_map(|&v| match GpuContext::new(GpuOptions { mul_variant: Some(v), ..Default::default() }) {
            Ok(ctx) => Some(Arc::new(GpuNtt::new(Arc::new(ctx)))),
            Err(e) => {
                eprintln!("no {v:?} GPU context: {e}");
                None
            }
        })
        .collect()
}

fn input(log_n: usize, w: usize) -> Vec<BabyBear> {
    let mut rng = StdRng::seed_from_u64(log_n as u64 * 100 + w as u64);
    (0..(1 << log_n) * w).map(|_| rng.random()).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn profile(ntt: &GpuNtt) {
    let ctx = ntt.context();
    println!("\n## Kernel profile: {} ({:?} multiply), GPU timestamps, median of 9", ctx.summary().name, ctx.mul_variant());
    println!("| log n | width | kernels (us each) | total us | GB/s over all passes | of 3,930 GB/s |");
    println!("|---|---|---|---|---|---|");
    for log_n in logs() {
        for w in WIDTHS {
            let values = input(log_n, w);
            let src = ctx.upload("bench input", as_words(&values));
            let spec = NttSpec::forward(log_n, w);
            let mut runs: Vec<Vec<(&str, f64)>> = Vec::new();
            for rep in 0..12 {
                let Some(mut timer) = KernelTimer::new(ctx, 16) else {
                    println!("(adapter has no TIMESTAMP_QUERY: no kernel profile)");
                    return;
                };
                let mut enc = ctx.encoder("profile");
                ntt.record_timed(&mut enc, &src, &spec, Some(&mut timer)).expect("record");
                let t = timer.finish(ctx, enc).expect("timestamps");
                if rep >= 3 {
                    runs.push(t);
                }
            }
            let kernels = runs[0].len();
            let per: Vec<f64> = (0..kernels).map(|k| median(runs.iter().map(|r| r[k].1).collect())).collect();
            let total: f64 = per.iter().sum();
            let bytes = (kernels * 2 * (1usize << log_n) * w * 4) as f64;
            let gbps = bytes / total;
            let names: Vec<String> = runs[0].iter().zip(&per).map(|((l, _), t)| format!("{} {:.1}", l, t / 1e3)).collect();
            println!(
                "| {log_n} | {w} | {} | {:.1} | {:.0} | {:.0}% |",
                names.join(", "),
                total / 1e3,
                gbps,
                100.0 * gbps / COPY_GBPS
            );
        }
    }
}

fn bench(c: &mut Criterion, gpus: &[Arc<GpuNtt>]) {
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for w in WIDTHS {
        let mut group = c.benchmark_group(format!("ntt_forward_width_{w}"));
        group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
        for log_n in logs() {
            let values = input(log_n, w);
            group.throughput(Throughput::Elements(((1usize << log_n) * w) as u64));
            for ntt in gpus {
                let ctx = ntt.context().clone();
                let v = format!("{:?}", ctx.mul_variant());
                let src = ctx.upload("bench input", as_words(&values));
                let spec = NttSpec::forward(log_n, w);
                group.bench_function(BenchmarkId::new(format!("gpu_resident_{v}"), log_n), |b| {
                    b.iter(|| {
                        let mut enc = ctx.encoder("bench");
                        let out = ntt.record(&mut enc, &src, &spec).expect("record");
                        ctx.submit_and_wait(enc).expect("submit");
                        out
                    })
                });
                let dft = GpuDft::new(Some(ntt.clone())).with_cpu_threshold(0);
                let m = RowMajorMatrix::new(values.clone(), w);
                group.bench_function(BenchmarkId::new(format!("gpu_host_{v}"), log_n), |b| {
                    b.iter(|| dft.dft_batch(m.clone()))
                });
            }
            let m = RowMajorMatrix::new(values, w);
            group.bench_function(BenchmarkId::new("cpu_plonky3", log_n), |b| b.iter(|| cpu.dft_batch(m.clone())));
        }
        group.finish();
    }
}

fn main() {
    let gpus = gpus();
    println!("CPU threads (rayon): {}", std::thread::available_parallelism().map_or(1, |n| n.get()));
    for ntt in &gpus {
        // Warm the GPU up so its clocks are up before anything is timed.
        let values = input(22, 16);
        let src = ntt.context().upload("warm-up", as_words(&values));
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(2) {
            let mut enc = ntt.context().encoder("warm-up");
            ntt.record(&mut enc, &src, &NttSpec::forward(22, 16)).expect("record");
            ntt.context().submit_and_wait(enc).expect("submit");
        }
        profile(ntt);
    }
    if std::env::var("WHIR_BENCH_PROFILE_ONLY").is_ok_and(|v| v == "1") {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, &gpus);
    c.final_summary();
}
