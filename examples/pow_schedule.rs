//! Prints p3-whir's proof-of-work schedule for a shape: the bits of every grind a proof makes
//! (folding grinds run once per sumcheck round), to see where PoW time goes:
//! `cargo run --release --example pow_schedule -- VARS FOLD RATE POW`.

use whir_wgpu::gpu::GpuChallenger;
use whir_wgpu::prover::Params;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("numbers")).collect();
    let get = |i: usize, d: usize| args.get(i).copied().unwrap_or(d);
    let p = Params { num_vars: get(0, 20), fold: get(1, 4), log_inv_rate: get(2, 1), pow_bits: get(3, 20), ..Params::default() };
    let config = match p.config::<GpuChallenger>() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let fold0 = config.round_folding_factor(0);
    println!("initial sumcheck: {fold0} rounds at {} bits", config.starting_folding_pow_bits());
    let mut expected = (fold0 as f64) * 2f64.powi(config.starting_folding_pow_bits() as i32);
    for (i, r) in config.round_parameters().iter().enumerate() {
        println!("round {i}: query PoW {} bits ({} queries), {} sumcheck rounds at {} bits", r.pow_bits, r.num_queries, r.folding_factor, r.folding_pow_bits);
        expected += 2f64.powi(r.pow_bits as i32) + (r.folding_factor as f64) * 2f64.powi(r.folding_pow_bits as i32);
    }
    let last = config.final_round_config();
    println!(
        "final round: query PoW {} bits ({} queries), {} sumcheck rounds at {} bits",
        last.pow_bits,
        last.num_queries,
        config.final_sumcheck_rounds(),
        config.final_folding_pow_bits()
    );
    expected += 2f64.powi(last.pow_bits as i32) + (config.final_sumcheck_rounds() as f64) * 2f64.powi(config.final_folding_pow_bits() as i32);
    println!("expected Poseidon2 permutations for all grinds: {:.1} M", expected / 1e6);
}
