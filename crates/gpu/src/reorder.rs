//! Reordering a table held at bit-reversed indices: the layout a message buffer has, and the
//! kernel that undoes the reversal (wgsl/util/reverse_bits.wgsl). Below both the codewords and
//! the sumcheck, which each name it.

use crate::context::{Dispatch, GpuContext};
use crate::error::{GpuError, Result};
use crate::shaders::Kernel;

/// Rust twin of `ReverseBitsParams` in wgsl/util/reverse_bits.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ReverseBitsParams {
    row_bits: u32,
    col_bits: u32,
    words: u32,
    count: u32,
}

/// How a codeword's message lies in the buffer that holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MessageLayout {
    /// Row-major, as the message is.
    #[default]
    Rows,
    /// Entry (j, c) of the message (in elements of `words` words) lies at (rev(j), rev(c)), each
    /// index bit-reversed within its range: a table kept at bit-reversed indices
    /// ([`GpuSumcheck::with_reversed_indices`](crate::GpuSumcheck::with_reversed_indices)), whose message is then the layout that
    /// transposes its 2^fold blocks. Reordered on the GPU before the encoding (one pass, a
    /// transient copy of the message).
    ReversedIndices {
        /// Words per element.
        words: usize,
    },
}

/// A dispatch that copies `src` (2^(row_bits + col_bits) elements of `words` words) into `dst`
/// with its row and column indices each bit-reversed (wgsl/util/reverse_bits.wgsl).
pub(crate) fn reverse_bits_dispatch(
    ctx: &GpuContext,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
    row_bits: usize,
    col_bits: usize,
    words: usize,
) -> Result<Dispatch> {
    let count = 1usize.checked_shl((row_bits + col_bits) as u32).filter(|&c| c <= u32::MAX as usize && c * words <= u32::MAX as usize);
    let Some(count) = count else {
        return Err(GpuError::InvalidInput(format!("a table of 2^{} elements of {words} words to reorder", row_bits + col_bits)));
    };
    let needed = (4 * words * count) as u64;
    if src.size() < needed || dst.size() < needed {
        return Err(GpuError::InvalidInput(format!("buffers of {} and {} bytes for a reordered table of {needed}", src.size(), dst.size())));
    }
    let pipeline = ctx.pipeline(Kernel::ReverseIndexBits, &[])?;
    let params = ctx
        .uniform("reverse bits params", &ReverseBitsParams { row_bits: row_bits as u32, col_bits: col_bits as u32, words: words as u32, count: count as u32 });
    let bind = ctx.bind_buffers(&pipeline, &[&params, src, dst]);
    Ok(Dispatch { pipeline: (*pipeline).clone(), bind, groups: count.div_ceil(256) as u32 })
}

/// The WGSL twin of this file's parameter struct, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] =
    &[crate::shaders::twin_layout!(ReverseBitsParams as "ReverseBitsParams" in "util/reverse_bits" { row_bits, col_bits, words, count })];
