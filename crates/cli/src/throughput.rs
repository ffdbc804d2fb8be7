//! `whir bench --concurrency 1,2,4,8`: proofs per second with N proofs in flight on one GPU
//! context (a `ProofPool`), the latency of each proof, and the GPU memory each proof in flight
//! holds, beside Plonky3's own throughput with as many proofs in parallel on the host's cores as
//! help. Every proof of every level is byte-compared with the same input's proof at the first
//! level, and one proof per input is checked by the stock verifier. A proof's latency runs from
//! its start on a GPU to its end (time waiting for a free slot is not counted).

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use p3_baby_bear::BabyBear;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use whir_prover::{estimated_gpu_bytes, prove_stock, GpuProver, Params, Plonky3Pieces, PoolOptions, ProofPool};

use crate::output::OutputFile;

/// Distinct inputs proved in turn: enough that no two proofs in flight at once share one, so
/// the byte-identity check compares proofs made beside different neighbours.
const INPUTS: usize = 8;

/// What one shape measured.
#[derive(Serialize)]
pub struct ThroughputCell {
    vars: usize,
    fold: usize,
    rate: usize,
    proofs: usize,
    /// Plonky3's `WhirProver` on the host's cores: proofs/s with K proofs in parallel, per K.
    plonky3: Vec<Level>,
    /// The GPU backend through a proof pool: one entry per --concurrency value and device set.
    gpu: Vec<Level>,
}

/// GPUs proved on together: a label (`whir info`'s indices, or "default") and a backend each.
pub struct DeviceSet {
    pub label: String,
    pub backends: Vec<GpuProver>,
}

/// The device sets `--devices` names: none, the one default backend; else its contexts (with
/// `queues`, that many queues' contexts of each device), timed on the first device alone and
/// on all together.
pub fn device_sets(default: &GpuProver, devices: Option<&str>, queues: Option<usize>) -> Result<Vec<DeviceSet>> {
    let Some(spec) = devices else { return Ok(vec![DeviceSet { label: "default".into(), backends: vec![default.clone()] }]) };
    let adapters = whir_gpu::list_adapters();
    let indices: Vec<usize> = if spec.trim() == "all" {
        let found = whir_gpu::pool_adapters(&adapters);
        if found.is_empty() {
            bail!("--devices all: no hardware GPU adapter here (`whir info` lists {}); name adapters by index, e.g. --devices 0,0", adapters.len());
        }
        found
    } else {
        spec.split(',')
            .map(|t| {
                let i: usize = t
                    .trim()
                    .parse()
                    .map_err(|_| anyhow::anyhow!("--devices {spec}: {t:?} is not an adapter index; give `all` or indices from `whir info`, e.g. 0,1"))?;
                if i >= adapters.len() {
                    bail!("--devices {spec}: there is no adapter {i} (`whir info` lists {})", adapters.len());
                }
                Ok(i)
            })
            .collect::<Result<_>>()?
    };
    if indices.is_empty() || indices.len() > 64 {
        bail!("--devices {spec}: give 1 to 64 adapters");
    }
    let env = whir_gpu::GpuOptions::from_env()?;
    let driver = default.driver_options();
    // Each device's backends: one context, or one per queue.
    let per_device: Vec<Vec<GpuProver>> = indices
        .iter()
        .map(|&i| {
            let options = whir_gpu::GpuOptions { adapter: whir_gpu::AdapterSelector::Index(i), ..env.clone() };
            let opened = match queues {
                None => GpuProver::open(options).map(|b| vec![b]).map_err(anyhow::Error::from),
                Some(q) => GpuProver::open_queues(options, q).map_err(anyhow::Error::from),
            };
            let opened = opened.with_context(|| {
                format!("--devices: opening adapter {i} ({}){}", adapters[i], queues.map_or(String::new(), |q| format!(" with {q} queues")))
            })?;
            eprintln!("GPU [{i}]: {}", opened[0].context().summary());
            Ok(opened.into_iter().map(|b| b.with_driver_options(driver)).collect())
        })
        .collect::<Result<_>>()?;
    let queues_label = queues.map_or(String::new(), |q| format!(" x{q} queues"));
    let label = |n: usize| format!("{}{queues_label}", indices[..n].iter().map(|i| i.to_string()).collect::<Vec<_>>().join(","));
    let mut sets = vec![DeviceSet { label: label(1), backends: per_device[0].clone() }];
    if per_device.len() > 1 {
        sets.push(DeviceSet { label: label(per_device.len()), backends: per_device.into_iter().flatten().collect() });
    }
    Ok(sets)
}

/// The default backend alone, then `queues` contexts on queues of one device of the same
/// adapter (`GpuContext::on_queues`), timed together.
pub fn queue_sets(default: &GpuProver, queues: usize) -> Result<Vec<DeviceSet>> {
    let options = whir_gpu::GpuOptions::from_env()?;
    let driver = default.driver_options();
    let backends: Vec<GpuProver> =
        GpuProver::open_queues(options, queues).with_context(|| format!("--queues {queues}"))?.into_iter().map(|b| b.with_driver_options(driver)).collect();
    eprintln!("GPU, {queues} queues of one device: {}", backends[0].context().summary());
    Ok(vec![DeviceSet { label: "default".into(), backends: vec![default.clone()] }, DeviceSet { label: format!("{queues} queues"), backends }])
}

#[derive(Serialize, Clone)]
struct Level {
    /// The GPUs (`whir info` indices, or "default"; "host" for Plonky3).
    devices: String,
    /// Per GPU (Plonky3: proofs at once).
    in_flight: usize,
    proofs_per_s: f64,
    latency_p50_ms: f64,
    latency_p90_ms: f64,
    latency_max_ms: f64,
    /// Peak GPU buffer memory of 2N untimed proofs at this level from empty pools (pools kept
    /// while they run), per proof in flight.
    gpu_mib_per_proof: Option<f64>,
    /// Proof-of-work candidates a smallest-witness grinder tries per proof (the sum of every
    /// witness + 1, averaged over the level's proofs): Poseidon2 permutations the protocol asks
    /// of the GPU whatever the scheduling.
    grind_mperm_per_proof: Option<f64>,
    /// Buffers the timed proofs created afresh (not from the pools), MiB a proof: near 0 in
    /// steady state; each fresh GiB costs the driver time (docs/benchmarks-history.md).
    fresh_mib_per_proof: Option<f64>,
    /// Host time blocked waiting for the GPU, ms a proof (over every thread).
    wait_ms_per_proof: Option<f64>,
    /// The rest of a proof's latency, ms a proof: mean latency less the waiting (host work,
    /// submissions, locks). A level run slow by the host shows here, not in the waiting.
    host_ms_per_proof: Option<f64>,
    /// With --queue-profile: how busy the GPUs' queues were over the timed proofs.
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<QueueLevel>,
}

/// A level's queue occupancy from GPU timestamps (`--queue-profile`), summed over its GPUs.
#[derive(Serialize, Clone)]
struct QueueLevel {
    /// Time inside at least one submission, as a share of the time from the first profiled
    /// submission's start to the last one's end.
    busy_share: f64,
    busy_ms_per_proof: f64,
    /// The submissions' own GPU times summed (above busy where submissions overlapped).
    summed_ms_per_proof: f64,
    /// The queue idle between submissions (waiting for the host, or per-submission costs
    /// outside the timestamps).
    idle_ms_per_proof: f64,
    submissions_per_proof: f64,
}

/// How `run` measures.
pub struct ThroughputOptions {
    /// Proofs timed at each GPU level.
    pub proofs: usize,
    /// Plonky3 proofs in parallel, each count a level.
    pub plonky3_parallel: Vec<usize>,
    /// GPU warm-up before the levels.
    pub warmup_ms: u64,
    /// GPU timestamps around the timed proofs' submissions (`--queue-profile`).
    pub queue_profile: bool,
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn level(devices: &str, in_flight: usize, proofs: usize, wall: Duration, mut latencies: Vec<f64>, peak: Option<u64>, grind: Option<u64>) -> Level {
    latencies.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    Level {
        devices: devices.to_string(),
        in_flight,
        proofs_per_s: proofs as f64 / wall.as_secs_f64(),
        latency_p50_ms: quantile(&latencies, 0.5),
        latency_p90_ms: quantile(&latencies, 0.9),
        latency_max_ms: quantile(&latencies, 1.0),
        gpu_mib_per_proof: peak.map(|b| b as f64 / (1u64 << 20) as f64 / in_flight as f64),
        grind_mperm_per_proof: grind.map(|g| g as f64 / proofs as f64 / 1e6),
        fresh_mib_per_proof: None,
        wait_ms_per_proof: None,
        host_ms_per_proof: None,
        queue: None,
    }
}

/// Starts a queue profile on every context of `set`: true if all have one; else none is left
/// running (an adapter without timestamps inside encoders), said on stderr.
fn begin_queue_profiles(set: &DeviceSet) -> bool {
    let begun: Vec<bool> = set.backends.iter().map(|b| b.context().profiler().begin()).collect();
    if begun.iter().all(|&b| b) {
        return true;
    }
    for (b, _) in set.backends.iter().zip(&begun).filter(|(_, &on)| on) {
        let _ = b.context().profiler().end();
    }
    eprintln!("  --queue-profile: GPU {} has no timestamps inside encoders; no queue figures", set.label);
    false
}

/// Ends each context's profile of a level's timed proofs: the queues' occupancy, per proof
/// (over every context of the set).
fn queue_occupancy(set: &DeviceSet, proofs: usize) -> Result<QueueLevel> {
    let mut all = Vec::new();
    for b in &set.backends {
        let (_, q) = b.context().profiler().end_with_occupancy()?.context("a queue profile begun on this context was not running at its end")?;
        all.push(q);
    }
    let per_proof = |d: Duration| d.as_secs_f64() * 1e3 / proofs as f64;
    let sum = |f: fn(&whir_gpu::profile::QueueOccupancy) -> Duration| all.iter().map(f).sum::<Duration>();
    let (window, busy) = (sum(|q| q.window), sum(|q| q.busy));
    Ok(QueueLevel {
        busy_share: if window.is_zero() { 0.0 } else { busy.as_secs_f64() / window.as_secs_f64() },
        busy_ms_per_proof: per_proof(busy),
        summed_ms_per_proof: per_proof(sum(|q| q.summed)),
        idle_ms_per_proof: per_proof(window.saturating_sub(busy)),
        submissions_per_proof: all.iter().map(|q| q.submissions as f64).sum::<f64>() / proofs as f64,
    })
}

/// Plonky3 proving `proofs` proofs with `k` at once on the host (each itself parallel over the
/// cores, as `WhirProver` is).
fn plonky3_level(p: &Params, inputs: &[Vec<BabyBear>], k: usize, proofs: usize) -> Result<Level> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = Instant::now();
    let latencies: Result<Vec<f64>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..k)
            .map(|_| {
                std::thread::Builder::new().spawn_scoped(scope, || -> Result<Vec<f64>> {
                    let mut times = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= proofs {
                            return Ok(times);
                        }
                        times.push(prove_stock(p, &inputs[i % inputs.len()])?.as_secs_f64() * 1e3);
                    }
                })
            })
            .collect::<std::io::Result<Vec<_>>>()
            .with_context(|| format!("starting {k} Plonky3 prover threads failed; give a smaller --plonky3-parallel"))?;
        let mut all = Vec::new();
        for w in workers {
            all.extend(w.join().map_err(|_| anyhow::anyhow!("a Plonky3 prover thread panicked"))??);
        }
        Ok(all)
    });
    Ok(level("host", k, proofs, started.elapsed(), latencies?, None, None))
}

pub fn run(grid: &[Params], concurrency: &[usize], options: &ThroughputOptions, sets: &[DeviceSet], json_out: Option<&OutputFile>) -> Result<()> {
    let ThroughputOptions { proofs, ref plonky3_parallel, warmup_ms, queue_profile } = *options;
    let mut cells = Vec::new();
    for p in grid {
        if let Err(e) = p.config::<whir_gpu::GpuChallenger>() {
            eprintln!("n={} fold={} rate={}: skipped ({e})", p.num_vars, p.fold, p.log_inv_rate);
            continue;
        }
        eprintln!("n={} fold={} rate={}: {proofs} proofs a level", p.num_vars, p.fold, p.log_inv_rate);
        let mut rng = StdRng::seed_from_u64(p.num_vars as u64);
        let inputs: Vec<Vec<BabyBear>> = (0..INPUTS).map(|_| (0..1usize << p.num_vars).map(|_| rng.random()).collect()).collect();
        // Jobs name their input rather than own a copy: copying 2^n words for each job (taken
        // under the pool's job lock) would be timed as part of the GPU's throughput.
        let first = &sets[0].backends[0];
        let estimate = estimated_gpu_bytes(p, first.context().tuning(), &first.driver_options());
        let prove_all = |pool: &ProofPool, count: usize| pool.run_many(0..count, |_| estimate, |backend, &i| backend.prove(p, &inputs[i % INPUTS]));
        let all = &sets[sets.len() - 1].backends;

        let mut plonky3 = Vec::new();
        prove_stock(p, &inputs[0])?;
        for &k in plonky3_parallel.iter() {
            // K proofs at once hold K proofs' memory.
            let memory = crate::host_memory::machine();
            let one = whir_prover::estimated_cpu_bytes::<BabyBear, whir_prover::EF>(p, None)?;
            if one.saturating_mul(k as u64) > memory.bytes {
                bail!(
                    "--plonky3-parallel {k} at n = {}: {k} CPU proofs at once need an estimated {} MiB, over the {} MiB {}; give a smaller --plonky3-parallel",
                    p.num_vars,
                    one.saturating_mul(k as u64) >> 20,
                    memory.bytes >> 20,
                    memory.source
                );
            }
            // A quarter as many as the GPU's levels (each takes tens of times longer), and at
            // least two rounds of the K in parallel.
            let level = plonky3_level(p, &inputs, k, (proofs / 4).max(2 * k))?;
            eprintln!("  Plonky3, {k} in parallel: {:.2} proofs/s", level.proofs_per_s);
            plonky3.push(level);
        }

        // Warm the GPUs up (they clock down while the host proves).
        let pool = ProofPool::over(all.clone(), PoolOptions { in_flight: Some(concurrency.iter().copied().max().unwrap_or(1)) })?;
        let until = Instant::now() + Duration::from_millis(warmup_ms);
        while Instant::now() < until {
            for out in prove_all(&pool, pool.in_flight()) {
                out?;
            }
        }

        let mut reference: Vec<Option<Vec<u8>>> = vec![None; INPUTS];
        let mut levels = Vec::new();
        for &n in concurrency {
            for set in sets {
                let pool = ProofPool::over(set.backends.clone(), PoolOptions { in_flight: Some(n) })?;
                // Untimed first: 2N proofs a GPU from empty pools, whose high-water mark is the
                // level's memory, and which leave the pools holding what the level reuses (a
                // fresh buffer is slow to allocate, docs/benchmarks-history.md); the timed proofs
                // are the steady state.
                for b in &set.backends {
                    b.context().memory().trim_pools();
                    b.context().memory().reset_peak_buffer_bytes();
                }
                for out in prove_all(&pool, pool.in_flight() * 2) {
                    out?;
                }
                let peaks: Option<Vec<u64>> = set.backends.iter().map(|b| b.context().memory().peak_buffer_bytes()).collect();
                // Per proof in flight over every GPU (several contexts of one adapter each count
                // their own buffers).
                let peak = peaks.map(|p| p.iter().sum::<u64>() / set.backends.len() as u64);
                let costs: Vec<_> = set.backends.iter().map(|b| b.context().transfers().host_costs()).collect();
                let profiled = queue_profile && begin_queue_profiles(set);
                let started = Instant::now();
                let outputs = prove_all(&pool, proofs);
                let wall = started.elapsed();
                let (fresh, wait) = set.backends.iter().zip(&costs).fold((0u64, 0f64), |(f, w), (b, before)| {
                    let d = b.context().transfers().host_costs() - *before;
                    (f + d.fresh_buffer_bytes, w + d.wait.as_secs_f64())
                });
                // After the host costs: the profile's own readback is not the proofs'.
                let queue = if profiled { Some(queue_occupancy(set, proofs)?) } else { None };
                let mut latencies = Vec::with_capacity(proofs);
                let mut grind = 0u64;
                let what = |i: usize| format!("proof {i} with {n} in flight on GPU {}", set.label);
                for (i, out) in outputs.into_iter().enumerate() {
                    let out = out.with_context(|| what(i))?;
                    if out.path != "gpu" {
                        bail!("{} was made on the {} path, not the GPU's", what(i), out.path);
                    }
                    let file = out.proof_file(p);
                    match &reference[i % INPUTS] {
                        None => {
                            file.verify(p).with_context(|| format!("the stock verifier rejected {}", what(i)))?;
                            reference[i % INPUTS] = Some(out.proof.clone());
                        }
                        Some(bytes) if *bytes != out.proof => bail!("{} differs from the same input's proof made before", what(i)),
                        Some(_) => {}
                    }
                    let witnesses = file.pow_witnesses().with_context(|| what(i))?;
                    grind += witnesses.iter().map(|&w| w as u64 + 1).sum::<u64>();
                    latencies.push(out.total().as_secs_f64() * 1e3);
                }
                let wait_ms = wait * 1e3 / proofs as f64;
                let host_ms = latencies.iter().sum::<f64>() / proofs as f64 - wait_ms;
                let level = Level {
                    fresh_mib_per_proof: Some(fresh as f64 / (1u64 << 20) as f64 / proofs as f64),
                    wait_ms_per_proof: Some(wait_ms),
                    host_ms_per_proof: Some(host_ms),
                    queue,
                    ..level(&set.label, n, proofs, wall, latencies, peak, Some(grind))
                };
                eprintln!(
                    "  GPU {}, {n} in flight each: {:.2} proofs/s, latency p50 {:.1} ms, {:.1} M grind candidates, {:.1} MiB of fresh buffers, {wait_ms:.1} ms waiting and {host_ms:.1} ms else a proof",
                    set.label,
                    level.proofs_per_s,
                    level.latency_p50_ms,
                    grind as f64 / proofs as f64 / 1e6,
                    fresh as f64 / (1u64 << 20) as f64 / proofs as f64,
                );
                if let Some(q) = &level.queue {
                    eprintln!(
                        "    queue (timestamped): busy {:.1}% of the time from the first submission to the last, {:.2} ms of submissions a proof ({:.2} ms summed), {:.2} ms idle a proof, {:.1} submissions a proof",
                        q.busy_share * 100.0,
                        q.busy_ms_per_proof,
                        q.summed_ms_per_proof,
                        q.idle_ms_per_proof,
                        q.submissions_per_proof
                    );
                }
                levels.push(level);
            }
        }
        cells.push(ThroughputCell { vars: p.num_vars, fold: p.fold, rate: p.log_inv_rate, proofs, plonky3, gpu: levels });
        if let Some(out) = json_out {
            out.write(serde_json::to_string_pretty(&cells)?.as_bytes())?;
        }
    }
    if cells.is_empty() {
        bail!("every shape of the grid was skipped as infeasible; nothing was measured");
    }
    print_table(&cells);
    Ok(())
}

fn print_table(cells: &[ThroughputCell]) {
    println!("| n | fold | rate | GPUs | in flight each | GPU proofs/s | vs one stream | vs the first GPU alone | latency p50 / p90 / max ms | GPU MiB per proof in flight | grind M candidates a proof | Plonky3 best proofs/s (in parallel) | GPU / Plonky3 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for c in cells {
        let best = c.plonky3.iter().max_by(|a, b| a.proofs_per_s.total_cmp(&b.proofs_per_s));
        let one = c.gpu.first().map(|l| l.proofs_per_s);
        let first_alone = |n: usize| c.gpu.iter().find(|l| l.in_flight == n).map(|l| l.proofs_per_s);
        let first_label = c.gpu.first().map(|l| l.devices.clone()).unwrap_or_default();
        for l in &c.gpu {
            let vs_first = match first_alone(l.in_flight) {
                Some(f) if l.devices != first_label => format!("{:.2}x", l.proofs_per_s / f),
                _ => "-".into(),
            };
            println!(
                "| {} | {} | {} | {} | {} | {:.1} | {} | {} | {:.1} / {:.1} / {:.1} | {} | {} | {} | {} |",
                c.vars,
                c.fold,
                c.rate,
                l.devices,
                l.in_flight,
                l.proofs_per_s,
                one.map_or("-".into(), |o| format!("{:.2}x", l.proofs_per_s / o)),
                vs_first,
                l.latency_p50_ms,
                l.latency_p90_ms,
                l.latency_max_ms,
                l.gpu_mib_per_proof.map_or("-".into(), |m| format!("{m:.0}")),
                l.grind_mperm_per_proof.map_or("-".into(), |g| format!("{g:.1}")),
                best.map_or("-".into(), |b| format!("{:.2} ({})", b.proofs_per_s, b.in_flight)),
                best.map_or("-".into(), |b| format!("{:.1}x", l.proofs_per_s / b.proofs_per_s)),
            );
        }
    }
}
