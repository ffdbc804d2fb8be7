//! GPU Poseidon2 and Merkle roots against Plonky3: the permutation over BabyBear and KoalaBear
//! built three ways (default constants, explicit constants, seeded RNG as `new_from_rng_128`), leaf hashing and trees
//! against `MerkleTreeMmcs`, both multiply variants, fresh random inputs.

#[path = "../../../tests/common/gpu.rs"]
mod common;

use std::sync::Arc;

use p3_baby_bear::{default_babybear_poseidon2_16, BabyBear, Poseidon2BabyBear};
use p3_commit::Mmcs;
use p3_field::Field;
use p3_field::PrimeCharacteristicRing;
use p3_koala_bear::{default_koalabear_poseidon2_16, KoalaBear, Poseidon2KoalaBear};
use p3_matrix::dense::RowMajorMatrix;
use p3_merkle_tree::MerkleTreeMmcs;
use p3_poseidon2::ExternalLayerConstants;
use p3_symmetric::{PaddingFreeSponge, Permutation, TruncatedPermutation};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_gpu::{record::NttSource, record::RowSource, record::TreeRows, record::TreeSpec, GpuMerkle, GpuPoseidon2, Poseidon2Constants};

type Perm = Poseidon2BabyBear<16>;
type Hash = PaddingFreeSponge<Perm, 16, 8, 8>;
type Compress = TruncatedPermutation<Perm, 2, 8, 16>;
type Packed = <BabyBear as Field>::Packing;
type CpuMmcs = MerkleTreeMmcs<Packed, Packed, Hash, Compress, 2, 8>;

fn random_states(rng: &mut StdRng, n: usize) -> Vec<[BabyBear; 16]> {
    (0..n).map(|_| rng.random()).collect()
}

fn check_permutation(gpu: &GpuPoseidon2, cpu: &Perm, rng: &mut StdRng, what: &str) {
    let mut states = random_states(rng, 1000);
    states.push([BabyBear::default(); 16]);
    let got = gpu.permute_batch(&states).unwrap();
    for (i, (s, g)) in states.iter().zip(&got).enumerate() {
        assert_eq!(*g, cpu.permute(*s), "{what}: state {i} ({:?})", gpu.context().mul_variant());
    }
}

/// More states than one binding holds (here a 64 KiB binding, the strict profile's smaller
/// variant) are permuted range by range: the same states as Plonky3's.
#[test]
fn batches_over_the_binding_limit_are_permuted_in_ranges() {
    use whir_gpu::{GpuOptions, LimitsProfile};
    let mut rng = common::rng();
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) else {
        return;
    };
    let constants = Poseidon2Constants::default_babybear();
    let cpu = constants.to_cpu();
    let gpu = GpuPoseidon2::new(ctx, constants);
    for n in [1024usize, 1025, 3000, 4099] {
        let states = random_states(&mut rng, n);
        let got = gpu.permute_batch(&states).unwrap();
        for (i, (s, g)) in states.iter().zip(&got).enumerate() {
            assert_eq!(*g, cpu.permute(*s), "state {i} of {n}");
        }
    }
}

#[test]
fn permutation_matches_plonky3_for_every_constructor() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let default = GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear());
        check_permutation(&default, &default_babybear_poseidon2_16(), &mut rng, "default constants");

        let seed: u64 = rng.random();
        let cpu = Perm::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
        let gpu = GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::new_from_rng_128(&mut StdRng::seed_from_u64(seed)));
        check_permutation(&gpu, &cpu, &mut rng, "new_from_rng_128");

        let initial: Vec<[BabyBear; 16]> = random_states(&mut rng, 4);
        let terminal: Vec<[BabyBear; 16]> = random_states(&mut rng, 4);
        let internal: Vec<BabyBear> = (0..13).map(|_| rng.random()).collect();
        let cpu = Perm::new(ExternalLayerConstants::new(initial.clone(), terminal.clone()), internal.clone());
        let constants = Poseidon2Constants::new(ExternalLayerConstants::new(initial, terminal), internal).unwrap();
        assert_eq!(constants.to_cpu().permute([BabyBear::default(); 16]), cpu.permute([BabyBear::default(); 16]));
        check_permutation(&GpuPoseidon2::new(ctx.clone(), constants), &cpu, &mut rng, "explicit constants");
    }
}

/// KoalaBear's width-16 Poseidon2 (x^3, 20 internal rounds, its own internal layer) against
/// `Poseidon2KoalaBear<16>`, built the same three ways.
#[test]
fn koalabear_permutation_matches_plonky3_for_every_constructor() {
    type KbPerm = Poseidon2KoalaBear<16>;
    let mut rng = common::rng();
    let check = |gpu: &GpuPoseidon2<KoalaBear>, cpu: &KbPerm, rng: &mut StdRng, what: &str| {
        let mut states: Vec<[KoalaBear; 16]> = (0..1000).map(|_| rng.random()).collect();
        states.push([KoalaBear::default(); 16]);
        states.push([KoalaBear::NEG_ONE; 16]);
        let got = gpu.permute_batch(&states).unwrap();
        for (i, (s, g)) in states.iter().zip(&got).enumerate() {
            assert_eq!(*g, cpu.permute(*s), "KoalaBear {what}: state {i} ({:?})", gpu.context().mul_variant());
        }
    };
    for ctx in common::contexts() {
        let default = GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<KoalaBear>::plonky3_default());
        check(&default, &default_koalabear_poseidon2_16(), &mut rng, "default constants");

        let seed: u64 = rng.random();
        let cpu = KbPerm::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
        let gpu = GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<KoalaBear>::new_from_rng_128(&mut StdRng::seed_from_u64(seed)));
        check(&gpu, &cpu, &mut rng, "new_from_rng_128");

        let initial: Vec<[KoalaBear; 16]> = (0..4).map(|_| rng.random()).collect();
        let terminal: Vec<[KoalaBear; 16]> = (0..4).map(|_| rng.random()).collect();
        let internal: Vec<KoalaBear> = (0..20).map(|_| rng.random()).collect();
        let cpu = KbPerm::new(ExternalLayerConstants::new(initial.clone(), terminal.clone()), internal.clone());
        let constants = Poseidon2Constants::new(ExternalLayerConstants::new(initial, terminal), internal).unwrap();
        check(&GpuPoseidon2::new(ctx.clone(), constants), &cpu, &mut rng, "explicit constants");
    }
    // KoalaBear's kernel runs 20 internal rounds; BabyBear's 13 are refused for it.
    let err = Poseidon2Constants::<KoalaBear>::new(
        ExternalLayerConstants::new(vec![[KoalaBear::default(); 16]; 4], vec![[KoalaBear::default(); 16]; 4]),
        vec![KoalaBear::default(); 13],
    )
    .unwrap_err();
    assert!(err.to_string().contains("over KoalaBear runs 4 + 20 + 4 rounds"), "{err}");
}

/// Width 24 over both fields (BabyBear x^7 with 21 internal rounds, KoalaBear x^3 with 23) against
/// Plonky3's `Poseidon2BabyBear<24>` / `Poseidon2KoalaBear<24>`: default, seeded and explicit
/// constants, and batches split over a 64 KiB binding (offsets of 8 states of 96 bytes).
#[test]
fn width_24_matches_plonky3_over_both_fields() {
    use p3_baby_bear::default_babybear_poseidon2_24;
    use p3_koala_bear::default_koalabear_poseidon2_24;
    use whir_gpu::{plumbing::Poseidon2Width, GpuOptions, LimitsProfile};

    fn check<F>(gpu: &GpuPoseidon2<F, 24>, cpu: &<F as Poseidon2Width<24>>::Permutation, rng: &mut StdRng, count: usize, what: &str)
    where
        F: Poseidon2Width<24>,
        rand::distr::StandardUniform: rand::distr::Distribution<F>,
    {
        let mut states: Vec<[F; 24]> = (0..count).map(|_| std::array::from_fn(|_| rng.random())).collect();
        states.push([F::ZERO; 24]);
        states.push([F::NEG_ONE; 24]);
        let got = gpu.permute_batch(&states).unwrap();
        for (i, (s, g)) in states.iter().zip(&got).enumerate() {
            assert_eq!(*g, cpu.permute(*s), "{} width 24 {what}: state {i} ({:?})", F::ID.name(), gpu.context().mul_variant());
        }
    }

    fn every_constructor<F>(ctx: &Arc<whir_gpu::GpuContext>, default_cpu: <F as Poseidon2Width<24>>::Permutation, rng: &mut StdRng)
    where
        F: Poseidon2Width<24>,
        rand::distr::StandardUniform: rand::distr::Distribution<F>,
    {
        let default = GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<F, 24>::plonky3_default());
        check(&default, &default_cpu, rng, 500, "default constants");
        let seed = rng.random::<u64>();
        let seeded = Poseidon2Constants::<F, 24>::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
        check(&GpuPoseidon2::new(ctx.clone(), seeded.clone()), &seeded.to_cpu(), rng, 500, "new_from_rng_128");
        let initial: Vec<[F; 24]> = (0..4).map(|_| std::array::from_fn(|_| rng.random())).collect();
        let terminal: Vec<[F; 24]> = (0..4).map(|_| std::array::from_fn(|_| rng.random())).collect();
        let internal: Vec<F> = (0..<F as Poseidon2Width<24>>::PARTIAL_ROUNDS).map(|_| rng.random()).collect();
        let cpu = <F as Poseidon2Width<24>>::permutation(ExternalLayerConstants::new(initial.clone(), terminal.clone()), internal.clone());
        let explicit = Poseidon2Constants::new(ExternalLayerConstants::new(initial, terminal), internal).unwrap();
        check(&GpuPoseidon2::new(ctx.clone(), explicit), &cpu, rng, 500, "explicit constants");
    }

    let mut rng = common::rng();
    for ctx in common::contexts() {
        every_constructor::<BabyBear>(&ctx, default_babybear_poseidon2_24(), &mut rng);
        every_constructor::<KoalaBear>(&ctx, default_koalabear_poseidon2_24(), &mut rng);
    }
    // Plonky3's seeded constants are the same on both sides (the GPU's from its own draw).
    let seed: u64 = rng.random();
    let ours = Poseidon2Constants::<KoalaBear, 24>::new_from_rng_128(&mut StdRng::seed_from_u64(seed)).to_cpu();
    let theirs = Poseidon2KoalaBear::<24>::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
    assert_eq!(ours.permute([KoalaBear::ONE; 24]), theirs.permute([KoalaBear::ONE; 24]));

    if let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) {
        let constants = Poseidon2Constants::<KoalaBear, 24>::plonky3_default();
        let (cpu, gpu) = (constants.to_cpu(), GpuPoseidon2::new(ctx.clone(), constants));
        let constants = Poseidon2Constants::<BabyBear, 24>::plonky3_default();
        let (bb_cpu, bb_gpu) = (constants.to_cpu(), GpuPoseidon2::new(ctx, constants));
        for n in [680usize, 683, 1500, 2049] {
            check(&gpu, &cpu, &mut rng, n, &format!("{n} states over 64 KiB bindings"));
            check(&bb_gpu, &bb_cpu, &mut rng, n, &format!("{n} states over 64 KiB bindings"));
        }
    }
    let err = Poseidon2Constants::<BabyBear, 24>::new(
        ExternalLayerConstants::new(vec![[BabyBear::default(); 24]; 4], vec![[BabyBear::default(); 24]; 4]),
        vec![BabyBear::default(); 13],
    )
    .unwrap_err();
    assert!(err.to_string().contains("width 24 over BabyBear runs 4 + 21 + 4 rounds"), "{err}");
}

#[test]
fn wrong_round_counts_are_errors() {
    let err = Poseidon2Constants::new(
        ExternalLayerConstants::new(vec![[BabyBear::default(); 16]; 3], vec![[BabyBear::default(); 16]; 3]),
        vec![BabyBear::default(); 13],
    )
    .unwrap_err();
    assert!(err.to_string().contains("4 + 13 + 4 rounds"), "{err}");
}

#[test]
fn merkle_roots_match_merkle_tree_mmcs() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let seed: u64 = rng.random();
        let constants = Poseidon2Constants::<BabyBear>::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
        let perm = constants.to_cpu();
        let cpu = CpuMmcs::new(Hash::new(perm.clone()), Compress::new(perm), 0);
        let gpu = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), constants)));
        for log_h in [0usize, 1, 2, 5, 8, 11] {
            for width in [1usize, 3, 7, 8, 9, 16, 17, 64] {
                let values = common::random_vec(&mut rng, (1 << log_h) * width);
                let m = RowMajorMatrix::new(values, width);
                let (root, _) = cpu.commit_matrix(m.clone());
                let tree = gpu.commit_matrix(&m).unwrap();
                let want: [BabyBear; 8] = root.as_ref()[0];
                assert_eq!(root.as_ref().len(), 1, "cap height 0 is one root");
                assert_eq!(tree.root().unwrap(), want, "root 2^{log_h} x {width} ({:?})", ctx.mul_variant());
                assert_eq!(tree.layers.len(), log_h + 1);
            }
        }
        let odd = RowMajorMatrix::new(common::random_vec(&mut rng, 12), 4);
        let err = gpu.commit_matrix(&odd).err().expect("height 3 is refused");
        assert!(err.to_string().contains("power-of-two heights"), "{err}");
    }
}

mod mmcs {
    use super::*;
    use p3_commit::{BatchOpeningRef, ExtensionMmcs};
    use p3_field::extension::BinomialExtensionField;
    use p3_field::PrimeCharacteristicRing;
    use p3_matrix::Matrix;
    use whir_gpu::{plumbing::GpuProverData, GpuMmcs};

    type Ext = BinomialExtensionField<BabyBear, 4>;

    fn mmcs_pair(ctx: Arc<whir_gpu::GpuContext>, rng: &mut StdRng, cap_height: usize) -> (GpuMmcs, CpuMmcs) {
        let seed: u64 = rng.random();
        let constants = Poseidon2Constants::<BabyBear>::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
        let perm = constants.to_cpu();
        let cpu = CpuMmcs::new(Hash::new(perm.clone()), Compress::new(perm), cap_height);
        let gpu = GpuMmcs::new(Arc::new(GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx, constants)))), cap_height);
        (gpu, cpu)
    }

    #[test]
    fn commitments_and_openings_match_merkle_tree_mmcs() {
        let mut rng = common::rng();
        for ctx in common::contexts() {
            for cap_height in [0usize, 1, 3] {
                let (gpu, cpu) = mmcs_pair(ctx.clone(), &mut rng, cap_height);
                for (log_h, width) in [(0usize, 5usize), (1, 8), (4, 3), (7, 16), (10, 9), (12, 64), (16, 1), (16, 33)] {
                    let h = 1usize << log_h;
                    let m = RowMajorMatrix::new(common::random_vec(&mut rng, h * width), width);
                    let (gcap, gdata) = gpu.commit_matrix(m.clone());
                    let (ccap, cdata) = cpu.commit_matrix(m.clone());
                    assert_eq!(gcap, ccap, "cap 2^{log_h} x {width}, cap height {cap_height}");
                    assert!(matches!(gdata, GpuProverData::Gpu { .. }), "committed on the GPU");
                    let dims = [m.dimensions()];

                    for _ in 0..4 {
                        let index = rng.random_range(0..h);
                        let g = gpu.open_batch(index, &gdata);
                        let c = cpu.open_batch(index, &cdata);
                        assert_eq!(g.opened_values, c.opened_values);
                        assert_eq!(g.opening_proof, c.opening_proof, "path {index} of 2^{log_h}");
                        cpu.verify_batch(&ccap, &dims, index, BatchOpeningRef::new(&g.opened_values, &g.opening_proof))
                            .expect("stock MerkleTreeMmcs accepts our opening");
                    }

                    let mut indices: Vec<usize> = (0..rng.random_range(1..20)).map(|_| rng.random_range(0..h)).collect();
                    indices.push(indices[0]); // a repeated query
                    let (gv, gp) = gpu.open_multi_batch(&indices, &gdata);
                    let (cv, cp) = cpu.open_multi_batch(&indices, &cdata);
                    assert_eq!(gv, cv);
                    assert_eq!(gp.sibling_hashes, cp.sibling_hashes, "pruned proof 2^{log_h} x {width}, cap {cap_height}");
                    cpu.verify_multi_batch(&ccap, &dims, &indices, &gv, &gp).expect("stock verifier accepts");
                    gpu.verify_multi_batch(&gcap, &dims, &indices, &gv, &gp).expect("our verifier accepts");
                }
            }
        }
    }

    /// KoalaBear: `GpuMmcs<KoalaBear>` against `MerkleTreeMmcs` over `Poseidon2KoalaBear<16>`
    /// (seeded constants): single matrices of awkward shapes at several cap heights, random
    /// batches of mixed heights, KoalaBear^4 rows through `ExtensionMmcs`; paths and pruned
    /// proofs equal, and accepted by the stock verifier.
    #[test]
    fn koalabear_commitments_and_openings_match_merkle_tree_mmcs() {
        type KbExt = BinomialExtensionField<KoalaBear, 4>;
        type KbPerm = Poseidon2KoalaBear<16>;
        type KbPacked = <KoalaBear as Field>::Packing;
        type KbMmcs = MerkleTreeMmcs<KbPacked, KbPacked, PaddingFreeSponge<KbPerm, 16, 8, 8>, TruncatedPermutation<KbPerm, 2, 8, 16>, 2, 8>;
        let mut rng = common::rng();
        let kb = |rng: &mut StdRng, n: usize| -> Vec<KoalaBear> { (0..n).map(|_| rng.random()).collect() };
        for ctx in common::contexts() {
            for cap_height in [0usize, 2] {
                let seed: u64 = rng.random();
                let constants = Poseidon2Constants::<KoalaBear>::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
                let perm = constants.to_cpu();
                let cpu = KbMmcs::new(PaddingFreeSponge::new(perm.clone()), TruncatedPermutation::new(perm), cap_height);
                let gpu = GpuMmcs::new(Arc::new(GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), constants)))), cap_height);
                for (log_h, width) in [(0usize, 5usize), (3, 8), (7, 16), (10, 9), (12, 33)] {
                    let h = 1usize << log_h;
                    let m = RowMajorMatrix::new(kb(&mut rng, h * width), width);
                    let (gcap, gdata) = gpu.commit_matrix(m.clone());
                    let (ccap, cdata) = cpu.commit_matrix(m.clone());
                    assert_eq!(gcap, ccap, "KoalaBear cap 2^{log_h} x {width}, cap height {cap_height}");
                    assert!(matches!(gdata, GpuProverData::Gpu { .. }), "committed on the GPU");
                    let dims = [m.dimensions()];
                    let index = rng.random_range(0..h);
                    let (g, c) = (gpu.open_batch(index, &gdata), cpu.open_batch(index, &cdata));
                    assert_eq!((&g.opened_values, &g.opening_proof), (&c.opened_values, &c.opening_proof), "KoalaBear path {index} of 2^{log_h}");
                    cpu.verify_batch(&ccap, &dims, index, BatchOpeningRef::new(&g.opened_values, &g.opening_proof)).expect("stock MerkleTreeMmcs accepts");
                    let mut indices: Vec<usize> = (0..rng.random_range(1..12)).map(|_| rng.random_range(0..h)).collect();
                    indices.push(indices[0]);
                    let (gv, gp) = gpu.open_multi_batch(&indices, &gdata);
                    let (cv, cp) = cpu.open_multi_batch(&indices, &cdata);
                    assert_eq!((&gv, &gp.sibling_hashes), (&cv, &cp.sibling_hashes), "KoalaBear pruned proof 2^{log_h} x {width}");
                    cpu.verify_multi_batch(&ccap, &dims, &indices, &gv, &gp).expect("stock verifier accepts");
                }
                // Mixed heights, one of them not a power of two.
                let a = RowMajorMatrix::new(kb(&mut rng, 100 * 3), 3);
                let b = RowMajorMatrix::new(kb(&mut rng, 25 * 7), 7);
                let (gcap, gdata) = gpu.commit(vec![a.clone(), b.clone()]);
                let (ccap, cdata) = cpu.commit(vec![a, b]);
                assert_eq!(gcap, ccap, "KoalaBear mixed heights");
                assert!(matches!(gdata, GpuProverData::Gpu { .. }));
                let ((gv, gp), (cv, cp)) = (gpu.open_multi_batch(&[5, 99], &gdata), cpu.open_multi_batch(&[5, 99], &cdata));
                assert_eq!((gv, gp.sibling_hashes), (cv, cp.sibling_hashes));
                // KoalaBear^4 rows through ExtensionMmcs.
                let gext = ExtensionMmcs::<KoalaBear, KbExt, _>::new(gpu.clone());
                let cext = ExtensionMmcs::<KoalaBear, KbExt, _>::new(cpu.clone());
                let m = RowMajorMatrix::new((0..(1 << 8) * 4).map(|_| rng.random::<KbExt>()).collect::<Vec<_>>(), 4);
                let (gcap, gdata) = gext.commit_matrix(m.clone());
                let (ccap, cdata) = cext.commit_matrix(m);
                assert_eq!(gcap, ccap, "KoalaBear^4 rows");
                let ((gv, gp), (cv, cp)) = (gext.open_multi_batch(&[3, 200, 3], &gdata), cext.open_multi_batch(&[3, 200, 3], &cdata));
                assert_eq!((gv, gp.sibling_hashes), (cv, cp.sibling_hashes));
            }
        }
    }

    #[test]
    fn extension_rows_and_mixed_heights_match() {
        let mut rng = common::rng();
        for ctx in common::contexts() {
            let (gpu, cpu) = mmcs_pair(ctx.clone(), &mut rng, 0);
            // BabyBear^4 rows through ExtensionMmcs, as WHIR's later rounds commit them.
            let gext = ExtensionMmcs::<BabyBear, Ext, _>::new(gpu.clone());
            let cext = ExtensionMmcs::<BabyBear, Ext, _>::new(cpu.clone());
            let values: Vec<Ext> = (0..(1 << 9) * 4).map(|_| rng.random()).collect();
            let m = RowMajorMatrix::new(values, 4);
            let (gcap, gdata) = gext.commit_matrix(m.clone());
            let (ccap, cdata) = cext.commit_matrix(m);
            assert_eq!(gcap, ccap);
            let indices = [3usize, 100, 511, 3];
            let (gv, gp) = gext.open_multi_batch(&indices, &gdata);
            let (cv, cp) = cext.open_multi_batch(&indices, &cdata);
            assert_eq!(gv, cv);
            assert_eq!(gp.sibling_hashes, cp.sibling_hashes);

            // Several matrices of different heights, on the GPU too.
            let a = RowMajorMatrix::new(common::random_vec(&mut rng, 64 * 3), 3);
            let b = RowMajorMatrix::new(common::random_vec(&mut rng, 16 * 5), 5);
            let (gcap, gdata) = gpu.commit(vec![a.clone(), b.clone()]);
            let (ccap, cdata) = cpu.commit(vec![a, b]);
            assert_eq!(gcap, ccap);
            assert!(matches!(gdata, GpuProverData::Gpu { .. }));
            let ((gv, gp), (cv, cp)) = (gpu.open_multi_batch(&[5, 63], &gdata), cpu.open_multi_batch(&[5, 63], &cdata));
            assert_eq!((gv, gp.sibling_hashes), (cv, cp.sibling_hashes));
        }
    }

    /// A random batch as `MerkleTreeMmcs` takes it: 1-5 matrices, heights on the ladder of a
    /// tallest height (a power of two up to 2^max_log, or not), widths 1-70, in random order.
    fn random_batch(rng: &mut StdRng, max_log: usize) -> Vec<RowMajorMatrix<BabyBear>> {
        let max_height = if rng.random::<bool>() { 1usize << rng.random_range(0..=max_log) } else { rng.random_range(1..=3000usize) };
        let log_max = p3_util::log2_ceil_usize(max_height);
        let count = rng.random_range(1..=5usize);
        let mut heights: Vec<usize> = (0..count).map(|i| if i == 0 { max_height } else { ((max_height - 1) >> rng.random_range(0..=log_max)) + 1 }).collect();
        // Random order: Plonky3 sorts by height itself (stably).
        for i in (1..heights.len()).rev() {
            heights.swap(i, rng.random_range(0..=i));
        }
        heights
            .into_iter()
            .map(|h| {
                let w = rng.random_range(1..=70usize);
                RowMajorMatrix::new(common::random_vec(rng, h * w), w)
            })
            .collect()
    }

    /// Commitments, single and pruned multi-openings of random batches (mixed and
    /// non-power-of-two heights, equal heights side by side, cap heights 0-3) are Plonky3's,
    /// and the stock verifier accepts ours.
    #[test]
    fn random_batches_match_merkle_tree_mmcs() {
        let mut rng = common::rng();
        for ctx in common::contexts() {
            for round in 0..24 {
                let cap_height = round % 4;
                let (gpu, cpu) = mmcs_pair(ctx.clone(), &mut rng, cap_height);
                // One large batch per multiply variant (2^16 rows); the rest small.
                let batch = random_batch(&mut rng, if round == 0 { 16 } else { 10 });
                let what = format!("{:?}, cap height {cap_height} ({:?})", batch.iter().map(|m| m.dimensions()).collect::<Vec<_>>(), ctx.mul_variant());
                let dims: Vec<_> = batch.iter().map(|m| m.dimensions()).collect();
                let max_height = batch.iter().map(|m| m.height()).max().unwrap();
                let (gcap, gdata) = match gpu.try_commit(batch.clone()) {
                    Ok(committed) => committed,
                    Err(e) => {
                        // Only a cap Plonky3 cannot hold either (non-power-of-two layers).
                        let theirs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cpu.commit(batch))).expect_err("Plonky3 refuses it too");
                        assert_eq!(Some(&e.to_string()), theirs.downcast_ref::<String>(), "{what}");
                        assert!(matches!(e, whir_gpu::plumbing::BatchError::CapRoots { .. }), "{what}: {e}");
                        continue;
                    }
                };
                let (ccap, cdata) = cpu.commit(batch);
                assert_eq!(gcap, ccap, "cap of {what}");
                assert!(matches!(gdata, GpuProverData::Gpu { .. }), "committed on the GPU: {what}");
                for _ in 0..3 {
                    let index = rng.random_range(0..max_height);
                    let g = gpu.open_batch(index, &gdata);
                    let c = cpu.open_batch(index, &cdata);
                    assert_eq!((&g.opened_values, &g.opening_proof), (&c.opened_values, &c.opening_proof), "opening {index} of {what}");
                    cpu.verify_batch(&ccap, &dims, index, BatchOpeningRef::new(&g.opened_values, &g.opening_proof)).expect("stock verifier accepts");
                }
                let mut indices: Vec<usize> = (0..rng.random_range(1..12)).map(|_| rng.random_range(0..max_height)).collect();
                indices.push(indices[0]);
                let (gv, gp) = gpu.open_multi_batch(&indices, &gdata);
                let (cv, cp) = cpu.open_multi_batch(&indices, &cdata);
                assert_eq!((&gv, &gp.sibling_hashes), (&cv, &cp.sibling_hashes), "multi-opening {indices:?} of {what}");
                cpu.verify_multi_batch(&ccap, &dims, &indices, &gv, &gp).expect("stock verifier accepts");
                assert_eq!(gpu.get_matrices(&gdata).len(), dims.len());
            }
        }
    }

    /// On an adapter whose storage bindings hold 64 KiB (the strict profile with a smaller
    /// binding, so the crossing happens at test sizes), batches larger than a binding are
    /// uploaded in row chunks and hashed range by range: still Plonky3's commitments and
    /// openings.
    #[test]
    fn batches_over_the_binding_limit_are_split_and_match() {
        use whir_gpu::{GpuOptions, LimitsProfile};
        let mut rng = common::rng();
        let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() })
        else {
            return;
        };
        assert_eq!(ctx.max_binding_bytes(), 64 << 10);
        let mut split = 0;
        for round in 0..10 {
            let cap_height = round % 3;
            let (gpu, cpu) = mmcs_pair(ctx.clone(), &mut rng, cap_height);
            let mut batch = if round == 0 {
                // Narrow shorter matrices: the child digests of the nodes they join (64 bytes a
                // row) must fit a binding as well as their rows.
                vec![RowMajorMatrix::new(common::random_vec(&mut rng, 8 << 13), 8), RowMajorMatrix::new(common::random_vec(&mut rng, 8 << 12), 8)]
            } else {
                random_batch(&mut rng, 13)
            };
            // At least one matrix over the binding.
            batch.push(RowMajorMatrix::new(common::random_vec(&mut rng, batch[0].height() * 70), 70));
            let max_height = batch.iter().map(|m| m.height()).max().unwrap();
            let bytes: usize = batch.iter().filter(|m| m.height() == max_height).map(|m| m.width() * 4).sum::<usize>() * max_height;
            split += usize::from(bytes > 64 << 10);
            let dims: Vec<_> = batch.iter().map(|m| m.dimensions()).collect();
            let Ok((gcap, gdata)) = gpu.try_commit(batch.clone()) else { continue };
            let (ccap, cdata) = cpu.commit(batch);
            assert_eq!(gcap, ccap, "cap of {dims:?}, cap height {cap_height}");
            assert!(matches!(gdata, GpuProverData::Gpu { .. }), "committed on the GPU: {dims:?}");
            let indices: Vec<usize> = (0..8).map(|_| rng.random_range(0..max_height)).collect();
            let (gv, gp) = gpu.open_multi_batch(&indices, &gdata);
            let (cv, cp) = cpu.open_multi_batch(&indices, &cdata);
            assert_eq!((&gv, &gp.sibling_hashes), (&cv, &cp.sibling_hashes), "openings of {dims:?}");
        }
        assert!(split > 0, "no batch crossed the binding");
    }

    /// Batches Plonky3 refuses get its errors from `try_commit` (and its panic messages from
    /// `commit`), before anything reaches the GPU.
    #[test]
    fn bad_batches_get_plonky3s_errors() {
        let mut rng = common::rng();
        let ctx = common::contexts().into_iter().next().expect("a context");
        let (gpu, cpu) = mmcs_pair(ctx, &mut rng, 0);
        let m = |h: usize, w: usize| RowMajorMatrix::new(vec![BabyBear::ONE; h * w], w);
        let cases: Vec<(Vec<RowMajorMatrix<BabyBear>>, &str)> = vec![
            (vec![], "no matrices"),
            (vec![m(0, 3)], "only empty matrices"),
            (vec![m(8, 2), m(3, 1)], "a height off the ladder"),
            (vec![m(7, 2), m(3, 1)], "7 then 3 (ceil(7/2) = 4)"),
            (vec![m(8, 2), m(0, 1)], "an empty matrix beside rows"),
            (vec![m(5, 1), m(16, 2)], "a taller matrix after a shorter one off its ladder"),
        ];
        for (batch, what) in cases {
            let ours = gpu.try_commit(batch.clone()).err().unwrap_or_else(|| panic!("{what}: accepted"));
            let theirs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cpu.commit(batch.clone()))).expect_err("Plonky3 panics");
            let theirs = theirs.downcast_ref::<String>().cloned().or_else(|| theirs.downcast_ref::<&str>().map(|s| s.to_string())).unwrap();
            let ours_panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| gpu.commit(batch))).err().expect("commit panics as Plonky3's");
            let ours_panic = ours_panic.downcast_ref::<String>().cloned().or_else(|| ours_panic.downcast_ref::<&str>().map(|s| s.to_string())).unwrap();
            assert_eq!(ours_panic, theirs, "{what}: panic message");
            match ours {
                whir_gpu::plumbing::BatchError::Shape(p3_merkle_tree::MerkleTreeError::EmptyBatch) => {
                    assert_eq!(theirs, "all matrices have height 0", "{what}")
                }
                e => assert_eq!(e.to_string(), theirs, "{what}"),
            }
        }
    }
}

#[test]
fn encode_then_commit_in_one_submission() {
    // The prover's path: Reed-Solomon encode on the GPU and hash the codeword where it lies.
    use p3_commit::Encoder;
    use p3_dft::Radix2DFTSmallBatch;
    use whir_gpu::{GpuEncoder, GpuNtt};
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let constants = Poseidon2Constants::default_babybear();
        let perm = constants.to_cpu();
        let cpu_mmcs = CpuMmcs::new(Hash::new(perm.clone()), Compress::new(perm), 0);
        let merkle = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), constants)));
        let ntt = GpuNtt::new(ctx.clone());
        for (log_msg, width, rate) in [(4usize, 2usize, 1usize), (9, 16, 2), (11, 4, 1)] {
            let message = RowMajorMatrix::new(common::random_vec(&mut rng, (1 << log_msg) * width), width);
            let codeword = Radix2DFTSmallBatch::<BabyBear>::default().encode_batch(message.clone(), rate);
            let (want, _) = cpu_mmcs.commit_matrix(codeword);

            let spec = GpuEncoder::<BabyBear>::spec(log_msg, width, rate);
            let src = ctx.transfers().upload("message", whir_gpu::field::as_words(&message.values));
            let mut batch = ctx.batch("encode + commit");
            let encoded = ntt.record(&mut batch, NttSource::TwoBuffers(&src), &spec).unwrap();
            let tree = merkle.record_tree(&mut batch, TreeRows::Matrix(&encoded), TreeSpec::new(spec.rows(), width)).unwrap();
            batch.lend(encoded);
            let tree = tree.finish(&ctx.run(batch).unwrap()).unwrap();
            assert_eq!(tree.root().unwrap().as_slice(), want.as_ref()[0].as_slice(), "2^{log_msg} x {width} rate {rate}");
        }
    }
}

/// A tree that keeps no leaf digests (the resident prover's codewords) opens rows with the same
/// rows and sibling digests as one that keeps them: the siblings it lacks are rehashed from the
/// matrix. Reading its leaf layer without the matrix is an error, not garbage.
#[test]
fn trees_without_leaf_digests_open_the_same() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        check_trees_with_and_without_leaves(&ctx, &mut rng, &[(0usize, 8usize), (1, 2), (5, 3), (9, 16), (12, 8), (13, 2), (13, 16), (14, 33)]);
    }
}

/// One matrix larger than the binding (a 64 KiB one): copied into row chunks and committed as
/// such, the roots Plonky3's, and openings read from the one buffer in windows, leaf digests
/// kept or rehashed.
#[test]
fn single_matrices_over_the_binding_limit_are_committed_in_chunks() {
    use whir_gpu::{GpuOptions, LimitsProfile};
    let mut rng = common::rng();
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) else {
        return;
    };
    check_trees_with_and_without_leaves(&ctx, &mut rng, &[(12, 8), (13, 2), (11, 16), (10, 33), (14, 1)]);
}

/// Trees keeping and not keeping leaf digests over random 2^log_h x width matrices: Plonky3's
/// root, and the same openings (cap heights 0 and 1, deferred or not).
fn check_trees_with_and_without_leaves(ctx: &Arc<whir_gpu::GpuContext>, rng: &mut StdRng, shapes: &[(usize, usize)]) {
    let merkle = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear())));
    for &(log_h, width) in shapes {
        let h = 1usize << log_h;
        let values = common::random_vec(rng, h * width);
        let matrix = ctx.transfers().upload("matrix", whir_gpu::field::as_words(&values));
        let commit = |keep: bool| merkle.commit(TreeRows::Matrix(&matrix), TreeSpec::new(h, width).keeping_from(usize::from(!keep))).unwrap();
        let (full, trimmed) = (commit(true), commit(false));
        assert_eq!(full.root().unwrap(), trimmed.root().unwrap(), "2^{log_h} x {width}: roots");
        let (root, _) = CpuMmcs::new(Hash::new(default_babybear_poseidon2_16()), Compress::new(default_babybear_poseidon2_16()), 0)
            .commit_matrix(RowMajorMatrix::new(values.clone(), width));
        assert_eq!(root.roots()[0], full.root().unwrap(), "2^{log_h} x {width}: Plonky3's root");
        assert_eq!(trimmed.leaves_kept(), log_h == 0, "a one-row tree keeps its leaf (its root)");
        assert!(log_h == 0 || trimmed.layers[0].size() <= 32, "2^{log_h} x {width}: the leaf digests were kept");
        // Lone indices, sibling pairs, repeats, the ends.
        let mut indices: Vec<usize> = (0..rng.random_range(1..40)).map(|_| rng.random_range(0..h)).collect();
        indices.extend([0, h - 1, indices[0]]);
        if h > 1 {
            let pair = (h / 2) & !1;
            indices.extend([pair, pair + 1]);
        }
        let want = merkle.open_rows(&full, RowSource::One(&matrix), &indices, 0).unwrap();
        assert!(want.rows.iter().zip(&indices).all(|(r, &i)| r[..] == values[i * width..(i + 1) * width]), "2^{log_h} x {width}: opened rows");
        assert!(merkle.open_rows(&trimmed, RowSource::One(&matrix), &indices, 0).unwrap() == want, "2^{log_h} x {width}: openings differ");
        let deferred = common::open_deferred(&merkle, &trimmed, RowSource::One(&matrix), &indices, 1.min(log_h)).unwrap();
        assert!(deferred == merkle.open_rows(&full, RowSource::One(&matrix), &indices, 1.min(log_h)).unwrap(), "2^{log_h} x {width}: deferred openings differ");
        if log_h > 0 {
            assert!(merkle.read_nodes(&trimmed, &[(0, 0)]).is_err(), "leaf digests not kept");
            assert_eq!(merkle.read_nodes(&trimmed, &[(1, 0)]).unwrap(), merkle.read_nodes(&full, &[(1, 0)]).unwrap());
        }
    }
}

/// Trees keeping only their layers from k >= 2 up (`TreeSpec::keeping_from`, the resident
/// codewords' trees): Plonky3's root, the layers below k not kept, and openings that rebuild
/// the queried subtrees equal to the full tree's, immediate or deferred, at cap heights 0-2,
/// for lone rows, whole subtrees, repeats and every row; over both multiply variants.
#[test]
fn trees_keeping_only_upper_layers_open_the_same() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let merkle = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()))).with_chunked_leaves_from(64);
        // (Layer 1 up over rows of 16 words or more: leaves hashed in chunks from 64 rows.)
        for (log_h, width, lowest) in [
            (1usize, 3usize, 4usize),
            (2, 2, 2),
            (5, 2, 6),
            (8, 8, 4),
            (9, 1, 7),
            (10, 16, 3),
            (7, 33, 2),
            (12, 4, 5),
            (3, 2, 3),
            (9, 16, 1),
            (6, 40, 1),
            (5, 16, 1),
        ] {
            let h = 1usize << log_h;
            let what = format!("2^{log_h} x {width} from layer {lowest}");
            let values = common::random_vec(&mut rng, h * width);
            let matrix = ctx.transfers().upload("matrix", whir_gpu::field::as_words(&values));
            let full = merkle.commit(TreeRows::Matrix(&matrix), TreeSpec::new(h, width)).unwrap();
            let trimmed = merkle.commit(TreeRows::Matrix(&matrix), TreeSpec::new(h, width).keeping_from(lowest)).unwrap();
            let (root, _) = CpuMmcs::new(Hash::new(default_babybear_poseidon2_16()), Compress::new(default_babybear_poseidon2_16()), 0)
                .commit_matrix(RowMajorMatrix::new(values.clone(), width));
            assert_eq!(root.roots()[0], trimmed.root().unwrap(), "{what}: Plonky3's root");
            let kept_from = lowest.min(log_h);
            assert_eq!(trimmed.lowest_kept, kept_from, "{what}: layers kept (the root always)");
            for k in 0..kept_from {
                assert!(trimmed.layers[k].size() <= 32 && trimmed.layer_len(k) == 0, "{what}: layer {k} was kept");
            }
            let row_sets: Vec<Vec<usize>> = vec![
                vec![],
                vec![rng.random_range(0..h)],
                (0..rng.random_range(2..50)).map(|_| rng.random_range(0..h)).chain([0, h - 1]).collect(),
                (0..h.min(1 << kept_from)).collect(),
                (0..h).rev().collect(),
            ];
            for indices in row_sets {
                for cap in 0..=2.min(log_h) {
                    let want = merkle.open_rows(&full, RowSource::One(&matrix), &indices, cap).unwrap();
                    assert!(want.rows.iter().zip(&indices).all(|(r, &i)| r[..] == values[i * width..(i + 1) * width]), "{what}: opened rows");
                    assert!(
                        merkle.open_rows(&trimmed, RowSource::One(&matrix), &indices, cap).unwrap() == want,
                        "{what}, cap {cap}, {} rows: openings differ",
                        indices.len()
                    );
                    let deferred = common::open_deferred(&merkle, &trimmed, RowSource::One(&matrix), &indices, cap).unwrap();
                    assert!(deferred == want, "{what}, cap {cap}: deferred openings differ");
                }
            }
            if kept_from > 1 {
                assert!(merkle.read_nodes(&trimmed, &[(kept_from - 1, 0)]).is_err(), "{what}: a layer not kept read");
            }
            assert_eq!(merkle.read_nodes(&trimmed, &[(kept_from, 0)]).unwrap(), merkle.read_nodes(&full, &[(kept_from, 0)]).unwrap());
        }
    }
}

/// A matrix holding its rows in bit-reversed order (an NTT's own output, as the resident
/// codewords are kept) committed with `RowOrder::BitReversed`: Plonky3's root of the rows in
/// order, and openings (rows and digests, leaves kept, rehashed or rebuilt from upper layers,
/// in chunks or not) equal to those of the in-order matrix's tree; over both multiply variants.
#[test]
fn bit_reversed_rows_commit_and_open_as_rows_in_order() {
    use whir_gpu::record::RowOrder;
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let merkle = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()))).with_chunked_leaves_from(64);
        for (log_h, width, lowest) in [
            (0usize, 5usize, 0usize),
            (1, 3, 1),
            (2, 2, 2),
            (5, 2, 6),
            (8, 8, 4),
            (9, 1, 7),
            (10, 16, 3),
            (7, 33, 2),
            (9, 16, 1),
            (6, 40, 1),
            (8, 64, 0),
            (11, 4, 5),
        ] {
            let h = 1usize << log_h;
            let what = format!("2^{log_h} x {width} from layer {lowest}");
            let values = common::random_vec(&mut rng, h * width);
            let reversed: Vec<BabyBear> = (0..h).flat_map(|p| values[RowOrder::BitReversed.physical(p, h) * width..][..width].to_vec()).collect();
            let matrix = ctx.transfers().upload("matrix", whir_gpu::field::as_words(&values));
            let stored = ctx.transfers().upload("bit-reversed matrix", whir_gpu::field::as_words(&reversed));
            let full = merkle.commit(TreeRows::Matrix(&matrix), TreeSpec::new(h, width)).unwrap();
            let tree = merkle.commit(TreeRows::Matrix(&stored), TreeSpec::new(h, width).keeping_from(lowest).with_order(RowOrder::BitReversed)).unwrap();
            assert_eq!(tree.root().unwrap(), full.root().unwrap(), "{what}: root");
            assert_eq!(tree.row_order, RowOrder::BitReversed);
            let row_sets: Vec<Vec<usize>> = vec![
                vec![rng.random_range(0..h)],
                (0..rng.random_range(2..40)).map(|_| rng.random_range(0..h)).chain([0, h - 1]).collect(),
                (0..h).rev().collect(),
            ];
            for indices in row_sets {
                for cap in 0..=1.min(log_h) {
                    let want = merkle.open_rows(&full, RowSource::One(&matrix), &indices, cap).unwrap();
                    assert!(
                        merkle.open_rows(&tree, RowSource::One(&stored), &indices, cap).unwrap() == want,
                        "{what}, cap {cap}, {} rows: openings differ",
                        indices.len()
                    );
                    let deferred = common::open_deferred(&merkle, &tree, RowSource::One(&stored), &indices, cap).unwrap();
                    assert!(deferred == want, "{what}, cap {cap}: deferred openings differ");
                }
            }
        }
    }
}

/// A matrix in row chunks, committed without keeping leaf digests (`TreeRows::Groups` keeping
/// layers from 1, the split codewords' tree): the root of the one-matrix tree, power-of-two heights or
/// not (odd layers padded after recycled chunk buffers), chunks of 16 rows or more, and
/// openings rehashed chunk by chunk equal to those of the tree that keeps its leaves. Chunks
/// at offsets that are not multiples of 16 rows keep their leaves.
#[test]
fn row_chunk_trees_without_leaf_digests_match() {
    use whir_gpu::{record::RowChunk, record::RowGroup};
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let merkle = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear())));
        for (height, width, chunk) in [(256usize, 4usize, 64usize), (38, 6, 16), (150, 16, 32), (2, 3, 2), (40, 2, 8)] {
            let values = common::random_vec(&mut rng, height * width);
            let buffers: Vec<_> = values.chunks(chunk * width).map(|c| ctx.transfers().upload("rows", whir_gpu::field::as_words(c))).collect();
            let chunks: Vec<RowChunk<'_>> =
                buffers.iter().enumerate().map(|(i, b)| RowChunk { rows: b, first: i * chunk, count: chunk.min(height - i * chunk) }).collect();
            let group = || [RowGroup { chunks: chunks.clone(), height, width }];
            let kept = merkle.commit(TreeRows::Groups(&group()), TreeSpec::new(height, width)).unwrap();
            let trimmed = merkle.commit(TreeRows::Groups(&group()), TreeSpec::new(height, width).keeping_from(1)).unwrap();
            let what = format!("{height} x {width} in chunks of {chunk}");
            assert_eq!(trimmed.root().unwrap(), kept.root().unwrap(), "{what}: roots");
            let one = RowMajorMatrix::new(values.clone(), width);
            let (root, _) = CpuMmcs::new(Hash::new(default_babybear_poseidon2_16()), Compress::new(default_babybear_poseidon2_16()), 0).commit_matrix(one);
            assert_eq!(root.roots()[0], trimmed.root().unwrap(), "{what}: Plonky3's root");
            assert_eq!(trimmed.leaves_kept(), chunks.iter().any(|c| c.first % 16 != 0 || c.count % 2 != 0), "{what}: leaves kept");
            let mut indices: Vec<usize> = (0..rng.random_range(1..30)).map(|_| rng.random_range(0..height)).collect();
            indices.extend([0, height - 1, indices[0]]);
            let open = |tree| common::open_deferred(&merkle, tree, RowSource::Chunks(&chunks), &indices, 0).unwrap();
            assert!(open(&trimmed) == open(&kept), "{what}: openings differ");
        }
    }
}

/// The permutation with each state over 16 invocations (wgsl/poseidon2/lanes.wgsl) against
/// Plonky3 over both fields and both multiply variants, with counts that leave part of a
/// workgroup empty; and trees whose levels all take it (`GpuTuning::lane_level_max_nodes`, no
/// fused levels), or only the small ones, against `MerkleTreeMmcs`.
#[test]
fn lane_permutations_and_levels_match_plonky3() {
    type KbPerm = Poseidon2KoalaBear<16>;
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let variant = ctx.mul_variant();
        let seed: u64 = rng.random();
        let constants = Poseidon2Constants::<BabyBear>::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
        let cpu = constants.to_cpu();
        let gpu = GpuPoseidon2::new(ctx.clone(), constants);
        let kb_cpu = KbPerm::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
        let kb_gpu = GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<KoalaBear>::new_from_rng_128(&mut StdRng::seed_from_u64(seed)));
        for n in [1usize, 3, 4, 5, 63, 130] {
            let mut states = random_states(&mut rng, n);
            states[0] = [BabyBear::NEG_ONE; 16];
            let got = gpu.permute_batch_lanes(&states).unwrap();
            for (i, (s, g)) in states.iter().zip(&got).enumerate() {
                assert_eq!(*g, cpu.permute(*s), "BabyBear lanes: state {i} of {n} ({variant:?})");
            }
            let states: Vec<[KoalaBear; 16]> = (0..n).map(|_| rng.random()).collect();
            let got = kb_gpu.permute_batch_lanes(&states).unwrap();
            for (i, (s, g)) in states.iter().zip(&got).enumerate() {
                assert_eq!(*g, kb_cpu.permute(*s), "KoalaBear lanes: state {i} of {n} ({variant:?})");
            }
        }
        for max_nodes in [1usize << 20, 4] {
            let mut options = common::options_for(variant);
            options.tuning.merkle_fused_levels = Some(0);
            options.tuning.lane_level_max_nodes = max_nodes;
            let Some(lanes) = common::open_with(options) else { return };
            // Where timestamps are, a dispatch profile shows which level kernels ran.
            let profiled = lanes.profiler().begin_dispatches();
            let perm = Poseidon2Constants::<BabyBear>::new_from_rng_128(&mut StdRng::seed_from_u64(seed)).to_cpu();
            let cpu_mmcs = CpuMmcs::new(Hash::new(perm.clone()), Compress::new(perm), 0);
            let merkle = GpuMerkle::new(Arc::new(GpuPoseidon2::new(lanes, Poseidon2Constants::new_from_rng_128(&mut StdRng::seed_from_u64(seed)))));
            for log_h in [1usize, 2, 3, 6, 9] {
                for width in [1usize, 8, 17] {
                    let m = RowMajorMatrix::new(common::random_vec(&mut rng, (1 << log_h) * width), width);
                    let (root, _) = cpu_mmcs.commit_matrix(m.clone());
                    let tree = merkle.commit_matrix(&m).unwrap();
                    assert_eq!(tree.root().unwrap(), root.as_ref()[0], "root 2^{log_h} x {width}, lane levels up to {max_nodes} nodes ({variant:?})");
                }
            }
            if profiled {
                let kernels: Vec<&str> =
                    merkle.poseidon2().context().profiler().end_dispatches().unwrap().expect("a dispatch profile").iter().map(|k| k.kernel).collect();
                assert!(kernels.contains(&"compress_pairs_lanes"), "{kernels:?}");
                assert_eq!(kernels.contains(&"compress_pairs"), max_nodes == 4, "{kernels:?}");
            }
        }
    }
}
