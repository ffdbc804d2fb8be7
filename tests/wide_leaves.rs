//! Merkle trees whose leaves hash with Poseidon2 of width 24 (`PaddingFreeSponge<Poseidon2-24,
//! 24, 16, 8>`, nodes `TruncatedPermutation<Poseidon2-16, 2, 8, 16>`: p3-whir's KoalaBear
//! benchmark's MMCS) built on the GPU, against Plonky3's `MerkleTreeMmcs` of that hash over the
//! same seeded constants: both fields, both multiply variants, every way a tree is built (fused
//! leaf levels, trees keeping only upper layers, bit-reversed rows, row chunks, trees over the
//! binding limit, mixed heights, column blocks absorbed by a DFT) and opened.

mod common;

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_commit::{BatchOpeningRef, Mmcs};
use p3_dft::{Radix2DFTSmallBatch, TwoAdicSubgroupDft};
use p3_field::Field;
use p3_koala_bear::KoalaBear;
use p3_matrix::bitrev::BitReversibleMatrix;
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::Matrix;
use p3_merkle_tree::MerkleTreeMmcs;
use p3_symmetric::{PaddingFreeSponge, TruncatedPermutation};
use rand::distr::{Distribution, StandardUniform};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::field::as_words;
use whir_wgpu::gpu::{
    record::RowChunk, record::RowGroup, record::RowOrder, record::RowSource, record::TreeRows, record::TreeSpec, GpuContext, GpuDft, GpuMerkle, GpuMmcs,
    GpuNtt, GpuOptions, GpuPoseidon2, LimitsProfile, Poseidon2Constants, Poseidon2Field,
};
use whir_wgpu::verifier::hash::LeafSponge;

/// Plonky3's MMCS with width-24 leaves, as p3-whir's benches/whir_pcs.rs declares it.
type Plonky3Mmcs<F> = MerkleTreeMmcs<
    <F as Field>::Packing,
    <F as Field>::Packing,
    PaddingFreeSponge<<F as Poseidon2Field>::Permutation24, 24, 16, 8>,
    TruncatedPermutation<<F as Poseidon2Field>::Permutation16, 2, 8, 16>,
    2,
    8,
>;

/// A GPU tree builder with width-24 leaves and Plonky3's MMCS over the same constants, drawn
/// from `rng` (cap height `cap`).
fn pair<F: Poseidon2Field>(ctx: &Arc<GpuContext>, rng: &mut StdRng, cap: usize) -> (GpuMerkle<F>, Plonky3Mmcs<F>)
where
    StandardUniform: Distribution<F>,
{
    let nodes = Poseidon2Constants::<F>::new_from_rng_128(&mut StdRng::seed_from_u64(rng.random::<u64>()));
    let leaves = Poseidon2Constants::<F, 24>::new_from_rng_128(&mut StdRng::seed_from_u64(rng.random::<u64>()));
    let cpu = Plonky3Mmcs::<F>::new(PaddingFreeSponge::new(leaves.to_cpu()), TruncatedPermutation::new(nodes.to_cpu()), cap);
    let gpu = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), nodes))).with_wide_leaves(Arc::new(GpuPoseidon2::new(ctx.clone(), leaves))).unwrap();
    assert_eq!(gpu.leaf_sponge(), LeafSponge::Width24);
    (gpu, cpu)
}

fn random<F>(rng: &mut StdRng, n: usize) -> Vec<F>
where
    StandardUniform: Distribution<F>,
{
    (0..n).map(|_| rng.random()).collect()
}

/// Every tree shape over random matrices: full trees (fused levels), trees keeping only their
/// upper layers (leaves hashed in chunks from 64 rows), bit-reversed rows: Plonky3's root, and
/// openings (immediate and deferred, caps 0 and 1) equal to Plonky3's pruned multi-proofs.
fn check_trees<F: Poseidon2Field>(ctx: &Arc<GpuContext>, rng: &mut StdRng)
where
    StandardUniform: Distribution<F>,
{
    let (merkle, cpu) = pair::<F>(ctx, rng, 0);
    let merkle = merkle.with_chunked_leaves_from(64);
    // Widths below, at and across the rate of 16 (and the fused kernel's narrow and wide rows).
    for (log_h, width, lowest) in
        [(0usize, 1usize, 0usize), (1, 3, 1), (2, 16, 2), (5, 17, 3), (8, 8, 4), (9, 33, 1), (11, 15, 2), (7, 64, 1), (6, 128, 3), (12, 24, 5), (10, 16, 1)]
    {
        let h = 1usize << log_h;
        let what = format!("{} 2^{log_h} x {width} from layer {lowest} ({:?})", F::ID.name(), ctx.mul_variant());
        let values: Vec<F> = random(rng, h * width);
        let m = RowMajorMatrix::new(values.clone(), width);
        let (root, data) = cpu.commit_matrix(m.clone());
        let matrix = ctx.transfers().upload("matrix", as_words(&values));
        let full = merkle.commit(TreeRows::Matrix(&matrix), TreeSpec::new(h, width)).unwrap();
        assert_eq!(full.root().unwrap(), root.roots()[0], "{what}: Plonky3's root");
        let trimmed = merkle.commit(TreeRows::Matrix(&matrix), TreeSpec::new(h, width).keeping_from(lowest)).unwrap();
        assert_eq!(trimmed.root().unwrap(), full.root().unwrap(), "{what}: root of the trimmed tree");
        let reversed: Vec<F> = (0..h).flat_map(|p| values[RowOrder::BitReversed.physical(p, h) * width..][..width].to_vec()).collect();
        let stored = ctx.transfers().upload("bit-reversed matrix", as_words(&reversed));
        let bit_reversed = merkle.commit(TreeRows::Matrix(&stored), TreeSpec::new(h, width).keeping_from(lowest).with_order(RowOrder::BitReversed)).unwrap();
        assert_eq!(bit_reversed.root().unwrap(), full.root().unwrap(), "{what}: root of the bit-reversed rows");
        let mut indices: Vec<usize> = (0..rng.random_range(1..30)).map(|_| rng.random_range(0..h)).collect();
        indices.extend([0, h - 1, indices[0]]);
        let (values_p3, proof_p3) = cpu.open_multi_batch(&indices, &data);
        let want = merkle.open_rows(&full, RowSource::One(&matrix), &indices, 0).unwrap();
        assert!(want.rows.iter().zip(&values_p3).all(|(ours, theirs)| ours[..] == theirs[0][..]), "{what}: opened rows");
        assert_eq!(want.siblings, proof_p3.sibling_hashes, "{what}: Plonky3's pruned proof");
        cpu.verify_multi_batch(&root, &[m.dimensions()], &indices, &values_p3, &proof_p3).expect("Plonky3 accepts its own proof");
        for cap in 0..=1.min(log_h) {
            let want = merkle.open_rows(&full, RowSource::One(&matrix), &indices, cap).unwrap();
            assert!(merkle.open_rows(&trimmed, RowSource::One(&matrix), &indices, cap).unwrap() == want, "{what}, cap {cap}: trimmed openings differ");
            let deferred = common::open_deferred(&merkle, &trimmed, RowSource::One(&matrix), &indices, cap).unwrap();
            assert!(deferred == want, "{what}, cap {cap}: deferred openings differ");
            assert!(
                merkle.open_rows(&bit_reversed, RowSource::One(&stored), &indices, cap).unwrap() == want,
                "{what}, cap {cap}: bit-reversed openings differ"
            );
        }
    }
}

#[test]
fn trees_match_plonky3_over_both_fields() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        check_trees::<KoalaBear>(&ctx, &mut rng);
        check_trees::<BabyBear>(&ctx, &mut rng);
    }
}

/// `GpuMmcs<KoalaBear>` over a width-24-leaf builder: its CPU twin is Plonky3's MMCS with that
/// hash; single matrices and random batches of mixed heights (shorter matrices' rows hashed into
/// the levels they join) at cap heights 0-2: caps, paths and pruned proofs equal to Plonky3's,
/// and accepted by its verifier.
#[test]
fn mmcs_batches_of_mixed_heights_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        for cap in [0usize, 2] {
            let (merkle, cpu) = pair::<KoalaBear>(&ctx, &mut rng, cap);
            let gpu = GpuMmcs::new(Arc::new(merkle), cap);
            let batches: Vec<Vec<(usize, usize)>> = vec![
                vec![(1 << 9, 16)],
                vec![(1 << 7, 5), (1 << 7, 11)],
                vec![(256, 24), (64, 40), (16, 3)],
                vec![(200, 7), (100, 16), (13, 33)],
                vec![(1 << 10, 2), (1 << 9, 17), (1 << 5, 1)],
            ];
            for shapes in batches {
                let what = format!("batch {shapes:?}, cap {cap} ({:?})", ctx.mul_variant());
                let matrices: Vec<RowMajorMatrix<KoalaBear>> = shapes.iter().map(|&(h, w)| RowMajorMatrix::new(random(&mut rng, h * w), w)).collect();
                let dims: Vec<_> = matrices.iter().map(|m| m.dimensions()).collect();
                let (gcap, gdata) = gpu.commit(matrices.clone());
                let (ccap, cdata) = cpu.commit(matrices);
                assert_eq!(gcap, ccap, "{what}: cap");
                let tallest = shapes.iter().map(|s| s.0).max().unwrap();
                for index in [0, tallest - 1, rng.random_range(0..tallest)] {
                    let (g, c) = (gpu.open_batch(index, &gdata), cpu.open_batch(index, &cdata));
                    assert_eq!((&g.opened_values, &g.opening_proof), (&c.opened_values, &c.opening_proof), "{what}: opening {index}");
                    cpu.verify_batch(&ccap, &dims, index, BatchOpeningRef::new(&g.opened_values, &g.opening_proof)).expect("Plonky3 accepts our opening");
                }
                let indices: Vec<usize> = (0..rng.random_range(1..12)).map(|_| rng.random_range(0..tallest)).collect();
                let (gv, gp) = gpu.open_multi_batch(&indices, &gdata);
                let (cv, cp) = cpu.open_multi_batch(&indices, &cdata);
                assert_eq!((gv.clone(), gp.sibling_hashes.clone()), (cv, cp.sibling_hashes), "{what}: pruned multi-proof");
                cpu.verify_multi_batch(&ccap, &dims, &indices, &gv, &gp).expect("Plonky3 accepts our multi-proof");
            }
        }
    }
}

/// On an adapter whose bindings hold 64 KiB: matrices larger than a binding committed in row
/// chunks (leaves kept or rehashed for openings), row chunks given by the caller, and LDEs a
/// `GpuDft` computes a block of columns at a time with their leaves absorbed block by block
/// (blocks of a multiple of 16 columns: the width-24 sponge's rate) for the MMCS: Plonky3's roots
/// and openings.
#[test]
fn trees_over_the_binding_limit_and_column_blocks_match_plonky3() {
    let mut rng = common::rng();
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) else {
        return;
    };
    let (merkle, cpu) = pair::<KoalaBear>(&ctx, &mut rng, 0);
    for (log_h, width) in [(12usize, 8usize), (11, 16), (10, 33), (14, 1)] {
        let h = 1usize << log_h;
        let what = format!("2^{log_h} x {width} over 64 KiB bindings");
        let values: Vec<KoalaBear> = random(&mut rng, h * width);
        let (root, data) = cpu.commit_matrix(RowMajorMatrix::new(values.clone(), width));
        let matrix = ctx.transfers().upload("matrix", as_words(&values));
        let kept = merkle.commit(TreeRows::Matrix(&matrix), TreeSpec::new(h, width)).unwrap();
        let trimmed = merkle.commit(TreeRows::Matrix(&matrix), TreeSpec::new(h, width).keeping_from(1)).unwrap();
        assert_eq!((kept.root().unwrap(), trimmed.root().unwrap()), (root.roots()[0], root.roots()[0]), "{what}: Plonky3's root");
        let indices: Vec<usize> = (0..20).map(|_| rng.random_range(0..h)).chain([0, h - 1]).collect();
        let (_, proof) = cpu.open_multi_batch(&indices, &data);
        for tree in [&kept, &trimmed] {
            assert_eq!(merkle.open_rows(tree, RowSource::One(&matrix), &indices, 0).unwrap().siblings, proof.sibling_hashes, "{what}: Plonky3's pruned proof");
        }
    }
    // Row chunks of the caller's, leaves kept and not.
    let (height, width, chunk) = (600usize, 24usize, 128usize);
    let values: Vec<KoalaBear> = random(&mut rng, height * width);
    let (root, _) = cpu.commit_matrix(RowMajorMatrix::new(values.clone(), width));
    let buffers: Vec<_> = values.chunks(chunk * width).map(|c| ctx.transfers().upload("rows", as_words(c))).collect();
    let chunks: Vec<RowChunk<'_>> =
        buffers.iter().enumerate().map(|(i, b)| RowChunk { rows: b, first: i * chunk, count: chunk.min(height - i * chunk) }).collect();
    let group = [RowGroup { chunks: chunks.clone(), height, width }];
    let spec = TreeSpec::new(height, width);
    let (kept, trimmed) = (merkle.commit(TreeRows::Groups(&group), spec).unwrap(), merkle.commit(TreeRows::Groups(&group), spec.keeping_from(1)).unwrap());
    assert_eq!((kept.root().unwrap(), trimmed.root().unwrap()), (root.roots()[0], root.roots()[0]), "row chunks: Plonky3's root");
    let indices: Vec<usize> = (0..25).map(|_| rng.random_range(0..height)).collect();
    let open = |tree| common::open_deferred(&merkle, tree, RowSource::Chunks(&chunks), &indices, 0).unwrap();
    assert!(open(&trimmed) == open(&kept), "row chunks: openings differ");

    // Column blocks before the last take a multiple of the width-24 sponge's rate, 16.
    assert_eq!(merkle.leaf_rate(), 16);
    let mut leaves = merkle.column_leaves(64, 40).unwrap();
    let block = ctx.memory().storage("column block", 64 * 16);
    let mut batch = ctx.batch("absorb");
    let err = merkle.record_absorb(&mut batch, &mut leaves, &block, 8).unwrap_err().to_string();
    assert!(err.contains("multiple of 16"), "{err}");
    merkle.record_absorb(&mut batch, &mut leaves, &block, 16).unwrap();
    drop(batch);

    // Column blocks: 2^9-row LDEs of 40 and 70 columns exceed a binding; their sponge states
    // (96 bytes a row) fit one.
    let mmcs = GpuMmcs::new(Arc::new(merkle), 0);
    let cpu_dft = Radix2DFTSmallBatch::<KoalaBear>::default();
    let ntt = Arc::new(GpuNtt::new(ctx.clone()));
    let dft = GpuDft::<KoalaBear>::new(Some(ntt.clone())).with_cpu_threshold(0).committing_ahead_for(&mmcs).with_commit_ahead_from(0);
    for (log_h, w) in [(8usize, 40usize), (8, 70)] {
        assert!(ntt.columns_per_pass(1 << log_h, 1 << (log_h + 1), w).unwrap() < w, "2^{log_h} x {w} fits one binding");
        let m = RowMajorMatrix::new(random(&mut rng, w << log_h), w);
        let shift: KoalaBear = rng.random();
        let what = format!("column blocks 2^{log_h} x {w}");
        let lde = dft.coset_lde_batch(m.clone(), 1, shift).bit_reverse_rows().to_row_major_matrix();
        assert_eq!(lde, cpu_dft.coset_lde_batch(m, 1, shift).bit_reverse_rows().to_row_major_matrix(), "{what}: LDE");
        let before = ctx.transfers().transfer_counts().bytes_up;
        let (root, data) = mmcs.commit(vec![lde.clone()]);
        assert!(ctx.transfers().transfer_counts().bytes_up - before < 64, "{what}: the LDE went up again (no tree committed ahead)");
        let (cpu_root, cpu_data) = cpu.commit(vec![lde]);
        assert_eq!(root, cpu_root, "{what}: Plonky3's root");
        for index in [0, 7, (2 << log_h) - 1] {
            let (ours, theirs) = (mmcs.open_batch(index, &data), cpu.open_batch(index, &cpu_data));
            assert_eq!((ours.opened_values, ours.opening_proof), (theirs.opened_values, theirs.opening_proof), "{what}: opening {index}");
        }
    }
}

/// p3-whir's `WhirProver` as its benches/whir_pcs.rs builds it (width-24 leaves, width-16
/// nodes, Plonky3's default constants), with the smallest-witness challenger our proofs use.
type BenchProver<F, E> =
    p3_whir::WhirProver<E, F, Radix2DFTSmallBatch<F>, Plonky3Mmcs<F>, whir_wgpu::gpu::GpuChallenger<F>, p3_sumcheck::layout::SuffixProver<F, E>>;

/// Resident GPU proofs and the CPU twin's with `Params::leaf` = width 24, over KoalaBear^8 (the
/// named `koalabear8-128` configuration's extension), KoalaBear^4 and BabyBear^4 (whose rounds
/// play the GPU's transcript kernels): equal byte for byte to p3-whir's benchmark prover's on
/// fresh inputs over a random grid and one 128-bit shape, in proof files the stock verifier
/// accepts and a width-16 expectation refuses by name.
fn check_proofs<F, E>(ctx: &Arc<GpuContext>, rng: &mut StdRng, at_128: bool)
where
    F: whir_wgpu::prover::ProverField,
    E: whir_wgpu::prover::WhirExtension<F> + whir_wgpu::gpu::GpuExtension<F>,
    StandardUniform: Distribution<F>,
{
    use p3_commit::MultilinearPcs;
    use p3_sumcheck::layout::{Layout, SuffixProver, Table};
    use whir_wgpu::gpu::GpuChallenger;
    use whir_wgpu::prover::backend::CpuBackend;
    use whir_wgpu::prover::prove_with_backend;
    use whir_wgpu::prover::{DriverOptions, GpuProver, Params, ProofFileOf, Soundness};
    use whir_wgpu::verifier::opening_protocol;
    let wide = |p: Params| Params { leaf: LeafSponge::Width24, ..p };
    let mut shapes: Vec<Params> = common::random_params(rng, 3, 7..=11, |p| p.config_over::<E, GpuChallenger<F>>().is_ok()).into_iter().map(wide).collect();
    if at_128 {
        shapes.push(Params {
            num_vars: 12,
            fold: 4,
            log_inv_rate: 1,
            security_bits: 128,
            pow_bits: 20,
            soundness: Soundness::Capacity,
            points: 1,
            leaf: LeafSponge::Width24,
        });
    }
    let gpu = GpuProver::<F>::over(ctx.clone());
    let challenger = || GpuChallenger::<F>::new(Poseidon2Constants::<F>::plonky3_default().to_cpu(), None);
    for p in shapes {
        let what = format!("{} {p:?} ({:?})", E::NAME, ctx.mul_variant());
        let evals: Vec<F> = random(rng, 1 << p.num_vars);
        let config = p.config_over::<E, GpuChallenger<F>>().unwrap();
        let leaves = PaddingFreeSponge::new(Poseidon2Constants::<F, 24>::plonky3_default().to_cpu());
        let mmcs = Plonky3Mmcs::<F>::new(leaves, TruncatedPermutation::new(Poseidon2Constants::<F>::plonky3_default().to_cpu()), 0);
        let stock = BenchProver::<F, E>::new(config, Radix2DFTSmallBatch::default(), mmcs);
        let mut ch = challenger();
        let witness = SuffixProver::<F, E>::new_witness(vec![Table::new(RowMajorMatrix::new(evals.clone(), evals.len()))], p.fold);
        let (root, data) = stock.commit(witness, &mut ch).unwrap();
        let expected = postcard::to_allocvec(&stock.open(data, opening_protocol(&p), &mut ch).unwrap()).unwrap();

        let (twin_root, twin_proof, _) =
            prove_with_backend(&CpuBackend::<F, E>::hashing_leaves(LeafSponge::Width24), &p, &evals, &mut challenger(), DriverOptions::default()).unwrap();
        assert!(twin_root == root && postcard::to_allocvec(&twin_proof).unwrap() == expected, "{what}: the twin's proof differs from p3-whir's");
        let out = gpu.prove_resident_over::<E>(&p, &evals).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(out.commitment == root && out.proof == expected, "{what}: the GPU proof differs from p3-whir's");

        let file = ProofFileOf::<F, E>::new(&p, out.commitment, out.proof).to_bytes();
        let read = ProofFileOf::<F, E>::from_bytes(&file).unwrap();
        assert_eq!(read.params.leaf, LeafSponge::Width24, "{what}: the file names its leaf sponge");
        read.verify(&p).unwrap_or_else(|e| panic!("{what}: {e}"));
        let err = read.verify(&Params { leaf: LeafSponge::Width16, ..p.clone() }).unwrap_err().to_string();
        assert!(err.contains("leaf-width 24 (expected 16)"), "{what}: {err}");
        // The same proof labelled as hashing leaves with width 16 fails inside the MMCS.
        let relabelled = ProofFileOf::<F, E>::new(&Params { leaf: LeafSponge::Width16, ..p.clone() }, read.commitment.clone(), read.proof.clone()).to_bytes();
        let err = ProofFileOf::<F, E>::from_bytes(&relabelled).unwrap().verify(&Params { leaf: LeafSponge::Width16, ..p.clone() }).unwrap_err();
        assert!(matches!(err, whir_wgpu::prover::ProofError::Verify(_)), "{what}: {err}");
        // Steps hashing the other way are refused before any work.
        let err =
            prove_with_backend(&CpuBackend::<F, E>::default(), &p, &evals, &mut challenger(), DriverOptions::default()).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("width 24") && err.contains("width 16"), "{what}: {err}");
    }
}

#[test]
fn gpu_proofs_with_wide_leaves_match_p3_whirs_benchmark_prover() {
    use p3_field::extension::BinomialExtensionField;
    let mut rng = common::rng();
    for ctx in common::contexts() {
        check_proofs::<KoalaBear, BinomialExtensionField<KoalaBear, 8>>(&ctx, &mut rng, true);
        check_proofs::<KoalaBear, BinomialExtensionField<KoalaBear, 4>>(&ctx, &mut rng, false);
        check_proofs::<BabyBear, BinomialExtensionField<BabyBear, 4>>(&ctx, &mut rng, false);
    }
}

/// The GPU PCS with width-24 leaves (`GpuProver::pcs_hashing_leaves`) over KoalaBear^8, two
/// tables in the suffix layout, drawn points: the same proof as p3-whir's benchmark prover, which
/// verifies it.
#[test]
fn the_gpu_pcs_with_wide_leaves_matches_p3_whirs_benchmark_prover() {
    use p3_challenger::CanObserve;
    use p3_commit::MultilinearPcs;
    use p3_field::extension::BinomialExtensionField;
    use p3_field::PrimeCharacteristicRing;
    use p3_sumcheck::layout::{Layout, SuffixProver, Table};
    use whir_wgpu::gpu::GpuChallenger;
    use whir_wgpu::prover::GpuProver;
    type E = BinomialExtensionField<KoalaBear, 8>;
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let fold = rng.random_range(1..=3);
        let tables = [(rng.random_range(5..=8), 2), (rng.random_range(3..=6), 1)];
        let (protocol, p) = common::table_protocol(&tables, &[(0, vec![0, 1], vec![1]), (1, vec![0], vec![0])], fold);
        let config = p.config_over::<E, GpuChallenger<KoalaBear>>().unwrap();
        let values: Vec<Table<KoalaBear>> = tables.iter().map(|&(v, w)| Table::new(RowMajorMatrix::new(random(&mut rng, w << v), 1 << v))).collect();
        let gpu =
            GpuProver::<KoalaBear>::over(ctx.clone()).pcs_hashing_leaves::<SuffixProver<KoalaBear, E>, E, _>(config.clone(), LeafSponge::Width24).unwrap();
        let mmcs = Plonky3Mmcs::<KoalaBear>::new(
            PaddingFreeSponge::new(Poseidon2Constants::<KoalaBear, 24>::plonky3_default().to_cpu()),
            TruncatedPermutation::new(Poseidon2Constants::<KoalaBear>::plonky3_default().to_cpu()),
            0,
        );
        let stock = BenchProver::<KoalaBear, E>::new(config, Radix2DFTSmallBatch::default(), mmcs);
        let challenger = || {
            let mut ch = GpuChallenger::<KoalaBear>::new(Poseidon2Constants::<KoalaBear>::plonky3_default().to_cpu(), None);
            ch.observe(KoalaBear::ONE);
            ch
        };
        let mut ch = challenger();
        let (root, data) = gpu.commit(SuffixProver::<KoalaBear, E>::new_witness(values.clone(), fold), &mut ch).unwrap();
        let ours = gpu.open(data, protocol.clone(), &mut ch).unwrap();
        let mut ch = challenger();
        let (stock_root, data) = stock.commit(SuffixProver::<KoalaBear, E>::new_witness(values, fold), &mut ch).unwrap();
        let theirs = stock.open(data, protocol.clone(), &mut ch).unwrap();
        assert!(root == stock_root, "{p:?} ({:?}): commitments differ", ctx.mul_variant());
        assert!(postcard::to_allocvec(&ours).unwrap() == postcard::to_allocvec(&theirs).unwrap(), "{p:?} ({:?}): the GPU PCS proof differs", ctx.mul_variant());
        let ours: p3_whir::PcsProof<KoalaBear, E, Plonky3Mmcs<KoalaBear>> = postcard::from_bytes(&postcard::to_allocvec(&ours).unwrap()).unwrap();
        stock.verify(&root, &ours, &mut challenger(), protocol).expect("p3-whir's verifier accepts the GPU PCS proof");
    }
}
