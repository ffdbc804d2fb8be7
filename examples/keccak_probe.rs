//! The GPU Keccak against Plonky3's in one process: Keccak-f permutations a second (GPU kernel
//! time, both lane builds), and the Keccak Merkle tree of a 2^LOG x 16 BabyBear matrix (default
//! 2^22) as `GpuKeccak::digest_layers` builds it (host matrix to every digest layer on the host:
//! wall time, and the GPU time of its kernels) beside Plonky3's vectorized `MerkleTreeMmcs` over
//! the same hash (`[F; VECTOR_LEN]` rows, p3_keccak's SIMD permutation) on all cores; the roots
//! are compared; and a 22-bit grind of Plonky3's Keccak transcript on the GPU (the smallest
//! witness) beside Plonky3's own parallel search (`HashChallenger::find_witness`); and Plonky3's
//! WHIR prover over its Keccak configuration and our resident prover over it (n = WHIR_LOG, default 24, fold 4, rate 1, PoW 22,
//! BabyBear^4, 100 bits) on the GPU pieces (`GpuWhirDomain`, `GpuKeccakMmcs`, `GpuKeccakHash`)
//! beside the same prover on Plonky3's pieces (its vectorized Keccak MMCS), proofs verified.
//! `cargo run --release --example keccak_probe [LOG] [REPS]`

use std::sync::Arc;
use std::time::Instant;

use p3_baby_bear::BabyBear;
use p3_commit::Mmcs;
use p3_keccak::{KeccakF, VECTOR_LEN};
use p3_matrix::dense::RowMajorMatrix;
use p3_merkle_tree::MerkleTreeMmcs;
use p3_symmetric::{CompressionFunctionFromHasher, PaddingFreeSponge, SerializingHasher};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use whir_wgpu::gpu::{GpuContext, GpuKeccak, GpuKeccakMmcs, GpuOptions, MulVariant};

type U64Sponge = PaddingFreeSponge<KeccakF, 25, 17, 4>;
type LeafHash = SerializingHasher<U64Sponge>;
type NodeCompress = CompressionFunctionFromHasher<U64Sponge, 2, 4>;
type VectorMmcs = MerkleTreeMmcs<[BabyBear; VECTOR_LEN], [u64; VECTOR_LEN], LeafHash, NodeCompress, 2, 4>;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// The GPU time of the kernels `work` dispatches, in ms (None without timestamp queries).
fn kernel_ms(ctx: &GpuContext, work: impl FnOnce()) -> Option<f64> {
    let profiler = ctx.profiler();
    if !profiler.begin_dispatches() {
        return None;
    }
    work();
    let spans = profiler.end_dispatches().ok()??;
    Some(spans.iter().map(|s| s.gpu.as_secs_f64() * 1e3).sum())
}

/// Grinds of 22 bits from random prefixes: the GPU's smallest witness and Plonky3's search, each
/// checked, mean wall time of each.
fn grind(keccak: &GpuKeccak, rng: &mut StdRng) {
    use p3_challenger::{ByteGrindingChallenger, CanObserve, CanSample, HashChallenger};
    use p3_field::{PrimeCharacteristicRing, PrimeField32};
    const BITS: usize = 22;
    let mask = (1u32 << BITS) - 1;
    let encode = |i: u64| BabyBear::from_u64(i).to_unique_u32().to_le_bytes();
    let passes = |prefix: &[u8; 32], w: u64| {
        let mut c = HashChallenger::<u8, p3_keccak::Keccak256Hash, 32>::new(prefix.to_vec(), p3_keccak::Keccak256Hash);
        c.observe_slice(&encode(w));
        u32::from_le_bytes(c.sample_array()) & mask == 0
    };
    // Warm-up: the kernel's pipeline is built on first use.
    keccak.grind_serializing::<BabyBear>(&[0; 32], 8).expect("grind");
    let (mut gpu_ms, mut cpu_ms, n) = (0.0, 0.0, 8);
    for _ in 0..n {
        let prefix: [u8; 32] = std::array::from_fn(|_| rng.random());
        let t = Instant::now();
        let w = keccak.grind_serializing::<BabyBear>(&prefix, BITS).expect("grind").expect("a witness");
        gpu_ms += ms(t);
        assert!(passes(&prefix, u64::from(w)), "the GPU's witness fails");
        let t = Instant::now();
        let c = HashChallenger::<u8, p3_keccak::Keccak256Hash, 32>::new(prefix.to_vec(), p3_keccak::Keccak256Hash);
        let v = c.find_witness(u64::from(BabyBear::ORDER_U32), encode, |b: [u8; 4]| u32::from_le_bytes(b) & mask == 0).expect("a witness");
        cpu_ms += ms(t);
        assert!(passes(&prefix, v), "Plonky3's witness fails");
    }
    println!(
        "  Keccak grind of {BITS} bits, mean of {n}: GPU (smallest witness) {:.2} ms, Plonky3 find_witness {:.2} ms = {:.1}x",
        gpu_ms / n as f64,
        cpu_ms / n as f64,
        cpu_ms / gpu_ms
    );
}

/// Plonky3's WHIR prover over its Keccak configuration, on the GPU pieces and on its own: best
/// commit + open of `reps` each, the GPU pieces' proof verified by the stock verifier.
fn whir(ctx: &Arc<GpuContext>, log: usize, reps: usize, rng: &mut StdRng) {
    use p3_challenger::{HashChallenger, SerializingChallenger32};
    use p3_commit::MultilinearPcs;
    use p3_field::extension::BinomialExtensionField;
    use p3_keccak::Keccak256Hash;
    use p3_sumcheck::layout::{Layout, SuffixProver, Table};
    use p3_sumcheck::{OpeningBatch, OpeningProtocol, TableShape, TableSpec};
    use p3_whir::{FoldingFactor, PcsProof, ProtocolParameters, SecurityAssumption, WhirConfig, WhirProver};
    use whir_wgpu::gpu::{CpuKeccakMmcs, GpuDft, GpuKeccakHash, GpuNtt};
    use whir_wgpu::prover::GpuWhirDomain;
    type EF = BinomialExtensionField<BabyBear, 4>;
    type L = SuffixProver<BabyBear, EF>;
    type Stock = SerializingChallenger32<BabyBear, HashChallenger<u8, Keccak256Hash, 32>>;
    type Ours = SerializingChallenger32<BabyBear, GpuKeccakHash<BabyBear>>;
    // PoW 22 at fold 4: the Poseidon2 rows of BENCHMARKS.md at n = 24 fold 4 use the same.
    let (fold, pow_bits) = (4, 22);
    let params = || ProtocolParameters {
        starting_log_inv_rate: 1,
        round_log_inv_rates: Vec::new(),
        folding_factor: FoldingFactor::Constant(fold),
        soundness_type: SecurityAssumption::JohnsonBound,
        security_level: 100,
        pow_bits,
    };
    let protocol = || {
        OpeningProtocol::new(vec![TableSpec::new(TableShape::new(log, 1), vec![OpeningBatch::new(vec![0], Default::default())])]).pad_to_min_num_variables(fold)
    };
    let values: Vec<BabyBear> = (0..1usize << log).map(|_| rng.random()).collect();
    let witness = || L::new_witness(vec![Table::new(RowMajorMatrix::new(values.clone(), values.len()))], fold);
    let sponge = U64Sponge::new(KeccakF);
    let stock = WhirProver::<EF, BabyBear, p3_dft::Radix2DFTSmallBatch<BabyBear>, VectorMmcs, Stock, L>::new(
        WhirConfig::new(log, params()).expect("parameters"),
        Default::default(),
        VectorMmcs::new(LeafHash::new(sponge), NodeCompress::new(sponge), 0),
    );
    let keccak = GpuKeccak::new(ctx.clone());
    let domain = GpuWhirDomain::new(GpuDft::new(Some(Arc::new(GpuNtt::new(ctx.clone())))).encoder());
    let gpu = WhirProver::<EF, BabyBear, GpuWhirDomain<BabyBear>, GpuKeccakMmcs<BabyBear>, Ours, L>::new(
        WhirConfig::new(log, params()).expect("parameters"),
        domain,
        GpuKeccakMmcs::new(Some(keccak.clone()), 0),
    );
    let resident = whir_wgpu::prover::GpuProver::<BabyBear>::over(ctx.clone())
        .keccak_pcs_over::<L, EF, Ours>(WhirConfig::new(log, params()).expect("parameters"))
        .expect("the resident Keccak PCS");
    let (mut stock_ms, mut gpu_ms, mut resident_ms) = (f64::MAX, f64::MAX, f64::MAX);
    let mut last = None;
    let mut resident_last = None;
    // A second of GPU proofs before each timed one: the GPU's clocks drop while Plonky3 runs.
    let warm_up = |what: &dyn Fn()| {
        let started = Instant::now();
        while started.elapsed().as_secs_f64() < 1.0 {
            what();
        }
    };
    for _ in 0..reps {
        warm_up(&|| {
            let mut ch = Ours::new(GpuKeccakHash::new(vec![], Some(keccak.clone())));
            let (_, data) = resident.commit(witness(), &mut ch).expect("commit");
            drop(resident.open(data, protocol(), &mut ch).expect("open"));
        });
        let input = witness();
        let t = Instant::now();
        let mut ch = Ours::new(GpuKeccakHash::new(vec![], Some(keccak.clone())));
        let (commitment, data) = resident.commit(input, &mut ch).expect("commit");
        let proof = resident.open(data, protocol(), &mut ch).expect("open");
        resident_ms = resident_ms.min(ms(t));
        resident_last = Some((commitment, proof));
        let input = witness();
        let t = Instant::now();
        let mut ch = Stock::from_hasher(vec![], Keccak256Hash);
        let (_, data) = stock.commit(input, &mut ch).expect("commit");
        drop(stock.open(data, protocol(), &mut ch).expect("open"));
        stock_ms = stock_ms.min(ms(t));
        warm_up(&|| {
            let mut ch = Ours::new(GpuKeccakHash::new(vec![], Some(keccak.clone())));
            let (_, data) = gpu.commit(witness(), &mut ch).expect("commit");
            drop(gpu.open(data, protocol(), &mut ch).expect("open"));
        });
        let input = witness();
        let t = Instant::now();
        let mut ch = Ours::new(GpuKeccakHash::new(vec![], Some(keccak.clone())));
        let (commitment, data) = gpu.commit(input, &mut ch).expect("commit");
        let proof = gpu.open(data, protocol(), &mut ch).expect("open");
        gpu_ms = gpu_ms.min(ms(t));
        last = Some((commitment, proof));
    }
    // Where one resident proof spends its time: host wall time of each step (all rounds), and
    // the GPU time of its kernels (dispatch profile: each dispatch timed, so slower than the
    // runs above).
    {
        use whir_wgpu::prover::times::Step;
        let mut ch = Ours::new(GpuKeccakHash::new(vec![], Some(keccak.clone())));
        let input = witness();
        let t = Instant::now();
        let (_, data) = resident.commit(input, &mut ch).expect("commit");
        let commit_ms = ms(t);
        let t = Instant::now();
        let (_, times) = resident.open_timed(data, &protocol(), None, &mut ch).expect("open");
        let open_ms = ms(t);
        let steps: Vec<String> = Step::ALL.iter().map(|&s| format!("{} {:.1}", s.name(), times.breakdown.total(s).wall.as_secs_f64() * 1e3)).collect();
        println!("  resident Keccak proof: commit {commit_ms:.1} ms, open {open_ms:.1} ms: {}", steps.join(", "));
        let profiler = ctx.profiler();
        if profiler.begin_dispatches() {
            let mut ch = Ours::new(GpuKeccakHash::new(vec![], Some(keccak.clone())));
            let (_, data) = resident.commit(witness(), &mut ch).expect("commit");
            drop(resident.open(data, protocol(), &mut ch).expect("open"));
            if let Ok(Some(mut spans)) = profiler.end_dispatches() {
                spans.sort_by_key(|s| std::cmp::Reverse(s.gpu));
                let total: f64 = spans.iter().map(|s| s.gpu.as_secs_f64() * 1e3).sum();
                let top: Vec<String> = spans.iter().take(8).map(|s| format!("{} {:.2} ms ({}x)", s.kernel, s.gpu.as_secs_f64() * 1e3, s.dispatches)).collect();
                println!("  its kernels: {total:.1} ms of GPU time; {}", top.join(", "));
            }
        }
    }
    let (commitment, proof) = last.expect("a proof");
    let bytes = postcard::to_allocvec(&proof).expect("serialize");
    let (resident_commitment, resident_proof) = resident_last.expect("a resident proof");
    let same = resident_commitment == commitment && postcard::to_allocvec(&resident_proof).expect("serialize") == bytes;
    let proof: PcsProof<BabyBear, EF, CpuKeccakMmcs<BabyBear>> = postcard::from_bytes(&bytes).expect("deserialize");
    let verifier = WhirProver::<EF, BabyBear, p3_dft::Radix2DFTSmallBatch<BabyBear>, CpuKeccakMmcs<BabyBear>, Stock, L>::new(
        WhirConfig::new(log, params()).expect("parameters"),
        Default::default(),
        GpuKeccakMmcs::<BabyBear>::new(None, 0).cpu().clone(),
    );
    verifier.verify(&commitment, &proof, &mut Stock::from_hasher(vec![], Keccak256Hash), protocol()).expect("the stock verifier accepts");
    println!(
        "  WHIR over Keccak, n = {log} fold {fold} rate 1 PoW {pow_bits}, BabyBear^4: WhirProver on the GPU pieces best {gpu_ms:.1} ms, on Plonky3's pieces {stock_ms:.1} ms = {:.1}x (proof {} bytes, verified)",
        stock_ms / gpu_ms,
        bytes.len()
    );
    println!(
        "  WHIR over Keccak, resident (GpuProver::keccak_pcs_over) best {resident_ms:.1} ms = {:.1}x Plonky3's pieces; proof {} the GPU pieces' (same challenger, smallest witnesses)",
        stock_ms / resident_ms,
        if same { "byte-identical to" } else { "DIFFERS from" }
    );
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|s| s.parse().ok()).collect();
    let log = args.first().copied().unwrap_or(22);
    let reps = args.get(1).copied().unwrap_or(5).max(1);
    let mut rng = StdRng::seed_from_u64(5);
    let matrix = RowMajorMatrix::new((0..16usize << log).map(|_| rng.random::<BabyBear>()).collect::<Vec<_>>(), 16);
    let sponge = U64Sponge::new(KeccakF);
    let cpu = VectorMmcs::new(LeafHash::new(sponge), NodeCompress::new(sponge), 0);
    println!("rayon threads {}, p3_keccak VECTOR_LEN {VECTOR_LEN}", rayon::current_num_threads());
    let mut cpu_root = None;
    let mut cpu_best = f64::MAX;
    for _ in 0..reps {
        let input = matrix.clone();
        let t = Instant::now();
        let (cap, _) = cpu.commit(vec![input]);
        cpu_best = cpu_best.min(ms(t));
        cpu_root = Some(cap.roots()[0]);
    }
    println!("Plonky3 MerkleTreeMmcs (vectorized Keccak), 2^{log} x 16: best of {reps} {cpu_best:.1} ms");
    // The u64 multiply with its default Keccak lanes (`vec2<u32>`) and with native `u64` lanes
    // (`GpuTuning::keccak_u64_lanes`), then the emulated multiply.
    for (variant, u64_lanes) in [(MulVariant::U64, false), (MulVariant::U64, true), (MulVariant::Emulated, false)] {
        let mut options = GpuOptions { mul_variant: Some(variant), ..Default::default() };
        options.tuning.keccak_u64_lanes = u64_lanes;
        let lanes = if u64_lanes { "u64 lanes" } else { "vec2 lanes" };
        println!("-- {variant:?} multiply, Keccak {lanes}");
        let ctx = match GpuContext::new(options) {
            Ok(ctx) => Arc::new(ctx),
            Err(e) => {
                println!("{variant:?}: no context ({e})");
                continue;
            }
        };
        let keccak = GpuKeccak::new(ctx.clone());
        // A second of work first: the GPU's clocks rise under load.
        let warm: Vec<[u64; 25]> = vec![[1; 25]; 1 << 16];
        let started = Instant::now();
        while started.elapsed().as_secs_f64() < 1.0 {
            keccak.permute_many(&warm).expect("warm-up");
        }
        // Permutations: kernel time of 2^19 states (100 MiB, inside WebGPU's default binding).
        let states: Vec<[u64; 25]> = (0..1usize << 19).map(|_| std::array::from_fn(|_| rng.random())).collect();
        keccak.permute_many(&states[..1024]).expect("warm-up");
        let mut perm_ms = f64::MAX;
        for _ in 0..3 {
            if let Some(k) = kernel_ms(&ctx, || drop(keccak.permute_many(&states).expect("permutations"))) {
                perm_ms = perm_ms.min(k);
            }
        }
        println!(
            "{} {variant:?}: Keccak-f {:.3} ms kernel for 2^19 states = {:.2} G permutations/s",
            ctx.summary().name,
            perm_ms,
            (1u64 << 19) as f64 / perm_ms / 1e6
        );
        let layers = keccak.digest_layers(&matrix).expect("tree");
        let root = layers.last().expect("root")[0];
        assert_eq!(Some(root), cpu_root, "{variant:?}: the GPU root differs from Plonky3's");
        let (mut wall, mut kernels) = (f64::MAX, f64::MAX);
        for _ in 0..reps {
            let t = Instant::now();
            drop(keccak.digest_layers(&matrix).expect("tree"));
            wall = wall.min(ms(t));
        }
        for _ in 0..3 {
            if let Some(k) = kernel_ms(&ctx, || drop(keccak.digest_layers(&matrix).expect("tree"))) {
                kernels = kernels.min(k);
            }
        }
        grind(&keccak, &mut rng);
        let whir_log = std::env::var("WHIR_LOG").ok().and_then(|v| v.parse().ok()).unwrap_or(24);
        whir(&ctx, whir_log, reps.min(3), &mut rng);
        // The drop-in MMCS: host matrix to commitment (rows uploaded on all cores, layers kept
        // on the GPU, the root read back).
        let mmcs = GpuKeccakMmcs::<BabyBear>::new(Some(keccak.clone()), 0);
        let (cap, _) = mmcs.commit(vec![matrix.clone()]);
        assert_eq!(Some(cap.roots()[0]), cpu_root, "{variant:?}: the MMCS root differs");
        let mut commit = f64::MAX;
        for _ in 0..reps {
            let input = matrix.clone();
            let t = Instant::now();
            drop(mmcs.commit(vec![input]));
            commit = commit.min(ms(t));
        }
        println!("{variant:?}: GpuKeccakMmcs::commit 2^{log} x 16 best {commit:.1} ms = {:.1}x Plonky3's vectorized MMCS", cpu_best / commit);
        println!(
            "{variant:?}: tree 2^{log} x 16: wall (upload, kernels, every layer read back) best {wall:.1} ms = {:.1}x Plonky3; kernels {kernels:.2} ms = {:.1}x Plonky3; roots equal",
            cpu_best / wall,
            cpu_best / kernels
        );
    }
}
