//! Host <-> GPU transfers: uploads (queue path below 1 MiB, pooled staging filled on all cores
//! above), row-by-row uploads, pooled buffers and readbacks return exactly what went in, and
//! rows of the wrong length are an error.

#[path = "../../../tests/common/gpu.rs"]
mod common;

use rand::RngExt;
use whir_gpu::GpuError;

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
            let buffer = ctx.transfers().upload("round trip", &data);
            assert_eq!(ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &buffer, words).unwrap(), data, "{words} words");
            // A second write into the same buffer reuses pooled staging memory.
            let again = random_words(&mut rng, words);
            ctx.transfers().write(&buffer, &again);
            assert_eq!(ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &buffer, words).unwrap(), again, "rewrite of {words} words");
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
                .transfers()
                .upload_rows("rows", rows, width, |r, write| {
                    let row = &data[r * width..(r + 1) * width];
                    let cut = r % (width + 1);
                    write(&row[..cut]);
                    write(&row[cut..]);
                })
                .unwrap();
            assert_eq!(ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &buffer, rows * width).unwrap(), data, "{rows} x {width}");
            ctx.memory().recycle_storage(buffer);
        }
    }
}

#[test]
fn rows_of_the_wrong_length_are_an_error() {
    for ctx in common::contexts() {
        for (rows, width) in [(4, 8), (1 << 16, 8)] {
            let short = ctx.transfers().upload_rows("short rows", rows, width, |r, write| {
                let row = vec![r as u32; if r == rows / 2 { width - 1 } else { width }];
                write(&row);
            });
            assert!(matches!(short, Err(GpuError::InvalidInput(ref m)) if m.contains("did not fill")), "short row accepted: {short:?}");
            let long = ctx.transfers().upload_rows("long rows", rows, width, |_, write| write(&vec![1u32; width + 1]));
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
        let a = ctx.memory().pooled_storage("pooled", words);
        ctx.transfers().write(&a, &first);
        assert_eq!(ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &a, words).unwrap(), first);
        ctx.memory().recycle_storage(a);
        let second = random_words(&mut rng, words);
        let b = ctx.memory().pooled_storage("pooled", words);
        ctx.transfers().write(&b, &second);
        assert_eq!(ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &b, words).unwrap(), second);
    }
}

/// Transfers larger than a staging chunk go through a few pooled chunks in flight (here chunks
/// of 12 KiB, so test sizes cross many of them, with and without a short last chunk): uploads,
/// row uploads (chunks of whole rows), readbacks and a host-to-host DFT return exactly what a
/// single staging buffer would.
#[test]
fn chunked_transfers_round_trip() {
    use p3_dft::TwoAdicSubgroupDft;
    use p3_matrix::dense::RowMajorMatrix;
    use whir_gpu::GpuDft;
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        ctx.transfers().set_transfer_chunk_bytes(12 << 10);
        for words in [3 << 10, (3 << 10) + 1, 7 << 10, 100_000, 1 << 18, (1 << 18) + 13] {
            let data = random_words(&mut rng, words);
            let buffer = ctx.transfers().upload("chunked", &data);
            assert_eq!(ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &buffer, words).unwrap(), data, "{words} words");
            let again = random_words(&mut rng, words);
            ctx.transfers().write(&buffer, &again);
            assert_eq!(ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &buffer, words).unwrap(), again, "rewrite of {words} words");
        }
        for (rows, width) in [(5000usize, 7usize), (3, 4000), (1 << 12, 16)] {
            let data = random_words(&mut rng, rows * width);
            let buffer = ctx.transfers().upload_rows("chunked rows", rows, width, |r, write| write(&data[r * width..(r + 1) * width])).unwrap();
            assert_eq!(ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &buffer, rows * width).unwrap(), data, "{rows} rows of {width}");
        }
        let dft = GpuDft::on(ctx.clone()).with_cpu_threshold(0);
        for (log_h, w) in [(12usize, 16usize), (10, 9)] {
            let m = RowMajorMatrix::new(common::random_vec(&mut rng, (1 << log_h) * w), w);
            let want = p3_dft::Radix2DFTSmallBatch::default().coset_lde_batch(m.clone(), 1, p3_baby_bear::BabyBear::new(7));
            let got = dft.coset_lde_batch(m, 1, p3_baby_bear::BabyBear::new(7));
            assert_eq!(p3_matrix::Matrix::to_row_major_matrix(got).values, want.values, "LDE of 2^{log_h} x {w} ({:?})", ctx.mul_variant());
        }
    }
}

/// A buffer handed back while recorded work still uses it (`recycle_after_submit`) goes to the
/// same thread's next `pooled_storage` at once, but to another thread's only after this
/// thread's next submission: another thread could otherwise write it before that work runs.
#[test]
fn buffers_in_unsubmitted_work_stay_with_their_thread() {
    for ctx in common::fresh_contexts() {
        let words = 12_345;
        let from_another_thread = |ctx: &std::sync::Arc<whir_gpu::GpuContext>| {
            let ctx = ctx.clone();
            std::thread::spawn(move || ctx.memory().pooled_storage("other thread", words)).join().unwrap()
        };
        let held = ctx.memory().storage("held", words);
        ctx.memory().recycle_after_submit(held.clone());
        assert!(from_another_thread(&ctx) != held, "another thread took a buffer that unsubmitted work uses");
        let again = ctx.memory().pooled_storage("same thread", words);
        assert!(again == held, "the recording thread does not get its own buffer back");
        ctx.memory().recycle_after_submit(again);
        ctx.transfers().submit(ctx.pipelines().encoder("release")).unwrap();
        assert!(from_another_thread(&ctx) == held, "the buffer did not join the pool after the submission");
    }
}

/// A batch whose wait comes later (`submit_batch`, `finish_batch`) returns what the buffer held
/// when it was submitted, even after the buffer is written again and other work is waited for
/// in between; at every size, the chunked ones (read at once) included, one region or several.
#[test]
fn readbacks_finished_later_hold_what_was_there_when_submitted() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        for words in [0, 1, 1000, (1 << 18) + 3, (16 << 20) + 7] {
            let first = random_words(&mut rng, words);
            let buffer = ctx.transfers().upload("read later", &first);
            let mut batch = ctx.batch("read later");
            let whole = batch.read(&buffer, 0, words);
            let tail = batch.read(&buffer, words / 3, words - words / 3);
            let pending = ctx.submit_batch(batch).unwrap();
            let mut alone = ctx.batch("read later");
            let alone_slot = alone.read(&buffer, 0, words);
            let alone = ctx.submit_batch(alone).unwrap();
            let second = random_words(&mut rng, words);
            ctx.transfers().write(&buffer, &second);
            assert_eq!(
                ctx.transfers().submit_and_read(ctx.pipelines().encoder("read now"), &buffer, words).unwrap(),
                second,
                "{words} words: the second write"
            );
            let readback = ctx.finish_batch(pending).unwrap();
            assert_eq!(readback.get(whole).unwrap(), &first[..], "{words} words: the readback submitted first");
            assert_eq!(readback.get(tail).unwrap(), &first[words / 3..], "{words} words: the second region");
            assert_eq!(ctx.finish_batch(alone).unwrap().get(alone_slot).unwrap(), &first[..], "{words} words: one region");
        }
        for (first, words) in [(0, 5), (3, 2), (usize::MAX, 2)] {
            let mut batch = ctx.batch("too many");
            batch.read(&ctx.memory().storage("small", 4), first, words);
            assert!(ctx.submit_batch(batch).is_err(), "reading words {first}.. of a 4-word buffer is an error");
            let mut batch = ctx.batch("too many");
            batch.read(&ctx.memory().storage("small", 4), first, words);
            assert!(ctx.run(batch).is_err(), "reading words {first}.. of a 4-word buffer is an error");
        }
    }
}

/// A readback checked against a bound (a field's canonical range, as host-to-host DFTs read
/// theirs) copies every word and reports the first one that is not below the bound, by its
/// word offset, across chunk boundaries; unchecked, the same words come back as they are.
#[test]
fn checked_readbacks_report_the_first_word_out_of_range() {
    const P: u32 = 0x7800_0001;
    let mut rng = common::rng();
    for ctx in common::fresh_contexts() {
        ctx.transfers().set_transfer_chunk_bytes(12 << 10);
        let words = 100_000;
        let read = |data: &[u32], below: Option<u32>| {
            let buffer = ctx.transfers().upload("checked", data);
            let mut out = vec![0u32; data.len()];
            // SAFETY: initialised words seen as possibly uninitialised bytes, only written to.
            let dst = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(), data.len() * 4) };
            ctx.transfers().submit_and_read_chunked_into(ctx.pipelines().encoder("checked read"), &buffer, dst, below).map(|()| out)
        };
        let mut data: Vec<u32> = random_words(&mut rng, words).into_iter().map(|w| w % P).collect();
        assert_eq!(read(&data, Some(P)).expect("all canonical"), data);
        // Offending words in two different chunks, the later one first in memory order last.
        // (Past the first 12 KiB chunk, so an offset counted from its chunk would show.)
        let first = rng.random_range(4_000..words / 2);
        data[first] = P;
        data[words - 5] = u32::MAX;
        match read(&data, Some(P)) {
            Err((GpuError::Device(msg), written)) => {
                assert!(msg.contains(&format!("offset {first}")), "{msg}");
                assert!(written, "the copy had started");
            }
            other => panic!("out-of-range word not reported: {:?}", other.map(|_| ())),
        }
        assert_eq!(read(&data, None).expect("unchecked"), data);
    }
}

/// A batch gives back every buffer it borrowed, whether it runs, is sent, fails to run or is
/// dropped unrun: each time the pool holds the batch's scratch buffers again, and the next
/// batch takes them from there instead of allocating.
#[test]
fn batches_give_their_buffers_back_on_every_path() {
    for ctx in common::fresh_contexts() {
        let words = 1 << 16;
        let src = ctx.transfers().upload("source", &(0..words as u32).collect::<Vec<_>>());
        let pooled = |ctx: &whir_gpu::GpuContext| ctx.memory().pooled_bytes();
        type EndsBatch = fn(&whir_gpu::GpuContext, whir_gpu::record::Batch<'_>) -> bool;
        let cases: [(&str, EndsBatch); 4] = [
            ("run", |ctx, batch| ctx.run(batch).is_ok()),
            ("sent", |ctx, batch| ctx.send(batch).is_ok()),
            ("submitted, finished later", |ctx, batch| ctx.submit_batch(batch).and_then(|f| ctx.finish_batch(f)).is_ok()),
            ("dropped unrun", |_, batch| {
                drop(batch);
                true
            }),
        ];
        for (what, end) in cases {
            ctx.memory().trim_pools();
            let before = pooled(&ctx);
            let mut batch = ctx.batch("pool test");
            let scratch = batch.scratch("scratch", words);
            batch.copy_words(&src, 0, &scratch, 0, words);
            assert!(end(&ctx, batch), "{what}: the batch failed");
            assert!(
                pooled(&ctx) >= before + (words * 4) as u64,
                "{what}: the scratch buffer is not back in the pool ({} bytes pooled, {before} before)",
                pooled(&ctx)
            );
        }
        // A batch whose read is refused gives its buffers back too, and nothing ran.
        ctx.memory().trim_pools();
        let before = pooled(&ctx);
        let mut batch = ctx.batch("pool test");
        let scratch = batch.scratch("scratch", words);
        batch.read(&scratch, words, 1);
        assert!(ctx.run(batch).is_err(), "a read past the buffer's end is refused");
        assert!(pooled(&ctx) >= before + (words * 4) as u64, "a refused batch kept its scratch buffer");
        // A batch with reads is not sent (its reads would be lost).
        let mut batch = ctx.batch("pool test");
        batch.read(&src, 0, 4);
        assert!(ctx.send(batch).is_err(), "a batch with reads is refused by send");
        // Reads come back in order, each from its own region, taken when the batch ends, and a
        // snapshot as the region was when it was taken.
        let mut batch = ctx.batch("order test");
        let scratch = batch.scratch("scratch", 8);
        batch.copy_words(&src, 0, &scratch, 0, 8);
        let snap = batch.snapshot(&scratch, 0, 8);
        batch.copy_words(&src, 8, &scratch, 0, 8);
        let (late, tail) = (batch.read(&scratch, 0, 8), batch.read(&src, words - 3, 3));
        let readback = ctx.run(batch).unwrap();
        assert_eq!(readback.get(snap).unwrap(), &(0..8).collect::<Vec<u32>>()[..], "the snapshot");
        assert_eq!(readback.get(late).unwrap(), &(8..16).collect::<Vec<u32>>()[..], "the region at the batch's end");
        assert_eq!(readback.get(tail).unwrap(), &((words - 3) as u32..words as u32).collect::<Vec<u32>>()[..], "the tail");
    }
}
