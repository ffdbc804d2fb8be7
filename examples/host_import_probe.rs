//! Readbacks and uploads through imported host memory (`VK_EXT_external_memory_host`) beside the
//! staging path, on the default adapter. `cargo run --release --example host_import_probe [MiB...]`
//! (default 256 1380); times in ms. Host memory comes from `mmap`, so "fresh" pages have never
//! been touched.

use std::time::Instant;

use whir_wgpu::gpu::wgpu;
use whir_wgpu::gpu::GpuContext;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

struct Mapped {
    ptr: *mut u8,
    len: usize,
}

impl Mapped {
    fn new(len: usize, touch: bool, huge: bool) -> Self {
        // SAFETY: an anonymous private mapping of `len` bytes, unmapped on drop.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        assert_ne!(ptr, libc::MAP_FAILED);
        if huge {
            unsafe { libc::madvise(ptr, len, libc::MADV_HUGEPAGE) };
        }
        let m = Mapped { ptr: ptr.cast(), len };
        if touch {
            use rayon::prelude::*;
            m.slice().par_chunks_mut(1 << 20).for_each(|c| c.fill(1));
        }
        m
    }
    fn slice(&self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

fn main() {
    if let Ok(filter) = std::env::var("WHIR_LOG") {
        tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::new(filter)).with_writer(std::io::stderr).init();
    }
    let sizes: Vec<usize> = {
        let v: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
        if v.is_empty() { vec![256, 1380] } else { v }
    };
    let ctx = GpuContext::new_default().expect("a GPU");
    println!("adapter: {}", ctx.summary());
    let Some(importer) = ctx.host_importer() else {
        println!("this device cannot import host memory");
        return;
    };
    println!("import alignment {} bytes", importer.alignment());
    let device = ctx.device();
    let queue = ctx.queue();
    let wait = || device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    for &mib in &sizes {
        let len = mib << 20;
        let words: Vec<u32> = (0..len as u32 / 4).map(|i| i.wrapping_mul(2654435761)).collect();
        let src = ctx.storage("probe src", len / 4);
        ctx.write(&src, &words);
        wait();
        for round in 0..3 {
            // Staging path, into touched and into fresh memory.
            let touched = Mapped::new(len, true, false);
            let t = Instant::now();
            let dst = unsafe { std::slice::from_raw_parts_mut(touched.ptr.cast::<std::mem::MaybeUninit<u8>>(), len) };
            ctx.submit_and_read_chunked_into(device.create_command_encoder(&Default::default()), &src, dst, None).map_err(|e| e.0).unwrap();
            let staged_touched = ms(t);
            drop(touched);
            let fresh = Mapped::new(len, false, false);
            let t = Instant::now();
            let dst = unsafe { std::slice::from_raw_parts_mut(fresh.ptr.cast::<std::mem::MaybeUninit<u8>>(), len) };
            ctx.submit_and_read_chunked_into(device.create_command_encoder(&Default::default()), &src, dst, None).map_err(|e| e.0).unwrap();
            let staged_fresh = ms(t);
            drop(fresh);
            let mut line = format!("{mib} MiB round {round}: staging readback touched {staged_touched:.1} fresh {staged_fresh:.1}");
            for (name, touch, huge) in [("touched", true, false), ("fresh", false, false), ("fresh+huge", false, true)] {
                let host = Mapped::new(len, touch, huge);
                let t = Instant::now();
                let imported = unsafe { importer.import(device, host.ptr, len) }.expect("import");
                let t_import = ms(t);
                let t = Instant::now();
                let mut enc = device.create_command_encoder(&Default::default());
                enc.copy_buffer_to_buffer(&src, 0, imported.buffer(), 0, len as u64);
                queue.submit([enc.finish()]);
                wait();
                let t_copy = ms(t);
                let t = Instant::now();
                assert!(imported.release(device));
                let t_release = ms(t);
                let got: &[u32] = bytemuck::cast_slice(host.slice());
                assert!(got[0] == words[0] && got[got.len() / 2] == words[words.len() / 2] && got[got.len() - 1] == words[words.len() - 1], "imported readback differs");
                line += &format!(" | import {name}: import {t_import:.1} copy {t_copy:.1} release {t_release:.1} = {:.1}", t_import + t_copy + t_release);
            }
            // Upload from touched memory: staging path (ctx.write) and imported.
            let host = Mapped::new(len, true, false);
            let t = Instant::now();
            ctx.write(&src, bytemuck::cast_slice(host.slice()));
            wait();
            let staged_up = ms(t);
            let t = Instant::now();
            let imported = unsafe { importer.import(device, host.ptr, len) }.expect("import");
            let mut enc = device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(imported.buffer(), 0, &src, 0, len as u64);
            queue.submit([enc.finish()]);
            wait();
            assert!(imported.release(device));
            let import_up = ms(t);
            // Pieces of 64 MiB, each imported and its copy submitted before the next is imported.
            let t = Instant::now();
            let piece = 64 << 20;
            let mut held = Vec::new();
            for start in (0..len).step_by(piece) {
                let n = piece.min(len - start);
                let imported = unsafe { importer.import(device, host.ptr.add(start), n) }.expect("import");
                let mut enc = device.create_command_encoder(&Default::default());
                enc.copy_buffer_to_buffer(&src, start as u64, imported.buffer(), 0, n as u64);
                queue.submit([enc.finish()]);
                held.push(imported);
            }
            wait();
            for h in held {
                assert!(h.release(device));
            }
            let pieces_down = ms(t);
            line += &format!(" | upload staged {staged_up:.1} imported {import_up:.1} | readback in 64 MiB imports (touched) {pieces_down:.1}");
            println!("{line}");
            // The uploads overwrote the source: put it back.
            ctx.write(&src, &words);
            wait();
        }
    }
}
