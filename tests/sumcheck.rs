//! The GPU sumcheck steps against the plain-Rust twin on fresh random tables, both multiply
//! variants, sizes from one entry to 2^12: round coefficients, folding, equality and select
//! weights, multilinear evaluation.

mod common;

use p3_baby_bear::BabyBear;
use p3_field::PrimeCharacteristicRing;
use p3_multilinear_util::point::Point;
use rand::RngExt;
use std::sync::Arc;

use rand::distr::{Distribution, StandardUniform};
use whir_wgpu::gpu::transcript::{ChainWire, WireRound};
use whir_wgpu::gpu::{Ext4, GpuExtension, GpuNtt, GpuSumcheck};
use whir_wgpu::prover::backend::{CpuSumcheck, SumcheckState};
use whir_wgpu::prover::{ProverField, WhirExtension};

fn ext_vec(rng: &mut rand::rngs::StdRng, n: usize) -> Vec<Ext4> {
    rand_vec(rng, n)
}

fn rand_vec<T>(rng: &mut rand::rngs::StdRng, n: usize) -> Vec<T>
where
    StandardUniform: Distribution<T>,
{
    (0..n).map(|_| rng.random()).collect()
}

#[test]
fn gpu_sumcheck_steps_match_the_cpu_twin() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        for m in [0usize, 1, 2, 3, 5, 8, 12] {
            check_steps(&ctx, m, &mut rng, false);
        }
        // Tables held at bit-reversed indices (a prefix-order sumcheck).
        for m in [0usize, 1, 3, 8] {
            check_steps(&ctx, m, &mut rng, true);
        }
    }
}

/// Under a 64 KiB binding (4,096 BabyBear^4 entries) tables of 2^13 and 2^14 entries run in 2
/// and 4 segments: every step against the twin as above, and a base-field f split into ranges.
#[test]
fn tables_over_the_binding_limit_are_split_into_segments() {
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    let mut rng = common::rng();
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) else {
        return;
    };
    for m in [12usize, 13, 14] {
        check_steps(&ctx, m, &mut rng, m == 14);
        check_base(&ctx, m, &mut rng);
    }
    // f as one buffer (to encode it) only once it fits one binding.
    let ext = ext_vec(&mut rng, 1 << 13);
    let mut gpu = GpuSumcheck::new(Arc::new(GpuNtt::new(ctx.clone())), &ext, &ext).unwrap();
    let err = gpu.f_buffer().unwrap_err().to_string();
    assert!(err.contains("one buffer") && err.contains("limit"), "{err}");
    gpu.fold(rng.random()).unwrap();
    assert!(gpu.f_buffer().is_ok());
}

/// Every step of a sumcheck over 2^m entries against the twin on fresh random tables.
fn check_steps(ctx: &Arc<whir_wgpu::gpu::GpuContext>, m: usize, rng: &mut rand::rngs::StdRng, reversed: bool) {
    check_steps_over::<BabyBear, Ext4>(ctx, m, rng, reversed)
}

/// [`check_steps`] over the field `F` and its extension `E` (degree 4, 5 or 8).
fn check_steps_over<F: ProverField, E: WhirExtension<F> + GpuExtension<F>>(
    ctx: &Arc<whir_wgpu::gpu::GpuContext>,
    m: usize,
    rng: &mut rand::rngs::StdRng,
    reversed: bool,
) where
    StandardUniform: Distribution<F> + Distribution<E>,
{
    let (f, w): (Vec<E>, Vec<E>) = (rand_vec(rng, 1 << m), rand_vec(rng, 1 << m));
    let (mut cpu, mut gpu) =
        (CpuSumcheck::<F, E>::new(f.clone(), w.clone()).unwrap(), GpuSumcheck::<F, E>::new(Arc::new(GpuNtt::new(ctx.clone())), &f, &w).unwrap());
    if reversed {
        (cpu, gpu) = (cpu.with_reversed_indices(), gpu.with_reversed_indices());
    }
    let what = |step: &str| format!("{step} at m = {m} ({}, {:?}, reversed indices {reversed})", E::NAME, ctx.mul_variant());

    // Constraint weights: a few eq points, up to 150 select variables.
    let points: Vec<Point<E>> = (0..rng.random_range(0..4)).map(|_| Point::new(rand_vec::<E>(rng, m))).collect();
    let scales = rand_vec::<E>(rng, points.len());
    cpu.add_eq_weights(&points, &scales).unwrap();
    SumcheckState::add_eq_weights(&mut gpu, &points, &scales).unwrap();
    let vars: Vec<F> = (0..rng.random_range(1..150)).map(|_| rng.random()).collect();
    let scales = rand_vec::<E>(rng, vars.len());
    cpu.add_select_weights(&vars, &scales).unwrap();
    SumcheckState::add_select_weights(&mut gpu, &vars, &scales).unwrap();
    assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{}", what("weights"));

    // Select weights of domain points ω^index, few (per entry) and many (a transform),
    // repeated indices included.
    for (log_domain, count) in [(m + 1, 5usize), (m + 1, 300), (m, 400), (m + 2, 1000)] {
        let mut indices: Vec<usize> = (0..count).map(|_| rng.random_range(0..1usize << log_domain)).collect();
        indices.push(indices[0]);
        let scales = rand_vec::<E>(rng, indices.len());
        cpu.add_select_weights_at(log_domain, &indices, &scales).unwrap();
        SumcheckState::add_select_weights_at(&mut gpu, log_domain, &indices, &scales).unwrap();
        assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{}", what(&format!("{count} select weights in 2^{log_domain}")));
    }

    let point = Point::new(rand_vec::<E>(rng, m));
    assert_eq!(SumcheckState::eval(&mut gpu, &point).unwrap(), cpu.eval(&point).unwrap(), "{}", what("eval"));
    let y: E = rng.random();
    assert_eq!(SumcheckState::eval_univariate(&mut gpu, y).unwrap(), cpu.eval_univariate(y).unwrap(), "{}", what("eval at powers"));

    // Rounds alternate between a fold on its own and a fold recorded with the next
    // round's coefficients (the driver's way).
    let mut pending: Option<E> = None;
    for round in 0..m {
        let c = match pending.take() {
            Some(r) if round % 2 == 0 => SumcheckState::fold_then_round(&mut gpu, r).unwrap(),
            Some(r) => {
                SumcheckState::fold(&mut gpu, r).unwrap();
                SumcheckState::round_coefficients(&mut gpu).unwrap()
            }
            None => SumcheckState::round_coefficients(&mut gpu).unwrap(),
        };
        assert_eq!(c, cpu.round_coefficients().unwrap(), "{}", what(&format!("round {round}")));
        let r: E = rng.random();
        cpu.fold(r).unwrap();
        pending = Some(r);
    }
    if let Some(r) = pending {
        SumcheckState::fold(&mut gpu, r).unwrap();
    }
    assert_eq!(SumcheckState::evals(&mut gpu).unwrap(), cpu.evals().unwrap(), "{}", what("folded f"));
    assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{}", what("folded w"));
    assert!(SumcheckState::round_coefficients(&mut gpu).is_err(), "no variable left");
}

/// The steps over the degree-8 extensions (BabyBear^8, KoalaBear^8): extension and base-field
/// f, tables at bit-reversed indices, and tables split into segments under a 64 KiB binding
/// (2,048 entries of 32 bytes).
#[test]
fn degree_8_steps_match_the_twin() {
    use p3_field::extension::BinomialExtensionField;
    use p3_koala_bear::KoalaBear;
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    type B8 = BinomialExtensionField<BabyBear, 8>;
    type K8 = BinomialExtensionField<KoalaBear, 8>;
    let mut rng = common::rng();
    for ctx in common::contexts() {
        for m in [0usize, 1, 3, 8, 10] {
            check_steps_over::<BabyBear, B8>(&ctx, m, &mut rng, m == 3);
            check_steps_over::<KoalaBear, K8>(&ctx, m, &mut rng, m == 8);
        }
        for m in [1usize, 5, 9] {
            check_base_over::<BabyBear, B8>(&ctx, m, &mut rng);
            check_base_over::<KoalaBear, K8>(&ctx, m, &mut rng);
        }
    }
    let Some(small) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) else {
        return;
    };
    for m in [11usize, 12] {
        check_steps_over::<KoalaBear, K8>(&small, m, &mut rng, m == 12);
        check_base_over::<BabyBear, B8>(&small, m, &mut rng);
    }
}

/// The steps over the quintic extensions (BabyBear's binomial one, KoalaBear's trinomial one:
/// five words an element, 20 bytes in storage): extension and base-field f, bit-reversed
/// tables, lazy equality and slot weights, and tables in segments under a 64 KiB binding.
#[test]
fn degree_5_steps_match_the_twin() {
    use p3_field::extension::{BinomialExtensionField, QuinticTrinomialExtensionField};
    use p3_koala_bear::KoalaBear;
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    type B5 = BinomialExtensionField<BabyBear, 5>;
    type K5 = QuinticTrinomialExtensionField<KoalaBear>;
    let mut rng = common::rng();
    for ctx in common::contexts() {
        for m in [0usize, 1, 3, 8] {
            check_steps_over::<BabyBear, B5>(&ctx, m, &mut rng, m == 3);
            check_steps_over::<KoalaBear, K5>(&ctx, m, &mut rng, m == 8);
        }
        for m in [1usize, 6] {
            check_base_over::<BabyBear, B5>(&ctx, m, &mut rng);
            check_base_over::<KoalaBear, K5>(&ctx, m, &mut rng);
        }
        lazy_rounds_over::<BabyBear, B5>(&ctx, &mut rng, 8, 3);
        lazy_rounds_over::<KoalaBear, K5>(&ctx, &mut rng, 9, 2);
    }
    let Some(small) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..common::env_options() })
    else {
        return;
    };
    check_steps_over::<KoalaBear, K5>(&small, 12, &mut rng, true);
    check_base_over::<BabyBear, B5>(&small, 12, &mut rng);
    lazy_rounds_over::<KoalaBear, K5>(&small, &mut rng, 12, 3);
}

#[test]
fn bad_sumcheck_inputs_are_errors() {
    for ctx in common::contexts() {
        let one = [Ext4::default(); 4];
        let ntt = Arc::new(GpuNtt::new(ctx.clone()));
        assert!(GpuSumcheck::new(ntt.clone(), &one[..3], &one[..3]).is_err());
        assert!(GpuSumcheck::new(ntt.clone(), &one, &one[..2]).is_err());
        let mut gpu = GpuSumcheck::new(ntt, &one, &one).unwrap();
        assert!(gpu.add_select_weights_at(3, &[8], &[Ext4::default()]).is_err(), "index outside the domain");
        assert!(gpu.add_select_weights_at(40, &[1], &[Ext4::default()]).is_err(), "domain past 2^27");
        assert!(gpu.eval(&[Ext4::default(); 3]).is_err(), "3 coordinates for 2 variables");
        assert!(gpu.add_eq_weights(&[vec![Ext4::default(); 2]], &[]).is_err());
        assert!(gpu.add_select_weights(&[BabyBear::default()], &[]).is_err());
    }
}

/// A base-field f already on the GPU (the committed message): evaluations, weights, the first
/// round and the fold into BabyBear^4 against the twin over f lifted into BabyBear^4.
#[test]
fn base_field_sumcheck_matches_the_twin() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        for m in [1usize, 2, 5, 10] {
            check_base(&ctx, m, &mut rng);
        }
    }
}

fn check_base(ctx: &Arc<whir_wgpu::gpu::GpuContext>, m: usize, rng: &mut rand::rngs::StdRng) {
    check_base_over::<BabyBear, Ext4>(ctx, m, rng)
}

/// [`check_base`] over the field `F` and its extension `E` (degree 4, 5 or 8).
fn check_base_over<F: ProverField, E: WhirExtension<F> + GpuExtension<F>>(ctx: &Arc<whir_wgpu::gpu::GpuContext>, m: usize, rng: &mut rand::rngs::StdRng)
where
    StandardUniform: Distribution<F> + Distribution<E>,
{
    let f: Vec<F> = (0..1 << m).map(|_| rng.random()).collect();
    let ntt = Arc::new(GpuNtt::new(ctx.clone()));
    let buffer = ctx.transfers().upload("base f", whir_wgpu::gpu::field::as_words(&f));
    let mut gpu = GpuSumcheck::<F, E>::from_base(ntt, buffer, m).unwrap();
    assert!(gpu.is_base());
    let mut cpu = CpuSumcheck::<F, E>::new(f.iter().copied().map(E::from).collect(), vec![E::ZERO; 1 << m]).unwrap();
    let what = |step: &str| format!("{step} at m = {m} ({}, {:?})", E::NAME, ctx.mul_variant());

    let point = Point::new(rand_vec::<E>(rng, m));
    assert_eq!(SumcheckState::eval(&mut gpu, &point).unwrap(), cpu.eval(&point).unwrap(), "{}", what("eval"));
    let points: Vec<Point<E>> = (0..3).map(|_| Point::new(rand_vec::<E>(rng, m))).collect();
    let scales = rand_vec::<E>(rng, 3);
    cpu.add_eq_weights(&points, &scales).unwrap();
    SumcheckState::add_eq_weights(&mut gpu, &points, &scales).unwrap();
    assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{}", what("weights"));
    assert_eq!(SumcheckState::round_coefficients(&mut gpu).unwrap(), cpu.round_coefficients().unwrap(), "{}", what("base round"));
    let r: E = rng.random();
    SumcheckState::fold(&mut gpu, r).unwrap();
    cpu.fold(r).unwrap();
    assert!(!gpu.is_base());
    assert_eq!(SumcheckState::evals(&mut gpu).unwrap(), cpu.evals().unwrap(), "{}", what("folded f"));
    assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{}", what("folded w"));
}

/// Evaluations read f against tables of 8 index bits each: sizes on both sides of every chunk
/// boundary up to three chunks, base-field and BabyBear^4 f, multilinear and univariate; from
/// 2^19 entries a workgroup sums several 256-entry rows.
#[test]
fn evaluations_match_the_twin_across_chunk_boundaries() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let ntt = Arc::new(GpuNtt::new(ctx.clone()));
        for m in [0usize, 7, 8, 9, 15, 16, 17, 19, 20] {
            let what = |step: &str| format!("{step} at m = {m} ({:?})", ctx.mul_variant());
            let base: Vec<BabyBear> = (0..1 << m).map(|_| rng.random()).collect();
            let lifted: Vec<Ext4> = base.iter().copied().map(Ext4::from).collect();
            let ext = ext_vec(&mut rng, 1 << m);
            let zero = vec![Ext4::default(); 1 << m];
            let buffer = ctx.transfers().upload("base f", whir_wgpu::gpu::field::as_words(&base));
            let gpus = [
                (GpuSumcheck::from_base(ntt.clone(), buffer, m).unwrap(), CpuSumcheck::new(lifted, zero.clone()).unwrap(), "base"),
                (GpuSumcheck::new(ntt.clone(), &ext, &zero).unwrap(), CpuSumcheck::new(ext, zero).unwrap(), "ext"),
            ];
            for (mut gpu, mut cpu, kind) in gpus {
                let point = Point::new(ext_vec(&mut rng, m));
                assert_eq!(SumcheckState::eval(&mut gpu, &point).unwrap(), cpu.eval(&point).unwrap(), "{}", what(&format!("{kind} eval")));
                let y: Ext4 = rng.random();
                assert_eq!(
                    SumcheckState::eval_univariate(&mut gpu, y).unwrap(),
                    cpu.eval_univariate(y).unwrap(),
                    "{}",
                    what(&format!("{kind} univariate eval"))
                );
            }
        }
    }
}

/// Rounds played on the GPU with their transcript (`GpuSumcheck::play_chain`) against the CPU
/// twin and Plonky3's `DuplexChallenger` on the host: the same round values, smallest witnesses
/// and challenges, and the same tables after, from challenger states with 0 to 7 pending
/// inputs, with and without grinding, both multiply variants. A chain whose grind finds nothing
/// in its range stops at that round, its values still right and the tables folded up to it.
#[test]
fn chained_rounds_match_the_twin_and_the_host_transcript() {
    let mut rng = common::rng();
    for ctx in common::contexts().into_iter().chain(common::other_transcript_contexts()) {
        for case in [
            (6, 4, 0, 0, None),
            (9, 4, 6, 3, None),
            (5, 5, 4, 7, None),
            (8, 2, 0, 5, None),
            (7, 3, 8, 2, Some(1u32)),
            (6, 3, 5, 1, None),
            (7, 2, 0, 4, None),
            (8, 3, 6, 6, None),
        ] {
            check_chain::<BabyBear, Ext4>(&ctx, &mut rng, case);
        }
    }
}

/// Select weights of several variables over a 2^20-entry table take the split-power kernel
/// (tables of v^(x_hi 2^L) and s v^x_lo): the same weights as the twin, both multiply variants.
#[test]
fn split_select_weights_match_the_twin() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let m = 20;
        let (f, w) = (ext_vec(&mut rng, 1 << m), ext_vec(&mut rng, 1 << m));
        let mut cpu = CpuSumcheck::new(f.clone(), w.clone()).unwrap();
        let mut gpu = GpuSumcheck::new(Arc::new(GpuNtt::new(ctx.clone())), &f, &w).unwrap();
        let vars: Vec<BabyBear> = (0..6).map(|_| rng.random()).collect();
        let scales = ext_vec(&mut rng, vars.len());
        cpu.add_select_weights(&vars, &scales).unwrap();
        SumcheckState::add_select_weights(&mut gpu, &vars, &scales).unwrap();
        assert!(gpu.weights().unwrap() == cpu.weights(), "split select weights at m = {m} ({:?})", ctx.mul_variant());
    }
}

/// Lazy equality weights (`GpuSumcheck::set_lazy_eq_weights`: w formed where the rounds use it,
/// never stored, until the rounds it covers are played) against the twin with w stored: the
/// same round values, f and w after, round by round (fold, fold_then_round) and in chains (a
/// chain whose grind stops it going on round by round), over base-field f, tables in segments,
/// 1-4 points and every variable bound; both multiply variants.
#[test]
fn lazy_equality_weights_match_the_twin() {
    use whir_wgpu::gpu::{GpuGrinder, GpuOptions, GpuPoseidon2, LimitsProfile, Poseidon2Constants};
    let mut rng = common::rng();
    let mut contexts: Vec<_> = common::contexts().into_iter().chain(common::other_transcript_contexts()).map(|c| (c, false)).collect();
    if let Some(small) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) {
        contexts.push((small, true));
    }
    for (ctx, small) in contexts {
        let grinder = GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear())));
        let ntt = Arc::new(GpuNtt::new(ctx.clone()));
        // (m, rounds, points, chain: None or Some((bits, grind range end)))
        type Case = (usize, usize, usize, Option<(usize, Option<u32>)>);
        let cases: Vec<Case> = if small {
            vec![(14, 4, 2, None), (14, 3, 3, Some((0, None)))]
        } else {
            // m = 20: 2^19 pairs, several a thread, sharing their low index.
            vec![
                (10, 4, 3, None),
                (9, 4, 2, Some((0, None))),
                (8, 3, 1, Some((6, Some(1)))),
                (6, 6, 2, None),
                (5, 1, 4, None),
                (7, 5, 2, Some((4, None))),
                (20, 3, 2, Some((0, None))),
            ]
        };
        for (m, rounds, count, chain) in cases {
            let what = format!("m = {m}, {rounds} lazy rounds, {count} points, chain {chain:?} ({:?}, small binding: {small})", ctx.mul_variant());
            let f: Vec<BabyBear> = (0..1 << m).map(|_| rng.random()).collect();
            let buffer = ctx.transfers().upload("base f", whir_wgpu::gpu::field::as_words(&f));
            let mut gpu = GpuSumcheck::from_base(ntt.clone(), buffer, m).unwrap();
            let mut cpu = CpuSumcheck::new(f.iter().copied().map(Ext4::from).collect(), vec![Ext4::default(); 1 << m]).unwrap();
            let points: Vec<Point<Ext4>> = (0..count).map(|_| Point::new(ext_vec(&mut rng, m))).collect();
            let scales = ext_vec(&mut rng, count);
            SumcheckState::set_lazy_eq_weights(&mut gpu, &points, &scales, rounds).unwrap();
            cpu.add_eq_weights(&points, &scales).unwrap();
            assert!(gpu.weights().is_err(), "{what}: lazy weights are not stored");
            let mut played = 0;
            if let Some((bits, range)) = chain {
                gpu.set_chain_range(range);
                let sponge: [BabyBear; 16] = std::array::from_fn(|_| rng.random());
                let chained = gpu.play_chain(rounds, &sponge, &[], bits, &grinder, None).unwrap();
                for c in &chained {
                    assert_eq!((c.c0, c.c_inf), cpu.round_coefficients().unwrap(), "{what}: chained round {played}");
                    let Some(r) = c.r else { break };
                    cpu.fold(r).unwrap();
                    played += 1;
                }
                assert!(played == rounds || range.is_some(), "{what}: the chain stopped");
                assert_eq!(gpu.num_variables(), m - played, "{what}");
            }
            // The rest round by round, folds alone and with the next round.
            play_host_rounds(&mut gpu, &mut cpu, played..rounds, &mut rng, &what);
            assert_eq!(gpu.num_variables(), m - rounds, "{what}");
            assert_eq!(SumcheckState::evals(&mut gpu).unwrap(), cpu.evals().unwrap(), "{what}: f after the lazy rounds");
            assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{what}: w written out after the lazy rounds");
            if m > rounds {
                let vars: Vec<BabyBear> = (0..3).map(|_| rng.random()).collect();
                let sel = ext_vec(&mut rng, 3);
                SumcheckState::add_select_weights(&mut gpu, &vars, &sel).unwrap();
                cpu.add_select_weights(&vars, &sel).unwrap();
                assert_eq!(SumcheckState::round_coefficients(&mut gpu).unwrap(), cpu.round_coefficients().unwrap(), "{what}: a round after");
            }
        }
    }
}

/// Chains over lazy weights that start after host rounds (the coefficients the host kept go
/// on on the GPU), and a chain longer than the rounds the lazy tables cover (w is written out
/// first): the same values as the twin.
#[test]
fn chains_after_host_rounds_and_past_the_lazy_rounds_match_the_twin() {
    use whir_wgpu::gpu::{GpuGrinder, GpuPoseidon2, Poseidon2Constants};
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let grinder = GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear())));
        let ntt = Arc::new(GpuNtt::new(ctx.clone()));
        // (m, lazy rounds, host rounds first, chained rounds)
        for (m, rounds, host, chained) in [(10usize, 4usize, 1usize, 3usize), (9, 2, 0, 4), (8, 3, 2, 3)] {
            let what = format!("m = {m}, {rounds} lazy rounds, {host} on the host, then a chain of {chained} ({:?})", ctx.mul_variant());
            let f: Vec<BabyBear> = (0..1 << m).map(|_| rng.random()).collect();
            let buffer = ctx.transfers().upload("base f", whir_wgpu::gpu::field::as_words(&f));
            let mut gpu = GpuSumcheck::from_base(ntt.clone(), buffer, m).unwrap();
            let mut cpu = CpuSumcheck::new(f.iter().copied().map(Ext4::from).collect(), vec![Ext4::default(); 1 << m]).unwrap();
            let points: Vec<Point<Ext4>> = (0..2).map(|_| Point::new(ext_vec(&mut rng, m))).collect();
            let scales = ext_vec(&mut rng, 2);
            SumcheckState::set_lazy_eq_weights(&mut gpu, &points, &scales, rounds).unwrap();
            cpu.add_eq_weights(&points, &scales).unwrap();
            for t in 0..host {
                assert_eq!(SumcheckState::round_coefficients(&mut gpu).unwrap(), cpu.round_coefficients().unwrap(), "{what}: host round {t}");
                let r: Ext4 = rng.random();
                SumcheckState::fold(&mut gpu, r).unwrap();
                cpu.fold(r).unwrap();
            }
            let sponge: [BabyBear; 16] = std::array::from_fn(|_| rng.random());
            for (k, c) in gpu.play_chain(chained, &sponge, &[], 0, &grinder, None).unwrap().into_iter().enumerate() {
                assert_eq!((c.c0, c.c_inf), cpu.round_coefficients().unwrap(), "{what}: chained round {k}");
                cpu.fold(c.r.expect("no grinding: every round plays")).unwrap();
            }
            assert_eq!(SumcheckState::evals(&mut gpu).unwrap(), cpu.evals().unwrap(), "{what}: f");
            assert_eq!(SumcheckState::round_coefficients(&mut gpu).unwrap(), cpu.round_coefficients().unwrap(), "{what}: the round after");
            if host + chained >= rounds {
                assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{what}: w written out");
            }
        }
    }
}

/// A WHIR round's head played on the GPU (`GpuSumcheck::record_sponge_script`: the root observed, each
/// out-of-domain point drawn and f evaluated at its univariate expansion, the query grind), and
/// a hiding round's (a switch-mask root observed after the root, answers over f and a tail)
/// against Plonky3's `DuplexChallenger` and the twin on the host: the same points, values and
/// grind state, and the smallest witness, from states with 0 to 7 pending inputs, 0 to 3
/// samples, with and without grinding, base-field and BabyBear^4 f, f in segments under a 64 KiB
/// binding; both multiply variants. Too many samples or pending inputs are errors.
#[test]
fn round_heads_match_the_host_transcript() {
    use whir_wgpu::gpu::transcript::{ScriptValues, SpongeScript, MAX_SCRIPT_SAMPLES, MAX_SCRIPT_WORDS_AFTER_ROOT};
    use whir_wgpu::gpu::{GpuGrinder, GpuOptions, GpuPoseidon2, LimitsProfile, Poseidon2Constants};
    let mut rng = common::rng();
    let mut contexts: Vec<_> = common::contexts().into_iter().chain(common::other_transcript_contexts()).map(|c| (c, false)).collect();
    if let Some(small) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) {
        contexts.push((small, true));
    }
    for (ctx, small) in contexts {
        let cases: Vec<HeadCase> = if small {
            vec![(13, 2, 6, 3, false, false), (15, 1, 0, 0, true, false)]
        } else {
            vec![
                (6, 1, 0, 0, false, false),
                (9, 2, 6, 3, false, false),
                (5, 0, 8, 7, false, false),
                (10, 3, 4, 5, true, false),
                (8, 1, 10, 1, false, false),
                (0, 1, 0, 2, false, false),
                (17, 1, 5, 6, true, false),
                (9, 2, 6, 3, false, true),
                (10, 3, 4, 5, true, true),
                (1, 1, 0, 2, false, true),
                (7, 2, 5, 4, false, false),
            ]
        };
        for case in cases {
            check_head::<BabyBear, Ext4>(&ctx, &mut rng, case, if small { "small binding" } else { "" });
        }
        let grinder = Arc::new(GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()))));
        let ntt = Arc::new(GpuNtt::new(ctx.clone()));

        // Requests the GPU does not play.
        let f = ext_vec(&mut rng, 1 << 4);
        let gpu = GpuSumcheck::new(ntt.clone(), &f, &f).unwrap();
        let root = ctx.transfers().upload("root", &[0u32; 8]);
        let sponge = [BabyBear::default(); 16];
        for (samples, pending, needle) in [(MAX_SCRIPT_SAMPLES + 1, 0, "points in one sponge script"), (1, 8, "pending inputs")] {
            let request = SpongeScript {
                grinder: grinder.clone(),
                sponge,
                pending: vec![BabyBear::default(); pending],
                samples,
                grind_bits: 0,
                after_root: Vec::new(),
                values: ScriptValues::Expansion,
            };
            let mut batch = ctx.batch("sponge script test");
            let err = gpu.record_sponge_script(&mut batch, &root, &request).err().expect("refused").to_string();
            assert!(err.contains(needle), "{err}");
        }
        // A tail of part of an extension element, too many words after the root.
        for (after_root, tail, needle) in [(0, 3, "a tail of 3 words"), (MAX_SCRIPT_WORDS_AFTER_ROOT + 1, 4, "words observed after the root")] {
            let request = SpongeScript {
                grinder: grinder.clone(),
                sponge,
                pending: Vec::new(),
                samples: 1,
                grind_bits: 0,
                after_root: vec![BabyBear::default(); after_root],
                values: ScriptValues::PowersWithTail(vec![BabyBear::default(); tail]),
            };
            let mut batch = ctx.batch("sponge script test");
            let err = gpu.record_sponge_script(&mut batch, &root, &request).err().expect("refused").to_string();
            assert!(err.contains(needle), "{err}");
        }
    }
}

/// Slots of f (columns of a stacked table, and their successor views) evaluated, and their
/// weights added, as the twin does: random points of every size up to m, slots at aligned and
/// unaligned offsets (repeats included), a base-field and an extension-field f, and tables split
/// into segments.
#[test]
fn slot_evaluations_and_weights_match_the_twin() {
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    use whir_wgpu::prover::backend::SlotSet;
    let mut rng = common::rng();
    let mut contexts = common::contexts();
    contexts.extend(common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..common::env_options() }));
    for ctx in contexts {
        let ms: &[usize] = if ctx.max_binding_bytes() <= 64 << 10 { &[13] } else { &[0, 1, 3, 6, 9, 13] };
        for &m in ms {
            for (base, reversed) in [(true, false), (false, false), (true, true), (false, true)] {
                let what = format!("m = {m}, base f {base}, reversed indices {reversed}, {:?}, binding {} B", ctx.mul_variant(), ctx.max_binding_bytes());
                let ntt = Arc::new(GpuNtt::new(ctx.clone()));
                let (mut cpu, mut gpu) = if base {
                    let f: Vec<BabyBear> = (0..1usize << m).map(|_| rng.random()).collect();
                    let buffer = ctx.transfers().upload("f", whir_wgpu::gpu::field::as_words(&f));
                    let cpu = CpuSumcheck::new(f.iter().map(|&v| Ext4::from(v)).collect(), vec![Ext4::ZERO; 1 << m]).unwrap();
                    (cpu, GpuSumcheck::from_base(ntt, buffer, m).unwrap())
                } else {
                    let f = ext_vec(&mut rng, 1 << m);
                    (CpuSumcheck::new(f.clone(), vec![Ext4::ZERO; 1 << m]).unwrap(), GpuSumcheck::new(ntt, &f, &vec![Ext4::ZERO; 1 << m]).unwrap())
                };
                if reversed {
                    (cpu, gpu) = (cpu.with_reversed_indices(), gpu.with_reversed_indices());
                }
                let sets: Vec<SlotSet> = (0..4)
                    .map(|_| {
                        let k = rng.random_range(0..=m);
                        let slots = 1usize << (m - k);
                        let mut offsets: Vec<usize> = (0..rng.random_range(1..6)).map(|_| rng.random_range(0..slots) << k).collect();
                        if k < m {
                            // Unaligned, and the same slot twice.
                            offsets.push(rng.random_range(0..=(1usize << m) - (1 << k)));
                        }
                        offsets.push(offsets[0]);
                        SlotSet { point: Point::new(ext_vec(&mut rng, k)), offsets, successor: rng.random() }
                    })
                    .collect();
                assert_eq!(SumcheckState::eval_slots(&mut gpu, &sets).unwrap(), cpu.eval_slots(&sets).unwrap(), "slot evaluations, {what}");
                let weighted: Vec<(SlotSet, Vec<Ext4>)> = sets.iter().map(|s| (s.clone(), ext_vec(&mut rng, s.offsets.len()))).collect();
                SumcheckState::add_slot_weights(&mut gpu, &weighted).unwrap();
                cpu.add_slot_weights(&weighted).unwrap();
                assert_eq!(gpu.weights().unwrap(), cpu.weights(), "slot weights, {what}");
                // Σ f·w under a slot's weights is its value.
                let f = cpu.evals().unwrap();
                let one = vec![(sets[0].clone(), {
                    let mut s = vec![Ext4::ZERO; sets[0].offsets.len()];
                    s[0] = Ext4::ONE;
                    s
                })];
                let mut fresh = CpuSumcheck::new(f.clone(), vec![Ext4::ZERO; 1 << m]).unwrap();
                if reversed {
                    // (f in the polynomial's order, reversed back to the order held.)
                    let mut held = f.clone();
                    p3_util::reverse_slice_index_bits(&mut held);
                    fresh = CpuSumcheck::new(held, vec![Ext4::ZERO; 1 << m]).unwrap().with_reversed_indices();
                }
                fresh.add_slot_weights(&one).unwrap();
                let dot: Ext4 = f.iter().zip(&fresh.weights()).map(|(&a, &b)| a * b).sum();
                assert_eq!(dot, cpu.eval_slots(&sets[..1]).unwrap()[0][0], "a slot's weights give its value, {what}");
                // A slot past the end is an error, not a read out of bounds.
                let bad = SlotSet { point: Point::new(ext_vec(&mut rng, m.min(2))), offsets: vec![(1 << m) - 1 + usize::from(m == 0)], successor: false };
                if m >= 1 {
                    assert!(SumcheckState::eval_slots(&mut gpu, std::slice::from_ref(&bad)).is_err(), "{what}");
                }
            }
        }
    }
}

/// Batches over stacked tables of 2^k rows in a table of 2^m entries: aligned slots, some in
/// both a direct and a successor set, a whole-table slot (an out-of-domain claim) and successor
/// slots of the fewest variables, each with random scales.
fn random_slot_sets(rng: &mut rand::rngs::StdRng, m: usize, k_min: usize) -> Vec<(whir_wgpu::prover::backend::SlotSet, Vec<Ext4>)> {
    use whir_wgpu::prover::backend::SlotSet;
    let mut sets: Vec<(SlotSet, Vec<Ext4>)> = Vec::new();
    for _ in 0..5 {
        let k = rng.random_range(k_min..=m - 1);
        let slots = 1usize << (m - k);
        let offsets: Vec<usize> = (0..rng.random_range(1..4)).map(|_| rng.random_range(0..slots) << k).collect();
        let point = Point::new(ext_vec(rng, k));
        for successor in [false, true] {
            let scales = ext_vec(rng, offsets.len());
            sets.push((SlotSet { point: point.clone(), offsets: offsets.clone(), successor }, scales));
        }
    }
    sets.push((SlotSet { point: Point::new(ext_vec(rng, m)), offsets: vec![0], successor: false }, ext_vec(rng, 1)));
    sets.push((SlotSet { point: Point::new(ext_vec(rng, k_min)), offsets: vec![0, 1 << k_min], successor: true }, ext_vec(rng, 2)));
    sets
}

/// A committed base-field f of 2^m random entries (the rounds after the first fold an extension
/// one) on the GPU with random slot sets as lazy slot weights for `rounds` rounds, and the twin
/// with the same weights stored.
fn lazy_slot_sumchecks(
    ctx: &Arc<whir_wgpu::gpu::GpuContext>,
    rng: &mut rand::rngs::StdRng,
    m: usize,
    rounds: usize,
    k_min: usize,
    what: &str,
) -> (GpuSumcheck, CpuSumcheck) {
    let f: Vec<BabyBear> = (0..1usize << m).map(|_| rng.random()).collect();
    let buffer = ctx.transfers().upload("f", whir_wgpu::gpu::field::as_words(&f));
    let mut cpu = CpuSumcheck::new(f.iter().map(|&v| Ext4::from(v)).collect(), vec![Ext4::ZERO; 1 << m]).unwrap();
    let mut gpu = GpuSumcheck::from_base(Arc::new(GpuNtt::new(ctx.clone())), buffer, m).unwrap();
    let sets = random_slot_sets(rng, m, k_min);
    SumcheckState::set_lazy_slot_weights(&mut gpu, &sets, rounds).unwrap();
    cpu.add_slot_weights(&sets).unwrap();
    assert!(gpu.weights().is_err(), "{what}: lazy weights are not stored");
    (gpu, cpu)
}

/// Lazy slot weights played in chains (`GpuSumcheck::play_chain`: each round's slot reads
/// combined, and the terms bound to the chain's challenges, on the GPU) against the twin with w
/// stored: after host rounds or not, with and without grinding, a chain covering the lazy rounds
/// exactly, one past them (w written out first) and one stopped at its first grind (the host
/// goes on round by round): the same round values, f and w; both multiply variants, tables in
/// segments.
#[test]
fn lazy_slot_weights_in_chains_match_the_twin() {
    use whir_wgpu::gpu::{GpuGrinder, GpuOptions, GpuPoseidon2, LimitsProfile, Poseidon2Constants};
    let mut rng = common::rng();
    let mut contexts = common::contexts();
    contexts.extend(common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..common::env_options() }));
    for ctx in contexts {
        let small = ctx.max_binding_bytes() <= 64 << 10;
        let grinder = GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear())));
        // (m, lazy rounds, smallest slot's variables, host rounds first, chained rounds, grind bits, stop at the first grind)
        let cases: &[(usize, usize, usize, usize, usize, usize, bool)] = if small {
            &[(13, 3, 4, 0, 3, 2, false)]
        } else {
            &[(6, 2, 2, 0, 2, 0, false), (8, 4, 4, 0, 4, 3, false), (10, 3, 5, 1, 2, 0, false), (11, 4, 6, 1, 4, 2, false), (9, 2, 3, 0, 2, 8, true)]
        };
        for &(m, rounds, k_min, host, chained, bits, stop) in cases {
            let what = format!(
                "m = {m}, {rounds} lazy rounds from 2^{k_min}, {host} on the host, a chain of {chained} grinding {bits} (stopped: {stop}), {:?}, binding {} B",
                ctx.mul_variant(),
                ctx.max_binding_bytes()
            );
            let (mut gpu, mut cpu) = lazy_slot_sumchecks(&ctx, &mut rng, m, rounds, k_min, &what);
            for t in 0..host {
                assert_eq!(SumcheckState::round_coefficients(&mut gpu).unwrap(), cpu.round_coefficients().unwrap(), "{what}: host round {t}");
                let r: Ext4 = rng.random();
                SumcheckState::fold(&mut gpu, r).unwrap();
                cpu.fold(r).unwrap();
            }
            if stop {
                gpu.set_chain_range(Some(1));
            }
            let sponge: [BabyBear; 16] = std::array::from_fn(|_| rng.random());
            let played = gpu.play_chain(chained, &sponge, &[], bits, &grinder, None).unwrap();
            gpu.set_chain_range(None);
            let mut unfolded = None;
            for (k, c) in played.into_iter().enumerate() {
                assert_eq!((c.c0, c.c_inf), cpu.round_coefficients().unwrap(), "{what}: chained round {k}");
                match c.r {
                    Some(r) => cpu.fold(r).unwrap(),
                    None => unfolded = Some(k),
                }
            }
            if let Some(k) = unfolded {
                assert!(stop, "{what}: the chain stopped at round {k}");
                // (With the range 0..1, the first grind stops the chain but for 1 in 2^bits.)
                // On round by round from the round whose grind found nothing.
                let r: Ext4 = rng.random();
                SumcheckState::fold(&mut gpu, r).unwrap();
                cpu.fold(r).unwrap();
                while gpu.num_variables() > m - host - chained {
                    assert_eq!(SumcheckState::round_coefficients(&mut gpu).unwrap(), cpu.round_coefficients().unwrap(), "{what}: a host round after the stop");
                    let r: Ext4 = rng.random();
                    SumcheckState::fold(&mut gpu, r).unwrap();
                    cpu.fold(r).unwrap();
                }
            }
            assert_eq!(gpu.num_variables(), m - host - chained, "{what}");
            assert_eq!(SumcheckState::evals(&mut gpu).unwrap(), cpu.evals().unwrap(), "{what}: f after the chain");
            if host + chained >= rounds {
                assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{what}: w written out");
            }
            assert_eq!(SumcheckState::round_coefficients(&mut gpu).unwrap(), cpu.round_coefficients().unwrap(), "{what}: a round after");
        }
    }
}

/// Lazy slot weights (`GpuSumcheck::set_lazy_slot_weights`: the rounds combine slot evaluations
/// of f, w is written at the folded size after them) against the twin with w stored: the same
/// round values round by round (fold, fold_then_round), then the same f and w, over stacked
/// layouts of random columns (direct and successor slots of several sizes, overlapping sets,
/// whole-table slots as out-of-domain claims), slots of as few variables as the rounds, tables in segments; both multiply variants.
#[test]
fn lazy_slot_weights_match_the_twin() {
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    use whir_wgpu::prover::backend::SlotSet;
    let mut rng = common::rng();
    let mut contexts = common::contexts();
    contexts.extend(common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..common::env_options() }));
    for ctx in contexts {
        let small = ctx.max_binding_bytes() <= 64 << 10;
        // (m, lazy rounds, smallest slot's variables)
        let cases: &[(usize, usize, usize)] = if small { &[(13, 3, 4)] } else { &[(6, 2, 2), (8, 4, 4), (10, 3, 5), (11, 4, 6), (12, 2, 1)] };
        for &(m, rounds, k_min) in cases {
            {
                let what = format!("m = {m}, {rounds} rounds, slots from 2^{k_min}, {:?}, binding {} B", ctx.mul_variant(), ctx.max_binding_bytes());
                let (mut gpu, mut cpu) = lazy_slot_sumchecks(&ctx, &mut rng, m, rounds, k_min, &what);
                play_host_rounds(&mut gpu, &mut cpu, 0..rounds, &mut rng, &what);
                assert_eq!(gpu.num_variables(), m - rounds, "{what}");
                assert_eq!(SumcheckState::evals(&mut gpu).unwrap(), cpu.evals().unwrap(), "{what}: f after the lazy rounds");
                assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{what}: w written out after the lazy rounds");
                assert_eq!(SumcheckState::round_coefficients(&mut gpu).unwrap(), cpu.round_coefficients().unwrap(), "{what}: a round after");
            }
        }
    }
    // A slot not aligned to its size, or no round, keeps w stored.
    for ctx in common::contexts() {
        let f = ext_vec(&mut rng, 1 << 6);
        let mut gpu = GpuSumcheck::new(Arc::new(GpuNtt::new(ctx.clone())), &f, &vec![Ext4::ZERO; 1 << 6]).unwrap();
        let unaligned = vec![(SlotSet { point: Point::new(ext_vec(&mut rng, 3)), offsets: vec![4], successor: false }, ext_vec(&mut rng, 1))];
        SumcheckState::set_lazy_slot_weights(&mut gpu, &unaligned, 2).unwrap();
        assert!(gpu.weights().is_ok(), "an unaligned slot is written at once");
    }
}

/// Lazy weights over the degree-8 extensions: equality weights and slot weights (direct and
/// successor slots of a stacked layout) against the twin with w stored, round by round (fold,
/// fold_then_round) and in a chain with its transcript on the device (grinding 2 bits), then f
/// and w after and a round past the lazy ones; tables in segments under a 64 KiB binding too.
#[test]
fn degree_8_lazy_weights_match_the_twin() {
    use p3_field::extension::BinomialExtensionField;
    use p3_koala_bear::KoalaBear;
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    let mut rng = common::rng();
    let mut contexts = common::contexts();
    contexts.extend(common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..common::env_options() }));
    for ctx in contexts {
        let cases: &[(usize, usize)] = if ctx.max_binding_bytes() <= 64 << 10 { &[(12, 3)] } else { &[(6, 2), (9, 4), (11, 3)] };
        for &(m, rounds) in cases {
            lazy_rounds_over::<BabyBear, BinomialExtensionField<BabyBear, 8>>(&ctx, &mut rng, m, rounds);
            lazy_rounds_over::<KoalaBear, BinomialExtensionField<KoalaBear, 8>>(&ctx, &mut rng, m, rounds);
        }
    }
}

/// Lazy equality weights, then lazy slot weights, over a committed base-field f of 2^m random
/// entries, each for `rounds` rounds against the twin: played by the host, then chained on the
/// device (`play_chain`, its transcript there, grinding 2 bits).
fn lazy_rounds_over<F: ProverField, E: WhirExtension<F> + GpuExtension<F>>(
    ctx: &Arc<whir_wgpu::gpu::GpuContext>,
    rng: &mut rand::rngs::StdRng,
    m: usize,
    rounds: usize,
) where
    StandardUniform: Distribution<F> + Distribution<E>,
{
    use whir_wgpu::gpu::{GpuGrinder, GpuPoseidon2, Poseidon2Constants};
    use whir_wgpu::prover::backend::SlotSet;
    let grinder = GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F>::plonky3_default())));
    for (slots, chained) in [(false, false), (true, false), (false, true), (true, true)] {
        let what = format!(
            "{}, m = {m}, {rounds} lazy rounds, slots {slots}, chained {chained}, {:?}, binding {} B",
            E::NAME,
            ctx.mul_variant(),
            ctx.max_binding_bytes()
        );
        let f: Vec<F> = rand_vec(rng, 1 << m);
        let buffer = ctx.transfers().upload("f", whir_wgpu::gpu::field::as_words(&f));
        let mut gpu = GpuSumcheck::<F, E>::from_base(Arc::new(GpuNtt::new(ctx.clone())), buffer, m).unwrap();
        let mut cpu = CpuSumcheck::<F, E>::new(f.iter().map(|&v| E::from(v)).collect(), vec![E::ZERO; 1 << m]).unwrap();
        if slots {
            // Aligned slots of 2^k rows (k >= rounds), direct and successor, and a whole-table slot.
            let mut sets: Vec<(SlotSet<E>, Vec<E>)> = Vec::new();
            for _ in 0..3 {
                let k = rng.random_range(rounds..m);
                let offsets: Vec<usize> = (0..rng.random_range(1..4)).map(|_| rng.random_range(0..1usize << (m - k)) << k).collect();
                let point = Point::new(rand_vec::<E>(rng, k));
                for successor in [false, true] {
                    let scales = rand_vec::<E>(rng, offsets.len());
                    sets.push((SlotSet { point: point.clone(), offsets: offsets.clone(), successor }, scales));
                }
            }
            sets.push((SlotSet { point: Point::new(rand_vec::<E>(rng, m)), offsets: vec![0], successor: false }, rand_vec::<E>(rng, 1)));
            SumcheckState::set_lazy_slot_weights(&mut gpu, &sets, rounds).unwrap();
            cpu.add_slot_weights(&sets).unwrap();
        } else {
            let points: Vec<Point<E>> = (0..3).map(|_| Point::new(rand_vec::<E>(rng, m))).collect();
            let scales = rand_vec::<E>(rng, 3);
            SumcheckState::set_lazy_eq_weights(&mut gpu, &points, &scales, rounds).unwrap();
            cpu.add_eq_weights(&points, &scales).unwrap();
        }
        assert!(gpu.weights().is_err(), "{what}: lazy weights are not stored");
        if chained {
            let sponge: [F; 16] = std::array::from_fn(|_| rng.random());
            for (k, c) in gpu.play_chain(rounds, &sponge, &[], 2, &grinder, None).unwrap().into_iter().enumerate() {
                assert_eq!((c.c0, c.c_inf), cpu.round_coefficients().unwrap(), "{what}: chained round {k}");
                cpu.fold(c.r.expect("a full grind range finds a witness")).unwrap();
            }
        } else {
            play_host_rounds(&mut gpu, &mut cpu, 0..rounds, rng, &what);
        }
        assert_eq!(gpu.num_variables(), m - rounds, "{what}");
        assert_eq!(SumcheckState::evals(&mut gpu).unwrap(), cpu.evals().unwrap(), "{what}: f after the lazy rounds");
        assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{what}: w written out after the lazy rounds");
        assert_eq!(SumcheckState::round_coefficients(&mut gpu).unwrap(), cpu.round_coefficients().unwrap(), "{what}: a round after");
    }
}

/// Plays `rounds` on the host against the twin, a fold on its own after even rounds and one
/// recorded with the next round after odd ones (the last fold done): each round's values equal
/// the twin's.
fn play_host_rounds<F: ProverField, E: WhirExtension<F> + GpuExtension<F>>(
    gpu: &mut GpuSumcheck<F, E>,
    cpu: &mut CpuSumcheck<F, E>,
    rounds: std::ops::Range<usize>,
    rng: &mut rand::rngs::StdRng,
    what: &str,
) where
    StandardUniform: Distribution<E>,
{
    let mut pending: Option<E> = None;
    for played in rounds {
        let values = match pending.take() {
            Some(r) => SumcheckState::fold_then_round(gpu, r).unwrap(),
            None => SumcheckState::round_coefficients(gpu).unwrap(),
        };
        assert_eq!(values, cpu.round_coefficients().unwrap(), "{what}: round {played}");
        let r: E = rng.random();
        cpu.fold(r).unwrap();
        if played % 2 == 0 {
            SumcheckState::fold(gpu, r).unwrap();
        } else {
            pending = Some(r);
        }
    }
    if let Some(r) = pending {
        SumcheckState::fold(gpu, r).unwrap();
    }
}

/// The device transcript over degrees 5 and 8 (BabyBear's and KoalaBear's quintic and octic
/// extensions; degree 4 through the same body): chained rounds and round heads against Plonky3's `DuplexChallenger` over the
/// field, as the degree-4 tests above check them — the values, every point and challenge drawn
/// (more samples than a rate holds over degree 8), grinds found and a chain that stops.
#[test]
fn degree_5_and_8_transcripts_match_the_host() {
    use p3_field::extension::{BinomialExtensionField, QuinticTrinomialExtensionField};
    use p3_koala_bear::KoalaBear;
    let mut rng = common::rng();
    for ctx in common::contexts() {
        transcripts_over::<BabyBear, Ext4>(&ctx, &mut rng);
        transcripts_over::<BabyBear, BinomialExtensionField<BabyBear, 5>>(&ctx, &mut rng);
        transcripts_over::<KoalaBear, QuinticTrinomialExtensionField<KoalaBear>>(&ctx, &mut rng);
        transcripts_over::<BabyBear, BinomialExtensionField<BabyBear, 8>>(&ctx, &mut rng);
        transcripts_over::<KoalaBear, BinomialExtensionField<KoalaBear, 8>>(&ctx, &mut rng);
    }
    // The transcript kernels' other form (a permutation over 16 invocations, or over one).
    for ctx in common::other_transcript_contexts() {
        transcripts_over::<KoalaBear, BinomialExtensionField<KoalaBear, 8>>(&ctx, &mut rng);
    }
}

fn transcripts_over<F: ProverField, E: WhirExtension<F> + GpuExtension<F>>(ctx: &Arc<whir_wgpu::gpu::GpuContext>, rng: &mut rand::rngs::StdRng)
where
    StandardUniform: Distribution<E> + Distribution<F>,
{
    for case in [(6, 4, 0, 0, None), (7, 3, 5, 3, None), (5, 5, 0, 7, None), (7, 3, 8, 2, Some(1u32)), (8, 2, 4, 6, None)] {
        check_chain::<F, E>(ctx, rng, case);
    }
    for case in [
        (6, 1, 0, 0, false, false),
        (9, 3, 6, 3, false, false),
        (10, 2, 4, 5, true, false),
        (8, 2, 5, 7, false, false),
        (8, 2, 5, 3, false, true),
        (0, 1, 0, 2, false, false),
    ] {
        check_head::<F, E>(ctx, rng, case, "");
    }

    // Lazy weights (equality and slot) chained on the device over this extension too.
    lazy_rounds_over::<F, E>(ctx, rng, 7, 3);
}

/// A chain case: (m, rounds, grind bits, pending inputs, grind range).
type ChainCase = (usize, usize, usize, usize, Option<u32>);
/// A round-head case: (m, samples, grind bits, pending inputs, base-field f, reversed indices).
type HeadCase = (usize, usize, usize, usize, bool, bool);

/// Plonky3's duplex challenger over F after 8 + `pending` random observations: a rate absorbed
/// and `pending` inputs left.
fn host_challenger<F: ProverField>(
    rng: &mut rand::rngs::StdRng,
    pending: usize,
) -> p3_challenger::DuplexChallenger<F, <F as whir_wgpu::verifier::WhirField>::Perm, 16, 8>
where
    StandardUniform: Distribution<F>,
{
    use p3_challenger::CanObserve;
    let mut ch = p3_challenger::DuplexChallenger::new(<F as whir_wgpu::verifier::WhirField>::permutation());
    for _ in 0..8 + pending {
        ch.observe(rng.random::<F>());
    }
    assert_eq!(ch.input_buffer.len(), pending);
    ch
}

/// A chain played on the GPU against the twin's rounds and Plonky3's duplex challenger over F:
/// each round's values, grind (its state, the smallest witness, or a stop with none in range)
/// and challenge, then f and w after the rounds; each case also with its rounds observing a
/// random wire (the pair moved by known terms, the earlier rounds' polynomials at their
/// challenges summed in, known values after).
fn check_chain<F: ProverField, E: WhirExtension<F> + GpuExtension<F>>(ctx: &Arc<whir_wgpu::gpu::GpuContext>, rng: &mut rand::rngs::StdRng, case: ChainCase)
where
    StandardUniform: Distribution<E> + Distribution<F>,
{
    check_chain_of::<F, E>(ctx, rng, case, None);
    let rest = rng.random_range(0..=whir_wgpu::gpu::transcript::MAX_WIRE_REST);
    let poly = rng.random_range(1..=8);
    let wire = ChainWire {
        scale: rng.random(),
        rounds: (0..case.1)
            .map(|_| WireRound { at_zero: rng.random(), at_inf: rng.random(), share: rng.random(), rest: rand_vec(rng, rest), poly: rand_vec(rng, poly) })
            .collect(),
    };
    check_chain_of::<F, E>(ctx, rng, case, Some(wire));
}

fn check_chain_of<F: ProverField, E: WhirExtension<F> + GpuExtension<F>>(
    ctx: &Arc<whir_wgpu::gpu::GpuContext>,
    rng: &mut rand::rngs::StdRng,
    case: ChainCase,
    wire: Option<ChainWire<E>>,
) where
    StandardUniform: Distribution<E> + Distribution<F>,
{
    use p3_challenger::{FieldChallenger, GrindingChallenger};
    use p3_field::HornerIter;
    use whir_wgpu::gpu::{transcript::cpu_grind, transcript::GrindState, GpuGrinder, GpuPoseidon2, Poseidon2Constants};
    let (m, rounds, bits, pending, range) = case;
    let what = format!(
        "{} chain: m = {m}, {rounds} rounds, {bits} bits, {pending} pending, wire {:?} ({:?}, transcript lanes {})",
        std::any::type_name::<E>(),
        wire.as_ref().map(|w| (w.rounds[0].rest.len(), w.rounds[0].poly.len())),
        ctx.mul_variant(),
        ctx.tuning().transcript_lanes
    );
    let perm = <F as whir_wgpu::verifier::WhirField>::permutation();
    let grinder = GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F>::plonky3_default())));
    let (f, w): (Vec<E>, Vec<E>) = (rand_vec(rng, 1 << m), rand_vec(rng, 1 << m));
    let mut cpu = CpuSumcheck::<F, E>::new(f.clone(), w.clone()).unwrap();
    let mut gpu = GpuSumcheck::<F, E>::new(Arc::new(GpuNtt::new(ctx.clone())), &f, &w).unwrap();
    gpu.set_chain_range(range);
    let mut ch = host_challenger::<F>(rng, pending);
    let chained = gpu.play_chain(rounds, &ch.sponge_state, &ch.input_buffer, bits, &grinder, wire.as_ref()).unwrap();
    let played = chained.iter().filter(|c| c.r.is_some()).count();
    assert!(chained.len() == rounds || (range.is_some() && chained.len() == played + 1), "{what}: {} rounds back", chained.len());
    // Σ_{l<j} poly_l(r_l).
    let mut past = E::ZERO;
    for (j, c) in chained.iter().enumerate() {
        assert_eq!((c.c0, c.c_inf), cpu.round_coefficients().unwrap(), "{what}: round values");
        match &wire {
            None => {
                ch.observe_algebra_element(c.c0);
                ch.observe_algebra_element(c.c_inf);
            }
            Some(wire) => {
                let round = &wire.rounds[j];
                ch.observe_algebra_element(round.at_zero + wire.scale * c.c0 + round.share * past);
                ch.observe_algebra_element(round.at_inf + wire.scale * c.c_inf);
                round.rest.iter().for_each(|&v| ch.observe_algebra_element(v));
            }
        }
        if bits > 0 {
            let offer = c.offer.as_ref().expect("an offer per grinding round");
            assert_eq!(offer.state, GrindState::new(&ch.sponge_state, &ch.input_buffer).unwrap(), "{what}: grind state");
            let smallest = cpu_grind(&perm, &offer.state, bits).unwrap();
            match c.r {
                Some(_) => assert_eq!(offer.witness, Some(smallest), "{what}: witness"),
                None => {
                    assert!(offer.witness.is_none() && smallest.as_canonical_u32() >= offer.searched_end, "{what}: a stop with a witness in range");
                    break;
                }
            }
            assert!(ch.check_witness(bits, smallest));
        } else {
            assert!(c.offer.is_none(), "{what}");
        }
        let r: E = ch.sample_algebra_element();
        assert_eq!(c.r, Some(r), "{what}: challenge {j}");
        if let Some(wire) = &wire {
            past += wire.rounds[j].poly.iter().copied().horner::<E, E>(r);
        }
        cpu.fold(r).unwrap();
    }
    assert_eq!(gpu.num_variables(), m - played, "{what}");
    assert_eq!(SumcheckState::evals(&mut gpu).unwrap(), cpu.evals().unwrap(), "{what}: f after the rounds");
    assert_eq!(gpu.weights().unwrap(), cpu.weights(), "{what}: w after the rounds");
}

/// A round head played on the GPU after a root against Plonky3's duplex challenger over F: the
/// root read back, each point drawn and f's value there, the grind, and f left as it was; a
/// plain WHIR round's (f at each point's expansion) and a hiding round's (a switch-mask root
/// observed after the root; answers over f's values and a tail of random length as one
/// polynomial's coefficients).
fn check_head<F: ProverField, E: WhirExtension<F> + GpuExtension<F>>(
    ctx: &Arc<whir_wgpu::gpu::GpuContext>,
    rng: &mut rand::rngs::StdRng,
    case: HeadCase,
    label: &str,
) where
    StandardUniform: Distribution<E> + Distribution<F>,
{
    check_head_of::<F, E>(ctx, rng, case, None, label);
    let tail_len = rng.random_range(0..=20);
    check_head_of::<F, E>(ctx, rng, case, Some(tail_len), label);
}

/// [`check_head`] of a plain round (`hiding_tail` None) or a hiding round with a tail of that
/// many values.
fn check_head_of<F: ProverField, E: WhirExtension<F> + GpuExtension<F>>(
    ctx: &Arc<whir_wgpu::gpu::GpuContext>,
    rng: &mut rand::rngs::StdRng,
    case: HeadCase,
    hiding_tail: Option<usize>,
    label: &str,
) where
    StandardUniform: Distribution<E> + Distribution<F>,
{
    use p3_challenger::{CanObserve, FieldChallenger};
    use p3_field::HornerIter;
    use whir_wgpu::gpu::transcript::{cpu_grind, GrindState, ScriptValues, SpongeScript};
    use whir_wgpu::gpu::{GpuGrinder, GpuPoseidon2, Poseidon2Constants};
    let (m, samples, bits, pending, base, reversed) = case;
    let what = format!(
        "{} head: m = {m}, {samples} samples, {bits} bits, {pending} pending, base {base}, reversed {reversed}, hiding tail {hiding_tail:?} ({:?}, transcript lanes {}) {label}",
        std::any::type_name::<E>(),
        ctx.mul_variant(),
        ctx.tuning().transcript_lanes
    );
    let perm = <F as whir_wgpu::verifier::WhirField>::permutation();
    let grinder = Arc::new(GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F>::plonky3_default()))));
    let ntt = Arc::new(GpuNtt::new(ctx.clone()));
    let (mut gpu, mut cpu) = if base {
        let f: Vec<F> = rand_vec(rng, 1 << m);
        let buffer = ctx.transfers().upload("base f", whir_wgpu::gpu::field::as_words(&f));
        (
            GpuSumcheck::<F, E>::from_base(ntt, buffer, m).unwrap(),
            CpuSumcheck::<F, E>::new(f.into_iter().map(E::from).collect(), vec![E::default(); 1 << m]).unwrap(),
        )
    } else {
        let f: Vec<E> = rand_vec(rng, 1 << m);
        (GpuSumcheck::<F, E>::new(ntt, &f, &f).unwrap(), CpuSumcheck::<F, E>::new(f.clone(), f).unwrap())
    };
    if reversed {
        (gpu, cpu) = (gpu.with_reversed_indices(), cpu.with_reversed_indices());
    }
    let mut ch = host_challenger::<F>(rng, pending);
    let root_words: [F; 8] = std::array::from_fn(|_| rng.random());
    let root = ctx.transfers().upload("root", whir_wgpu::gpu::field::as_words(&root_words));
    // A hiding round's: the switch mask's root after the oracle's, and the mask's message.
    let mask_root: Vec<F> = (0..if hiding_tail.is_some() { 8 } else { 0 }).map(|_| rng.random()).collect();
    let tail: Option<Vec<E>> = hiding_tail.map(|len| (0..len).map(|_| rng.random()).collect());
    let values = match &tail {
        Some(tail) => ScriptValues::PowersWithTail(E::flatten_to_base(tail.clone())),
        None => ScriptValues::Expansion,
    };
    let request =
        SpongeScript { grinder, sponge: ch.sponge_state, pending: ch.input_buffer.clone(), samples, grind_bits: bits, after_root: mask_root.clone(), values };
    let mut batch = ctx.batch("sponge script test");
    let root_slot = batch.read(&root, 0, 8);
    let record = gpu.record_sponge_script(&mut batch, &root, &request).unwrap();
    let readback = ctx.run(batch).unwrap();
    assert_eq!(readback.get(root_slot).unwrap(), whir_wgpu::gpu::field::as_words(&root_words), "{what}: the root");
    let values = gpu.finish_sponge_script(record, &readback).unwrap();
    ch.observe(root_words);
    ch.observe_slice(&mask_root);
    assert_eq!(values.points.len(), samples, "{what}");
    for i in 0..samples {
        let z: E = ch.sample_algebra_element();
        assert_eq!(values.points[i], z, "{what}: point {i}");
        let eval = match &tail {
            Some(tail) => {
                let tail: E = tail.iter().copied().horner(z);
                cpu.eval_powers(z).unwrap() + tail * z.exp_power_of_2(m)
            }
            None => cpu.eval(&Point::expand_from_univariate(z, m)).unwrap(),
        };
        assert_eq!(values.answers[i], eval, "{what}: value {i}");
        ch.observe_algebra_element(eval);
    }
    match (&values.offer, bits) {
        (None, 0) => {}
        (Some(offer), bits) if bits > 0 => {
            assert_eq!(offer.state, GrindState::new(&ch.sponge_state, &ch.input_buffer).unwrap(), "{what}: grind state");
            let smallest = cpu_grind(&perm, &offer.state, bits).unwrap();
            match offer.witness {
                Some(w) => assert_eq!(w, smallest, "{what}: witness"),
                None => assert!(smallest.as_canonical_u32() >= offer.searched_end, "{what}: a witness in range was missed"),
            }
        }
        (offer, _) => panic!("{what}: offer {offer:?}"),
    }
    // f is as it was.
    assert_eq!(SumcheckState::evals(&mut gpu).unwrap(), cpu.evals().unwrap(), "{what}: f after");
}

/// A transcript state that another backend's challenger published (its device not a GPU
/// grinder) is declined, not played: no chain, and the evaluations come back without a grind,
/// equal to the twin's. The same state over the GPU's grinder is played.
#[test]
fn the_gpu_declines_a_transcript_state_of_another_backend() {
    use whir_wgpu::gpu::{GpuGrinder, GpuPoseidon2, Poseidon2Constants};
    use whir_wgpu::prover::backend::TranscriptState;
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let m = 8;
        let (f, w) = (ext_vec(&mut rng, 1 << m), ext_vec(&mut rng, 1 << m));
        let mut cpu = CpuSumcheck::new(f.clone(), w.clone()).unwrap();
        let mut gpu = GpuSumcheck::new(Arc::new(GpuNtt::new(ctx.clone())), &f, &w).unwrap();
        let sponge: [BabyBear; 16] = std::array::from_fn(|_| rng.random());
        let foreign = TranscriptState::new(Arc::new("another backend's device"), sponge, Vec::new());
        assert!(SumcheckState::play_chain(&mut gpu, 3, &foreign, 0, None).is_none(), "a foreign state chained ({:?})", ctx.mul_variant());
        let (evals, grind) = SumcheckState::evals_then_grind(&mut gpu, Some((&foreign, 2))).unwrap();
        assert!(grind.is_none(), "a grind played from a foreign state ({:?})", ctx.mul_variant());
        assert_eq!(evals, SumcheckState::evals(&mut cpu).unwrap(), "evaluations beside a foreign state ({:?})", ctx.mul_variant());
        let grinder = Arc::new(GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()))));
        let own = TranscriptState::new(grinder, sponge, Vec::new());
        let chained = SumcheckState::play_chain(&mut gpu, 3, &own, 0, None).expect("the GPU's own state is played").unwrap();
        assert_eq!(chained.len(), 3, "rounds chained from the GPU's own state ({:?})", ctx.mul_variant());
        assert_eq!((chained[0].c0, chained[0].c_inf), cpu.round_coefficients().unwrap(), "the first chained round ({:?})", ctx.mul_variant());
    }
}
