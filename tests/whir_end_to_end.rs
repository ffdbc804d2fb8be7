//! The GPU pieces inside Plonky3's own WHIR prover: `GpuWhirDomain` (GPU NTT), `GpuMmcs` (GPU
//! Merkle trees, also under the prover's `ExtensionMmcs`) and `GpuChallenger` (GPU grinding).
//! With the smallest-witness grinder on both sides the proof bytes equal the CPU prover's, and
//! the stock Plonky3 verifier accepts them after a postcard round trip.

mod common;

use std::sync::Arc;

use p3_baby_bear::{BabyBear, Poseidon2BabyBear};
use p3_challenger::DuplexChallenger;
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_field::extension::BinomialExtensionField;
use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::layout::{Layout, SuffixProver, Table};
use p3_whir::{PcsProof, WhirConfig, WhirProver};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::{GpuChallenger, GpuDft, GpuGrinder, GpuMerkle, GpuMmcs, GpuNtt, GpuPoseidon2, Poseidon2Constants};
use whir_wgpu::prover::GpuWhirDomain;
use whir_wgpu::verifier::hash::CpuMmcs;

type F = BabyBear;
type EF = BinomialExtensionField<F, 4>;
type Perm = Poseidon2BabyBear<16>;
type L = SuffixProver<F, EF>;
type CpuPcs = WhirProver<EF, F, Radix2DFTSmallBatch<F>, CpuMmcs, GpuChallenger, L>;
type GpuPcs = WhirProver<EF, F, GpuWhirDomain, GpuMmcs, GpuChallenger, L>;
type StockPcs = WhirProver<EF, F, Radix2DFTSmallBatch<F>, CpuMmcs, DuplexChallenger<F, Perm, 16, 8>, L>;

fn witness(values: &[F], fold: usize) -> p3_sumcheck::layout::Witness<F> {
    L::new_witness(vec![Table::new(RowMajorMatrix::new(values.to_vec(), values.len()))], fold)
}

#[test]
fn gpu_backed_proofs_equal_cpu_proofs_and_verify_with_the_stock_verifier() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let constants = Poseidon2Constants::new_from_rng_128(&mut StdRng::seed_from_u64(rng.random()));
        let perm: Perm = constants.to_cpu();
        let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), constants));
        let merkle = Arc::new(GpuMerkle::new(poseidon2.clone()));
        let grinder = Arc::new(GpuGrinder::new(poseidon2));
        let ntt = Arc::new(GpuNtt::new(ctx.clone()));
        for (n, fold, pow_bits) in [(10usize, 1usize, 0usize), (12, 2, 6), (14, 4, 8)] {
            let values = common::random_vec(&mut rng, 1 << n);
            let config = WhirConfig::new(n, common::stock_params(fold, pow_bits)).expect("feasible parameters");

            let cpu_pcs = CpuPcs::new(
                config.clone(),
                Radix2DFTSmallBatch::default(),
                CpuMmcs::<BabyBear>::new(
                    whir_wgpu::verifier::hash::LeafHash::<BabyBear>::new(perm.clone()),
                    whir_wgpu::verifier::hash::NodeCompress::<BabyBear>::new(perm.clone()),
                    0,
                ),
            );
            let domain = GpuWhirDomain::new(GpuDft::new(Some(ntt.clone())).with_cpu_threshold(0).encoder());
            let gpu_pcs = GpuPcs::new(config.clone(), domain, GpuMmcs::new(merkle.clone(), 0));

            let prove_cpu = || {
                let mut ch = GpuChallenger::new(perm.clone(), None);
                let (commitment, data) = cpu_pcs.commit(witness(&values, fold), &mut ch).unwrap();
                (commitment, cpu_pcs.open(data, common::single_column_protocol(n, fold), &mut ch).unwrap())
            };
            let prove_gpu = || {
                let mut ch = GpuChallenger::new(perm.clone(), Some(grinder.clone())).with_gpu_min_bits(0);
                let (commitment, data) = gpu_pcs.commit(witness(&values, fold), &mut ch).unwrap();
                (commitment, gpu_pcs.open(data, common::single_column_protocol(n, fold), &mut ch).unwrap())
            };
            let (cpu_commitment, cpu_proof) = prove_cpu();
            let (gpu_commitment, gpu_proof) = prove_gpu();
            assert_eq!(gpu_commitment, cpu_commitment, "n={n} fold={fold}");
            let cpu_bytes = postcard::to_allocvec(&cpu_proof).unwrap();
            let gpu_bytes = postcard::to_allocvec(&gpu_proof).unwrap();
            assert_eq!(gpu_bytes, cpu_bytes, "proof bytes differ, n={n} fold={fold} pow={pow_bits} ({:?})", ctx.mul_variant());

            // The stock verifier, with the stock challenger, on the deserialized GPU proof.
            let stock_config = WhirConfig::new(n, common::stock_params(fold, pow_bits)).expect("feasible parameters");
            let stock = StockPcs::new(
                stock_config,
                Radix2DFTSmallBatch::default(),
                CpuMmcs::<BabyBear>::new(
                    whir_wgpu::verifier::hash::LeafHash::<BabyBear>::new(perm.clone()),
                    whir_wgpu::verifier::hash::NodeCompress::<BabyBear>::new(perm.clone()),
                    0,
                ),
            );
            let proof: PcsProof<F, EF, CpuMmcs> = postcard::from_bytes(&gpu_bytes).unwrap();
            let mut verifier_challenger = DuplexChallenger::new(perm.clone());
            stock
                .verify(&gpu_commitment, &proof, &mut verifier_challenger, common::single_column_protocol(n, fold))
                .expect("the stock verifier accepts the GPU-backed proof");

            // A flipped byte is rejected (or fails to parse).
            let mut bad = gpu_bytes.clone();
            let i = rng.random_range(0..bad.len());
            bad[i] ^= 1;
            if let Ok(proof) = postcard::from_bytes::<PcsProof<F, EF, CpuMmcs>>(&bad) {
                let mut ch = DuplexChallenger::new(perm.clone());
                assert!(stock.verify(&gpu_commitment, &proof, &mut ch, common::single_column_protocol(n, fold)).is_err(), "flipped byte {i} accepted");
            }
        }
    }
}
