//! `whir bench --zk`: Plonky3's hiding PCS (`HidingWhirPcs`, HVZK-WHIR; `ZkParameters` with
//! ell_zk = 4 and masks at rate 1/2) on one polynomial per (n, fold, rate), over Plonky3's CPU
//! pieces and over ours (`GpuDft` for every encoding, `GpuMmcs` for every base-field tree, the
//! GPU grinder) and resident on the GPU (`GpuHidingPcs`) in one process, beside our plain
//! resident prover: commit and open timed apart, the proofs compared byte for byte (one
//! generator seed for all, the smallest witness ground on every side), the GPU pieces' proof,
//! read back from its bytes, accepted by p3-whir's verifier, and the GPU memory high-water
//! marks of a hiding and a plain proof.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_whir::{HidingWhirPcs, ZkParameters, ZkWhirConfig, ZkWhirProof};
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use whir_gpu::{GpuChallenger, GpuDft};
use whir_prover::{CpuProver, GpuProver, Params, Plonky3Pieces, ProverField, Soundness, WhirExtension};
use whir_verifier::hash::CpuMmcs;

use super::{busy_for, distinct, fmt_ms, median, ms, speedup, total_ms, BenchArgs};
use crate::output::OutputFile;

/// The mask parameters of every hiding proof `whir bench --zk` times (p3-whir's own tests').
const ZK_PARAMETERS: ZkParameters = ZkParameters { ell_zk: 4, mask_log_inv_rate: 1 };

#[derive(Serialize)]
struct ZkCell {
    vars: usize,
    fold: usize,
    rate: usize,
    points: usize,
    skipped: Option<String>,
    /// `HidingWhirPcs` over Plonky3's CPU pieces, medians: commit, open.
    stock_commit_ms: Option<f64>,
    stock_open_ms: Option<f64>,
    /// `HidingWhirPcs` over our GPU pieces, medians.
    gpu_pieces_commit_ms: Option<f64>,
    gpu_pieces_open_ms: Option<f64>,
    /// Our resident hiding PCS (`GpuHidingPcs`), medians.
    resident_commit_ms: Option<f64>,
    resident_open_ms: Option<f64>,
    /// Our resident plain (not hiding) prover at the same parameters, median: what the
    /// resident hiding prover is held to (at most 1.5x).
    plain_gpu_ms: Option<f64>,
    /// The GPU memory high-water mark of one resident hiding proof and of one plain proof,
    /// each measured from a reset after its own timed runs (MiB).
    resident_peak_mib: Option<f64>,
    plain_peak_mib: Option<f64>,
    /// Where one resident hiding opening's time went (`HidingTimes`), ms per step.
    resident_open_steps_ms: Option<Vec<(String, f64)>>,
    /// Of that opening's rounds, those whose head was played on the device.
    resident_heads_played: Option<usize>,
    resident_rounds_chained: Option<usize>,
    proof_kib: Option<f64>,
}

type StockHiding<F, E> = HidingWhirPcs<E, F, Radix2DFTSmallBatch<F>, CpuMmcs<F>, GpuChallenger<F>, StdRng>;
/// Over our pieces: the GPU backend's MMCS (`GpuMmcs`) and a `GpuDft` on its context.
type PiecesHiding<F, E> = HidingWhirPcs<E, F, GpuDft<F>, <GpuProver<F> as Plonky3Pieces<F>>::Mmcs, GpuChallenger<F>, StdRng>;

/// `whir bench --zk` over the field `F` with the challenges in `E`.
pub(super) fn run_zk<F: ProverField, E: WhirExtension<F> + whir_gpu::GpuExtension<F> + p3_field::TwoAdicField>(args: &BenchArgs) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
    StandardUniform: Distribution<F> + Distribution<E>,
{
    let soundness = Soundness::parse(&args.security.soundness)?;
    if args.plot.is_some() {
        bail!("--plot charts the plain grid; drop it with --zk");
    }
    let json_out = args.json.as_deref().map(|p| OutputFile::prepare(p, "--json", args.force, &[])).transpose()?;
    eprintln!("CPU threads for Plonky3: {}", whir_gpu::cpu_threads());
    // The driver's switches (WHIR_ROUND_HEADS, WHIR_LAZY_WEIGHTS, ...) as the plain bench reads them.
    let gpu = if args.no_gpu {
        None
    } else {
        Some(crate::open_gpu::<F>(whir_gpu::GpuOptions::from_env()?)?.with_driver_options(whir_prover::DriverOptions::from_env()?))
    };
    if let Some(g) = &gpu {
        eprintln!("GPU: {}", g.context().summary());
    }
    let mut cells = Vec::new();
    for p in zk_grid(args, soundness) {
        let (vars, fold, rate) = (p.num_vars, p.fold, p.log_inv_rate);
        let mut cell = ZkCell {
            vars,
            fold,
            rate,
            points: p.points,
            skipped: None,
            stock_commit_ms: None,
            stock_open_ms: None,
            gpu_pieces_commit_ms: None,
            gpu_pieces_open_ms: None,
            resident_commit_ms: None,
            resident_open_ms: None,
            plain_gpu_ms: None,
            resident_peak_mib: None,
            plain_peak_mib: None,
            resident_open_steps_ms: None,
            resident_heads_played: None,
            resident_rounds_chained: None,
            proof_kib: None,
        };
        let config = match zk_config::<F, E>(&p) {
            Ok(c) => c,
            Err(e) => {
                cell.skipped = Some(e.to_string());
                cells.push(cell);
                continue;
            }
        };
        eprintln!("n = {vars}, fold {fold}, rate {rate}");
        measure_zk::<F, E>(args, gpu.as_ref(), &p, &config, &mut cell)?;
        cells.push(cell);
    }
    report_zk(cells, json_out)
}

/// The parameters of each cell of `whir bench --zk`'s grid (one point each).
fn zk_grid(args: &BenchArgs, soundness: Soundness) -> Vec<Params> {
    let mut grid = Vec::new();
    for &num_vars in &distinct("--vars", &args.vars) {
        for &fold in &distinct("--fold", &args.fold) {
            for &log_inv_rate in &distinct("--rate", &args.rate) {
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

/// The hiding configuration of a cell's parameters (with `ZK_PARAMETERS`), within the host's
/// memory; an error says what to change.
fn zk_config<F: ProverField, E: WhirExtension<F> + p3_field::TwoAdicField>(p: &Params) -> Result<ZkWhirConfig<E, F, GpuChallenger<F>>> {
    let (vars, fold, rate) = (p.num_vars, p.fold, p.log_inv_rate);
    p.config_over::<E, GpuChallenger<F>>()?;
    let config = ZkWhirConfig::<E, F, GpuChallenger<F>>::new(vars, p.protocol_parameters(), ZK_PARAMETERS).map_err(|e| {
        anyhow!(
            "no hiding configuration for n = {vars}, fold {fold}, rate {rate} ({e:?}): the masks' randomness must fit each \
             code's slack; try more variables, a larger --rate or a smaller --fold"
        )
    })?;
    crate::host_memory::machine().check::<F, E>(p, None)?;
    Ok(config)
}

/// `whir bench --zk --concurrency C,..`: hiding proofs per second (BabyBear^4), for each shape
/// and each number of proofs in flight on one GPU context (a `ProofPool`'s hiding jobs, a
/// generator forked per job), every proof checked equal to `HidingWhirPcs`'s for its fork and
/// the first verified by p3-whir, beside `HidingWhirPcs` one proof at a time on the host's cores.
pub(super) fn run_zk_throughput(args: &BenchArgs) -> Result<()> {
    use whir_prover::{HidingJob, PoolOptions, ProofPool};
    type F = p3_baby_bear::BabyBear;
    type E = whir_prover::EF;
    let soundness = Soundness::parse(&args.security.soundness)?;
    eprintln!("CPU threads for Plonky3: {}", whir_gpu::cpu_threads());
    let gpu = crate::open_gpu::<F>(whir_gpu::GpuOptions::from_env()?)?.with_driver_options(whir_prover::DriverOptions::from_env()?);
    eprintln!("GPU: {}", gpu.context().summary());
    let mut rows = Vec::new();
    for p in zk_grid(args, soundness) {
        let (vars, fold, rate) = (p.num_vars, p.fold, p.log_inv_rate);
        let config = match zk_config::<F, E>(&p) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("n = {vars}, fold {fold}, rate {rate}: skipped ({e})");
                continue;
            }
        };
        let mut rng = StdRng::seed_from_u64(vars as u64);
        let witness = Poly::new((0..1usize << vars).map(|_| rng.random::<F>()).collect::<Vec<F>>());
        let points: Vec<Point<E>> = vec![Point::rand(&mut rng, vars)];
        let seed = rng.random::<u64>();
        // Plonky3, one proof at a time on every core: its latency's inverse.
        let stock = |seed: [u8; 32]| {
            StockHiding::<F, E>::new(
                config.clone(),
                Radix2DFTSmallBatch::default(),
                whir_verifier::hash::cpu_mmcs_with::<F>(0, p.leaf),
                StdRng::from_seed(seed),
            )
        };
        let host = || Plonky3Pieces::<F>::challenger(&CpuProver);
        let mut first_fork = [0u8; 32];
        rand::Rng::fill_bytes(&mut StdRng::seed_from_u64(seed), &mut first_fork);
        let mut stock_ms = Vec::new();
        let mut expected = None;
        for _ in 0..args.reps {
            let (c, o, bytes, root) = timed_proof(&stock(first_fork), &witness, &points, &mut host())?;
            stock_ms.push(ms(c + o));
            expected = Some((bytes, root));
        }
        let (expected, root) = expected.expect("at least one repetition");
        let proof: ZkWhirProof<F, E, CpuMmcs<F>> = postcard::from_bytes(&expected)?;
        stock(first_fork)
            .verify(&root, &proof, &mut host(), points.clone())
            .map_err(|e| anyhow!("p3-whir's verifier rejects Plonky3's hiding proof: {e:?}"))?;
        let stock_per_s = 1e3 / median(stock_ms);
        let jobs = |count: usize| (0..count).map(|_| HidingJob { witness: witness.clone(), points: points.clone() }).collect::<Vec<_>>();
        let mut line = format!("| {vars} | {fold} | {rate} | {stock_per_s:.2} |");
        for &in_flight in &args.concurrency {
            let pool = ProofPool::new(gpu.clone(), PoolOptions { in_flight: Some(in_flight) })?;
            // Warm: the pool's threads, buffers and clocks.
            busy_for(args.gpu_warmup_ms, || {
                pool.prove_hiding_many(&config, p.leaf, jobs(in_flight), &mut StdRng::seed_from_u64(seed))
                    .into_iter()
                    .try_for_each(|r| r.map(|_| ()).map_err(Into::into))
            })?;
            let batch = jobs(args.proofs);
            let started = Instant::now();
            let results = pool.prove_hiding_many(&config, p.leaf, batch, &mut StdRng::seed_from_u64(seed));
            let per_s = args.proofs as f64 / started.elapsed().as_secs_f64();
            let first = results.into_iter().next().ok_or_else(|| anyhow!("no proofs"))??;
            if first.commitment != root || postcard::to_allocvec(&first.proof)? != expected {
                bail!("n = {vars}, fold {fold}: the pool's first hiding proof differs from HidingWhirPcs's for its fork");
            }
            eprintln!("n = {vars}, fold {fold}, rate {rate}, {in_flight} in flight: {per_s:.1} hiding proofs/s (Plonky3: {stock_per_s:.2}/s)");
            line += &format!(" {per_s:.1} ({:.1}x) |", per_s / stock_per_s);
        }
        rows.push(line);
    }
    let levels: Vec<String> = args.concurrency.iter().map(|c| format!("{c} in flight: proofs/s (vs Plonky3)")).collect();
    println!("| n | fold | rate | HidingWhirPcs proofs/s (one at a time, all cores) | {} |", levels.join(" | "));
    println!("|---|---|---|---|{}", "---|".repeat(levels.len()));
    for row in rows {
        println!("{row}");
    }
    Ok(())
}

/// One cell: the stock hiding PCS's proofs (timed, verified), then the GPU pieces' (the same
/// bytes; timed after a warm-up).
fn measure_zk<F: ProverField, E: WhirExtension<F> + whir_gpu::GpuExtension<F> + p3_field::TwoAdicField>(
    args: &BenchArgs,
    gpu: Option<&GpuProver<F>>,
    p: &Params,
    config: &ZkWhirConfig<E, F, GpuChallenger<F>>,
    cell: &mut ZkCell,
) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
    StandardUniform: Distribution<F> + Distribution<E>,
{
    let mut rng = StdRng::seed_from_u64(p.num_vars as u64);
    let witness = Poly::new((0..1usize << p.num_vars).map(|_| rng.random::<F>()).collect::<Vec<F>>());
    let points: Vec<Point<E>> = (0..p.points).map(|_| Point::rand(&mut rng, p.num_vars)).collect();
    // One generator seed for every proof of the cell: the same masks, so the same bytes.
    let seed = rng.random::<u64>();
    let stock = |seed| {
        StockHiding::<F, E>::new(
            config.clone(),
            Radix2DFTSmallBatch::default(),
            whir_verifier::hash::cpu_mmcs_with::<F>(0, p.leaf),
            StdRng::seed_from_u64(seed),
        )
    };
    let host = || Plonky3Pieces::<F>::challenger(&CpuProver);
    let stock_run = || timed_proof(&stock(seed), &witness, &points, &mut host());
    let (mut sc, mut so, mut expected) = (Vec::new(), Vec::new(), None);
    for _ in 0..args.reps {
        let (c, o, bytes, root) = stock_run()?;
        sc.push(ms(c));
        so.push(ms(o));
        expected = Some((bytes, root));
    }
    let (expected, root) = expected.expect("at least one repetition");
    let verify = |bytes: &[u8], what: &str| -> Result<()> {
        let proof: ZkWhirProof<F, E, CpuMmcs<F>> = postcard::from_bytes(bytes)?;
        stock(seed).verify(&root, &proof, &mut host(), points.clone()).map_err(|e| anyhow!("n = {}: p3-whir's verifier rejects {what}: {e:?}", p.num_vars))
    };
    verify(&expected, "Plonky3's hiding proof")?;
    (cell.stock_commit_ms, cell.stock_open_ms, cell.proof_kib) = (Some(median(sc)), Some(median(so)), Some(expected.len() as f64 / 1024.0));
    let Some(gpu) = gpu else {
        return Ok(());
    };
    let check = |bytes: &[u8], ours: &whir_prover::Commitment<F>| -> Result<()> {
        if ours != &root || bytes != expected.as_slice() {
            bail!("n = {}, fold {}, rate {}: a GPU hiding proof differs from Plonky3's", p.num_vars, p.fold, p.log_inv_rate);
        }
        Ok(())
    };
    // Plonky3's hiding PCS over our pieces (not with --no-pieces).
    if !args.no_pieces {
        // One DFT for the cell: its NTT's tables are built once, not in every timed proof.
        let dft = GpuDft::<F>::on(gpu.context().clone());
        let pieces_run = || {
            let pcs = PiecesHiding::<F, E>::new(config.clone(), dft.clone(), gpu.mmcs(p.leaf), StdRng::seed_from_u64(seed));
            timed_proof(&pcs, &witness, &points, &mut gpu.challenger())
        };
        let (_, _, first, first_root) = pieces_run()?;
        check(&first, &first_root)?;
        verify(&first, "the GPU pieces' hiding proof")?;
        busy_for(args.gpu_warmup_ms, || pieces_run().map(|_| ()))?;
        let (mut gc, mut go) = (Vec::new(), Vec::new());
        for _ in 0..args.reps {
            let (c, o, bytes, root) = pieces_run()?;
            check(&bytes, &root)?;
            gc.push(ms(c));
            go.push(ms(o));
        }
        (cell.gpu_pieces_commit_ms, cell.gpu_pieces_open_ms) = (Some(median(gc)), Some(median(go)));
    }
    // The resident hiding PCS: the same bytes, timed after its own warm-up.
    let memory = gpu.context().memory();
    let mib = |b: Option<u64>| b.map(|b| b as f64 / (1u64 << 20) as f64);
    let resident_run = || {
        let pcs = gpu.hiding_pcs::<E, GpuChallenger<F>, StdRng>(config.clone(), p.leaf, StdRng::seed_from_u64(seed)).map_err(anyhow::Error::from)?;
        timed_proof(&pcs, &witness, &points, &mut gpu.challenger())
    };
    let (_, _, first, first_root) = resident_run()?;
    check(&first, &first_root)?;
    busy_for(args.gpu_warmup_ms, || resident_run().map(|_| ()))?;
    let (mut rc, mut ro) = (Vec::new(), Vec::new());
    for _ in 0..args.reps {
        let (c, o, bytes, root) = resident_run()?;
        check(&bytes, &root)?;
        rc.push(ms(c));
        ro.push(ms(o));
    }
    (cell.resident_commit_ms, cell.resident_open_ms) = (Some(median(rc)), Some(median(ro)));
    memory.reset_peak_buffer_bytes();
    resident_run()?;
    cell.resident_peak_mib = mib(memory.peak_buffer_bytes());
    // One more opening, step by step.
    let pcs = gpu.hiding_pcs::<E, GpuChallenger<F>, StdRng>(config.clone(), p.leaf, StdRng::seed_from_u64(seed)).map_err(anyhow::Error::from)?;
    let mut challenger = gpu.challenger();
    let (_, data) = pcs.commit(witness.clone(), &mut challenger)?;
    let (_, steps) = pcs.open_timed(data, points.clone(), &mut challenger)?;
    cell.resident_open_steps_ms = Some(steps.steps().iter().map(|(name, d)| (name.to_string(), ms(*d))).collect());
    cell.resident_heads_played = Some(steps.heads_played);
    cell.resident_rounds_chained = Some(steps.rounds_chained);
    if args.kernel_profile {
        // One more commit, then its opening, each with every kernel timed.
        let mut challenger = gpu.challenger();
        let mut data = None;
        eprintln!("  the resident hiding commit:");
        super::kernel_profile(gpu.context(), || {
            data = Some(pcs.commit(witness.clone(), &mut challenger)?.1);
            Ok(())
        })?;
        let data = data.ok_or_else(|| anyhow!("no hiding commitment to open"))?;
        eprintln!("  its opening:");
        super::kernel_profile(gpu.context(), || pcs.open(data, points.clone(), &mut challenger).map(|_| ()).map_err(Into::into))?;
    }
    // The plain resident prover on the same polynomial and parameters (its point drawn from the
    // transcript), after its own warm-up.
    let plain = || gpu.prove_resident_over::<E>(p, witness.as_slice()).map(|out| ms(out.commit_time + out.open_time));
    busy_for(args.gpu_warmup_ms, || plain().map(|_| ()).map_err(Into::into))?;
    let times = (0..args.reps).map(|_| plain()).collect::<Result<Vec<f64>, _>>()?;
    cell.plain_gpu_ms = Some(median(times));
    memory.reset_peak_buffer_bytes();
    plain()?;
    cell.plain_peak_mib = mib(memory.peak_buffer_bytes());
    Ok(())
}

/// One hiding proof of `witness` at `points` with `pcs`: commit and open times, the proof's
/// bytes and the commitment.
fn timed_proof<F: ProverField, E: WhirExtension<F>, P>(
    pcs: &P,
    witness: &Poly<F>,
    points: &[Point<E>],
    challenger: &mut GpuChallenger<F>,
) -> Result<(Duration, Duration, Vec<u8>, whir_prover::Commitment<F>)>
where
    P: MultilinearPcs<E, GpuChallenger<F>, Val = F, Witness = Poly<F>, OpeningProtocol = Vec<Point<E>>, Commitment = whir_prover::Commitment<F>>,
    P::Proof: Serialize,
{
    // The PCS takes the witness by value: the copy is the bench's, not the commit's.
    let witness = witness.clone();
    let started = Instant::now();
    let (root, data) = pcs.commit(witness, challenger).map_err(|e| anyhow!("{e:?}"))?;
    let commit = started.elapsed();
    let started = Instant::now();
    let proof = pcs.open(data, points.to_vec(), challenger).map_err(|e| anyhow!("{e:?}"))?;
    Ok((commit, started.elapsed(), postcard::to_allocvec(&proof)?, root))
}

/// The `whir bench --zk` table (and JSON) of `cells`.
fn report_zk(cells: Vec<ZkCell>, json_out: Option<OutputFile>) -> Result<()> {
    if let Some(out) = &json_out {
        out.write(serde_json::to_string_pretty(&cells)?.as_bytes())?;
    }
    println!(
        "| n | fold | rate | points | HidingWhirPcs, Plonky3's pieces: ms (commit + open) | HidingWhirPcs, GPU pieces: ms (commit + open) | resident hiding GPU: ms (commit + open) | resident vs Plonky3 | our plain GPU prover ms | resident hiding / plain | peak GPU MiB hiding / plain | proof KiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &cells {
        if let Some(why) = &c.skipped {
            println!("| {} | {} | {} | {} | skipped: {why} | | | | | | | |", c.vars, c.fold, c.rate, c.points);
            continue;
        }
        let f = fmt_ms;
        let stock = total_ms(c.stock_commit_ms, c.stock_open_ms);
        let pieces = total_ms(c.gpu_pieces_commit_ms, c.gpu_pieces_open_ms);
        let resident = total_ms(c.resident_commit_ms, c.resident_open_ms);
        println!(
            "| {} | {} | {} | {} | {} ({} + {}) | {} ({} + {}) | {} ({} + {}) | {} | {} | {} | {} / {} | {} |",
            c.vars,
            c.fold,
            c.rate,
            c.points,
            f(stock),
            f(c.stock_commit_ms),
            f(c.stock_open_ms),
            f(pieces),
            f(c.gpu_pieces_commit_ms),
            f(c.gpu_pieces_open_ms),
            f(resident),
            f(c.resident_commit_ms),
            f(c.resident_open_ms),
            speedup(stock, resident),
            f(c.plain_gpu_ms),
            speedup(resident, c.plain_gpu_ms),
            f(c.resident_peak_mib),
            f(c.plain_peak_mib),
            f(c.proof_kib)
        );
    }
    for c in &cells {
        if let Some(steps) = &c.resident_open_steps_ms {
            let steps: Vec<String> = steps.iter().map(|(name, t)| format!("{name} {t:.1}")).collect();
            let heads = c.resident_heads_played.map_or(String::new(), |h| format!("; round heads on the device: {h}"));
            let chained = c.resident_rounds_chained.map_or(String::new(), |r| format!("; masked rounds chained: {r}"));
            println!("resident hiding open at n = {}, fold {}, rate {}, ms: {}{heads}{chained}", c.vars, c.fold, c.rate, steps.join(", "));
        }
    }
    if cells.iter().all(|c| c.skipped.is_some()) {
        bail!("every cell was skipped (above: why)");
    }
    Ok(())
}
