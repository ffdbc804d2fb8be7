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
use whir_wgpu::gpu::{GpuContext, GpuNtt, GpuSumcheck};

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
    let buf = ctx.storage("probe", 1024);
    let reps = 200;
    println!("empty submit + wait      {:8.1} us", per_op(reps, || ctx.submit_and_wait(ctx.encoder("probe")).unwrap()));
    println!("submit + read 8 words    {:8.1} us", per_op(reps, || drop(ctx.submit_and_read(ctx.encoder("probe"), &buf, 8).unwrap())));
    println!("submit (no wait)         {:8.1} us", per_op(reps, || ctx.submit(ctx.encoder("probe")).unwrap()));
    println!("uniform buffer           {:8.1} us", per_op(reps, || drop(ctx.uniform("probe", &[0u32; 4]))));
    println!("error scope (empty)      {:8.1} us", per_op(reps, || ctx.scoped("probe", || Ok(())).unwrap()));
    println!("pooled storage 4 KiB     {:8.1} us", per_op(reps, || ctx.recycle_storage(ctx.pooled_storage("probe", 1024))));
    let mut rng = StdRng::seed_from_u64(1);
    let ntt = Arc::new(GpuNtt::new(ctx.clone()));
    for m in [8usize, 16, 20, 22] {
        let f: Vec<EF> = (0..1 << m).map(|_| rng.random()).collect();
        let w: Vec<EF> = (0..1 << m).map(|_| rng.random()).collect();
        let point: Vec<EF> = (0..m).map(|_| rng.random()).collect();
        let r: EF = rng.random();
        let mut s = GpuSumcheck::new(ntt.clone(), &f, &w).unwrap();
        let reps = if m > 20 { 10 } else { 50 };
        let round = per_op(reps, || { let _ = s.round_coefficients().unwrap(); });
        let eval = per_op(reps, || { let _ = s.eval(&point).unwrap(); });
        let eq = per_op(reps, || {
            s.add_eq_weights(std::slice::from_ref(&point), &[r]).unwrap();
            ctx.submit_and_wait(ctx.encoder("probe")).unwrap();
        });
        let fold = per_op(1, || {
            s.fold(r).unwrap();
            ctx.submit_and_wait(ctx.encoder("probe")).unwrap();
        });
        println!("m = {m:2}: round coefficients {round:9.1} us, eval {eval:9.1} us, eq weights + wait {eq:9.1} us, fold + wait {fold:9.1} us");
    }
}
