//! # whir-gpu
//!
//! GPU kernels on any GPU through wgpu and WGSL (BabyBear and KoalaBear, extensions of degree 4,
//! 5 and 8), and drop-in Plonky3 adapters:
//!
//! - [`GpuContext`]: one adapter and device, real limits, errors as `Result`, cached pipelines.
//! - [`GpuNtt`]: column NTTs of row-major matrices (forward, inverse, coset, zero-tail aware)
//!   that can leave their output on the GPU for the next kernel.
//! - [`GpuDft`]: a `p3_dft::TwoAdicSubgroupDft<BabyBear>`; [`GpuEncoder`]: a
//!   `p3_commit::Encoder<BabyBear>`. Output identical to Plonky3's. A `GpuDft` built
//!   [`committing_ahead_for`](GpuDft::committing_ahead_for) a [`GpuMmcs`] hands its LDEs' trees
//!   to that MMCS ([`CommitAhead`](plumbing::CommitAhead)), so a FRI commitment never uploads an LDE it computed.
//! - [`GpuPoseidon2`], [`GpuMerkle`]: Poseidon2 (width 16) and Merkle roots identical to
//!   Plonky3's `Poseidon2BabyBear<16>` and `MerkleTreeMmcs`; [`GpuMmcs`], a `p3_commit::Mmcs`.
//! - [`GpuCodewords`]: encode + commit with one wait, codeword and tree resident, rows opened
//!   with their pruned multi-proof.
//! - [`GpuChallenger`]: Plonky3's duplex challenger with proof-of-work grinding on the GPU.
//!
//! Knows nothing of WHIR: protocol code lives in `whir-prover`.

#![warn(missing_docs)]

mod challenger;
mod codeword;
mod commit_ahead;
mod context;
mod dft;
mod error;
pub mod field;
mod grind;
mod keccak;
mod merkle;
mod mmcs;
mod ntt;
mod options;
mod poseidon2;
mod reorder;
pub mod row_checksum;
pub mod shaders;
mod sumcheck;
#[doc(hidden)]
pub mod testing;
pub mod transfer;

// What a user calls: the context and its options, the kernels' owners, the Plonky3 adapters.
pub use challenger::GpuChallenger;
pub use codeword::{CommittedCodeword, GpuCodewords};
pub use context::{list_adapters, pool_adapters, AdapterSummary, GpuContext, MAX_QUEUES};
pub use dft::{GpuDft, GpuEncoder};
pub use error::{GpuError, Result};
pub use field::{Ext8, GpuExtension, GpuField};
pub use grind::GpuGrinder;
pub use keccak::{CpuKeccakMmcs, GpuKeccak, GpuKeccakChallenger, GpuKeccakHash, GpuKeccakMmcs, GpuKeccakProverData, KeccakDigest, KeccakU64Sponge};
pub use merkle::{GpuMerkle, GpuMerkleTree, OpenedRows, TreeDigest, TreeHash};
pub use mmcs::GpuMmcs;
pub use ntt::{GpuNtt, NttSpec};
pub use options::{env_switch, AdapterSelector, GpuOptions, GpuTuning, LimitsProfile};
pub use poseidon2::{GpuPoseidon2, Poseidon2Constants, Poseidon2Field};
pub use shaders::MulVariant;
pub use sumcheck::{Ext4, GpuSumcheck};

/// Recording GPU work: a [`Batch`](record::Batch) is the work for one wait; the NTT, the Merkle
/// trees and openings and the codewords record into one and return a handle
/// (`RecordedTree`, `PendingRows`, `RecordedCodeword`) that the batch's readback finishes.
pub mod record {
    pub use crate::codeword::RecordedCodeword;
    pub use crate::context::{Batch, Dispatch, InFlight, KernelTimer, ReadSlot, Readback};
    pub use crate::merkle::{ColumnLeaves, PendingRows, RecordedTree, RowChunk, RowGroup, RowOrder, RowSource, RowsSlot, TreeRows, TreeSpec};
    pub use crate::ntt::NttSource;
    pub use crate::reorder::MessageLayout;
}

/// The device transcript: proof-of-work grinds offered ahead, sponge scripts (duplex steps —
/// observe, sample, grind — played from a published state), chained sumcheck rounds, and the
/// slots of the weights they draw.
pub mod transcript {
    pub use crate::challenger::{GrindAhead, InnerChallenger, PowClock, DEFAULT_GPU_MIN_BITS};
    pub use crate::grind::{cpu_grind, pow_mask, GrindAheadRecord, GrindOffer, GrindRead, GrindState, MAX_BITS as MAX_GRIND_BITS};
    pub use crate::sumcheck::{
        ChainWire, ChainedRound, GrindFrom, ScriptValues, Slots, SpongeScript, SpongeScriptRecord, SpongeScriptValues, WireRound, MAX_SCRIPT_SAMPLES,
        MAX_SCRIPT_TAIL, MAX_SCRIPT_WORDS_AFTER_ROOT, MAX_WIRE_POLY, MAX_WIRE_REST,
    };
}

/// What the GPU spent: per-label and per-kernel GPU time, queue occupancy, transfers and the
/// host's share of them, device memory.
pub mod profile {
    pub use crate::context::{GpuMemory, GpuProfiler, HostCosts, KernelSpan, ProfileLabelGuard, ProfileSpan, QueueOccupancy, TransferCounts};
}

/// The pieces under the adapters, for tuning and tests: NTT plans, host transfer hooks, the
/// commit-ahead hand-off between a DFT and an MMCS, the MMCS's prover data and errors.
pub mod plumbing {
    pub use crate::commit_ahead::{CommitAhead, DEFAULT_COMMIT_AHEAD_MIN_BYTES};
    pub use crate::context::{GpuFaults, GpuPipelines, GpuTransfers, ReadChunks, RecordBeforeCopy};
    pub use crate::dft::{default_gpu_min_elements, default_ntt, DEFAULT_CPU_THRESHOLD};
    pub use crate::mmcs::{BatchError, CpuMmcsOf, GpuProverData, MmcsField};
    pub use crate::ntt::{plan_passes, plan_split, DifPassPlan, Direction, InPlaceError, ResultHooks};
    pub use crate::options::APPLE_M1_MAX_BUFFER_BYTES;
    pub use crate::poseidon2::Poseidon2Width;
}

pub use wgpu;

/// Threads Plonky3's CPU routines (and our CPU fallbacks) run on: rayon's pool with the
/// `parallel` feature (the default), 1 without it. Benchmarks print it beside their CPU figures.
pub fn cpu_threads() -> usize {
    if cfg!(feature = "parallel") {
        rayon::current_num_threads()
    } else {
        1
    }
}
