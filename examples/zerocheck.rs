//! An outer protocol on top of the PCS, proved once with Plonky3's `WhirProver` and once with
//! our `GpuWhirPcs` — the same code, a different PCS type:
//!
//! - the trace of a Fibonacci AIR (columns a, b; rows a' = b, b' = a + b) and an auxiliary table
//!   of three columns are committed together (one stacked WHIR commitment);
//! - a zerocheck proves Σ_x eq(τ, x)·(1 − last(x))·C(x) = 0 for the transition constraint
//!   C = (next a − b) + λ·(next b − a − b), with τ and λ from the transcript: a sumcheck of degree
//!   3 whose last round ends at a point r;
//! - the PCS opens the trace's columns and their successor views (the next row) at r with
//!   `open_at`, and the auxiliary table at a point the transcript draws; the verifier checks the
//!   sumcheck's last claim against those values.
//!
//! Both proofs are checked with p3-whir's verifier and compared byte for byte.
//! `cargo run --release --example zerocheck -- [LOG_ROWS]` (default 12).

use p3_challenger::{CanObserve, FieldChallenger};
use p3_field::Field;
use p3_field::PrimeCharacteristicRing;
use p3_matrix::dense::RowMajorMatrix;
use p3_multilinear_util::point::Point;
use p3_sumcheck::layout::{Table, Witness};
use p3_sumcheck::{OpeningBatch, OpeningProtocol, PrescribedPointPcs, TableShape, TableSpec};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::GpuChallenger;
use whir_wgpu::prover::backend::CpuBackend;
use whir_wgpu::prover::{permutation, Commitment, CpuWhirPcs, GpuProver, Params, Plonky3Pieces, Soundness, WhirPcsProof, Workload, EF, F};

/// The outer proof: the zerocheck's round polynomials (each at 0, 1, 2, 3) and the PCS proof.
struct OuterProof {
    rounds: Vec<[EF; 4]>,
    pcs: WhirPcsProof,
}

/// The PCS the outer protocol is written against: any of Plonky3's `WhirProver`s, or ours.
trait Pcs:
    PrescribedPointPcs<EF, GpuChallenger, Val = F, Witness = Witness<F>, OpeningProtocol = OpeningProtocol, Commitment = Commitment, Proof = WhirPcsProof>
{
}
impl<
        P: PrescribedPointPcs<EF, GpuChallenger, Val = F, Witness = Witness<F>, OpeningProtocol = OpeningProtocol, Commitment = Commitment, Proof = WhirPcsProof>,
    > Pcs for P
{
}

fn protocol(log_rows: usize, fold: usize) -> OpeningProtocol {
    OpeningProtocol::new(vec![
        // The trace: a and b at r, and their next rows.
        TableSpec::new(TableShape::new(log_rows, 2), vec![OpeningBatch::new(vec![0, 1], vec![0, 1])]),
        // The auxiliary table: every column at one point.
        TableSpec::new(TableShape::new(log_rows - 2, 3), vec![OpeningBatch::new(vec![0, 1, 2], vec![])]),
    ])
    .pad_to_min_num_variables(fold)
}

/// The Fibonacci trace (one row per column, as p3-sumcheck takes tables) and the auxiliary table.
fn witness_tables(log_rows: usize, rng: &mut StdRng) -> Vec<Table<F>> {
    let rows = 1 << log_rows;
    let (mut a, mut b) = (vec![F::ONE], vec![F::ONE]);
    for i in 1..rows {
        a.push(b[i - 1]);
        b.push(a[i - 1] + b[i - 1]);
    }
    let aux: Vec<F> = (0..3 * rows / 4).map(|_| rng.random()).collect();
    vec![Table::new(RowMajorMatrix::new([a, b].concat(), rows)), Table::new(RowMajorMatrix::new(aux, rows / 4))]
}

/// Multilinear tables over {0,1}^k (index bit k−1−j is coordinate j), bound first coordinate first.
fn bind(table: &mut Vec<EF>, r: EF) {
    let half = table.len() / 2;
    for i in 0..half {
        table[i] = table[i] + r * (table[i + half] - table[i]);
    }
    table.truncate(half);
}

fn eq_table(point: &[EF]) -> Vec<EF> {
    let mut t = vec![EF::ONE];
    for &p in point {
        t = t.iter().flat_map(|&v| [v * (EF::ONE - p), v * p]).collect();
    }
    t
}

fn eq_at(point: &[EF], x: &[EF]) -> EF {
    point.iter().zip(x).map(|(&p, &q)| p * q + (EF::ONE - p) * (EF::ONE - q)).product()
}

/// The degree-3 polynomial through (0, v0), ..., (3, v3), at r.
fn interpolate(v: &[EF; 4], r: EF) -> EF {
    let xs = [EF::ZERO, EF::ONE, EF::TWO, EF::from_u8(3)];
    (0..4)
        .map(|i| {
            let (num, den) = (0..4).filter(|&j| j != i).fold((EF::ONE, EF::ONE), |(n, d), j| (n * (r - xs[j]), d * (xs[i] - xs[j])));
            v[i] * num * den.inverse()
        })
        .sum()
}

fn constraint(a: EF, b: EF, next_a: EF, next_b: EF, lambda: EF) -> EF {
    (next_a - b) + lambda * (next_b - a - b)
}

fn prove<P: Pcs>(pcs: &P, mut ch: GpuChallenger, log_rows: usize, fold: usize, tables: Vec<Table<F>>, public: &[F]) -> (Commitment, OuterProof)
where
    P::ProverError: std::fmt::Debug,
{
    ch.observe_slice(public);
    let columns: Vec<Vec<EF>> = tables[0].iter_polys().map(|c| c.iter().map(|&v| EF::from(v)).collect()).collect();
    let (commitment, data) = pcs.commit(Witness::new(tables, fold), &mut ch).expect("commit");
    let tau: Vec<EF> = (0..log_rows).map(|_| ch.sample_algebra_element()).collect();
    let lambda: EF = ch.sample_algebra_element();

    let rows = 1usize << log_rows;
    let next = |c: &[EF]| -> Vec<EF> { (0..rows).map(|i| c[(i + 1).min(rows - 1)]).collect() };
    let mut tabs = [
        columns[0].clone(),
        columns[1].clone(),
        next(&columns[0]),
        next(&columns[1]),
        eq_table(&tau),
        (0..rows).map(|i| if i == rows - 1 { EF::ZERO } else { EF::ONE }).collect(),
    ];
    let mut rounds = Vec::with_capacity(log_rows);
    let mut r = Vec::with_capacity(log_rows);
    for _ in 0..log_rows {
        let half = tabs[0].len() / 2;
        let mut g = [EF::ZERO; 4];
        for (t, gt) in g.iter_mut().enumerate() {
            let t = EF::from_u8(t as u8);
            for i in 0..half {
                let at = |tab: &Vec<EF>| tab[i] + t * (tab[i + half] - tab[i]);
                *gt += at(&tabs[4]) * at(&tabs[5]) * constraint(at(&tabs[0]), at(&tabs[1]), at(&tabs[2]), at(&tabs[3]), lambda);
            }
        }
        for v in g {
            ch.observe_algebra_element(v);
        }
        let ri: EF = ch.sample_algebra_element();
        tabs.iter_mut().for_each(|t| bind(t, ri));
        rounds.push(g);
        r.push(ri);
    }
    let aux_point: Vec<EF> = (0..protocol(log_rows, fold).table_shapes()[1].num_variables()).map(|_| ch.sample_algebra_element()).collect();
    let points = [Point::new(r), Point::new(aux_point)];
    let proof = pcs.open_at(data, &protocol(log_rows, fold), &points, &mut ch).expect("open");
    (commitment, OuterProof { rounds, pcs: proof })
}

fn verify<P: Pcs>(pcs: &P, log_rows: usize, fold: usize, public: &[F], commitment: &Commitment, proof: &OuterProof) -> Result<(), String>
where
    P::Error: std::fmt::Debug,
{
    let mut ch = GpuChallenger::new(permutation(), None);
    ch.observe_slice(public);
    pcs.observe_commitment(commitment, &mut ch);
    let tau: Vec<EF> = (0..log_rows).map(|_| ch.sample_algebra_element()).collect();
    let lambda: EF = ch.sample_algebra_element();
    if proof.rounds.len() != log_rows {
        return Err(format!("{} sumcheck rounds for {log_rows} variables", proof.rounds.len()));
    }
    let (mut claim, mut r) = (EF::ZERO, Vec::new());
    for (i, g) in proof.rounds.iter().enumerate() {
        if g[0] + g[1] != claim {
            return Err(format!("sumcheck round {i}: g(0) + g(1) is not the claim"));
        }
        g.iter().for_each(|&v| ch.observe_algebra_element(v));
        let ri: EF = ch.sample_algebra_element();
        claim = interpolate(g, ri);
        r.push(ri);
    }
    let aux_point: Vec<EF> = (0..protocol(log_rows, fold).table_shapes()[1].num_variables()).map(|_| ch.sample_algebra_element()).collect();
    let points = [Point::new(r.clone()), Point::new(aux_point)];
    let evals = pcs.verify_at(commitment, &proof.pcs, &protocol(log_rows, fold), &points, &mut ch).map_err(|e| format!("the PCS proof: {e:?}"))?;
    let (now, next) = (evals[0].current(), evals[0].next());
    let last: Vec<EF> = vec![EF::ONE; log_rows];
    let expected = eq_at(&tau, &r) * (EF::ONE - eq_at(&last, &r)) * constraint(now[0], now[1], next[0], next[1], lambda);
    if expected != claim {
        return Err("the zerocheck's last claim does not match the opened values".into());
    }
    Ok(())
}

/// Proves the outer protocol over 2^log_rows rows with Plonky3's `WhirProver`, and with the GPU
/// PCS where `gpu` is given; checks both with p3-whir's verifier and compares their bytes.
pub fn run(log_rows: usize, gpu: Option<&GpuProver>) -> Result<(), String> {
    let fold = 2;
    if !(4..=22).contains(&log_rows) {
        return Err(format!("LOG_ROWS {log_rows}: from 4 to 22"));
    }
    let mut rng = StdRng::seed_from_u64(log_rows as u64);
    let tables = witness_tables(log_rows, &mut rng);
    // The stacked polynomial's size, for the configuration (one opening batch per table).
    let shapes = Workload { tables: vec![(log_rows, 2), (log_rows - 2, 3)] };
    let params = shapes.params(&Params {
        num_vars: 0,
        fold,
        log_inv_rate: 1,
        security_bits: 100,
        pow_bits: 16,
        soundness: Soundness::Johnson,
        points: 0,
        leaf: Default::default(),
    });
    let config = params.config::<GpuChallenger>().map_err(|e| e.to_string())?;
    let public = [F::ONE, F::ONE];

    // Plonky3's own prover (`WhirProver`: CPU DFT and Merkle tree, CPU grinding).
    let plonky3: CpuWhirPcs = CpuWhirPcs::new(config.clone(), CpuBackend::default());
    let stock = plonky3.stock();
    let started = std::time::Instant::now();
    let (commitment, proof) = prove(stock, GpuChallenger::new(permutation(), None), log_rows, fold, tables.clone(), &public);
    println!("WhirProver:  proved 2^{log_rows} rows in {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
    verify(stock, log_rows, fold, &public, &commitment, &proof).map_err(|e| format!("Plonky3's verifier rejects WhirProver's proof: {e}"))?;
    let expected = postcard::to_allocvec(&proof.pcs).map_err(|e| e.to_string())?;

    // The same outer protocol with the GPU PCS: one type changed.
    let Some(gpu) = gpu else { return Ok(()) };
    let pcs = gpu.pcs(config).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let (ours_commitment, ours) = prove(&pcs, gpu.challenger(), log_rows, fold, tables, &public);
    println!("GpuWhirPcs:  proved 2^{log_rows} rows in {:.1} ms on {}", started.elapsed().as_secs_f64() * 1e3, gpu.context().summary().name);
    verify(stock, log_rows, fold, &public, &ours_commitment, &ours).map_err(|e| format!("Plonky3's verifier rejects the GPU PCS's proof: {e}"))?;
    if ours.rounds != proof.rounds || postcard::to_allocvec(&ours.pcs).map_err(|e| e.to_string())? != expected {
        return Err("the GPU PCS's proof differs from WhirProver's".into());
    }
    println!("the same {} PCS proof bytes, both accepted by p3-whir's verifier", expected.len());
    Ok(())
}

#[allow(dead_code)]
fn main() {
    let log_rows: usize = std::env::args().nth(1).map_or(Ok(12), |a| a.parse()).expect("LOG_ROWS: a number");
    let gpu = match GpuProver::open_default() {
        Ok(g) => Some(g),
        Err(e) => {
            println!("no GPU ({e}): only WhirProver runs");
            None
        }
    };
    if let Err(e) = run(log_rows, gpu.as_ref()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
