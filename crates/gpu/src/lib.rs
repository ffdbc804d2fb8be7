//! # whir-gpu
//!
//! BabyBear field kernels on any GPU through wgpu and WGSL, and drop-in Plonky3 adapters:
//!
//! - [`GpuContext`]: one adapter and device, real limits, errors as `Result`, cached pipelines.
//! - [`GpuNtt`]: column NTTs of row-major matrices (forward, inverse, coset, zero-tail aware)
//!   that can leave their output on the GPU for the next kernel.
//! - [`GpuDft`]: a `p3_dft::TwoAdicSubgroupDft<BabyBear>`; [`GpuEncoder`]: a
//!   `p3_commit::Encoder<BabyBear>`. Output identical to Plonky3's. A `GpuDft` built
//!   [`committing_ahead_for`](GpuDft::committing_ahead_for) a [`GpuMmcs`] hands its LDEs' trees
//!   to that MMCS ([`CommitAhead`]), so a FRI commitment never uploads an LDE it computed.
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

pub use challenger::{GpuChallenger, GrindAhead, InnerChallenger, PowClock, DEFAULT_GPU_MIN_BITS};
pub use codeword::{CommittedCodeword, GpuCodewords, RecordedCodeword};
pub use commit_ahead::{CommitAhead, DEFAULT_COMMIT_AHEAD_MIN_BYTES};
pub use context::{
    list_adapters, pool_adapters, AdapterSummary, Batch, Dispatch, GpuContext, GpuMemory, GpuProfiler, HostCosts, InFlight, KernelSpan, KernelTimer,
    ProfileLabelGuard, ProfileSpan, QueueOccupancy, ReadChunks, ReadSlot, Readback, RecordBeforeCopy, TransferCounts, MAX_QUEUES,
};
pub use dft::{default_gpu_min_elements, default_ntt, GpuDft, GpuEncoder, DEFAULT_CPU_THRESHOLD};
pub use error::{GpuError, Result};
pub use field::{Ext8, ExtensionId, FieldId, GpuExtension, GpuField};
pub use grind::{cpu_grind, pow_mask, GpuGrinder, GrindAheadRecord, GrindOffer, GrindRead, GrindState, MAX_BITS as MAX_GRIND_BITS};
pub use merkle::{
    ColumnLeaves, GpuMerkle, GpuMerkleTree, OpenedRows, PendingRows, RecordedTree, RowChunk, RowGroup, RowOrder, RowSource, RowsSlot, TreeRows, TreeSpec,
};
pub use mmcs::{BatchError, CpuMmcsOf, GpuMmcs, GpuProverData, MmcsField};
pub use ntt::{plan_passes, plan_split, DifPassPlan, Direction, GpuNtt, InPlaceError, NttSource, NttSpec, ResultHooks};
pub use options::{env_switch, AdapterSelector, GpuOptions, GpuTuning, LimitsProfile, APPLE_M1_MAX_BUFFER_BYTES};
pub use poseidon2::{GpuPoseidon2, Poseidon2Constants, Poseidon2Field, Poseidon2Width};
pub use reorder::MessageLayout;
pub use shaders::{Kernel, MulVariant};
pub use sumcheck::{ChainedRound, Ext4, GpuSumcheck, GrindFrom, Slots, SpongeScript, SpongeScriptRecord, SpongeScriptValues, MAX_SCRIPT_SAMPLES};
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
