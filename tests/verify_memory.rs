//! `whir verify` on untrusted files: reading and verifying a proof file never allocates more
//! than a bound derived from the parameters the verifier expects (`ProofFile::max_verify_memory`),
//! for valid proofs and for files forged to ask for huge allocations.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use std::io::Read;

use whir_wgpu::prover::{CpuProver, Params, Plonky3Pieces, ProofFile, ReadLimits, Soundness};

/// Counts live heap bytes and their high-water mark.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One measurement at a time: the counters are process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// Peak heap bytes above the starting level while `f` runs.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

fn params(num_vars: usize, fold: usize, log_inv_rate: usize, points: usize) -> Params {
    Params { num_vars, fold, log_inv_rate, security_bits: 60, pow_bits: 10, soundness: Soundness::Johnson, points, leaf: Default::default() }
}

#[test]
fn verification_memory_is_bounded_by_the_expected_parameters() {
    let _one = SERIAL.lock().unwrap();
    let mut rng = common::rng();
    for p in [params(10, 2, 1, 1), params(14, 4, 2, 3), params(16, 1, 1, 1)] {
        let evals = common::random_vec(&mut rng, 1 << p.num_vars);
        let bytes = CpuProver.prove(&p, &evals).unwrap().proof_file(&p).to_bytes();
        let bound = ProofFile::max_verify_memory(&p).unwrap();
        let (verdict, peak) = peak_during(|| ProofFile::read(std::io::Cursor::new(&bytes), Some(&p)).and_then(|f| f.verify(&p)));
        verdict.expect("valid proof");
        eprintln!("{p:?}: file {} bytes, peak {peak} bytes, bound {bound}", bytes.len());
        assert!(peak <= bound, "{p:?}: verifying took {peak} bytes, over the bound {bound}");

        // Forged files: huge counts in the body's length prefixes, endless input.
        let file = ProofFile::from_bytes(&bytes).unwrap();
        for pos in [0usize, 1, 5, 17, file.proof.len() / 2] {
            let mut forged = file.clone();
            let at = pos.min(forged.proof.len() - 1);
            forged.proof.splice(at..at, [0xff, 0xff, 0xff, 0xff, 0x0f]);
            let (verdict, peak) = peak_during(|| ProofFile::read(std::io::Cursor::new(forged.to_bytes()), Some(&p)).and_then(|f| f.verify(&p)));
            assert!(verdict.is_err());
            assert!(peak <= bound, "{p:?}: a forged length at {at} took {peak} bytes, over the bound {bound}");
        }
        let (verdict, peak) = peak_during(|| ProofFile::read(std::io::repeat(0xff), Some(&p)));
        assert!(verdict.is_err());
        assert!(peak <= bound, "{p:?}: an endless file took {peak} bytes, over the bound {bound}");
    }
}

/// A header naming parameters whose largest proof is gigabytes (n = 28 folded at once) does not
/// raise what reading holds: the buffer stops at the absolute limit (plus one byte), for the
/// default limit and a lower one, whatever follows the header. (Its last doubling holds the old
/// and the new buffer for a moment: 1.5x the limit.)
#[test]
fn a_forged_header_is_held_to_the_absolute_limit() {
    let _one = SERIAL.lock().unwrap();
    let mut rng = common::rng();
    let p = params(10, 2, 1, 1);
    let evals = common::random_vec(&mut rng, 1 << p.num_vars);
    let mut forged = ProofFile::from_bytes(&CpuProver.prove(&p, &evals).unwrap().proof_file(&p).to_bytes()).unwrap();
    forged.params = Params {
        num_vars: 28,
        fold: 28,
        log_inv_rate: 1,
        security_bits: 100,
        pow_bits: 20,
        soundness: Soundness::Johnson,
        points: 1,
        leaf: Default::default(),
    };
    let header = forged.to_bytes();
    for limits in [ReadLimits::default(), ReadLimits::new(3 << 20)] {
        for expected in [None, Some(&forged.params)] {
            let (verdict, peak) = peak_during(|| ProofFile::read_with(std::io::Cursor::new(&header).chain(std::io::repeat(0)), expected, limits));
            let err = verdict.unwrap_err().to_string();
            assert!(err.contains("a verifier reads from one proof file"), "{err}");
            let bound = limits.max_file_bytes / 2 * 3 + (1 << 20);
            eprintln!("{limits:?}: peak {peak} bytes");
            assert!(peak <= bound, "{limits:?}: reading took {peak} bytes, over {bound}");
        }
    }
}

/// A multi-table file's list costs the verifier memory per column (the stacked layout's claims
/// and selectors): verifying table files of many columns stays within the bound too.
#[test]
fn table_files_are_verified_within_the_bound() {
    use p3_commit::MultilinearPcs;
    use p3_sumcheck::layout::Witness;
    use whir_wgpu::gpu::GpuChallenger;
    use whir_wgpu::prover::backend::CpuBackend;
    use whir_wgpu::prover::{permutation, random_tables, CpuWhirPcs, Workload};
    let _one = SERIAL.lock().unwrap();
    let mut rng = common::rng();
    for (spec, fold) in [("4*4x1024", 4), ("2x4,3*3x200,9x3", 2), ("64*2x1024", 2)] {
        let workload = Workload::parse(spec).unwrap();
        let p = workload.params(&params(0, fold, 1, 1));
        let pcs = CpuWhirPcs::<whir_wgpu::prover::ProverLayout>::new(p.config::<GpuChallenger>().unwrap(), CpuBackend::default());
        let mut challenger = GpuChallenger::new(permutation(), None);
        workload.observe(&mut challenger);
        let (root, data) = pcs.commit(Witness::new(random_tables(&workload, &mut rng), fold), &mut challenger).unwrap();
        let proof = pcs.open(data, workload.protocol(fold), &mut challenger).unwrap();
        let bytes = ProofFile::new_tables(&p, workload.clone(), root, postcard::to_allocvec(&proof).unwrap()).to_bytes();
        let bound = ProofFile::max_verify_memory(&p).unwrap();
        let (verdict, peak) = peak_during(|| ProofFile::read(std::io::Cursor::new(&bytes), Some(&p)).and_then(|f| f.verify_tables(&p, &workload)));
        verdict.expect("valid proof");
        eprintln!("{spec}: {} columns, file {} bytes, peak {peak} bytes, bound {bound}", workload.columns(), bytes.len());
        assert!(peak <= bound, "{spec}: verifying took {peak} bytes, over the bound {bound}");
    }
}
