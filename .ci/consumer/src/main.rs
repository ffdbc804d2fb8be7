//! Proves and verifies through the packaged crates' public API, as the README shows it: tables
//! with the plain PCS over Plonky3's own duplex challenger, and a polynomial with the hiding PCS,
//! each checked by p3-whir's verifier. Exits non-zero on any failure.

use p3_baby_bear::BabyBear;
use p3_challenger::{CanObserve, DuplexChallenger};
use p3_commit::MultilinearPcs;
use p3_multilinear_util::{point::Point, poly::Poly};
use p3_sumcheck::layout::Witness;
use p3_whir::parameters::WhirConfig;
use p3_whir::{FoldingFactor, ProtocolParameters, SecurityAssumption, ZkParameters, ZkWhirConfig};
use rand::rngs::StdRng;
use rand::SeedableRng;
use whir_wgpu::gpu::GpuChallenger;
use whir_wgpu::prover::{random_tables, GpuProver, Params, Plonky3Pieces, Workload, EF};
use whir_wgpu::verifier::hash::{LeafSponge, Perm};

type Challenger = DuplexChallenger<BabyBear, Perm, 16, 8>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = GpuProver::<BabyBear>::open_default()?;

    // Tables, with the plain PCS over Plonky3's duplex challenger.
    let workload = Workload::parse("10x4,2*8x8")?;
    let tables = random_tables::<BabyBear, _>(&workload, &mut StdRng::seed_from_u64(1));
    let params = workload.params(&Params { fold: 2, pow_bits: 8, ..Params::default() });
    let config: WhirConfig<EF, BabyBear, Challenger> = params.config()?;
    let pcs = gpu.pcs(config)?;
    let mut challenger = Challenger::new(whir_wgpu::verifier::permutation());
    challenger.observe_slice(&[BabyBear::new(7)]);
    let mut verifier_challenger = challenger.clone();
    let (commitment, data) = pcs.commit(Witness::new(tables, 2), &mut challenger)?;
    let proof = pcs.open(data, workload.protocol(2), &mut challenger)?;
    pcs.verify(&commitment, &proof, &mut verifier_challenger, workload.protocol(2))?;
    println!("tables 10x4,2*8x8: proved on the GPU and verified");

    // A polynomial, with the hiding PCS.
    let n = 12;
    let protocol = ProtocolParameters {
        security_level: 80,
        pow_bits: 8,
        round_log_inv_rates: vec![],
        folding_factor: FoldingFactor::Constant(4),
        soundness_type: SecurityAssumption::JohnsonBound,
        starting_log_inv_rate: 2,
    };
    let config = ZkWhirConfig::<EF, BabyBear, GpuChallenger<BabyBear>>::new(n, protocol, ZkParameters { ell_zk: 4, mask_log_inv_rate: 1 })
        .map_err(|e| format!("{e:?}"))?;
    let pcs = gpu.hiding_pcs(config, LeafSponge::Width16, rand::make_rng::<StdRng>())?;
    let mut challenger = gpu.challenger();
    let mut verifier_challenger = challenger.clone();
    let witness = Poly::new((0..1u32 << n).map(BabyBear::new).collect());
    let (root, data) = pcs.commit(witness, &mut challenger)?;
    let point = Point::<EF>::new((0..n as u32).map(|i| EF::from(BabyBear::new(3 + i))).collect());
    let proof = pcs.open(data, vec![point.clone()], &mut challenger)?;
    pcs.verify(&root, &proof, &mut verifier_challenger, vec![point])?;
    println!("hiding proof of a polynomial of 2^{n} values: verified");
    Ok(())
}
