//! `whir prove`: one polynomial (any extension, on the GPU or the CPU) or multi-table witnesses
//! through the PCS; the proof verified before it is written.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use p3_baby_bear::BabyBear;
use p3_koala_bear::KoalaBear;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::json;
use whir_gpu::{list_adapters, AdapterSummary, GpuOptions};
use whir_prover::times::{RoundBreakdown, Step, StepTime};
use whir_prover::{
    CpuProver, DriverOptions, GpuMode, GpuProver, Params, Plonky3Pieces, ProofFileOf, ProverField, ProverOutput, Soundness, WhirField, Workload,
};

use crate::output::OutputFile;

mod hiding;
mod keccak;
use crate::{host_memory, open_gpu, parse_degree, FieldChoice, SecurityArgs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendChoice {
    Auto,
    /// Our driver over resident GPU codewords.
    Gpu,
    /// Plonky3's prover with our GPU encoder, Merkle tree and grinder (the reference path).
    GpuPieces,
    Cpu,
}

#[derive(clap::Args)]
pub(crate) struct ProveArgs {
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
    /// The field (and its degree-4 extension and Poseidon2) the proof is made over; the proof
    /// file names it.
    #[arg(long, value_enum, default_value_t = FieldChoice::Babybear)]
    field: FieldChoice,
    /// Degree of the extension the challenges live in: 4 (about 100 bits), or 5 or 8 for 128
    /// bits (BabyBear's binomial extensions, KoalaBear's degree 8 and its quintic trinomial
    /// one). Every degree proves on the GPU (`--backend auto|gpu`) or the CPU.
    #[arg(long, default_value_t = 4, value_parser = parse_degree)]
    extension: usize,
    /// A named configuration (field, extension, soundness, security, PoW budget and leaf width in one;
    /// `whir info` lists them): babybear4, koalabear4, koalabear8-128, babybear8-128,
    /// babybear5-128, koalabear5-128. The shape flags stay yours.
    #[arg(long, value_parser = whir_verifier::named_config, conflicts_with_all = ["field", "extension", "security", "pow_bits", "soundness", "leaf"])]
    config: Option<&'static whir_verifier::NamedConfig>,
    /// Prove a multi-table witness through the PCS instead of one polynomial: a preset (zkvm:
    /// 20 tables, 2^24 cells; zkvm-small: 2^16) or tables `VARSxCOLUMNS`, optionally `COUNT*`
    /// (e.g. `22x2,3*12x20`), of random values from --seed, each opened at one transcript point
    /// (every column and the successor views of half of them). The file (format version 3)
    /// names the tables, whose list the transcript binds before the commitment.
    #[arg(long, conflicts_with_all = ["vars", "points", "input"])]
    tables: Option<String>,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// 2^n little-endian u32 canonical values of the --field; default: random from --seed.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Seed of the random polynomial (default 1); not with --input.
    #[arg(long)]
    seed: Option<u64>,
    /// Where to write the proof file (never over an existing file without --force).
    #[arg(long, default_value = "proof.whir")]
    out: PathBuf,
    /// Replace an existing --out file.
    #[arg(long)]
    force: bool,
    /// A zero-knowledge proof: Plonky3's hiding PCS (`HidingWhirPcs`, HVZK-WHIR; ell_zk 4, masks
    /// at rate 1/2), over the GPU's DFT, Merkle trees and grinder where there is a GPU. Its
    /// sumcheck messages, answers, openings and final polynomial reveal nothing of the
    /// polynomial beyond its values at the points its commitment fixes. One polynomial only.
    /// The file (format version 4) says it is hiding and names the mask parameters.
    #[arg(long)]
    zk: bool,
    /// The hash of the Merkle trees and the transcript: poseidon2 (the default), or keccak
    /// (Plonky3's Keccak configuration, p3-whir's Keccak test: Keccak trees, the Keccak-256
    /// transcript; what an EVM verifier checks cheaply). One polynomial, --tables or --zk, any
    /// extension; the file names the hash.
    #[arg(long, value_enum, default_value_t = crate::HashChoice::Poseidon2)]
    hash: crate::HashChoice,
    /// With --zk: seed the masks' generator instead of the operating system's, for tests only
    /// (whoever knows the seed can remove the masks).
    #[arg(long = "mask-seed", requires = "zk")]
    mask_seed: Option<u64>,
    /// Print a JSON summary instead of text (also on error).
    #[arg(long)]
    json: bool,
    /// Most GPU memory the prover may use, in MiB (default: WHIR_GPU_MEMORY_MIB, else no
    /// cap). A proof estimated not to fit is refused before any work starts.
    #[arg(long = "gpu-memory", value_name = "MIB")]
    gpu_memory: Option<u64>,
    /// Most host memory a proof made on the CPU may use, in MiB (default: what the machine has
    /// available and this process's limits leave). A CPU proof estimated not to fit is refused
    /// before its input is made; the message gives the estimate.
    #[arg(long = "memory", value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=1 << 40))]
    memory: Option<u64>,
}

impl ProveArgs {
    /// The parameters of a `--tables` proof of `workload`: the flags', with n and the points
    /// set by the tables (the fold checked against them before any layout is planned).
    fn table_params(&self, workload: &Workload) -> Result<Params> {
        let base = Params {
            num_vars: 0,
            fold: self.fold,
            log_inv_rate: self.rate,
            security_bits: self.security.security,
            pow_bits: self.security.pow_bits,
            soundness: Soundness::parse(&self.security.soundness)?,
            points: 1,
            leaf: self.security.leaf,
        };
        Ok(workload.params_checked(&base)?)
    }

    /// Whether this request proves on the CPU whatever adapters there are.
    fn cpu_for_sure(&self, num_vars: usize) -> bool {
        self.backend == BackendChoice::Cpu || (self.backend == BackendChoice::Auto && num_vars < AUTO_GPU_MIN_VARS)
    }
}

/// Below this many variables `auto` proves on the CPU: the GPU's fixed costs dominate. Measured
/// against Plonky3 on the host's cores (docs/benchmarks-history.md): at n = 20 the GPU backend was
/// faster or slower depending on fold and rate, at n = 22 and 24 faster in every cell.
const AUTO_GPU_MIN_VARS: usize = 20;

/// Reads exactly 2^vars canonical values: the size is checked before reading, and reading
/// stops past it (a device or a growing file cannot make it read without bound).
fn read_input<F: WhirField>(path: &Path, vars: usize) -> Result<Vec<F>> {
    let want = 4usize << vars;
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let meta = file.metadata().with_context(|| format!("reading {}", path.display()))?;
    if meta.is_dir() {
        bail!("--input {} is a directory; give a file of 2^{vars} u32 values", path.display());
    }
    if meta.is_file() && meta.len() != want as u64 {
        bail!("{} holds {} bytes; n = {vars} needs 2^{vars} u32 values = {want} bytes", path.display(), meta.len());
    }
    let mut bytes = Vec::with_capacity(want);
    file.take(want as u64 + 1).read_to_end(&mut bytes).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() != want {
        let size = if bytes.len() > want { format!("more than {want}") } else { bytes.len().to_string() };
        bail!("{} holds {size} bytes; n = {vars} needs 2^{vars} u32 values = {want} bytes", path.display());
    }
    bytes
        .chunks_exact(4)
        .enumerate()
        .map(|(i, c)| {
            let v = u32::from_le_bytes(c.try_into().expect("4 bytes"));
            if v >= F::ORDER_U32 {
                bail!("value {v} at byte offset {} of {} is not a canonical {} value (must be < {})", 4 * i, path.display(), F::NAME, F::ORDER_U32);
            }
            Ok(F::from_u32(v))
        })
        .collect()
}

fn run_prove<F: ProverField, B: Plonky3Pieces<F>>(backend: &B, params: &Params, evals: &[F]) -> Result<ProverOutput<F>> {
    Ok(backend.prove(params, evals)?)
}

/// What `whir prove` of one polynomial needs before any work, checked in this order: the
/// parameters (and `check`, e.g. their feasibility for the field and extension), the input
/// flags, the output file (never over an existing one without --force), then the 2^n
/// evaluations, read from --input or drawn from --seed. Warnings about the parameters go to
/// stderr.
fn prepare_proof<F: WhirField>(args: &ProveArgs, check: impl FnOnce(&Params) -> Result<()>) -> Result<(Params, OutputFile, Vec<F>)>
where
    rand::distr::StandardUniform: rand::distr::Distribution<F>,
{
    let params = Params {
        num_vars: args.vars,
        fold: args.fold,
        log_inv_rate: args.rate,
        security_bits: args.security.security,
        pow_bits: args.security.pow_bits,
        soundness: Soundness::parse(&args.security.soundness)?,
        points: args.points,
        leaf: args.security.leaf,
    };
    // Everything that can be wrong with the request fails here, before any work.
    check(&params)?;
    if args.input.is_some() && args.seed.is_some() {
        bail!("--seed has no effect with --input (the polynomial comes from the file); drop one of them");
    }
    let inputs: Vec<&Path> = args.input.iter().map(PathBuf::as_path).collect();
    let out = OutputFile::prepare(&args.out, "--out", args.force, &inputs)?;
    for warning in params.warnings() {
        eprintln!("warning: {warning}");
    }
    let evals = match &args.input {
        Some(path) => read_input(path, args.vars)?,
        None => {
            let mut rng = StdRng::seed_from_u64(args.seed.unwrap_or(1));
            (0..1usize << args.vars).map(|_| rng.random()).collect()
        }
    };
    Ok((params, out, evals))
}

/// A proof just made, checked before it was written: what the summaries say of it.
struct Checked<'a> {
    verify_time: std::time::Duration,
    bytes: usize,
    out: &'a Path,
    verified: bool,
}

impl<'a> Checked<'a> {
    /// Runs `verify` on a proof file just made (`bytes`) and writes it to `out` only if it
    /// verified: a proof that fails its own check never reaches disk.
    fn verify_then_write(
        bytes: &[u8],
        out: &OutputFile,
        path: &'a Path,
        verify: impl FnOnce() -> Result<(), whir_prover::ProofError>,
    ) -> Result<(Self, Result<(), whir_prover::ProofError>)> {
        let start = Instant::now();
        let verified = verify();
        let check = Checked { verify_time: start.elapsed(), bytes: bytes.len(), out: path, verified: verified.is_ok() };
        if verified.is_ok() {
            out.write(bytes)?;
        }
        Ok((check, verified))
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "verify_ms": self.verify_time.as_secs_f64() * 1e3,
            "proof_bytes": self.bytes,
            "out": self.verified.then(|| self.out.display().to_string()),
            "verified": self.verified,
        })
    }

    fn print(&self) {
        println!("verify: {:>9.1} ms  {}", self.verify_time.as_secs_f64() * 1e3, if self.verified { "verified" } else { "FAILED" });
        if self.verified {
            println!("proof:  {} bytes -> {}", self.bytes, self.out.display());
        }
    }
}

/// A JSON object with another's fields added.
trait WithFields {
    fn with(self, more: serde_json::Value) -> serde_json::Value;
}

impl WithFields for serde_json::Value {
    fn with(mut self, more: serde_json::Value) -> serde_json::Value {
        if let (Some(all), serde_json::Value::Object(more)) = (self.as_object_mut(), more) {
            all.extend(more);
        }
        self
    }
}

/// A JSON summary's `fields` with the parameters' (by their flag names) added.
fn with_params(params: &Params, fields: serde_json::Value) -> serde_json::Value {
    json!({
        "vars": params.num_vars,
        "fold": params.fold,
        "rate": params.log_inv_rate,
        "security_bits": params.security_bits,
        "pow_bits": params.pow_bits,
        "soundness": params.soundness.flag_value(),
        "points": params.points,
        "leaf_width": params.leaf.width(),
    })
    .with(fields)
}

/// An extension the GPU's resident driver proves over (and Plonky3's prover on the CPU): every
/// one `--extension` names (degree 4, 5 and 8).
pub(crate) trait GpuProvable<F: ProverField>: whir_prover::WhirExtension<F> + whir_gpu::GpuExtension<F> {}

impl<F: ProverField, E: whir_prover::WhirExtension<F> + whir_gpu::GpuExtension<F>> GpuProvable<F> for E {}

/// `whir prove` over a 128-bit extension `E` of `F` (degree 5 or 8): on the GPU's resident
/// driver where a hardware GPU is there (`--backend auto|gpu`), else Plonky3's `WhirProver` on
/// the CPU; the proof verified before it is written.
fn prove_over_extension<F: ProverField, E: GpuProvable<F>>(args: ProveArgs) -> Result<()>
where
    rand::distr::StandardUniform: rand::distr::Distribution<F>,
{
    if args.backend == BackendChoice::GpuPieces {
        bail!("--backend gpu-pieces runs Plonky3's prover with our GPU pieces over degree-4 extensions; over {} use --backend gpu, cpu or auto", E::NAME);
    }
    let memory = host_memory::host_memory(args.memory);
    let (params, out, evals) = prepare_proof::<F>(&args, |params| {
        params.config_over::<E, whir_gpu::GpuChallenger<F>>()?;
        if args.gpu_memory == Some(0) {
            bail!("--gpu-memory 0 leaves the GPU no memory; give a budget in MiB, or use --backend cpu");
        }
        if args.cpu_for_sure(params.num_vars) {
            memory.check::<F, E>(params, None)?;
        }
        Ok(())
    })?;
    if params.security_bits < 128 {
        eprintln!(
            "warning: {} is for 128-bit security; --security {} is within a degree-4 extension's reach (about 100 bits), which costs half as much",
            E::NAME,
            params.security_bits
        );
    }
    let (gpu, why) = resident_backend::<F>(args.backend, args.gpu_memory, params.num_vars)?;
    let gpu = gpu.map(|g| g.with_fallback_memory(memory.clone()));
    let start = Instant::now();
    // `--backend gpu` proves on the GPU or fails; `auto` proves on the CPU after a GPU failure
    // (with a warning) where the CPU's estimate fits; a proof over the caller's GPU memory
    // budget stays refused, as asked.
    let output = match &gpu {
        Some(g) if args.backend == BackendChoice::Gpu => g.prove_resident_over::<E>(&params, &evals).context("--backend gpu")?,
        Some(g) => g.prove_over::<E>(&params, &evals)?,
        None => {
            if !args.cpu_for_sure(params.num_vars) {
                memory.check::<F, E>(&params, None)?;
            }
            CpuProver.prove_over::<F, E>(&params, &evals)?
        }
    };
    let (backend, peak) = (output.path, output.peak_gpu_bytes);
    let prove_time = start.elapsed();
    let bytes = ProofFileOf::<F, E>::new(&params, output.commitment, output.proof).to_bytes();
    let (check, verified) = Checked::verify_then_write(&bytes, &out, &args.out, || ProofFileOf::<F, E>::from_bytes(&bytes).and_then(|f| f.verify(&params)))?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if args.json {
        let adapter = gpu.as_ref().map(|g| g.context().summary().to_string());
        let summary = with_params(
            &params,
            json!({
                "backend": backend,
                "why": why,
                "adapter": adapter,
                "field": F::NAME,
                "extension": E::NAME,
                "prove_ms": ms(prove_time),
                "peak_gpu_bytes": peak,
                "estimated_cpu_bytes": whir_prover::estimated_cpu_bytes::<F, E>(&params, None).ok(),
            })
            .with(check.json()),
        );
        println!("{summary}");
    } else {
        println!("backend: {backend} ({why})");
        println!("parameters: {params}, over {}", E::NAME);
        println!("prove:  {:>9.1} ms", ms(prove_time));
        if let Some(peak) = peak {
            println!("peak GPU memory: {:.0} MiB", peak as f64 / (1u64 << 20) as f64);
        }
        check.print();
    }
    verified.context("the proof just made did not verify; nothing was written")?;
    Ok(())
}

/// The resident GPU backend `backend` asks for (none for `cpu`; for `auto`, a hardware GPU at
/// n of at least AUTO_GPU_MIN_VARS), with the environment's settings and `gpu_memory` over
/// them, and why: `--backend gpu` without a GPU is an error, `auto` falls back to the CPU.
/// (`gpu-pieces` is refused by the callers.)
fn resident_backend<F: ProverField>(backend: BackendChoice, gpu_memory: Option<u64>, num_vars: usize) -> Result<(Option<GpuProver<F>>, String)> {
    let env = GpuOptions::from_env()?;
    let gpu_options = GpuOptions { memory_mib: gpu_memory.or(env.memory_mib), ..env };
    let driver_options = DriverOptions::from_env()?;
    Ok(match backend {
        BackendChoice::Cpu => (None, "--backend cpu".to_string()),
        BackendChoice::Gpu | BackendChoice::GpuPieces => {
            let g = open_gpu::<F>(gpu_options).context("--backend gpu")?.with_driver_options(driver_options);
            let s = g.context().summary();
            if s.is_software() {
                eprintln!("note: {} is a software adapter: its \"GPU\" work runs on this machine's CPU, slower than --backend cpu", s.name);
            }
            let why = format!("--backend gpu: {s}");
            (Some(g), why)
        }
        BackendChoice::Auto if num_vars < AUTO_GPU_MIN_VARS => (None, format!("n = {num_vars} is below {AUTO_GPU_MIN_VARS}, where the CPU is faster")),
        BackendChoice::Auto => match open_gpu::<F>(gpu_options).map(|g| g.with_driver_options(driver_options)) {
            Ok(g) if g.context().summary().is_software() => {
                (None, format!("no hardware GPU: {}; the CPU prover is faster", software_adapters_note(&list_adapters())))
            }
            Ok(g) => {
                let why = format!("GPU found: {}", g.context().summary());
                (Some(g), why)
            }
            Err(e) => (None, format!("no usable GPU ({e})")),
        },
    })
}

/// A one-line description of the adapters wgpu sees, for "why not the GPU" messages.
fn software_adapters_note(adapters: &[AdapterSummary]) -> String {
    let names: Vec<String> = adapters.iter().map(|a| format!("{} via {:?}", a.name, a.backend)).collect();
    match names.len() {
        0 => "no adapter".into(),
        1 => format!("the only adapter is a software renderer ({})", names[0]),
        n => format!("all {n} adapters are software renderers ({})", names.join(", ")),
    }
}

/// `whir prove`: a named configuration's flags applied, then [`prove`]; with `--json` an error
/// is a JSON object too.
pub(crate) fn run(mut args: ProveArgs) -> Result<()> {
    if let Some(config) = args.config {
        args.security.apply(config, &mut args.field, &mut args.extension);
    }
    let json = args.json;
    let result = prove(args);
    if let (true, Err(e)) = (json, &result) {
        println!("{}", json!({ "error": format!("{e:#}"), "verified": false }));
    }
    result
}

fn prove(args: ProveArgs) -> Result<()> {
    if args.hash == crate::HashChoice::Keccak && !args.zk {
        return crate::with_extension!((args.field, args.extension), |F, E| keccak::prove_keccak::<F, E>(args));
    }
    if args.zk {
        if args.tables.is_some() {
            bail!(
                "--zk proves one polynomial: Plonky3's hiding PCS (HidingWhirPcs) takes a single multilinear polynomial, not a table list; \
                 drop --tables for a hiding proof, or --zk for a multi-table proof (which does not hide)"
            );
        }
        return crate::with_extension!((args.field, args.extension), |F, E| hiding::prove_zk::<F, E>(args));
    }
    if let Some(spec) = args.tables.clone() {
        return crate::with_extension!((args.field, args.extension), |F, E| prove_tables::<F, E>(args, &spec));
    }
    if args.extension != 4 {
        return crate::with_extension!((args.field, args.extension), |F, E| prove_over_extension::<F, E>(args));
    }
    match args.field {
        FieldChoice::Babybear => prove_one::<BabyBear>(args),
        FieldChoice::Koalabear => prove_one::<KoalaBear>(args),
    }
}

/// `whir prove` of one polynomial over `F`.
fn prove_one<F: ProverField>(args: ProveArgs) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
    rand::distr::StandardUniform: rand::distr::Distribution<F>,
{
    let memory = host_memory::host_memory(args.memory);
    let (params, out, evals) = prepare_proof::<F>(&args, |params| {
        params.config::<whir_gpu::GpuChallenger<F>>()?;
        if args.gpu_memory == Some(0) {
            bail!("--gpu-memory 0 leaves the GPU no memory; give a budget in MiB, or use --backend cpu");
        }
        if args.cpu_for_sure(params.num_vars) {
            memory.check::<F, whir_prover::EF<F>>(params, None)?;
        }
        Ok(())
    })?;
    // The environment's settings (WHIR_ADAPTER, WHIR_LIMITS, ...), the flags over them.
    let env = GpuOptions::from_env()?;
    let gpu_options = GpuOptions { memory_mib: args.gpu_memory.or(env.memory_mib), ..env };
    let driver_options = DriverOptions::from_env()?;
    let (gpu, why) = match args.backend {
        BackendChoice::Cpu => (None, "--backend cpu".to_string()),
        BackendChoice::Gpu | BackendChoice::GpuPieces => {
            let mode = if args.backend == BackendChoice::Gpu { GpuMode::Resident } else { GpuMode::Pieces };
            let g = open_gpu::<F>(gpu_options.clone())
                .context(format!("--backend {}", if mode == GpuMode::Resident { "gpu" } else { "gpu-pieces" }))?
                .with_mode(mode)
                .with_driver_options(driver_options);
            let s = g.context().summary();
            let why = if s.is_software() {
                eprintln!("note: {} is a software adapter: its \"GPU\" work runs on this machine's CPU, slower than --backend cpu", s.name);
                format!("--backend {}, on the software adapter {s}", g.name())
            } else {
                format!("--backend {}: {s}", g.name())
            };
            (Some(g), why)
        }
        BackendChoice::Auto if args.vars < AUTO_GPU_MIN_VARS => (None, format!("n = {} is below {AUTO_GPU_MIN_VARS}, where the CPU is faster", args.vars)),
        BackendChoice::Auto => match open_gpu::<F>(gpu_options.clone()).map(|g| g.with_driver_options(driver_options)) {
            Ok(g) if g.context().summary().is_software() => {
                (None, format!("no hardware GPU: {}; the CPU prover is faster", software_adapters_note(&list_adapters())))
            }
            Ok(g) => {
                let why = format!("GPU found: {}", g.context().summary());
                (Some(g), why)
            }
            Err(e) => (None, format!("no usable GPU ({e})")),
        },
    };
    // One-shot proofs are profiled: the per-round breakdown with GPU time is what they report.
    let gpu = gpu.map(|g| g.with_profile(true).with_fallback_memory(memory.clone()));
    let start = Instant::now();
    // `--backend gpu` and `gpu-pieces` prove on the GPU or fail (a size over the adapter's
    // limits names the limit); `auto` proves on the CPU after a GPU failure, with a warning,
    // where the CPU's estimate fits.
    let output = match &gpu {
        Some(g) if args.backend != BackendChoice::Auto => g.prove_on_gpu(&params, &evals).context(format!("--backend {}", g.name()))?,
        Some(g) => run_prove(g, &params, &evals)?,
        None => {
            // (Checked before the input was made where the CPU was certain.)
            if !args.cpu_for_sure(params.num_vars) {
                memory.check::<F, whir_prover::EF<F>>(&params, None)?;
            }
            run_prove(&CpuProver, &params, &evals)?
        }
    };
    let name = output.path;
    let prove_time = start.elapsed();
    let bytes = output.proof_file(&params).to_bytes();
    // Verified before anything is written: a proof that fails its own check never reaches disk.
    let (check, verified) = Checked::verify_then_write(&bytes, &out, &args.out, || ProofFileOf::<F>::from_bytes(&bytes).and_then(|f| f.verify(&params)))?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if args.json {
        let adapter = gpu.as_ref().map(|g| g.context().summary().to_string());
        let summary = with_params(
            &params,
            json!({
                "backend": name,
                "why": why,
                "adapter": adapter,
                "field": F::NAME,
                "extension": <whir_prover::EF<F> as whir_prover::WhirExtension<F>>::NAME,
                "prove_ms": ms(prove_time),
                "commit_ms": ms(output.commit_time),
                "open_ms": ms(output.open_time),
                "encode_ms": ms(output.phases.encode),
                "merkle_ms": ms(output.phases.merkle),
                "commit_encode_merkle_ms": ms(output.phases.commit),
                "openings_ms": ms(output.phases.open),
                "claims_initial_fold_ms": ms(output.phases.claims),
                "round_sumcheck_ms": ms(output.phases.sumcheck),
                "ood_ms": ms(output.phases.ood),
                "pow_ms": ms(output.phases.pow),
                "gpu_bytes_up": output.transfers.map(|t| t.bytes_up),
                "gpu_bytes_down": output.transfers.map(|t| t.bytes_down),
                "gpu_submissions": output.transfers.map(|t| t.submissions),
                "peak_gpu_bytes": output.peak_gpu_bytes,
                "estimated_cpu_bytes": whir_prover::estimated_cpu_bytes::<F, whir_prover::EF<F>>(&params, None).ok(),
                "rounds": output.breakdown.as_ref().map(breakdown_json),
                "sumcheck_other_ms": ms(output.sumcheck_and_other()),
            })
            .with(check.json()),
        );
        println!("{summary}");
    } else {
        println!("backend: {name} ({why})");
        println!("parameters: {params}, over {}^4", F::NAME);
        let pct = |d: std::time::Duration| 100.0 * d.as_secs_f64() / output.total().as_secs_f64().max(1e-12);
        let row = |label: &str, d: std::time::Duration| println!("  {label:<18} {:>9.1} ms  {:>5.1}%", ms(d), pct(d));
        println!("prove:  {:>9.1} ms", ms(prove_time));
        if output.phases.commit > std::time::Duration::ZERO {
            row("encode + Merkle", output.phases.commit);
            row("openings", output.phases.open);
        } else {
            row("encode (NTT)", output.phases.encode);
            row("Merkle", output.phases.merkle);
        }
        row("proof of work", output.phases.pow);
        row("sumcheck + other", output.sumcheck_and_other());
        if output.phases.claims > std::time::Duration::ZERO {
            row("  of which claim phase + initial fold", output.phases.claims);
            row("  of which round sumchecks", output.phases.sumcheck);
            row("  of which OOD answers", output.phases.ood);
        }
        if let Some(t) = output.transfers {
            println!(
                "GPU transfers: {:.1} MiB up, {:.1} KiB down, {} submissions",
                t.bytes_up as f64 / (1 << 20) as f64,
                t.bytes_down as f64 / 1024.0,
                t.submissions
            );
        }
        if let Some(peak) = output.peak_gpu_bytes {
            println!("peak GPU buffer memory: {:.1} MiB", peak as f64 / (1 << 20) as f64);
        }
        if let Some(b) = &output.breakdown {
            print_breakdown(b);
        }
        check.print();
    }
    verified.context("the proof just made did not verify; nothing was written")?;
    Ok(())
}

/// The per-round breakdown as JSON: one object per round, each step's wall and GPU ms.
pub(crate) fn breakdown_json(b: &RoundBreakdown) -> serde_json::Value {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    b.rounds
        .iter()
        .map(|steps| {
            steps
                .iter()
                .map(|(step, t)| (step.name().to_string(), json!({"wall_ms": ms(t.wall), "gpu_ms": t.gpu.map(ms), "submissions": t.submissions})))
                .collect::<serde_json::Map<_, _>>()
                .into()
        })
        .collect::<Vec<serde_json::Value>>()
        .into()
}

/// Per-round table: each step's wall ms, with its GPU ms in brackets where profiled; the
/// host column is wall minus GPU (waits, transcript, recording).
fn print_breakdown(b: &RoundBreakdown) {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let cell = |t: Option<&StepTime>| match t {
        None => format!("{:>15}", "-"),
        Some(t) => match t.gpu {
            Some(g) => format!("{:>7.2} ({:>5.2})", ms(t.wall), ms(g)),
            None => format!("{:>15.2}", ms(t.wall)),
        },
    };
    println!("per round, wall ms (GPU ms); round 0 = commitment + claim phase + initial fold, last = final round:");
    let mut header = format!("  {:>5}", "round");
    for step in Step::ALL {
        header += &format!(" {:>15}", step.name());
    }
    println!("{header} {:>9} {:>9}", "GPU", "host");
    let print_row = |name: String, get: &dyn Fn(Step) -> Option<StepTime>| {
        let mut line = format!("  {name:>5}");
        let (mut wall, mut gpu) = (0.0, 0.0);
        for step in Step::ALL {
            let t = get(step);
            line += &format!(" {}", cell(t.as_ref()));
            if let Some(t) = t {
                wall += ms(t.wall);
                gpu += t.gpu.map_or(0.0, ms);
            }
        }
        println!("{line} {gpu:>9.2} {:>9.2}", wall - gpu);
    };
    for (i, steps) in b.rounds.iter().enumerate() {
        print_row(i.to_string(), &|step| steps.iter().find(|(s, _)| *s == step).map(|(_, t)| *t));
    }
    print_row("all".into(), &|step| Some(b.total(step)).filter(|t| !t.wall.is_zero()));
}

/// `whir prove --tables`: random tables from the seed committed and opened through the PCS (the
/// GPU's on a hardware adapter, else Plonky3's `WhirProver` on the CPU; `auto` falls back to the
/// CPU, with a warning, where the GPU fails), the proof verified before the file is written.
fn prove_tables<F: ProverField, E: whir_prover::WhirExtension<F> + whir_gpu::GpuExtension<F>>(args: ProveArgs, spec: &str) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
    rand::distr::StandardUniform: rand::distr::Distribution<F>,
{
    use p3_commit::MultilinearPcs;
    use p3_sumcheck::layout::Witness;
    let workload = Workload::parse(spec)?;
    let params = args.table_params(&workload)?;
    let config = params.config_over_from::<E, whir_gpu::GpuChallenger<F>>(whir_prover::ParamSource::Tables)?;
    if args.gpu_memory == Some(0) {
        bail!("--gpu-memory 0 leaves the GPU no memory; give a budget in MiB, or use --backend cpu");
    }
    if args.backend == BackendChoice::GpuPieces {
        bail!("--backend gpu-pieces proves one polynomial; with --tables use gpu, cpu or auto");
    }
    let memory = host_memory::host_memory(args.memory);
    if args.cpu_for_sure(params.num_vars) {
        memory.check::<F, E>(&params, Some(&workload))?;
    }
    let out = OutputFile::prepare(&args.out, "--out", args.force, &[])?;
    for warning in params.warnings() {
        eprintln!("warning: {warning}");
    }
    let (gpu, mut why) = resident_backend::<F>(args.backend, args.gpu_memory, params.num_vars)?;
    // (Checked above where the CPU was certain; here where `auto` found no GPU.)
    if gpu.is_none() && !args.cpu_for_sure(params.num_vars) {
        memory.check::<F, E>(&params, Some(&workload))?;
    }
    let mut rng = StdRng::seed_from_u64(args.seed.unwrap_or(1));
    let tables = whir_prover::random_tables::<F, _>(&workload, &mut rng);
    let protocol = workload.protocol(args.fold);
    let stock = || -> whir_prover::CpuWhirPcs<whir_prover::ProverLayout<F, E>, F, E> {
        whir_prover::CpuWhirPcs::new(config.clone(), whir_prover::backend::CpuBackend::hashing_leaves(params.leaf))
    };
    let start = Instant::now();
    // (backend, commitment, proof bytes, commit and open times)
    let gpu_proof = gpu.as_ref().map(|g| -> Result<_> {
        let pcs = g.pcs_hashing_leaves::<whir_prover::ProverLayout<F, E>, E, _>(config.clone(), params.leaf)?;
        let mut challenger = g.challenger();
        // The table list (padded to the fold) is the instance: bound before the commitment.
        workload.observe(&mut challenger);
        let t = Instant::now();
        let (root, data) = pcs.commit(Witness::new(tables.clone(), args.fold), &mut challenger)?;
        let commit = t.elapsed();
        let proof = pcs.open(data, protocol.clone(), &mut challenger)?;
        Ok(("gpu", root, postcard::to_allocvec(&proof)?, commit, t.elapsed() - commit))
    });
    let (name, root, proof, commit_time, open_time) = match gpu_proof {
        Some(Ok(p)) => p,
        Some(Err(e)) if args.backend == BackendChoice::Gpu => return Err(e.context("--backend gpu")),
        other => {
            if let Some(Err(e)) = other {
                memory
                    .check::<F, E>(&params, Some(&workload))
                    .map_err(|refused| anyhow::anyhow!("the GPU PCS failed ({e:#}), and the CPU cannot prove this either: {refused}"))?;
                eprintln!("warning: the GPU PCS failed ({e:#}); proving on the CPU instead");
                why = format!("the GPU PCS failed ({e:#})");
            }
            let pcs = stock();
            let mut challenger = Plonky3Pieces::<F>::challenger(&CpuProver);
            workload.observe(&mut challenger);
            let t = Instant::now();
            let (root, data) =
                pcs.stock().commit(Witness::new(tables, args.fold), &mut challenger).map_err(|e| anyhow::anyhow!("Plonky3's commit failed: {e:?}"))?;
            let commit = t.elapsed();
            let proof = pcs.stock().open(data, protocol, &mut challenger).map_err(|e| anyhow::anyhow!("Plonky3's opening failed: {e:?}"))?;
            ("cpu (Plonky3's WhirProver)", root, postcard::to_allocvec(&proof)?, commit, t.elapsed() - commit)
        }
    };
    let prove_time = start.elapsed();
    let bytes = ProofFileOf::<F, E>::new_tables(&params, workload.clone(), root, proof).to_bytes();
    // Verified before anything is written, as one polynomial's proof is.
    let (check, verified) =
        Checked::verify_then_write(&bytes, &out, &args.out, || ProofFileOf::<F, E>::from_bytes(&bytes).and_then(|f| f.verify_tables(&params, &workload)))?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if args.json {
        let summary = with_params(
            &params,
            json!({
                "backend": name,
                "why": why,
                "adapter": gpu.as_ref().map(|g| g.context().summary().to_string()),
                "tables": workload.spec(),
                "field": F::NAME,
                "extension": E::NAME,
                "table_count": workload.tables.len(),
                "cells": workload.cells(),
                "prove_ms": ms(prove_time),
                "commit_ms": ms(commit_time),
                "open_ms": ms(open_time),
                "estimated_cpu_bytes": whir_prover::estimated_cpu_bytes::<F, E>(&params, Some(&workload)).ok(),
            })
            .with(check.json()),
        );
        println!("{summary}");
    } else {
        println!("backend: {name} ({why})");
        println!("tables: {} ({}, {} cells)", workload.tables.len(), workload.spec(), workload.cells());
        println!("parameters: {params}, over {}", E::NAME);
        println!("prove:  {:>9.1} ms (commit {:.1} ms, open {:.1} ms)", ms(prove_time), ms(commit_time), ms(open_time));
        check.print();
    }
    verified.context("the proof just made did not verify; nothing was written")?;
    Ok(())
}
