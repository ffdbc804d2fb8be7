//! Every GPU DFT entry against Plonky3's `Radix2DFTSmallBatch`, fresh random inputs, output
//! buffers poisoned, both multiply variants, log sizes 0..=16 and widths 1, 3, 8, 16, 64 (up to
//! 2^18 values a matrix).
//! Larger sizes: `cargo test --release -p whir-gpu --test dft -- --ignored`.

#[path = "../../../tests/common/gpu.rs"]
mod common;

use p3_baby_bear::BabyBear;
use p3_commit::Encoder;
use p3_dft::{Radix2DFTSmallBatch, TwoAdicSubgroupDft};
use p3_field::extension::BinomialExtensionField;
use p3_field::PrimeCharacteristicRing;
use p3_matrix::bitrev::BitReversibleMatrix;
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::Matrix;
use rand::rngs::StdRng;
use rand::RngExt;
use whir_gpu::{record::NttSource, GpuDft, GpuEncoder, GpuNtt};

type Ext = BinomialExtensionField<BabyBear, 4>;

const WIDTHS: [usize; 5] = [1, 3, 8, 16, 64];

/// GPU adapters with the CPU shortcut off, so every size really runs on the GPU.
fn gpus() -> Vec<(GpuDft, GpuEncoder)> {
    common::contexts()
        .into_iter()
        .map(|ctx| {
            let ntt = std::sync::Arc::new(GpuNtt::new(ctx));
            ntt.set_poison_outputs(true);
            let dft = GpuDft::new(Some(ntt)).with_cpu_threshold(0);
            let encoder = dft.encoder();
            (dft, encoder)
        })
        .collect()
}

fn matrix(rng: &mut StdRng, log_h: usize, w: usize) -> RowMajorMatrix<BabyBear> {
    RowMajorMatrix::new(common::random_vec(rng, (1 << log_h) * w), w)
}

fn variant(d: &GpuDft) -> String {
    format!("{:?}", d.ntt().unwrap().context().mul_variant())
}

/// Matrices of at most this many values in CI (2^16 rows of 3 columns, 2^12 of 64): the
/// software adapter takes seconds per million; larger ones run under --ignored.
const MAX_VALUES: usize = 1 << 18;

/// Each shape 2^log_h x w of at most `max_values` values.
fn for_each_shape(logs: std::ops::RangeInclusive<usize>, widths: &[usize], max_values: usize, mut f: impl FnMut(usize, usize)) {
    for log_h in logs {
        for &w in widths.iter().filter(|&&w| w << log_h <= max_values) {
            f(log_h, w);
        }
    }
}

fn check_dft_idft(logs: std::ops::RangeInclusive<usize>, widths: &[usize], max_values: usize) {
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for (gpu, _) in gpus() {
        for_each_shape(logs.clone(), widths, max_values, |log_h, w| {
            let m = matrix(&mut rng, log_h, w);
            let v = variant(&gpu);
            assert_eq!(gpu.dft_batch(m.clone()).to_row_major_matrix(), cpu.dft_batch(m.clone()), "dft 2^{log_h} x {w} {v}");
            assert_eq!(gpu.idft_batch(m.clone()), cpu.idft_batch(m), "idft 2^{log_h} x {w} {v}");
        });
    }
}

#[test]
fn dft_and_idft_match_plonky3() {
    check_dft_idft(0..=16, &WIDTHS, MAX_VALUES);
}

#[test]
fn coset_dft_and_coset_lde_match_plonky3() {
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for (gpu, _) in gpus() {
        for_each_shape(0..=16, &WIDTHS, MAX_VALUES, |log_h, w| {
            let m = matrix(&mut rng, log_h, w);
            let shift: BabyBear = rng.random();
            let v = variant(&gpu);
            assert_eq!(gpu.coset_dft_batch(m.clone(), shift).to_row_major_matrix(), cpu.coset_dft_batch(m.clone(), shift), "coset dft 2^{log_h} x {w} {v}");
            let added = 1 + (log_h + w) % 3;
            if log_h + added <= 17 {
                assert_eq!(
                    gpu.coset_lde_batch(m.clone(), added, shift).to_row_major_matrix(),
                    cpu.coset_lde_batch(m, added, shift),
                    "coset lde 2^{log_h} x {w} +{added} {v}"
                );
            }
        });
    }
}

#[test]
fn dft_algebra_matches_plonky3() {
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for (gpu, _) in gpus() {
        // Extension rows of width 2^fold: 4·2^fold base columns.
        for_each_shape(0..=14, &[1, 2, 4, 16], MAX_VALUES, |log_h, w| {
            let values: Vec<Ext> = (0..(1 << log_h) * w).map(|_| rng.random()).collect();
            let m = RowMajorMatrix::new(values, w);
            assert_eq!(gpu.dft_algebra_batch(m.clone()), cpu.dft_algebra_batch(m), "dft_algebra 2^{log_h} x {w} {}", variant(&gpu));
        });
    }
}

#[test]
fn encoder_matches_plonky3_and_skips_the_zero_tail() {
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for (_, enc) in gpus() {
        for_each_shape(0..=14, &WIDTHS, MAX_VALUES, |log_h, w| {
            // Rates 1 to 1/8 in turn over the shapes, each size meeting two of them.
            for rate in [(log_h + w) % 4, (log_h + w + 2) % 4] {
                let m = matrix(&mut rng, log_h, w);
                let v = format!("{:?}", enc.ntt().unwrap().context().mul_variant());
                let want = cpu.encode_batch(m.clone(), rate);
                assert_eq!(enc.encode_batch(m.clone(), rate), want, "encode 2^{log_h} x {w} rate {rate} {v}");
                let mut padded = m.values.clone();
                padded.resize(m.values.len() << rate, BabyBear::ZERO);
                let padded = RowMajorMatrix::new(padded, w);
                assert_eq!(enc.encode_batch_padded(padded, rate), want, "encode padded 2^{log_h} x {w} rate {rate} {v}");
            }
        });
    }
}

/// The width-aware default: one column from 2^14 elements, 16 columns and wider from 2^25,
/// never falling as the width grows.
#[test]
fn gpu_thresholds_grow_with_the_width() {
    use whir_gpu::plumbing::default_gpu_min_elements;
    assert_eq!(default_gpu_min_elements(1), 1 << 14);
    assert_eq!(default_gpu_min_elements(16), 1 << 25);
    assert_eq!(default_gpu_min_elements(2633), 1 << 25);
    assert_eq!(default_gpu_min_elements(0), 1 << 14);
    for w in 1..40 {
        assert!(default_gpu_min_elements(w + 1) >= default_gpu_min_elements(w), "width {w}");
    }
}

/// On an adapter whose bindings hold 64 KiB, transforms larger than a binding run a block of
/// columns at a time (uploaded from, and read back into, their columns of the row-major
/// matrix): Plonky3's values still. A single column too tall for a binding goes to the CPU.
#[test]
fn transforms_over_the_binding_limit_run_by_column_blocks() {
    use whir_gpu::{GpuOptions, LimitsProfile};
    let mut rng = common::rng();
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) else {
        return;
    };
    // Transfers in chunks of 16 KiB: results of that size or more have their pages touched
    // ahead on threads of their own, and come back in several chunks.
    ctx.transfers().set_transfer_chunk_bytes(16 << 10);
    let ntt = std::sync::Arc::new(GpuNtt::new(ctx.clone()));
    ntt.set_poison_outputs(true);
    let gpu = GpuDft::new(Some(ntt.clone())).with_cpu_threshold(0);
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for (log_h, w) in [(10usize, 40usize), (9, 70), (12, 5)] {
        let m = matrix(&mut rng, log_h, w);
        let shift: BabyBear = rng.random();
        assert!(ntt.columns_per_pass(1 << log_h, 2 << log_h, w).unwrap() < w, "2^{log_h} x {w} fits one binding");
        let before = ctx.transfers().transfer_counts().bytes_up;
        assert_eq!(gpu.coset_lde_batch(m.clone(), 1, shift).to_row_major_matrix(), cpu.coset_lde_batch(m.clone(), 1, shift), "lde 2^{log_h} x {w}");
        assert!(ctx.transfers().transfer_counts().bytes_up > before, "the GPU ran it");
        assert_eq!(gpu.dft_batch(m.clone()).to_row_major_matrix(), cpu.dft_batch(m), "dft 2^{log_h} x {w}");
    }
    // The encoder (a zero-tail transform) takes the same path.
    let message = matrix(&mut rng, 10, 24);
    let want = Radix2DFTSmallBatch::<BabyBear>::default()
        .dft_batch(RowMajorMatrix::new(message.values.iter().copied().chain(std::iter::repeat_n(BabyBear::ZERO, message.values.len())).collect(), 24));
    let before = ctx.transfers().transfer_counts().bytes_up;
    assert_eq!(gpu.encoder().encode_batch(message, 1), want, "encode 2^10 x 24 at rate 1/2");
    assert!(ctx.transfers().transfer_counts().bytes_up > before, "the GPU ran it");
    // One column of 2^15 rows is 128 KiB: the CPU computes it.
    let m = matrix(&mut rng, 15, 1);
    assert_eq!(gpu.dft_batch(m.clone()).to_row_major_matrix(), cpu.dft_batch(m));
}

#[test]
fn small_inputs_use_the_cpu_and_agree() {
    // With the default threshold tiny transforms stay on the CPU; results are the same.
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for ctx in common::contexts() {
        let gpu = GpuDft::on(ctx);
        let m = matrix(&mut rng, 4, 2);
        assert_eq!(gpu.dft_batch(m.clone()).to_row_major_matrix(), cpu.dft_batch(m));
    }
}

/// The evaluations are stored bit-reversed, as Plonky3's `Radix2DitParallel` stores them: a
/// FRI commitment's `bit_reverse_rows()` gets the same rows from both, with no copy.
#[test]
fn evaluations_are_stored_bit_reversed_as_radix2_dit_parallel_stores_them() {
    let mut rng = common::rng();
    let dit = p3_dft::Radix2DitParallel::<BabyBear>::default();
    for (gpu, _) in gpus() {
        for_each_shape(0..=11, &[1, 3, 16], MAX_VALUES, |log_h, w| {
            let m = matrix(&mut rng, log_h, w);
            let shift: BabyBear = rng.random();
            let v = variant(&gpu);
            assert_eq!(
                gpu.coset_lde_batch(m.clone(), 2, shift).bit_reverse_rows(),
                dit.coset_lde_batch(m.clone(), 2, shift).bit_reverse_rows(),
                "lde 2^{log_h} x {w} {v}"
            );
            assert_eq!(gpu.dft_batch(m.clone()).bit_reverse_rows(), dit.dft_batch(m.clone()).bit_reverse_rows(), "dft 2^{log_h} x {w} {v}");
            assert_eq!(
                gpu.coset_dft_batch(m.clone(), shift).bit_reverse_rows(),
                dit.coset_dft_batch(m, shift).bit_reverse_rows(),
                "coset dft 2^{log_h} x {w} {v}"
            );
        });
    }
}

#[test]
#[ignore = "large sizes; run in release with --ignored"]
fn large_dft_and_lde_match_plonky3() {
    check_dft_idft(17..=22, &[1, 16], usize::MAX);
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for (gpu, _) in gpus() {
        for_each_shape(17..=21, &[1, 5, 32], usize::MAX, |log_h, w| {
            let m = matrix(&mut rng, log_h, w);
            let shift: BabyBear = rng.random();
            assert_eq!(gpu.coset_lde_batch(m.clone(), 1, shift).to_row_major_matrix(), cpu.coset_lde_batch(m, 1, shift), "lde 2^{log_h} x {w}");
        });
    }
}

#[test]
fn reused_buffers_give_the_same_answers() {
    // Without poisoning, buffers come from the pools: repeat shapes (reuse) and mix them.
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for ctx in common::contexts() {
        let gpu = GpuDft::on(ctx).with_cpu_threshold(0);
        for (log_h, w) in [(10, 4), (10, 4), (6, 1), (10, 4), (12, 3), (6, 1), (12, 3)] {
            let m = matrix(&mut rng, log_h, w);
            let shift: BabyBear = rng.random();
            assert_eq!(gpu.dft_batch(m.clone()).to_row_major_matrix(), cpu.dft_batch(m.clone()), "dft 2^{log_h} x {w}");
            assert_eq!(gpu.coset_lde_batch(m.clone(), 1, shift).to_row_major_matrix(), cpu.coset_lde_batch(m, 1, shift), "lde 2^{log_h} x {w}");
        }
    }
}

#[test]
fn odd_and_wide_matrices_match_plonky3() {
    // Widths that are not powers of two take the per-element bit reversal; very wide rows make
    // a workgroup's neighbouring sub-problems span several rows.
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for (gpu, enc) in gpus() {
        for (log_h, w) in [(1, 5), (7, 5), (11, 7), (3, 256), (9, 256), (5, 1000), (8, 1000), (13, 33)] {
            let m = matrix(&mut rng, log_h, w);
            let v = variant(&gpu);
            assert_eq!(gpu.dft_batch(m.clone()).to_row_major_matrix(), cpu.dft_batch(m.clone()), "dft 2^{log_h} x {w} {v}");
            assert_eq!(gpu.idft_batch(m.clone()), cpu.idft_batch(m.clone()), "idft 2^{log_h} x {w} {v}");
            assert_eq!(enc.encode_batch(m.clone(), 2), cpu.encode_batch(m, 2), "encode 2^{log_h} x {w} {v}");
        }
    }
}

/// One-buffer transforms (the first pass reads the source, later passes and the bit reversal
/// run in place; or everything in a consumed full-size source) give the two-buffer transform's
/// words, which the tests above hold to Plonky3: forward, inverse (scaled), coset and
/// zero-padded (LDE) shapes, with and without the reversal, narrow, odd and wide rows.
#[test]
fn in_place_transforms_match_the_two_buffer_ones() {
    use whir_gpu::field::{as_words, from_words};
    use whir_gpu::NttSpec;
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let ntt = GpuNtt::new(ctx.clone());
        for log_n in 0..=14usize {
            for w in [1usize, 2, 3, 4, 8, 16, 64] {
                if (w << log_n) > 1 << 18 {
                    continue;
                }
                let mut specs = vec![NttSpec::forward(log_n, w), NttSpec::inverse(log_n, w)];
                specs.push(NttSpec { coset_shift: Some(BabyBear::from_u32(31)), ..NttSpec::forward(log_n, w) });
                if log_n >= 2 {
                    specs.push(NttSpec { valid_rows: 1 << (log_n - 2), coset_shift: Some(BabyBear::from_u32(31)), ..NttSpec::forward(log_n, w) });
                }
                // Rows left in the DIF passes' bit-reversed order (two or more rows), full and
                // zero-padded.
                if log_n >= 1 {
                    specs.push(NttSpec { bit_reversed_output: true, ..NttSpec::forward(log_n, w) });
                    specs.push(NttSpec {
                        valid_rows: 1 << (log_n - 1),
                        coset_shift: Some(BabyBear::from_u32(7)),
                        bit_reversed_output: true,
                        ..NttSpec::forward(log_n, w)
                    });
                }
                for spec in specs {
                    let input: Vec<BabyBear> = common::random_vec(&mut rng, spec.valid_rows * w);
                    let run = |how: u8| {
                        let src = ctx.transfers().upload("ntt source", as_words(&input));
                        let mut batch = ctx.batch("ntt");
                        let source = match how {
                            0 => NttSource::TwoBuffers(&src),
                            1 => NttSource::OneBuffer(&src),
                            _ => NttSource::GivenUp(src.clone()),
                        };
                        let out = ntt.record(&mut batch, source, &spec).unwrap();
                        let slot = batch.read(&out, 0, w << log_n);
                        from_words(ctx.run(batch).unwrap().into_words(slot).unwrap()).unwrap()
                    };
                    let want = run(0);
                    let what = format!(
                        "2^{log_n} x {w}, {} valid rows, shift {:?}, scale {:?} ({:?})",
                        spec.valid_rows,
                        spec.coset_shift,
                        spec.scale,
                        ctx.mul_variant()
                    );
                    assert!(run(1) == want, "in place: {what}");
                    assert!(run(2) == want, "consuming: {what}");
                }
            }
        }
    }
}

/// A result read back in chunks runs its last DIF passes chunk by chunk, each recorded just
/// before its chunk's copy (so the host drains one chunk while the next is transformed):
/// Plonky3's values at several chunk sizes, narrow, odd and wide rows, forward, coset and LDE
/// shapes; and for power-of-two widths the split really happens (more kernels than passes).
#[test]
fn chunked_readbacks_run_the_last_passes_chunk_by_chunk() {
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for ctx in common::fresh_contexts() {
        let ntt = std::sync::Arc::new(GpuNtt::new(ctx.clone()));
        let gpu = GpuDft::new(Some(ntt.clone())).with_cpu_threshold(0);
        let mut splits = 0;
        for chunk in [1u64 << 10, 12 << 10, 64 << 10] {
            ctx.transfers().set_transfer_chunk_bytes(chunk);
            for (log_h, w) in [(12usize, 1usize), (15, 1), (10, 16), (13, 16), (9, 64), (11, 5), (8, 70), (13, 3)] {
                let m = matrix(&mut rng, log_h, w);
                let shift: BabyBear = rng.random();
                let what = format!("2^{log_h} x {w}, chunks of {chunk} bytes ({:?})", ctx.mul_variant());
                let before = ctx.transfers().host_costs().dispatches;
                assert_eq!(gpu.dft_batch(m.clone()).to_row_major_matrix(), cpu.dft_batch(m.clone()), "dft {what}");
                let kernels = ctx.transfers().host_costs().dispatches - before;
                // Chunks of the most rows, a power of two, that fit (aligned for power-of-two
                // widths): the passes up front once, the rest once per chunk.
                // Chunks must start at storage-offset-aligned bytes (else no split).
                let rows = 1usize << (chunk as usize / (4 * w)).ilog2();
                let aligned = (rows * w * 4).is_multiple_of(ctx.limits().min_storage_buffer_offset_alignment as usize);
                match ntt.plan_split(log_h, w, rows) {
                    Some((plan, at)) if aligned && rows < 1 << log_h => {
                        let want = at + (plan.len() - at) * ((1 << log_h) / rows);
                        assert_eq!(kernels, want as u64, "dft {what}: {plan:?} split at {at}");
                        splits += 1;
                    }
                    _ => assert_eq!(kernels, ntt.plan(log_h, w).len() as u64, "dft {what}: no split"),
                }
                assert_eq!(gpu.coset_dft_batch(m.clone(), shift).to_row_major_matrix(), cpu.coset_dft_batch(m.clone(), shift), "coset dft {what}");
                assert_eq!(
                    gpu.coset_lde_batch(m.clone(), 1 + log_h % 2, shift).to_row_major_matrix(),
                    cpu.coset_lde_batch(m, 1 + log_h % 2, shift),
                    "lde {what}"
                );
            }
        }
        assert!(splits >= 5, "only {splits} transforms split");
    }
}

/// The GPU's keyed row checksums (what a result committed ahead is checked by) are the host's,
/// whole and added up a block of columns at a time, both multiply variants; widths 1-70 and
/// wider than a checksum group, heights not a multiple of a group.
#[test]
fn gpu_row_checksums_are_the_hosts() {
    use whir_gpu::row_checksum::{groups, RowChecksum};
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let checksum = RowChecksum::new();
        for (height, width) in [(1usize, 1usize), (7, 3), (600, 7), (1000, 8), (33, 70), (70, 41), (9, 4095), (5, 5001), (2048, 16)] {
            let what = format!("{height} x {width} ({:?})", ctx.mul_variant());
            let words: Vec<u32> = (0..height * width).map(|_| rng.random::<u32>()).collect();
            let key = checksum.key(width);
            let host = RowChecksum::host_sums(&key, height, width, |r| &words[r * width..(r + 1) * width]);
            let n = groups(height, width);
            let key_buffer = ctx.transfers().upload("key", &key);
            let matrix = ctx.transfers().upload("matrix", &words);
            let sums = ctx.memory().storage("sums", n * 4);
            let mut encoder = ctx.pipelines().encoder("checksum");
            RowChecksum::record(&ctx, &mut encoder, &key_buffer, (&matrix, (height * width * 4) as u64), height, (width, 0, width, width), &sums, false)
                .unwrap();
            assert_eq!(RowChecksum::from_words(&ctx.transfers().submit_and_read(encoder, &sums, n * 4).unwrap()), host, "whole {what}");
            // Blocks of 8 columns (the last shorter), each in a buffer of its own, added up.
            for first in (0..width).step_by(8) {
                let cols = 8.min(width - first);
                let block: Vec<u32> = (0..height).flat_map(|r| words[r * width + first..r * width + first + cols].to_vec()).collect();
                let block = ctx.transfers().upload("block", &block);
                let mut encoder = ctx.pipelines().encoder("checksum");
                RowChecksum::record(
                    &ctx,
                    &mut encoder,
                    &key_buffer,
                    (&block, (height * cols * 4) as u64),
                    height,
                    (cols, first, cols, width),
                    &sums,
                    first != 0,
                )
                .unwrap();
                ctx.transfers().submit(encoder).unwrap();
            }
            assert_eq!(
                RowChecksum::from_words(&ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &sums, n * 4).unwrap()),
                host,
                "by blocks {what}"
            );
            // A block starting at an odd column would split pairs: refused.
            let mut encoder = ctx.pipelines().encoder("checksum");
            if width > 2 {
                assert!(
                    RowChecksum::record(&ctx, &mut encoder, &key_buffer, (&matrix, (height * width * 4) as u64), height, (width, 1, 2, width), &sums, true)
                        .is_err(),
                    "odd first column {what}"
                );
            }
        }
    }
}

/// The same over KoalaBear: the tree committed ahead is `MerkleTreeMmcs`'s over
/// `Poseidon2KoalaBear<16>`, taken without an upload, and not for a changed LDE.
#[test]
fn koalabear_lde_trees_committed_ahead_are_plonky3s() {
    use p3_commit::Mmcs;
    use p3_koala_bear::KoalaBear;
    use whir_gpu::{GpuMerkle, GpuMmcs, GpuPoseidon2, Poseidon2Constants};
    let mut rng = common::rng();
    let cpu_dft = Radix2DFTSmallBatch::<KoalaBear>::default();
    for ctx in common::fresh_contexts() {
        let poseidon2 = std::sync::Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::<KoalaBear>::plonky3_default()));
        let mmcs = GpuMmcs::new(std::sync::Arc::new(GpuMerkle::new(poseidon2)), 1);
        let dft = GpuDft::<KoalaBear>::on(ctx.clone()).with_cpu_threshold(0).committing_ahead_for(&mmcs).with_commit_ahead_from(0);
        for (log_h, w) in [(7usize, 9usize), (9, 16)] {
            let m = RowMajorMatrix::new((0..w << log_h).map(|_| rng.random::<KoalaBear>()).collect(), w);
            let shift: KoalaBear = rng.random();
            let what = format!("2^{log_h} x {w} ({:?})", ctx.mul_variant());
            let lde = dft.coset_lde_batch(m.clone(), 1, shift).bit_reverse_rows().to_row_major_matrix();
            assert_eq!(lde, cpu_dft.coset_lde_batch(m.clone(), 1, shift).bit_reverse_rows().to_row_major_matrix(), "lde {what}");
            let before = ctx.transfers().transfer_counts().bytes_up;
            let (root, data) = mmcs.commit(vec![lde.clone()]);
            assert!(ctx.transfers().transfer_counts().bytes_up - before < 64, "{what}: the LDE went up again");
            let (cpu_root, cpu_data) = mmcs.cpu().commit(vec![lde.clone()]);
            assert_eq!(root, cpu_root, "root {what}");
            let index = rng.random_range(0..2 << log_h);
            let (ours, theirs) = (mmcs.open_batch(index, &data), mmcs.cpu().open_batch(index, &cpu_data));
            assert_eq!((ours.opened_values, ours.opening_proof), (theirs.opened_values, theirs.opening_proof), "opening {index} {what}");
            let mut changed = dft.coset_lde_batch(m, 1, shift).bit_reverse_rows().to_row_major_matrix();
            changed.values[0] += KoalaBear::ONE;
            assert_eq!(mmcs.commit(vec![changed.clone()]).0, mmcs.cpu().commit(vec![changed]).0, "changed LDE {what}");
        }
    }
}

/// A `GpuDft` committing ahead for a `GpuMmcs` (the LDE hashed into the MMCS's tree while still
/// on the GPU): the MMCS's commitment and openings are Plonky3's, and it uploads nothing when
/// it gets the unchanged LDE; an LDE changed in between, another matrix of the same shape, a
/// second commit of the same matrix, or a batch of several are committed from their rows.
#[test]
fn lde_trees_committed_ahead_are_plonky3s_and_only_for_unchanged_rows() {
    use p3_commit::Mmcs;
    use whir_gpu::{GpuMerkle, GpuMmcs, GpuPoseidon2, Poseidon2Constants};
    let mut rng = common::rng();
    let cpu_dft = Radix2DFTSmallBatch::<BabyBear>::default();
    for ctx in common::fresh_contexts() {
        let poseidon2 = std::sync::Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()));
        // With readback chunks of 4 KiB as well (the last passes run chunk by chunk).
        let default_chunk = ctx.transfers().transfer_chunk_bytes();
        for (cap_height, chunk) in [(0, None), (2, None), (1, Some(4 << 10))] {
            ctx.transfers().set_transfer_chunk_bytes(chunk.unwrap_or(default_chunk));
            let mmcs = GpuMmcs::new(std::sync::Arc::new(GpuMerkle::new(poseidon2.clone())), cap_height);
            let dft = GpuDft::on(ctx.clone()).with_cpu_threshold(0).committing_ahead_for(&mmcs).with_commit_ahead_from(0);
            for (log_h, w, added) in [(6usize, 5usize, 1usize), (9, 33, 1), (8, 16, 2)] {
                let m = matrix(&mut rng, log_h, w);
                let shift: BabyBear = rng.random();
                let what = format!("2^{log_h} x {w} +{added}, cap {cap_height}, chunks {chunk:?} ({:?})", ctx.mul_variant());
                let lde = dft.coset_lde_batch(m.clone(), added, shift).bit_reverse_rows().to_row_major_matrix();
                assert_eq!(lde, cpu_dft.coset_lde_batch(m.clone(), added, shift).bit_reverse_rows().to_row_major_matrix(), "lde {what}");
                // Unchanged: the tree committed ahead; no rows uploaded (a cap's node indices
                // may go up).
                let before = ctx.transfers().transfer_counts().bytes_up;
                let (root, data) = mmcs.commit(vec![lde.clone()]);
                let up = ctx.transfers().transfer_counts().bytes_up - before;
                assert!(up < 64, "{what}: {up} bytes went up: the LDE again");
                let (cpu_root, cpu_data) = mmcs.cpu().commit(vec![lde.clone()]);
                assert_eq!(root, cpu_root, "root {what}");
                for index in [0, 3, (2 << log_h) - 1] {
                    let (ours, theirs) = (mmcs.open_batch(index, &data), mmcs.cpu().open_batch(index, &cpu_data));
                    assert_eq!((ours.opened_values, ours.opening_proof), (theirs.opened_values, theirs.opening_proof), "opening {index} {what}");
                }
                // The tree is taken once: the same matrix again is committed from its rows.
                let before = ctx.transfers().transfer_counts().bytes_up;
                assert_eq!(mmcs.commit(vec![lde.clone()]).0, cpu_root, "second commit {what}");
                assert!(ctx.transfers().transfer_counts().bytes_up > before, "{what}: a tree taken twice");
                // One word changed after the DFT: the tree ahead is not used.
                let mut changed = dft.coset_lde_batch(m.clone(), added, shift).bit_reverse_rows().to_row_major_matrix();
                let at = rng.random_range(0..changed.values.len());
                changed.values[at] += BabyBear::ONE;
                assert_eq!(mmcs.commit(vec![changed.clone()]).0, mmcs.cpu().commit(vec![changed]).0, "changed word {at} {what}");
                // Another matrix of the same shape, and a batch holding the LDE: from their rows.
                let _ = dft.coset_lde_batch(m.clone(), added, shift);
                let other = matrix(&mut rng, log_h + added, w);
                assert_eq!(mmcs.commit(vec![other.clone()]).0, mmcs.cpu().commit(vec![other]).0, "another matrix {what}");
                let lde = dft.coset_lde_batch(m, added, shift).bit_reverse_rows().to_row_major_matrix();
                let half = matrix(&mut rng, log_h + added - 1, 3);
                assert_eq!(mmcs.commit(vec![lde.clone(), half.clone()]).0, mmcs.cpu().commit(vec![lde.clone(), half]).0, "batch {what}");
                // That commit dropped the tree: the LDE alone now goes up.
                let before = ctx.transfers().transfer_counts().bytes_up;
                assert_eq!(mmcs.commit(vec![lde.clone()]).0, cpu_root, "after a batch {what}");
                assert!(ctx.transfers().transfer_counts().bytes_up > before, "{what}: a tree kept past another commit");
            }
        }
        ctx.transfers().set_transfer_chunk_bytes(default_chunk);
        let mmcs = GpuMmcs::new(std::sync::Arc::new(GpuMerkle::new(poseidon2.clone())), 1);
        let dft = GpuDft::on(ctx.clone()).with_cpu_threshold(0).committing_ahead_for(&mmcs).with_commit_ahead_from(0);
        // Rows of 33 words over 2 MiB: a word changed in one of the last checksum groups (124
        // rows each) is seen.
        let m = matrix(&mut rng, 13, 33);
        let lde = dft.coset_lde_batch(m.clone(), 1, BabyBear::ONE).bit_reverse_rows().to_row_major_matrix();
        let mut changed = lde.clone();
        let last = changed.values.len() - 1 - rng.random_range(0..33 * 100);
        changed.values[last] += BabyBear::ONE;
        assert_eq!(mmcs.commit(vec![changed.clone()]).0, mmcs.cpu().commit(vec![changed]).0, "a word changed near the end");
        // Faults are injected where whir-gpu is built with `fault-injection` (the workspace's
        // tests turn it on; `cargo test -p whir-gpu` alone does not).
        #[cfg(feature = "fault-injection")]
        {
            // A failure inside the commit ahead (the readback of its checksum, awaited by the
            // MMCS) leaves the MMCS to commit the rows itself.
            ctx.faults().fail_readbacks(1, 1);
            let lde = dft.coset_lde_batch(m, 1, BabyBear::ONE).bit_reverse_rows().to_row_major_matrix();
            let before = ctx.transfers().transfer_counts().bytes_up;
            assert_eq!(mmcs.commit(vec![lde.clone()]).0, mmcs.cpu().commit(vec![lde]).0, "after a failed commit ahead");
            assert_eq!(ctx.faults().injected_failures_left(), 0, "the injected failure struck");
            assert!(ctx.transfers().transfer_counts().bytes_up > before, "the rows went up");
            // The same with the tree's root failing to come back (after the checksum's readback).
            ctx.faults().fail_readbacks(2, 1);
            let m = matrix(&mut rng, 13, 33);
            let lde = dft.coset_lde_batch(m, 1, BabyBear::ONE).bit_reverse_rows().to_row_major_matrix();
            let before = ctx.transfers().transfer_counts().bytes_up;
            assert_eq!(mmcs.commit(vec![lde.clone()]).0, mmcs.cpu().commit(vec![lde]).0, "after a failed root readback");
            assert_eq!(ctx.faults().injected_failures_left(), 0, "the injected failure struck the root");
            assert!(ctx.transfers().transfer_counts().bytes_up > before, "the rows went up after a failed root readback");
        }
    }
}

/// An LDE over one binding is computed a block of columns at a time; committed ahead, its
/// leaves are absorbed block by block (blocks of a multiple of 8 columns carry each row's
/// sponge state to the next): the MMCS takes that tree, which is Plonky3's, with its openings.
/// Where no block of 8 columns fits a binding the MMCS commits the rows itself.
#[test]
fn column_block_ldes_committed_ahead_absorb_their_leaves_block_by_block() {
    use p3_commit::Mmcs;
    use whir_gpu::{GpuMerkle, GpuMmcs, GpuOptions, GpuPoseidon2, LimitsProfile, Poseidon2Constants};
    let mut rng = common::rng();
    let cpu_dft = Radix2DFTSmallBatch::<BabyBear>::default();
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..Default::default() }) else {
        return;
    };
    // Readbacks in chunks of 8 KiB: each block's last passes run chunk by chunk, and its
    // leaves are absorbed once the block is read back.
    ctx.transfers().set_transfer_chunk_bytes(8 << 10);
    let poseidon2 = std::sync::Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()));
    let mmcs = GpuMmcs::new(std::sync::Arc::new(GpuMerkle::new(poseidon2)), 1);
    let ntt = std::sync::Arc::new(GpuNtt::new(ctx.clone()));
    let dft = GpuDft::new(Some(ntt.clone())).with_cpu_threshold(0).committing_ahead_for(&mmcs).with_commit_ahead_from(0);
    // (log rows, columns, added bits, committed ahead): 2^10-row LDEs take 16 columns a block;
    // 2^11-row ones 8, but their leaves' sponge states (128 KiB) do not fit a binding; 2^13-row
    // ones 2.
    for (log_h, w, added, ahead) in [(9usize, 40usize, 1usize, true), (9, 70, 1, true), (8, 33, 2, true), (10, 12, 1, false), (12, 5, 1, false)] {
        assert!(ntt.columns_per_pass(1 << log_h, 1 << (log_h + added), w).unwrap() < w, "2^{log_h} x {w} fits one binding");
        let m = matrix(&mut rng, log_h, w);
        let shift: BabyBear = rng.random();
        let what = format!("2^{log_h} x {w} +{added} ({:?})", ctx.mul_variant());
        let lde = dft.coset_lde_batch(m.clone(), added, shift).bit_reverse_rows().to_row_major_matrix();
        assert_eq!(lde, cpu_dft.coset_lde_batch(m, added, shift).bit_reverse_rows().to_row_major_matrix(), "lde {what}");
        let before = ctx.transfers().transfer_counts().bytes_up;
        let (root, data) = mmcs.commit(vec![lde.clone()]);
        let up = ctx.transfers().transfer_counts().bytes_up - before;
        assert_eq!(up < 64, ahead, "{what}: {up} bytes went up");
        let (cpu_root, cpu_data) = mmcs.cpu().commit(vec![lde]);
        assert_eq!(root, cpu_root, "root {what}");
        for index in [0, 5, (1 << (log_h + added)) - 1] {
            let (ours, theirs) = (mmcs.open_batch(index, &data), mmcs.cpu().open_batch(index, &cpu_data));
            assert_eq!((ours.opened_values, ours.opening_proof), (theirs.opened_values, theirs.opening_proof), "opening {index} {what}");
        }
    }
}

/// KoalaBear: the same GPU DFT entries (the same kernels composed over KoalaBear, twiddles from
/// its two-adic generators) against Plonky3's, on a smaller grid.
#[test]
fn koalabear_dft_lde_and_encoder_match_plonky3() {
    use p3_koala_bear::KoalaBear;
    type KbExt = BinomialExtensionField<KoalaBear, 4>;
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<KoalaBear>::default();
    // Contexts of this test's own: the dispatch count below must not see other tests' work.
    for ctx in common::fresh_contexts() {
        let dispatches = ctx.transfers().host_costs().dispatches;
        let ntt = std::sync::Arc::new(GpuNtt::new(ctx.clone()));
        ntt.set_poison_outputs(true);
        let gpu = GpuDft::<KoalaBear>::new(Some(ntt)).with_cpu_threshold(0);
        let enc = gpu.encoder();
        let v = variant_of(&gpu);
        // Directly, so a GPU failure is an error here rather than a fallback's warning.
        let probe: Vec<KoalaBear> = (0..64).map(|_| rng.random()).collect();
        let direct = gpu.try_transform(&probe, &[whir_gpu::NttSpec::forward(6, 1)]).expect("a KoalaBear NTT on the GPU");
        assert_eq!(direct, cpu.dft_batch(RowMajorMatrix::new(probe, 1)).values, "KoalaBear NTT {v}");
        for_each_shape(0..=14, &[1, 3, 16], 1 << 16, |log_h, w| {
            let m = RowMajorMatrix::new((0..(1 << log_h) * w).map(|_| rng.random::<KoalaBear>()).collect::<Vec<_>>(), w);
            assert_eq!(gpu.dft_batch(m.clone()).to_row_major_matrix(), cpu.dft_batch(m.clone()), "KoalaBear dft 2^{log_h} x {w} {v}");
            assert_eq!(gpu.idft_batch(m.clone()), cpu.idft_batch(m.clone()), "KoalaBear idft 2^{log_h} x {w} {v}");
            let shift: KoalaBear = rng.random();
            assert_eq!(
                gpu.coset_dft_batch(m.clone(), shift).to_row_major_matrix(),
                cpu.coset_dft_batch(m.clone(), shift),
                "KoalaBear coset dft 2^{log_h} x {w} {v}"
            );
            let added = 1 + (log_h + w) % 3;
            assert_eq!(
                gpu.coset_lde_batch(m.clone(), added, shift).to_row_major_matrix(),
                cpu.coset_lde_batch(m.clone(), added, shift),
                "KoalaBear coset lde 2^{log_h} x {w} +{added} {v}"
            );
            let rate = (log_h + w) % 4;
            assert_eq!(enc.encode_batch(m.clone(), rate), cpu.encode_batch(m, rate), "KoalaBear encode 2^{log_h} x {w} rate {rate} {v}");
        });
        for_each_shape(0..=12, &[1, 4], 1 << 14, |log_h, w| {
            let m = RowMajorMatrix::new((0..(1 << log_h) * w).map(|_| rng.random::<KbExt>()).collect::<Vec<_>>(), w);
            assert_eq!(gpu.dft_algebra_batch(m.clone()), cpu.dft_algebra_batch(m), "KoalaBear^4 dft_algebra 2^{log_h} x {w} {v}");
        });
        // KoalaBear's two-adic subgroup stops at 2^24 (BabyBear's at 2^27): a longer codeword is
        // refused by name, before anything is uploaded.
        let err = enc.try_encode_batch(RowMajorMatrix::new(vec![KoalaBear::ZERO; 1 << 4], 1), 21).unwrap_err();
        assert!(err.to_string().contains("KoalaBear's 2^24"), "{err}");
        // The transforms ran on the GPU, not the CPU fallback (which would warn and match too).
        let ran = ctx.transfers().host_costs().dispatches - dispatches;
        assert!(ran > 300, "the KoalaBear transforms did not run on the GPU ({ran} dispatches)");
    }
}

fn variant_of<F: whir_gpu::GpuField>(d: &GpuDft<F>) -> String {
    format!("{:?}", d.ntt().unwrap().context().mul_variant())
}
