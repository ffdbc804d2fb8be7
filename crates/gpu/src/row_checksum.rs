//! A keyed checksum of a row-major matrix that the GPU and the host compute alike
//! (`wgsl/util/row_checksum.wgsl` is the GPU's side).
//!
//! A result committed ahead ([`CommitAhead`](crate::commit_ahead::CommitAhead)) is checksummed
//! on the GPU from the buffer it was read back from, where it costs a fraction of a millisecond,
//! and by the host once, when the MMCS is handed a matrix and must know whether it is still
//! those rows. The checksum is NH, the universal hash of UMAC: for word pairs (x0, x1) and key
//! words (k0, k1), the 64-bit sum of (x0 + k0 mod 2^32) * (x1 + k1 mod 2^32) mod 2^64. Two rows'
//! sums differ except with probability 2^-32 over the key for any fixed pair of different rows;
//! a second sum with the key shifted by two words (the Toeplitz construction) makes it 2^-64.
//! That guards against rows changed by a caller, who never sees the key (drawn per process); it
//! is not a cryptographic hash and need not be (see `commit_ahead`).
//!
//! Rows are taken in groups of [`group_rows`] rows (about 16 KiB), one pair of sums per group:
//! word pair j of local row r of a group is keyed at `r * width_even + 2j`, where `width_even`
//! is the row length rounded up to even and an odd row's last word is paired with 0. Sums over
//! a block of columns (an even first column) add up to the row's, so a matrix transformed a
//! block of columns at a time is checksummed block by block.

use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

use crate::context::{Dispatch, GpuContext};
use crate::error::{GpuError, Result};
use crate::shaders::Kernel;

/// Words in a group of rows (rows are never split): about 16 KiB.
const GROUP_WORDS: usize = 4096;

/// `width` rounded up to even: the keyed length of a row.
pub fn width_even(width: usize) -> usize {
    width + (width & 1)
}

/// Rows per checksum group for rows of `width` words.
pub fn group_rows(width: usize) -> usize {
    (GROUP_WORDS / width_even(width).max(2)).max(1)
}

/// Checksum groups of a `height` x `width` matrix.
pub fn groups(height: usize, width: usize) -> usize {
    height.div_ceil(group_rows(width))
}

/// One group's two 64-bit sums.
pub type GroupSums = [u64; 2];

/// Rust twin of `ChecksumParams` in `wgsl/util/row_checksum.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ChecksumParams {
    rows: u32,
    stride: u32,
    first_col: u32,
    cols: u32,
    width_even: u32,
    group_rows: u32,
    accumulate: u32,
    _pad: u32,
}

/// The key of one process's checksums.
#[derive(Clone, Debug)]
pub struct RowChecksum {
    seed: u64,
}

impl Default for RowChecksum {
    fn default() -> Self {
        Self::new()
    }
}

impl RowChecksum {
    /// A fresh random key.
    pub fn new() -> Self {
        Self { seed: rand::random() }
    }

    /// A fixed key (tests).
    pub fn with_seed(seed: u64) -> Self {
        Self { seed }
    }

    /// The key words for rows of `width` words: one group's keyed positions and two more.
    pub fn key(&self, width: usize) -> Vec<u32> {
        let len = group_rows(width) * width_even(width) + 2;
        (0..len as u64)
            .map(|i| {
                // splitmix64 of (seed, i): any well-mixed words do; the key is secret, not the map.
                let mut z = self.seed.wrapping_add(i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                (z ^ (z >> 31)) as u32
            })
            .collect()
    }

    /// The host's sums of every group of a `height` x `width` matrix whose row r is `row(r)`
    /// (`width` words), groups on all cores. `key` is [`key(width)`](Self::key).
    pub fn host_sums<R: std::ops::Deref<Target = [u32]>>(key: &[u32], height: usize, width: usize, row: impl Fn(usize) -> R + Sync) -> Vec<GroupSums> {
        let per = group_rows(width);
        let we = width_even(width);
        (0..groups(height, width))
            .into_par_iter()
            .with_min_len((64 / per).max(1))
            .map(|g| {
                let mut sums = [0u64; 2];
                for (local, r) in (g * per..((g + 1) * per).min(height)).enumerate() {
                    add_row(&key[local * we..], &row(r), &mut sums);
                }
                sums
            })
            .collect()
    }

    /// Records the GPU's sums of rows `0..rows` held in `matrix` (its first `matrix_bytes`):
    /// columns `first_col..first_col + cols` of a `width`-word row, `stride` words a row in the
    /// buffer, into `sums` (4 words a group), added to what `sums` holds if `accumulate`.
    /// `key` holds [`key(width)`](Self::key).
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        key: &wgpu::Buffer,
        (matrix, matrix_bytes): (&wgpu::Buffer, u64),
        rows: usize,
        (stride, first_col, cols, width): (usize, usize, usize, usize),
        sums: &wgpu::Buffer,
        accumulate: bool,
    ) -> Result<()> {
        let groups = groups(rows, width);
        let fits =
            first_col + cols <= width && cols <= stride && (first_col.is_multiple_of(2) || cols == 0) && (first_col + cols == width || cols.is_multiple_of(2));
        let needed = (rows.saturating_sub(1) * stride + cols) as u64 * 4;
        if !fits
            || cols == 0
            || rows == 0
            || matrix_bytes < needed
            || matrix_bytes > matrix.size()
            || sums.size() < groups as u64 * 16
            || key.size() < (group_rows(width) * width_even(width) + 2) as u64 * 4
        {
            return Err(GpuError::InvalidInput(format!(
                "a checksum of columns {first_col}..{} of {rows} rows of {width} words ({stride} a row in the buffer)",
                first_col + cols
            )));
        }
        let params = ChecksumParams {
            rows: rows as u32,
            stride: stride as u32,
            first_col: first_col as u32,
            cols: cols as u32,
            width_even: width_even(width) as u32,
            group_rows: group_rows(width) as u32,
            accumulate: u32::from(accumulate),
            _pad: 0,
        };
        let pipeline = ctx.pipeline(Kernel::RowChecksum, &[])?;
        let uniform = ctx.uniform("checksum params", &params);
        let bind = ctx.bind_ranges(&pipeline, &[(&uniform, 0, None), (matrix, 0, Some(matrix_bytes)), (key, 0, None), (sums, 0, Some(groups as u64 * 16))]);
        let groups = u32::try_from(groups).map_err(|_| GpuError::InvalidInput(format!("{groups} checksum groups exceed one dispatch")))?;
        ctx.record_dispatches(encoder, "row checksum", &[Dispatch { pipeline: (*pipeline).clone(), bind, groups }]);
        Ok(())
    }

    /// The sums the GPU wrote (4 words a group) as [`GroupSums`].
    pub fn from_words(words: &[u32]) -> Vec<GroupSums> {
        words.chunks_exact(4).map(|w| [u64::from(w[0]) | u64::from(w[1]) << 32, u64::from(w[2]) | u64::from(w[3]) << 32]).collect()
    }
}

/// Adds one row's two NH sums (`key` from the row's first keyed position on).
#[inline]
fn add_row(key: &[u32], row: &[u32], sums: &mut GroupSums) {
    let (mut s1, mut s2) = (0u64, 0u64);
    let pairs = row.len() / 2;
    let (k1, k2) = (&key[..2 * pairs], &key[2..2 * pairs + 2]);
    // Lanes of 8 independent pairs, so the loop vectorizes (32 x 32 -> 64-bit products).
    for ((x, a), b) in row[..2 * pairs].chunks_exact(2).zip(k1.chunks_exact(2)).zip(k2.chunks_exact(2)) {
        s1 = s1.wrapping_add(u64::from(x[0].wrapping_add(a[0])) * u64::from(x[1].wrapping_add(a[1])));
        s2 = s2.wrapping_add(u64::from(x[0].wrapping_add(b[0])) * u64::from(x[1].wrapping_add(b[1])));
    }
    if row.len() % 2 == 1 {
        let (x, j) = (row[row.len() - 1], 2 * pairs);
        s1 = s1.wrapping_add(u64::from(x.wrapping_add(key[j])) * u64::from(key[j + 1]));
        s2 = s2.wrapping_add(u64::from(x.wrapping_add(key[j + 2])) * u64::from(key[j + 3]));
    }
    sums[0] = sums[0].wrapping_add(s1);
    sums[1] = sums[1].wrapping_add(s2);
}

/// The WGSL twins of this file's parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] = &[
    crate::shaders::twin_layout!(ChecksumParams as "ChecksumParams" in "util/row_checksum" { rows, stride, first_col, cols, width_even, group_rows, accumulate }),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, word by word.
    fn reference(key: &[u32], rows: &[Vec<u32>], width: usize) -> Vec<GroupSums> {
        let per = group_rows(width);
        let we = width_even(width);
        rows.chunks(per)
            .map(|group| {
                let mut s = [0u64; 2];
                for (r, row) in group.iter().enumerate() {
                    for j in 0..we / 2 {
                        let x0 = row[2 * j];
                        let x1 = row.get(2 * j + 1).copied().unwrap_or(0);
                        let k = r * we + 2 * j;
                        for (t, shift) in [(0, 0), (1, 2)] {
                            let p = u64::from(x0.wrapping_add(key[k + shift])) * u64::from(x1.wrapping_add(key[k + shift + 1]));
                            s[t] = s[t].wrapping_add(p);
                        }
                    }
                }
                s
            })
            .collect()
    }

    #[test]
    fn host_sums_follow_the_definition_and_see_every_change() {
        let checksum = RowChecksum::new();
        for (height, width) in [(1, 1), (3, 1), (5, 2), (7, 3), (600, 7), (1000, 8), (33, 70), (9, 4095), (4, 4096), (3, 5001)] {
            let key = checksum.key(width);
            let mut rows: Vec<Vec<u32>> = (0..height).map(|_| (0..width).map(|_| rand::random::<u32>() >> 1).collect()).collect();
            let sums = RowChecksum::host_sums(&key, height, width, |r| rows[r].as_slice());
            assert_eq!(sums.len(), groups(height, width));
            assert_eq!(sums, reference(&key, &rows, width), "{height} x {width}");
            // A changed word changes its group's sums; two rows swapped in a group too.
            let (r, c) = (height / 2, width - 1);
            rows[r][c] ^= 1;
            let changed = RowChecksum::host_sums(&key, height, width, |r| rows[r].as_slice());
            let g = r / group_rows(width);
            assert_ne!(changed[g], sums[g], "{height} x {width}: a word changed");
            rows[r][c] ^= 1;
            if group_rows(width) > 1 && height > 1 {
                rows.swap(0, 1);
                assert_ne!(RowChecksum::host_sums(&key, height, width, |r| rows[r].as_slice())[0], sums[0], "{height} x {width}: rows swapped");
            }
        }
    }

    #[test]
    fn sums_over_column_blocks_add_up_to_the_rows() {
        let checksum = RowChecksum::new();
        let (height, width) = (300, 21);
        let key = checksum.key(width);
        let rows: Vec<Vec<u32>> = (0..height).map(|_| (0..width).map(|_| rand::random::<u32>()).collect()).collect();
        let whole = RowChecksum::host_sums(&key, height, width, |r| rows[r].as_slice());
        // Blocks of 8 and a last block of 5, each keyed from its first column.
        let we = width_even(width);
        let per = group_rows(width);
        let mut added = vec![[0u64; 2]; whole.len()];
        for first in (0..width).step_by(8) {
            let cols = 8.min(width - first);
            for (r, row) in rows.iter().enumerate() {
                add_row(&key[(r % per) * we + first..], &row[first..first + cols], &mut added[r / per]);
            }
        }
        assert_eq!(added, whole);
    }
}
