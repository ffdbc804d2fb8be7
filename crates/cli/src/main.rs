//! The `whir` command: `info` (adapters), `prove` (commit + open, verified before the proof is
//! written), `verify FILE` (against the parameters the verifier expects) and `bench` (Plonky3 vs
//! our CPU and GPU backends over a grid).

mod bench;
mod host_memory;
mod info;
mod output;
mod prove;
mod throughput;
mod verify;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use p3_baby_bear::BabyBear;
use p3_koala_bear::KoalaBear;
use serde_json::json;
use whir_gpu::{GpuContext, GpuOptions};
use whir_prover::{GpuProver, LeafSponge, ProverField, WhirField};

pub(crate) use crate::prove::{breakdown_json, GpuProvable, ProveArgs};
use crate::verify::VerifyArgs;

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
    /// Commit to a multilinear polynomial (2^n evaluations) and open it; the proof is verified
    /// before it is written.
    Prove(ProveArgs),
    /// Verify a proof file against the parameters you expect (the defaults unless given), with
    /// the stock Plonky3 verifier.
    Verify(VerifyArgs),
    /// Time the stock Plonky3 prover, our CPU backend and our GPU backend over a grid.
    Bench(bench::BenchArgs),
}

/// Security target, shared by `prove` and `bench`.
#[derive(clap::Args)]
pub struct SecurityArgs {
    /// Security level in bits.
    #[arg(long, default_value_t = 100)]
    pub security: usize,
    /// Proof-of-work budget in bits (at most 30).
    #[arg(long = "pow-bits", default_value_t = 20)]
    pub pow_bits: usize,
    /// johnson, capacity or unique.
    #[arg(long, default_value = "johnson")]
    pub soundness: String,
    /// Poseidon2 width Merkle leaves hash with: 16 (rate 8, the default) or 24 (rate 16, as
    /// p3-whir's KoalaBear benchmark); nodes compress with width 16 either way.
    #[arg(long = "leaf-width", default_value = "16", value_parser = parse_leaf_width)]
    pub leaf: LeafSponge,
}

/// A `--leaf-width` flag: 16 or 24.
pub(crate) fn parse_leaf_width(s: &str) -> std::result::Result<LeafSponge, String> {
    s.parse::<usize>().map_err(|_| format!("{s:?} is not a width: use 16 or 24")).and_then(LeafSponge::from_width)
}

/// The field a proof is made over (with its default Poseidon2 of width 16; `--extension` picks
/// the extension of the challenges, degree 4 by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FieldChoice {
    /// BabyBear (OpenVM, RISC Zero; the default).
    Babybear,
    /// KoalaBear (SP1 Hypercube); domains up to 2^24 rows.
    Koalabear,
}

impl FieldChoice {
    pub fn name(self) -> &'static str {
        match self {
            FieldChoice::Babybear => <BabyBear as WhirField>::NAME,
            FieldChoice::Koalabear => <KoalaBear as WhirField>::NAME,
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [FieldChoice::Babybear, FieldChoice::Koalabear].into_iter().find(|f| f.name() == name)
    }
}

impl SecurityArgs {
    /// The flags a named configuration sets: its field, extension, soundness, security and PoW
    /// budget.
    pub(crate) fn apply(&mut self, config: &whir_verifier::NamedConfig, field: &mut FieldChoice, extension: &mut usize) {
        *field = FieldChoice::parse(config.field).expect("a named configuration names a known field");
        *extension = config.degree;
        self.security = config.security_bits;
        self.pow_bits = config.pow_bits;
        self.soundness = config.soundness.flag_value().to_string();
        self.leaf = config.leaf;
    }
}

/// An extension degree flag: 4, 5 or 8.
pub(crate) fn parse_degree(s: &str) -> std::result::Result<usize, String> {
    match s {
        "4" => Ok(4),
        "5" => Ok(5),
        "8" => Ok(8),
        _ => Err(format!("{s:?} is not an extension degree here: use 4 (about 100 bits), or 5 or 8 (128 bits)")),
    }
}

/// A GPU prover over `F` on a context made with `options`.
pub(crate) fn open_gpu<F: ProverField>(options: GpuOptions) -> Result<GpuProver<F>, whir_prover::ProverError> {
    Ok(GpuProver::<F>::over(std::sync::Arc::new(GpuContext::new(options)?)))
}

/// The hash of the Merkle trees and the transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum HashChoice {
    /// Poseidon2 (the duplex transcript, Poseidon2 trees).
    Poseidon2,
    /// Plonky3's Keccak configuration (Keccak trees, the Keccak-256 transcript).
    Keccak,
}

impl HashChoice {
    /// An error for what does not apply to Keccak's trees: a named configuration (those name
    /// Poseidon2's trees), a Poseidon2 leaf width, or Plonky3's prover over our Poseidon2
    /// pieces (`--backend gpu-pieces`).
    pub(crate) fn check_keccak_flags(config: Option<&whir_verifier::NamedConfig>, leaf: LeafSponge, gpu_pieces: bool) -> Result<()> {
        if let Some(c) = config {
            anyhow::bail!("--config {} names Poseidon2 trees; with --hash keccak give the field, extension and security flags instead", c.name);
        }
        if leaf != LeafSponge::Width16 {
            anyhow::bail!(
                "--hash keccak hashes leaves with Keccak (Plonky3's u64 sponge); a Poseidon2 leaf width (--leaf-width {}) does not apply: drop it",
                leaf.width()
            );
        }
        if gpu_pieces {
            anyhow::bail!("--backend gpu-pieces runs Plonky3's prover over our Poseidon2 pieces; with --hash keccak use --backend gpu, cpu or auto");
        }
        Ok(())
    }

    /// What a summary adds after the extension for a proof hashed by `name` (nothing for
    /// Poseidon2's, the default).
    pub(crate) fn note(name: &str) -> &'static str {
        if name == HashChoice::Keccak.name() {
            ", Keccak trees and transcript"
        } else {
            ""
        }
    }

    /// The hash's name, as `--hash` and a proof file's [`whir_verifier::ProofHash::NAME`] write it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            HashChoice::Poseidon2 => <whir_verifier::Poseidon2 as whir_verifier::ProofHash<BabyBear>>::NAME,
            HashChoice::Keccak => <whir_verifier::Keccak as whir_verifier::ProofHash<BabyBear>>::NAME,
        }
    }
}

/// p3-sumcheck's layout of a multi-table witness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TableLayout {
    /// `SuffixProver` (`Witness::new`: each column one contiguous slot).
    Suffix,
    /// `PrefixProver` (`Witness::new_interleaved`: columns interleaved behind their selectors).
    Prefix,
}

/// Runs `$body` with `F` and `E` the field and extension `$choice` names (a macro: each arm
/// instantiates the generic code for its types).
#[macro_export]
macro_rules! with_extension {
    ($choice:expr, |$f:ident, $e:ident| $body:expr) => {{
        use p3_field::extension::{BinomialExtensionField, QuinticTrinomialExtensionField};
        use $crate::FieldChoice;
        match $choice {
            (FieldChoice::Babybear, 5) => {
                type $f = BabyBear;
                type $e = BinomialExtensionField<BabyBear, 5>;
                $body
            }
            (FieldChoice::Babybear, 8) => {
                type $f = BabyBear;
                type $e = BinomialExtensionField<BabyBear, 8>;
                $body
            }
            (FieldChoice::Koalabear, 5) => {
                type $f = KoalaBear;
                type $e = QuinticTrinomialExtensionField<KoalaBear>;
                $body
            }
            (FieldChoice::Koalabear, 8) => {
                type $f = KoalaBear;
                type $e = BinomialExtensionField<KoalaBear, 8>;
                $body
            }
            (FieldChoice::Babybear, 4) => {
                type $f = BabyBear;
                type $e = whir_prover::EF<BabyBear>;
                $body
            }
            (FieldChoice::Koalabear, 4) => {
                type $f = KoalaBear;
                type $e = whir_prover::EF<KoalaBear>;
                $body
            }
            (field, degree) => anyhow::bail!("{}^{degree} is not an extension this build proves over (degrees 4, 5 and 8)", field.name()),
        }
    }};
}

/// A standard output that cannot be written (`| head` closed early, `> /dev/full`, a file-size
/// limit) makes `println!` panic; that is an I/O error to report, not a crash.
fn report_output_failures() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload.downcast_ref::<String>().map(String::as_str).or_else(|| payload.downcast_ref::<&str>().copied()).unwrap_or("");
        if let Some(reason) = message.strip_prefix("failed printing to stdout: ") {
            eprintln!("error: writing to standard output failed: {reason}");
            std::process::exit(1);
        }
        default(info);
    }));
}

/// Whether the command line is `prove ... --json`, whose errors are also JSON objects.
fn wants_json() -> bool {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    args.first().is_some_and(|a| a == "prove") && args.iter().any(|a| a == "--json")
}

/// A command line clap refuses: its message as usual, and for `prove --json` also as the JSON
/// error object its help promises ("also on error"), with clap's exit status.
fn usage_error(e: clap::Error) -> std::process::ExitCode {
    use clap::error::ErrorKind;
    let informational = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
    if wants_json() && !informational {
        let message = e.render().to_string();
        let message = message.trim().strip_prefix("error: ").unwrap_or(message.trim());
        println!("{}", json!({ "error": message, "usage": true, "verified": false }));
    }
    let code = e.exit_code();
    let _ = e.print();
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(2))
}

/// WHIR_LOG's filter (warnings when unset), or an error naming the variable, as every other
/// WHIR_* value that does not parse is.
fn log_filter() -> Result<tracing_subscriber::EnvFilter, String> {
    match std::env::var("WHIR_LOG") {
        Err(std::env::VarError::NotPresent) => Ok(tracing_subscriber::EnvFilter::new("warn")),
        Err(std::env::VarError::NotUnicode(v)) => Err(format!("WHIR_LOG={v:?} is not valid UTF-8; use a filter such as WHIR_LOG=whir_gpu=debug")),
        Ok(v) => tracing_subscriber::EnvFilter::try_new(&v).map_err(|e| {
            format!("WHIR_LOG={v:?} is not a log filter ({e}); use a level (error, warn, info, debug, trace) or TARGET=LEVEL, e.g. WHIR_LOG=whir_gpu=debug")
        }),
    }
}

/// Diagnostics on stderr (WHIR_LOG), and with the `timeline` feature a per-thread timeline of
/// spans written to WHIR_TIMELINE's file (Chrome's trace format) until the guard drops.
fn init_tracing(filter: tracing_subscriber::EnvFilter) -> Option<Box<dyn std::any::Any>> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let log = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).with_filter(filter);
    let timeline_file = std::env::var_os("WHIR_TIMELINE");
    #[cfg(feature = "timeline")]
    if let Some(path) = timeline_file {
        match std::fs::File::create(&path) {
            Ok(file) => {
                let (chrome, guard) = tracing_chrome::ChromeLayerBuilder::new().writer(file).include_args(true).build();
                let spans_only = tracing_subscriber::filter::filter_fn(|meta| meta.is_span() && *meta.level() <= tracing::Level::INFO)
                    .with_max_level_hint(tracing_subscriber::filter::LevelFilter::INFO);
                tracing_subscriber::registry().with(log).with(chrome.with_filter(spans_only)).init();
                return Some(Box::new(guard));
            }
            Err(e) => {
                tracing_subscriber::registry().with(log).init();
                tracing::warn!("WHIR_TIMELINE={}: cannot create the timeline file ({e}); no timeline is written", path.to_string_lossy());
                return None;
            }
        }
    }
    tracing_subscriber::registry().with(log).init();
    #[cfg(not(feature = "timeline"))]
    if timeline_file.is_some() {
        tracing::warn!("WHIR_TIMELINE is set, but this whir was built without the `timeline` feature: no timeline is written (cargo build --release -p whir-cli --features timeline)");
    }
    None
}

fn main() -> std::process::ExitCode {
    // A write over a file-size limit (`ulimit -f`) fails with EFBIG, which the output code
    // reports and cleans up after, instead of the signal killing the process silently.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to SIG_IGN before any other thread exists (the
    // timeline's writer thread starts below).
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Diagnostics on stderr, off unless asked for: WHIR_LOG=whir_gpu=debug shows each transfer,
    // Merkle commit and pipeline build with its time; warnings (e.g. a GPU fallback) always.
    let filter = match log_filter() {
        Ok(f) => f,
        Err(e) => {
            if wants_json() {
                println!("{}", json!({ "error": e, "verified": false }));
            }
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let _timeline = init_tracing(filter);
    report_output_failures();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let result = match cli.command {
        Command::Info { adapter } => info::info(adapter),
        Command::Prove(args) => prove::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Bench(mut args) => {
            args.apply_config();
            bench::run(args)
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
