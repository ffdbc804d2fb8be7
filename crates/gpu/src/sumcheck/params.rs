//! The parameter blocks and state the sumcheck kernels read, each the Rust twin of a WGSL
//! struct (the layouts are checked against the shaders' in the tests: `WGSL_TWINS`).

use crate::grind::{RATE, WIDTH};

/// Rust twin of `RoundParams` in wgsl/sumcheck/round.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct RoundParams {
    pub(crate) count: u32,
    pub(crate) groups: u32,
    pub(crate) first: u32,
    pub(crate) _pad: u32,
}

/// Rust twin of `FoldParams` in wgsl/sumcheck/fold.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct FoldParams {
    pub(crate) r: [u32; 4],
    pub(crate) r_hi: [u32; 4],
    pub(crate) half: u32,
    pub(crate) _pad: [u32; 3],
}

/// Rust twin of `WeightParams` in wgsl/sumcheck/weights.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct WeightParams {
    pub(crate) size: u32,
    pub(crate) vars: u32,
    pub(crate) count: u32,
    pub(crate) groups: u32,
    pub(crate) offset: u32,
    pub(crate) total: u32,
    pub(crate) _pad: [u32; 2],
}

/// Rust twin of `EvalParams` in wgsl/sumcheck/eval.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct EvalParams {
    pub(crate) size: u32,
    pub(crate) groups: u32,
    pub(crate) chunks: u32,
    pub(crate) base: u32,
    pub(crate) offset: u32,
    pub(crate) first: u32,
    pub(crate) rows: u32,
    pub(crate) _pad: u32,
}

/// Rust twin of `SpongeState` in wgsl/sumcheck/sponge_step.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct SpongeState {
    pub(crate) sponge: [u32; WIDTH],
    pub(crate) pending: [u32; RATE],
    pub(crate) info: [u32; 4],
}

/// Rust twin of `SpongeStep` in wgsl/sumcheck/sponge_step.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct SpongeStep {
    pub(crate) observe: [u32; 4],
    pub(crate) grind: [u32; 2],
    pub(crate) _pad: [u32; 2],
}

/// Rust twin of `PowerTablesParams` in wgsl/sumcheck/power_tables.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct PowerTablesParams {
    pub(crate) vars: u32,
    pub(crate) point: u32,
    pub(crate) reversed: u32,
    pub(crate) monomial: u32,
}

/// Rust twin of `PowersTailParams` in wgsl/sumcheck/powers_tail.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct PowersTailParams {
    pub(crate) vars: u32,
    pub(crate) point: u32,
    pub(crate) len: u32,
    pub(crate) _pad: u32,
}

/// Rust twin of `SlotEvalParams` in wgsl/sumcheck/slot_eval.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct SlotEvalParams {
    pub(crate) base: u32,
    pub(crate) seg_offset: u32,
    pub(crate) seg_size: u32,
    pub(crate) segment: u32,
    pub(crate) total_groups: u32,
    pub(crate) _pad: [u32; 3],
}

/// Rust twin of `SlotSumParams` in wgsl/sumcheck/slot_sum.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct SlotSumParams {
    pub(crate) count: u32,
    pub(crate) total_groups: u32,
    pub(crate) segments: u32,
    pub(crate) _pad: u32,
}

/// Rust twin of `LazySlotParams` in wgsl/sumcheck/lazy_slot_round.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct LazySlotParams {
    pub(crate) terms: u32,
    pub(crate) bind: u32,
    pub(crate) _pad: [u32; 2],
}

/// Rust twin of `SlotWeightParams` in wgsl/sumcheck/slot_weights.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct SlotWeightParams {
    pub(crate) seg_offset: u32,
    pub(crate) seg_size: u32,
    pub(crate) total_groups: u32,
    pub(crate) _pad: u32,
}

/// Rust twin of `LazyParams` in wgsl/sumcheck/lazy_weights.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct LazyParams {
    pub(crate) count: u32,
    pub(crate) groups: u32,
    pub(crate) first: u32,
    pub(crate) offset: u32,
    pub(crate) points: u32,
    pub(crate) lo_bits: u32,
    pub(crate) lo_at: u32,
    pub(crate) stride: u32,
}

/// Rust twin of `LazyCoeffParams` in wgsl/sumcheck/lazy_coeffs.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct LazyCoeffParams {
    pub(crate) points: u32,
    pub(crate) t: u32,
    pub(crate) rounds_plus_one: u32,
    pub(crate) _pad: u32,
}

/// Rust twin of `ChainWireParams` in wgsl/sumcheck/chain.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ChainWireParams {
    pub(crate) rest: u32,
    pub(crate) poly: u32,
    pub(crate) _pad: [u32; 2],
}

/// Rust twin of `ChainState` in wgsl/sumcheck/chain_state.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ChainState {
    pub(crate) sponge: [u32; WIDTH],
    pub(crate) pending: [u32; RATE],
    pub(crate) info: [u32; 4],
    pub(crate) r: [u32; 8],
    pub(crate) range: [u32; 4],
}

/// Rust twin of `BaseParams` in wgsl/sumcheck/base.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct BaseParams {
    pub(crate) r: [u32; 4],
    pub(crate) r_hi: [u32; 4],
    pub(crate) count: u32,
    pub(crate) groups: u32,
    pub(crate) first: u32,
    pub(crate) _pad: u32,
}

/// Byte offsets of `ChainState::info` and `ChainState::r`.
pub(crate) const CHAIN_INFO_AT: u64 = ((WIDTH + RATE) * 4) as u64;
pub(crate) const CHAIN_R_AT: u64 = CHAIN_INFO_AT + 16;

/// The WGSL twins of these parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] = &[
    crate::shaders::twin_layout!(RoundParams as "RoundParams" in "sumcheck/round" { count, groups, first }),
    crate::shaders::twin_layout!(FoldParams as "FoldParams" in "sumcheck/fold" { r, r_hi, half }),
    crate::shaders::twin_layout!(WeightParams as "WeightParams" in "sumcheck/weights" { size, vars, count, groups, offset, total }),
    crate::shaders::twin_layout!(EvalParams as "EvalParams" in "sumcheck/eval" { size, groups, chunks, base, offset, first, rows }),
    crate::shaders::twin_layout!(SpongeState as "SpongeState" in "sumcheck/sponge_step" { sponge, pending, info }),
    crate::shaders::twin_layout!(SpongeStep as "SpongeStep" in "sumcheck/sponge_step" { observe, grind }),
    crate::shaders::twin_layout!(PowerTablesParams as "PowerTablesParams" in "sumcheck/power_tables" { vars, point, reversed, monomial }),
    crate::shaders::twin_layout!(PowersTailParams as "PowersTailParams" in "sumcheck/powers_tail" { vars, point, len }),
    crate::shaders::twin_layout!(LazyParams as "LazyParams" in "sumcheck/lazy_weights" { count, groups, first, offset, points, lo_bits, lo_at, stride }),
    crate::shaders::twin_layout!(LazyCoeffParams as "LazyCoeffParams" in "sumcheck/lazy_coeffs" { points, t, rounds_plus_one }),
    crate::shaders::twin_layout!(ChainState as "ChainState" in "sumcheck/chain_state" { sponge, pending, info, r, range }),
    crate::shaders::twin_layout!(ChainWireParams as "ChainWireParams" in "sumcheck/chain" { rest, poly }),
    crate::shaders::twin_layout!(BaseParams as "BaseParams" in "sumcheck/base" { r, r_hi, count, groups, first }),
    crate::shaders::twin_layout!(SlotEvalParams as "SlotEvalParams" in "sumcheck/slot_eval" { base, seg_offset, seg_size, segment, total_groups }),
    crate::shaders::twin_layout!(SlotSumParams as "SlotSumParams" in "sumcheck/slot_sum" { count, total_groups, segments }),
    crate::shaders::twin_layout!(SlotWeightParams as "SlotWeightParams" in "sumcheck/slot_weights" { seg_offset, seg_size, total_groups }),
    crate::shaders::twin_layout!(LazySlotParams as "LazySlotParams" in "sumcheck/lazy_slot_round" { terms, bind }),
];
