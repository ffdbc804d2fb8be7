//! The `whir` command: `info` (adapters), `prove` (commit + open, verified before exiting),
//! `verify FILE` and `bench` (Plonky3 vs our CPU and GPU backends over a grid).

mod bench;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use p3_baby_bear::BabyBear;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_gpu::{list_adapters, AdapterSelector, AdapterSummary, GpuContext, GpuOptions};
use whir_prover::{Backend, CpuBackend, GpuBackend, Params, ProofFile, ProverOutput, Soundness};

#[derive(Parser)]
#[command(name = "whir", version, about = "WHIR polynomial commitments on any GPU (wgpu)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the GPU adapters, the one `whir` would use, its features and limits.
    Info {
        /// Adapter to choose: a backend (vulkan, metal, dx12, gl), `index:N`, or part of a name.
        #[arg(long, env = "WHIR_ADAPTER")]
        adapter: Option<String>,
    },
    /// Commit to a multilinear polynomial (2^n evaluations) and open it; verifies before exiting.
    Prove(ProveArgs),
    /// Verify a proof file with the stock Plonky3 verifier.
    Verify {
        file: PathBuf,
    },
    /// Time the stock Plonky3 prover, our CPU backend and our GPU backend over a grid.
    Bench(bench::BenchArgs),
}

/// Security target, shared by `prove` and `bench`.
#[derive(clap::Args)]
pub struct SecurityArgs {
    /// Security level in bits.
    #[arg(long, default_value_t = 100)]
    pub security: usize,
    /// Proof-of-work budget in bits.
    #[arg(long = "pow-bits", default_value_t = 20)]
    pub pow_bits: usize,
    /// johnson, capacity or unique.
    #[arg(long, default_value = "johnson")]
    pub soundness: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BackendChoice {
    Auto,
    Gpu,
    Cpu,
}

#[derive(clap::Args)]
struct ProveArgs {
    /// Number of variables n (the polynomial has 2^n evaluations).
    #[arg(long, default_value_t = 20)]
    vars: usize,
    /// Variables folded per round.
    #[arg(long, default_value_t = 4)]
    fold: usize,
    /// log2 of the inverse starting rate.
    #[arg(long, default_value_t = 1)]
    rate: usize,
    #[command(flatten)]
    security: SecurityArgs,
    /// Opening points.
    #[arg(long, default_value_t = 1)]
    points: usize,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// 2^n little-endian u32 canonical BabyBear values; default: random from --seed.
    #[arg(long)]
    input: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the proof file.
    #[arg(long, default_value = "proof.whir")]
    out: PathBuf,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    json: bool,
}

/// Below this many variables `auto` proves on the CPU: the GPU's fixed costs dominate. Measured
/// on an H200 against 16-core Plonky3 (BENCHMARKS.md): at n = 20 the GPU backend took 0.35-1.23x
/// Plonky3's time depending on fold and rate, at n = 22 and 24 it was faster in every cell.
const AUTO_GPU_MIN_VARS: usize = 20;

fn read_input(path: &PathBuf, vars: usize) -> Result<Vec<BabyBear>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let want = 4usize << vars;
    if bytes.len() != want {
        bail!("{} holds {} bytes; n = {vars} needs 2^{vars} u32 values = {want} bytes", path.display(), bytes.len());
    }
    bytes
        .chunks_exact(4)
        .enumerate()
        .map(|(i, c)| {
            let v = u32::from_le_bytes(c.try_into().expect("4 bytes"));
            if v >= 0x7800_0001 {
                bail!("value {v} at byte offset {} of {} is not a canonical BabyBear value (must be < 2013265921)", 4 * i, path.display());
            }
            Ok(BabyBear::new(v))
        })
        .collect()
}

fn run_prove<B: Backend>(backend: &B, params: &Params, evals: &[BabyBear]) -> Result<ProverOutput> {
    Ok(backend.prove(params, evals)?)
}

fn prove(args: ProveArgs) -> Result<()> {
    let params = Params {
        num_vars: args.vars,
        fold: args.fold,
        log_inv_rate: args.rate,
        security_bits: args.security.security,
        pow_bits: args.security.pow_bits,
        soundness: Soundness::parse(&args.security.soundness)?,
        points: args.points,
    };
    // Fail on parameters before any work.
    params.config::<whir_gpu::GpuChallenger>()?;
    let evals = match &args.input {
        Some(path) => read_input(path, args.vars)?,
        None => {
            let mut rng = StdRng::seed_from_u64(args.seed);
            (0..1usize << args.vars).map(|_| rng.random()).collect()
        }
    };
    let (gpu, why) = match args.backend {
        BackendChoice::Cpu => (None, "--backend cpu".to_string()),
        BackendChoice::Gpu => (Some(GpuBackend::open_default().context("--backend gpu")?), "--backend gpu".to_string()),
        BackendChoice::Auto if args.vars < AUTO_GPU_MIN_VARS => (None, format!("n = {} is below {AUTO_GPU_MIN_VARS}, where the CPU is faster", args.vars)),
        BackendChoice::Auto => match GpuBackend::open_default() {
            Ok(g) if g.context().summary().device_type == whir_gpu::wgpu::DeviceType::Cpu => {
                (None, format!("the only adapter is a software one ({}); the CPU prover is faster", g.context().summary().name))
            }
            Ok(g) => {
                let why = format!("GPU found: {}", g.context().summary());
                (Some(g), why)
            }
            Err(e) => (None, format!("no usable GPU ({e})")),
        },
    };
    let start = Instant::now();
    let (name, output) = match &gpu {
        Some(g) => ("gpu", run_prove(g, &params, &evals)?),
        None => ("cpu", run_prove(&CpuBackend, &params, &evals)?),
    };
    let prove_time = start.elapsed();
    let file = ProofFile::new(&params, &output);
    let bytes = file.to_bytes();
    std::fs::write(&args.out, &bytes).with_context(|| format!("writing {}", args.out.display()))?;
    let start = Instant::now();
    let verified = ProofFile::from_bytes(&bytes).and_then(|f| f.verify());
    let verify_time = start.elapsed();
    if args.json {
        println!(
            "{{\"backend\":\"{name}\",\"vars\":{},\"fold\":{},\"rate\":{},\"prove_ms\":{:.3},\"commit_ms\":{:.3},\"open_ms\":{:.3},\"encode_ms\":{:.3},\"merkle_ms\":{:.3},\"pow_ms\":{:.3},\"sumcheck_other_ms\":{:.3},\"verify_ms\":{:.3},\"proof_bytes\":{},\"verified\":{}}}",
            params.num_vars,
            params.fold,
            params.log_inv_rate,
            prove_time.as_secs_f64() * 1e3,
            output.commit_time.as_secs_f64() * 1e3,
            output.open_time.as_secs_f64() * 1e3,
            output.phases.encode.as_secs_f64() * 1e3,
            output.phases.merkle.as_secs_f64() * 1e3,
            output.phases.pow.as_secs_f64() * 1e3,
            output.sumcheck_and_other().as_secs_f64() * 1e3,
            verify_time.as_secs_f64() * 1e3,
            bytes.len(),
            verified.is_ok()
        );
    } else {
        println!("backend: {name} ({why})");
        println!("polynomial: 2^{} evaluations, fold {}, rate 2^-{}, {} bits ({:?}), PoW {} bits", params.num_vars, params.fold, params.log_inv_rate, params.security_bits, params.soundness, params.pow_bits);
        let pct = |d: std::time::Duration| 100.0 * d.as_secs_f64() / output.total().as_secs_f64().max(1e-12);
        let row = |label: &str, d: std::time::Duration| println!("  {label:<18} {:>9.1} ms  {:>5.1}%", d.as_secs_f64() * 1e3, pct(d));
        println!("prove:  {:>9.1} ms", prove_time.as_secs_f64() * 1e3);
        row("encode (NTT)", output.phases.encode);
        row("Merkle", output.phases.merkle);
        row("proof of work", output.phases.pow);
        row("sumcheck + other", output.sumcheck_and_other());
        println!("proof:  {} bytes -> {}", bytes.len(), args.out.display());
        println!("verify: {:>9.1} ms  {}", verify_time.as_secs_f64() * 1e3, if verified.is_ok() { "verified" } else { "FAILED" });
    }
    verified.context("the proof just made did not verify")?;
    Ok(())
}

fn verify(file: PathBuf) -> Result<()> {
    let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    let proof = ProofFile::from_bytes(&bytes)?;
    proof.verify()?;
    println!("verified");
    Ok(())
}

fn print_limits(s: &AdapterSummary) {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!("  features:  {}", if s.feature_names().is_empty() { "none of SHADER_INT64, SUBGROUP, TIMESTAMP_QUERY".into() } else { s.feature_names().join(", ") });
    println!("  subgroup size: {}..={}", s.subgroup_min_size, s.subgroup_max_size);
    println!("  max storage buffer binding: {:.0} MiB", mib(s.max_storage_buffer_binding_size));
    println!("  max buffer size:            {:.0} MiB", mib(s.max_buffer_size));
    println!("  max workgroup storage:      {} bytes", s.max_compute_workgroup_storage_size);
    println!("  max invocations/workgroup:  {}", s.max_compute_invocations_per_workgroup);
    println!("  max workgroups/dimension:   {}", s.max_compute_workgroups_per_dimension);
}

fn info(adapter: Option<String>) -> Result<()> {
    let adapters = list_adapters();
    println!("Adapters ({}):", adapters.len());
    for (i, a) in adapters.iter().enumerate() {
        println!("  [{i}] {a}  [{}]", a.feature_names().join(", "));
    }
    let selector = adapter.as_deref().map_or(AdapterSelector::HighPerformance, AdapterSelector::parse);
    match GpuContext::new(GpuOptions { adapter: selector, mul_variant: None }) {
        Ok(ctx) => {
            println!("\nChosen: {}", ctx.summary());
            println!("  field multiply: {:?}", ctx.mul_variant());
            print_limits(ctx.summary());
        }
        Err(e) => println!("\nNo GPU will be used: {e}\nEverything runs on the CPU (Plonky3)."),
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    // Diagnostics on stderr, off unless asked for: WHIR_LOG=whir_gpu=debug shows each transfer,
    // Merkle commit and pipeline build with its time; warnings (e.g. a GPU fallback) always.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WHIR_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = match Cli::parse().command {
        Command::Info { adapter } => info(adapter),
        Command::Prove(args) => prove(args),
        Command::Verify { file } => verify(file),
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
