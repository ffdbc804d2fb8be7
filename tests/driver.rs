//! Our WHIR driver against Plonky3's own prover: the same commitment and the same proof bytes
//! (both grind for the smallest witness), accepted by the stock verifier, over a grid of shapes
//! drawn fresh each run — with Plonky3's encoder and Merkle tree (the CPU twin) and with
//! resident GPU codewords, both multiply variants.

mod common;

use std::sync::Arc;

use p3_field::{BasedVectorSpace, PrimeCharacteristicRing};
use rand::RngExt;
use whir_wgpu::gpu::{GpuChallenger, GpuMerkle, GpuNtt, GpuPoseidon2, Poseidon2Constants};
use whir_wgpu::prover::backend::GpuBackend;
use whir_wgpu::prover::backend::{Backend, ComparingBackend, CpuBackend, CpuSumcheck, SumcheckState};
use whir_wgpu::prover::prove_with_backend;
use whir_wgpu::prover::{permutation, CpuProver, DriverOptions, Params, Plonky3Pieces, ProofFile, ProverError, ProverOutput, Soundness, EF, F};

fn drive<S: Backend<Mmcs = whir_wgpu::verifier::hash::CpuMmcs>>(steps: &S, p: &Params, evals: &[p3_baby_bear::BabyBear]) -> (Vec<u8>, Vec<u8>) {
    drive_with(steps, p, evals, DriverOptions::default()).unwrap_or_else(|e| panic!("{p:?}: {e}"))
}

fn drive_with<S: Backend<Mmcs = whir_wgpu::verifier::hash::CpuMmcs>>(
    steps: &S,
    p: &Params,
    evals: &[p3_baby_bear::BabyBear],
    options: DriverOptions,
) -> Result<(Vec<u8>, Vec<u8>), ProverError> {
    let mut challenger = GpuChallenger::new(permutation(), None);
    let (commitment, proof, _) = prove_with_backend(steps, p, evals, &mut challenger, options)?;
    Ok((postcard::to_allocvec(&commitment).unwrap(), postcard::to_allocvec(&proof).unwrap()))
}

fn reference(p: &Params, evals: &[p3_baby_bear::BabyBear]) -> (ProverOutput, (Vec<u8>, Vec<u8>)) {
    let out = CpuProver.prove(p, evals).unwrap();
    let bytes = (postcard::to_allocvec(&out.commitment).unwrap(), out.proof.clone());
    (out, bytes)
}

/// The proof of fresh evaluations by `steps` run beside the CPU twin (a comparing backend, which
/// names the first step whose outputs differ): byte for byte Plonky3's, and accepted by the
/// stock verifier through a proof file.
fn drive_matches_plonky3_and_verifies<S: Backend<Mmcs = whir_wgpu::verifier::hash::CpuMmcs>>(
    steps: &S,
    p: &Params,
    rng: &mut rand::rngs::StdRng,
    variant: whir_wgpu::gpu::MulVariant,
) {
    drive_matches_plonky3_and_verifies_with(steps, p, rng, variant, DriverOptions::default())
}

fn drive_matches_plonky3_and_verifies_with<S: Backend<Mmcs = whir_wgpu::verifier::hash::CpuMmcs>>(
    steps: &S,
    p: &Params,
    rng: &mut rand::rngs::StdRng,
    variant: whir_wgpu::gpu::MulVariant,
    options: DriverOptions,
) {
    let evals = common::random_vec(rng, 1 << p.num_vars);
    let (out, expected) = reference(p, &evals);
    let ours = drive_with(&ComparingBackend::new(CpuBackend::default(), steps), p, &evals, options).unwrap_or_else(|e| panic!("{p:?} ({variant:?}): {e}"));
    assert!(ours == expected, "{p:?} ({variant:?}): the proofs differ");
    let file = ProofFile::new(p, out.commitment, ours.1);
    ProofFile::from_bytes(&file.to_bytes()).unwrap().verify(p).expect("stock verifier accepts");
}

/// Shapes from the grid: n 6..=14, fold 1..=4, rate 1..=3, Johnson and unique decoding,
/// PoW 0 / 5 / 8, 1..=3 points; infeasible draws are skipped.
fn grid(rng: &mut rand::rngs::StdRng, count: usize) -> Vec<Params> {
    common::random_params(rng, count, 6..=14, |p| p.config::<GpuChallenger>().is_ok())
}

type Config = p3_whir::parameters::WhirConfig<whir_wgpu::prover::EF, whir_wgpu::prover::F, GpuChallenger>;

/// Up to `take` of `pool` grid shapes, at 100 bits with 8 bits of PoW, whose configuration
/// `keep` accepts; at least one (`what` says what the grid lacked).
fn shapes_where(rng: &mut rand::rngs::StdRng, pool: usize, take: usize, what: &str, keep: impl Fn(&Config) -> bool) -> Vec<Params> {
    let shapes: Vec<Params> = grid(rng, pool)
        .into_iter()
        .map(|p| Params { pow_bits: 8, security_bits: 100, ..p })
        .filter(|p| p.config::<GpuChallenger>().is_ok_and(|c| keep(&c)))
        .take(take)
        .collect();
    assert!(!shapes.is_empty(), "no shape of the grid {what}");
    shapes
}

/// Rounds that draw out-of-domain points and grind for their queries (a round head to play).
fn plays_heads(c: &Config) -> bool {
    c.round_parameters().iter().any(|r| r.ood_samples > 0 && r.pow_bits > 0)
}

/// Some sumcheck round grinds.
fn grinds_in_sumcheck(c: &Config) -> bool {
    c.starting_folding_pow_bits() > 0 || c.round_parameters().iter().any(|r| r.folding_pow_bits > 0)
}

#[test]
fn cpu_twin_matches_plonky3_byte_for_byte() {
    let mut rng = common::rng();
    for p in grid(&mut rng, 12) {
        let evals = common::random_vec(&mut rng, 1 << p.num_vars);
        let (out, expected) = reference(&p, &evals);
        assert!(drive(&CpuBackend::default(), &p, &evals) == expected, "{p:?}: the proofs differ");
        out.proof_file(&p).to_bytes();
    }
}

#[test]
fn resident_gpu_codewords_match_plonky3_byte_for_byte() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let (steps, _) = backend_and_grinder(&ctx);
        for p in grid(&mut rng, 8) {
            drive_matches_plonky3_and_verifies(&steps, &p, &mut rng, ctx.mul_variant());
        }
    }
}

/// The memory-lean settings, which real sizes take from n = 21-24, on every size: codeword trees
/// that keep only their upper layers (every narrow tree; their openings rebuild the subtrees they
/// need) and lazy first weights. The same proofs; folds 1 and 2 (rows of 2-8 words) always, and
/// random shapes.
#[test]
fn memory_lean_settings_give_the_same_proofs() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let steps = backend_and_grinder(&ctx).0.with_trimmed_trees_from(1);
        let lazy = DriverOptions { lazy_first_weights: Some(true), ..DriverOptions::default() };
        let mut shapes: Vec<Params> = (1..=2)
            .map(|fold| Params {
                num_vars: rng.random_range(10..=13),
                fold,
                log_inv_rate: rng.random_range(1..=2),
                security_bits: 60,
                pow_bits: 5,
                soundness: Soundness::Johnson,
                points: 1,
                leaf: Default::default(),
            })
            .collect();
        shapes.extend(grid(&mut rng, 3));
        for p in shapes {
            drive_matches_plonky3_and_verifies_with(&steps, &p, &mut rng, ctx.mul_variant(), lazy);
        }
    }
}

/// Waits that spin on `poll` before blocking (the hardware default; CI's software adapter blocks
/// unless asked) give the same proofs: here every wait spins until the queue is empty.
#[test]
fn spinning_waits_give_the_same_proofs() {
    let mut rng = common::rng();
    for ctx in common::spinning_contexts(2_000_000) {
        let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()));
        let steps = GpuBackend::new(Arc::new(GpuNtt::new(ctx.clone())), Arc::new(GpuMerkle::new(poseidon2))).unwrap();
        for p in grid(&mut rng, 3) {
            let evals = common::random_vec(&mut rng, 1 << p.num_vars);
            let (_, expected) = reference(&p, &evals);
            let before = ctx.transfers().host_costs();
            assert!(drive(&steps, &p, &evals) == expected, "{p:?} ({:?}): the proofs differ", ctx.mul_variant());
            assert!(ctx.transfers().host_costs().wait > before.wait, "the proof waited for the GPU");
        }
    }
}

/// Each long step recorded as one submission (`WHIR_EARLY_SUBMITS=0`) gives the same proofs as
/// handing its first parts to the GPU while the rest is recorded (the default), which makes
/// more submissions for the same work.
#[test]
fn early_submits_give_the_same_proofs() {
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        let steps = backend_and_grinder(&ctx).0;
        for p in grid(&mut rng, 3) {
            let evals = common::random_vec(&mut rng, 1 << p.num_vars);
            let (_, expected) = reference(&p, &evals);
            let mut submissions = Vec::new();
            for early in [true, false] {
                ctx.transfers().set_early_submits(early);
                let before = ctx.transfers().transfer_counts();
                assert!(drive(&steps, &p, &evals) == expected, "{p:?} ({:?}, early submits {early}): the proofs differ", ctx.mul_variant());
                submissions.push((ctx.transfers().transfer_counts() - before).submissions);
            }
            ctx.transfers().set_early_submits(true);
            assert!(submissions[0] > submissions[1], "{p:?}: early submits made {} submissions, one per step {}", submissions[0], submissions[1]);
        }
    }
}

/// The resident steps on `ctx` and a GPU grinder over the same Poseidon2.
fn backend_and_grinder(ctx: &Arc<whir_wgpu::gpu::GpuContext>) -> (GpuBackend, Arc<whir_wgpu::gpu::GpuGrinder>) {
    let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()));
    let grinder = Arc::new(whir_wgpu::gpu::GpuGrinder::new(poseidon2.clone()));
    (GpuBackend::new(Arc::new(GpuNtt::new(ctx.clone())), Arc::new(GpuMerkle::new(poseidon2))).unwrap(), grinder)
}

/// A proof of fresh evaluations with every grind on the GPU, whatever its difficulty: checked
/// byte for byte against Plonky3's and for GPU grinds redone on the CPU; returns the challenger
/// (its counts) and the driver's times.
fn prove_grinding_on_the_gpu(
    steps: &GpuBackend,
    grinder: &Arc<whir_wgpu::gpu::GpuGrinder>,
    p: &Params,
    rng: &mut rand::rngs::StdRng,
) -> (GpuChallenger, whir_wgpu::prover::times::DriverTimes) {
    let evals = common::random_vec(rng, 1 << p.num_vars);
    let (_, expected) = reference(p, &evals);
    let mut challenger = GpuChallenger::new(permutation(), Some(grinder.clone())).with_gpu_min_bits(1);
    let (commitment, proof, times) = prove_with_backend::<_, whir_wgpu::gpu::Ext4, _, _>(steps, p, &evals, &mut challenger, DriverOptions::default())
        .unwrap_or_else(|e| panic!("{p:?}: {e}"));
    let ours = (postcard::to_allocvec(&commitment).unwrap(), postcard::to_allocvec(&proof).unwrap());
    assert!(ours == expected, "{p:?} ({:?}): the proofs differ", steps.context().mul_variant());
    assert_eq!(challenger.gpu_fallbacks(), 0, "{p:?}: GPU grinds redone on the CPU");
    (challenger, times)
}

/// Sumcheck rounds that grind on the GPU run the grind in the round's own submission (the
/// challenger takes the GPU's offer): the same proofs, and the offers are taken. At 100 bits of
/// security with 8 bits of PoW, p3-whir asks for a few bits of grinding per sumcheck round.
#[test]
fn grinding_ahead_in_sumcheck_rounds_gives_the_same_proofs() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let (steps, grinder) = backend_and_grinder(&ctx);
        let mut used = 0;
        let shapes = shapes_where(&mut rng, 40, 3, "grinds in its sumcheck rounds", grinds_in_sumcheck);
        for p in shapes {
            let (challenger, _) = prove_grinding_on_the_gpu(&steps, &grinder, &p, &mut rng);
            used += challenger.grinds_ahead_used();
        }
        assert!(used > 0, "no sumcheck grind used the GPU's offer ({:?})", ctx.mul_variant());
    }
}

/// Each round's head played in its commit's submission (the root observed, the out-of-domain
/// points drawn and f evaluated there, the query grind) gives Plonky3's proof byte for byte, and
/// every round's out-of-domain answers are the GPU's; grid shapes with rounds, every grind on
/// the GPU, both multiply variants.
#[test]
fn round_heads_played_on_the_gpu_give_the_same_proofs() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let (steps, grinder) = backend_and_grinder(&ctx);
        let shapes = shapes_where(&mut rng, 60, 4, "plays a round head", plays_heads);
        let (mut used, mut answers_played, mut grinds_played) = (0, 0, 0);
        for p in shapes {
            let (challenger, times) = prove_grinding_on_the_gpu(&steps, &grinder, &p, &mut rng);
            let config = p.config::<GpuChallenger>().unwrap();
            let answers: usize = config.round_parameters().iter().map(|r| r.ood_samples).sum();
            assert_eq!(times.head_answers, answers, "{p:?}: out-of-domain answers from the GPU");
            // Every round's query grind with its commit, and the final one with the final
            // polynomial.
            let grinds = config.round_parameters().iter().filter(|r| r.pow_bits > 0).count() + usize::from(config.final_round_config().pow_bits > 0);
            assert_eq!(times.head_grinds, grinds, "{p:?}: query grinds run ahead on the GPU");
            assert!(challenger.grinds_ahead_used() >= times.head_grinds as u64, "{p:?}: head grinds offered but not taken");
            used += challenger.grinds_ahead_used();
            (answers_played, grinds_played) = (answers_played + times.head_answers, grinds_played + times.head_grinds);
        }
        assert!(
            used > 0 && answers_played > 0 && grinds_played > 0,
            "heads played {answers_played} answers and {grinds_played} grinds ({:?})",
            ctx.mul_variant()
        );
    }
}

/// The other form of the transcript kernels and small Merkle levels than the contexts' own
/// (`GpuTuning::transcript_lanes`, `lane_level_max_nodes`: each permutation over 16
/// invocations, every level up to 2^16 nodes; or each over one thread): Plonky3's proofs byte
/// for byte, with round heads played and sumcheck grinds taken from the GPU, every grind on
/// the GPU, both multiply variants. The other tests prove in the contexts' form.
#[test]
fn lane_permutations_in_transcripts_and_trees_give_the_same_proofs() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let variant = ctx.mul_variant();
        let mut options = common::options_for(variant);
        options.tuning.transcript_lanes = !ctx.tuning().transcript_lanes;
        options.tuning.lane_level_max_nodes = if ctx.tuning().lane_level_max_nodes == 0 { 1 << 16 } else { 0 };
        options.tuning.merkle_fused_levels = Some(0);
        let Some(ctx) = common::open_with(options) else { return };
        let (steps, grinder) = backend_and_grinder(&ctx);
        let shapes = shapes_where(&mut rng, 80, 3, "plays round heads and grinds in its sumcheck rounds", |c| plays_heads(c) && grinds_in_sumcheck(c));
        let (mut used, mut heads) = (0, 0);
        for p in shapes {
            let (challenger, times) = prove_grinding_on_the_gpu(&steps, &grinder, &p, &mut rng);
            used += challenger.grinds_ahead_used();
            heads += times.head_answers;
        }
        assert!(
            used > 0 && heads > 0,
            "transcripts on the GPU: {used} grinds taken, {heads} out-of-domain answers ({variant:?}, transcript lanes {})",
            !ctx.tuning().transcript_lanes
        );
    }
}

/// What crosses the bus in one resident proof: the input once and each round's constraint
/// points; back only roots, round coefficients, claim and OOD answers, opened rows, sibling
/// digests, PoW witnesses and the final polynomial — never a codeword or a folded table. The pieces path reads every codeword back,
/// which this bound would catch.
#[test]
fn resident_proofs_never_read_a_codeword_back() {
    use whir_wgpu::prover::{GpuMode, GpuProver};
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        let gpu = GpuProver::new(ctx.clone());
        for p in [
            Params {
                num_vars: 14,
                fold: 1,
                log_inv_rate: 2,
                security_bits: 60,
                pow_bits: 8,
                soundness: Soundness::Johnson,
                points: 1,
                leaf: Default::default(),
            },
            Params {
                num_vars: 15,
                fold: 4,
                log_inv_rate: 2,
                security_bits: 60,
                pow_bits: 5,
                soundness: Soundness::Unique,
                points: 2,
                leaf: Default::default(),
            },
        ] {
            let evals = common::random_vec(&mut rng, 1 << p.num_vars);
            // Twiddle tables are uploaded once per context and size; a first proof makes them.
            gpu.prove(&p, &evals).unwrap();
            let input_bytes = 4u64 << p.num_vars;
            let codeword_bytes = input_bytes << p.log_inv_rate;
            let out = gpu.prove(&p, &evals).unwrap();
            assert_eq!(out.path, "gpu");
            let t = out.transfers.expect("GPU backends count transfers");
            let proof_bytes = out.proof.len() as u64;
            assert!(t.bytes_down <= 2 * proof_bytes + 4096, "{p:?}: {} bytes down for a {proof_bytes}-byte proof", t.bytes_down);
            // (Small, many-query shapes make proofs larger than a codeword; there the bound
            // above is the whole claim.)
            if 2 * proof_bytes + 4096 < codeword_bytes {
                assert!(t.bytes_down < codeword_bytes, "{p:?}: a codeword's worth came back");
            }
            // The input, and per round the claim points and select points' squares.
            assert!(t.bytes_up <= input_bytes + 262144, "{p:?}: {} bytes up for a {input_bytes}-byte input", t.bytes_up);

            let pieces = gpu.clone().with_mode(GpuMode::Pieces).prove(&p, &evals).unwrap();
            assert!(pieces.proof == out.proof, "{p:?}: resident and pieces proofs differ");
            assert!(pieces.transfers.unwrap().bytes_down >= codeword_bytes, "the pieces path reads codewords back");
        }
    }
}

/// The per-round breakdown: every submission of a profiled proof is timed and lands in exactly
/// one step of one round; the rounds are the config's; the proof is the unprofiled one; the peak
/// buffer memory holds at least the first codeword.
#[test]
fn profiled_proofs_account_for_every_submission_by_round_and_step() {
    use whir_wgpu::prover::times::Step;
    use whir_wgpu::prover::GpuProver;
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        // PoW of 16 bits: GPU grinding (from 14 bits), whose submissions count as PoW.
        let p = Params {
            num_vars: 12,
            fold: 2,
            log_inv_rate: 1,
            security_bits: 60,
            pow_bits: 16,
            soundness: Soundness::Johnson,
            points: 2,
            leaf: Default::default(),
        };
        let evals = common::random_vec(&mut rng, 1 << p.num_vars);
        let plain = GpuProver::new(ctx.clone()).prove(&p, &evals).unwrap();
        assert!(plain.breakdown.as_ref().unwrap().rounds.iter().flatten().all(|(_, t)| t.gpu.is_none()), "unprofiled proofs carry no GPU times");
        let out = GpuProver::new(ctx.clone()).with_profile(true).prove(&p, &evals).unwrap();
        assert!(out.proof == plain.proof, "profiling changed the proof");
        let b = out.breakdown.expect("resident proofs report a breakdown");
        let n_rounds = p.config::<GpuChallenger>().unwrap().n_rounds();
        assert_eq!(b.rounds.len(), n_rounds + 2, "round 0, the WHIR rounds, the final round");
        for (i, round) in b.rounds.iter().enumerate() {
            let has = |s: Step| round.iter().any(|(x, _)| *x == s);
            assert!(has(Step::Sumcheck), "round {i}: {round:?}");
            assert_eq!(has(Step::Pow), i > 0, "query PoW in every round after the initial fold: {round:?}");
            assert_eq!(has(Step::Commit), i <= n_rounds, "round {i} commits unless final: {round:?}");
            assert_eq!(has(Step::Open), i > 0, "round {i} opens unless initial: {round:?}");
        }
        let wall: std::time::Duration = Step::ALL.iter().map(|&s| b.total(s).wall).sum();
        assert!(wall <= out.commit_time + out.open_time, "steps cover at most the proof");
        if ctx.profiler().available() {
            let submissions: u32 = Step::ALL.iter().map(|&s| b.total(s).submissions).sum();
            assert_eq!(submissions as u64, out.transfers.unwrap().submissions, "every submission is in one step");
            assert!(Step::ALL.iter().all(|&s| b.total(s).gpu.is_some()));
            assert!(b.total(Step::Commit).gpu.unwrap() > std::time::Duration::ZERO, "commits take GPU time");
            assert!(b.total(Step::Pow).gpu.unwrap() > std::time::Duration::ZERO, "GPU grinding is profiled as PoW");
        } else {
            // Without timestamps inside encoders (Apple GPUs, the strict profile) profiling
            // degrades to wall times: the same proof, no GPU times.
            assert!(Step::ALL.iter().all(|&s| b.total(s).gpu.is_none()), "GPU times without timestamps inside encoders");
        }
        let first_codeword = 4u64 << (p.num_vars + p.log_inv_rate);
        if let Some(peak) = out.peak_gpu_bytes {
            assert!(peak >= first_codeword, "peak {peak} bytes below the first codeword's {first_codeword}");
        }
    }
}

/// The dispatch profile (a timed pass per dispatch) leaves proofs byte for byte as they were,
/// times every dispatch of the proof under its kernel, and ends cleanly: proofs after it record
/// as usual. The queue profile of a proof counts each of its submissions and is busy for part
/// of its window.
#[test]
fn dispatch_and_queue_profiles_time_every_dispatch_and_submission_without_changing_proofs() {
    use whir_wgpu::prover::GpuProver;
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        let p = Params {
            num_vars: 12,
            fold: 2,
            log_inv_rate: 1,
            security_bits: 60,
            pow_bits: 16,
            soundness: Soundness::Johnson,
            points: 1,
            leaf: Default::default(),
        };
        let evals = common::random_vec(&mut rng, 1 << p.num_vars);
        let gpu = GpuProver::new(ctx.clone());
        let plain = gpu.prove(&p, &evals).unwrap();
        let profiler = ctx.profiler();
        if !ctx.summary().timestamp_query {
            assert!(!profiler.begin_dispatches(), "no dispatch profile without timestamp queries");
            continue;
        }
        let before = ctx.transfers().host_costs().dispatches;
        assert!(profiler.begin_dispatches());
        let profiled = gpu.prove(&p, &evals).unwrap();
        let kernels = profiler.end_dispatches().unwrap().expect("a dispatch profile ran");
        let dispatched = ctx.transfers().host_costs().dispatches - before;
        assert!(profiled.proof == plain.proof, "a pass per dispatch changed the proof");
        assert_eq!(kernels.iter().map(|k| k.dispatches as u64).sum::<u64>(), dispatched, "every dispatch is timed once");
        assert!(kernels.iter().all(|k| k.kernel != "unnamed"), "every pipeline is named: {kernels:?}");
        assert!(kernels.windows(2).all(|w| w[0].gpu >= w[1].gpu), "most GPU time first");
        for expected in ["grind", "hash_leaves", "dif_pass"] {
            assert!(kernels.iter().any(|k| k.kernel == expected && k.gpu > std::time::Duration::ZERO), "{expected} missing or untimed in {kernels:?}");
        }
        assert!(profiler.end_dispatches().unwrap().is_none(), "the profile ended");
        assert!(gpu.prove(&p, &evals).unwrap().proof == plain.proof);

        if profiler.available() {
            let submissions = ctx.transfers().transfer_counts().submissions;
            assert!(profiler.begin());
            let again = gpu.prove(&p, &evals).unwrap();
            let (_, queue) = profiler.end_with_occupancy().unwrap().expect("a profile ran");
            assert!(again.proof == plain.proof);
            assert_eq!(
                queue.submissions as u64,
                ctx.transfers().transfer_counts().submissions - submissions - 1,
                "each of the proof's submissions (not the profile's own readback)"
            );
            assert!(queue.busy > std::time::Duration::ZERO && queue.busy <= queue.window && queue.busy <= queue.summed, "{queue:?}");
            assert!(queue.busy_share() > 0.0 && queue.busy_share() <= 1.0);
        }
    }
}

/// A GPU failure mid-proof proves again on the CPU: a proof the verifier accepts, never a bad one.
#[test]
fn a_gpu_failure_mid_proof_falls_back_to_the_cpu() {
    use whir_wgpu::prover::GpuProver;
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        let gpu = GpuProver::new(ctx.clone());
        let p = Params {
            num_vars: 12,
            fold: 2,
            log_inv_rate: 1,
            security_bits: 60,
            pow_bits: 5,
            soundness: Soundness::Johnson,
            points: 1,
            leaf: Default::default(),
        };
        let evals = common::random_vec(&mut rng, 1 << p.num_vars);
        let expected = CpuProver.prove(&p, &evals).unwrap();
        // Each readback in turn fails, the first commit's root to the openings' (the last,
        // waited for after the closing sumcheck): the proof breaks off there every time. Past
        // the last one, the proof is the GPU's.
        let mut skip = 0;
        loop {
            ctx.faults().fail_readbacks(skip, 1);
            let out = gpu.prove(&p, &evals).unwrap();
            let struck = ctx.faults().injected_failures_left() == 0;
            ctx.faults().fail_readbacks(0, 0);
            assert!(out.proof == expected.proof, "failure after {skip} readbacks: the proofs differ");
            ProofFile::from_bytes(&out.proof_file(&p).to_bytes()).unwrap().verify(&p).unwrap();
            if out.path == "gpu" {
                // Only because the proof made no more readbacks: none was survived.
                assert!(!struck, "a readback failure (after {skip}) was survived on the GPU");
                break;
            }
            assert_eq!(out.path, "cpu (fallback)", "failure after {skip} readbacks");
            skip += 1;
            assert!(skip < 200, "a proof that never gets past its readbacks");
        }
        assert!(skip >= 5, "a resident proof reads back more than {skip} times");
        assert_eq!(gpu.prove(&p, &evals).unwrap().path, "gpu", "the GPU is used again afterwards");
    }
}

/// The Apple M1 profile asks the adapter for what wgpu's Metal backend gives an M1 (as far as the
/// adapter has it): at most 32 KiB of workgroup memory and 1,024 invocations, no timestamps
/// inside encoders (so no GPU profiling), subgroups of 4 to 64; and resident proofs under it,
/// profiled or not, are Plonky3's byte for byte.
#[test]
fn the_apple_m1_profile_has_an_m1s_limits_and_proves_as_plonky3() {
    use whir_wgpu::gpu::{plumbing::APPLE_M1_MAX_BUFFER_BYTES, GpuOptions, LimitsProfile, MulVariant};
    use whir_wgpu::prover::times::Step;
    use whir_wgpu::prover::GpuProver;
    let mut rng = common::rng();
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::AppleM1), ..Default::default() }) else { return };
    let s = ctx.summary();
    assert_eq!(s.profile, LimitsProfile::AppleM1);
    assert!(s.max_compute_workgroup_storage_size <= 32 << 10 && s.max_compute_invocations_per_workgroup <= 1024, "{s:?}");
    assert!(
        s.max_compute_workgroups_per_dimension <= 0xFFFF
            && s.max_buffer_size <= APPLE_M1_MAX_BUFFER_BYTES
            && s.max_storage_buffer_binding_size <= APPLE_M1_MAX_BUFFER_BYTES,
        "{s:?}"
    );
    assert!(!s.timestamp_inside_encoders && !ctx.profiler().available(), "an M1 has no timestamps inside encoders");
    assert_eq!((s.subgroup_min_size, s.subgroup_max_size), (4, 64), "wgpu's Metal subgroup range");
    assert_eq!(ctx.mul_variant() == MulVariant::U64, s.shader_int64, "the u64 multiply where the adapter has SHADER_INT64, as an M1 does");
    let limits = ctx.limits();
    assert!(limits.max_storage_buffers_per_shader_stage <= 29 && limits.min_storage_buffer_offset_alignment >= 32, "{limits:?}");
    for (n, fold, rate) in [(12, 2, 1), (13, 4, 2)] {
        let p = Params {
            num_vars: n,
            fold,
            log_inv_rate: rate,
            security_bits: 60,
            pow_bits: 8,
            soundness: Soundness::Johnson,
            points: 2,
            leaf: Default::default(),
        };
        let evals = common::random_vec(&mut rng, 1 << n);
        let (_, expected) = reference(&p, &evals);
        for profile in [false, true] {
            let out = GpuProver::new(ctx.clone()).with_profile(profile).prove(&p, &evals).unwrap();
            assert!(out.proof == expected.1, "{p:?} in the Apple M1 profile (profiled: {profile}): the proofs differ");
            let b = out.breakdown.expect("a breakdown");
            assert!(Step::ALL.iter().all(|&s| b.total(s).gpu.is_none()), "no GPU times without timestamps inside encoders");
        }
    }
}

/// Resident proofs on an adapter whose binding limit is far below the proof's data (the strict
/// profile with a 64 KiB binding, as n = 24 meets WebGPU's 128 MiB): the sumcheck tables run
/// in segments, the first and later codewords are encoded in column blocks and hashed as row
/// chunks — and the proofs are Plonky3's byte for byte, accepted by the stock verifier. A shape
/// whose folded polynomial cannot fit one binding is refused before any work, with the reason.
#[test]
fn resident_proofs_split_over_small_bindings_match_plonky3() {
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    use whir_wgpu::prover::GpuProver;
    let mut rng = common::rng();
    let binding = 64u64 << 10;
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(binding) }), ..Default::default() }) else {
        return;
    };
    let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()));
    let steps = GpuBackend::new(Arc::new(GpuNtt::new(ctx.clone())), Arc::new(GpuMerkle::new(poseidon2))).unwrap();
    for (n, fold, rate) in [(13, 1, 1), (13, 2, 2), (14, 4, 1), (14, 2, 1), (13, 4, 2)] {
        let p = Params {
            num_vars: n,
            fold,
            log_inv_rate: rate,
            security_bits: 60,
            pow_bits: 5,
            soundness: Soundness::Johnson,
            points: 2,
            leaf: Default::default(),
        };
        // The weights (16 bytes per entry) and the first folded codeword (16 bytes per entry of
        // 2^(n + rate - 1)) exceed the binding.
        assert!(16u64 << n > binding && 16u64 << (n + rate - 1) > binding);
        let evals = common::random_vec(&mut rng, 1 << n);
        let (out, expected) = reference(&p, &evals);
        let ours = drive(&steps, &p, &evals);
        assert!(ours == expected, "{p:?} under a {binding}-byte binding: the proofs differ");
        let file = ProofFile::new(&p, out.commitment, ours.1);
        ProofFile::from_bytes(&file.to_bytes()).unwrap().verify(&p).expect("stock verifier accepts");
    }
    let p =
        Params { num_vars: 14, fold: 1, log_inv_rate: 1, security_bits: 60, pow_bits: 5, soundness: Soundness::Johnson, points: 1, leaf: Default::default() };
    let Err(err) = GpuProver::new(ctx).prove_resident(&p, &common::random_vec(&mut rng, 1 << 14)) else { panic!("{p:?} was not refused") };
    let err = err.to_string();
    assert!(err.contains("folded in the first round") && err.contains("limit"), "{err}");
}

/// The CPU twin with one step made wrong on purpose: the `at`-th call of `corrupt` returns a
/// wrong value (one added).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Corrupt {
    RoundCoefficients,
    Evaluation,
    FinalPolynomial,
    Root,
}

struct CorruptedBackend {
    inner: CpuBackend,
    corrupt: Corrupt,
    at: usize,
    commits: std::cell::Cell<usize>,
}

struct CorruptedSumcheck {
    inner: CpuSumcheck,
    corrupt: Corrupt,
    at: usize,
    calls: usize,
}

impl CorruptedSumcheck {
    fn hit(&mut self, kind: Corrupt) -> bool {
        if kind != self.corrupt {
            return false;
        }
        self.calls += 1;
        self.calls == self.at + 1
    }
}

impl SumcheckState for CorruptedSumcheck {
    fn num_variables(&self) -> usize {
        self.inner.num_variables()
    }
    fn duplicate(&self) -> Result<Self, ProverError> {
        Ok(Self { inner: self.inner.duplicate()?, corrupt: self.corrupt, at: self.at, calls: self.calls })
    }
    fn round_coefficients(&mut self) -> Result<(EF, EF), ProverError> {
        let (c0, c_inf) = self.inner.round_coefficients()?;
        Ok(if self.hit(Corrupt::RoundCoefficients) { (c0 + EF::ONE, c_inf) } else { (c0, c_inf) })
    }
    fn fold(&mut self, r: EF) -> Result<(), ProverError> {
        self.inner.fold(r)
    }
    fn add_eq_weights(&mut self, points: &[p3_multilinear_util::point::Point<EF>], scales: &[EF]) -> Result<(), ProverError> {
        self.inner.add_eq_weights(points, scales)
    }
    fn add_select_weights(&mut self, vars: &[F], scales: &[EF]) -> Result<(), ProverError> {
        self.inner.add_select_weights(vars, scales)
    }
    fn eval(&mut self, point: &p3_multilinear_util::point::Point<EF>) -> Result<EF, ProverError> {
        let value = self.inner.eval(point)?;
        Ok(if self.hit(Corrupt::Evaluation) { value + EF::ONE } else { value })
    }
    fn evals(&mut self) -> Result<Vec<EF>, ProverError> {
        let mut evals = self.inner.evals()?;
        if self.hit(Corrupt::FinalPolynomial) {
            evals[0] += EF::ONE;
        }
        Ok(evals)
    }
    fn eval_slots(&mut self, sets: &[whir_wgpu::prover::backend::SlotSet]) -> Result<Vec<Vec<EF>>, ProverError> {
        self.inner.eval_slots(sets)
    }
    fn add_slot_weights(&mut self, sets: &[(whir_wgpu::prover::backend::SlotSet, Vec<EF>)]) -> Result<(), ProverError> {
        self.inner.add_slot_weights(sets)
    }
    fn weights_table(&mut self) -> Result<Vec<EF>, ProverError> {
        self.inner.weights_table()
    }
    fn scale_weights(&mut self, s: EF) -> Result<(), ProverError> {
        self.inner.scale_weights(s)
    }
    fn add_power_weights(&mut self, vars: &[EF], scales: &[EF]) -> Result<(), ProverError> {
        self.inner.add_power_weights(vars, scales)
    }
    fn eval_powers(&mut self, y: EF) -> Result<EF, ProverError> {
        self.inner.eval_powers(y)
    }
}

impl Backend for CorruptedBackend {
    type Committed = <CpuBackend as Backend>::Committed;
    type Opening = <CpuBackend as Backend>::Opening;
    type Sumcheck = CorruptedSumcheck;
    type Transcript = <CpuBackend as Backend>::Transcript;
    type Mmcs = whir_wgpu::verifier::hash::CpuMmcs;

    fn leaf_sponge(&self) -> Option<whir_wgpu::prover::LeafSponge> {
        self.inner.leaf_sponge()
    }
    fn mmcs(&self) -> whir_wgpu::verifier::hash::CpuMmcs {
        self.inner.mmcs()
    }

    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(whir_wgpu::prover::Commitment, Self::Committed), ProverError> {
        let (root, committed) = self.inner.commit(message, width, log_inv_rate)?;
        self.commits.set(self.commits.get() + 1);
        if self.corrupt == Corrupt::Root && self.commits.get() == self.at + 1 {
            let mut digests = root.roots().to_vec();
            digests[0][0] += F::ONE;
            return Ok((whir_wgpu::prover::Commitment::new(digests), committed));
        }
        Ok((root, committed))
    }
    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError> {
        self.inner.open(committed, indices)
    }
    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<Vec<whir_wgpu::prover::backend::OpenedRows>, ProverError> {
        self.inner.read_openings(openings)
    }
    fn commit_message(
        &self,
        message: &[F],
        width: usize,
        log_inv_rate: usize,
    ) -> Result<(whir_wgpu::prover::Commitment, Self::Committed, Self::Sumcheck), ProverError> {
        let (root, committed) = self.commit(message, width, log_inv_rate)?;
        let f: Vec<EF> = message.iter().copied().map(EF::from).collect();
        let sumcheck = CpuSumcheck::new(f, EF::zero_vec(message.len()))?;
        Ok((root, committed, CorruptedSumcheck { inner: sumcheck, corrupt: self.corrupt, at: self.at, calls: 0 }))
    }
    fn commit_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(whir_wgpu::prover::Commitment, Self::Committed), ProverError> {
        self.commit(&EF::flatten_to_base(sumcheck.inner.evals()?), 4 << fold, log_inv_rate)
    }
    fn commit_hiding_message(
        &self,
        poly: &[F],
        randomness: &[F],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(whir_wgpu::prover::Commitment, Self::Committed, Self::Sumcheck), ProverError> {
        let (root, committed, sumcheck) = self.inner.commit_hiding_message(poly, randomness, fold, log_inv_rate)?;
        Ok((root, committed, CorruptedSumcheck { inner: sumcheck, corrupt: self.corrupt, at: self.at, calls: 0 }))
    }
    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[EF],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(whir_wgpu::prover::Commitment, Self::Committed), ProverError> {
        self.inner.commit_hiding_folded(&mut sumcheck.inner, randomness, fold, log_inv_rate)
    }
}

/// The comparing backend stops a proof at the first step whose outputs differ and names it: a
/// test backend (the CPU twin) made wrong at one step on purpose, compared with the CPU twin.
#[test]
fn the_comparing_backend_names_a_corrupted_step() {
    let p =
        Params { num_vars: 10, fold: 2, log_inv_rate: 1, security_bits: 60, pow_bits: 0, soundness: Soundness::Johnson, points: 1, leaf: Default::default() };
    let evals = common::random_vec(&mut common::rng(), 1 << p.num_vars);
    let rounds = p.config::<GpuChallenger>().unwrap().n_rounds();
    for (corrupt, at, expected) in [
        (Corrupt::Root, 0, "round 0, step commit: commit: root".to_string()),
        (Corrupt::Root, 1, "round 1, step commit: commit: root".to_string()),
        (Corrupt::Evaluation, 0, "round 0, step claims: evaluation of f".to_string()),
        (Corrupt::RoundCoefficients, 0, "round 0, step sumcheck: round coefficients".to_string()),
        // Fold 2: the initial fold's two rounds, then round 1's.
        (Corrupt::RoundCoefficients, 2, "round 1, step sumcheck: round coefficients".to_string()),
        (Corrupt::RoundCoefficients, 3, "round 1, step sumcheck: fold, then round coefficients".to_string()),
        (Corrupt::FinalPolynomial, 0, format!("round {}, step sumcheck: f's evaluation table", rounds + 1)),
    ] {
        let corrupted = CorruptedBackend { inner: CpuBackend::default(), corrupt, at, commits: Default::default() };
        // Alone, the corrupted backend makes a proof without noticing.
        assert!(drive_with(&corrupted, &p, &evals, DriverOptions::default()).is_ok(), "{corrupt:?} {at}");
        let corrupted = CorruptedBackend { commits: Default::default(), ..corrupted };
        match drive_with(&ComparingBackend::new(CpuBackend::default(), &corrupted), &p, &evals, DriverOptions::default()) {
            Err(ProverError::Mismatch { step, detail }) => {
                assert!(step.starts_with(&expected), "{corrupt:?} {at}: reported at {step:?} ({detail}), expected {expected:?}")
            }
            other => panic!("{corrupt:?} {at}: expected a mismatch at {expected:?}, got {:?}", other.map(|_| ())),
        }
    }
    // Compared with itself, the CPU twin agrees at every step.
    assert_eq!(
        drive_with(&ComparingBackend::new(CpuBackend::default(), CpuBackend::default()), &p, &evals, DriverOptions::default()).unwrap(),
        reference(&p, &evals).1
    );
}

/// A round head the device played wrong (its out-of-domain points moved) is caught where the
/// driver replays it: the proof fails with `ProverError::PlayedAhead`, it does not come back.
#[test]
fn a_round_head_played_wrong_is_refused() {
    let p =
        Params { num_vars: 12, fold: 2, log_inv_rate: 1, security_bits: 60, pow_bits: 0, soundness: Soundness::Johnson, points: 1, leaf: Default::default() };
    assert!(p.config::<GpuChallenger>().unwrap().round_parameters().iter().any(|r| r.ood_samples > 0), "the rounds must sample out of domain");
    let evals = common::random_vec(&mut common::rng(), 1 << p.num_vars);
    for ctx in common::contexts() {
        let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()));
        let steps = GpuBackend::new(Arc::new(GpuNtt::new(ctx.clone())), Arc::new(GpuMerkle::new(poseidon2.clone()))).unwrap();
        let mut challenger = GpuChallenger::new(permutation(), Some(Arc::new(whir_wgpu::gpu::GpuGrinder::new(poseidon2))));
        match prove_with_backend(&common::tampered::MovedHeadPoints(steps), &p, &evals, &mut challenger, DriverOptions::default()) {
            Err(ProverError::PlayedAhead(why)) => assert!(why.contains("out-of-domain point"), "{why}"),
            other => panic!("a tampered head gave {:?} ({:?})", other.map(|_| "a proof"), ctx.mul_variant()),
        }
    }
}
