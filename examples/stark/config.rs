//! STARK configurations over BabyBear with FRI (p3-uni-stark + `TwoAdicFriPcs`): one built on
//! whir-wgpu's GPU pieces, its all-CPU twin (Plonky3's DFT and Merkle tree, a challenger that
//! grinds for the smallest witness on the CPU), and the stock configuration a verifier uses.
//! Shared by `examples/stark` and `tests/stark.rs`.

#![allow(dead_code)]

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_challenger::DuplexChallenger;
use p3_commit::ExtensionMmcs;
use p3_dft::Radix2DitParallel;
use p3_field::extension::BinomialExtensionField;
use p3_fri::{FriParameters, TwoAdicFriPcs};
use p3_uni_stark::StarkConfig;
use whir_wgpu::gpu::{GpuChallenger, GpuContext, GpuDft, GpuGrinder, GpuMerkle, GpuMmcs, GpuNtt, GpuPoseidon2, Poseidon2Constants};
use whir_wgpu::verifier::hash::{CpuMmcs, LeafHash, NodeCompress};

pub type Val = BabyBear;
pub type Challenge = BinomialExtensionField<Val, 4>;

/// The GPU pieces: DFT, Merkle commitments (and `ExtensionMmcs` over them) and grinding.
pub type GpuPcs = TwoAdicFriPcs<Val, GpuDft, GpuMmcs, ExtensionMmcs<Val, Challenge, GpuMmcs>>;
pub type GpuStarkConfig = StarkConfig<GpuPcs, Challenge, GpuChallenger>;

/// Plonky3's CPU pieces, with the smallest-witness CPU grinder (same proofs as the GPU's).
pub type CpuPcs = TwoAdicFriPcs<Val, Radix2DitParallel<Val>, CpuMmcs, ExtensionMmcs<Val, Challenge, CpuMmcs>>;
pub type CpuStarkConfig = StarkConfig<CpuPcs, Challenge, GpuChallenger>;

/// Every piece stock Plonky3, the challenger too: what a verifier builds.
pub type StockStarkConfig = StarkConfig<CpuPcs, Challenge, DuplexChallenger<Val, p3_baby_bear::Poseidon2BabyBear<16>, 16, 8>>;

/// FRI at rate 1/2 with `num_queries` queries and `query_pow_bits` of grinding before them.
pub fn fri_params<M>(mmcs: M, num_queries: usize, query_pow_bits: usize) -> FriParameters<M> {
    FriParameters {
        log_blowup: 1,
        log_final_poly_len: 0,
        max_log_arity: 1,
        num_queries,
        batch_proof_of_work_bits: 0,
        commit_proof_of_work_bits: 0,
        query_proof_of_work_bits: query_pow_bits,
        mmcs,
    }
}

fn cpu_mmcs() -> CpuMmcs {
    let perm = Poseidon2Constants::default_babybear().to_cpu();
    CpuMmcs::<BabyBear>::new(LeafHash::<BabyBear>::new(perm.clone()), NodeCompress::<BabyBear>::new(perm), 0)
}

/// The STARK on `ctx`'s GPU. `dft_min_elements`: send transforms of at least this many
/// elements to the GPU, and commit LDEs of as many ahead (None: `GpuDft`'s defaults: measured,
/// width-aware; 32 MiB).
pub fn gpu_config(ctx: Arc<GpuContext>, num_queries: usize, query_pow_bits: usize, dft_min_elements: Option<usize>) -> GpuStarkConfig {
    let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()));
    let mmcs = GpuMmcs::new(Arc::new(GpuMerkle::new(poseidon2.clone())), 0);
    // The trace's LDE is hashed into the MMCS's tree while it is still on the GPU.
    let mut dft = GpuDft::new(Some(Arc::new(GpuNtt::new(ctx)))).committing_ahead_for(&mmcs);
    if let Some(min) = dft_min_elements {
        dft = dft.with_cpu_threshold(min).with_commit_ahead_from(min.saturating_mul(4));
    }
    let pcs = GpuPcs::new(dft, mmcs.clone(), fri_params(ExtensionMmcs::new(mmcs), num_queries, query_pow_bits));
    let challenger = GpuChallenger::new(Poseidon2Constants::default_babybear().to_cpu(), Some(Arc::new(GpuGrinder::new(poseidon2))));
    GpuStarkConfig::new(pcs, challenger)
}

/// The same STARK on Plonky3's CPU pieces, grinding for the smallest witness.
pub fn cpu_config(num_queries: usize, query_pow_bits: usize) -> CpuStarkConfig {
    let mmcs = cpu_mmcs();
    let pcs = CpuPcs::new(Radix2DitParallel::default(), mmcs.clone(), fri_params(ExtensionMmcs::new(mmcs), num_queries, query_pow_bits));
    CpuStarkConfig::new(pcs, GpuChallenger::new(Poseidon2Constants::default_babybear().to_cpu(), None))
}

/// The stock configuration, for verifying.
pub fn stock_config(num_queries: usize, query_pow_bits: usize) -> StockStarkConfig {
    let mmcs = cpu_mmcs();
    let pcs = CpuPcs::new(Radix2DitParallel::default(), mmcs.clone(), fri_params(ExtensionMmcs::new(mmcs), num_queries, query_pow_bits));
    StockStarkConfig::new(pcs, DuplexChallenger::new(Poseidon2Constants::default_babybear().to_cpu()))
}
