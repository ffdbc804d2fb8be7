//! Fixed host costs of the small GPU operations a resident proof makes hundreds of: an empty
//! submission, a 32-byte readback, a uniform buffer, a bind group, an error scope, and the
//! sumcheck steps at a few sizes. `cargo run --release --example latency_probe`; microseconds
//! per operation, after a warm-up.

use std::sync::Arc;
use std::time::Instant;

use p3_baby_bear::BabyBear;
use p3_field::extension::BinomialExtensionField;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::{shaders::Kernel, wgpu, GpuContext, GpuNtt, GpuSumcheck};

type EF = BinomialExtensionField<BabyBear, 4>;

fn per_op(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / reps as f64
}

fn main() {
    let ctx = Arc::new(GpuContext::new_default().expect("GPU"));
    println!("{}", ctx.summary());
    let buf = ctx.memory().storage("probe", 1024);
    let reps = 200;
    println!("empty submit + wait      {:8.1} us", per_op(reps, || ctx.transfers().submit_and_wait(ctx.pipelines().encoder("probe")).unwrap()));
    println!("submit + read 8 words    {:8.1} us", per_op(reps, || drop(ctx.transfers().submit_and_read(ctx.pipelines().encoder("probe"), &buf, 8).unwrap())));
    println!("submit (no wait)         {:8.1} us", per_op(reps, || ctx.transfers().submit(ctx.pipelines().encoder("probe")).unwrap()));
    println!("uniform buffer           {:8.1} us", per_op(reps, || drop(ctx.pipelines().uniform("probe", &[0u32; 4]))));
    println!("error scope (empty)      {:8.1} us", per_op(reps, || ctx.scoped("probe", || Ok(())).unwrap()));
    println!("pooled storage 4 KiB     {:8.1} us", per_op(reps, || ctx.memory().recycle_storage(ctx.memory().pooled_storage("probe", 1024))));
    // Recording costs: a bind group, a small write, a dispatch with its own uniform and bind
    // group; and a readback waited for by spinning on `poll` instead of blocking.
    let pipeline = ctx.pipelines().pipeline(Kernel::SumcheckRound, &[]).expect("pipeline");
    let (f, w, out) = (ctx.memory().storage("probe f", 1 << 12), ctx.memory().storage("probe w", 1 << 12), ctx.memory().storage("probe out", 1 << 10));
    let params = ctx.pipelines().uniform("probe", &[0u32; 8]);
    println!("bind group (4 buffers)   {:8.1} us", per_op(reps, || drop(ctx.pipelines().bind_buffers(&pipeline, &[&params, &f, &w, &out]))));
    println!("small write (64 B)       {:8.1} us", per_op(reps, || ctx.transfers().write(&buf, &[1u32; 16])));
    let record = |dispatches: usize| {
        let mut encoder = ctx.pipelines().encoder("probe");
        for _ in 0..dispatches {
            let params = ctx.pipelines().uniform("probe", &[0u32; 8]);
            let bind = ctx.pipelines().bind_buffers(&pipeline, &[&params, &f, &w, &out]);
            ctx.pipelines().record_dispatch(&mut encoder, "probe", &pipeline, &bind, 1, None);
        }
        encoder
    };
    // Where a dispatch's recording cost goes: its uniform and bind group, or its compute pass.
    let record_one_pass = |dispatches: usize, fresh: bool| {
        let mut encoder = ctx.pipelines().encoder("probe");
        let shared = ctx.pipelines().bind_buffers(&pipeline, &[&params, &f, &w, &out]);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            pass.set_pipeline(&pipeline);
            for _ in 0..dispatches {
                if fresh {
                    let params = ctx.pipelines().uniform("probe", &[0u32; 8]);
                    pass.set_bind_group(0, &ctx.pipelines().bind_buffers(&pipeline, &[&params, &f, &w, &out]), &[]);
                } else {
                    pass.set_bind_group(0, &shared, &[]);
                }
                pass.dispatch_workgroups(1, 1, 1);
            }
        }
        encoder
    };
    let record_shared = |dispatches: usize| {
        let mut encoder = ctx.pipelines().encoder("probe");
        let shared = ctx.pipelines().bind_buffers(&pipeline, &[&params, &f, &w, &out]);
        for _ in 0..dispatches {
            ctx.pipelines().record_dispatch(&mut encoder, "probe", &pipeline, &shared, 1, None);
        }
        encoder
    };
    println!("20 in one pass, fresh    {:8.1} us", per_op(reps, || drop(record_one_pass(20, true).finish())));
    println!("20 in one pass, shared bg{:8.1} us", per_op(reps, || drop(record_one_pass(20, false).finish())));
    println!("20 passes, shared bg     {:8.1} us", per_op(reps, || drop(record_shared(20).finish())));
    println!("record 1 dispatch+finish {:8.1} us", per_op(reps, || drop(record(1).finish())));
    println!("record 20 dispatches+fin {:8.1} us", per_op(reps, || drop(record(20).finish())));
    println!("20 dispatches submit+wait{:8.1} us", per_op(reps, || ctx.transfers().submit_and_wait(record(20)).unwrap()));
    let staging = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe staging"),
        size: 32,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let read_with = |spin: bool| {
        let mut encoder = ctx.pipelines().encoder("probe");
        encoder.copy_buffer_to_buffer(&buf, 0, &staging, 0, 32);
        ctx.queue().submit([encoder.finish()]);
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |_| flag.store(true, std::sync::atomic::Ordering::Release));
        if spin {
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let _ = ctx.device().poll(wgpu::PollType::Poll);
            }
        } else {
            let _ = ctx.device().poll(wgpu::PollType::wait_indefinitely());
        }
        drop(staging.slice(..).get_mapped_range());
        staging.unmap();
    };
    println!("read 32 B, blocking wait {:8.1} us", per_op(reps, || read_with(false)));
    println!("read 32 B, spinning poll {:8.1} us", per_op(reps, || read_with(true)));
    let mut rng = StdRng::seed_from_u64(1);
    let ntt = Arc::new(GpuNtt::new(ctx.clone()));
    for m in [8usize, 16, 20, 22] {
        let f: Vec<EF> = (0..1 << m).map(|_| rng.random()).collect();
        let w: Vec<EF> = (0..1 << m).map(|_| rng.random()).collect();
        let point: Vec<EF> = (0..m).map(|_| rng.random()).collect();
        let r: EF = rng.random();
        let mut s = GpuSumcheck::new(ntt.clone(), &f, &w).unwrap();
        let reps = if m > 20 { 10 } else { 50 };
        let round = per_op(reps, || {
            let _ = s.round_coefficients().unwrap();
        });
        let eval = per_op(reps, || {
            let _ = s.eval(&point).unwrap();
        });
        let eq = per_op(reps, || {
            s.add_eq_weights(std::slice::from_ref(&point), &[r]).unwrap();
            ctx.transfers().submit_and_wait(ctx.pipelines().encoder("probe")).unwrap();
        });
        let fold = per_op(1, || {
            s.fold(r).unwrap();
            ctx.transfers().submit_and_wait(ctx.pipelines().encoder("probe")).unwrap();
        });
        println!("m = {m:2}: round coefficients {round:9.1} us, eval {eval:9.1} us, eq weights + wait {eq:9.1} us, fold + wait {fold:9.1} us");
    }
}
