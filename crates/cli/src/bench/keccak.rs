//! `whir bench --hash keccak`: WHIR over Plonky3's Keccak configuration (p3-whir's Keccak test:
//! `MerkleTreeMmcs` over `SerializingHasher<PaddingFreeSponge<KeccakF, 25, 17, 4>>`, the
//! challenger `SerializingChallenger32<F, HashChallenger<u8, Keccak256Hash, 32>>`) on one
//! polynomial per (n, fold, rate): Plonky3's `WhirProver` on its CPU pieces beside our resident
//! prover (`GpuProver::keccak_pcs_over`, its grinds on the GPU through `GpuKeccakHash`). Each
//! cell's resident proof is compared byte for byte with `WhirProver`'s over the same challenger
//! (both grinding for the smallest witness) and accepted by p3-whir's verifier with Plonky3's own
//! challenger.

use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_keccak::Keccak256Hash;
use p3_matrix::dense::RowMajorMatrix;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_sumcheck::layout::{Layout, SuffixProver, Table};
use p3_sumcheck::{OpeningBatch, OpeningProtocol, TableShape, TableSpec};
use p3_whir::{HidingWhirPcs, PcsProof, WhirConfig, WhirProver, ZkParameters, ZkWhirConfig, ZkWhirProof};
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_gpu::{CpuKeccakMmcs, GpuKeccak, GpuKeccakHash, GpuKeccakMmcs};
use whir_prover::{GpuProver, Params, ProverField, Soundness, EF};

use super::{busy_for, fmt_ms, grid_of, median, ms, speedup, BenchArgs};

type Stock<F> = whir_verifier::hash::KeccakChallenger<F>;
type Ours<F> = whir_gpu::GpuKeccakChallenger<F>;
type Layer<F> = SuffixProver<F, EF<F>>;

/// `whir bench --hash keccak` over the field `F` (challenges in its degree-4 extension).
pub(super) fn run_keccak<F: ProverField + whir_gpu::Poseidon2Field + p3_challenger::fs::TranscriptField + Ord>(args: &BenchArgs) -> Result<()>
where
    StandardUniform: Distribution<F>,
{
    if args.extension != 4 || args.json.is_some() || args.plot.is_some() || args.no_gpu || !args.concurrency.is_empty() || args.tables.is_some() {
        bail!(
            "--hash keccak times single polynomials (plain or --zk) over the degree-4 extension on the GPU, printed as a table: drop --extension, \
             --json, --plot, --no-gpu, --concurrency and --tables"
        );
    }
    crate::HashChoice::check_keccak_flags(args.config, args.security.leaf, false)?;
    let soundness = Soundness::parse(&args.security.soundness)?;
    let gpu = crate::open_gpu::<F>(whir_gpu::GpuOptions::from_env()?)?.with_driver_options(whir_prover::DriverOptions::from_env()?);
    let keccak = GpuKeccak::new(gpu.context().clone());
    eprintln!("CPU threads for Plonky3: {}; GPU: {}", whir_gpu::cpu_threads(), gpu.context().summary().name);
    let what = if args.zk { "hiding: HidingWhirPcs" } else { "Plonky3" };
    println!("{:>3} {:>4} {:>4} | {:>24} | {:>14} | {:>8} | proof", "n", "fold", "rate", format!("{what} ms"), "resident ms", "speedup");
    let mut rng = StdRng::seed_from_u64(rand::random::<u64>());
    // The grid `whir bench` times (leaves are Keccak's here: --leaf is refused with --hash).
    for params in grid_of(args, soundness) {
        let (n, fold, rate) = (params.num_vars, params.fold, params.log_inv_rate);
        let values: Vec<F> = (0..1usize << n).map(|_| rng.random()).collect();
        let cell = Cell { n, fold, values: &values, keccak: &keccak };
        let timed = if args.zk {
            match ZkWhirConfig::<EF<F>, F, Ours<F>>::new(n, params.protocol_parameters(), ZK_PARAMETERS) {
                Ok(config) => cell.run_hiding(&gpu, config, &params, args, &mut rng)?,
                Err(e) => {
                    println!("{n:>3} {fold:>4} {rate:>4} | skipped: no hiding configuration ({e:?})");
                    continue;
                }
            }
        } else {
            match WhirConfig::<EF<F>, F, Ours<F>>::new(n, params.protocol_parameters()) {
                Ok(config) => cell.run(&gpu, config, &params, args)?,
                Err(e) => {
                    println!("{n:>3} {fold:>4} {rate:>4} | skipped: {e:?}");
                    continue;
                }
            }
        };
        let (stock_ms, resident_ms, what) = timed;
        println!(
            "{n:>3} {fold:>4} {rate:>4} | {:>24} | {:>14} | {:>8} | {what}",
            fmt_ms(Some(stock_ms)),
            fmt_ms(Some(resident_ms)),
            speedup(Some(stock_ms), Some(resident_ms))
        );
    }
    Ok(())
}

/// One (n, fold, rate) of the grid.
struct Cell<'a, F> {
    n: usize,
    fold: usize,
    values: &'a [F],
    keccak: &'a GpuKeccak,
}

impl<F: ProverField + whir_gpu::Poseidon2Field + p3_challenger::fs::TranscriptField + Ord> Cell<'_, F> {
    fn witness(&self) -> p3_sumcheck::layout::Witness<F> {
        Layer::<F>::new_witness(vec![Table::new(RowMajorMatrix::new(self.values.to_vec(), self.values.len()))], self.fold)
    }

    fn protocol(&self) -> OpeningProtocol {
        OpeningProtocol::new(vec![TableSpec::new(TableShape::new(self.n, 1), vec![OpeningBatch::new(vec![0], Default::default())])])
            .pad_to_min_num_variables(self.fold)
    }

    /// Medians of Plonky3's and the resident prover's commit + open, and what was checked.
    fn run(&self, gpu: &GpuProver<F>, config: WhirConfig<EF<F>, F, Ours<F>>, params: &Params, args: &BenchArgs) -> Result<(f64, f64, String)> {
        let stock_config = WhirConfig::<EF<F>, F, Stock<F>>::new(self.n, params.protocol_parameters()).map_err(|e| anyhow!("{e:?}"))?;
        let mmcs = GpuKeccakMmcs::<F>::new(None, 0).cpu().clone();
        let stock = WhirProver::<EF<F>, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, Stock<F>, Layer<F>>::new(
            stock_config,
            Radix2DFTSmallBatch::default(),
            mmcs.clone(),
        );
        let twin =
            WhirProver::<EF<F>, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, Ours<F>, Layer<F>>::new(config.clone(), Radix2DFTSmallBatch::default(), mmcs);
        let resident = gpu.keccak_pcs_over::<Layer<F>, EF<F>, Ours<F>>(config)?;
        let ours = || Ours::<F>::new(GpuKeccakHash::new(vec![], Some(self.keccak.clone())));
        let prove = |challenger: &mut Ours<F>| -> Result<_> {
            let (commitment, data) = resident.commit(self.witness(), challenger)?;
            Ok((commitment, resident.open(data, self.protocol(), challenger)?))
        };
        // Checked first: the same bytes as WhirProver's over the same challenger, and
        // accepted by the stock verifier with Plonky3's own challenger.
        let (commitment, proof) = prove(&mut ours())?;
        let mut ch = ours();
        let (twin_commitment, data) = twin.commit(self.witness(), &mut ch).map_err(|e| anyhow!("{e:?}"))?;
        let twin_proof = twin.open(data, self.protocol(), &mut ch).map_err(|e| anyhow!("{e:?}"))?;
        let bytes = postcard::to_allocvec(&proof)?;
        if commitment != twin_commitment || bytes != postcard::to_allocvec(&twin_proof)? {
            bail!("n = {} fold {}: the resident Keccak proof differs from WhirProver's over the same challenger", self.n, self.fold);
        }
        let read: PcsProof<F, EF<F>, CpuKeccakMmcs<F>> = postcard::from_bytes(&bytes)?;
        stock
            .verify(&commitment, &read, &mut Stock::<F>::from_hasher(vec![], Keccak256Hash), self.protocol())
            .map_err(|e| anyhow!("n = {} fold {}: p3-whir's verifier refuses the resident Keccak proof: {e:?}", self.n, self.fold))?;

        let (mut stock_ms, mut resident_ms) = (Vec::new(), Vec::new());
        for _ in 0..args.reps {
            let witness = self.witness();
            let t = Instant::now();
            let mut ch = Stock::<F>::from_hasher(vec![], Keccak256Hash);
            let (_, data) = stock.commit(witness, &mut ch).map_err(|e| anyhow!("{e:?}"))?;
            drop(stock.open(data, self.protocol(), &mut ch).map_err(|e| anyhow!("{e:?}"))?);
            stock_ms.push(ms(t.elapsed()));
            busy_for(args.gpu_warmup_ms, || prove(&mut ours()).map(drop))?;
            let witness = self.witness();
            let t = Instant::now();
            let mut ch = ours();
            let (_, data) = resident.commit(witness, &mut ch)?;
            drop(resident.open(data, self.protocol(), &mut ch)?);
            resident_ms.push(ms(t.elapsed()));
        }
        Ok((median(stock_ms), median(resident_ms), format!("{} KiB, WhirProver's bytes, verified", bytes.len() >> 10)))
    }

    /// Medians of Plonky3's `HidingWhirPcs` over the Keccak MMCS (on its own Keccak challenger)
    /// and the resident hiding PCS (`GpuProver::keccak_hiding_pcs`) committing and opening at a
    /// random point, and what was checked: the resident proof equals `HidingWhirPcs`'s for the
    /// same generator seed over the same challenger, and p3-whir's verifier accepts it with
    /// Plonky3's own Keccak challenger.
    fn run_hiding(
        &self,
        gpu: &GpuProver<F>,
        config: ZkWhirConfig<EF<F>, F, Ours<F>>,
        params: &Params,
        args: &BenchArgs,
        rng: &mut StdRng,
    ) -> Result<(f64, f64, String)>
    where
        StandardUniform: Distribution<EF<F>> + Distribution<F>,
    {
        let stock_config = ZkWhirConfig::<EF<F>, F, Stock<F>>::new(self.n, params.protocol_parameters(), ZK_PARAMETERS).map_err(|e| anyhow!("{e:?}"))?;
        let mmcs = || whir_verifier::hash::cpu_keccak_mmcs::<F>(0);
        let stock = |seed| {
            HidingWhirPcs::<EF<F>, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, Stock<F>, StdRng>::new(
                stock_config.clone(),
                Radix2DFTSmallBatch::default(),
                mmcs(),
                StdRng::seed_from_u64(seed),
            )
        };
        let twin = |seed| {
            HidingWhirPcs::<EF<F>, F, Radix2DFTSmallBatch<F>, CpuKeccakMmcs<F>, Ours<F>, StdRng>::new(
                config.clone(),
                Radix2DFTSmallBatch::default(),
                mmcs(),
                StdRng::seed_from_u64(seed),
            )
        };
        let ours = || Ours::<F>::new(GpuKeccakHash::new(vec![], Some(self.keccak.clone())));
        let witness = || Poly::new(self.values.to_vec());
        let points = vec![Point::<EF<F>>::rand(rng, self.n)];
        let seed = rng.random::<u64>();
        let resident = |seed| gpu.keccak_hiding_pcs::<EF<F>, Ours<F>, StdRng>(config.clone(), StdRng::seed_from_u64(seed));
        let prove = |challenger: &mut Ours<F>| -> Result<_> {
            let pcs = resident(seed)?;
            let (commitment, data) = pcs.commit(witness(), challenger)?;
            Ok((commitment, pcs.open(data, points.clone(), challenger)?))
        };
        // Checked first: HidingWhirPcs's bytes over the same challenger and generator seed, and
        // accepted by the stock hiding verifier with Plonky3's own challenger.
        let (commitment, proof) = prove(&mut ours())?;
        let mut ch = ours();
        let twin_pcs = twin(seed);
        let (twin_commitment, data) = twin_pcs.commit(witness(), &mut ch).map_err(|e| anyhow!("{e:?}"))?;
        let twin_proof = twin_pcs.open(data, points.clone(), &mut ch).map_err(|e| anyhow!("{e:?}"))?;
        let bytes = postcard::to_allocvec(&proof)?;
        if commitment != twin_commitment || bytes != postcard::to_allocvec(&twin_proof)? {
            bail!("n = {} fold {}: the resident hiding Keccak proof differs from HidingWhirPcs's over the same challenger", self.n, self.fold);
        }
        let read: ZkWhirProof<F, EF<F>, CpuKeccakMmcs<F>> = postcard::from_bytes(&bytes)?;
        stock(0)
            .verify(&commitment, &read, &mut Stock::<F>::from_hasher(vec![], Keccak256Hash), points.clone())
            .map_err(|e| anyhow!("n = {} fold {}: p3-whir's hiding verifier refuses the resident Keccak proof: {e:?}", self.n, self.fold))?;

        let (mut stock_ms, mut resident_ms) = (Vec::new(), Vec::new());
        for _ in 0..args.reps {
            let pcs = stock(seed);
            let t = Instant::now();
            let mut ch = Stock::<F>::from_hasher(vec![], Keccak256Hash);
            let (_, data) = pcs.commit(witness(), &mut ch).map_err(|e| anyhow!("{e:?}"))?;
            drop(pcs.open(data, points.clone(), &mut ch).map_err(|e| anyhow!("{e:?}"))?);
            stock_ms.push(ms(t.elapsed()));
            busy_for(args.gpu_warmup_ms, || prove(&mut ours()).map(drop))?;
            let pcs = resident(seed)?;
            let t = Instant::now();
            let mut ch = ours();
            let (_, data) = pcs.commit(witness(), &mut ch)?;
            drop(pcs.open(data, points.clone(), &mut ch)?);
            resident_ms.push(ms(t.elapsed()));
        }
        Ok((median(stock_ms), median(resident_ms), format!("{} KiB, HidingWhirPcs's bytes, verified", bytes.len() >> 10)))
    }
}

/// The mask parameters of every hiding proof `whir bench --hash keccak --zk` times (as `--zk`'s).
const ZK_PARAMETERS: ZkParameters = ZkParameters { ell_zk: 4, mask_log_inv_rate: 1 };
