//! The settings of a GPU context, as typed values passed in. The environment is read in one
//! place, [`GpuOptions::from_env`], which [`GpuContext::new_default`](crate::GpuContext::new_default)
//! (and through it the Plonky3 drop-ins' `Default`s) and the `whir` command use; everything else
//! takes options from its caller.

use std::fmt;

use crate::error::{GpuError, Result};
use crate::shaders::MulVariant;

/// How to choose an adapter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AdapterSelector {
    /// The high-performance adapter (`GpuOptions::from_env` resolves `WHIR_ADAPTER` first).
    #[default]
    Auto,
    /// wgpu's high-performance choice.
    HighPerformance,
    /// The first adapter on this backend ("vulkan", "metal", "dx12", "gl").
    Backend(wgpu::Backend),
    /// The first adapter whose name contains this text (case-insensitive).
    Name(String),
    /// The n-th adapter of `list_adapters()`.
    Index(usize),
}

impl AdapterSelector {
    /// Parses a `WHIR_ADAPTER` value: a backend name, `index:N`, `high-performance`, or a name substring.
    pub fn parse(text: &str) -> Self {
        let t = text.trim();
        match t.to_ascii_lowercase().as_str() {
            "" | "auto" => Self::Auto,
            "high-performance" | "hp" => Self::HighPerformance,
            "vulkan" => Self::Backend(wgpu::Backend::Vulkan),
            "metal" => Self::Backend(wgpu::Backend::Metal),
            "dx12" => Self::Backend(wgpu::Backend::Dx12),
            "gl" | "gles" => Self::Backend(wgpu::Backend::Gl),
            lower => match lower.strip_prefix("index:").and_then(|n| n.parse().ok()) {
                Some(n) => Self::Index(n),
                None => Self::Name(t.to_string()),
            },
        }
    }
}

impl fmt::Display for AdapterSelector {
    /// The selector as `WHIR_ADAPTER` spells it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => write!(f, "auto"),
            Self::HighPerformance => write!(f, "high-performance"),
            Self::Backend(b) => write!(f, "{}", b.to_str()),
            Self::Name(n) => write!(f, "{n:?}"),
            Self::Index(i) => write!(f, "index:{i}"),
        }
    }
}

/// The limits and features a context asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LimitsProfile {
    /// Everything the adapter offers (SHADER_INT64, subgroups, timestamps, its full limits).
    #[default]
    Adapter,
    /// WebGPU's default limits and no optional features: the weakest conforming adapter (128 MiB
    /// per storage binding, 256 MiB per buffer, 16 KiB of workgroup memory, 256 invocations per
    /// workgroup, 65,535 workgroups per dimension, 8 storage buffers per stage), so the emulated
    /// multiply. `max_binding_bytes` lowers the binding limit further (tests cross it at small
    /// sizes).
    WebGpu {
        /// A storage binding limit below WebGPU's default, in bytes; None keeps the default.
        max_binding_bytes: Option<u64>,
    },
    /// What wgpu's Metal backend gives on an Apple M1 (macOS, Apple7 GPU family; wgpu-hal's
    /// `metal/adapter.rs`), capped by what this adapter has: SHADER_INT64, SUBGROUP and
    /// TIMESTAMP_QUERY but no timestamps inside encoders or passes (Apple GPUs sample counters
    /// at stage boundaries only, so GPU profiling is off); 32 KiB of workgroup memory, 1,024
    /// invocations per workgroup, 65,535 workgroups per dimension, 29 storage buffers per stage,
    /// 32-byte storage and 256-byte uniform offset alignment, subgroups of 4 to 64 as wgpu
    /// reports them on Metal, and buffers and bindings up to [`APPLE_M1_MAX_BUFFER_BYTES`].
    AppleM1,
}

/// The largest buffer (and binding) the Apple M1 profile allows: Metal's `maxBufferLength`,
/// about half the unified memory on Apple silicon (36 GiB on a 64 GiB M1 Max, wgpu #2502);
/// 4 GiB for the 8 GiB M1, the smallest.
pub const APPLE_M1_MAX_BUFFER_BYTES: u64 = 4 << 30;

impl LimitsProfile {
    /// `adapter`, `webgpu`, `webgpu:BYTES` (a smaller binding limit, e.g. `webgpu:4194304`) or
    /// `apple-m1`, as `WHIR_LIMITS` spells it.
    pub fn parse(text: &str) -> Result<Self> {
        let t = text.trim().to_ascii_lowercase();
        let bad = || GpuError::InvalidInput(format!("WHIR_LIMITS={text:?} is not a limits profile; use adapter, webgpu, webgpu:BYTES or apple-m1"));
        match t.split_once(':') {
            None if t == "adapter" || t.is_empty() => Ok(Self::Adapter),
            None if t == "apple-m1" => Ok(Self::AppleM1),
            None if t == "webgpu" => Ok(Self::WebGpu { max_binding_bytes: None }),
            Some(("webgpu", bytes)) => {
                let bytes: u64 = bytes.trim().parse().map_err(|_| bad())?;
                if bytes < 1024 || !bytes.is_multiple_of(4) {
                    return Err(GpuError::InvalidInput(format!("WHIR_LIMITS binding limit {bytes} must be a multiple of 4 and at least 1024 bytes")));
                }
                Ok(Self::WebGpu { max_binding_bytes: Some(bytes) })
            }
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for LimitsProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Adapter => write!(f, "adapter"),
            Self::WebGpu { max_binding_bytes: None } => write!(f, "webgpu"),
            Self::WebGpu { max_binding_bytes: Some(b) } => write!(f, "webgpu:{b}"),
            Self::AppleM1 => write!(f, "apple-m1"),
        }
    }
}

/// Options for [`GpuContext::new`](crate::GpuContext::new). `Default` is this crate's defaults
/// with nothing read from the environment.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Which adapter to open.
    pub adapter: AdapterSelector,
    /// Field-multiply variant; `None` picks u64 where the adapter has SHADER_INT64.
    pub mul_variant: Option<MulVariant>,
    /// Microseconds a wait for the GPU spins before blocking; `None`: 1,000 on hardware
    /// adapters and 0 on software ones.
    pub spin_us: Option<u64>,
    /// Most MiB of idle device buffers kept for reuse (and of staging buffers per direction, at
    /// most 4 GiB); `None`: 32 GiB (given back if an allocation runs out of memory).
    /// Kept buffers save allocations (slow: docs/benchmarks-history.md) at the cost of memory:
    /// 0 holds only what the work has live at once.
    pub pool_mib: Option<u64>,
    /// Which limits and features to ask the adapter for; `None`: the adapter's own.
    pub limits: Option<LimitsProfile>,
    /// Most MiB of GPU buffer memory the context may hold (live buffers and pools); `None`: no
    /// cap. Pools are trimmed to stay under it; work that still goes over it fails with
    /// [`GpuError::OverBudget`] (callers that can estimate their need check
    /// [`GpuMemory::check`](crate::profile::GpuMemory::check) before starting).
    pub memory_mib: Option<u64>,
    /// Choices kept tunable for measurement; the defaults are the measured best.
    pub tuning: GpuTuning,
    /// Writes wgpu's trace of the device (every buffer, write, shader, pipeline and submission,
    /// with their data) into this existing directory; needs this crate's `trace` feature.
    /// tests/dawn.rs replays such traces on Dawn.
    pub trace_dir: Option<std::path::PathBuf>,
}

/// Choices that stay tunable so they can be measured on other hardware (each default is the
/// best measured; docs/benchmarks-history.md). None of them changes a result, only its cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuTuning {
    /// Tree levels the Merkle leaf kernel builds with the leaves (0-6); `None`: chosen per tree.
    pub merkle_fused_levels: Option<usize>,
    /// Difficulty from which `GpuChallenger` grinds on the GPU (below it the CPU is faster).
    pub gpu_min_bits: usize,
    /// Let a grind that is due later run on the GPU while other work is recorded.
    pub grind_ahead: bool,
    /// Hand the first parts of a long recording (a commit, a batch of reductions) to the GPU
    /// while the rest is recorded.
    pub early_submits: bool,
    /// The lowest Merkle layer every resident codeword's tree keeps; `None`: narrow trees of
    /// 2^21 rows or more keep about an eighth of their codeword, openings rebuild the rest.
    pub codeword_tree_lowest: Option<usize>,
    /// Merkle levels of at most this many nodes spread each node's permutation over 16
    /// invocations (wgsl/poseidon2/lanes.wgsl): a level's latency is then a few S-boxes a round
    /// rather than one thread's whole permutation. 0: never (every level one thread a node).
    pub lane_level_max_nodes: usize,
    /// The transcript kernels (sumcheck chains, sponge scripts, grind set-ups) spread each permutation over
    /// 16 invocations instead of running it on one (wgsl/pow/duplex_lanes.wgsl).
    pub transcript_lanes: bool,
    /// [`GpuContext::on_queues`](crate::GpuContext::on_queues) opens its queues in a
    /// compute-only queue family (Vulkan's async compute) rather than in the graphics family
    /// wgpu itself uses (whose queues may share one engine): on NVIDIA's driver, where that
    /// family offers the queues asked for (else family 0, as without this setting).
    pub compute_only_queues: bool,
    /// Keccak kernels hold their 64-bit lanes as native `u64` where the context multiplies with
    /// 64-bit integers (else, and by default, as `vec2<u32>`: faster on NVIDIA, whose compiler
    /// splits 64-bit rotations; BENCHMARKS.md, "Keccak").
    pub keccak_u64_lanes: bool,
}

impl GpuTuning {
    /// The transcript kernels' composition (sumcheck chains, sponge scripts, grind set-ups):
    /// one invocation, or a workgroup of 16 that spreads each permutation over its lanes
    /// (`transcript_lanes`; wgsl/pow/duplex_lanes.wgsl).
    pub(crate) fn transcript_consts(&self) -> [(&'static str, u32); 1] {
        [("TRANSCRIPT_LANES", if self.transcript_lanes { 16 } else { 1 })]
    }
}

impl Default for GpuTuning {
    fn default() -> Self {
        Self {
            merkle_fused_levels: None,
            gpu_min_bits: crate::transcript::DEFAULT_GPU_MIN_BITS,
            grind_ahead: true,
            early_submits: true,
            codeword_tree_lowest: None,
            // A chain of dependent level dispatches takes less GPU time a dispatch over 16 lanes
            // than over one thread up to 4,096 nodes, and more past it (BENCHMARKS.md).
            lane_level_max_nodes: 4096,
            // Lanes take less GPU time a chain_observe dispatch (BENCHMARKS.md).
            transcript_lanes: true,
            // Compute-only queues overlap their chains of dependent dispatches; queues of the
            // graphics family ran no faster than one context (BENCHMARKS.md, "Throughput").
            compute_only_queues: true,
            // vec2<u32> lanes: the Keccak trees and grinds are faster with them on NVIDIA
            // (BENCHMARKS.md, "Keccak").
            keccak_u64_lanes: false,
        }
    }
}

/// `name`'s value, if set and not blank.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `name` parsed, if set; a value that does not parse is an error naming it.
fn parsed<T: std::str::FromStr>(name: &str, what: &str) -> Result<Option<T>> {
    match var(name) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| GpuError::InvalidInput(format!("{name}={v:?} is not {what}"))),
    }
}

/// The environment variable `name` as an on/off switch (`0` off, `1` on), if set; any other
/// value is an error naming it. Shared with other crates' options constructors, so every
/// `WHIR_*` switch reads alike.
pub fn env_switch(name: &str) -> Result<Option<bool>> {
    match var(name).as_deref().map(str::trim) {
        None => Ok(None),
        Some("0") => Ok(Some(false)),
        Some("1") => Ok(Some(true)),
        Some(v) => Err(GpuError::InvalidInput(format!("{name}={v:?} is not a switch; use 0 or 1"))),
    }
}

impl GpuOptions {
    /// This crate's defaults with the `WHIR_*` environment applied: `WHIR_ADAPTER`,
    /// `WHIR_LIMITS`, `WHIR_GPU_SPIN_US`, `WHIR_GPU_POOL_MIB`, `WHIR_GPU_MEMORY_MIB`, and the
    /// tuning variables `WHIR_MERKLE_FUSED_LEVELS`, `WHIR_GPU_MIN_BITS`, `WHIR_GRIND_AHEAD`,
    /// `WHIR_EARLY_SUBMITS`, `WHIR_CODEWORD_TREE_LOWEST`, `WHIR_LANE_LEVEL_MAX_NODES`, `WHIR_TRANSCRIPT_LANES`, `WHIR_COMPUTE_ONLY_QUEUES` and `WHIR_KECCAK_U64_LANES`. A value that
    /// does not parse is an error naming the variable.
    pub fn from_env() -> Result<Self> {
        let d = GpuTuning::default();
        let tuning = GpuTuning {
            merkle_fused_levels: parsed("WHIR_MERKLE_FUSED_LEVELS", "a number of tree levels")?,
            gpu_min_bits: parsed("WHIR_GPU_MIN_BITS", "a number of bits")?.unwrap_or(d.gpu_min_bits),
            grind_ahead: env_switch("WHIR_GRIND_AHEAD")?.unwrap_or(d.grind_ahead),
            early_submits: env_switch("WHIR_EARLY_SUBMITS")?.unwrap_or(d.early_submits),
            codeword_tree_lowest: parsed("WHIR_CODEWORD_TREE_LOWEST", "a tree layer")?,
            lane_level_max_nodes: parsed("WHIR_LANE_LEVEL_MAX_NODES", "a number of tree nodes")?.unwrap_or(d.lane_level_max_nodes),
            transcript_lanes: env_switch("WHIR_TRANSCRIPT_LANES")?.unwrap_or(d.transcript_lanes),
            compute_only_queues: env_switch("WHIR_COMPUTE_ONLY_QUEUES")?.unwrap_or(d.compute_only_queues),
            keccak_u64_lanes: env_switch("WHIR_KECCAK_U64_LANES")?.unwrap_or(d.keccak_u64_lanes),
        };
        Ok(Self {
            adapter: var("WHIR_ADAPTER").map_or(AdapterSelector::HighPerformance, |v| AdapterSelector::parse(&v)),
            mul_variant: None,
            spin_us: parsed("WHIR_GPU_SPIN_US", "a number of microseconds")?,
            pool_mib: parsed("WHIR_GPU_POOL_MIB", "a number of MiB")?,
            limits: var("WHIR_LIMITS").map(|v| LimitsProfile::parse(&v)).transpose()?,
            memory_mib: parsed("WHIR_GPU_MEMORY_MIB", "a number of MiB")?,
            tuning,
            trace_dir: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapter_selectors_parse() {
        assert_eq!(AdapterSelector::parse(""), AdapterSelector::Auto);
        assert_eq!(AdapterSelector::parse("Vulkan"), AdapterSelector::Backend(wgpu::Backend::Vulkan));
        assert_eq!(AdapterSelector::parse("metal"), AdapterSelector::Backend(wgpu::Backend::Metal));
        assert_eq!(AdapterSelector::parse("dx12"), AdapterSelector::Backend(wgpu::Backend::Dx12));
        assert_eq!(AdapterSelector::parse("index:2"), AdapterSelector::Index(2));
        assert_eq!(AdapterSelector::parse("high-performance"), AdapterSelector::HighPerformance);
        assert_eq!(AdapterSelector::parse(" H200 "), AdapterSelector::Name("H200".into()));
    }

    #[test]
    fn limits_profiles_parse_and_print_back() {
        for profile in [
            LimitsProfile::Adapter,
            LimitsProfile::WebGpu { max_binding_bytes: None },
            LimitsProfile::WebGpu { max_binding_bytes: Some(1 << 20) },
            LimitsProfile::AppleM1,
        ] {
            assert_eq!(LimitsProfile::parse(&profile.to_string()).unwrap(), profile);
        }
        assert_eq!(LimitsProfile::parse(" Apple-M1 ").unwrap(), LimitsProfile::AppleM1);
        let err = LimitsProfile::parse("apple").unwrap_err().to_string();
        assert!(err.contains("apple-m1"), "{err}");
    }
}
