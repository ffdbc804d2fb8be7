//! `whir bench --tables`: Plonky3's `WhirProver` and the GPU PCS on one multi-table witness per
//! (fold, rate), over the challenger `--challenger` names.

use std::time::Duration;

use anyhow::{bail, Result};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;
use whir_prover::times::Step;
use whir_prover::{CpuProver, GpuProver, ParamSource, Params, Plonky3Pieces, ProverField, Soundness};

use super::{busy_for, distinct, fmt_ms, median, mib, ms, speedup, total_ms, without_pools, BenchArgs, ChallengerChoice};
use crate::output::OutputFile;

#[derive(Serialize)]
struct TablesCell {
    tables: usize,
    /// The Poseidon2 width the Merkle leaves hash with.
    leaf_width: usize,
    vars: usize,
    fold: usize,
    rate: usize,
    skipped: Option<String>,
    /// Plonky3's `WhirProver` (CPU pieces), medians: commit, open.
    stock_commit_ms: Option<f64>,
    stock_open_ms: Option<f64>,
    /// Our GPU PCS, medians.
    gpu_commit_ms: Option<f64>,
    gpu_open_ms: Option<f64>,
    /// Its traffic: the commit's upload, the open's readback, and the proof's size.
    gpu_commit_mib_up: Option<f64>,
    gpu_open_kib_up: Option<f64>,
    gpu_open_kib_down: Option<f64>,
    proof_kib: Option<f64>,
    /// Device buffer-memory high-water mark over one commit and open; and of one that keeps no
    /// idle buffers (pool budget 0): what the proof has live at once.
    gpu_peak_mib: Option<f64>,
    gpu_peak_live_mib: Option<f64>,
    /// The open's steps (medians, wall): claim phase, initial weights, initial fold's rounds,
    /// and everything after (the WHIR rounds and the final round).
    gpu_claims_ms: Option<f64>,
    gpu_initial_weights_ms: Option<f64>,
    gpu_initial_fold_ms: Option<f64>,
    gpu_rounds_ms: Option<f64>,
    /// The last timed open's steps per round (wall ms and submissions), as in the single
    /// polynomial's profiled breakdown.
    gpu_open_breakdown: Option<serde_json::Value>,
}

/// `whir bench --tables`: Plonky3's `WhirProver` and our GPU PCS on one multi-table witness per
/// (fold, rate), commit and open timed apart, the proofs compared byte for byte and verified.
pub(super) fn run_tables<F: ProverField, E: whir_prover::WhirExtension<F> + whir_gpu::GpuExtension<F>>(args: &BenchArgs, spec: &str) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
    rand::distr::StandardUniform: rand::distr::Distribution<F>,
{
    use whir_prover::Workload;
    let workload = Workload::parse(spec)?;
    let soundness = Soundness::parse(&args.security.soundness)?;
    // A fold no cell can take stops before any layout is planned (the tables set n).
    for &fold in &args.fold {
        Workload::check_fold(fold)?;
    }
    let json_out = args.json.as_deref().map(|p| OutputFile::prepare(p, "--json", args.force, &[])).transpose()?;
    if args.plot.is_some() {
        bail!("--plot charts the single-polynomial grid; drop it with --tables");
    }
    eprintln!("CPU threads for Plonky3: {}", whir_gpu::cpu_threads());
    eprintln!("{} tables, {} cells, over {}", workload.tables.len(), workload.cells(), E::NAME);
    let gpu = if args.no_gpu {
        None
    } else {
        Some(crate::open_gpu::<F>(whir_gpu::GpuOptions::from_env()?)?.with_driver_options(whir_prover::DriverOptions::from_env()?))
    };
    if let Some(g) = &gpu {
        eprintln!("GPU: {}", g.context().summary());
    }
    let mut cells = Vec::new();
    for &fold in &distinct("--fold", &args.fold) {
        for &rate in &distinct("--rate", &args.rate) {
            let base = Params {
                num_vars: 0,
                fold,
                log_inv_rate: rate,
                security_bits: args.security.security,
                pow_bits: args.security.pow_bits,
                soundness,
                points: 1,
                leaf: args.security.leaf,
            };
            let p = workload.params(&base);
            let mut cell = TablesCell {
                tables: workload.tables.len(),
                leaf_width: p.leaf.width(),
                vars: p.num_vars,
                fold,
                rate,
                skipped: None,
                stock_commit_ms: None,
                stock_open_ms: None,
                gpu_commit_ms: None,
                gpu_open_ms: None,
                gpu_commit_mib_up: None,
                gpu_open_kib_up: None,
                gpu_open_kib_down: None,
                proof_kib: None,
                gpu_peak_mib: None,
                gpu_peak_live_mib: None,
                gpu_claims_ms: None,
                gpu_initial_weights_ms: None,
                gpu_initial_fold_ms: None,
                gpu_rounds_ms: None,
                gpu_open_breakdown: None,
            };
            if let Err(e) = p.config_over_from::<E, whir_gpu::GpuChallenger<F>>(ParamSource::Tables).map_err(anyhow::Error::from).and_then(|_| {
                crate::host_memory::machine().check::<F, E>(&p, Some(&workload))?;
                Ok(())
            }) {
                cell.skipped = Some(e.to_string());
                cells.push(cell);
                continue;
            }
            eprintln!("n = {}, fold {fold}, rate {rate}", p.num_vars);
            let mut rng = StdRng::seed_from_u64(p.num_vars as u64);
            let tables = whir_prover::random_tables::<F, _>(&workload, &mut rng);
            let protocol = workload.protocol(fold);
            let gpu = gpu.as_ref();
            match args.challenger {
                ChallengerChoice::Gpu => {
                    let config = p.config_over_from::<E, whir_gpu::GpuChallenger<F>>(ParamSource::Tables)?;
                    let (host, device) = (|| Plonky3Pieces::<F>::challenger(&CpuProver), |g: &GpuProver<F>| g.challenger());
                    TablesRun { args, gpu, config, tables: &tables, protocol: &protocol, params: &p, host: &host, device: &device, exact: true }
                        .measure(&mut cell)?
                }
                ChallengerChoice::Plonky3 => {
                    type Duplex<F> = p3_challenger::DuplexChallenger<F, whir_verifier::hash::Perm<F>, 16, 8>;
                    let config = p.config_over_from::<E, Duplex<F>>(ParamSource::Tables)?;
                    let host = || Duplex::<F>::new(<F as whir_prover::WhirField>::permutation());
                    let device = |_: &GpuProver<F>| host();
                    // Bytes compare only where nothing is ground (the duplex grinder returns any
                    // passing witness).
                    let exact = p.pow_bits == 0;
                    TablesRun { args, gpu, config, tables: &tables, protocol: &protocol, params: &p, host: &host, device: &device, exact }.measure(&mut cell)?
                }
            }
            cells.push(cell);
        }
    }
    report_tables(args, spec, &workload, cells, json_out)
}

/// One cell of `whir bench --tables`: what it proves, over which challenger `C` (`host` makes
/// Plonky3's, `device` the GPU PCS's), and whether the proofs compare by bytes (`exact`) or by
/// Plonky3's verifier.
struct TablesRun<'a, F: ProverField, E: whir_prover::WhirExtension<F>, C> {
    args: &'a BenchArgs,
    gpu: Option<&'a GpuProver<F>>,
    config: p3_whir::parameters::WhirConfig<E, F, C>,
    tables: &'a [p3_sumcheck::layout::Table<F>],
    protocol: &'a p3_sumcheck::OpeningProtocol,
    params: &'a Params,
    host: &'a dyn Fn() -> C,
    device: &'a dyn Fn(&GpuProver<F>) -> C,
    exact: bool,
}

impl<
        F: ProverField,
        E: whir_prover::WhirExtension<F> + whir_gpu::GpuExtension<F>,
        C: whir_prover::WhirChallenger<F> + p3_challenger::CanObserve<whir_prover::Commitment<F>>,
    > TablesRun<'_, F, E, C>
where
    GpuProver<F>: Plonky3Pieces<F>,
{
    /// [`measure_tables`] in the layout `--layout` names.
    fn measure(&self, cell: &mut TablesCell) -> Result<()> {
        match self.args.layout {
            crate::TableLayout::Suffix => measure_tables::<F, E, p3_sumcheck::layout::SuffixProver<F, E>, C>(self, cell),
            crate::TableLayout::Prefix => measure_tables::<F, E, p3_sumcheck::layout::PrefixProver<F, E>, C>(self, cell),
        }
    }
}

/// One cell of `whir bench --tables` in layout `L`: Plonky3's `WhirProver` (commit and open
/// times, verified), then the GPU PCS (its proof equal to Plonky3's where the run is `exact`,
/// else verified by Plonky3's verifier; peak memory with pools kept and without, then the timed
/// repetitions with their traffic and the open's steps).
#[allow(clippy::type_complexity)]
fn measure_tables<
    F: ProverField,
    E: whir_prover::WhirExtension<F> + whir_gpu::GpuExtension<F>,
    L: p3_sumcheck::layout::Layout<F, E>,
    C: whir_prover::WhirChallenger<F> + p3_challenger::CanObserve<whir_prover::Commitment<F>>,
>(
    run: &TablesRun<'_, F, E, C>,
    cell: &mut TablesCell,
) -> Result<()>
where
    GpuProver<F>: Plonky3Pieces<F>,
{
    let TablesRun { args, gpu, ref config, tables, protocol, params: p, host, device, exact } = *run;
    use p3_commit::MultilinearPcs;
    let (fold, rate) = (cell.fold, cell.rate);
    let witness = || L::new_witness(tables.to_vec(), fold);
    {
        {
            let twin: whir_prover::CpuWhirPcs<L, F, E, C> =
                whir_prover::CpuWhirPcs::new(config.clone(), whir_prover::backend::CpuBackend::hashing_leaves(p.leaf));
            let stock = twin.stock();
            // Plonky3's proof: the bytes ours must equal. (Commit and open times, proof bytes, root.)
            let stock_run = |ch: &mut C| -> Result<(Duration, Duration, Vec<u8>, whir_prover::Commitment<F>)> {
                let witness = witness();
                let started = std::time::Instant::now();
                let (root, data) = stock.commit(witness, ch).map_err(|e| anyhow::anyhow!("{e:?}"))?;
                let commit = started.elapsed();
                let started = std::time::Instant::now();
                let proof = stock.open(data, protocol.clone(), ch).map_err(|e| anyhow::anyhow!("{e:?}"))?;
                Ok((commit, started.elapsed(), postcard::to_allocvec(&proof)?, root))
            };
            let (mut sc, mut so) = (Vec::new(), Vec::new());
            let mut expected = None;
            for _ in 0..args.reps {
                let (c, o, bytes, root) = stock_run(&mut host())?;
                sc.push(ms(c));
                so.push(ms(o));
                expected = Some((bytes, root));
            }
            let (expected, root) = expected.expect("at least one repetition");
            // Accepted by p3-whir's own verifier.
            let proof: whir_prover::WhirPcsProof<F, E> = postcard::from_bytes(&expected)?;
            stock.verify(&root, &proof, &mut host(), protocol.clone()).map_err(|e| anyhow::anyhow!("Plonky3's verifier rejects Plonky3's proof: {e:?}"))?;
            // Ours: equal to Plonky3's where the bytes are deterministic, else accepted by its
            // verifier.
            let check = |bytes: &[u8], root: &whir_prover::Commitment<F>, what: &str| -> Result<()> {
                if exact {
                    if bytes != expected.as_slice() {
                        bail!("n = {}, fold {fold}, rate {rate}: {what} differs from Plonky3's", p.num_vars);
                    }
                    return Ok(());
                }
                let proof: whir_prover::WhirPcsProof<F, E> = postcard::from_bytes(bytes)?;
                stock
                    .verify(root, &proof, &mut host(), protocol.clone())
                    .map_err(|e| anyhow::anyhow!("n = {}, fold {fold}, rate {rate}: Plonky3's verifier rejects {what}: {e:?}", p.num_vars))
            };
            cell.stock_commit_ms = Some(median(sc));
            cell.stock_open_ms = Some(median(so));
            cell.proof_kib = Some(expected.len() as f64 / 1024.0);
            if let Some(gpu) = gpu {
                let pcs = gpu.pcs_hashing_leaves::<L, E, C>(config.clone(), p.leaf)?;
                let ctx = gpu.context();
                // Commit and open times, proof bytes, the two phases' traffic, the open's steps.
                type GpuRun<F> =
                    (Duration, Duration, Vec<u8>, [whir_gpu::profile::TransferCounts; 2], [Duration; 4], serde_json::Value, whir_prover::Commitment<F>);
                let gpu_run = |ch: &mut C| -> Result<GpuRun<F>> {
                    let witness = witness();
                    let t0 = ctx.transfers().transfer_counts();
                    let started = std::time::Instant::now();
                    let (root, data) = pcs.commit(witness, ch)?;
                    let commit = started.elapsed();
                    let t1 = ctx.transfers().transfer_counts();
                    let started = std::time::Instant::now();
                    let (proof, times) = pcs.open_timed(data, protocol, None, ch)?;
                    let open = started.elapsed();
                    let t2 = ctx.transfers().transfer_counts();
                    let initial =
                        |step| times.breakdown.rounds.first().and_then(|r| r.iter().find(|(s, _)| *s == step)).map_or(Duration::ZERO, |(_, t)| t.wall);
                    let (claims, weights, fold) = (initial(Step::Claims), initial(Step::Weights), initial(Step::Sumcheck));
                    let steps = [claims, weights, fold, open.saturating_sub(claims + weights + fold)];
                    Ok((commit, open, postcard::to_allocvec(&proof)?, [t1 - t0, t2 - t1], steps, crate::breakdown_json(&times.breakdown), root))
                };
                ctx.memory().trim_pools();
                ctx.memory().reset_peak_buffer_bytes();
                let (_, _, first, _, _, _, root) = gpu_run(&mut device(gpu))?;
                cell.gpu_peak_mib = ctx.memory().peak_buffer_bytes().map(mib);
                check(&first, &root, "the GPU PCS's proof")?;
                without_pools(ctx, || gpu_run(&mut device(gpu)))?;
                cell.gpu_peak_live_mib = ctx.memory().peak_buffer_bytes().map(mib);
                busy_for(args.gpu_warmup_ms, || gpu_run(&mut device(gpu)).map(|_| ()))?;
                let (mut gc, mut go) = (Vec::new(), Vec::new());
                let mut steps: [Vec<f64>; 4] = Default::default();
                for _ in 0..args.reps {
                    let (c, o, bytes, [up, down], parts, breakdown, root) = gpu_run(&mut device(gpu))?;
                    cell.gpu_open_breakdown = Some(breakdown);
                    for (acc, d) in steps.iter_mut().zip(parts) {
                        acc.push(ms(d));
                    }
                    check(&bytes, &root, "a GPU PCS proof")?;
                    gc.push(ms(c));
                    go.push(ms(o));
                    cell.gpu_commit_mib_up = Some(mib(up.bytes_up));
                    cell.gpu_open_kib_up = Some(down.bytes_up as f64 / 1024.0);
                    cell.gpu_open_kib_down = Some(down.bytes_down as f64 / 1024.0);
                }
                cell.gpu_commit_ms = Some(median(gc));
                cell.gpu_open_ms = Some(median(go));
                let [cl, w, fo, r] = steps;
                (cell.gpu_claims_ms, cell.gpu_initial_weights_ms, cell.gpu_initial_fold_ms, cell.gpu_rounds_ms) =
                    (Some(median(cl)), Some(median(w)), Some(median(fo)), Some(median(r)));
            }
        }
    }
    Ok(())
}

/// The `whir bench --tables` table (and JSON) of `cells`.
fn report_tables(_args: &BenchArgs, _spec: &str, _workload: &whir_prover::Workload, cells: Vec<TablesCell>, json_out: Option<OutputFile>) -> Result<()> {
    if let Some(out) = &json_out {
        out.write(serde_json::to_string_pretty(&cells)?.as_bytes())?;
    }
    println!("| tables | n | fold | rate | Plonky3 ms (commit + open) | GPU PCS ms (commit + open) | Plonky3 / GPU | GPU open: claims / weights / initial fold / rounds ms | commit up MiB | open up / down KiB | proof KiB | peak GPU MiB: pools kept / none |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for c in &cells {
        if let Some(why) = &c.skipped {
            println!("| {} | {} | {} | {} | skipped: {why} | | | | | | | |", c.tables, c.vars, c.fold, c.rate);
            continue;
        }
        let f = fmt_ms;
        let (stock, gpu) = (total_ms(c.stock_commit_ms, c.stock_open_ms), total_ms(c.gpu_commit_ms, c.gpu_open_ms));
        let ratio = speedup(stock, gpu);
        println!(
            "| {} | {} | {} | {} | {} ({} + {}) | {} ({} + {}) | {} | {} / {} / {} / {} | {} | {} / {} | {} | {} / {} |",
            c.tables,
            c.vars,
            c.fold,
            c.rate,
            f(stock),
            f(c.stock_commit_ms),
            f(c.stock_open_ms),
            f(gpu),
            f(c.gpu_commit_ms),
            f(c.gpu_open_ms),
            ratio,
            f(c.gpu_claims_ms),
            f(c.gpu_initial_weights_ms),
            f(c.gpu_initial_fold_ms),
            f(c.gpu_rounds_ms),
            f(c.gpu_commit_mib_up),
            f(c.gpu_open_kib_up),
            f(c.gpu_open_kib_down),
            f(c.proof_kib),
            f(c.gpu_peak_mib),
            f(c.gpu_peak_live_mib)
        );
    }
    if cells.iter().all(|c| c.skipped.is_some()) {
        bail!("every cell was skipped as infeasible (first: {})", cells.first().and_then(|c| c.skipped.as_deref()).unwrap_or("none"));
    }
    Ok(())
}
