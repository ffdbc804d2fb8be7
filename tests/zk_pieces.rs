//! Plonky3's hiding PCS (`HidingWhirPcs`, HVZK-WHIR) over our GPU pieces — `GpuDft` for every
//! encoding, `GpuMmcs` for every base-field tree, `GpuChallenger` grinding on the GPU — against
//! the same PCS over Plonky3's CPU pieces: for the same generator seed, witness, points and
//! challenger state, the same commitment and the same proof bytes, accepted by p3-whir's own
//! `verify`; different seeds give different proofs of one witness. The reference and fallback a
//! resident hiding prover is measured against. Both field-multiply variants, fresh seeds
//! (WHIR_TEST_SEED replays one).

mod common;

use std::sync::Arc;

use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_multilinear_util::point::Point;
use p3_multilinear_util::poly::Poly;
use p3_whir::{HidingWhirPcs, ZkWhirProof};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::{GpuChallenger, GpuContext, GpuDft, GpuGrinder, GpuMerkle, GpuMmcs, GpuPoseidon2, Poseidon2Constants};
use whir_wgpu::prover::{EF, F};
use whir_wgpu::verifier::hash::{cpu_mmcs_with, CpuMmcs, LeafSponge};

type CpuHiding = HidingWhirPcs<EF, F, Radix2DFTSmallBatch<F>, CpuMmcs<F>, GpuChallenger<F>, StdRng>;
type GpuHiding = HidingWhirPcs<EF, F, GpuDft<F>, GpuMmcs<F>, GpuChallenger<F>, StdRng>;

use common::zk::{shapes, Shape};

/// A fresh transcript over Plonky3's Poseidon2 constants, grinding on `grinder` where given
/// (both grind the smallest witness, so the two sides' transcripts agree at any PoW).
fn challenger(grinder: Option<Arc<GpuGrinder<F>>>) -> GpuChallenger<F> {
    GpuChallenger::new(Poseidon2Constants::<F>::plonky3_default().to_cpu(), grinder)
}

/// The GPU pieces on `ctx`: every DFT on the GPU, the tree built there, the grinder.
fn gpu_pieces(ctx: &Arc<GpuContext>) -> (GpuDft<F>, GpuMmcs<F>, Arc<GpuGrinder<F>>) {
    let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F>::plonky3_default()));
    let mmcs = GpuMmcs::new(Arc::new(GpuMerkle::new(poseidon2.clone())), 0);
    (GpuDft::on(ctx.clone()).with_cpu_threshold(0), mmcs, Arc::new(GpuGrinder::new(poseidon2)))
}

/// Commits to `witness` and opens it at `points` with each PCS from the generator `seed`;
/// returns the serialized proofs after checking the commitments agree and p3-whir's verifier
/// accepts the GPU pieces' proof.
fn prove_both(ctx: &Arc<GpuContext>, shape: &Shape, seed: u64, witness: &Poly<F>, points: &[Point<EF>]) -> (Vec<u8>, Vec<u8>) {
    let what = format!("{shape:?} seed {seed} ({:?})", ctx.mul_variant());
    let cpu = CpuHiding::new(shape.config(), Radix2DFTSmallBatch::default(), cpu_mmcs_with::<F>(0, LeafSponge::Width16), StdRng::seed_from_u64(seed));
    let (dft, mmcs, grinder) = gpu_pieces(ctx);
    let gpu = GpuHiding::new(shape.config(), dft, mmcs, StdRng::seed_from_u64(seed));

    let mut cpu_challenger = challenger(None);
    let (cpu_root, cpu_data) = cpu.commit(witness.clone(), &mut cpu_challenger).unwrap();
    let cpu_proof = cpu.open(cpu_data, points.to_vec(), &mut cpu_challenger).unwrap();

    let mut gpu_challenger = challenger(Some(grinder));
    let (gpu_root, gpu_data) = gpu.commit(witness.clone(), &mut gpu_challenger).unwrap();
    let gpu_proof = gpu.open(gpu_data, points.to_vec(), &mut gpu_challenger).unwrap();

    assert_eq!(cpu_root, gpu_root, "commitment, {what}");
    let (cpu_bytes, gpu_bytes) = (postcard::to_allocvec(&cpu_proof).unwrap(), postcard::to_allocvec(&gpu_proof).unwrap());
    assert!(cpu_bytes == gpu_bytes, "proof bytes differ, {what}");
    // The GPU pieces' proof as a verifier receives it: bytes, read as the stock proof type.
    let received: ZkWhirProof<F, EF, CpuMmcs<F>> = postcard::from_bytes(&gpu_bytes).unwrap();
    cpu.verify(&gpu_root, &received, &mut challenger(None), points.to_vec()).unwrap_or_else(|e| panic!("p3-whir rejects the GPU pieces' proof, {what}: {e:?}"));
    // The evaluations the proof reveals are the witness's.
    for (point, &value) in points.iter().zip(&gpu_proof.evals) {
        assert_eq!(witness.eval_base(point), value, "revealed evaluation, {what}");
    }
    (cpu_bytes, gpu_bytes)
}

#[test]
fn hiding_pcs_over_gpu_pieces_is_plonky3s() {
    let mut rng = common::rng();
    let shapes = shapes();
    for ctx in common::contexts() {
        for shape in &shapes {
            let witness = Poly::new((0..1usize << shape.vars).map(|_| rng.random::<F>()).collect());
            let points: Vec<Point<EF>> = (0..shape.points).map(|_| Point::rand(&mut rng, shape.vars)).collect();
            let seed = rng.random::<u64>();
            let (first, _) = prove_both(&ctx, shape, seed, &witness, &points);
            // Another seed hides the same witness differently.
            let (other, _) = prove_both(&ctx, shape, seed ^ 1, &witness, &points);
            assert_ne!(first, other, "two seeds gave one proof, {shape:?}");
        }
    }
}
