//! `whir verify`: a proof file against the parameters (and tables) the verifier expects, or
//! the file's own above a floor, with the stock Plonky3 verifier.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use p3_baby_bear::BabyBear;
use p3_koala_bear::KoalaBear;
use whir_prover::{FileParamsFloor, LeafSponge, Params, ProofFileOf, ReadLimits, Soundness, WhirField, Workload};
use whir_verifier::{Keccak, Poseidon2, ProofHash, WEAK_SECURITY_BITS};

use crate::{parse_degree, parse_leaf_width, FieldChoice};

/// The parameters a verifier expects; each defaults to `whir prove`'s default.
#[derive(clap::Args)]
pub(crate) struct VerifyArgs {
    file: PathBuf,
    /// The field the proof must be over (default: the one the file names).
    #[arg(long, value_enum)]
    field: Option<FieldChoice>,
    /// The degree of the extension the proof's challenges must live in: 4, 5 or 8 (default: the
    /// one the file names).
    #[arg(long, value_parser = parse_degree)]
    extension: Option<usize>,
    /// The hash the proof's trees and transcript must use: poseidon2 or keccak (Plonky3's
    /// Keccak configuration; default: the one the file names).
    #[arg(long, value_enum)]
    hash: Option<crate::HashChoice>,
    /// The named configuration the proof must have been made with (field, extension,
    /// soundness, security, PoW budget and leaf width; as `whir prove --config`).
    #[arg(long, value_parser = whir_verifier::named_config, conflicts_with_all = ["field", "extension", "security", "pow_bits", "soundness", "leaf", "accept_file_params"])]
    config: Option<&'static whir_verifier::NamedConfig>,
    #[arg(long)]
    vars: Option<usize>,
    #[arg(long)]
    fold: Option<usize>,
    #[arg(long)]
    rate: Option<usize>,
    #[arg(long)]
    security: Option<usize>,
    #[arg(long = "pow-bits")]
    pow_bits: Option<usize>,
    #[arg(long)]
    soundness: Option<String>,
    #[arg(long)]
    points: Option<usize>,
    /// The Poseidon2 width the proof's Merkle leaves must hash with (16, the default, or 24).
    #[arg(long = "leaf-width", value_parser = parse_leaf_width)]
    leaf: Option<LeafSponge>,
    /// The tables a multi-table proof file must prove (as `whir prove --tables`).
    #[arg(long, conflicts_with_all = ["vars", "points"])]
    tables: Option<String>,
    /// Accept whatever parameters (and tables) the file's header names (printed), at
    /// --min-security or more, instead of checking them against yours.
    #[arg(long, conflicts_with_all = ["vars", "fold", "rate", "security", "pow_bits", "soundness", "points", "leaf", "tables"])]
    accept_file_params: bool,
    /// With --accept-file-params: the least security accepted, in bits.
    #[arg(long, default_value_t = WEAK_SECURITY_BITS, requires = "accept_file_params")]
    min_security: usize,
    /// With --accept-file-params: also accept a level resting on the capacity bound, a
    /// conjecture (by default only proven bounds: johnson, unique).
    #[arg(long, requires = "accept_file_params")]
    allow_conjecture: bool,
    /// Most MiB read from the proof file, whatever its header claims (honest proofs are a few
    /// MiB at most); reading and verifying hold at most 8 MiB + 8x this (and 1 KiB a column of
    /// a multi-table file's list). Raise it only for a large proof you trust.
    #[arg(long = "max-proof-mib", value_name = "MIB", default_value_t = (ReadLimits::DEFAULT_MAX_FILE_BYTES >> 20) as u64,
          value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    max_proof_mib: u64,
    /// Demand a hiding (zero-knowledge) proof, `whir prove --zk`'s: a file that does not hide
    /// is refused. A hiding file is verified as one either way.
    #[arg(long)]
    zk: bool,
    /// The mask code length `ell_zk` a hiding proof must have been made with.
    #[arg(long = "zk-ell", default_value_t = whir_verifier::ZkMasks::DEFAULT.ell_zk)]
    zk_ell: u32,
    /// log2 of the inverse rate of the masks a hiding proof must have been made with.
    #[arg(long = "zk-mask-rate", default_value_t = whir_verifier::ZkMasks::DEFAULT.mask_log_inv_rate)]
    zk_mask_rate: u32,
}

/// `whir verify`: a named configuration's values applied, then [`verify`].
pub(crate) fn run(mut args: VerifyArgs) -> Result<()> {
    if let Some(c) = args.config {
        (args.field, args.extension) = (FieldChoice::parse(c.field), Some(c.degree));
        (args.security, args.pow_bits, args.soundness) = (Some(c.security_bits), Some(c.pow_bits), Some(c.soundness.flag_value().to_string()));
        args.leaf = Some(c.leaf);
        // A named configuration names Poseidon2's trees.
        if args.hash == Some(crate::HashChoice::Keccak) {
            crate::HashChoice::check_keccak_flags(Some(c), c.leaf, false)?;
        }
        args.hash = Some(crate::HashChoice::Poseidon2);
    }
    if args.hash == Some(crate::HashChoice::Keccak) {
        crate::HashChoice::check_keccak_flags(None, args.leaf.unwrap_or_default(), false)?;
    }
    verify(args)
}

fn verify(args: VerifyArgs) -> Result<()> {
    let file = std::fs::File::open(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        bail!("{} is a directory, not a proof file", args.file.display());
    }
    let limits = usize::try_from(args.max_proof_mib << 20)
        .map(ReadLimits::new)
        .map_err(|_| anyhow::anyhow!("--max-proof-mib {} does not fit this machine's address space", args.max_proof_mib))?;
    // The field the file names, from its first bytes (a file too short or malformed to say is
    // read as BabyBear's, whose reader names what is wrong with it).
    let mut prefix = Vec::new();
    let mut file = file;
    (&mut file).take(whir_verifier::PREFIX_BYTES as u64).read_to_end(&mut prefix).with_context(|| format!("reading {}", args.file.display()))?;
    // (field, degree) as the file names them: "koalabear^8".
    let named = whir_verifier::proof_file_extension(&prefix).ok().and_then(|name| {
        let (field, degree) = name.split_once('^')?;
        Some((FieldChoice::parse(field)?, degree.parse::<usize>().ok()?))
    });
    let want = (args.field, args.extension);
    if let Some((field, degree)) = named {
        if want.0.is_some_and(|f| f != field) || want.1.is_some_and(|d| d != degree) {
            let asked: Vec<String> =
                [want.0.map(|f| format!("--field {}", f.name())), want.1.map(|d| format!("--extension {d}"))].into_iter().flatten().collect();
            bail!(
                "proof file {} is a proof over {}^{degree}, not what {} asks for; drop them to verify it as the proof it is",
                args.file.display(),
                field.name(),
                asked.join(" ")
            );
        }
    }
    let named_hash = whir_verifier::proof_file_hash(&prefix).ok();
    if let (Some(want), Some(hash)) = (args.hash, named_hash) {
        if want.name() != hash {
            bail!(
                "proof file {} is a proof over {hash} trees and transcript, not what --hash {} asks for; verify it with `--hash {hash}` \
                 (or without --hash, to verify it as the proof it is)",
                args.file.display(),
                want.name()
            );
        }
    }
    let hiding = whir_verifier::proof_file_is_hiding(&prefix);
    let reader = std::io::Cursor::new(prefix).chain(file);
    let (field, degree) = named.unwrap_or((want.0.unwrap_or(FieldChoice::Babybear), want.1.unwrap_or(4)));
    let keccak = named_hash.map_or(args.hash == Some(crate::HashChoice::Keccak), |h| h == crate::HashChoice::Keccak.name());
    if hiding && keccak {
        return crate::with_extension!((field, degree), |F, E| verify_hiding::<F, E, Keccak>(args, reader, limits));
    }
    if hiding {
        return crate::with_extension!((field, degree), |F, E| verify_hiding::<F, E, Poseidon2>(args, reader, limits));
    }
    if args.zk {
        bail!("proof file {} is a proof that does not hide (not `whir prove --zk`'s), and --zk demands a hiding one", args.file.display());
    }
    if keccak {
        return crate::with_extension!((field, degree), |F, E| verify_over::<F, E, Keccak>(args, reader, limits));
    }
    crate::with_extension!((field, degree), |F, E| verify_over::<F, E, Poseidon2>(args, reader, limits))
}

/// The parameters the flags expect of one polynomial (each defaulting to `whir prove`'s).
fn expected_params(args: &VerifyArgs) -> Result<Params> {
    let d = Params::defaults();
    Ok(Params {
        num_vars: args.vars.unwrap_or(d.num_vars),
        fold: args.fold.unwrap_or(d.fold),
        log_inv_rate: args.rate.unwrap_or(d.log_inv_rate),
        security_bits: args.security.unwrap_or(d.security_bits),
        pow_bits: args.pow_bits.unwrap_or(d.pow_bits),
        soundness: args.soundness.as_deref().map_or(Ok(d.soundness), Soundness::parse)?,
        points: args.points.unwrap_or(d.points),
        leaf: args.leaf.unwrap_or(d.leaf),
    })
}

/// `whir verify` of a hiding proof file over `F` with challenges in `E`: against the
/// parameters and masks the flags expect, or the file's own above a floor.
fn verify_hiding<F: WhirField, E: whir_prover::WhirExtension<F> + p3_field::TwoAdicField, H: ProofHash<F>>(
    args: VerifyArgs,
    file: impl Read,
    limits: ReadLimits,
) -> Result<()>
where
    rand::distr::StandardUniform: rand::distr::Distribution<E> + rand::distr::Distribution<F>,
{
    let what = format!("hiding proof file {}", args.file.display());
    if args.tables.is_some() {
        bail!("{what} proves one polynomial (hiding proofs take no table list); drop --tables");
    }
    let proof = whir_verifier::HidingProofFileOf::<F, E, H>::read_with(file, limits).context(what.clone())?;
    let masks = whir_verifier::ZkMasks { ell_zk: args.zk_ell, mask_log_inv_rate: args.zk_mask_rate };
    let (params, how) = if args.accept_file_params {
        let floor = FileParamsFloor { min_security_bits: args.min_security, allow_conjectured: args.allow_conjecture };
        proof.verify_file_params(floor).context(what)?;
        (proof.params.clone(), format!("verified with the file's own parameters and masks (--accept-file-params, at least {} bits)", args.min_security))
    } else {
        let expected = expected_params(&args)?;
        expected.validate(whir_prover::ParamSource::Flags)?;
        proof.verify(&expected, masks).context(what)?;
        (expected, "verified".to_string())
    };
    for warning in params.warnings() {
        eprintln!("warning: {warning}");
    }
    println!("{how}: a hiding proof ({}), {params}, over {}{}; the security rests on {}", proof.masks, E::NAME, hash_note::<F, H>(), params.soundness.basis());
    Ok(())
}

/// `whir verify` of a proof file over `F` with challenges in `E`.
fn verify_over<F: WhirField, E: whir_prover::WhirExtension<F>, H: ProofHash<F>>(args: VerifyArgs, file: impl Read, limits: ReadLimits) -> Result<()> {
    let what = format!("proof file {}", args.file.display());
    let (params, how) = if args.accept_file_params {
        let proof = ProofFileOf::<F, E, H>::read_with(file, None, limits).context(what.clone())?;
        let floor = FileParamsFloor { min_security_bits: args.min_security, allow_conjectured: args.allow_conjecture };
        proof.verify_file_params(floor).context(what)?;
        let tables = proof.tables.as_ref().map_or(String::new(), |t| format!(", {} tables: {}", t.tables.len(), t.spec()));
        (proof.params, format!("verified with the file's own parameters (--accept-file-params, at least {} bits{tables})", args.min_security))
    } else {
        let base = expected_params(&args)?;
        match args.tables.as_deref().map(Workload::parse).transpose()? {
            Some(tables) => {
                // The tables set n and the points: the fold is checked against them, not the
                // default n.
                let expected = tables.params_checked(&base)?;
                let proof = ProofFileOf::<F, E, H>::read_with(file, Some(&expected), limits).context(what.clone())?;
                proof.verify_tables(&expected, &tables).context(what)?;
                (expected, format!("verified ({} tables: {})", tables.tables.len(), tables.spec()))
            }
            None => {
                let expected = base;
                expected.validate(whir_prover::ParamSource::Flags)?;
                let proof = ProofFileOf::<F, E, H>::read_with(file, Some(&expected), limits).context(what.clone())?;
                proof.verify(&expected).context(what)?;
                (expected, "verified".to_string())
            }
        }
    };
    // As `prove` does: a weak or conjectured level is verified, and said to be so.
    for warning in params.warnings() {
        eprintln!("warning: {warning}");
    }
    println!("{how}: {params}, over {}{}; the security rests on {}", E::NAME, hash_note::<F, H>(), params.soundness.basis());
    Ok(())
}

/// What a summary adds after the extension for a proof hashed by `H` (nothing for Poseidon2).
fn hash_note<F: WhirField, H: ProofHash<F>>() -> &'static str {
    crate::HashChoice::note(H::NAME)
}
