//! A Plonky3 STARK on whir-wgpu's GPU pieces against the all-CPU prover, in one process:
//! Keccak-f permutations (p3-keccak-air) proved with p3-uni-stark over FRI at rate 1/2, with
//! `GpuDft`, `GpuMmcs` (and `ExtensionMmcs` over it) and `GpuChallenger`; the proof is checked by
//! the stock verifier built from Plonky3's CPU pieces.
//!
//! `cargo run --release --example stark -- [LOG_ROWS ...] [--reps N] [--queries Q] [--pow B] [--spans] [--cpu-first]`
//! (trace heights 2^LOG_ROWS, default 14 16). Prints per size: Plonky3's time, ours, the ratio,
//! and where each prover's time went by p3-uni-stark's tracing spans (the quotient is the AIR's
//! constraint evaluation, which stays on the CPU in both).
//!
//! The GPU proofs are timed right after the GPU's warm-up proof, as a prover proving one proof
//! after another runs them; `--cpu-first` times Plonky3 in between, so the GPU starts from the
//! idle clock it falls to within a second or two (345 MHz on the H200, against 1,980 under load).

mod config;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use p3_keccak_air::{generate_trace_rows, KeccakAir, NUM_ROUNDS};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tracing::span;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;
use whir_wgpu::gpu::GpuContext;

/// Wall time inside each named span (p3-uni-stark's `#[instrument]` spans), summed.
#[derive(Clone, Default)]
struct SpanTimes(Arc<Mutex<BTreeMap<&'static str, Duration>>>);

struct Entered(Instant);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for SpanTimes {
    fn on_enter(&self, id: &span::Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().replace(Entered(Instant::now()));
        }
    }
    fn on_exit(&self, id: &span::Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(Entered(t)) = span.extensions_mut().remove::<Entered>() {
                *self.0.lock().unwrap().entry(span.name()).or_default() += t.elapsed();
            }
        }
    }
}

impl SpanTimes {
    fn take(&self) -> BTreeMap<&'static str, Duration> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn summary(spans: &BTreeMap<&'static str, Duration>, total: Duration, reps: u32) -> String {
    // The spans that cover a prover's phases; nested spans are not subtracted.
    let pick = ["commit to trace data", "quotient_values", "commit to quotient poly chunks", "open"];
    pick.iter()
        .filter_map(|name| spans.get(name).map(|d| format!("{name} {:.1} ms ({:.0}%)", ms(*d) / reps as f64, 100.0 * d.as_secs_f64() / total.as_secs_f64())))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    let mut logs = Vec::new();
    let (mut reps, mut queries, mut pow, mut show_spans, mut cpu_first) = (2u32, 100usize, 16usize, false, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().and_then(|v| v.parse::<usize>().ok()).expect("a number after the flag");
        match a.as_str() {
            "--reps" => reps = value() as u32,
            "--queries" => queries = value(),
            "--pow" => pow = value(),
            "--spans" => show_spans = true,
            "--cpu-first" => cpu_first = true,
            n => logs.push(n.parse::<usize>().expect("LOG_ROWS")),
        }
    }
    if logs.is_empty() {
        logs = vec![14, 16];
    }
    let spans = SpanTimes::default();
    // WHIR_LOG=whir_gpu=debug also prints our crates' diagnostics (transfers, fallbacks).
    let log = std::env::var("WHIR_LOG")
        .ok()
        .map(|f| tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(tracing_subscriber::EnvFilter::new(f)));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(spans.clone()).with(log)).expect("one subscriber");
    let ctx = Arc::new(GpuContext::new_default().expect("a GPU adapter (set WHIR_ADAPTER to choose one)"));
    println!("GPU: {}; CPU threads: {}", ctx.summary(), rayon::current_num_threads());
    println!("FRI: rate 1/2, {queries} queries, {pow} bits of query PoW; Keccak-f AIR ({} columns)", p3_keccak_air::NUM_KECCAK_COLS);
    let air = KeccakAir {};
    let gpu = config::gpu_config(ctx.clone(), queries, pow, None);
    let stock = config::stock_config(queries, pow);
    let mut rng = StdRng::seed_from_u64(1);
    println!("| trace rows | Plonky3 ms | GPU pieces ms | Plonky3 / GPU | Plonky3 phases | GPU phases |");
    println!("|---|---|---|---|---|---|");
    for &log_rows in &logs {
        let perms = (1usize << log_rows) / NUM_ROUNDS;
        let inputs: Vec<[u64; 25]> = (0..perms).map(|_| std::array::from_fn(|_| rng.random())).collect();
        let trace = generate_trace_rows::<config::Val>(inputs, 1);
        {
            // Warm-up at each size (pipelines, the staging and buffer pools a prover proving
            // repeatedly keeps: a fresh pinned staging buffer of a gigabyte costs the driver
            // ~0.5 s), and the check that matters: the stock verifier accepts the GPU proof.
            let proof = p3_uni_stark::prove(&gpu, &air, trace.clone(), &[]).expect("GPU proof");
            let bytes = postcard::to_allocvec(&proof).expect("serializes");
            let proof: p3_uni_stark::Proof<config::StockStarkConfig> = postcard::from_bytes(&bytes).expect("deserializes");
            p3_uni_stark::verify(&stock, &air, &proof, &[]).expect("the stock verifier accepts the GPU proof");
        }
        // Each proof consumes its trace: the copies are made outside the timing (a 690 MB
        // clone alone takes ~0.1 s on one core).
        let time = |prove: &dyn Fn(p3_matrix::dense::RowMajorMatrix<config::Val>)| {
            let mut total = Duration::ZERO;
            spans.take();
            for _ in 0..reps {
                let copy = trace.clone();
                let t = Instant::now();
                prove(copy);
                total += t.elapsed();
            }
            (total, spans.take())
        };
        let time_cpu = || {
            time(&|t| {
                p3_uni_stark::prove(&stock, &air, t, &[]).expect("CPU proof");
            })
        };
        let time_gpu = || {
            time(&|t| {
                p3_uni_stark::prove(&gpu, &air, t, &[]).expect("GPU proof");
            })
        };
        let ((cpu_t, cpu_spans), (gpu_t, gpu_spans)) = if cpu_first {
            let c = time_cpu();
            (c, time_gpu())
        } else {
            let g = time_gpu();
            (time_cpu(), g)
        };
        if show_spans {
            for (who, spans, total) in [("Plonky3", &cpu_spans, cpu_t), ("GPU pieces", &gpu_spans, gpu_t)] {
                let mut all: Vec<_> = spans.iter().filter(|(_, d)| d.as_secs_f64() > 0.02 * total.as_secs_f64()).collect();
                all.sort_by_key(|(_, d)| std::cmp::Reverse(**d));
                let list: Vec<String> = all.iter().map(|(n, d)| format!("{n} {:.1}", ms(**d) / reps as f64)).collect();
                eprintln!("2^{log_rows} {who} spans (ms per proof, nested spans overlap): {}", list.join("; "));
            }
        }
        println!(
            "| 2^{log_rows} | {:.1} | {:.1} | {:.2}x | {} | {} |",
            ms(cpu_t) / reps as f64,
            ms(gpu_t) / reps as f64,
            cpu_t.as_secs_f64() / gpu_t.as_secs_f64(),
            summary(&cpu_spans, cpu_t, reps),
            summary(&gpu_spans, gpu_t, reps)
        );
    }
}
