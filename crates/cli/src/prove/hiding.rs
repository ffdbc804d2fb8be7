//! `whir prove --zk`: a zero-knowledge proof of one polynomial with Plonky3's hiding PCS
//! (`HidingWhirPcs`, HVZK-WHIR): resident on the GPU where there is one (`GpuHidingPcs`),
//! Plonky3's own over the GPU's pieces with `--backend gpu-pieces`, over Plonky3's CPU pieces
//! otherwise: the same bytes for the same masks. With `--hash keccak` over Plonky3's Keccak
//! configuration: resident (`GpuProver::keccak_hiding_pcs`) or Plonky3's own over its CPU pieces
//! and Keccak MMCS (whose Keccak challenger grinds any witness: the two agree where the grinds do).
//! The masks come from the operating system's generator; `--mask-seed` fixes them, for tests.
//! The file (format version 4) names the mask parameters and the hash; it is checked with
//! p3-whir's hiding verifier, through the same reader `whir verify` uses, before it is written.

use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_symmetric::MerkleCap;
use p3_whir::HidingWhirPcs;
use rand::distr::{Distribution, StandardUniform};
use serde::Serialize;
use whir_gpu::{GpuChallenger, GpuDft, GpuKeccak, GpuKeccakChallenger, GpuKeccakHash};
use whir_prover::{ProverError, WhirExtension};
use whir_verifier::hash::{cpu_keccak_mmcs, keccak_challenger, CpuKeccakMmcs, KeccakChallenger};
use whir_verifier::{hiding_points_over, zk_config, HidingProofFileOf, Keccak, ParamSource, Poseidon2, ProofHash, ReadLimits, ZkMasks};

use super::*;

/// A hiding proof of `args`'s polynomial over `F` with its challenges in `E`, its trees and
/// transcript hashed as `--hash` says.
pub(super) fn prove_zk<F: ProverField, E: WhirExtension<F> + p3_field::TwoAdicField + whir_gpu::GpuExtension<F>>(args: ProveArgs) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
    StandardUniform: Distribution<F> + Distribution<E>,
{
    let masks = ZkMasks::DEFAULT;
    let memory = host_memory::host_memory(args.memory);
    let keccak = args.hash == crate::HashChoice::Keccak;
    if keccak {
        crate::HashChoice::check_keccak_flags(args.config, args.security.leaf, args.backend == BackendChoice::GpuPieces)?;
    }
    let (params, out, evals) = prepare_proof::<F>(&args, |params| {
        // (The same numbers make the same configuration over either hash's challenger.)
        zk_config::<F, E, GpuChallenger<F>>(params, masks, ParamSource::Flags)?;
        if args.cpu_for_sure(params.num_vars) {
            memory.check::<F, E>(params, None)?;
        }
        Ok(())
    })?;
    let randomness = match args.mask_seed {
        Some(seed) => {
            eprintln!(
                "warning: --mask-seed {seed} makes the masks reproducible: whoever knows the seed can remove them, so this proof hides nothing \
                 from them; use it for tests only (without it the masks come from the operating system's generator)"
            );
            format!("masks from --mask-seed {seed} (tests only: not hiding from whoever knows it)")
        }
        None => "masks from the operating system's generator".to_string(),
    };
    let rng = || args.mask_seed.map_or_else(rand::make_rng::<StdRng>, StdRng::seed_from_u64);
    let gpu = match args.backend {
        BackendChoice::Cpu => None,
        BackendChoice::Gpu | BackendChoice::GpuPieces => Some(open_gpu::<F>(GpuOptions::from_env()?).context("--zk on the GPU")?),
        BackendChoice::Auto if args.vars < AUTO_GPU_MIN_VARS => None,
        BackendChoice::Auto => open_gpu::<F>(GpuOptions::from_env()?).ok().filter(|g| !g.context().summary().is_software()),
    };
    let start = Instant::now();
    if keccak {
        let (commitment, proof, on) = prove_zk_keccak::<F, E>(gpu.as_ref(), &params, masks, evals, rng)?;
        let file = HidingProofFileOf::<F, E, Keccak>::new(&params, masks, commitment, proof);
        return write_checked(&args, &out, file, start.elapsed(), &randomness, &on);
    }
    let (commitment, proof, on) = prove_zk_poseidon2::<F, E>(&args, gpu.as_ref(), &params, masks, evals, rng)?;
    let file = HidingProofFileOf::<F, E, Poseidon2>::new(&params, masks, commitment, proof);
    write_checked(&args, &out, file, start.elapsed(), &randomness, &on)
}

/// Writes a hiding proof just made once it is read back and verified as `whir verify` will
/// read it, with its summary.
fn write_checked<F: ProverField, E: WhirExtension<F> + p3_field::TwoAdicField, H: ProofHash<F>>(
    args: &ProveArgs,
    out: &OutputFile,
    file: HidingProofFileOf<F, E, H>,
    prove_time: std::time::Duration,
    randomness: &str,
    on: &str,
) -> Result<()>
where
    StandardUniform: Distribution<F> + Distribution<E>,
{
    let (params, masks) = (&file.params, file.masks);
    let bytes = file.to_bytes();
    // Read back and verified as `whir verify` will, before anything is written.
    let started = Instant::now();
    HidingProofFileOf::<F, E, H>::from_bytes_with(&bytes, ReadLimits::default())
        .and_then(|file| file.verify(params, masks))
        .context("the hiding proof just made did not verify; nothing was written")?;
    let verify_time = started.elapsed();
    out.write(&bytes)?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    if args.json {
        let summary = json!({
            "hiding": true,
            "ell_zk": masks.ell_zk,
            "mask_log_inv_rate": masks.mask_log_inv_rate,
            "randomness": randomness,
            "prover": on,
            "params": params.to_string(),
            "extension": E::NAME,
            "hash": H::NAME,
            "prove_ms": ms(prove_time),
            "verify_ms": ms(verify_time),
            "proof_bytes": bytes.len(),
            "out": args.out.display().to_string(),
            "verified": true,
        });
        println!("{summary}");
    } else {
        println!(
            "hiding proof ({masks}; {randomness}) over {}{}, {params}, on {on}: proved in {:.1} ms, verified by p3-whir's hiding verifier in {:.1} ms, \
             {} bytes written to {}",
            E::NAME,
            crate::HashChoice::note(H::NAME),
            ms(prove_time),
            ms(verify_time),
            bytes.len(),
            args.out.display()
        );
    }
    Ok(())
}

/// A commitment and its postcard-serialized proof.
type CommittedProof<F, H> = (MerkleCap<F, <H as ProofHash<F>>::Digest>, Vec<u8>);

/// Commits to `evals` with `pcs` and opens it at the points the commitment fixes
/// ([`hiding_points_over`]): the commitment and the postcard-serialized proof.
fn prove_with<F: ProverField, E: WhirExtension<F>, H: ProofHash<F>, P, C>(
    pcs: &P,
    evals: Vec<F>,
    params: &Params,
    challenger: &mut C,
) -> Result<CommittedProof<F, H>>
where
    P: MultilinearPcs<E, C, Val = F, Witness = Poly<F>, OpeningProtocol = Vec<Point<E>>, Commitment = MerkleCap<F, H::Digest>>,
    P::Proof: Serialize,
    P::ProverError: std::error::Error + Send + Sync + 'static,
{
    let (commitment, data) = pcs.commit(Poly::new(evals), challenger).map_err(|e| anyhow::Error::new(e).context("the hiding commitment failed"))?;
    let points = hiding_points_over::<F, E, H>(&commitment, params);
    let proof = pcs.open(data, points, challenger).map_err(|e| anyhow::Error::new(e).context("the hiding opening failed"))?;
    Ok((commitment, postcard::to_allocvec(&proof)?))
}

/// A hiding proof over Poseidon2 (the default): resident on `gpu`, Plonky3's hiding PCS over the
/// GPU's pieces (`--backend gpu-pieces`), or over Plonky3's CPU pieces.
fn prove_zk_poseidon2<F: ProverField, E: WhirExtension<F> + p3_field::TwoAdicField + whir_gpu::GpuExtension<F>>(
    args: &ProveArgs,
    gpu: Option<&GpuProver<F>>,
    params: &Params,
    masks: ZkMasks,
    evals: Vec<F>,
    rng: impl Fn() -> StdRng,
) -> Result<(whir_prover::Commitment<F>, Vec<u8>, String)>
where
    GpuProver<F>: Plonky3Pieces<F>,
    StandardUniform: Distribution<F> + Distribution<E>,
{
    let config = zk_config::<F, E, GpuChallenger<F>>(params, masks, ParamSource::Flags)?;
    let on_cpu = |evals: Vec<F>, config| -> Result<(whir_prover::Commitment<F>, Vec<u8>, String)> {
        let mmcs = whir_verifier::hash::cpu_mmcs_with::<F>(0, params.leaf);
        let pcs = HidingWhirPcs::<E, F, Radix2DFTSmallBatch<F>, _, GpuChallenger<F>, StdRng>::new(config, Radix2DFTSmallBatch::default(), mmcs, rng());
        let (c, p) = prove_with::<F, E, Poseidon2, _, _>(&pcs, evals, params, &mut Plonky3Pieces::<F>::challenger(&CpuProver))?;
        Ok((c, p, "Plonky3's CPU pieces".to_string()))
    };
    Ok(match gpu {
        Some(g) if args.backend == BackendChoice::GpuPieces => {
            let pcs =
                HidingWhirPcs::<E, F, GpuDft<F>, _, GpuChallenger<F>, StdRng>::new(config, GpuDft::<F>::on(g.context().clone()), g.mmcs(params.leaf), rng());
            let (c, p) = prove_with::<F, E, Poseidon2, _, _>(&pcs, evals, params, &mut g.challenger())?;
            (c, p, format!("Plonky3's hiding PCS over the GPU's pieces: {}", g.context().summary()))
        }
        Some(g) => {
            let pcs = g.hiding_pcs::<E, GpuChallenger<F>, StdRng>(config.clone(), params.leaf, rng())?;
            match prove_with::<F, E, Poseidon2, _, _>(&pcs, evals.clone(), params, &mut g.challenger()) {
                Ok((c, p)) => (c, p, format!("the GPU, resident: {}", g.context().summary())),
                // The GPU failed (out of memory, a lost device): the proof is made again from
                // the start on the host, with masks of its own.
                Err(e) if matches!(e.downcast_ref::<ProverError>(), Some(ProverError::Gpu(_) | ProverError::PlayedAhead(_))) => {
                    eprintln!("warning: the resident GPU prover failed ({e:#}); proving on Plonky3's CPU pieces instead");
                    on_cpu(evals, config)?
                }
                Err(e) => return Err(e),
            }
        }
        None => on_cpu(evals, config)?,
    })
}

/// A hiding proof over Plonky3's Keccak configuration: resident on `gpu`
/// (`GpuProver::keccak_hiding_pcs`, its grinds on the GPU), else p3-whir's `HidingWhirPcs` over
/// Plonky3's CPU pieces and Keccak MMCS; a GPU failure proves again on the CPU.
fn prove_zk_keccak<F: ProverField, E: WhirExtension<F> + p3_field::TwoAdicField + whir_gpu::GpuExtension<F>>(
    gpu: Option<&GpuProver<F>>,
    params: &Params,
    masks: ZkMasks,
    evals: Vec<F>,
    rng: impl Fn() -> StdRng,
) -> Result<(MerkleCap<F, whir_verifier::hash::KeccakDigest>, Vec<u8>, String)>
where
    StandardUniform: Distribution<F> + Distribution<E>,
{
    let on_cpu = |evals: Vec<F>| -> Result<_> {
        let config = zk_config::<F, E, KeccakChallenger<F>>(params, masks, ParamSource::Flags)?;
        let pcs = HidingWhirPcs::<E, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, KeccakChallenger<F>, StdRng>::new(
            config,
            Radix2DFTSmallBatch::default(),
            cpu_keccak_mmcs::<F>(0),
            rng(),
        );
        let (c, p) = prove_with::<F, E, Keccak, _, _>(&pcs, evals, params, &mut keccak_challenger::<F>())?;
        Ok((c, p, "Plonky3's CPU pieces".to_string()))
    };
    let Some(g) = gpu else { return on_cpu(evals) };
    let config = zk_config::<F, E, GpuKeccakChallenger<F>>(params, masks, ParamSource::Flags)?;
    let pcs = g.keccak_hiding_pcs::<E, GpuKeccakChallenger<F>, StdRng>(config, rng())?;
    let mut challenger = GpuKeccakChallenger::<F>::new(GpuKeccakHash::new(vec![], Some(GpuKeccak::new(g.context().clone()))));
    match prove_with::<F, E, Keccak, _, _>(&pcs, evals.clone(), params, &mut challenger) {
        Ok((c, p)) => Ok((c, p, format!("the GPU, resident: {}", g.context().summary()))),
        // The GPU failed (out of memory, a lost device): the proof is made again from the start
        // on the host, with masks of its own.
        Err(e) if matches!(e.downcast_ref::<ProverError>(), Some(ProverError::Gpu(_) | ProverError::PlayedAhead(_))) => {
            eprintln!("warning: the resident GPU prover failed ({e:#}); proving on Plonky3's CPU pieces instead");
            on_cpu(evals)
        }
        Err(e) => Err(e),
    }
}
