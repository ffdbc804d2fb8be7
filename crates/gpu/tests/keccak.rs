//! GPU Keccak against Plonky3's: `KeccakF` on fresh random states, the Keccak leaf hash
//! (`SerializingHasher<PaddingFreeSponge<KeccakF, 25, 17, 4>>`) on rows of every width around
//! the sponge's rate, and whole trees against `MerkleTreeMmcs` over that hash and its
//! compression, BabyBear and KoalaBear, both lane builds (`vec2<u32>`, the default, and native
//! `u64` on a u64-multiply context with `GpuTuning::keccak_u64_lanes`).

#[path = "../../../tests/common/gpu.rs"]
mod common;

use p3_baby_bear::BabyBear;
use p3_commit::Mmcs;
use p3_keccak::KeccakF;
use p3_koala_bear::KoalaBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_merkle_tree::MerkleTreeMmcs;
use p3_symmetric::{CompressionFunctionFromHasher, CryptographicHasher, PaddingFreeSponge, Permutation, SerializingHasher};
use rand::distr::{Distribution, StandardUniform};
use rand::RngExt;
use whir_gpu::field::GpuField;
use whir_gpu::GpuKeccak;

type U64Sponge = PaddingFreeSponge<KeccakF, 25, 17, 4>;
type LeafHash = SerializingHasher<U64Sponge>;
type NodeCompress = CompressionFunctionFromHasher<U64Sponge, 2, 4>;
/// p3-whir's Keccak test configuration's MMCS.
type KeccakMmcs<F> = MerkleTreeMmcs<F, u64, LeafHash, NodeCompress, 2, 4>;

/// The shared contexts ([`common::contexts`]: `vec2<u32>` lanes, the default) and, where the
/// adapter has the u64 multiply, one whose Keccak kernels hold native `u64` lanes
/// (`GpuTuning::keccak_u64_lanes`), so both lane builds run.
fn lane_contexts() -> Vec<std::sync::Arc<whir_gpu::GpuContext>> {
    let mut contexts = common::contexts();
    if contexts.iter().any(|c| c.mul_variant() == whir_gpu::MulVariant::U64) {
        let mut options = common::options_for(whir_gpu::MulVariant::U64);
        options.tuning.keccak_u64_lanes = true;
        contexts.extend(common::open_with(options));
    }
    contexts
}

fn keccak_mmcs<F>() -> KeccakMmcs<F> {
    let sponge = U64Sponge::new(KeccakF);
    KeccakMmcs::new(LeafHash::new(sponge), NodeCompress::new(sponge), 0)
}

#[test]
fn keccak_f_matches_plonky3_on_random_states() {
    let mut rng = common::rng();
    for ctx in lane_contexts() {
        let keccak = GpuKeccak::new(ctx.clone());
        let mut states: Vec<[u64; 25]> = (0..300).map(|_| std::array::from_fn(|_| rng.random())).collect();
        states.push([0; 25]);
        states.push([u64::MAX; 25]);
        let got = keccak.permute_many(&states).unwrap();
        for (i, (state, out)) in states.iter().zip(&got).enumerate() {
            assert_eq!(*out, KeccakF.permute(*state), "state {i} ({:?})", ctx.mul_variant());
        }
        assert!(keccak.permute_many(&[]).unwrap().is_empty());
    }
}

fn check_rows<F: whir_gpu::Poseidon2Field>(keccak: &GpuKeccak, rng: &mut rand::rngs::StdRng)
where
    StandardUniform: Distribution<F>,
{
    let hash = LeafHash::new(U64Sponge::new(KeccakF));
    // Around one and two blocks of 17 lanes (34 and 68 elements), an odd last lane, a lone element.
    for width in [1, 2, 3, 7, 16, 32, 33, 34, 35, 36, 67, 68, 69, 70, 101] {
        let rows = 1 + rng.random_range(0..70usize);
        let values: Vec<F> = (0..rows * width).map(|_| rng.random()).collect();
        let got = keccak.hash_rows(&values, width).unwrap();
        assert_eq!(got.len(), rows);
        for (r, digest) in got.iter().enumerate() {
            let want: [u64; 4] = hash.hash_iter(values[r * width..(r + 1) * width].iter().copied());
            assert_eq!(*digest, want, "width {width}, row {r} of {rows} ({:?})", keccak.context().mul_variant());
        }
    }
}

#[test]
fn keccak_leaf_digests_match_plonky3_at_widths_around_the_rate() {
    let mut rng = common::rng();
    for ctx in lane_contexts() {
        let keccak = GpuKeccak::new(ctx);
        check_rows::<BabyBear>(&keccak, &mut rng);
        check_rows::<KoalaBear>(&keccak, &mut rng);
        assert!(keccak.hash_rows::<BabyBear>(&[], 4).unwrap().is_empty());
        let e = keccak.hash_rows(&[BabyBear::default(); 5], 2).unwrap_err().to_string();
        assert!(e.contains("not whole rows of 2"), "{e}");
        let e = keccak.hash_rows(&[BabyBear::default(); 4], 0).unwrap_err().to_string();
        assert!(e.contains("width 0"), "{e}");
    }
}

fn check_tree<F: whir_gpu::Poseidon2Field + Send + Sync + Clone>(keccak: &GpuKeccak, rng: &mut rand::rngs::StdRng, height: usize, width: usize)
where
    StandardUniform: Distribution<F>,
    KeccakMmcs<F>: Mmcs<F, Commitment = p3_merkle_tree::MerkleCap<F, [u64; 4]>>,
{
    let values: Vec<F> = (0..height * width).map(|_| rng.random()).collect();
    let matrix = RowMajorMatrix::new(values, width);
    let layers = keccak.digest_layers(&matrix).unwrap();
    let (cap, _) = keccak_mmcs::<F>().commit(vec![matrix]);
    let root = layers.last().expect("a root layer");
    assert_eq!(root.len(), 1, "height {height}");
    assert_eq!(cap.roots(), &root[..], "height {height}, width {width} ({:?})", keccak.context().mul_variant());
}

#[test]
fn keccak_trees_match_merkle_tree_mmcs() {
    let mut rng = common::rng();
    for ctx in lane_contexts() {
        let keccak = GpuKeccak::new(ctx);
        // Powers of two, odd heights (padded layers), one row; widths below and past a block.
        for (height, width) in [(1, 8), (2, 16), (3, 5), (64, 16), (100, 16), (257, 40), (1 << 12, 16), (1000, 3)] {
            check_tree::<BabyBear>(&keccak, &mut rng, height, width);
            check_tree::<KoalaBear>(&keccak, &mut rng, height, width);
        }
        let empty = RowMajorMatrix::new(Vec::<BabyBear>::new(), 4);
        let e = keccak.digest_layers(&empty).unwrap_err().to_string();
        assert!(e.contains("no rows"), "{e}");
    }
}

/// A matrix larger than one binding is hashed in row chunks (the strict profile's bindings
/// shrunk to 128 KiB: 4096 rows of 16 elements are 256 KiB), and a digest layer past one
/// binding is built range by range.
#[test]
fn keccak_trees_of_matrices_past_one_binding() {
    use whir_gpu::{GpuOptions, LimitsProfile};
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(128 << 10) }), ..Default::default() }) else {
        return;
    };
    let keccak = GpuKeccak::new(ctx);
    let mut rng = common::rng();
    check_tree::<BabyBear>(&keccak, &mut rng, 4096, 16);
    check_tree::<KoalaBear>(&keccak, &mut rng, 3000, 24);
    // A leaf layer past one binding (8192 digests of 32 bytes): its levels in ranges.
    check_tree::<BabyBear>(&keccak, &mut rng, 8192, 1);
}

type PlonkyKeccakChallenger<F> = p3_challenger::SerializingChallenger32<F, p3_challenger::HashChallenger<u8, p3_keccak::Keccak256Hash, 32>>;
type GpuKeccakChallenger<F> = p3_challenger::SerializingChallenger32<F, whir_gpu::GpuKeccakHash<F>>;

/// The smallest witness Plonky3's challenger accepts for `bits`, by trying each in turn.
fn smallest_witness<F: GpuField>(challenger: &PlonkyKeccakChallenger<F>, bits: usize) -> F {
    use p3_challenger::GrindingChallenger;
    (0u32..).map(F::from_u32).find(|&w| challenger.clone().check_witness(bits, w)).expect("a passing witness")
}

/// Plonky3's Keccak transcript and ours (`SerializingChallenger32` over `GpuKeccakHash`) through
/// the same random observations, samples and grinds: every sample equal, every grind the smallest
/// passing witness (found on the GPU), which Plonky3's challenger accepts.
fn check_transcript<F: GpuField>(gpu: Option<&GpuKeccak>, rng: &mut rand::rngs::StdRng)
where
    StandardUniform: Distribution<F>,
{
    use p3_challenger::{CanObserve, CanSample, CanSampleBits, GrindingChallenger};
    use p3_field::extension::BinomialExtensionField;
    let mut plonky = PlonkyKeccakChallenger::<F>::from_hasher(vec![], p3_keccak::Keccak256Hash);
    let mut ours = GpuKeccakChallenger::<F>::new(whir_gpu::GpuKeccakHash::new(vec![], gpu.cloned()));
    for step in 0..40 {
        match rng.random_range(0..5) {
            0 => {
                let values: Vec<F> = (0..rng.random_range(1..40)).map(|_| rng.random()).collect();
                plonky.observe_slice(&values);
                ours.observe_slice(&values);
            }
            1 => {
                let digest: [u64; 4] = std::array::from_fn(|_| rng.random::<u64>());
                let cap = p3_merkle_tree::MerkleCap::<F, [u64; 4]>::from(vec![digest]);
                plonky.observe(&cap);
                ours.observe(&cap);
            }
            2 => {
                let (a, b): (BinomialExtensionField<F, 4>, BinomialExtensionField<F, 4>) = (plonky.sample(), ours.sample());
                assert_eq!(a, b, "step {step}: extension samples");
            }
            3 => {
                let bits = rng.random_range(1..20);
                assert_eq!(plonky.sample_bits(bits), ours.sample_bits(bits), "step {step}: {bits} bits");
            }
            _ => {
                let bits = rng.random_range(1..11);
                let want = smallest_witness(&plonky, bits);
                let submissions = gpu.map(|g| g.context().transfers().transfer_counts().submissions);
                let got = ours.grind(bits);
                if let (Some(g), Some(before)) = (gpu, submissions) {
                    assert!(g.context().transfers().transfer_counts().submissions > before, "step {step}: the grind did not run on the GPU");
                }
                assert_eq!(got, want, "step {step}: the grind of {bits} bits ({})", if gpu.is_some() { "GPU" } else { "host" });
                assert!(plonky.check_witness(bits, got), "step {step}: Plonky3 refuses the witness");
            }
        }
    }
    let (a, b): (F, F) = (plonky.sample(), ours.sample());
    assert_eq!(a, b, "the transcripts end apart");
}

#[test]
fn the_keccak_transcript_matches_plonky3_and_grinds_on_the_gpu() {
    let mut rng = common::rng();
    // Contexts of this test's own: their submissions show each grind ran on the GPU (both lane
    // builds where the adapter has the u64 multiply).
    let mut contexts = common::fresh_contexts();
    if contexts.iter().any(|c| c.mul_variant() == whir_gpu::MulVariant::U64) {
        let mut options = common::options_for(whir_gpu::MulVariant::U64);
        options.tuning.keccak_u64_lanes = true;
        contexts.extend(common::open_with(options));
    }
    for ctx in contexts {
        let keccak = GpuKeccak::new(ctx);
        check_transcript::<BabyBear>(Some(&keccak), &mut rng);
        check_transcript::<KoalaBear>(Some(&keccak), &mut rng);
        // A grind of 18 bits: several ranges' worth of candidates on the GPU.
        let mut prefix = [0u8; 32];
        rng.fill(&mut prefix[..]);
        let found = keccak.grind_serializing::<BabyBear>(&prefix, 18).unwrap().expect("a witness");
        let mut probe = p3_challenger::HashChallenger::<u8, p3_keccak::Keccak256Hash, 32>::new(prefix.to_vec(), p3_keccak::Keccak256Hash);
        use p3_challenger::{CanObserve, CanSample};
        probe.observe_slice(&p3_field::PrimeField32::to_unique_u32(&<BabyBear as p3_field::PrimeCharacteristicRing>::from_u32(found)).to_le_bytes());
        let sampled: [u8; 4] = probe.sample_array();
        assert_eq!(u32::from_le_bytes(sampled) & ((1 << 18) - 1), 0, "the 18-bit witness {found} fails");
        let e = keccak.grind_serializing::<BabyBear>(&prefix, 31).unwrap_err().to_string();
        assert!(e.contains("31 bits"), "{e}");
    }
    // Without a GPU, Plonky3's own search answers (its witness accepted, not necessarily the smallest).
    let mut plonky = PlonkyKeccakChallenger::<BabyBear>::from_hasher(vec![7], p3_keccak::Keccak256Hash);
    let mut ours = GpuKeccakChallenger::<BabyBear>::new(whir_gpu::GpuKeccakHash::new(vec![7], None));
    use p3_challenger::GrindingChallenger;
    let w = ours.grind(12);
    assert!(plonky.check_witness(12, w), "the host's witness");
}

/// `GpuKeccakMmcs` against Plonky3's Keccak MMCS over the same batches: one matrix and several
/// of every height on the ladder (powers of two and not), widths across a block, caps of every
/// height up to past the tree's depth: equal commitments, openings and pruned multi-proofs, each
/// verified by Plonky3's MMCS; a batch off the ladder gets Plonky3's error.
#[test]
fn keccak_mmcs_matches_merkle_tree_mmcs() {
    use p3_commit::BatchOpeningRef;
    use whir_gpu::GpuKeccakMmcs;
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        let keccak = GpuKeccak::new(ctx.clone());
        let mut checked = 0;
        let batches: &[&[(usize, usize)]] =
            &[&[(64, 16)], &[(100, 7), (50, 3), (13, 40)], &[(256, 2), (256, 35), (128, 1), (16, 9), (1, 4)], &[(5, 3), (3, 2), (2, 1), (1, 1)], &[(1, 3)]];
        for (b, shapes) in batches.iter().enumerate() {
            for cap_height in [0usize, 1, 3, 20] {
                let matrices: Vec<RowMajorMatrix<BabyBear>> =
                    shapes.iter().map(|&(h, w)| RowMajorMatrix::new((0..h * w).map(|_| rng.random()).collect(), w)).collect();
                let max_height = shapes.iter().map(|s| s.0).max().unwrap();
                let gpu = GpuKeccakMmcs::<BabyBear>::new(Some(keccak.clone()), cap_height);
                let before = ctx.transfers().transfer_counts().submissions;
                let committed = gpu.try_commit(matrices.clone());
                let (cap, data) = match committed {
                    Ok(c) => c,
                    Err(e) => {
                        // Plonky3 refuses the same cap (a non-power-of-two number of roots).
                        assert!(e.to_string().contains("power-of-two"), "batch {b}, cap {cap_height}: {e}");
                        continue;
                    }
                };
                assert!(matches!(data, whir_gpu::GpuKeccakProverData::Gpu { .. }), "batch {b}: committed on the CPU");
                assert!(ctx.transfers().transfer_counts().submissions > before);
                let (want, cpu_data) = gpu.cpu().commit(matrices.clone());
                assert_eq!(cap, want, "batch {b} {shapes:?}, cap height {cap_height}");
                let dims: Vec<p3_matrix::Dimensions> = matrices.iter().map(p3_matrix::Matrix::dimensions).collect();
                for _ in 0..3 {
                    let index = rng.random_range(0..max_height);
                    let opening = gpu.open_batch(index, &data);
                    let stock = gpu.cpu().open_batch(index, &cpu_data);
                    assert_eq!(opening.opened_values, stock.opened_values, "batch {b}, index {index}");
                    assert_eq!(opening.opening_proof, stock.opening_proof, "batch {b}, index {index}: path");
                    gpu.verify_batch(&cap, &dims, index, BatchOpeningRef::new(&opening.opened_values, &opening.opening_proof)).unwrap();
                }
                let indices: Vec<usize> = (0..5).map(|_| rng.random_range(0..max_height)).collect();
                let (values, proof) = gpu.open_multi_batch(&indices, &data);
                let (stock_values, stock_proof) = gpu.cpu().open_multi_batch(&indices, &cpu_data);
                assert_eq!(values, stock_values, "batch {b}: multi-opening rows");
                assert_eq!(proof.sibling_hashes, stock_proof.sibling_hashes, "batch {b}: pruned paths");
                gpu.verify_multi_batch(&cap, &dims, &indices, &values, &proof).unwrap();
                checked += 1;
            }
        }
        assert!(checked >= 16, "only {checked} of 20 batch and cap pairs committed");
        // Off Plonky3's ladder: its error, no panic.
        let gpu = GpuKeccakMmcs::<KoalaBear>::new(Some(keccak.clone()), 0);
        let off = vec![RowMajorMatrix::new(vec![KoalaBear::default(); 64], 1), RowMajorMatrix::new(vec![KoalaBear::default(); 20], 1)];
        let e = gpu.try_commit(off).err().expect("a height off the ladder").to_string();
        assert!(e.contains("20"), "{e}");
        // KoalaBear, two heights.
        let matrices = vec![
            RowMajorMatrix::new((0..96 * 5).map(|_| rng.random::<KoalaBear>()).collect(), 5),
            RowMajorMatrix::new((0..48 * 3).map(|_| rng.random::<KoalaBear>()).collect(), 3),
        ];
        assert_eq!(gpu.commit(matrices.clone()).0, gpu.cpu().commit(matrices).0, "KoalaBear, two heights");
    }
    // Without a GPU, Plonky3's MMCS commits.
    let mut rng = common::rng();
    let cpu_only = whir_gpu::GpuKeccakMmcs::<BabyBear>::new(None, 1);
    let m = RowMajorMatrix::new((0..32 * 4).map(|_| rng.random::<BabyBear>()).collect(), 4);
    assert_eq!(cpu_only.commit(vec![m.clone()]).0, cpu_only.cpu().commit(vec![m]).0);
}

/// Keccak-256 of byte messages against Plonky3's `Keccak256Hash` at every length around the
/// rate's boundaries (136 bytes) and the empty message, both lane builds.
#[test]
fn keccak256_matches_plonky3_around_the_rate() {
    let mut rng = common::rng();
    for ctx in lane_contexts() {
        let keccak = GpuKeccak::new(ctx.clone());
        for len in [0usize, 1, 3, 4, 5, 31, 32, 36, 135, 136, 137, 200, 271, 272, 273, 1000] {
            let messages: Vec<Vec<u8>> = (0..1 + rng.random_range(0..40usize)).map(|_| (0..len).map(|_| rng.random()).collect()).collect();
            let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            let got = keccak.keccak256_many(&refs).unwrap();
            for (m, (message, digest)) in messages.iter().zip(&got).enumerate() {
                assert_eq!(*digest, p3_keccak::Keccak256Hash.hash_iter(message.iter().copied()), "{len} bytes, message {m} ({:?})", ctx.mul_variant());
            }
        }
        assert!(keccak.keccak256_many(&[]).unwrap().is_empty());
        let e = keccak.keccak256_many(&[&[1, 2][..], &[3][..]]).unwrap_err().to_string();
        assert!(e.contains("one length"), "{e}");
    }
}

/// The resident Merkle builder with Keccak hashing (`GpuMerkle::with_keccak`) against
/// Plonky3's Keccak MMCS: every way a tree over one matrix is recorded — leaves kept, dropped
/// (rehashed for openings), layers kept only from 2 or 3 up (openings rebuild subtrees), rows
/// bit-reversed in the buffer, a matrix past one binding in row chunks, wide rows' leaves in
/// chunks — has Plonky3's root, and its openings Plonky3's rows and pruned multi-proof.
#[test]
fn gpu_merkle_with_keccak_matches_merkle_tree_mmcs() {
    use std::sync::Arc;
    use whir_gpu::record::{RowOrder, RowSource, TreeRows, TreeSpec};
    use whir_gpu::{GpuMerkle, GpuOptions, GpuPoseidon2, LimitsProfile, Poseidon2Constants, TreeHash};
    let mut rng = common::rng();
    let mut contexts = lane_contexts();
    // A 64 KiB binding: larger matrices go in row chunks.
    contexts.extend(common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }));
    for ctx in contexts {
        let merkle =
            GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()))).with_keccak().with_chunked_leaves_from(64);
        let poseidon2_merkle = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear())));
        assert_eq!(merkle.tree_hash(), TreeHash::Keccak);
        let small_binding = ctx.max_binding_bytes() < 1 << 20;
        for &(log_h, width) in &[(0, 1), (1, 3), (3, 16), (6, 7), (8, 34), (9, 35), (7, 2), (10, 70), (12, 9)] {
            let h = 1usize << log_h;
            let values: Vec<BabyBear> = (0..h * width).map(|_| rng.random()).collect();
            let cpu = keccak_mmcs::<BabyBear>();
            let (root, data) = cpu.commit_matrix(RowMajorMatrix::new(values.clone(), width));
            // Physical row p holds the tree's row bitrev(p).
            let reversed: Vec<BabyBear> =
                (0..h).map(|p| RowOrder::BitReversed.physical(p, h)).flat_map(|i| values[i * width..(i + 1) * width].to_vec()).collect();
            let natural = ctx.transfers().upload("matrix", whir_gpu::field::as_words(&values));
            let bit_reversed = ctx.transfers().upload("matrix", whir_gpu::field::as_words(&reversed));
            let mut indices: Vec<usize> = (0..rng.random_range(1..30)).map(|_| rng.random_range(0..h)).collect();
            indices.extend([0, h - 1, indices[0]]);
            let (want_rows, want_proof) = cpu.open_multi_batch(&indices, &data);
            for lowest in [0, 1, 2, 3].into_iter().filter(|&k| k <= log_h.max(1)) {
                for order in [RowOrder::Natural, RowOrder::BitReversed] {
                    let what =
                        format!("2^{log_h} x {width} keeping layers from {lowest}, rows {order:?} ({:?}, small binding {small_binding})", ctx.mul_variant());
                    let matrix = if order == RowOrder::Natural { &natural } else { &bit_reversed };
                    let spec = TreeSpec::new(h, width).keeping_from(lowest).with_order(order);
                    let tree = match merkle.commit(TreeRows::Matrix(matrix), spec) {
                        Ok(tree) => tree,
                        // Row chunks take rows in order.
                        Err(e) if small_binding && order == RowOrder::BitReversed && e.to_string().contains("in order") => continue,
                        Err(e) => panic!("{what}: {e}"),
                    };
                    assert_eq!(tree.root_digest::<[u64; 4]>().unwrap(), root.roots()[0], "{what}: root");
                    assert!(tree.root().is_err(), "{what}: a Keccak root read as field elements");
                    let opened = {
                        let mut batch = ctx.batch("keccak openings");
                        let slot = merkle.record_openings(&mut batch, &tree, RowSource::One(matrix), &indices, 0).unwrap().read(&mut batch);
                        slot.finish_digests::<BabyBear, [u64; 4]>(&ctx.run(batch).unwrap()).unwrap()
                    };
                    let rows: Vec<Vec<BabyBear>> = want_rows.iter().map(|r| r[0].clone()).collect();
                    assert_eq!(opened.rows, rows, "{what}: rows");
                    assert_eq!(opened.siblings, want_proof.sibling_hashes, "{what}: pruned paths");
                    // Read as Poseidon2 digests, or opened by a Poseidon2 builder: refused.
                    let e = merkle.read_nodes(&tree, &[(0, 0)]).unwrap_err().to_string();
                    assert!(e.contains("KeccakDigest"), "{what}: {e}");
                    let mut batch = ctx.batch("mismatched opening");
                    let e = poseidon2_merkle.record_openings(&mut batch, &tree, RowSource::One(matrix), &indices, 0).err().expect("refused").to_string();
                    assert!(e.contains("open it with the builder that built it"), "{what}: {e}");
                }
            }
        }
    }
}
