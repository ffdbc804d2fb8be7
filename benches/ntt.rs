//! GPU NTT against Plonky3's CPU DFT (`Radix2DFTSmallBatch`), log sizes 16..=24, widths 1 and 16,
//! both field-multiply variants, in one process.
//!
//! First prints a kernel profile from GPU timestamp queries (median of repeated runs, each
//! kernel's time, achieved bandwidth against a plain WGSL copy of the same bytes), then
//! runs criterion: `gpu_resident` (data already on the GPU: record, submit, wait),
//! `gpu_host` (GpuDft::dft_batch: upload, transform, readback) and `cpu` (Plonky3).
//!
//! `cargo bench --bench ntt`; WHIR_BENCH_KOALABEAR=1 adds the same criterion entries over KoalaBear
//! (groups `koalabear_ntt_forward_width_W`); WHIR_BENCH_LOGS=16,20 limits the sizes, WHIR_BENCH_WIDTHS=16,64 sets
//! the widths, WHIR_BENCH_PROFILE_ONLY=1 stops after the kernel profile, WHIR_BENCH_SKIP_PROFILE=1
//! skips it. WHIR_BENCH_SHAPES=20:64:16,... adds encoder shapes to the profile (log rows : width :
//! log message rows, one buffer, natural-order output: what a WHIR round's codeword runs).

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use p3_baby_bear::BabyBear;
use p3_dft::{Radix2DFTSmallBatch, TwoAdicSubgroupDft};
use p3_koala_bear::KoalaBear;
use p3_matrix::dense::RowMajorMatrix;
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::field::as_words;
use whir_wgpu::gpu::{record::Batch, record::KernelTimer, record::NttSource, GpuContext, GpuDft, GpuField, GpuNtt, GpuOptions, MulVariant, NttSpec};

fn list(name: &str) -> Option<Vec<usize>> {
    std::env::var(name).ok().map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
}

fn logs() -> Vec<usize> {
    list("WHIR_BENCH_LOGS").unwrap_or_else(|| (16..=24).collect())
}

fn widths() -> Vec<usize> {
    list("WHIR_BENCH_WIDTHS").unwrap_or_else(|| vec![1, 16])
}

/// Encoder shapes (log rows, width, log message rows) from WHIR_BENCH_SHAPES.
fn shapes() -> Vec<(usize, usize, usize)> {
    let Ok(s) = std::env::var("WHIR_BENCH_SHAPES") else { return Vec::new() };
    s.split(',')
        .filter_map(|t| {
            let v: Vec<usize> = t.split(':').filter_map(|x| x.trim().parse().ok()).collect();
            (v.len() == 3 && v[2] <= v[0]).then(|| (v[0], v[1], v[2]))
        })
        .collect()
}

fn gpus() -> Vec<Arc<GpuNtt>> {
    MulVariant::ALL
        .iter()
        .filter_map(|&v| match GpuContext::new(GpuOptions { mul_variant: Some(v), ..GpuOptions::from_env().expect("the WHIR_* settings") }) {
            Ok(ctx) => Some(Arc::new(GpuNtt::new(Arc::new(ctx)))),
            Err(e) => {
                eprintln!("no {v:?} GPU context: {e}");
                None
            }
        })
        .collect()
}

fn input<F>(log_n: usize, w: usize) -> Vec<F>
where
    StandardUniform: Distribution<F>,
{
    let mut rng = StdRng::seed_from_u64(log_n as u64 * 100 + w as u64);
    (0..(1 << log_n) * w).map(|_| rng.random()).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Median GPU time of each kernel `record` puts into an encoder, over 9 runs after 3 warm-ups.
fn time_kernels(ctx: &GpuContext, mut record: impl FnMut(&mut Batch<'_>)) -> Option<Vec<(&'static str, f64)>> {
    let mut runs: Vec<Vec<(&str, f64)>> = Vec::new();
    for rep in 0..12 {
        let timer = KernelTimer::new(ctx, 16).expect("16 kernels fit a timer")?;
        let mut batch = ctx.batch("profile").timed(timer);
        record(&mut batch);
        let t = ctx.run(batch).expect("timestamps").kernel_times().to_vec();
        if rep >= 3 {
            runs.push(t);
        }
    }
    let labels: Vec<&str> = runs[0].iter().map(|(l, _)| *l).collect();
    Some(labels.iter().enumerate().map(|(k, l)| (*l, median(runs.iter().map(|r| r[k].1).collect()))).collect())
}

fn profile(ntt: &GpuNtt, tile_log: Option<u32>) {
    let ctx = ntt.context();
    let memory_only = match tile_log {
        Some(t) => GpuNtt::with_tile_log(ctx.clone(), t),
        None => GpuNtt::new(ctx.clone()),
    };
    memory_only.set_skip_butterflies(true);
    println!(
        "\n## Kernel profile: {} ({:?} multiply, DIF tile {}), GPU timestamps, median of 9",
        ctx.summary().name,
        ctx.mul_variant(),
        tile_log.map_or("default".to_string(), |t| format!("2^{t} words"))
    );
    println!("Bandwidth counts one read and one write of the matrix per kernel. `copy` is a plain WGSL copy of the");
    println!("same bytes (the ceiling for one pass); `memory only` is the same NTT passes with the butterflies removed.\n");
    println!("| log n | width | kernels (us each) | total us | GB/s | copy us (GB/s) | total / (kernels x copy) | memory only us |");
    println!("|---|---|---|---|---|---|---|---|");
    for log_n in logs() {
        for w in widths() {
            let values = input::<BabyBear>(log_n, w);
            let words = values.len();
            let src = ctx.transfers().upload("bench input", as_words(&values));
            let spec = NttSpec::<BabyBear>::forward(log_n, w);
            let Some(full) = time_kernels(ctx, |batch| {
                let out = ntt.record(batch, NttSource::TwoBuffers(&src), &spec).expect("record");
                batch.lend(out);
            }) else {
                println!("(adapter has no TIMESTAMP_QUERY: no kernel profile)");
                return;
            };
            let mem = time_kernels(ctx, |batch| {
                let out = memory_only.record(batch, NttSource::TwoBuffers(&src), &spec).expect("record");
                batch.lend(out);
            })
            .expect("timer");
            let dst = ctx.memory().storage("copy dst", words);
            let copy = time_kernels(ctx, |batch| ntt.record_copy(batch, &src, &dst, words).expect("copy")).expect("timer")[0].1;
            let total: f64 = full.iter().map(|k| k.1).sum();
            let mem_total: f64 = mem.iter().map(|k| k.1).sum();
            let bytes = (2 * words * 4) as f64;
            let gbps = full.len() as f64 * bytes / total;
            let names: Vec<String> = full.iter().map(|(l, t)| format!("{} {:.1}", l, t / 1e3)).collect();
            println!(
                "| {log_n} | {w} | {} | {:.1} | {:.0} | {:.1} ({:.0}) | {:.1}x | {:.1} |",
                names.join(", "),
                total / 1e3,
                gbps,
                copy / 1e3,
                bytes / copy,
                total / (full.len() as f64 * copy),
                mem_total / 1e3,
            );
        }
    }
    let shapes = shapes();
    if shapes.is_empty() {
        return;
    }
    println!("\nEncoder shapes (one buffer, message rows only read, natural-order output):\n");
    println!("| log n | width | log message rows | kernels (us each) | total us | copy of the output us |");
    println!("|---|---|---|---|---|---|");
    for (log_n, w, log_m) in shapes {
        let values = input::<BabyBear>(log_m, w);
        let src = ctx.transfers().upload("bench message", as_words(&values));
        let spec = NttSpec { valid_rows: 1 << log_m, ..NttSpec::<BabyBear>::forward(log_n, w) };
        let full = time_kernels(ctx, |batch| {
            let out = ntt.record(batch, NttSource::OneBuffer(&src), &spec).expect("record");
            batch.lend(out);
        })
        .expect("timer");
        let words = (1usize << log_n) * w;
        let a = ctx.memory().storage("copy src", words);
        let b = ctx.memory().storage("copy dst", words);
        let copy = time_kernels(ctx, |batch| ntt.record_copy(batch, &a, &b, words).expect("copy")).expect("timer")[0].1;
        let total: f64 = full.iter().map(|k| k.1).sum();
        let names: Vec<String> = full.iter().map(|(l, t)| format!("{} {:.1}", l, t / 1e3)).collect();
        println!("| {log_n} | {w} | {log_m} | {} | {:.1} | {:.1} |", names.join(", "), total / 1e3, copy / 1e3);
    }
}

/// The criterion entries over `F`, in groups named `{prefix}ntt_forward_width_{w}`.
fn bench<F: GpuField>(c: &mut Criterion, gpus: &[Arc<GpuNtt>], prefix: &str)
where
    StandardUniform: Distribution<F>,
{
    let cpu = Radix2DFTSmallBatch::<F>::default();
    let dit = p3_dft::Radix2DitParallel::<F>::default();
    for w in widths() {
        let mut group = c.benchmark_group(format!("{prefix}ntt_forward_width_{w}"));
        group.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
        for log_n in logs() {
            let values = input::<F>(log_n, w);
            group.throughput(Throughput::Elements(((1usize << log_n) * w) as u64));
            for ntt in gpus {
                let ctx = ntt.context().clone();
                let v = format!("{:?}", ctx.mul_variant());
                let src = ctx.transfers().upload("bench input", as_words(&values));
                let spec = NttSpec::<F>::forward(log_n, w);
                group.bench_function(BenchmarkId::new(format!("gpu_resident_{v}"), log_n), |b| {
                    b.iter(|| {
                        let mut batch = ctx.batch("bench");
                        let out = ntt.record(&mut batch, NttSource::TwoBuffers(&src), &spec).expect("record");
                        // Back to the pool with the batch, as a device-resident caller would hand it back once done.
                        batch.lend(out);
                        ctx.run(batch).expect("run");
                    })
                });
                let dft = GpuDft::<F>::new(Some(ntt.clone())).with_cpu_threshold(0);
                let m = RowMajorMatrix::new(values.clone(), w);
                group.bench_function(BenchmarkId::new(format!("gpu_host_{v}"), log_n), |b| {
                    // The input copy is made outside the timing (a fresh 2^28-byte clone alone
                    // took ~200 ms on the H200 host): only the transform is measured.
                    b.iter_batched(|| m.clone(), |m| dft.dft_batch(m), criterion::BatchSize::LargeInput)
                });
            }
            let m = RowMajorMatrix::new(values, w);
            group.bench_function(BenchmarkId::new("cpu_plonky3", log_n), |b| {
                b.iter_batched(|| m.clone(), |m| cpu.dft_batch(m), criterion::BatchSize::LargeInput)
            });
            // Plonky3's other parallel DFT, whose evaluations are a bit-reversed view as ours are.
            group.bench_function(BenchmarkId::new("cpu_plonky3_dit", log_n), |b| {
                b.iter_batched(|| m.clone(), |m| dit.dft_batch(m), criterion::BatchSize::LargeInput)
            });
        }
        group.finish();
    }
}

fn main() {
    let gpus = gpus();
    // Plonky3 runs on rayon's pool only with p3-maybe-rayon's `parallel` feature (whir-gpu's
    // default); print what the CPU side really uses.
    println!("Plonky3 CPU threads (rayon pool): {}", rayon::current_num_threads());
    for ntt in &gpus {
        // Warm the GPU up so its clocks are up before anything is timed.
        let values = input::<BabyBear>(20, 16);
        let src = ntt.context().transfers().upload("warm-up", as_words(&values));
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(2) {
            let mut batch = ntt.context().batch("warm-up");
            let out = ntt.record(&mut batch, NttSource::TwoBuffers(&src), &NttSpec::<BabyBear>::forward(20, 16)).expect("record");
            batch.lend(out);
            ntt.context().run(batch).expect("run");
        }
        if std::env::var("WHIR_BENCH_SKIP_PROFILE").is_ok_and(|v| v == "1") {
            continue;
        }
        profile(ntt, None);
    }
    // Tuning: the same with another DIF tile size.
    if let Ok(t) = std::env::var("WHIR_BENCH_TILE_LOG") {
        let t: u32 = t.parse().expect("WHIR_BENCH_TILE_LOG");
        for ntt in &gpus {
            profile(&GpuNtt::with_tile_log(ntt.context().clone(), t), Some(t));
        }
    }
    if std::env::var("WHIR_BENCH_PROFILE_ONLY").is_ok_and(|v| v == "1") {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    bench::<BabyBear>(&mut c, &gpus, "");
    if std::env::var("WHIR_BENCH_KOALABEAR").is_ok_and(|v| v == "1") {
        bench::<KoalaBear>(&mut c, &gpus, "koalabear_");
    }
    c.final_summary();
}
