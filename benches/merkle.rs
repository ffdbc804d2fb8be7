//! Merkle commitment of a 2^22 x 16 and a 2^20 x 64 matrix: `GpuMmcs::commit_matrix` (host to
//! host: upload, hash, tree, cap readback), the GPU tree over a matrix already on the GPU
//! (`GpuMerkle::record_tree`, root read back), and Plonky3's `MerkleTreeMmcs` on all CPU threads, in one process.
//! `cargo bench --bench merkle`; WHIR_BENCH_MERKLE=log_h:width,... overrides the shapes;
//! WHIR_BENCH_KOALABEAR=1 adds the same entries over KoalaBear (names prefixed `koalabear_`);
//! WHIR_BENCH_LEAF_WIDTH=24 hashes leaves with Poseidon2 of width 24 on both sides (p3-whir's
//! KoalaBear benchmark's leaf hash).

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use p3_baby_bear::BabyBear;
use p3_commit::Mmcs;
use p3_koala_bear::KoalaBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_symmetric::TruncatedPermutation;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::field::as_words;
use whir_wgpu::gpu::{
    plumbing::CpuMmcsOf, record::TreeRows, record::TreeSpec, GpuContext, GpuMerkle, GpuMmcs, GpuOptions, GpuPoseidon2, MulVariant, Poseidon2Constants,
};
use whir_wgpu::verifier::hash::LeafHasher;

fn wide_leaves() -> bool {
    std::env::var("WHIR_BENCH_LEAF_WIDTH").is_ok_and(|v| v == "24")
}

fn shapes() -> Vec<(usize, usize)> {
    std::env::var("WHIR_BENCH_MERKLE")
        .ok()
        .map(|s| s.split(',').filter_map(|p| p.split_once(':')).filter_map(|(h, w)| Some((h.trim().parse().ok()?, w.trim().parse().ok()?))).collect())
        .unwrap_or_else(|| vec![(22, 16), (20, 64)])
}

/// The entries over one field (`$prefix` before each name).
macro_rules! bench_field {
    ($group:expr, $field:ty, $prefix:literal) => {{
        let constants = Poseidon2Constants::<$field>::plonky3_default();
        let perm = constants.to_cpu();
        let wide = Poseidon2Constants::<$field, 24>::plonky3_default();
        let leaves = if wide_leaves() { LeafHasher::wide(wide.to_cpu()) } else { LeafHasher::new(perm.clone()) };
        let cpu = CpuMmcsOf::<$field>::new(leaves, TruncatedPermutation::new(perm), 0);
        let gpus: Vec<Arc<GpuMerkle<$field>>> = MulVariant::ALL
            .iter()
            .filter_map(|&v| GpuContext::new(GpuOptions { mul_variant: Some(v), ..GpuOptions::from_env().expect("the WHIR_* settings") }).ok())
            .map(|ctx| {
                let ctx = Arc::new(ctx);
                let merkle = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), constants.clone())));
                Arc::new(if wide_leaves() { merkle.with_wide_leaves(Arc::new(GpuPoseidon2::new(ctx, wide.clone()))).expect("one context") } else { merkle })
            })
            .collect();
        for (log_h, width) in shapes() {
            let mut rng = StdRng::seed_from_u64(log_h as u64 * 1000 + width as u64);
            let h = 1usize << log_h;
            let m = RowMajorMatrix::new((0..h * width).map(|_| rng.random::<$field>()).collect(), width);
            let id = format!("2^{log_h}x{width}");
            $group.throughput(Throughput::Elements((h * width) as u64));
            for merkle in &gpus {
                let ctx = merkle.poseidon2().context().clone();
                let v = format!("{:?}", ctx.mul_variant());
                let mmcs = GpuMmcs::new(merkle.clone(), 0);
                // Input copies are made outside the timing: only the commit is measured.
                $group.bench_function(BenchmarkId::new(format!("{}gpu_host_{v}", $prefix), &id), |b| {
                    b.iter_batched(|| m.clone(), |m| mmcs.commit_matrix(m).0, criterion::BatchSize::LargeInput)
                });
                let input = ctx.transfers().upload("matrix", as_words(&m.values));
                $group.bench_function(BenchmarkId::new(format!("{}gpu_resident_{v}", $prefix), &id), |b| {
                    b.iter(|| {
                        let mut batch = ctx.batch("bench");
                        let tree = merkle.record_tree(&mut batch, TreeRows::Matrix(&input), TreeSpec::new(h, width)).expect("record");
                        // The tree hands its layers back when dropped.
                        tree.finish(&ctx.run(batch).expect("run")).expect("root")
                    })
                });
            }
            $group.bench_function(BenchmarkId::new(format!("{}cpu_plonky3", $prefix), &id), |b| {
                b.iter_batched(|| m.clone(), |m| cpu.commit_matrix(m).0, criterion::BatchSize::LargeInput)
            });
        }
    }};
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("merkle_commit");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    bench_field!(group, BabyBear, "");
    if std::env::var("WHIR_BENCH_KOALABEAR").is_ok_and(|v| v == "1") {
        bench_field!(group, KoalaBear, "koalabear_");
    }
    group.finish();
    c.final_summary();
}
