//! `whir bench`: for each (n, fold, rate) cell, in one process, the stock Plonky3 prover, our CPU
//! backend and our GPU backend; medians of R reps, speedup columns, a progress bar, a table on
//! stdout, optional JSON and an SVG plot of speedup against n.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use p3_baby_bear::BabyBear;
use p3_koala_bear::KoalaBear;
use plotters::prelude::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use serde_json::json;
use whir_prover::times::Step;
use whir_prover::{prove_stock, CpuProver, GpuMode, GpuProver, ParamSource, Params, Plonky3Pieces, ProverField, Soundness};

use crate::FieldChoice;

use crate::output::OutputFile;

mod keccak;
mod tables;
mod zk;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Numbers of variables, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "20,22,24")]
    vars: Vec<usize>,
    /// Folding factors, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    fold: Vec<usize>,
    /// log2 inverse rates, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    rate: Vec<usize>,
    #[command(flatten)]
    security: crate::SecurityArgs,
    /// The field every prover (Plonky3's included) proves over, with its degree-4 extension and
    /// Poseidon2.
    #[arg(long, value_enum, default_value_t = FieldChoice::Babybear)]
    field: FieldChoice,
    /// Degree of the extension of the challenges: 4, or 5 or 8 (128 bits). Over 5 and 8 single
    /// polynomials are timed: Plonky3's prover, and the GPU's resident driver beside it.
    #[arg(long, default_value_t = 4, value_parser = crate::parse_degree)]
    extension: usize,
    /// A named configuration (as `whir prove --config`): field, extension, soundness, security
    /// and PoW budget in one.
    #[arg(long, value_parser = whir_verifier::named_config, conflicts_with_all = ["field", "extension", "security", "pow_bits", "soundness", "leaf"])]
    config: Option<&'static whir_verifier::NamedConfig>,
    /// Repetitions per cell (medians are reported), 1 to 1000.
    #[arg(long, default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    reps: usize,
    /// Skip the GPU backend.
    #[arg(long)]
    no_gpu: bool,
    /// Skip the GPU pieces path (Plonky3's prover with our GPU encoder, MMCS and grinder).
    #[arg(long)]
    no_pieces: bool,
    /// Untimed GPU proofs before each GPU path's repetitions in a cell, for at least this long
    /// (at least one): the GPU idles, and clocks down, while the CPU provers run.
    /// At most 600000 (ten minutes).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=MAX_WARMUP_MS))]
    gpu_warmup_ms: u64,
    /// One more GPU proof per cell with every dispatch in a compute pass of its own between
    /// GPU timestamps: its GPU time per kernel, printed and in the JSON (`gpu_kernels`). The
    /// passes cost a little each, so the sum is above the proof's usual GPU time. Adapters
    /// without timestamp queries report nothing.
    #[arg(long, conflicts_with_all = ["concurrency", "no_gpu"])]
    kernel_profile: bool,
    /// Write the cells as JSON here (rewritten after every cell).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Plot the GPU backend's speedup over Plonky3 here (SVG).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Replace existing --json / --plot files.
    #[arg(long)]
    force: bool,
    /// Time a multi-table workload through the PCS (Plonky3's `WhirProver` beside ours) instead
    /// of the single polynomial: a preset (zkvm: 20 tables, 2^24 cells; zkvm-small: 2^16) or
    /// tables `VARSxCOLUMNS`, optionally `COUNT*` (e.g. `22x2,3*12x20`). Each table is opened at
    /// one transcript point, every column and the successor views of half of them. Uses --fold
    /// and --rate, not --vars.
    #[arg(long)]
    tables: Option<String>,
    /// Time Plonky3's hiding PCS (`HidingWhirPcs`, zero-knowledge WHIR: ell_zk 4, masks at rate
    /// 1/2) on one polynomial per (n, fold, rate) at one point, over Plonky3's CPU pieces and over
    /// the GPU's (DFT, Merkle trees, grinder) in one process: the proofs byte-identical for one
    /// generator seed, and verified.
    #[arg(long, conflicts_with_all = ["tables", "plot"])]
    zk: bool,
    /// p3-sumcheck's layout of the --tables witness: suffix (`SuffixProver`, `Witness::new`) or
    /// prefix (`PrefixProver`, `Witness::new_interleaved`).
    #[arg(long, value_enum, default_value_t = crate::TableLayout::Suffix, requires = "tables")]
    layout: crate::TableLayout,
    /// The hash of the trees and the transcript: poseidon2 (the default), or keccak (Plonky3's
    /// Keccak configuration, p3-whir's Keccak test: Keccak trees, the Keccak-256 transcript;
    /// single polynomials over the degree-4 extension, Plonky3's prover beside our resident one,
    /// each proof compared with `WhirProver`'s and verified; with --zk, `HidingWhirPcs` beside
    /// the resident hiding PCS).
    #[arg(long, value_enum, default_value_t = crate::HashChoice::Poseidon2)]
    hash: crate::HashChoice,
    /// The challenger the --tables PCS runs over, Plonky3's and ours alike: gpu (`GpuChallenger`:
    /// round heads, sumcheck chains and grinds played on the device) or plonky3 (Plonky3's own
    /// `DuplexChallenger`: every transcript step on the host). Plonky3's duplex grinder returns
    /// any passing witness, so over it the proofs are compared by verification, not bytes.
    #[arg(long, value_enum, default_value_t = ChallengerChoice::Gpu, requires = "tables")]
    challenger: ChallengerChoice,
    /// Throughput instead of latency: for each shape, proofs per second with each of these
    /// numbers of proofs in flight on the GPU (a proof pool sharing one context), their
    /// latencies and GPU memory, beside Plonky3 proving several at once on the host's cores.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["tables", "plot", "no_gpu"])]
    concurrency: Vec<usize>,
    /// With --concurrency: proofs timed at each GPU level (1 to 100000); Plonky3 proves a
    /// quarter as many at each of its levels (at least two rounds).
    #[arg(long, default_value_t = 32, requires = "concurrency", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    proofs: usize,
    /// With --concurrency: the GPUs to prove on at once, a context each: `all` (every hardware
    /// adapter of one backend, as `whir info` lists them) or adapter indices (`0,1`; an index
    /// twice opens two contexts on that adapter). Each level is timed on the first alone and on
    /// all together. Default: the one adapter `WHIR_ADAPTER` or the high-performance choice names.
    #[arg(long, requires = "concurrency")]
    devices: Option<String>,
    /// With --concurrency: also prove on Q queues of the one adapter, a context each over one
    /// device (Vulkan, its compute-only queue family where it has one; `GpuContext::on_queues`),
    /// so that proofs on different queues are not kept in one queue's order. Each level is
    /// timed on the usual one-queue context and on the Q queues together, in flight counted per
    /// queue. With --devices: Q queues on each GPU, timed on the first GPU's alone and on all.
    #[arg(long, requires = "concurrency", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=whir_gpu::MAX_QUEUES as u64))]
    queues: Option<usize>,
    /// With --concurrency: Plonky3 proofs run in parallel on the host, each count measured (the
    /// best is the comparison).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4", requires = "concurrency",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_PLONKY3_PARALLEL as u64))]
    plonky3_parallel: Vec<usize>,
    /// With --concurrency: GPU timestamps around every submission of the timed proofs, to
    /// report how busy the device's queue was (its share of the time from the first
    /// submission's start to the last one's end inside a submission, GPU and idle ms a proof). The timestamps cost each submission a little, so
    /// the level's own figures are not the unprofiled ones. Adapters without timestamps inside
    /// encoders report nothing.
    #[arg(long, requires = "concurrency")]
    queue_profile: bool,
}

const MAX_WARMUP_MS: u64 = 600_000;

/// The challenger `whir bench --tables` runs the PCS over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ChallengerChoice {
    /// `GpuChallenger`: the fast transcript.
    Gpu,
    /// Plonky3's `DuplexChallenger<F, Poseidon2, 16, 8>`.
    Plonky3,
}
/// Most Plonky3 proofs `--plonky3-parallel` runs at once (each on a thread of its own, each
/// with a CPU proof's memory: the level is also checked against the machine's memory).
pub const MAX_PLONKY3_PARALLEL: usize = 256;

/// `values` without repeats, in their order, saying on stderr which repeats were dropped.
fn distinct(flag: &str, values: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &v in values {
        if out.contains(&v) {
            eprintln!("note: {flag} {v} is given more than once; its cells run once");
        } else {
            out.push(v);
        }
    }
    out
}

#[derive(Serialize)]
struct Cell {
    /// The field every prover of the cell proved over.
    field: &'static str,
    /// The Poseidon2 width its Merkle leaves hash with.
    leaf_width: usize,
    vars: usize,
    fold: usize,
    rate: usize,
    /// Why the cell was not run (infeasible parameters), if it was not.
    skipped: Option<String>,
    stock_ms: Option<f64>,
    cpu_ms: Option<f64>,
    /// The GPU backend: our driver over resident codewords (medians).
    gpu_ms: Option<f64>,
    gpu_commit_ms: Option<f64>,
    gpu_open_ms: Option<f64>,
    /// Its phases: codewords (encode + Merkle + openings), PoW, sumcheck + other.
    gpu_codewords_ms: Option<f64>,
    gpu_pow_ms: Option<f64>,
    gpu_sumcheck_other_ms: Option<f64>,
    /// Inside those (medians): encode + Merkle, openings, claim phase + initial fold, round
    /// sumchecks, OOD answers.
    gpu_commit_ms_detail: Option<f64>,
    gpu_openings_ms: Option<f64>,
    gpu_claims_ms: Option<f64>,
    gpu_rounds_ms: Option<f64>,
    gpu_ood_ms: Option<f64>,
    /// Its host <-> GPU traffic per proof.
    gpu_mib_up: Option<f64>,
    gpu_kib_down: Option<f64>,
    gpu_submissions: Option<u64>,
    /// The GPU pieces path (Plonky3's `WhirProver` with our GPU encoder, MMCS, grinder).
    pieces_ms: Option<f64>,
    pieces_codewords_ms: Option<f64>,
    /// One more GPU proof after the timed ones, profiled with GPU timestamps: per step (summed
    /// over rounds) wall and GPU ms, the GPU's busy time in all, and the per-round breakdown.
    gpu_profile_steps: Option<serde_json::Value>,
    gpu_profile_wall_ms: Option<f64>,
    gpu_profile_busy_ms: Option<f64>,
    gpu_profile_rounds: Option<serde_json::Value>,
    /// With --kernel-profile: one more proof's GPU time per kernel, most first.
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_kernels: Option<Vec<KernelTime>>,
    /// Device buffer-memory high-water mark of the cell's first GPU proof, pools emptied before it.
    gpu_peak_mib: Option<f64>,
    /// The high-water mark of one more proof that keeps no idle buffers (pool budget 0): what
    /// the proof has live at once.
    gpu_peak_live_mib: Option<f64>,
}

/// Proves until `ms` milliseconds have passed since the call (untimed).
fn warm_up<F: ProverField>(gpu: &GpuProver<F>, p: &Params, evals: &[F], ms: u64) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
{
    busy_for(ms, || gpu.prove(p, evals).map(|_| ()).map_err(Into::into))
}

/// Runs `work` until `ms` milliseconds have passed since the call (untimed).
fn busy_for(ms: u64, mut work: impl FnMut() -> Result<()>) -> Result<()> {
    let until = std::time::Instant::now() + Duration::from_millis(ms);
    while std::time::Instant::now() < until {
        work()?;
    }
    Ok(())
}

/// `run` on a context that keeps no idle buffers (pool budget 0, pools emptied, the high-water
/// mark reset), so the mark it leaves is what the run has live at once; the budget is restored.
fn without_pools<T>(ctx: &whir_gpu::GpuContext, run: impl FnOnce() -> Result<T>) -> Result<T> {
    let memory = ctx.memory();
    let budget = memory.pool_budget();
    memory.set_pool_budget(0);
    memory.trim_pools();
    memory.reset_peak_buffer_bytes();
    let ran = run();
    memory.set_pool_budget(budget);
    ran
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("finite times"));
    v[v.len() / 2]
}

/// A time in ms with one decimal, "-" where it was not measured.
fn fmt_ms(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.1}"))
}

/// Commit + open, where both were measured.
fn total_ms(commit: Option<f64>, open: Option<f64>) -> Option<f64> {
    commit.zip(open).map(|(c, o)| c + o)
}

/// `reference / ours` as "N.NNx", "-" where either is missing.
fn speedup(reference: Option<f64>, ours: Option<f64>) -> String {
    reference.zip(ours).map_or("-".into(), |(r, o)| format!("{:.2}x", r / o))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl BenchArgs {
    /// Sets the flags `--config` names.
    pub(crate) fn apply_config(&mut self) {
        if let Some(config) = self.config {
            self.security.apply(config, &mut self.field, &mut self.extension);
        }
    }
}

pub fn run(args: BenchArgs) -> Result<()> {
    // Every WHIR_* value is checked before any work, as `prove` and `info` check them: a bad
    // one is an error naming the variable, not a silent run without the GPU.
    whir_gpu::GpuOptions::from_env()?;
    whir_prover::DriverOptions::from_env()?;
    if args.extension != 4 && (!args.concurrency.is_empty() || args.plot.is_some()) {
        bail!("--extension {} times proofs one at a time (Plonky3's prover and the GPU's); drop --concurrency and --plot", args.extension);
    }
    if args.field != FieldChoice::Babybear && !args.concurrency.is_empty() {
        bail!("--concurrency measures BabyBear proofs; drop --field {} (or time its proofs one at a time without --concurrency)", args.field.name());
    }
    if args.hash == crate::HashChoice::Keccak {
        return match args.field {
            FieldChoice::Babybear => keccak::run_keccak::<p3_baby_bear::BabyBear>(&args),
            FieldChoice::Koalabear => keccak::run_keccak::<p3_koala_bear::KoalaBear>(&args),
        };
    }
    if args.zk && !args.concurrency.is_empty() {
        return zk::run_zk_throughput(&args);
    }
    if args.zk {
        return crate::with_extension!((args.field, args.extension), |F, E| zk::run_zk::<F, E>(&args));
    }
    if let Some(spec) = &args.tables {
        return crate::with_extension!((args.field, args.extension), |F, E| tables::run_tables::<F, E>(&args, spec));
    }
    let soundness = Soundness::parse(&args.security.soundness)?;
    if args.concurrency.contains(&0) {
        bail!("--concurrency 0: each level needs at least one proof in flight");
    }
    if args.plonky3_parallel.contains(&0) {
        bail!("--plonky3-parallel 0: give counts of at least 1");
    }
    // Output paths are checked before the first proof; an existing file needs --force.
    let json_out = args.json.as_deref().map(|p| OutputFile::prepare(p, "--json", args.force, &[])).transpose()?;
    let plot_out = args.plot.as_deref().map(|p| OutputFile::prepare(p, "--plot", args.force, &[])).transpose()?;
    if let (Some(j), Some(p)) = (&json_out, &plot_out) {
        if j.same_target(p) {
            bail!("--json and --plot both name {}; the plot would replace the JSON: give them different files", j.path().display());
        }
    }
    if plot_out.is_some() && args.no_gpu {
        bail!("--plot charts the GPU backend's speedup over Plonky3; with --no-gpu there is nothing to chart: drop --plot or --no-gpu");
    }
    eprintln!("CPU threads for Plonky3 and our CPU backend: {}", whir_gpu::cpu_threads());
    if args.extension != 4 {
        let grid = grid_of(&args, soundness);
        return crate::with_extension!((args.field, args.extension), |F, E| {
            let gpu = if args.no_gpu {
                None
            } else {
                match crate::open_gpu::<F>(whir_gpu::GpuOptions::from_env()?) {
                    Ok(g) => {
                        eprintln!("GPU: {}", g.context().summary());
                        Some(g.with_driver_options(whir_prover::DriverOptions::from_env()?))
                    }
                    Err(e) => {
                        eprintln!("no GPU backend ({e}); timing Plonky3 only");
                        None
                    }
                }
            };
            run_extension_grid::<F, E>(&args, &grid, gpu, json_out)
        });
    }
    let gpu = if args.no_gpu {
        None
    } else {
        match GpuProver::open_default() {
            Ok(g) => {
                eprintln!("GPU: {}", g.context().summary());
                Some(g)
            }
            Err(e) if plot_out.is_some() => {
                bail!("no GPU backend ({e}), so --plot would chart nothing: drop --plot to time Plonky3 and our CPU backend only")
            }
            Err(e) => {
                eprintln!("no GPU backend ({e}); timing Plonky3 and our CPU backend only");
                None
            }
        }
    };
    let grid = grid_of(&args, soundness);
    if !args.concurrency.is_empty() {
        let Some(gpu) = &gpu else { bail!("--concurrency measures the GPU backend, and there is none here") };
        let levels = distinct("--concurrency", &args.concurrency);
        let sets = match (args.queues, args.devices.as_deref()) {
            (Some(q), None) => crate::throughput::queue_sets(gpu, q)?,
            (queues, devices) => crate::throughput::device_sets(gpu, devices, queues)?,
        };
        let options = crate::throughput::ThroughputOptions {
            proofs: args.proofs,
            plonky3_parallel: distinct("--plonky3-parallel", &args.plonky3_parallel),
            warmup_ms: args.gpu_warmup_ms,
            queue_profile: args.queue_profile,
        };
        return crate::throughput::run(&grid, &levels, &options, &sets, json_out.as_ref());
    }
    match args.field {
        FieldChoice::Babybear => run_grid::<BabyBear>(&args, &grid, gpu, json_out, plot_out),
        FieldChoice::Koalabear => {
            let gpu = gpu.map(|g| GpuProver::<KoalaBear>::over(g.context().clone()).with_driver_options(g.driver_options()));
            run_grid::<KoalaBear>(&args, &grid, gpu, json_out, plot_out)
        }
    }
}

/// The grid's shapes: every (n, fold, rate) of the flags, one opening point.
fn grid_of(args: &BenchArgs, soundness: Soundness) -> Vec<Params> {
    let mut grid = Vec::new();
    let (vars, folds, rates) = (distinct("--vars", &args.vars), distinct("--fold", &args.fold), distinct("--rate", &args.rate));
    for &num_vars in &vars {
        for &fold in &folds {
            for &log_inv_rate in &rates {
                grid.push(Params {
                    num_vars,
                    fold,
                    log_inv_rate,
                    security_bits: args.security.security,
                    pow_bits: args.security.pow_bits,
                    soundness,
                    points: 1,
                    leaf: args.security.leaf,
                });
            }
        }
    }
    grid
}

/// Plonky3's `WhirProver` over `F` with its challenges in `E` at every shape of `grid` (its own
/// any-witness grinder, as `whir bench` times it for degree 4), and where there is a GPU its
/// resident driver beside it, warmed up first: the medians of the
/// repetitions, the ratio, the GPU's peak memory; or why a shape is infeasible.
fn run_extension_grid<F: ProverField, E: crate::GpuProvable<F>>(
    args: &BenchArgs,
    grid: &[Params],
    gpu: Option<GpuProver<F>>,
    json_out: Option<OutputFile>,
) -> Result<()>
where
    rand::distr::StandardUniform: rand::distr::Distribution<F>,
{
    if gpu.is_none() {
        eprintln!("{}: Plonky3 only (no GPU)", E::NAME);
    }
    let mut cells = Vec::new();
    println!("| n | fold | rate | extension | Plonky3 ms | GPU ms | speedup | GPU peak MiB (pools kept / live) |");
    println!("|---|---|---|---|---|---|---|---|");
    for p in grid {
        if let Err(e) = p
            .config_over::<E, whir_gpu::GpuChallenger<F>>()
            .map(|_| ())
            .map_err(anyhow::Error::from)
            .and_then(|()| Ok(crate::host_memory::machine().check::<F, E>(p, None)?))
        {
            println!("| {} | {} | {} | {} | skipped: {e} | | | |", p.num_vars, p.fold, p.log_inv_rate, E::NAME);
            cells.push(json!({"vars": p.num_vars, "fold": p.fold, "rate": p.log_inv_rate, "field": F::NAME, "extension": E::NAME, "skipped": e.to_string()}));
            if let Some(out) = &json_out {
                out.write(serde_json::to_string_pretty(&cells)?.as_bytes())?;
            }
            continue;
        }
        let mut rng = StdRng::seed_from_u64(p.num_vars as u64);
        let evals: Vec<F> = (0..1usize << p.num_vars).map(|_| rng.random()).collect();
        // One untimed proof first (the CPU pools come up), then the repetitions.
        whir_prover::prove_stock_over::<F, E>(p, &evals)?;
        let times = (0..args.reps).map(|_| Ok(ms(whir_prover::prove_stock_over::<F, E>(p, &evals)?))).collect::<Result<Vec<f64>>>()?;
        let stock = median(times);
        let mut cell = json!({"vars": p.num_vars, "fold": p.fold, "rate": p.log_inv_rate, "field": F::NAME, "extension": E::NAME, "leaf_width": p.leaf.width(), "stock_ms": stock});
        let mut gpu_cols = String::from(" | |");
        if let Some(g) = &gpu {
            let prove = || -> Result<whir_prover::ProverOutput<F>> { Ok(g.prove_resident_over::<E>(p, &evals)?) };
            // Warmed up in each cell (its clocks drop while Plonky3 runs; the first proof builds
            // the shape's pipelines), as the degree-4 grid does.
            prove()?;
            busy_for(args.gpu_warmup_ms, || prove().map(|_| ()))?;
            let mut times = Vec::new();
            let mut peak = 0u64;
            for _ in 0..args.reps {
                let started = std::time::Instant::now();
                let out = prove()?;
                times.push(ms(started.elapsed()));
                peak = peak.max(out.peak_gpu_bytes.unwrap_or(0));
            }
            let gpu_ms = median(times);
            // One more proof without idle pooled buffers: what it has live at once.
            let live = without_pools(g.context(), || prove().map(|out| out.peak_gpu_bytes.unwrap_or(0)))?;
            cell["gpu_ms"] = json!(gpu_ms);
            cell["speedup"] = json!(stock / gpu_ms);
            cell["peak_gpu_bytes"] = json!(peak);
            cell["peak_live_gpu_bytes"] = json!(live);
            if args.kernel_profile {
                cell["gpu_kernels"] = json!(kernel_profile(g.context(), || prove().map(|_| ()))?);
            }
            gpu_cols = format!(" {gpu_ms:.1} | {:.1}x | {:.0} / {:.0} |", stock / gpu_ms, mib(peak), mib(live));
        }
        println!("| {} | {} | {} | {} | {stock:.1} |{gpu_cols}", p.num_vars, p.fold, p.log_inv_rate, E::NAME);
        cells.push(cell);
        if let Some(out) = &json_out {
            out.write(serde_json::to_string_pretty(&cells)?.as_bytes())?;
        }
    }
    if cells.iter().all(|c| c.get("skipped").is_some()) {
        bail!("every cell of the grid was skipped as infeasible over {}; nothing was measured", E::NAME);
    }
    Ok(())
}

/// Times Plonky3, our CPU backend and the GPU paths over `F` at every shape of `grid`, and
/// reports them.
fn run_grid<F: ProverField>(
    args: &BenchArgs,
    grid: &[Params],
    gpu: Option<GpuProver<F>>,
    json_out: Option<OutputFile>,
    plot_out: Option<OutputFile>,
) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
    rand::distr::StandardUniform: rand::distr::Distribution<F>,
{
    eprintln!("field: {}^4", F::NAME);
    let reps = args.reps;
    let pieces = gpu.clone().filter(|_| !args.no_pieces).map(|g| g.with_mode(GpuMode::Pieces));
    let runs_per_cell = reps * (2 + usize::from(gpu.is_some()) + usize::from(pieces.is_some()));
    // (Plus untimed warm-up proofs per GPU path and cell, for --gpu-warmup-ms, not counted by the bar.)
    let bar = ProgressBar::new((grid.len() * runs_per_cell) as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} proofs, {elapsed} {msg}").expect("template"));
    let mut cells = Vec::new();
    let mut warmed = false;
    for p in grid {
        bar.set_message(format!("n={} fold={} rate={}", p.num_vars, p.fold, p.log_inv_rate));
        let mut cell = Cell {
            field: F::NAME,
            leaf_width: p.leaf.width(),
            vars: p.num_vars,
            fold: p.fold,
            rate: p.log_inv_rate,
            skipped: None,
            stock_ms: None,
            cpu_ms: None,
            gpu_ms: None,
            gpu_commit_ms: None,
            gpu_open_ms: None,
            gpu_codewords_ms: None,
            gpu_pow_ms: None,
            gpu_sumcheck_other_ms: None,
            gpu_commit_ms_detail: None,
            gpu_openings_ms: None,
            gpu_claims_ms: None,
            gpu_rounds_ms: None,
            gpu_ood_ms: None,
            gpu_mib_up: None,
            gpu_kib_down: None,
            gpu_submissions: None,
            pieces_ms: None,
            pieces_codewords_ms: None,
            gpu_profile_steps: None,
            gpu_profile_wall_ms: None,
            gpu_profile_busy_ms: None,
            gpu_profile_rounds: None,
            gpu_kernels: None,
            gpu_peak_mib: None,
            gpu_peak_live_mib: None,
        };
        if let Err(e) = p.config::<whir_gpu::GpuChallenger<F>>() {
            if p.validate(ParamSource::Flags).is_err() {
                // A flag no cell can take (e.g. --pow-bits 40): stop before any proof.
                return Err(e.into());
            }
            cell.skipped = Some(e.to_string());
            bar.inc(runs_per_cell as u64);
            cells.push(cell);
            continue;
        }
        // Plonky3 and our CPU backend prove every cell: one they cannot hold is skipped.
        if let Err(e) = crate::host_memory::machine().check::<F, whir_prover::EF<F>>(p, None) {
            cell.skipped = Some(e.to_string());
            bar.inc(runs_per_cell as u64);
            cells.push(cell);
            continue;
        }
        let mut rng = StdRng::seed_from_u64(p.num_vars as u64);
        let evals: Vec<F> = (0..1usize << p.num_vars).map(|_| rng.random()).collect();
        let (mut stock, mut cpu, mut g, mut gc, mut go) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut pc, mut pcw) = (Vec::new(), Vec::new());
        let mut phases: [Vec<f64>; 3] = Default::default();
        let mut details: [Vec<f64>; 5] = Default::default();
        let mut traffic = None;
        if !warmed {
            // One untimed proof of each kind first: pipelines compile, GPU clocks and the CPU
            // pools come up, so the first cell is not charged for them.
            warmed = true;
            prove_stock(p, &evals)?;
            CpuProver.prove(p, &evals)?;
            for b in gpu.iter().chain(&pieces) {
                b.prove(p, &evals)?;
            }
        }
        // Each prover's repetitions run back to back: a GPU left idle while CPU provers run
        // drops its clocks (docs/benchmarks-history.md), which interleaving would charge to the GPU.
        for _ in 0..reps {
            stock.push(ms(prove_stock(p, &evals)?));
            bar.inc(1);
        }
        for _ in 0..reps {
            let out = CpuProver.prove(p, &evals)?;
            cpu.push(ms(out.commit_time + out.open_time));
            bar.inc(1);
        }
        if let Some(gpu) = &gpu {
            // One untimed GPU proof first: the GPU idled (and clocked down) while the CPU
            // provers ran, and a proving service keeps it busy. Its pools start empty, so its
            // high-water mark is this cell's own.
            gpu.context().memory().trim_pools();
            let first = gpu.prove(p, &evals)?;
            cell.gpu_peak_mib = first.peak_gpu_bytes.map(mib);
            let lean = without_pools(gpu.context(), || Ok(gpu.prove(p, &evals)?))?;
            cell.gpu_peak_live_mib = lean.peak_gpu_bytes.map(mib);
            warm_up(gpu, p, &evals, args.gpu_warmup_ms)?;
            for _ in 0..reps {
                let out = gpu.prove(p, &evals)?;
                g.push(ms(out.commit_time + out.open_time));
                gc.push(ms(out.commit_time));
                go.push(ms(out.open_time));
                for (acc, d) in phases.iter_mut().zip([out.phases.codewords(), out.phases.pow, out.sumcheck_and_other()]) {
                    acc.push(ms(d));
                }
                let ph = &out.phases;
                for (acc, d) in details.iter_mut().zip([ph.commit, ph.open, ph.claims, ph.sumcheck, ph.ood]) {
                    acc.push(ms(d));
                }
                traffic = out.transfers;
                bar.inc(1);
            }
            // Profiled after the timed repetitions (timestamps cost two command buffers per
            // submission), with the GPU as warm as they left it.
            let profiled = gpu.clone().with_profile(true).prove(p, &evals)?;
            if let Some(b) = &profiled.breakdown {
                let steps: serde_json::Map<_, _> =
                    Step::ALL.iter().map(|&s| (s.name().to_string(), json!({"wall_ms": ms(b.total(s).wall), "gpu_ms": b.total(s).gpu.map(ms)}))).collect();
                cell.gpu_profile_steps = Some(steps.into());
                cell.gpu_profile_wall_ms = Some(ms(profiled.total()));
                let busy: Vec<f64> = Step::ALL.iter().filter_map(|&s| b.total(s).gpu.map(ms)).collect();
                cell.gpu_profile_busy_ms = (!busy.is_empty()).then(|| busy.iter().sum());
                cell.gpu_profile_rounds = Some(crate::breakdown_json(b));
            }
            if args.kernel_profile {
                cell.gpu_kernels = kernel_profile(gpu.context(), || gpu.prove(p, &evals).map(|_| ()).map_err(Into::into))?;
            }
        }
        if let Some(pieces) = &pieces {
            pieces.prove(p, &evals)?;
            warm_up(pieces, p, &evals, args.gpu_warmup_ms)?;
            for _ in 0..reps {
                let out = pieces.prove(p, &evals)?;
                pc.push(ms(out.commit_time + out.open_time));
                pcw.push(ms(out.phases.codewords()));
                bar.inc(1);
            }
        }
        cell.stock_ms = Some(median(stock));
        cell.cpu_ms = Some(median(cpu));
        if !g.is_empty() {
            cell.gpu_ms = Some(median(g));
            cell.gpu_commit_ms = Some(median(gc));
            cell.gpu_open_ms = Some(median(go));
            let [c, p, o] = phases;
            cell.gpu_codewords_ms = Some(median(c));
            cell.gpu_pow_ms = Some(median(p));
            cell.gpu_sumcheck_other_ms = Some(median(o));
            let [dc, dop, dcl, dr, dood] = details;
            cell.gpu_commit_ms_detail = Some(median(dc));
            cell.gpu_openings_ms = Some(median(dop));
            cell.gpu_claims_ms = Some(median(dcl));
            cell.gpu_rounds_ms = Some(median(dr));
            cell.gpu_ood_ms = Some(median(dood));
            cell.gpu_mib_up = traffic.map(|t| mib(t.bytes_up));
            cell.gpu_kib_down = traffic.map(|t| t.bytes_down as f64 / 1024.0);
            cell.gpu_submissions = traffic.map(|t| t.submissions);
        }
        if !pc.is_empty() {
            cell.pieces_ms = Some(median(pc));
            cell.pieces_codewords_ms = Some(median(pcw));
        }
        cells.push(cell);
        // Written after every cell, so a run cut short keeps what it measured.
        if let Some(out) = &json_out {
            out.write(serde_json::to_string_pretty(&cells)?.as_bytes())?;
        }
    }
    bar.finish_and_clear();

    println!("| n | fold | rate | Plonky3 ms | our CPU ms | GPU ms (commit + open) | Plonky3 / GPU | GPU codewords / PoW / sumcheck+other ms | GPU up MiB / down KiB / submits | profiled proof: wall / GPU busy ms | peak GPU MiB: pools kept / none | GPU pieces ms (codewords) | Plonky3 / pieces |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &cells {
        if let Some(why) = &c.skipped {
            println!("| {} | {} | {} | skipped: {why} | | | | | | | | | |", c.vars, c.fold, c.rate);
            continue;
        }
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}x", a / b),
            _ => "-".into(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} ({} + {}) | {} | {} / {} / {} | {} / {} / {} | {} / {} | {} / {} | {} ({}) | {} |",
            c.vars,
            c.fold,
            c.rate,
            f(c.stock_ms),
            f(c.cpu_ms),
            f(c.gpu_ms),
            f(c.gpu_commit_ms),
            f(c.gpu_open_ms),
            ratio(c.stock_ms, c.gpu_ms),
            f(c.gpu_codewords_ms),
            f(c.gpu_pow_ms),
            f(c.gpu_sumcheck_other_ms),
            f(c.gpu_mib_up),
            f(c.gpu_kib_down),
            c.gpu_submissions.map_or("-".into(), |s| s.to_string()),
            f(c.gpu_profile_wall_ms),
            f(c.gpu_profile_busy_ms),
            f(c.gpu_peak_mib),
            f(c.gpu_peak_live_mib),
            f(c.pieces_ms),
            f(c.pieces_codewords_ms),
            ratio(c.stock_ms, c.pieces_ms)
        );
    }
    if let Some(out) = &json_out {
        out.write(serde_json::to_string_pretty(&cells)?.as_bytes())?;
    }
    if cells.iter().all(|c| c.skipped.is_some()) {
        bail!(
            "every cell of the grid was skipped as infeasible (first: {}); nothing was measured",
            cells.first().and_then(|c| c.skipped.as_deref()).unwrap_or("empty grid")
        );
    }
    if let Some(out) = &plot_out {
        out.write_with(|tmp| plot(tmp, &cells)).with_context(|| format!("plotting {}", out.path().display()))?;
    }
    Ok(())
}

/// Speedup of the GPU backend over the stock Plonky3 prover against n, one line per (fold, rate).
fn plot(path: &Path, cells: &[Cell]) -> Result<()> {
    let points: Vec<(usize, usize, usize, f64)> = cells.iter().filter_map(|c| Some((c.fold, c.rate, c.vars, c.stock_ms? / c.gpu_ms?))).collect();
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (min_n, max_n) = points.iter().fold((usize::MAX, 0), |(a, b), p| (a.min(p.2), b.max(p.2)));
    let max_y = points.iter().map(|p| p.3).fold(1.0f64, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption("WHIR prover: GPU backend speedup over Plonky3", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d((min_n.min(max_n) as f64 - 0.5)..(max_n as f64 + 0.5), 0f64..max_y)?;
    chart.configure_mesh().x_desc("n (variables)").y_desc("Plonky3 time / GPU time").draw()?;
    let mut series: Vec<(usize, usize)> = points.iter().map(|p| (p.0, p.1)).collect();
    series.sort_unstable();
    series.dedup();
    for (i, (fold, rate)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let line: Vec<(f64, f64)> = points.iter().filter(|p| (p.0, p.1) == (*fold, *rate)).map(|p| (p.2 as f64, p.3)).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
            .label(format!("fold {fold}, rate 2^-{rate}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(line.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

/// GPU time of one kernel's dispatches in a proof (`--kernel-profile`).
#[derive(Serialize)]
struct KernelTime {
    kernel: &'static str,
    dispatches: u32,
    gpu_ms: f64,
}

/// One more proof with every dispatch timed on its own (see `--kernel-profile`): its GPU time
/// per kernel, also printed on stderr. None where the adapter has no timestamp queries.
fn kernel_profile(ctx: &whir_gpu::GpuContext, prove: impl FnOnce() -> Result<()>) -> Result<Option<Vec<KernelTime>>> {
    let profiler = ctx.profiler();
    if !profiler.begin_dispatches() {
        eprintln!("  --kernel-profile: this adapter has no timestamp queries; no kernel times");
        return Ok(None);
    }
    let proved = prove();
    // Ended whatever the proof did, so later proofs record as usual.
    let spans = profiler.end_dispatches()?.unwrap_or_default();
    proved?;
    let total: f64 = spans.iter().map(|s| s.gpu.as_secs_f64() * 1e3).sum();
    eprintln!("  kernels of one more proof (a timed pass each): {total:.2} ms of GPU time in {} dispatches", spans.iter().map(|s| s.dispatches).sum::<u32>());
    for s in &spans {
        let ms = s.gpu.as_secs_f64() * 1e3;
        eprintln!("    {:<28} {:>5} dispatches {:>8.3} ms {:>6.1}%", s.kernel, s.dispatches, ms, 100.0 * ms / total.max(f64::MIN_POSITIVE));
    }
    Ok(Some(spans.iter().map(|s| KernelTime { kernel: s.kernel, dispatches: s.dispatches, gpu_ms: s.gpu.as_secs_f64() * 1e3 }).collect()))
}
