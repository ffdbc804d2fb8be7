//! A Plonky3 STARK (p3-uni-stark over FRI) proving Keccak-f permutations (p3-keccak-air) on
//! whir-wgpu's GPU pieces: the proof is byte-identical to the all-CPU prover's (both grind for
//! the smallest witness) and the stock verifier, built from Plonky3's pieces alone, accepts it.

mod common;
#[path = "../examples/stark/config.rs"]
mod config;

use p3_keccak_air::{generate_trace_rows, KeccakAir};
use rand::RngExt;

#[test]
fn keccak_stark_on_gpu_pieces_matches_the_cpu_prover_and_verifies() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        // 3 permutations: 72 rows, padded to 128.
        let inputs: Vec<[u64; 25]> = (0..3).map(|_| std::array::from_fn(|_| rng.random())).collect();
        let trace = generate_trace_rows::<config::Val>(inputs, 1);
        let air = KeccakAir {};
        let (queries, pow) = (20, 8);
        // Every transform on the GPU (at this size the default would keep the CPU).
        let gpu = config::gpu_config(ctx.clone(), queries, pow, Some(0));
        let before = ctx.transfers().transfer_counts();
        let proof = p3_uni_stark::prove(&gpu, &air, trace.clone(), &[]).expect("GPU proof");
        // The GPU did the work: the trace went up to the DFT, and its LDE (twice the trace) was
        // committed while still there, not uploaded again.
        let up = ctx.transfers().transfer_counts().bytes_up - before.bytes_up;
        let trace_bytes = (trace.values.len() * 4) as u64;
        assert!(
            up >= trace_bytes && up < 2 * trace_bytes,
            "{up} bytes uploaded for a {trace_bytes}-byte trace: the GPU pieces were not used, or the LDE went up again"
        );
        let ours = postcard::to_allocvec(&proof).unwrap();
        let cpu = config::cpu_config(queries, pow);
        let reference = postcard::to_allocvec(&p3_uni_stark::prove(&cpu, &air, trace, &[]).expect("CPU proof")).unwrap();
        assert!(ours == reference, "GPU and CPU proofs differ ({:?})", ctx.mul_variant());
        let stock = config::stock_config(queries, pow);
        let proof: p3_uni_stark::Proof<config::StockStarkConfig> = postcard::from_bytes(&ours).unwrap();
        p3_uni_stark::verify(&stock, &air, &proof, &[]).expect("the stock verifier accepts the GPU proof");
    }
}

/// The same STARK over KoalaBear (KoalaBear^4 challenges): `GpuDft<KoalaBear>`,
/// `GpuMmcs<KoalaBear>` (under `ExtensionMmcs`) and `GpuChallenger<KoalaBear>` in Plonky3's
/// `TwoAdicFriPcs`; the proof is byte-identical to Plonky3's CPU pieces' and the stock verifier
/// (MerkleTreeMmcs over Poseidon2KoalaBear<16>, DuplexChallenger) accepts it.
#[test]
fn keccak_stark_over_koalabear_on_gpu_pieces_matches_the_cpu_prover_and_verifies() {
    use std::sync::Arc;

    use p3_challenger::DuplexChallenger;
    use p3_commit::ExtensionMmcs;
    use p3_dft::Radix2DitParallel;
    use p3_field::extension::BinomialExtensionField;
    use p3_fri::TwoAdicFriPcs;
    use p3_koala_bear::{KoalaBear, Poseidon2KoalaBear};
    use p3_symmetric::{PaddingFreeSponge, TruncatedPermutation};
    use p3_uni_stark::StarkConfig;
    use whir_wgpu::gpu::{GpuChallenger, GpuDft, GpuGrinder, GpuMerkle, GpuMmcs, GpuNtt, GpuPoseidon2, Poseidon2Constants};

    type Val = KoalaBear;
    type Challenge = BinomialExtensionField<Val, 4>;
    type Packed = <Val as p3_field::Field>::Packing;
    type Cpu = p3_merkle_tree::MerkleTreeMmcs<
        Packed,
        Packed,
        PaddingFreeSponge<Poseidon2KoalaBear<16>, 16, 8, 8>,
        TruncatedPermutation<Poseidon2KoalaBear<16>, 2, 8, 16>,
        2,
        8,
    >;
    type GpuPcs = TwoAdicFriPcs<Val, GpuDft<Val>, GpuMmcs<Val>, ExtensionMmcs<Val, Challenge, GpuMmcs<Val>>>;
    type CpuPcs = TwoAdicFriPcs<Val, Radix2DitParallel<Val>, Cpu, ExtensionMmcs<Val, Challenge, Cpu>>;
    type Stock = StarkConfig<CpuPcs, Challenge, DuplexChallenger<Val, Poseidon2KoalaBear<16>, 16, 8>>;

    let (queries, pow) = (20, 8);
    let constants = Poseidon2Constants::<Val>::plonky3_default();
    let cpu_mmcs = || {
        let perm = constants.to_cpu();
        Cpu::new(PaddingFreeSponge::new(perm.clone()), TruncatedPermutation::new(perm), 0)
    };
    let cpu_pcs = || {
        let mmcs = cpu_mmcs();
        CpuPcs::new(Radix2DitParallel::default(), mmcs.clone(), config::fri_params(ExtensionMmcs::new(mmcs), queries, pow))
    };
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        let inputs: Vec<[u64; 25]> = (0..3).map(|_| std::array::from_fn(|_| rng.random())).collect();
        let trace = generate_trace_rows::<Val>(inputs, 1);
        let air = KeccakAir {};

        let poseidon2 = Arc::new(GpuPoseidon2::new(ctx.clone(), constants.clone()));
        let mmcs = GpuMmcs::new(Arc::new(GpuMerkle::new(poseidon2.clone())), 0);
        // Every transform on the GPU (at this size the default would keep the CPU), each LDE's
        // tree committed ahead for the MMCS.
        let dft = GpuDft::<Val>::new(Some(Arc::new(GpuNtt::new(ctx.clone())))).with_cpu_threshold(0).committing_ahead_for(&mmcs).with_commit_ahead_from(0);
        let pcs = GpuPcs::new(dft, mmcs.clone(), config::fri_params(ExtensionMmcs::new(mmcs), queries, pow));
        let gpu = StarkConfig::new(pcs, GpuChallenger::new(constants.to_cpu(), Some(Arc::new(GpuGrinder::new(poseidon2)))).with_gpu_min_bits(0));
        let before = ctx.transfers().transfer_counts();
        let proof = p3_uni_stark::prove(&gpu, &air, trace.clone(), &[]).expect("GPU proof");
        let up = ctx.transfers().transfer_counts().bytes_up - before.bytes_up;
        let trace_bytes = (trace.values.len() * 4) as u64;
        assert!(up >= trace_bytes, "{up} bytes uploaded for a {trace_bytes}-byte trace: the GPU pieces were not used");
        let ours = postcard::to_allocvec(&proof).unwrap();

        let cpu = StarkConfig::new(cpu_pcs(), GpuChallenger::<Val>::new(constants.to_cpu(), None));
        let reference = postcard::to_allocvec(&p3_uni_stark::prove(&cpu, &air, trace, &[]).expect("CPU proof")).unwrap();
        assert!(ours == reference, "KoalaBear GPU and CPU proofs differ ({:?})", ctx.mul_variant());
        let stock = Stock::new(cpu_pcs(), DuplexChallenger::new(constants.to_cpu()));
        let proof: p3_uni_stark::Proof<Stock> = postcard::from_bytes(&ours).unwrap();
        p3_uni_stark::verify(&stock, &air, &proof, &[]).expect("the stock verifier accepts the KoalaBear GPU proof");
    }
}
