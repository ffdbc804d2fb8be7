//! Host <-> GPU transfers through wgpu on the default adapter: what wgpu's own paths cost beside
//! ours (`GpuTransfers::write`, `upload_rows`, `submit_and_read`: pooled staging, all cores).
//! `cargo run --release --example transfer_probe [MiB...]`; times in ms, after one warm-up round.

use std::time::Instant;

use p3_baby_bear::BabyBear;
use p3_field::extension::BinomialExtensionField;
use p3_field::PrimeCharacteristicRing;
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::extension::FlatMatrixView;
use p3_matrix::Matrix;
use whir_wgpu::gpu::transfer::write_matrix_row;
use whir_wgpu::gpu::wgpu;
use whir_wgpu::gpu::wgpu::util::DeviceExt;
use whir_wgpu::gpu::{record::NttSource, GpuContext};

type EF = BinomialExtensionField<BabyBear, 4>;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    // WHIR_LOG=whir_gpu=debug: our transfers' own timings.
    if let Ok(filter) = std::env::var("WHIR_LOG") {
        tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::new(filter)).with_writer(std::io::stderr).init();
    }
    // PROBE_HOST=MIB: host memory alone, on all cores: a parallel copy into memory already
    // touched, into fresh memory (4 KiB pages), into fresh memory advised to huge pages, and a
    // parallel read: what a readback into a grown Vec can reach.
    if let Some(mib) = std::env::var("PROBE_HOST").ok().and_then(|v| v.parse::<usize>().ok()) {
        use rayon::prelude::*;
        let words = (mib << 20) / 4;
        let src: Vec<u32> = (0..words as u32).into_par_iter().map(|i| i.wrapping_mul(7)).collect();
        const PIECE: usize = 1 << 16;
        let copy = |dst: &mut [u32]| dst.par_chunks_mut(PIECE).zip(src.par_chunks(PIECE)).for_each(|(d, s)| d.copy_from_slice(s));
        for round in 0..3 {
            let mut touched = vec![1u32; words];
            let t = Instant::now();
            copy(&mut touched);
            let t_touched = ms(t);
            let t = Instant::now();
            let mut fresh = vec![0u32; words];
            copy(&mut fresh);
            let t_fresh = ms(t);
            drop(fresh);
            let t = Instant::now();
            let mut huge = vec![0u32; words];
            whir_wgpu::gpu::transfer::advise_huge_pages(huge.as_ptr().cast(), words * 4);
            copy(&mut huge);
            let t_huge = ms(t);
            drop(huge);
            // The same copies with streaming stores (what transfers use).
            let stream = |dst: &mut [u32]| {
                dst.par_chunks_mut(PIECE)
                    .zip(src.par_chunks(PIECE))
                    .for_each(|(d, s)| unsafe { whir_wgpu::gpu::transfer::copy_streaming(s.as_ptr().cast(), d.as_mut_ptr().cast(), s.len() * 4) })
            };
            let mut touched2 = vec![1u32; words];
            let t = Instant::now();
            stream(&mut touched2);
            let t_stream_touched = ms(t);
            drop(touched2);
            let t = Instant::now();
            let mut huge = vec![0u32; words];
            whir_wgpu::gpu::transfer::advise_huge_pages(huge.as_ptr().cast(), words * 4);
            stream(&mut huge);
            let t_stream_huge = ms(t);
            drop(huge);
            println!("streaming stores: into touched {t_stream_touched:.1} ms, into fresh + huge pages {t_stream_huge:.1} ms");
            let t = Instant::now();
            let fresh = vec![0u32; words];
            fresh.par_chunks(PIECE).for_each(|c| {
                std::hint::black_box(c.iter().fold(0u32, |a, &x| a ^ x));
            });
            let t_read_zero = ms(t);
            let t = Instant::now();
            let sum = touched.par_chunks(PIECE).map(|c| c.iter().fold(0u32, |a, &x| a ^ x)).reduce(|| 0, |a, b| a ^ b);
            let t_read = ms(t);
            println!("host {mib} MiB round {round}: copy into touched memory {t_touched:.1} ms ({:.1} GB/s), into fresh {t_fresh:.1} ({:.1}), fresh + huge pages {t_huge:.1} ({:.1}); read {t_read:.1} ({:.1} GB/s; {sum}), read untouched zero pages {t_read_zero:.1}",
                (mib << 20) as f64 / t_touched / 1e6, (mib << 20) as f64 / t_fresh / 1e6, (mib << 20) as f64 / t_huge / 1e6, (mib << 20) as f64 / t_read / 1e6);
        }
        return;
    }
    let ctx = GpuContext::new_default().expect("GPU");
    println!("{} | rayon threads {}", ctx.summary(), rayon::current_num_threads());
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|s| s.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![64, 256] } else { sizes };
    let dev = ctx.device();
    let queue = ctx.queue();
    let wait = || {
        dev.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    };
    // Host-to-host DFTs (GpuDft::dft_batch, width 16) beside Plonky3's, phase by phase.
    if std::env::var("PROBE_DFT").is_ok() {
        use p3_dft::TwoAdicSubgroupDft;
        let dft = whir_wgpu::gpu::GpuDft::on(std::sync::Arc::new(GpuContext::new_default().expect("GPU")));
        let cpu = p3_dft::Radix2DFTSmallBatch::<BabyBear>::default();
        for log_n in [22usize, 24] {
            let m = RowMajorMatrix::new((0..(16usize << log_n) as u32).map(BabyBear::new).collect::<Vec<_>>(), 16);
            for _ in 0..3 {
                let input = m.clone();
                let t = Instant::now();
                let out = dft.dft_batch(input);
                let t_dft = ms(t);
                let t = Instant::now();
                drop(out);
                let t_drop = ms(t);
                let input = m.clone();
                let t = Instant::now();
                let out = cpu.dft_batch(input);
                let t_cpu = ms(t);
                drop(out);
                println!("2^{log_n} x 16 host to host: GpuDft {t_dft:.1} (then dropping its output {t_drop:.1}) | Plonky3 {t_cpu:.1}");
            }
            // The same steps one after another, each waited for: upload, transform, readback.
            let ntt = dft.ntt().expect("GPU").clone();
            let nctx = ntt.context().clone();
            let spec = whir_wgpu::gpu::NttSpec { bit_reversed_output: true, ..whir_wgpu::gpu::NttSpec::<p3_baby_bear::BabyBear>::forward(log_n, 16) };
            let words: Vec<u32> = m.values.iter().map(|x| whir_wgpu::gpu::field::to_word(*x)).collect();
            let mut back = vec![0u32; words.len()];
            for _ in 0..3 {
                let t = Instant::now();
                let buf = nctx.memory().pooled_for_upload("probe input", words.len());
                nctx.transfers().write(&buf, &words);
                nctx.device().poll(wgpu::PollType::wait_indefinitely()).expect("poll");
                let t_up = ms(t);
                let t = Instant::now();
                let mut batch = nctx.batch("probe ntt");
                let out = ntt.record(&mut batch, NttSource::TwoBuffers(&buf), &spec).expect("record");
                nctx.run(batch).expect("ntt");
                let t_ntt = ms(t);
                // Again at once (the GPU busy just before), and again after 40 ms idle.
                let again = |sleep_ms: u64| {
                    std::thread::sleep(std::time::Duration::from_millis(sleep_ms));
                    let t = Instant::now();
                    let mut batch = nctx.batch("probe ntt");
                    let out = ntt.record(&mut batch, NttSource::TwoBuffers(&buf), &spec).expect("record");
                    batch.lend(out);
                    nctx.run(batch).expect("ntt");
                    ms(t)
                };
                let (t_hot, t_idle) = (again(0), again(40));
                println!("2^{log_n} x 16 transform alone: {t_ntt:.1}, at once again {t_hot:.1}, after 40 ms idle {t_idle:.1}");
                // Wall time against the kernels' GPU time, two buffers and in place.
                for in_place in [false, true] {
                    let Some(timer) = whir_wgpu::gpu::record::KernelTimer::new(&nctx, 16).expect("timer") else { break };
                    let t = Instant::now();
                    let mut batch = nctx.batch("probe timed ntt").timed(timer);
                    let source = if in_place { NttSource::GivenUp(buf.clone()) } else { NttSource::TwoBuffers(&buf) };
                    let timed_out = ntt.record(&mut batch, source, &spec).expect("record");
                    if !in_place {
                        batch.lend(timed_out);
                    }
                    let kernels = nctx.run(batch).expect("timestamps").kernel_times().to_vec();
                    let wall = ms(t);
                    let gpu: f64 = kernels.iter().map(|k| k.1).sum::<f64>() / 1e6;
                    let each: Vec<String> = kernels.iter().map(|(l, t)| format!("{l} {:.2}", t / 1e6)).collect();
                    println!(
                        "2^{log_n} x 16 timed, {}: wall {wall:.1} ms, kernels {gpu:.2} ms ({})",
                        if in_place { "in place" } else { "two buffers" },
                        each.join(", ")
                    );
                }
                let t = Instant::now();
                let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut back);
                // SAFETY: u8 and MaybeUninit<u8> have the same layout.
                let dst = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(), dst.len()) };
                nctx.transfers().submit_and_read_chunked_into(nctx.pipelines().encoder("probe read"), &out, dst, None).map_err(|(e, _)| e).expect("read");
                let t_down = ms(t);
                nctx.memory().recycle_storage(out);
                nctx.memory().recycle_storage(buf);
                println!(
                    "2^{log_n} x 16 one step at a time: upload {t_up:.1} | transform {t_ntt:.1} | readback {t_down:.1} | sum {:.1}",
                    t_up + t_ntt + t_down
                );
            }
        }
    }
    // Back-to-back host-to-host DFTs as criterion runs them (a fresh input copy between calls):
    // PROBE_DFT_LOOP=LOG_N:CALLS.
    if let Ok(spec) = std::env::var("PROBE_DFT_LOOP") {
        use p3_dft::TwoAdicSubgroupDft;
        let mut it = spec.split(':').filter_map(|x| x.parse::<usize>().ok());
        let (log_n, calls) = (it.next().unwrap_or(22), it.next().unwrap_or(10));
        let dft = whir_wgpu::gpu::GpuDft::on(std::sync::Arc::new(GpuContext::new_default().expect("GPU")));
        let m = RowMajorMatrix::new((0..(16usize << log_n) as u32).map(BabyBear::new).collect::<Vec<_>>(), 16);
        let start = Instant::now();
        for i in 0..calls {
            let input = m.clone();
            let at = ms(start);
            let t = Instant::now();
            let out = dft.dft_batch(input);
            println!("call {i} at {at:.0} ms: GpuDft 2^{log_n} x 16 {:.1} ms", ms(t));
            drop(out);
        }
    }
    for mib in sizes {
        let words = (mib << 20) / 4;
        let host: Vec<u32> = (0..words as u32).map(|i| i.wrapping_mul(7)).collect();
        let bytes: &[u8] = bytemuck::cast_slice(&host);
        let dst = ctx.memory().storage("dst", words);
        // Rows of an extension-field matrix seen as base-field rows, as `ExtensionMmcs` hands
        // them to `GpuMmcs`.
        let ef_rows = words / 64;
        let flat = FlatMatrixView::<BabyBear, EF, _>::new(RowMajorMatrix::new(vec![EF::from_u32(7); ef_rows * 16], 16));
        for round in 0..2 {
            let t = Instant::now();
            let copy = host.clone();
            let t_clone = ms(t);
            drop(copy);

            let t = Instant::now();
            let fresh = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("init"), contents: bytes, usage: wgpu::BufferUsages::STORAGE });
            queue.submit([]);
            wait();
            let t_init = ms(t);
            drop(fresh);

            let t = Instant::now();
            queue.write_buffer(&dst, 0, bytes);
            queue.submit([]);
            wait();
            let t_write_buffer = ms(t);

            let t = Instant::now();
            ctx.transfers().write(&dst, &host);
            wait();
            let t_ours = ms(t);

            let t = Instant::now();
            let rows = ctx.transfers().upload_rows("flat", flat.height(), flat.width(), |r, write| write_matrix_row(&flat, r, write)).expect("upload");
            wait();
            let t_flat = ms(t);
            ctx.memory().recycle_storage(rows);

            // Readback: a MAP_READ buffer copied out by one core, then ours.
            let staging = dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size: (words * 4) as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let t = Instant::now();
            let mut enc = ctx.pipelines().encoder("read");
            enc.copy_buffer_to_buffer(&dst, 0, &staging, 0, (words * 4) as u64);
            queue.submit([enc.finish()]);
            staging.slice(..).map_async(wgpu::MapMode::Read, |r| r.expect("map"));
            wait();
            let t_map = ms(t);
            // PROBE_READ=1: what reading the mapped readback memory costs against ordinary host
            // memory, into memory already faulted in, one core and all cores (is the mapping
            // cached?), and with streaming loads (the way to read write-combined memory).
            if std::env::var("PROBE_READ").is_ok() {
                use rayon::prelude::*;
                let mapped = staging.slice(..).get_mapped_range().expect("mapped");
                let src: &[u8] = &mapped;
                let mut dst = vec![1u8; src.len()];
                let plain = vec![2u8; src.len()];
                let time = |f: &mut dyn FnMut()| {
                    let t = Instant::now();
                    f();
                    ms(t)
                };
                let mapped_one = time(&mut || dst.copy_from_slice(src));
                let host_one = time(&mut || dst.copy_from_slice(&plain));
                let mapped_all = time(&mut || dst.par_chunks_mut(1 << 20).zip(src.par_chunks(1 << 20)).for_each(|(d, s)| d.copy_from_slice(s)));
                let host_all = time(&mut || dst.par_chunks_mut(1 << 20).zip(plain.par_chunks(1 << 20)).for_each(|(d, s)| d.copy_from_slice(s)));
                #[cfg(target_arch = "x86_64")]
                let streamed = if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 is present; src and dst are 32-byte multiples long, and the
                    // loads are unaligned-safe only where src is 32-byte aligned (mapped ranges are).
                    let copy = |d: &mut [u8], s: &[u8]| unsafe { stream_copy(d, s) };
                    let one = time(&mut || copy(&mut dst, src));
                    let all = time(&mut || dst.par_chunks_mut(1 << 20).zip(src.par_chunks(1 << 20)).for_each(|(d, s)| copy(d, s)));
                    format!("streaming loads one core {one:.1}, all cores {all:.1}")
                } else {
                    "no AVX2".to_string()
                };
                #[cfg(not(target_arch = "x86_64"))]
                let streamed = String::new();
                assert!(dst == src, "streamed copy differs");
                println!("{mib} MiB read into faulted-in memory: from the mapping one core {mapped_one:.1}, all cores {mapped_all:.1} | from host memory one core {host_one:.1}, all cores {host_all:.1} | {streamed}");
                drop(mapped);
            }
            let t = Instant::now();
            let one_core = staging.slice(..).get_mapped_range().expect("mapped").to_vec();
            let t_one_core = ms(t);
            staging.unmap();
            let t = Instant::now();
            let read = ctx.transfers().submit_and_read(ctx.pipelines().encoder("read"), &dst, words).expect("read");
            let t_read_ours = ms(t);
            assert_eq!(read, host);
            assert_eq!(bytemuck::cast_slice::<u8, u32>(&one_core), &host[..]);

            if round > 0 {
                println!(
                    "{mib} MiB up: create_buffer_init {t_init:.1} | queue.write_buffer {t_write_buffer:.1} | ours {t_ours:.1} | ours, \
                     FlatMatrixView rows (BabyBear^4, 16 a row) {t_flat:.1} || down: copy + map {t_map:.1}, then one core {t_one_core:.1} | \
                     ours in all {t_read_ours:.1} || host clone {t_clone:.1}"
                );
            }
        }
    }
}

/// Copies `s` into `d` (same length, a multiple of 32 bytes, `s` 32-byte aligned) with
/// streaming (non-temporal) loads.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn stream_copy(d: &mut [u8], s: &[u8]) {
    use std::arch::x86_64::{__m256i, _mm256_storeu_si256, _mm256_stream_load_si256};
    assert!(d.len() == s.len() && s.len().is_multiple_of(32) && (s.as_ptr() as usize).is_multiple_of(32));
    for i in (0..s.len()).step_by(32) {
        // SAFETY: in bounds (checked lengths), aligned source.
        unsafe {
            let v = _mm256_stream_load_si256(s.as_ptr().add(i).cast::<__m256i>());
            _mm256_storeu_si256(d.as_mut_ptr().add(i).cast::<__m256i>(), v);
        }
    }
}
