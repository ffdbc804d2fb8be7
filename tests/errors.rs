//! Bad input gets a clear error, never a panic or a wrong answer.

mod common;

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use whir_wgpu::gpu::{AdapterSelector, GpuContext, GpuError, GpuNtt, GpuOptions, NttSpec};

#[test]
fn bad_transform_shapes_are_errors() {
    for ctx in common::contexts() {
        let ntt = GpuNtt::new(ctx);
        let err = ntt.transform(&[], &NttSpec::forward(3, 0)).unwrap_err();
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
        let spec = NttSpec::forward(27, 8);
        let mut enc = ntt.context().encoder("too large");
        let src = ntt.context().storage("tiny", 1);
        match ntt.record(&mut enc, &src, &spec) {
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
    let err = GpuContext::new(GpuOptions {
        adapter: AdapterSelector::Name("no-such-gpu-xyz".into()),
        mul_variant: None,
    })
    .unwrap_err();
    assert!(matches!(err, GpuError::AdapterNotFound { .. }), "{err}");
    assert!(err.to_string().contains("available: [0]"), "{err}");
    let _ = Arc::new(());
}
