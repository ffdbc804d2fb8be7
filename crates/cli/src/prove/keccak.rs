//! `whir prove --hash keccak`: one polynomial or a multi-table witness over Plonky3's Keccak
//! configuration (p3-whir's Keccak test: `MerkleTreeMmcs` over `SerializingHasher<PaddingFreeSponge<
//! KeccakF, 25, 17, 4>>`, the transcript `SerializingChallenger32<F, HashChallenger<u8,
//! Keccak256Hash, 32>>`), the proofs an EVM verifier checks with its Keccak opcode: on the GPU,
//! resident (`GpuProver::keccak_pcs_over`, grinds on the GPU through `GpuKeccakHash`), else
//! Plonky3's `WhirProver` on the CPU. The file names its hash (`p3-keccak/<extension>`) and is
//! read back and checked by p3-whir's verifier, as `whir verify` will, before it is written.

use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::layout::{Table, Witness};
use p3_sumcheck::OpeningProtocol;
use p3_whir::WhirProver;
use rand::distr::{Distribution, StandardUniform};
use whir_gpu::{GpuKeccak, GpuKeccakChallenger, GpuKeccakHash};
use whir_prover::{ProverLayout, WhirExtension};
use whir_verifier::hash::{cpu_keccak_mmcs, keccak_challenger, CpuKeccakMmcs, KeccakChallenger, KeccakCommitment};
use whir_verifier::{KeccakProofFileOf, ParamSource};

use super::*;

/// What a Keccak proof proves: one polynomial (a version-1 file) or tables (version 3).
struct Instance<F: ProverField> {
    params: Params,
    tables: Option<Workload>,
    columns: Vec<Table<F>>,
}

impl<F: ProverField> Instance<F> {
    fn witness(&self) -> Witness<F> {
        Witness::new(self.columns.clone(), self.params.fold)
    }

    fn protocol(&self) -> OpeningProtocol {
        match &self.tables {
            Some(w) => w.protocol(self.params.fold),
            None => whir_verifier::opening_protocol(&self.params),
        }
    }

    /// Commits and opens with `pcs` over `challenger` (the table list, if any, observed first, as
    /// the verifier does): the commitment, the postcard-serialized proof and the commit and open
    /// times.
    #[allow(clippy::type_complexity)]
    fn prove<E, P, C>(&self, pcs: &P, mut challenger: C) -> Result<(KeccakCommitment<F>, Vec<u8>, std::time::Duration, std::time::Duration)>
    where
        E: WhirExtension<F>,
        C: p3_challenger::FieldChallenger<F>,
        P: MultilinearPcs<E, C, Val = F, Witness = Witness<F>, OpeningProtocol = OpeningProtocol, Commitment = KeccakCommitment<F>>,
        P::Proof: serde::Serialize,
        P::ProverError: std::error::Error + Send + Sync + 'static,
    {
        if let Some(w) = &self.tables {
            w.observe(&mut challenger);
        }
        let start = Instant::now();
        let (commitment, data) = pcs.commit(self.witness(), &mut challenger).map_err(|e| anyhow::Error::new(e).context("the Keccak commitment failed"))?;
        let commit = start.elapsed();
        let proof = pcs.open(data, self.protocol(), &mut challenger).map_err(|e| anyhow::Error::new(e).context("the Keccak opening failed"))?;
        Ok((commitment, postcard::to_allocvec(&proof)?, commit, start.elapsed() - commit))
    }
}

/// `whir prove --hash keccak` over `F` with challenges in `E`.
pub(super) fn prove_keccak<F: ProverField, E: GpuProvable<F>>(args: ProveArgs) -> Result<()>
where
    StandardUniform: Distribution<F>,
{
    crate::HashChoice::check_keccak_flags(args.config, args.security.leaf, args.backend == BackendChoice::GpuPieces)?;
    if args.gpu_memory == Some(0) {
        bail!("--gpu-memory 0 leaves the GPU no memory; give a budget in MiB, or use --backend cpu");
    }
    let memory = host_memory::host_memory(args.memory);
    let (instance, out) = match args.tables.clone() {
        None => {
            let (params, out, evals) = prepare_proof::<F>(&args, |params| {
                params.config_over::<E, KeccakChallenger<F>>()?;
                if args.cpu_for_sure(params.num_vars) {
                    memory.check::<F, E>(params, None)?;
                }
                Ok(())
            })?;
            let columns = vec![Table::new(RowMajorMatrix::new(evals, 1 << params.num_vars))];
            (Instance { params, tables: None, columns }, out)
        }
        Some(spec) => {
            let workload = Workload::parse(&spec)?;
            let params = args.table_params(&workload)?;
            params.config_over_from::<E, KeccakChallenger<F>>(ParamSource::Tables)?;
            if args.cpu_for_sure(params.num_vars) {
                memory.check::<F, E>(&params, Some(&workload))?;
            }
            let out = OutputFile::prepare(&args.out, "--out", args.force, &[])?;
            for warning in params.warnings() {
                eprintln!("warning: {warning}");
            }
            let columns = whir_prover::random_tables::<F, _>(&workload, &mut StdRng::seed_from_u64(args.seed.unwrap_or(1)));
            (Instance { params, tables: Some(workload), columns }, out)
        }
    };
    let params = &instance.params;
    let (gpu, mut why) = resident_backend::<F>(args.backend, args.gpu_memory, params.num_vars)?;
    if gpu.is_none() && !args.cpu_for_sure(params.num_vars) {
        memory.check::<F, E>(params, instance.tables.as_ref())?;
    }
    let on_cpu = || -> Result<_> {
        let config = params.config_over::<E, KeccakChallenger<F>>()?;
        let pcs = WhirProver::<E, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, KeccakChallenger<F>, ProverLayout<F, E>>::new(
            config,
            Radix2DFTSmallBatch::default(),
            cpu_keccak_mmcs::<F>(0),
        );
        instance.prove::<E, _, _>(&pcs, keccak_challenger::<F>())
    };
    let start = Instant::now();
    let (name, (commitment, proof, commit_time, open_time)) = match &gpu {
        Some(g) => {
            let keccak = GpuKeccak::new(g.context().clone());
            let resident = params.config_over::<E, GpuKeccakChallenger<F>>().map_err(anyhow::Error::from).and_then(|config| {
                let pcs = g.keccak_pcs_over::<ProverLayout<F, E>, E, GpuKeccakChallenger<F>>(config)?;
                instance.prove::<E, _, _>(&pcs, GpuKeccakChallenger::<F>::new(GpuKeccakHash::new(vec![], Some(keccak))))
            });
            match resident {
                Ok(p) => ("gpu", p),
                Err(e) if args.backend == BackendChoice::Gpu => return Err(e.context("--backend gpu")),
                // The GPU failed (out of memory, a lost device): the proof is made again from
                // the start on the host, where the CPU's estimate fits.
                Err(e) => {
                    memory
                        .check::<F, E>(params, instance.tables.as_ref())
                        .map_err(|refused| anyhow::anyhow!("the GPU prover failed ({e:#}), and the CPU cannot prove this either: {refused}"))?;
                    eprintln!("warning: the resident GPU prover failed ({e:#}); proving on the CPU instead");
                    why = format!("the GPU prover failed ({e:#})");
                    ("cpu (Plonky3's WhirProver)", on_cpu()?)
                }
            }
        }
        None => ("cpu (Plonky3's WhirProver)", on_cpu()?),
    };
    let prove_time = start.elapsed();
    let file = match &instance.tables {
        None => KeccakProofFileOf::<F, E>::new(params, commitment, proof),
        Some(w) => KeccakProofFileOf::<F, E>::new_tables(params, w.clone(), commitment, proof),
    };
    let bytes = file.to_bytes();
    // Read back and verified as `whir verify` reads it, before anything is written.
    let (check, verified) = Checked::verify_then_write(&bytes, &out, &args.out, || {
        KeccakProofFileOf::<F, E>::from_bytes(&bytes).and_then(|f| match &instance.tables {
            None => f.verify(params),
            Some(w) => f.verify_tables(params, w),
        })
    })?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let tables = instance.tables.as_ref().map(Workload::spec);
    if args.json {
        let summary = with_params(
            params,
            json!({
                "hash": "keccak",
                "backend": name,
                "why": why,
                "adapter": gpu.as_ref().map(|g| g.context().summary().to_string()),
                "tables": tables,
                "field": F::NAME,
                "extension": E::NAME,
                "prove_ms": ms(prove_time),
                "commit_ms": ms(commit_time),
                "open_ms": ms(open_time),
            })
            .with(check.json()),
        );
        println!("{summary}");
    } else {
        println!("backend: {name} ({why})");
        if let Some(t) = &tables {
            println!("tables: {t}");
        }
        println!("parameters: {params}, over {}{} (p3-keccak/{})", E::NAME, crate::HashChoice::note("keccak"), E::NAME);
        println!("prove:  {:>9.1} ms (commit {:.1} ms, open {:.1} ms)", ms(prove_time), ms(commit_time), ms(open_time));
        check.print();
    }
    verified.context("the proof just made did not verify; nothing was written")?;
    Ok(())
}
