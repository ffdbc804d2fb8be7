//! Proves one shape repeatedly with the resident GPU backend, for host-side profiling
//! (`perf record --call-graph dwarf -t <main thread>`) and quick wall-time checks:
//! `cargo run --release --example prove_loop -- VARS FOLD RATE REPS [POW]`. With
//! `PROVE_LOOP_PROFILE=1` every proof is timed per step with GPU timestamps (a little slower),
//! and the last one's per-round breakdown is printed. `PROVE_LOOP_CHUNK_KIB` sets the staging
//! chunk of large transfers (the input upload); `PROVE_LOOP_SAME_INPUT=1` proves the same input
//! every time (nothing but proofs for a host profiler to see). `PROVE_LOOP_THREADS=T` proves
//! REPS proofs on each of T threads sharing the one context (each a `GpuProver::worker`, as a
//! `ProofPool`'s threads are), and prints the proofs per second and the latencies of them all;
//! `PROVE_LOOP_CONTEXTS=C` spreads those threads over C contexts of their own on the same adapter
//! (a device and queue each, as separate processes would have).

use std::time::Instant;

use p3_baby_bear::BabyBear;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::prover::{GpuProver, Params, Plonky3Pieces};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("numbers")).collect();
    let get = |i: usize, d: usize| args.get(i).copied().unwrap_or(d);
    let params = Params { num_vars: get(0, 16), fold: get(1, 2), log_inv_rate: get(2, 1), pow_bits: get(4, 20), ..Params::default() };
    let reps = get(3, 10);
    let mut rng = StdRng::seed_from_u64(7);
    let evals: Vec<BabyBear> = (0..1usize << params.num_vars).map(|_| rng.random()).collect();
    let profile = std::env::var("PROVE_LOOP_PROFILE").is_ok_and(|v| v == "1");
    let same_input = std::env::var("PROVE_LOOP_SAME_INPUT").is_ok_and(|v| v == "1");
    let gpu = GpuProver::open_default().expect("GPU backend").with_profile(profile);
    if let Some(kib) = std::env::var("PROVE_LOOP_CHUNK_KIB").ok().and_then(|v| v.parse::<u64>().ok()) {
        // Tuning: bytes per staging chunk of large uploads and readbacks.
        gpu.context().transfers().set_transfer_chunk_bytes(kib << 10);
    }
    let threads: usize = std::env::var("PROVE_LOOP_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    gpu.prove(&params, &evals).expect("warm-up proof");
    let contexts: usize = std::env::var("PROVE_LOOP_CONTEXTS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    if threads > 1 || contexts > 1 {
        return prove_on_threads(&gpu, &params, reps, threads, contexts);
    }
    let mut last = None;
    let ctx = gpu.context().clone();
    let (costs, transfers) = (ctx.transfers().host_costs(), ctx.transfers().transfer_counts());
    let mut times = Vec::new();
    for _ in 0..reps {
        // Fresh evaluations each proof (so fresh challenges), made outside the timing; the same
        // ones with PROVE_LOOP_SAME_INPUT=1 (host profiles of the proofs alone).
        let evals: Vec<BabyBear> = if same_input { evals.clone() } else { (0..1usize << params.num_vars).map(|_| rng.random()).collect() };
        let t = Instant::now();
        last = Some(gpu.prove(&params, &evals).expect("proof"));
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let total: f64 = times.iter().sum();
    let (costs, transfers) = (ctx.transfers().host_costs() - costs, ctx.transfers().transfer_counts() - transfers);
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let per = |x: u64| x as f64 / reps as f64;
    let per_ms = |d: std::time::Duration| d.as_secs_f64() * 1e3 / reps as f64;
    println!("{params}: median {:.2} ms over {reps} proofs (min {:.2})", times[times.len() / 2], times[0]);
    println!(
        "per proof: {:.1} ms wall, {:.2} ms in submit, {:.2} ms waiting, {:.2} ms else on the host; {:.0} submissions, {:.0} dispatches, {:.0} bind groups, {:.0} uniforms, {:.0} small writes, {:.1} MiB of fresh buffers",
        total / reps as f64,
        per_ms(costs.submit),
        per_ms(costs.wait),
        total / reps as f64 - per_ms(costs.submit) - per_ms(costs.wait),
        per(transfers.submissions),
        per(costs.dispatches),
        per(costs.bind_groups),
        per(costs.uniforms),
        per(costs.small_writes),
        per(costs.fresh_buffer_bytes) / (1u64 << 20) as f64,
    );
    if let Some(out) = &last {
        // The proof-of-work candidates the last proof cost (each smallest witness + 1): the
        // Poseidon2 work its grinds put on the GPU, which depends on the input.
        let witnesses = out.proof_file(&params).pow_witnesses().expect("the proof decodes");
        println!("last proof: {:.2} M grind candidates", witnesses.iter().map(|&w| w as f64 + 1.0).sum::<f64>() / 1e6);
    }
    if let Some(breakdown) = last.and_then(|out| out.breakdown) {
        println!("last proof, per round: step wall ms (GPU ms)");
        for (round, steps) in breakdown.rounds.iter().enumerate() {
            let cells: Vec<String> = steps
                .iter()
                .map(|(step, t)| {
                    format!("{} {:.2} ({})", step.name(), t.wall.as_secs_f64() * 1e3, t.gpu.map_or("-".into(), |g| format!("{:.2}", g.as_secs_f64() * 1e3)))
                })
                .collect();
            println!("  {round}: {}", cells.join(", "));
        }
    }
}

/// REPS proofs on each of `threads` threads, each with its own backend over the shared context
/// and two inputs of its own, alternated: proofs per second over the whole run, and the latency
/// distribution.
fn prove_on_threads(gpu: &GpuProver, params: &Params, reps: usize, threads: usize, contexts: usize) {
    let mut backends = vec![gpu.clone()];
    for _ in 1..contexts {
        let other = GpuProver::open_default().expect("another context").with_profile(false);
        other.prove(params, &(0..1usize << params.num_vars).map(|i| BabyBear::new(i as u32)).collect::<Vec<_>>()).expect("warm-up proof");
        backends.push(other);
    }
    let inputs: Vec<[Vec<BabyBear>; 2]> = (0..threads)
        .map(|t| {
            let mut rng = StdRng::seed_from_u64(100 + t as u64);
            [(); 2].map(|_| (0..1usize << params.num_vars).map(|_| rng.random()).collect())
        })
        .collect();
    let started = Instant::now();
    let mut times: Vec<f64> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let backend = backends[t % contexts].worker();
                let inputs = &inputs[t];
                scope.spawn(move || {
                    let mut times = Vec::with_capacity(reps);
                    for rep in 0..reps {
                        let t = Instant::now();
                        backend.prove(params, &inputs[rep % 2]).expect("proof");
                        times.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                    times
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("a prover thread")).collect()
    });
    let wall = started.elapsed().as_secs_f64();
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "{params}: {threads} threads x {reps} proofs on {contexts} context(s): {:.1} proofs/s; latency median {:.2} ms, p90 {:.2}, max {:.2}",
        times.len() as f64 / wall,
        at(0.5),
        at(0.9),
        at(1.0)
    );
}
