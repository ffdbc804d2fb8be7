//! Host <-> GPU transfers: uploads (queue path below 1 MiB, pooled staging filled on all cores
//! above), row-by-row uploads, pooled buffers and readbacks return exactly what went in, and
//! rows of the wrong length are an error.

mod common;

use rand::RngExt;
use whir_wgpu::gpu::GpuError;

/// Word counts around the 1 MiB switch to staged transfers, and odd sizes past it.
const SIZES: [usize; 7] = [1, 1000, (1 << 18) - 1, 1 << 18, (1 << 18) + 1, (3 << 18) + 5, 1 << 21];

fn random_words(rng: &mut impl RngExt, n: usize) -> Vec<u32> {
    (0..n).map(|_| rng.random()).collect()
}

#[test]
fn uploads_and_readbacks_round_trip() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        for words in SIZES {
            let data = random_words(&mut rng, words);
            let buffer = ctx.upload("round trip", &data);
            assert_eq!(ctx.submit_and_read(ctx.encoder("read"), &buffer, words).unwrap(), data, "{words} words");
            // A second write into the same buffer reuses pooled staging memory.
            let again = random_words(&mut rng, words);
            ctx.write(&buffer, &again);
            assert_eq!(ctx.submit_and_read(ctx.encoder("read"), &buffer, words).unwrap(), again, "rewrite of {words} words");
        }
    }
}

#[test]
fn row_uploads_match_the_rows_in_any_pieces() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        for (rows, width) in [(1, 1), (7, 3), (1 << 15, 17), (1 << 13, 64), (100_003, 5)] {
            let data = random_words(&mut rng, rows * width);
            // Each row handed over in two pieces, split at a row-dependent point.
            let buffer = ctx
                .upload_rows("rows", rows, width, |r, write| {
                    let row = &data[r * width..(r + 1) * width];
                    let cut = r % (width + 1);
                    write(&row[..cut]);
                    write(&row[cut..]);
                })
                .unwrap();
            assert_eq!(ctx.submit_and_read(ctx.encoder("read"), &buffer, rows * width).unwrap(), data, "{rows} x {width}");
            ctx.recycle_storage(buffer);
        }
    }
}

#[test]
fn rows_of_the_wrong_length_are_an_error() {
    for ctx in common::contexts() {
        for (rows, width) in [(4, 8), (1 << 16, 8)] {
            let short = ctx.upload_rows("short rows", rows, width, |r, write| {
                let row = vec![r as u32; if r == rows / 2 { width - 1 } else { width }];
                write(&row);
            });
            assert!(matches!(short, Err(GpuError::InvalidInput(ref m)) if m.contains("did not fill")), "short row accepted: {short:?}");
            let long = ctx.upload_rows("long rows", rows, width, |_, write| write(&vec![1u32; width + 1]));
            assert!(matches!(long, Err(GpuError::InvalidInput(_))), "long row accepted: {long:?}");
        }
    }
}

#[test]
fn pooled_buffers_hold_what_was_last_written() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let words = (1 << 18) + 3;
        let first = random_words(&mut rng, words);
        let a = ctx.pooled_storage("pooled", words);
        ctx.write(&a, &first);
        assert_eq!(ctx.submit_and_read(ctx.encoder("read"), &a, words).unwrap(), first);
        ctx.recycle_storage(a);
        let second = random_words(&mut rng, words);
        let b = ctx.pooled_storage("pooled", words);
        ctx.write(&b, &second);
        assert_eq!(ctx.submit_and_read(ctx.encoder("read"), &b, words).unwrap(), second);
    }
}
