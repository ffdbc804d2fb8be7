//! What several threads get from one GPU context, or from contexts of their own on the same
//! adapter, on the two kinds of work a resident proof is made of: round trips (a small
//! dispatch, then an 8-word readback waited for) and chains of dependent dispatches (each
//! Poseidon2-permuting the states the one before wrote, as a transcript kernel or a late
//! small round does). `concurrency_probe roundtrip|chain STATES DISPATCHES REPS` with
//! `PROBE_THREADS=T` and `PROBE_CONTEXTS=C` (threads spread over C contexts): prints the
//! operations per second of all threads together, so that T threads on one context can be set
//! beside one thread (is the work serialised?) and beside C contexts (is the queue the limit?).
//! `independent` records the same dispatches on buffers of their own (nothing to wait for
//! between them); `PROBE_PROFILE=1` (one thread) adds the GPU time per dispatch from timestamps.
//! `PROBE_KERNEL=copy` dispatches a plain copy of the states' words instead of a permutation,
//! so the GPU time per dispatch is the launch and barrier cost, not one thread's Poseidon2
//! latency; `PROBE_KERNEL=lanes` permutes with each state over 16 invocations
//! (wgsl/poseidon2/lanes.wgsl), whose latency is the point. `PROBE_QUEUES=Q` opens the
//! contexts as Q queues of one device instead (`GpuContext::on_queues`, Vulkan; C is then Q):
//! are several queues of one device the overlap that separate processes get?

use std::sync::Arc;
use std::time::Instant;

use whir_wgpu::gpu::{record::Dispatch, shaders::Kernel, GpuContext, GpuOptions, GpuPoseidon2, Poseidon2Constants};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map_or("chain", String::as_str).to_string();
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (states, dispatches, reps) = (num(1, 64), num(2, 64), num(3, 50));
    let queues = env("PROBE_QUEUES", 0);
    let threads = env("PROBE_THREADS", 1);
    let contexts = if queues > 0 { queues } else { env("PROBE_CONTEXTS", 1) };
    let copy = std::env::var("PROBE_KERNEL").is_ok_and(|k| k == "copy");
    let lanes = std::env::var("PROBE_KERNEL").is_ok_and(|k| k == "lanes");
    let opened: Vec<GpuContext> = if queues > 0 {
        GpuContext::on_queues(GpuOptions::from_env().expect("WHIR_* settings"), queues).expect("GPU queues")
    } else {
        (0..contexts).map(|_| GpuContext::new_default().expect("GPU")).collect()
    };
    let perms: Vec<Arc<GpuPoseidon2>> = opened.into_iter().map(|c| Arc::new(GpuPoseidon2::new(Arc::new(c), Poseidon2Constants::default_babybear()))).collect();
    let run = |perm: &GpuPoseidon2, reps: usize| {
        let ctx = perm.context();
        let (a, b) = (ctx.memory().storage("probe a", states * 16), ctx.memory().storage("probe b", states * 16));
        let pairs: Vec<_> = (0..if mode == "independent" { dispatches } else { 0 })
            .map(|_| (ctx.memory().storage("probe in", states * 16), ctx.memory().storage("probe out", states * 16)))
            .collect();
        for _ in 0..reps {
            let mut batch = ctx.batch("probe");
            let steps = if mode == "roundtrip" { 1 } else { dispatches };
            for step in 0..steps {
                let (from, to) = match pairs.get(step) {
                    Some((from, to)) => (from, to),
                    None if step % 2 == 0 => (&a, &b),
                    None => (&b, &a),
                };
                if copy {
                    let words = states * 16;
                    let pipeline = ctx.pipelines().pipeline(Kernel::Copy, &[]).expect("copy pipeline");
                    let params = ctx.pipelines().uniform("probe copy", &[words as u32, 0, 0, 0]);
                    let bind = ctx.pipelines().bind_buffers(&pipeline, &[&params, from, to]);
                    batch.record_as("probe copy", &[Dispatch { pipeline: (*pipeline).clone(), bind, groups: words.div_ceil(1024) as u32 }]);
                } else if lanes {
                    perm.record_permute_lanes(&mut batch, from, to, states).expect("record");
                } else {
                    perm.record_permute(&mut batch, from, to, states).expect("record");
                }
            }
            batch.read(&a, 0, 8);
            ctx.run(batch).expect("read back");
        }
    };
    // Warm up every context (pipelines built, clocks up).
    for perm in &perms {
        run(perm, 5);
    }
    let profile = std::env::var("PROBE_PROFILE").is_ok_and(|v| v == "1") && perms[0].context().profiler().begin();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let perm = perms[t % contexts].clone();
            let run = &run;
            scope.spawn(move || run(&perm, reps));
        }
    });
    let secs = started.elapsed().as_secs_f64();
    if profile {
        let spans = perms[0].context().profiler().end().expect("profile").unwrap_or_default();
        let gpu: f64 = spans.iter().map(|s| s.gpu.as_secs_f64()).sum();
        let per_batch = if mode == "roundtrip" { 1 } else { dispatches };
        println!("GPU time {:.3} us a dispatch ({:.1} us a submission)", gpu * 1e6 / (threads * reps * per_batch) as f64, gpu * 1e6 / (threads * reps) as f64);
    }
    let per_batch = if mode == "roundtrip" { 1 } else { dispatches };
    let batches = (threads * reps) as f64;
    println!(
        "{mode}{} states {states} x {per_batch} dispatches, {threads} threads on {contexts} {}: {:.0} batches/s, {:.0} dispatches/s, {:.1} us a batch per thread",
        if copy { " (copy)" } else if lanes { " (lanes)" } else { "" },
        if queues > 0 { "queue(s) of one device" } else { "context(s)" },
        batches / secs,
        batches * per_batch as f64 / secs,
        secs * 1e6 / reps as f64
    );
}
