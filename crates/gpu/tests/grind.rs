//! The GPU grinder and the CPU grinder return the same, smallest witness; a stock Plonky3
//! DuplexChallenger accepts it and ends in the same state. Fresh random transcripts, both
//! multiply variants, BabyBear and KoalaBear.

#[path = "../../../tests/common/gpu.rs"]
mod common;

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_challenger::{CanObserve, CanSample, CanSampleBits, DuplexChallenger, GrindingChallenger};
use p3_field::PrimeCharacteristicRing;
use p3_koala_bear::KoalaBear;
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_gpu::transcript::pow_mask;
use whir_gpu::{transcript::cpu_grind, transcript::GrindState, GpuChallenger, GpuGrinder, GpuPoseidon2, Poseidon2Constants, Poseidon2Field};

type Stock = StockOf<BabyBear>;

#[test]
fn gpu_and_cpu_grinders_agree_and_stock_challenger_accepts() {
    check_grinders::<BabyBear>(&[0, 1, 2, 5, 8, 12, 16, 17], 16);
}

/// (19 bits and more: `hard_difficulties_agree`, with --ignored; on a software adapter each bit
/// doubles a minute of CI.)
#[test]
fn a_difficulty_of_18_bits_agrees() {
    check_grinders::<BabyBear>(&[18], 2);
}

#[test]
#[ignore = "19 to 22 bits take minutes on a software adapter; run in release with --ignored"]
fn hard_difficulties_agree() {
    check_grinders::<BabyBear>(&[19, 20, 22], 6);
}

/// The stock challenger over `F` with the same permutation.
type StockOf<F> = DuplexChallenger<F, <F as Poseidon2Field>::Permutation16, 16, 8>;

/// Our challenger (grinding on the GPU whatever the difficulty) and a stock one, after the same
/// random observations and, half the time, a sample (which leaves an output buffer behind, as
/// real transcripts do).
fn random_transcripts<F: Poseidon2Field>(rng: &mut StdRng, perm: &F::Permutation16, grinder: &Arc<GpuGrinder<F>>) -> (GpuChallenger<F>, StockOf<F>)
where
    StandardUniform: Distribution<F>,
{
    let mut ours = GpuChallenger::new(perm.clone(), Some(grinder.clone())).with_gpu_min_bits(0);
    let mut stock = StockOf::<F>::new(perm.clone());
    for _ in 0..rng.random_range(0..20) {
        let x: F = rng.random();
        ours.observe(x);
        stock.observe(x);
    }
    if rng.random::<bool>() {
        let (a, b): (F, F) = (ours.sample(), stock.sample());
        assert_eq!(a, b);
    }
    (ours, stock)
}

fn check_grinders<F: Poseidon2Field>(difficulties: &[usize], rounds: usize)
where
    StandardUniform: Distribution<F>,
{
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let seed = rng.random::<u64>();
        let constants = Poseidon2Constants::<F>::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
        let perm = constants.to_cpu();
        let grinder = Arc::new(GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), constants))));
        for round in 0..rounds {
            let bits = difficulties[round % difficulties.len()];
            let what = format!("{} at {bits} bits ({:?})", F::ID.name(), ctx.mul_variant());
            let (mut ours, mut stock) = random_transcripts(&mut rng, &perm, &grinder);
            let state = GrindState::new(&stock.sponge_state, &stock.input_buffer).unwrap();
            let cpu = cpu_grind(&perm, &state, bits).unwrap();
            let witness = ours.grind(bits);
            assert_eq!(witness, cpu, "GPU vs CPU {what}");
            assert_eq!(ours.gpu_fallbacks(), 0, "the GPU grinder failed and the CPU stood in {what}");
            if bits <= 12 {
                let smaller = (0..witness.as_canonical_u32()).find(|&w| state.accepts(&perm, bits, F::from_u32(w)));
                assert_eq!(smaller, None, "a smaller witness exists {what}");
            }
            assert!(stock.check_witness(bits, witness), "stock challenger rejects {witness} {what}");
            assert_eq!(ours.sample_bits(20), stock.sample_bits(20), "transcripts diverged after grinding {what}");
            let (a, b): (F, F) = (ours.sample(), stock.sample());
            assert_eq!(a, b, "samples after grinding {what}");
        }
    }
}

#[test]
fn zero_bits_and_impossible_difficulties() {
    let perm = Poseidon2Constants::default_babybear().to_cpu();
    let mut c = GpuChallenger::new(perm.clone(), None);
    c.observe(BabyBear::ONE);
    let before = c.inner().sponge_state;
    assert_eq!(c.grind(0), BabyBear::ZERO);
    assert_eq!(c.inner().sponge_state, before, "0 bits absorbs nothing");
    let err = c.try_grind(31).unwrap_err();
    assert!(err.to_string().contains("at most 30 bits"), "{err}");
    // The CPU path alone (no GPU) still grinds.
    let mut stock = Stock::new(perm);
    stock.observe(BabyBear::ONE);
    let w = c.grind(6);
    assert!(stock.check_witness(6, w));
}

#[test]
fn shifts_are_guarded_past_30_bits() {
    let perm = Poseidon2Constants::default_babybear().to_cpu();
    let state = GrindState::new(&[BabyBear::ZERO; 16], &[]).unwrap();
    // (1 << 32) - 1 used to wrap to a mask of 0 in release builds: every witness passed.
    for bits in [31, 32, 33, 63, 64, 1000] {
        assert!(!state.accepts(&perm, bits, BabyBear::ZERO), "{bits} bits accepted a witness");
        assert!(pow_mask(bits).is_err(), "{bits}");
        let err = cpu_grind(&perm, &state, bits).unwrap_err();
        assert!(err.to_string().contains("at most 30 bits"), "{err}");
    }
    assert_eq!(pow_mask(30).unwrap(), (1 << 30) - 1);
    let err = GrindState::new(&[BabyBear::ZERO; 16], &[BabyBear::ONE; 8]).unwrap_err();
    assert!(err.to_string().contains("holds at most 7"), "{err}");
}

#[test]
fn a_wrong_gpu_witness_falls_back_to_the_cpu() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        // The GPU grinds with other constants than the transcript: its witness fails the
        // challenger's check, and the CPU grinder must stand in (never a panic, never a bad proof).
        let gpu_constants = Poseidon2Constants::new_from_rng_128(&mut StdRng::seed_from_u64(rng.random()));
        let grinder = Arc::new(GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), gpu_constants))));
        let perm = Poseidon2Constants::default_babybear().to_cpu();
        let mut ours = GpuChallenger::new(perm.clone(), Some(grinder.clone())).with_gpu_min_bits(0);
        let mut stock = Stock::new(perm.clone());
        let x: BabyBear = rng.random();
        ours.observe(x);
        stock.observe(x);
        let state = GrindState::new(&stock.sponge_state, &stock.input_buffer).unwrap();
        let gpu_witness = grinder.grind(&state, 10).unwrap();
        // One GPU witness in 2^10 passes by chance under the other constants.
        let wrong = !state.accepts(&perm, 10, gpu_witness);
        let witness = ours.try_grind(10).expect("the CPU stands in");
        assert_eq!(ours.gpu_fallbacks(), u64::from(wrong));
        if wrong {
            assert_eq!(witness, cpu_grind(&perm, &state, 10).unwrap());
        }
        assert!(stock.check_witness(10, witness));
        assert_eq!(ours.sample_bits(20), stock.sample_bits(20));
    }
}

/// A grind set up on the GPU from words a kernel left there (wgsl/pow/prepare.wgsl) searches
/// exactly the state the challenger reaches by observing those words: the challenger takes its
/// witness, which is the CPU's smallest one. An offer from another state is never taken. Both
/// forms of the set-up kernel (16 invocations with `GpuTuning::transcript_lanes`; one without).
#[test]
fn grinds_ahead_search_the_state_the_challenger_reaches() {
    check_grinds_ahead::<BabyBear>();
    check_grinds_ahead::<KoalaBear>();
}

fn check_grinds_ahead<F: Poseidon2Field>()
where
    StandardUniform: Distribution<F>,
{
    let mut rng = common::rng();
    // The set-up kernel in both forms (16 invocations, or one).
    for ctx in common::contexts().into_iter().chain(common::other_transcript_contexts()) {
        let constants = Poseidon2Constants::<F>::new_from_rng_128(&mut StdRng::seed_from_u64(rng.random::<u64>()));
        let perm = constants.to_cpu();
        let grinder = Arc::new(GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx.clone(), constants))));
        for round in 0..12 {
            let bits = [1, 4, 8, 10, 12][round % 5];
            let (mut ours, mut stock) = random_transcripts(&mut rng, &perm, &grinder);
            let ahead = ours.grind_ahead(bits).expect("a GPU grinder at any difficulty");
            // Words the "kernel" left: some padding, then what the transcript observes next.
            let (skip, count) = (rng.random_range(0..4usize), rng.random_range(0..17usize));
            let words: Vec<F> = (0..skip + count).map(|_| rng.random()).collect();
            let observed = ctx.memory().storage("observed", words.len());
            ctx.transfers().write(&observed, whir_gpu::field::as_words(&words));
            let (g, b, sponge, pending) = ahead.target().expect("the challenger published its state");
            assert_eq!(b, bits);
            let mut dispatches = Vec::new();
            let record = g.record_after_observing(&mut dispatches, &sponge, &pending, &observed, skip, count, bits).unwrap();
            let mut batch = ctx.batch("grind ahead");
            batch.record(&dispatches);
            let read = record.read_in(&mut batch);
            let offer = read.offer(&ctx.run(batch).unwrap()).unwrap();

            let stale = rng.random_range(0..4) == 0;
            for &x in &words[skip..] {
                stock.observe(x);
            }
            if stale {
                // The transcript went elsewhere: the offer must be ignored.
                let x: F = rng.random();
                stock.observe(x);
                for &w in &words[skip..] {
                    ours.observe(w);
                }
                ours.observe(x);
            } else {
                for &w in &words[skip..] {
                    ours.observe(w);
                }
                let state = GrindState::new(&stock.sponge_state, &stock.input_buffer).unwrap();
                assert_eq!(offer.state, state, "the GPU reached another {} sponge state ({:?}, {count} words)", F::ID.name(), ctx.mul_variant());
                if let Some(w) = offer.witness {
                    assert_eq!(w, cpu_grind(&perm, &state, bits).unwrap(), "the grind ahead's witness is the smallest at {bits} bits");
                }
            }
            // One range from 0 holds a witness but for a ~2% chance (four expected hits); without
            // one the challenger searches on from the range's end and the offer is not "used".
            let found = offer.witness.is_some();
            ahead.offer(offer);
            let used = ours.grinds_ahead_used();
            let state = GrindState::new(&stock.sponge_state, &stock.input_buffer).unwrap();
            let witness = ours.grind(bits);
            assert_eq!(witness, cpu_grind(&perm, &state, bits).unwrap(), "{bits} bits ({:?})", ctx.mul_variant());
            assert_eq!(ours.grinds_ahead_used(), used + u64::from(!stale && found), "offer taken iff it was for this state");
            assert!(stock.check_witness(bits, witness));
            assert_eq!(ours.sample_bits(20), stock.sample_bits(20), "transcripts diverged after grinding");
            ours.stop_grinding_ahead();
        }
    }
}

/// KoalaBear: `GpuChallenger<KoalaBear>` grinds on the GPU (the grind kernels composed over
/// KoalaBear) the same smallest witness as the CPU grinder, the stock
/// `DuplexChallenger<KoalaBear, Poseidon2KoalaBear<16>, 16, 8>` accepts it, and the two
/// transcripts stay equal through observes, samples and grinds.
#[test]
fn koalabear_grinders_agree_and_stock_challenger_accepts() {
    check_grinders::<KoalaBear>(&[0, 1, 5, 8, 12, 16, 3, 14], 8);
}

/// Grinders started together on a fresh context all build the grind pipeline at once: every
/// one must get the same pipeline, or a grinder's kept bind group (made against the pipeline it
/// built) no longer fits the cached one at its next grind, and the CPU stands in.
#[test]
fn grinders_started_together_share_one_pipeline() {
    let mut rng = common::rng();
    for variant in common::contexts().iter().map(|c| c.mul_variant()) {
        let ctx = common::open_with(common::options_for(variant)).expect("a second context of a variant already opened");
        let perm = Poseidon2Constants::default_babybear().to_cpu();
        let threads = 4;
        let barrier = std::sync::Barrier::new(threads);
        let seeds: Vec<u64> = (0..threads).map(|_| rng.random()).collect();
        std::thread::scope(|s| {
            for &seed in &seeds {
                let (ctx, perm, barrier) = (ctx.clone(), perm.clone(), &barrier);
                s.spawn(move || {
                    let grinder = Arc::new(GpuGrinder::new(Arc::new(GpuPoseidon2::new(ctx, Poseidon2Constants::default_babybear()))));
                    let mut rng = StdRng::seed_from_u64(seed);
                    let mut ours = GpuChallenger::new(perm.clone(), Some(grinder)).with_gpu_min_bits(0);
                    let mut stock = Stock::new(perm.clone());
                    barrier.wait();
                    for bits in [6, 8, 7] {
                        let x: BabyBear = rng.random();
                        ours.observe(x);
                        stock.observe(x);
                        let state = GrindState::new(&stock.sponge_state, &stock.input_buffer).unwrap();
                        let witness = ours.grind(bits);
                        assert_eq!(witness, cpu_grind(&perm, &state, bits).unwrap(), "{bits} bits ({variant:?})");
                        assert!(stock.check_witness(bits, witness));
                    }
                    assert_eq!(ours.gpu_fallbacks(), 0, "a grinder started beside others fell back to the CPU ({variant:?})");
                });
            }
        });
    }
}
