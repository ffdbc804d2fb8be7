//! `whir prove --zk`: a zero-knowledge proof of one polynomial with Plonky3's hiding PCS
//! (`HidingWhirPcs`, HVZK-WHIR): resident on the GPU where there is one (`GpuHidingPcs`),
//! Plonky3's own over the GPU's pieces with `--backend gpu-pieces`, over Plonky3's CPU pieces
//! otherwise: the same bytes for the same masks.
//! The masks come from the operating system's generator; `--mask-seed` fixes them, for tests.
//! The file (format version 4) names the mask parameters; it is checked with p3-whir's hiding
//! verifier, through the same reader `whir verify` uses, before it is written.

use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_whir::HidingWhirPcs;
use rand::distr::{Distribution, StandardUniform};
use serde::Serialize;
use whir_gpu::{GpuChallenger, GpuDft};
use whir_prover::{Commitment, ProverError, WhirExtension};
use whir_verifier::{hiding_points, zk_config, HidingProofFileOf, ParamSource, ReadLimits, ZkMasks};

use super::*;

/// A hiding proof of `args`'s polynomial over `F` with its challenges in `E`.
pub(super) fn prove_zk<F: ProverField, E: WhirExtension<F> + p3_field::TwoAdicField + whir_gpu::GpuExtension<F>>(args: ProveArgs) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
    StandardUniform: Distribution<F> + Distribution<E>,
{
    let masks = ZkMasks::DEFAULT;
    let memory = host_memory::host_memory(args.memory);
    let mut config = None;
    let (params, out, evals) = prepare_proof::<F>(&args, |params| {
        config = Some(zk_config::<F, E, GpuChallenger<F>>(params, masks, ParamSource::Flags)?);
        if args.cpu_for_sure(params.num_vars) {
            memory.check::<F, E>(params, None)?;
        }
        Ok(())
    })?;
    let config = config.expect("made by the check");
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
    let on_cpu = |evals: Vec<F>, config| -> Result<(Commitment<F>, Vec<u8>, String)> {
        let mmcs = whir_verifier::hash::cpu_mmcs_with::<F>(0, params.leaf);
        let pcs = HidingWhirPcs::<E, F, Radix2DFTSmallBatch<F>, _, GpuChallenger<F>, StdRng>::new(config, Radix2DFTSmallBatch::default(), mmcs, rng());
        let (c, p) = prove_with::<F, E, _>(&pcs, evals, &params, &mut Plonky3Pieces::<F>::challenger(&CpuProver))?;
        Ok((c, p, "Plonky3's CPU pieces".to_string()))
    };
    let start = Instant::now();
    let (commitment, proof, on) = match &gpu {
        Some(g) if args.backend == BackendChoice::GpuPieces => {
            let pcs =
                HidingWhirPcs::<E, F, GpuDft<F>, _, GpuChallenger<F>, StdRng>::new(config, GpuDft::<F>::on(g.context().clone()), g.mmcs(params.leaf), rng());
            let (c, p) = prove_with::<F, E, _>(&pcs, evals, &params, &mut g.challenger())?;
            (c, p, format!("Plonky3's hiding PCS over the GPU's pieces: {}", g.context().summary()))
        }
        Some(g) => {
            let pcs = g.hiding_pcs::<E, GpuChallenger<F>, StdRng>(config.clone(), params.leaf, rng())?;
            match prove_with::<F, E, _>(&pcs, evals.clone(), &params, &mut g.challenger()) {
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
    };
    let prove_time = start.elapsed();
    let bytes = HidingProofFileOf::<F, E>::new(&params, masks, commitment, proof).to_bytes();
    // Read back and verified as `whir verify` will, before anything is written.
    let started = Instant::now();
    HidingProofFileOf::<F, E>::from_bytes_with(&bytes, ReadLimits::default())
        .and_then(|file| file.verify(&params, masks))
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
            "prove_ms": ms(prove_time),
            "verify_ms": ms(verify_time),
            "proof_bytes": bytes.len(),
            "out": args.out.display().to_string(),
            "verified": true,
        });
        println!("{summary}");
    } else {
        println!(
            "hiding proof ({masks}; {randomness}) over {}, {params}, on {on}: proved in {:.1} ms, verified by p3-whir's hiding verifier in {:.1} ms, \
             {} bytes written to {}",
            E::NAME,
            ms(prove_time),
            ms(verify_time),
            bytes.len(),
            args.out.display()
        );
    }
    Ok(())
}

/// Commits to `evals` with `pcs` and opens it at the points the commitment fixes
/// ([`hiding_points`]): the commitment and the postcard-serialized proof.
fn prove_with<F: ProverField, E: WhirExtension<F>, P>(
    pcs: &P,
    evals: Vec<F>,
    params: &Params,
    challenger: &mut GpuChallenger<F>,
) -> Result<(Commitment<F>, Vec<u8>)>
where
    P: MultilinearPcs<E, GpuChallenger<F>, Val = F, Witness = Poly<F>, OpeningProtocol = Vec<Point<E>>, Commitment = Commitment<F>>,
    P::Proof: Serialize,
    P::ProverError: std::error::Error + Send + Sync + 'static,
{
    let (commitment, data) = pcs.commit(Poly::new(evals), challenger).map_err(|e| anyhow::Error::new(e).context("the hiding commitment failed"))?;
    let points = hiding_points::<F, E>(&commitment, params);
    let proof = pcs.open(data, points, challenger).map_err(|e| anyhow::Error::new(e).context("the hiding opening failed"))?;
    Ok((commitment, postcard::to_allocvec(&proof)?))
}
