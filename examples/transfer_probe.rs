//! Host <-> GPU transfer paths through wgpu, timed on the default adapter: what each way of
//! moving a matrix costs. `cargo run --release --example transfer_probe [MiB...]`.

use std::time::Instant;

use rayon::prelude::*;
use whir_wgpu::gpu::wgpu;
use p3_baby_bear::BabyBear;
use p3_field::extension::BinomialExtensionField;
use p3_field::PrimeCharacteristicRing;
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::extension::FlatMatrixView;
use p3_matrix::Matrix;
use whir_wgpu::gpu::transfer::write_matrix_row;
use whir_wgpu::gpu::GpuContext;

type EF = BinomialExtensionField<BabyBear, 4>;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn par_copy(dst: &mut [u8], src: &[u8]) {
    const CHUNK: usize = 1 << 20;
    dst.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(d, s)| d.copy_from_slice(s));
}

struct Piece<'a>(wgpu::WriteOnly<'a, [u8]>, usize);
// SAFETY: each piece is a disjoint range of one mapped buffer.
unsafe impl Send for Piece<'_> {}

fn par_write(dst: wgpu::WriteOnly<'_, [u8]>, src: &[u8]) {
    const CHUNK: usize = 1 << 20;
    let mut pieces = Vec::new();
    let mut rest = dst;
    let mut off = 0;
    while off < src.len() {
        let n = CHUNK.min(src.len() - off);
        let (a, b) = rest.split_at(n);
        pieces.push(Piece(a, off));
        rest = b;
        off += n;
    }
    pieces.into_par_iter().for_each(|Piece(mut d, o)| {
        let n = d.len();
        d.copy_from_slice(&src[o..o + n])
    });
}

fn main() {
    let ctx = GpuContext::new_default().expect("GPU");
    println!("{} | rayon threads {}", ctx.summary(), rayon::current_num_threads());
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|s| s.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![64, 256] } else { sizes };
    let dev = ctx.device();
    let queue = ctx.queue();
    for mib in sizes {
        let bytes = mib << 20;
        let host: Vec<u8> = (0..bytes).map(|i| (i * 7) as u8).collect();
        let dst = ctx.storage("dst", bytes / 4);
        let wait = || {
            dev.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        };
        for rep in 0..3 {
            let t = Instant::now();
            let v = host.clone();
            let t_clone = ms(t);
            let words: Vec<u32> = v.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
            let t = Instant::now();
            let b = ctx.upload("u", &words);
            queue.submit([]);
            wait();
            let t_init = ms(t);
            drop(b);
            let t = Instant::now();
            queue.write_buffer(&dst, 0, &host);
            queue.submit([]);
            wait();
            let t_write = ms(t);
            // Persistent staging buffer, mapped for writing.
            let staging = dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some("staging"),
                size: bytes as u64,
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            });
            let t = Instant::now();
            staging.slice(..).get_mapped_range_mut().unwrap().copy_from_slice(&host);
            let t_fill_fresh = ms(t);
            staging.unmap();
            let mut times = Vec::new();
            for par in [false, true] {
                let t = Instant::now();
                staging.slice(..).map_async(wgpu::MapMode::Write, |r| r.unwrap());
                wait();
                let t_map = ms(t);
                let t = Instant::now();
                {
                    let mut view = staging.slice(..).get_mapped_range_mut().unwrap();
                    if par { par_write(view.slice(..), &host) } else { view.copy_from_slice(&host) }
                }
                let t_fill = ms(t);
                staging.unmap();
                let t = Instant::now();
                let mut enc = ctx.encoder("c");
                enc.copy_buffer_to_buffer(&staging, 0, &dst, 0, bytes as u64);
                queue.submit([enc.finish()]);
                wait();
                let t_copy = ms(t);
                times.push(format!("{}: map {t_map:.1} fill {t_fill:.1} dma {t_copy:.1}", if par { "par" } else { "seq" }));
            }
            // Readback.
            let rb = dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some("rb"),
                size: bytes as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut rtimes = Vec::new();
            for par in [false, true, true] {
                let t = Instant::now();
                let mut enc = ctx.encoder("r");
                enc.copy_buffer_to_buffer(&dst, 0, &rb, 0, bytes as u64);
                queue.submit([enc.finish()]);
                rb.slice(..).map_async(wgpu::MapMode::Read, |r| r.unwrap());
                wait();
                let t_dma = ms(t);
                let t = Instant::now();
                let mut out = vec![0u8; bytes];
                let t_alloc = ms(t);
                let t = Instant::now();
                {
                    let view = rb.slice(..).get_mapped_range().unwrap();
                    if par { par_copy(&mut out, &view) } else { out.copy_from_slice(&view) }
                }
                let t_read = ms(t);
                rb.unmap();
                assert_eq!(out[12345], host[12345]);
                rtimes.push(format!("{}: dma+map {t_dma:.1} alloc {t_alloc:.1} copy {t_read:.1}", if par { "par" } else { "seq" }));
            }
            let t = Instant::now();
            let mut h2 = vec![0u8; bytes];
            par_copy(&mut h2, &host);
            let t_hpar = ms(t);
            // Rows of an extension-field matrix seen as base-field rows (what ExtensionMmcs hands
            // GpuMmcs), through upload_rows as GpuMmcs reads them.
            let ef_rows = bytes / (16 * 16);
            let ef = RowMajorMatrix::new(vec![EF::from_u32(7); ef_rows * 16], 16);
            let flat = FlatMatrixView::<BabyBear, EF, _>::new(ef);
            let t = Instant::now();
            let b = ctx.upload_rows("flat", flat.height(), flat.width(), |r, write| write_matrix_row(&flat, r, write)).unwrap();
            queue.submit([]);
            wait();
            let t_flat = ms(t);
            ctx.recycle_storage(b);
            let t = Instant::now();
            let chunk = [5u32; 64];
            let b = ctx.upload_rows("flat", flat.height(), flat.width(), |_, write| write(&chunk)).unwrap();
            queue.submit([]);
            wait();
            let t_const = ms(t);
            ctx.recycle_storage(b);
            if rep > 0 {
                println!("{mib} MiB: upload_rows of a FlatMatrixView (BabyBear^4, 16 per row) {t_flat:.1}, the same rows as constants {t_const:.1}");
                println!("{mib} MiB: host clone {t_clone:.1} | host par copy(+alloc) {t_hpar:.1} | create_buffer_init {t_init:.1} | write_buffer {t_write:.1} | fresh mapped fill {t_fill_fresh:.1} | {} | {}", times.join(" | "), rtimes.join(" | "));
            }
        }
    }
}
