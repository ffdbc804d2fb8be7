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
        let before = ctx.transfer_counts();
        let proof = p3_uni_stark::prove(&gpu, &air, trace.clone(), &[]).expect("GPU proof");
        // The GPU did the work: the trace went up to the DFT, and its LDE (twice the trace) was
        // committed while still there, not uploaded again.
        let up = ctx.transfer_counts().bytes_up - before.bytes_up;
        let trace_bytes = (trace.values.len() * 4) as u64;
        assert!(up >= trace_bytes && up < 2 * trace_bytes, "{up} bytes uploaded for a {trace_bytes}-byte trace: the GPU pieces were not used, or the LDE went up again");
        let ours = postcard::to_allocvec(&proof).unwrap();
        let cpu = config::cpu_config(queries, pow);
        let reference = postcard::to_allocvec(&p3_uni_stark::prove(&cpu, &air, trace, &[]).expect("CPU proof")).unwrap();
        assert!(ours == reference, "GPU and CPU proofs differ ({:?})", ctx.mul_variant());
        let stock = config::stock_config(queries, pow);
        let proof: p3_uni_stark::Proof<config::StockStarkConfig> = postcard::from_bytes(&ours).unwrap();
        p3_uni_stark::verify(&stock, &air, &proof, &[]).expect("the stock verifier accepts the GPU proof");
    }
}
