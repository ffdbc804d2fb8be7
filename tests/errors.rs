//! Bad input gets a clear error, never a panic or a wrong answer.

mod common;

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use whir_wgpu::gpu::{record::NttSource, AdapterSelector, GpuContext, GpuError, GpuNtt, GpuOptions, NttSpec};

#[test]
fn bad_transform_shapes_are_errors() {
    for ctx in common::contexts() {
        let ntt = GpuNtt::new(ctx);
        let err = ntt.transform(&[], &NttSpec::<BabyBear>::forward(3, 0)).unwrap_err();
        assert!(err.to_string().contains("width must be at least 1"), "{err}");

        let err = ntt.transform(&[BabyBear::default(); 8], &NttSpec::forward(28, 1)).unwrap_err();
        assert!(err.to_string().contains("two-adicity"), "{err}");

        let err = ntt.transform(&[BabyBear::default(); 5], &NttSpec::forward(3, 1)).unwrap_err();
        assert!(err.to_string().contains("5 values given for 8 rows x 1 columns"), "{err}");

        let spec = NttSpec { valid_rows: 16, ..NttSpec::forward(3, 1) };
        let err = ntt.transform(&[BabyBear::default(); 16], &spec).unwrap_err();
        assert!(err.to_string().contains("exceed the transform height"), "{err}");
    }
}

#[test]
fn sizes_over_the_adapter_limit_fail_loudly_before_allocating() {
    for ctx in common::contexts() {
        let limit = ctx.max_binding_bytes();
        let ntt = GpuNtt::new(ctx);
        // 2^27 rows x 8 columns = 4 GiB: over every adapter's single-binding limit.
        let spec = NttSpec::<BabyBear>::forward(27, 8);
        let mut batch = ntt.context().batch("too large");
        let src = ntt.context().memory().storage("tiny", 1);
        match ntt.record(&mut batch, NttSource::TwoBuffers(&src), &spec) {
            Err(GpuError::TooLarge { needed, limit: l, .. }) => {
                assert_eq!(l, limit);
                assert_eq!(needed, 4 << 30);
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }
}

#[test]
fn unknown_adapter_names_list_the_available_ones() {
    if common::contexts().is_empty() {
        return;
    }
    let err = GpuContext::new(GpuOptions { adapter: AdapterSelector::Name("no-such-gpu-xyz".into()), ..Default::default() }).unwrap_err();
    assert!(matches!(err, GpuError::AdapterNotFound { .. }), "{err}");
    assert!(err.to_string().contains("available: [0]"), "{err}");
    let _ = Arc::new(());
}

#[test]
fn sizes_that_would_overflow_are_errors() {
    use whir_wgpu::gpu::{record::KernelTimer, record::TreeRows, record::TreeSpec, GpuMerkle, GpuPoseidon2, Poseidon2Constants};
    for ctx in common::contexts() {
        let merkle = GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear())));
        // 2^63 x 2 wraps to 0 in usize: must not be taken for the empty input.
        let tiny = ctx.memory().storage("tiny", 8);
        for (h, w) in [(1usize << 63, 2usize), (1 << 33, 1)] {
            match merkle.commit(TreeRows::Matrix(&tiny), TreeSpec::new(h, w)) {
                Err(GpuError::InvalidInput(_)) => {}
                Err(e) => panic!("{h} x {w}: {e}"),
                Ok(_) => panic!("{h} x {w}: committed"),
            }
        }
        let mut batch = ctx.batch("too tall");
        let err = merkle.record_tree(&mut batch, TreeRows::Matrix(&tiny), TreeSpec::new(1 << 32, 1)).err().expect("refused");
        assert!(err.to_string().contains("32-bit row indexing"), "{err}");

        let ntt = GpuNtt::new(ctx.clone());
        let (a, b) = (ctx.memory().storage("a", 64), ctx.memory().storage("b", 64));
        for words in [(1usize << 32) + 4, 6, 128] {
            let err = ntt.record_copy(&mut batch, &a, &b, words).unwrap_err();
            assert!(matches!(err, GpuError::InvalidInput(_)), "{words}: {err}");
        }
        ntt.record_copy(&mut batch, &a, &b, 64).unwrap();

        for kernels in [0, 2049, u32::MAX / 2 + 1, u32::MAX] {
            assert!(matches!(KernelTimer::new(&ctx, kernels), Err(GpuError::InvalidInput(_))), "{kernels}");
        }
        assert!(KernelTimer::new(&ctx, 2048).is_ok());

        let encoder = whir_wgpu::gpu::GpuDft::new(Some(Arc::new(GpuNtt::new(ctx.clone())))).encoder();
        let message = p3_matrix::dense::RowMajorMatrix::new(vec![BabyBear::default(); 8], 2);
        // 4 rows at rate 2^-26 is 2^28 rows, past BabyBear's 2^27.
        for rate in [26, 64, usize::MAX] {
            match encoder.try_encode_batch(message.clone(), rate) {
                Err(e) => assert!(e.to_string().contains("BabyBear's 2^27"), "{rate}: {e}"),
                Ok(_) => panic!("rate 2^-{rate} encoded"),
            }
        }
    }
}

#[test]
fn recording_errors_outside_scoped_calls_are_returned() {
    for ctx in common::contexts() {
        // A copy past the end of its source is a validation error wgpu raises when the encoder
        // is finished: submit_and_read must return it, not log it and return garbage.
        let (small, dst) = (ctx.memory().storage("small", 4), ctx.memory().storage("dst", 64));
        let mut enc = ctx.pipelines().encoder("bad copy");
        enc.copy_buffer_to_buffer(&small, 0, &dst, 0, 256);
        let err = ctx.transfers().submit_and_read(enc, &dst, 4).unwrap_err();
        assert!(matches!(err, GpuError::Validation { .. }), "{err}");
        let mut enc = ctx.pipelines().encoder("bad copy");
        enc.copy_buffer_to_buffer(&small, 0, &dst, 0, 256);
        assert!(matches!(ctx.transfers().submit_and_wait(enc), Err(GpuError::Validation { .. })));
        // Reading more than the buffer holds is refused up front.
        let err = ctx.transfers().submit_and_read(ctx.pipelines().encoder("over-read"), &small, 5).unwrap_err();
        assert!(matches!(err, GpuError::InvalidInput(_)), "{err}");
        // The context still works afterwards.
        ctx.transfers().write(&dst, &[7; 16]);
        assert_eq!(ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &dst, 16).unwrap(), vec![7; 16]);
        assert_eq!(ctx.faults().take_uncaptured_error(), None);
    }
}

#[test]
fn failed_merkle_readbacks_fall_back_to_the_cpu_tree() {
    use p3_commit::Mmcs;
    use p3_matrix::dense::RowMajorMatrix;
    use whir_wgpu::gpu::{plumbing::GpuProverData, GpuMerkle, GpuMmcs, GpuPoseidon2, Poseidon2Constants};
    use whir_wgpu::verifier::hash::{CpuMmcs, LeafHash, NodeCompress};
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        let merkle = Arc::new(GpuMerkle::new(Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()))));
        let gpu = GpuMmcs::new(merkle, 0);
        let perm = Poseidon2Constants::default_babybear().to_cpu();
        let cpu =
            CpuMmcs::<p3_baby_bear::BabyBear>::new(LeafHash::<p3_baby_bear::BabyBear>::new(perm.clone()), NodeCompress::<p3_baby_bear::BabyBear>::new(perm), 0);
        let m = RowMajorMatrix::new(common::random_vec(&mut rng, 256 * 8), 8);
        let (gcap, gdata) = gpu.commit(vec![m.clone()]);
        let (ccap, cdata) = cpu.commit(vec![m]);
        assert_eq!(gcap, ccap);
        assert!(matches!(gdata, GpuProverData::Gpu { .. }));
        let indices = [3, 200, 3, 77];
        ctx.faults().fail_next_readbacks(1);
        let ((gv, gp), (cv, cp)) = (gpu.open_multi_batch(&indices, &gdata), cpu.open_multi_batch(&indices, &cdata));
        assert_eq!((gv, gp.sibling_hashes), (cv, cp.sibling_hashes), "multi-opening after a failed readback");
        ctx.faults().fail_next_readbacks(1);
        let (g, c) = (gpu.open_batch(77, &gdata), cpu.open_batch(77, &cdata));
        assert_eq!((g.opened_values, g.opening_proof), (c.opened_values, c.opening_proof), "opening after a failed readback");
        // A failed commit readback commits on the CPU, with the same cap.
        ctx.faults().fail_next_readbacks(1);
        let (cap, data) = gpu.commit(vec![RowMajorMatrix::new(common::random_vec(&mut rng, 64 * 8), 8)]);
        assert!(matches!(data, GpuProverData::Cpu(_)));
        assert_eq!(cap.roots().len(), 1);
    }
}

/// A GPU DFT whose readback fails before writing anything computes on the CPU instead, with
/// its input intact (the GPU result would have replaced the input in its own memory).
#[test]
fn failed_dft_readbacks_fall_back_to_the_cpu_with_the_input_intact() {
    use p3_dft::TwoAdicSubgroupDft;
    use p3_matrix::dense::RowMajorMatrix;
    use p3_matrix::Matrix;
    use whir_wgpu::gpu::{GpuDft, GpuNtt};
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        let dft = GpuDft::new(Some(Arc::new(GpuNtt::new(ctx.clone())))).with_cpu_threshold(0);
        let cpu = p3_dft::Radix2DFTSmallBatch::<p3_baby_bear::BabyBear>::default();
        // Also in transfer chunks of 4 KiB: the last passes split by chunk, and an LDE's grown
        // memory touched ahead by threads that the failed readback must still join.
        for (log_h, w, chunk) in [(10usize, 4usize, None), (6, 33, None), (10, 4, Some(4u64 << 10)), (9, 16, Some(4 << 10))] {
            ctx.transfers().set_transfer_chunk_bytes(chunk.unwrap_or(64 << 20));
            let m = RowMajorMatrix::new(common::random_vec(&mut rng, (1 << log_h) * w), w);
            let shift = p3_baby_bear::BabyBear::new(31);
            ctx.faults().fail_next_readbacks(1);
            assert_eq!(dft.dft_batch(m.clone()).to_row_major_matrix(), cpu.dft_batch(m.clone()), "dft after a failed readback");
            ctx.faults().fail_next_readbacks(1);
            assert_eq!(dft.coset_lde_batch(m.clone(), 1, shift).to_row_major_matrix(), cpu.coset_lde_batch(m.clone(), 1, shift), "lde after a failed readback");
            // And the GPU path itself, afterwards.
            assert_eq!(dft.coset_lde_batch(m.clone(), 2, shift).to_row_major_matrix(), cpu.coset_lde_batch(m, 2, shift));
        }
    }
}
