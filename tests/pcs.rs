//! The PCS contract, one body run over Plonky3's `WhirProver` and ours (the CPU twin and the GPU,
//! both multiply variants): many tables of awkward shapes, sampled and prescribed points,
//! successor views, an outer protocol observing and sampling on the same challenger before commit
//! and between commit and open, a commitment opened twice, in both of p3-sumcheck's layouts
//! (suffix, and prefix over interleaved witnesses). The proofs are byte for byte
//! `WhirProver`'s and accepted by p3-whir's own `verify` / `verify_at`; hostile use is an error.

mod common;

use std::fmt::Debug;

use p3_challenger::{CanObserve, FieldChallenger};
use p3_commit::MultilinearPcs;
use p3_matrix::dense::RowMajorMatrix;
use p3_multilinear_util::point::Point;
use p3_sumcheck::layout::{Layout, PrefixProver, SuffixProver, Table, Witness};
use p3_sumcheck::{OpeningBatch, OpeningProtocol, PrescribedPointPcs, TableShape, TableSpec};
use rand::rngs::StdRng;
use rand::RngExt;
use whir_wgpu::gpu::{GpuChallenger, GpuGrinder, GpuMerkle, GpuNtt, GpuPoseidon2, Poseidon2Constants};
use whir_wgpu::prover::backend::GpuBackend;
use whir_wgpu::prover::backend::{ComparingBackend, CpuBackend, Stacking};
use whir_wgpu::prover::{permutation, Commitment, CpuWhirPcs, DriverOptions, GpuWhirPcs, Params, ProverError, Soundness, WhirPcs, WhirPcsProof, EF, F};

/// A workload: tables (variables, columns), batches (table, direct columns, successor columns).
#[derive(Clone, Debug)]
struct Case {
    tables: Vec<(usize, usize)>,
    batches: Vec<(usize, Vec<usize>, Vec<usize>)>,
    prescribed: bool,
    fold: usize,
    log_inv_rate: usize,
    soundness: Soundness,
    pow_bits: usize,
    /// p3-sumcheck's prefix layout (`PrefixProver`, interleaved witness) instead of the suffix one.
    prefix: bool,
}

impl Case {
    /// The witness the case's layout builds (`L::new_witness`).
    fn witness(&self, tables: Vec<Table<F>>) -> Witness<F> {
        if self.prefix {
            PrefixProver::<F, EF>::new_witness(tables, self.fold)
        } else {
            SuffixProver::<F, EF>::new_witness(tables, self.fold)
        }
    }

    /// The tables' shapes after the witness pads them to the first fold.
    fn shapes(&self) -> Vec<TableShape> {
        self.tables.iter().map(|&(v, w)| TableShape::new(v.max(self.fold), w)).collect()
    }

    fn num_vars(&self) -> usize {
        Stacking::new(self.shapes()).num_variables()
    }

    fn params(&self) -> Params {
        Params {
            num_vars: self.num_vars(),
            fold: self.fold,
            log_inv_rate: self.log_inv_rate,
            security_bits: 60,
            pow_bits: self.pow_bits,
            soundness: self.soundness,
            points: self.batches.len(),
            leaf: Default::default(),
        }
    }

    fn protocol(&self) -> OpeningProtocol {
        let specs = self
            .tables
            .iter()
            .enumerate()
            .map(|(t, &(v, w))| {
                let batches = self.batches.iter().filter(|b| b.0 == t).map(|(_, c, n)| OpeningBatch::new(c.clone(), n.clone())).collect();
                TableSpec::new(TableShape::new(v, w), batches)
            })
            .collect();
        OpeningProtocol::new(specs).pad_to_min_num_variables(self.fold)
    }
}

/// Tables of random values of the case's shapes (p3-sumcheck takes a table as one row per column).
fn tables(case: &Case, rng: &mut StdRng) -> Vec<Table<F>> {
    case.tables.iter().map(|&(v, w)| Table::new(RowMajorMatrix::new(common::random_vec(rng, w << v), 1 << v))).collect()
}

/// What the outer protocol absorbs before the commitment.
fn outer_prefix(rng: &mut StdRng) -> Vec<F> {
    common::random_vec(rng, 5)
}

/// The outer protocol's steps after the commitment, where it picks the points (`verify` binds
/// the commitment itself, so with sampled points nothing comes between): a challenge sampled and
/// observed back, then each batch's point sampled from the transcript.
fn outer_between<C: FieldChallenger<F>>(case: &Case, challenger: &mut C) -> Vec<Point<EF>> {
    if !case.prescribed {
        return Vec::new();
    }
    let r: EF = challenger.sample_algebra_element();
    challenger.observe_algebra_element(r);
    let protocol = case.protocol();
    let shapes = protocol.table_shapes();
    // One point per batch in the protocol's order (tables in order, each table's batches).
    protocol.iter_openings().map(|(t, _)| Point::new((0..shapes[t].num_variables()).map(|_| challenger.sample_algebra_element()).collect())).collect()
}

/// Commits and opens `case` with `pcs`, and checks the proof with the stock verifier: the
/// commitment and proof bytes.
fn prove<P>(pcs: &P, case: &Case, tables: Vec<Table<F>>, prefix: &[F]) -> Result<(Vec<u8>, Vec<u8>), String>
where
    P: PrescribedPointPcs<EF, GpuChallenger, Val = F, Witness = Witness<F>, OpeningProtocol = OpeningProtocol, Commitment = Commitment, Proof = WhirPcsProof>,
    P::ProverError: Debug,
    P::Error: Debug,
{
    prove_with(pcs, case, tables, prefix, GpuChallenger::new(permutation(), None))
}

/// [`prove`] from the prover's challenger `challenger` (e.g. one that grinds on the GPU, which
/// lets the driver play each round's head and the final grind where f lies); the verifier
/// starts from a copy of it (its permutation's constants too).
fn prove_with<P, C>(pcs: &P, case: &Case, tables: Vec<Table<F>>, prefix: &[F], mut challenger: C) -> Result<(Vec<u8>, Vec<u8>), String>
where
    C: whir_wgpu::prover::WhirChallenger<F> + p3_challenger::CanObserve<Commitment>,
    P: PrescribedPointPcs<EF, C, Val = F, Witness = Witness<F>, OpeningProtocol = OpeningProtocol, Commitment = Commitment, Proof = WhirPcsProof>,
    P::ProverError: Debug,
    P::Error: Debug,
{
    prove_on(pcs, case, tables, prefix, &mut challenger)
}

/// [`prove_with`] on the caller's challenger, left where the proof leaves it.
fn prove_on<P, C>(pcs: &P, case: &Case, tables: Vec<Table<F>>, prefix: &[F], challenger: &mut C) -> Result<(Vec<u8>, Vec<u8>), String>
where
    C: whir_wgpu::prover::WhirChallenger<F> + p3_challenger::CanObserve<Commitment>,
    P: PrescribedPointPcs<EF, C, Val = F, Witness = Witness<F>, OpeningProtocol = OpeningProtocol, Commitment = Commitment, Proof = WhirPcsProof>,
    P::ProverError: Debug,
    P::Error: Debug,
{
    let mut verifier = challenger.clone();
    challenger.observe_slice(prefix);
    let witness = case.witness(tables);
    let (commitment, data) = pcs.commit(witness, challenger).map_err(|e| format!("commit: {e:?}"))?;
    let points = outer_between(case, challenger);
    let proof = if case.prescribed { pcs.open_at(data, &case.protocol(), &points, challenger) } else { pcs.open(data, case.protocol(), challenger) }
        .map_err(|e| format!("open: {e:?}"))?;

    verifier.observe_slice(prefix);
    if case.prescribed {
        pcs.observe_commitment(&commitment, &mut verifier);
        let replayed = outer_between(case, &mut verifier);
        assert_eq!(replayed, points);
        let evals = pcs.verify_at(&commitment, &proof, &case.protocol(), &points, &mut verifier).map_err(|e| format!("verify_at: {e:?}"))?;
        assert_eq!(evals, proof.evals);
    } else {
        pcs.verify(&commitment, &proof, &mut verifier, case.protocol()).map_err(|e| format!("verify: {e:?}"))?;
    }
    Ok((postcard::to_allocvec(&commitment).unwrap(), postcard::to_allocvec(&proof).unwrap()))
}

/// Random cases: 1 to 5 tables of 0 to 9 variables and 1 to 17 columns (n at most 12), batches
/// with direct and successor columns, sampled or prescribed points; infeasible ones skipped.
fn cases(rng: &mut StdRng, count: usize) -> Vec<Case> {
    let mut out = Vec::new();
    while out.len() < count {
        let tables: Vec<(usize, usize)> =
            (0..rng.random_range(1..=5)).map(|_| (rng.random_range(0..=9), [1, 1, 2, 3, 5, 17][rng.random_range(0..6)])).collect();
        let mut batches = Vec::new();
        for _ in 0..rng.random_range(1..=5) {
            let t = rng.random_range(0..tables.len());
            let w = tables[t].1;
            let pick = |rng: &mut StdRng, most: usize| -> Vec<usize> {
                let n = rng.random_range(1..=most);
                let mut picked: Vec<usize> = (0..n).map(|_| rng.random_range(0..w)).collect();
                // (A batch names a column once per side.)
                picked.sort_unstable();
                picked.dedup();
                picked
            };
            let (c, n) = match rng.random_range(0..3) {
                0 => (pick(rng, 3), Vec::new()),
                1 => (Vec::new(), pick(rng, 2)),
                _ => (pick(rng, 2), pick(rng, 2)),
            };
            batches.push((t, c, n));
        }
        let case = Case {
            tables,
            batches,
            prescribed: rng.random(),
            fold: rng.random_range(1..=4),
            log_inv_rate: rng.random_range(1..=2),
            soundness: if rng.random::<bool>() { Soundness::Johnson } else { Soundness::Unique },
            pow_bits: [0, 5][rng.random_range(0..2)],
            prefix: rng.random(),
        };
        if (6..=12).contains(&case.num_vars()) && case.params().config::<GpuChallenger>().is_ok() {
            out.push(case);
        }
    }
    out
}

/// Named awkward shapes: a table of one row, widths 1, 3, 17 and 64, heights 2^10 apart.
fn awkward() -> Vec<Case> {
    let base = Case { tables: vec![], batches: vec![], prescribed: false, fold: 2, log_inv_rate: 1, soundness: Soundness::Unique, pow_bits: 5, prefix: false };
    let suffix = vec![
        Case { tables: vec![(0, 1), (10, 1)], batches: vec![(0, vec![0], vec![]), (1, vec![0], vec![0])], ..base.clone() },
        Case { tables: vec![(10, 3), (0, 17)], batches: vec![(1, vec![16, 0], vec![3]), (0, vec![2], vec![1])], prescribed: true, ..base.clone() },
        Case {
            tables: vec![(4, 64), (2, 1), (6, 3)],
            batches: vec![(0, vec![63, 0, 7], vec![]), (2, vec![], vec![2, 0]), (0, vec![5], vec![5])],
            fold: 3,
            ..base.clone()
        },
        Case { tables: vec![(8, 1)], batches: vec![(0, vec![0], vec![0]), (0, vec![0], vec![])], prescribed: true, fold: 4, ..base.clone() },
    ];
    // Each again in the prefix layout.
    let prefix: Vec<Case> = suffix.iter().map(|c| Case { prefix: true, ..c.clone() }).collect();
    suffix.into_iter().chain(prefix).collect()
}

fn gpu_backend(ctx: &std::sync::Arc<whir_wgpu::gpu::GpuContext>) -> GpuBackend {
    let poseidon2 = std::sync::Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()));
    GpuBackend::new(std::sync::Arc::new(GpuNtt::new(ctx.clone())), std::sync::Arc::new(GpuMerkle::new(poseidon2))).unwrap()
}

/// One case over Plonky3's prover and ours (the twin, then each GPU context beside the twin in a
/// comparing backend): the same bytes, each accepted by the stock verifier.
fn check_case(case: &Case, rng: &mut StdRng) {
    if case.prefix {
        check_case_in::<PrefixProver<F, EF>>(case, rng)
    } else {
        check_case_in::<SuffixProver<F, EF>>(case, rng)
    }
}

fn check_case_in<L: Layout<F, EF>>(case: &Case, rng: &mut StdRng) {
    let config = case.params().config::<GpuChallenger>().unwrap();
    let (tables, prefix) = (tables(case, rng), outer_prefix(rng));
    let stock = CpuWhirPcs::<L>::new(config.clone(), CpuBackend::default());
    let expected = prove(stock.stock(), case, tables.clone(), &prefix).unwrap_or_else(|e| panic!("{case:?}: Plonky3: {e}"));
    let twin = prove(&stock, case, tables.clone(), &prefix).unwrap_or_else(|e| panic!("{case:?}: the twin: {e}"));
    assert!(twin == expected, "{case:?}: the twin's proof differs from Plonky3's");
    for ctx in common::contexts() {
        let steps = gpu_backend(&ctx);
        // The initial weights stored, and formed where the rounds use them.
        for lazy in [false, true] {
            let options = DriverOptions { lazy_first_weights: Some(lazy), ..DriverOptions::default() };
            let pcs = WhirPcs::<_, L>::new(config.clone(), ComparingBackend::new(CpuBackend::default(), &steps)).with_options(options);
            let ours = prove(&pcs, case, tables.clone(), &prefix).unwrap_or_else(|e| panic!("{case:?} ({:?}, lazy weights {lazy}): {e}", ctx.mul_variant()));
            assert!(ours == expected, "{case:?} ({:?}, lazy weights {lazy}): the GPU proof differs from Plonky3's", ctx.mul_variant());
        }
        // Grinding on the GPU: each round's head (root, out-of-domain answers, query grind) and
        // the final polynomial's grind are played where f lies.
        // The initial fold's rounds then run on the GPU in one chain, over stored or lazy weights.
        let grinder = std::sync::Arc::new(GpuGrinder::new(std::sync::Arc::new(GpuPoseidon2::new(ctx.clone(), Poseidon2Constants::default_babybear()))));
        for lazy in [false, true] {
            let challenger = GpuChallenger::new(permutation(), Some(grinder.clone())).with_gpu_min_bits(1);
            let options = DriverOptions { lazy_first_weights: Some(lazy), ..DriverOptions::default() };
            let pcs = GpuWhirPcs::<L>::new(config.clone(), steps.clone()).with_options(options);
            let ours = prove_with(&pcs, case, tables.clone(), &prefix, challenger)
                .unwrap_or_else(|e| panic!("{case:?} ({:?}, GPU grinding, lazy weights {lazy}): {e}", ctx.mul_variant()));
            assert!(ours == expected, "{case:?} ({:?}, GPU grinding, lazy weights {lazy}): the GPU proof differs from Plonky3's", ctx.mul_variant());
        }
    }
}

#[test]
fn awkward_shapes_match_plonky3_and_verify() {
    let mut rng = common::rng();
    for case in awkward() {
        check_case(&case, &mut rng);
    }
}

#[test]
fn random_workloads_match_plonky3_and_verify() {
    let mut rng = common::rng();
    for case in cases(&mut rng, 8) {
        check_case(&case, &mut rng);
    }
}

/// A clone of the prover data opened twice (the same challenger state): the same proof, both
/// times Plonky3's, on the GPU too (the second opening folds a copy of the resident f).
#[test]
fn a_commitment_opens_twice() {
    opens_twice::<SuffixProver<F, EF>>(&awkward()[2]);
    opens_twice::<PrefixProver<F, EF>>(&awkward()[6]);
}

fn opens_twice<L: Layout<F, EF>>(case: &Case) {
    let mut rng = common::rng();
    let config = case.params().config::<GpuChallenger>().unwrap();
    let tables = tables(case, &mut rng);
    let stock = CpuWhirPcs::<L>::new(config.clone(), CpuBackend::default());
    let mut expected = GpuChallenger::new(permutation(), None);
    let (_, data) = stock.stock().commit(case.witness(tables.clone()), &mut expected).unwrap();
    let expected = postcard::to_allocvec(&stock.stock().open(data, case.protocol(), &mut expected).unwrap()).unwrap();
    for ctx in common::contexts() {
        let pcs = GpuWhirPcs::<L>::new(config.clone(), gpu_backend(&ctx));
        let mut challenger = GpuChallenger::new(permutation(), None);
        let (_, data) = pcs.commit(case.witness(tables.clone()), &mut challenger).unwrap();
        for _ in 0..2 {
            let proof = pcs.open(data.clone(), case.protocol(), &mut challenger.clone()).unwrap();
            assert!(postcard::to_allocvec(&proof).unwrap() == expected, "{:?}", ctx.mul_variant());
        }
        drop(data);
    }
}

/// A commit and an opening of a witness by one PCS, with given points or drawn ones.
type Attempt<'a> = dyn Fn(Witness<F>, OpeningProtocol, Option<Vec<Point<EF>>>) -> Result<(), ProverError> + 'a;

/// Hostile use: each an error naming what is wrong, never a panic or a proof.
#[test]
fn hostile_use_is_an_error() {
    let mut rng = common::rng();
    let case = &awkward()[2];
    let config = case.params().config::<GpuChallenger>().unwrap();
    let contexts = common::contexts();
    let run = |steps_pcs: &Attempt<'_>, what: &str, witness: Witness<F>, protocol: OpeningProtocol, points: Option<Vec<Point<EF>>>, expect: &str| {
        let err = steps_pcs(witness, protocol, points).expect_err(what).to_string();
        assert!(err.contains(expect), "{what}: {err}");
    };
    let twin: CpuWhirPcs = CpuWhirPcs::new(config.clone(), CpuBackend::default());
    let gpus: Vec<GpuWhirPcs> = contexts.iter().map(|ctx| GpuWhirPcs::new(config.clone(), gpu_backend(ctx))).collect();
    fn body<S: whir_wgpu::prover::backend::Backend<Mmcs = whir_wgpu::verifier::hash::CpuMmcs>>(pcs: &WhirPcs<S>) -> Box<Attempt<'_>> {
        Box::new(move |witness, protocol, points| {
            let mut challenger = GpuChallenger::new(permutation(), None);
            let (_, data) = pcs.commit(witness, &mut challenger)?;
            match points {
                Some(points) => pcs.open_at(data, &protocol, &points, &mut challenger).map(|_| ()),
                None => pcs.open(data, protocol, &mut challenger).map(|_| ()),
            }
        })
    }
    let mut bodies: Vec<Box<Attempt<'_>>> = vec![body(&twin)];
    bodies.extend(gpus.iter().map(|p| body(p)));
    let good = || Witness::new(tables(case, &mut common::rng()), case.fold);
    let k = case.protocol().table_shapes()[0].num_variables();
    for body in &bodies {
        // A witness of the wrong size.
        let mut small = case.clone();
        small.tables[0].0 -= 1;
        let witness = Witness::new(tables(&small, &mut rng), case.fold);
        run(body, "a witness of the wrong size", witness, case.protocol(), None, "stacked variables");
        // A protocol naming a missing table, or a missing column.
        let mut extra = case.clone();
        extra.tables.push((2, 1));
        run(body, "a missing table", good(), extra.protocol(), None, "not the committed witness's");
        // Points of the wrong dimension, or too few.
        let points: Vec<Point<EF>> = case.batches.iter().map(|_| Point::new(vec![EF::default(); k + 1])).collect();
        run(body, "a point of the wrong dimension", good(), case.protocol(), Some(points.clone()), "coordinates");
        let fitting: Vec<Point<EF>> =
            case.protocol().iter_openings().map(|(t, _)| Point::new(vec![EF::default(); case.protocol().table_shapes()[t].num_variables()])).collect();
        run(body, "too few points", good(), case.protocol(), Some(fitting[..1].to_vec()), "points given");
    }
}

#[path = "../examples/zerocheck.rs"]
mod zerocheck;

/// The example's outer protocol (a zerocheck with a next-row term, opened with `open_at`) gives
/// `WhirProver`'s bytes on the GPU, both accepted by p3-whir's verifier.
#[test]
fn the_zerocheck_example_gives_plonky3s_bytes() {
    for ctx in common::contexts() {
        let gpu = whir_wgpu::prover::GpuProver::new(ctx.clone());
        zerocheck::run(8, Some(&gpu)).unwrap_or_else(|e| panic!("{:?}: {e}", ctx.mul_variant()));
    }
}

/// The witness crosses to the GPU once (its cells, with a few KiB of tables and parameters), and
/// an opening reads back at most twice the proof's bytes plus 4 KiB.
#[test]
fn the_witness_crosses_once_and_an_opening_reads_about_the_proof() {
    let mut rng = common::rng();
    let case = &awkward()[2];
    let config = case.params().config::<GpuChallenger>().unwrap();
    for ctx in common::fresh_contexts() {
        let pcs: GpuWhirPcs = GpuWhirPcs::new(config.clone(), gpu_backend(&ctx));
        let prove = |rng: &mut StdRng| {
            let mut challenger = GpuChallenger::new(permutation(), None);
            let t0 = ctx.transfers().transfer_counts();
            let (_, data) = pcs.commit(Witness::new(tables(case, rng), case.fold), &mut challenger).unwrap();
            let t1 = ctx.transfers().transfer_counts();
            let proof = pcs.open(data, case.protocol(), &mut challenger).unwrap();
            (t1 - t0, ctx.transfers().transfer_counts() - t1, postcard::to_allocvec(&proof).unwrap().len() as u64)
        };
        // (The first proof on a context also uploads its NTT tables.)
        prove(&mut rng);
        let (commit, open, proof) = prove(&mut rng);
        let cells = 4u64 << case.num_vars();
        assert!(
            commit.bytes_up >= cells && commit.bytes_up <= cells + (16 << 10),
            "{:?}: the commit uploaded {} bytes for {cells} of cells",
            ctx.mul_variant(),
            commit.bytes_up
        );
        assert!(open.bytes_down <= 2 * proof + 4096, "{:?}: the opening read {} bytes back for a proof of {proof}", ctx.mul_variant(), open.bytes_down);
    }
}

/// A witness whose stacked message exceeds one binding of the adapter is refused with an error
/// that names the limit (never a panic, never a proof).
#[test]
fn a_witness_over_the_binding_limit_is_refused_clearly() {
    use whir_wgpu::gpu::{GpuOptions, LimitsProfile};
    let mut rng = common::rng();
    let case = Case {
        tables: vec![(14, 1), (13, 2)],
        batches: vec![(0, vec![0], vec![0]), (1, vec![1], vec![])],
        prescribed: false,
        fold: 2,
        log_inv_rate: 1,
        soundness: Soundness::Unique,
        pow_bits: 5,
        prefix: false,
    };
    let config = case.params().config::<GpuChallenger>().unwrap();
    let Some(ctx) = common::open_with(GpuOptions { limits: Some(LimitsProfile::WebGpu { max_binding_bytes: Some(64 << 10) }), ..common::env_options() }) else {
        return;
    };
    let pcs: GpuWhirPcs = GpuWhirPcs::new(config, gpu_backend(&ctx));
    let mut challenger = GpuChallenger::new(permutation(), None);
    let err = match pcs.commit(Witness::new(tables(&case, &mut rng), case.fold), &mut challenger) {
        Ok((_, data)) => pcs.open(data, case.protocol(), &mut challenger).map(|_| ()).expect_err("a 2^15-word message over a 64 KiB binding"),
        Err(e) => e,
    };
    let err = err.to_string();
    assert!(err.contains("binding") || err.contains("limit"), "{err}");
}

/// Issue 48, 5: the PCS verifies with the hash its steps prove with. Under other Poseidon2
/// constants (drawn from a seed as p3-whir's tests draw theirs) in the steps, the challenger and
/// the grinder, the twin and the GPU give the bytes of p3-whir's `WhirProver` over an MMCS of
/// those constants, and each PCS's own `verify` accepts them (width-16 and width-24 leaves,
/// both layouts); a PCS over the default constants rejects them.
#[test]
fn other_poseidon2_constants_verify_with_the_pcs_itself() {
    use rand::SeedableRng;
    use whir_wgpu::prover::LeafSponge;
    let mut rng = common::rng();
    let seed: u64 = rng.random();
    let constants = Poseidon2Constants::<F>::new_from_rng_128(&mut StdRng::seed_from_u64(seed));
    let wide = Poseidon2Constants::<F, 24>::new_from_rng_128(&mut StdRng::seed_from_u64(seed.wrapping_add(1)));
    let mut all = cases(&mut rng, 2);
    all.extend(all.clone().into_iter().map(|c| Case { prefix: !c.prefix, ..c }));
    for case in all {
        for leaf in LeafSponge::ALL {
            if case.prefix {
                custom_constants_in::<PrefixProver<F, EF>>(&case, leaf, &constants, &wide, &mut rng);
            } else {
                custom_constants_in::<SuffixProver<F, EF>>(&case, leaf, &constants, &wide, &mut rng);
            }
        }
    }
}

fn custom_constants_in<L: Layout<F, EF>>(
    case: &Case,
    leaf: whir_wgpu::prover::LeafSponge,
    constants: &Poseidon2Constants<F>,
    wide: &Poseidon2Constants<F, 24>,
    rng: &mut StdRng,
) {
    use whir_wgpu::prover::LeafSponge;
    let config = case.params().config::<GpuChallenger>().unwrap();
    let (tables, prefix) = (tables(case, rng), outer_prefix(rng));
    let wide_cpu = (leaf == LeafSponge::Width24).then(|| wide.to_cpu());
    let twin = CpuWhirPcs::<L>::new(config.clone(), CpuBackend::with_permutations(constants.to_cpu(), wide_cpu));
    let start = || GpuChallenger::new(constants.to_cpu(), None);
    let what = format!("{case:?}, leaves {leaf:?}");
    // `stock()` is p3-whir's `WhirProver` over the twin's MMCS: the reference bytes.
    let expected = prove_with(twin.stock(), case, tables.clone(), &prefix, start()).unwrap_or_else(|e| panic!("{what}: Plonky3: {e}"));
    let ours = prove_with(&twin, case, tables.clone(), &prefix, start()).unwrap_or_else(|e| panic!("{what}: the twin: {e}"));
    assert!(ours == expected, "{what}: the twin's proof differs from Plonky3's");
    // A PCS over the default constants does not accept them: the check above can fail.
    let (commitment, proof): (Commitment, WhirPcsProof) = (postcard::from_bytes(&expected.0).unwrap(), postcard::from_bytes(&expected.1).unwrap());
    if !case.prescribed {
        let default = CpuWhirPcs::<L>::new(config.clone(), CpuBackend::hashing_leaves(leaf));
        let mut verifier = start();
        verifier.observe_slice(&prefix);
        assert!(default.verify(&commitment, &proof, &mut verifier, case.protocol()).is_err(), "{what}: the default constants accepted another hash's proof");
    }
    for ctx in common::contexts() {
        let poseidon2 = std::sync::Arc::new(GpuPoseidon2::new(ctx.clone(), constants.clone()));
        let mut merkle = GpuMerkle::new(poseidon2.clone());
        if leaf == LeafSponge::Width24 {
            merkle = merkle.with_wide_leaves(std::sync::Arc::new(GpuPoseidon2::new(ctx.clone(), wide.clone()))).unwrap();
        }
        let steps = GpuBackend::new(std::sync::Arc::new(GpuNtt::new(ctx.clone())), std::sync::Arc::new(merkle)).unwrap();
        let grinder = std::sync::Arc::new(GpuGrinder::new(poseidon2));
        let pcs = GpuWhirPcs::<L>::new(config.clone(), steps);
        let challenger = GpuChallenger::new(constants.to_cpu(), Some(grinder)).with_gpu_min_bits(1);
        let ours = prove_with(&pcs, case, tables.clone(), &prefix, challenger).unwrap_or_else(|e| panic!("{what} ({:?}): {e}", ctx.mul_variant()));
        assert!(ours == expected, "{what} ({:?}): the GPU proof differs from Plonky3's", ctx.mul_variant());
    }
}

/// Issue 49, 2: the PCS over Plonky3's own `DuplexChallenger`, configured as `WhirProver` is
/// (`WhirConfig<EF, F, DuplexChallenger<..>>`), so a stack keeps its challenger and its
/// configuration and changes only the PCS type. Byte-identical to `WhirProver` over the same
/// challenger where nothing is ground (Plonky3's duplex grinder returns any passing witness
/// when it searches in parallel, so a grinding proof of `WhirProver`'s own differs from run to
/// run), and accepted by `WhirProver`'s verifier where it grinds; both layouts, the twin and
/// every GPU context.
#[test]
fn the_pcs_runs_over_plonky3s_own_challenger() {
    type Duplex = p3_challenger::DuplexChallenger<F, whir_wgpu::verifier::hash::Perm, 16, 8>;
    let mut rng = common::rng();
    let mut all = awkward();
    // The same shapes grinding nothing, so that the bytes are comparable.
    all.extend(awkward().into_iter().map(|c| Case { pow_bits: 0, ..c }));
    all.extend(cases(&mut rng, 6));
    let mut compared = 0;
    for case in all {
        let Ok(config) = case.params().config::<Duplex>() else { continue };
        compared += usize::from(case.pow_bits == 0);
        let (tables, prefix) = (tables(&case, &mut rng), outer_prefix(&mut rng));
        let start = || Duplex::new(permutation());
        if case.prefix {
            duplex_case::<PrefixProver<F, EF>>(&case, config, &tables, &prefix, &start);
        } else {
            duplex_case::<SuffixProver<F, EF>>(&case, config, &tables, &prefix, &start);
        }
    }
    assert!(compared >= 8, "only {compared} cases ground nothing (their bytes are the ones compared)");
}

fn duplex_case<L: Layout<F, EF>>(
    case: &Case,
    config: p3_whir::parameters::WhirConfig<EF, F, p3_challenger::DuplexChallenger<F, whir_wgpu::verifier::hash::Perm, 16, 8>>,
    tables: &[Table<F>],
    prefix: &[F],
    start: &dyn Fn() -> p3_challenger::DuplexChallenger<F, whir_wgpu::verifier::hash::Perm, 16, 8>,
) {
    type Duplex = p3_challenger::DuplexChallenger<F, whir_wgpu::verifier::hash::Perm, 16, 8>;
    let twin = CpuWhirPcs::<L, F, EF, Duplex>::new(config.clone(), CpuBackend::default());
    let deterministic = case.pow_bits == 0;
    let expected = prove_with(twin.stock(), case, tables.to_vec(), prefix, start()).unwrap_or_else(|e| panic!("{case:?}: Plonky3: {e}"));
    let mut ours = vec![("the twin", prove_with(&twin, case, tables.to_vec(), prefix, start()))];
    for ctx in common::contexts() {
        let pcs = GpuWhirPcs::<L, F, Duplex>::new(config.clone(), gpu_backend(&ctx));
        ours.push(("the GPU", prove_with(&pcs, case, tables.to_vec(), prefix, start())));
    }
    for (who, proof) in ours {
        // `prove_with` has verified each with the PCS's own verify (p3-whir's, over the duplex).
        let proof = proof.unwrap_or_else(|e| panic!("{case:?}: {who}: {e}"));
        if deterministic {
            assert!(proof == expected, "{case:?}: {who}'s proof over the duplex challenger differs from Plonky3's");
        }
        // Plonky3's own verifier, from a fresh duplex.
        if !case.prescribed {
            let (commitment, body): (Commitment, WhirPcsProof) = (postcard::from_bytes(&proof.0).unwrap(), postcard::from_bytes(&proof.1).unwrap());
            let mut verifier = start();
            verifier.observe_slice(prefix);
            twin.stock().verify(&commitment, &body, &mut verifier, case.protocol()).unwrap_or_else(|e| panic!("{case:?}: {who}: Plonky3's verifier: {e:?}"));
        }
    }
}

/// Issue 56, 3: over Plonky3's own `DuplexChallenger` the GPU PCS plays the opening on a
/// challenger of its steps that continues the duplex's sponge (grinding and playing round heads
/// and chains on the device) and hands the sponge back: the bytes are `WhirProver`'s over the
/// same transcript with a smallest-witness grinder, the duplex then draws what that run's
/// challenger draws, and Plonky3's verifier over a duplex accepts. A duplex over other Poseidon2
/// constants than the device's stays on the host and still proves (accepted over its own
/// constants).
#[test]
fn the_pcs_plays_plonky3s_challenger_on_the_device() {
    type Duplex = p3_challenger::DuplexChallenger<F, whir_wgpu::verifier::hash::Perm, 16, 8>;
    let mut rng = common::rng();
    let mut all = awkward();
    all.extend(cases(&mut rng, 4));
    let contexts = common::contexts();
    for case in all {
        let (Ok(config), Ok(reference_config)) = (case.params().config::<Duplex>(), case.params().config::<GpuChallenger>()) else {
            continue;
        };
        let (tables, prefix) = (tables(&case, &mut rng), outer_prefix(&mut rng));
        for ctx in &contexts {
            if case.prefix {
                device_duplex_case::<PrefixProver<F, EF>>(&case, &config, &reference_config, &tables, &prefix, ctx);
            } else {
                device_duplex_case::<SuffixProver<F, EF>>(&case, &config, &reference_config, &tables, &prefix, ctx);
            }
        }
    }
    // Another permutation of the same type: the transcript stays on the duplex itself.
    let case = awkward().remove(0);
    let config = case.params().config::<Duplex>().unwrap();
    let (tables, prefix) = (tables(&case, &mut rng), outer_prefix(&mut rng));
    let other = p3_baby_bear::Poseidon2BabyBear::<16>::new_from_rng_128(&mut rng);
    for ctx in &contexts {
        let pcs = GpuWhirPcs::<SuffixProver<F, EF>, F, Duplex>::new(config.clone(), gpu_backend(ctx));
        let mut duplex = Duplex::new(other.clone());
        prove_on(&pcs, &case, tables.clone(), &prefix, &mut duplex).unwrap_or_else(|e| panic!("over other constants ({:?}): {e}", ctx.mul_variant()));
    }
}

fn device_duplex_case<L: Layout<F, EF>>(
    case: &Case,
    config: &p3_whir::parameters::WhirConfig<EF, F, p3_challenger::DuplexChallenger<F, whir_wgpu::verifier::hash::Perm, 16, 8>>,
    reference_config: &p3_whir::parameters::WhirConfig<EF, F, GpuChallenger>,
    tables: &[Table<F>],
    prefix: &[F],
    ctx: &std::sync::Arc<whir_wgpu::gpu::GpuContext>,
) {
    use p3_challenger::CanSample;
    type Duplex = p3_challenger::DuplexChallenger<F, whir_wgpu::verifier::hash::Perm, 16, 8>;
    // The reference: `WhirProver` over the same sponge, grinding the smallest witness on the CPU.
    let reference = CpuWhirPcs::<L>::new(reference_config.clone(), CpuBackend::default());
    let mut smallest = GpuChallenger::new(permutation(), None);
    let expected = prove_on(reference.stock(), case, tables.to_vec(), prefix, &mut smallest).unwrap_or_else(|e| panic!("{case:?}: Plonky3: {e}"));
    let after: EF = smallest.sample();
    for lazy in [false, true] {
        let options = DriverOptions { lazy_first_weights: Some(lazy), ..DriverOptions::default() };
        let pcs = GpuWhirPcs::<L, F, Duplex>::new(config.clone(), gpu_backend(ctx)).with_options(options);
        let mut duplex = Duplex::new(permutation());
        let ours = prove_on(&pcs, case, tables.to_vec(), prefix, &mut duplex).unwrap_or_else(|e| panic!("{case:?} ({:?}): {e}", ctx.mul_variant()));
        assert!(ours == expected, "{case:?} ({:?}, lazy weights {lazy}): the proof over the duplex differs from WhirProver's", ctx.mul_variant());
        assert_eq!(CanSample::<EF>::sample(&mut duplex), after, "{case:?}: the duplex after the proof");
    }
}
