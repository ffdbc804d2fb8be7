//! Host <-> GPU transfers that run at memory speed.
//!
//! Measured with `examples/transfer_probe.rs` (docs/benchmarks-history.md): `create_buffer_init`
//! and `queue.write_buffer` (a fresh staging allocation every call), and a single-threaded copy
//! out of a mapped readback buffer into a fresh `Vec` (page faults on one core), each took many
//! times as long as the copies themselves (DMA). So uploads go through pooled, persistently
//! allocated MAP_WRITE staging buffers filled by all cores, and readbacks through pooled
//! MAP_READ buffers copied out by all cores.

use std::collections::HashMap;
use std::sync::Mutex;

use p3_matrix::Matrix;
use rayon::prelude::*;

use crate::field::to_word;

/// Transfers below this go through `queue.write_buffer` / one thread: the pool's map round trip
/// costs more than it saves there.
pub(crate) const STAGED_MIN_BYTES: usize = 1 << 20;
/// Bytes each thread copies at a time.
const PIECE_BYTES: usize = 1 << 20;

/// Buffers kept for reuse, by size, up to `per_size` of each and `max_bytes` in all.
pub(crate) struct BufferPool {
    free: Mutex<(HashMap<u64, Vec<wgpu::Buffer>>, u64)>,
    per_size: usize,
    max_bytes: std::sync::atomic::AtomicU64,
}

impl BufferPool {
    pub(crate) fn new(per_size: usize, max_bytes: u64) -> Self {
        Self { free: Mutex::new((HashMap::new(), 0)), per_size, max_bytes: max_bytes.into() }
    }

    /// Keeps at most `bytes` from now on (empties the pool if it holds more).
    pub(crate) fn set_max_bytes(&self, bytes: u64) {
        self.max_bytes.store(bytes, std::sync::atomic::Ordering::Relaxed);
        if self.bytes() > bytes {
            self.clear();
        }
    }

    /// A kept buffer of exactly `bytes`, if any.
    pub(crate) fn take(&self, bytes: u64) -> Option<wgpu::Buffer> {
        let mut guard = self.free.lock().expect("buffer pool poisoned");
        let buffer = guard.0.get_mut(&bytes).and_then(Vec::pop)?;
        guard.1 -= bytes;
        Some(buffer)
    }

    pub(crate) fn max_bytes(&self) -> u64 {
        self.max_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes of the buffers kept.
    pub(crate) fn bytes(&self) -> u64 {
        self.free.lock().expect("buffer pool poisoned").1
    }

    /// Drops every kept buffer.
    pub(crate) fn clear(&self) {
        let mut guard = self.free.lock().expect("buffer pool poisoned");
        guard.0.clear();
        guard.1 = 0;
    }

    /// Keeps `buffer` unless the pool is full (then it is dropped).
    pub(crate) fn give(&self, buffer: wgpu::Buffer) {
        let bytes = buffer.size();
        let mut guard = self.free.lock().expect("buffer pool poisoned");
        let (free, total) = &mut *guard;
        let list = free.entry(bytes).or_default();
        if list.len() < self.per_size && *total + bytes <= self.max_bytes.load(std::sync::atomic::Ordering::Relaxed) {
            list.push(buffer);
            *total += bytes;
        }
    }
}

/// Staging buffers of one usage, by power-of-two size class; up to 4 GiB kept per direction,
/// four per size.
pub(crate) struct StagingPool {
    usage: wgpu::BufferUsages,
    pool: BufferPool,
}

/// The most idle staging bytes kept per direction.
pub(crate) const STAGING_POOL_BYTES: u64 = 4 << 30;

impl StagingPool {
    pub(crate) fn new(usage: wgpu::BufferUsages, max_bytes: u64) -> Self {
        // Four per size: a chunked transfer keeps three chunks in flight, and a fresh pinned
        // 64 MiB staging buffer is slow for the driver to make (docs/benchmarks-history.md).
        Self { usage, pool: BufferPool::new(4, max_bytes.min(STAGING_POOL_BYTES)) }
    }

    pub(crate) fn set_max_bytes(&self, bytes: u64) {
        self.pool.set_max_bytes(bytes.min(STAGING_POOL_BYTES));
    }

    /// A buffer of at least `bytes`, and whether it came from the pool (a fresh MAP_WRITE buffer
    /// is created mapped; a pooled one is unmapped and must be mapped by the caller).
    pub(crate) fn take(&self, device: &wgpu::Device, bytes: u64) -> (wgpu::Buffer, bool) {
        // Power-of-two classes so rounds of a prover reuse each other's buffers, but never past
        // the adapter's buffer limit (a 2.5 GiB upload must not ask for 4 GiB).
        let pow2 = bytes.next_power_of_two().max(wgpu::COPY_BUFFER_ALIGNMENT);
        let class = if pow2 <= device.limits().max_buffer_size { pow2 } else { bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT) };
        if let Some(buffer) = self.pool.take(class) {
            return (buffer, true);
        }
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("staging"),
            size: class,
            usage: self.usage,
            mapped_at_creation: self.usage.contains(wgpu::BufferUsages::MAP_WRITE),
        });
        (buffer, false)
    }

    /// Returns an unmapped buffer for reuse, unless the pool is full.
    pub(crate) fn give(&self, buffer: wgpu::Buffer) {
        self.pool.give(buffer);
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.pool.bytes()
    }

    pub(crate) fn clear(&self) {
        self.pool.clear();
    }
}

/// Writes row `r` of `matrix` to `write` element by element through a stack buffer. Plonky3's
/// `row_slice` allocates a Vec per row for views such as the `FlatMatrixView` that
/// `ExtensionMmcs` hands an MMCS, which for a large commit cost far more than the whole matrix
/// takes this way (docs/benchmarks-history.md).
pub fn write_matrix_row<F: crate::field::GpuField, M: Matrix<F>>(matrix: &M, r: usize, write: &mut dyn FnMut(&[u32])) {
    let mut chunk = [0u32; 64];
    let mut n = 0;
    for x in matrix.row(r).expect("row in range") {
        chunk[n] = to_word(x);
        n += 1;
        if n == chunk.len() {
            write(&chunk);
            n = 0;
        }
    }
    write(&chunk[..n]);
}

/// A disjoint byte range of one mapped buffer, handed to one rayon task.
struct Piece<'a> {
    dst: wgpu::WriteOnly<'a, [u8]>,
    /// First row (or byte, for plain copies) this piece holds.
    first: usize,
}
// SAFETY: pieces come from `split_at` on one mapping, so no two overlap; each is written by the
// one task that owns it, and the mapping outlives the parallel scope that uses them.
unsafe impl Send for Piece<'_> {}

/// Splits `dst` into pieces of `unit`-byte units (rows), about PIECE_BYTES each.
fn pieces(dst: wgpu::WriteOnly<'_, [u8]>, unit: usize) -> Vec<Piece<'_>> {
    let per_piece = (PIECE_BYTES / unit.max(1)).max(1) * unit;
    let mut out = Vec::with_capacity(dst.len() / per_piece + 1);
    let mut rest = dst;
    let mut offset = 0;
    while !rest.is_empty() {
        let n = per_piece.min(rest.len());
        let (head, tail) = rest.split_at(n);
        out.push(Piece { dst: head, first: offset / unit.max(1) });
        rest = tail;
        offset += n;
    }
    out
}

/// Copies `len` bytes from `src` to `dst` as `copy_nonoverlapping` does, with streaming
/// (non-temporal) stores where the CPU has AVX2: a plain copy reads each destination cache
/// line before writing it, a third stream of memory traffic beside the read and the write,
/// which bounds a staging fill or drain on all cores well below the host's memory rate.
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping`.
pub unsafe fn copy_streaming(src: *const u8, dst: *mut u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    if len >= 4096 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the caller's guarantee; AVX2 is present.
        return unsafe { copy_streaming_avx2(src, dst, len) };
    }
    // SAFETY: the caller's guarantee.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_streaming_avx2(mut src: *const u8, mut dst: *mut u8, mut len: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256, _mm_sfence};
    // SAFETY (all below): within the caller's ranges; stores go to 32-byte aligned addresses.
    unsafe {
        let head = (dst as usize).wrapping_neg() & 31;
        std::ptr::copy_nonoverlapping(src, dst, head);
        (src, dst, len) = (src.add(head), dst.add(head), len - head);
        while len >= 128 {
            let v = [0, 32, 64, 96].map(|o| _mm256_loadu_si256(src.add(o).cast::<__m256i>()));
            for (i, o) in [0, 32, 64, 96].into_iter().enumerate() {
                _mm256_stream_si256(dst.add(o).cast::<__m256i>(), v[i]);
            }
            (src, dst, len) = (src.add(128), dst.add(128), len - 128);
        }
        std::ptr::copy_nonoverlapping(src, dst, len);
        // Streaming stores are weakly ordered: visible to other threads (and to the GPU, for
        // staging) before this copy is reported done.
        _mm_sfence();
    }
}

/// Copies `src` into `dst` (same length) on all cores.
pub(crate) fn par_write(dst: wgpu::WriteOnly<'_, [u8]>, src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    pieces(dst, 1).into_par_iter().for_each(|Piece { mut dst, first }| {
        let n = dst.len();
        // SAFETY: `dst` is a mapped staging range of n bytes valid for writes, src has n bytes
        // from `first`, and the two do not overlap.
        unsafe { copy_streaming(src[first..first + n].as_ptr(), dst.as_raw_element_ptr().as_ptr(), n) };
    });
}

/// Hands row r's bytes to the writer it gets, in one or more pieces.
pub(crate) type RowSource<'a> = dyn Fn(usize, &mut dyn FnMut(&[u8])) + Sync + 'a;

/// Writes `rows` rows of `row_bytes` bytes each, row r handed out by `row(r, write)`; every row
/// must hand exactly `row_bytes` bytes. Returns false if one did not.
pub(crate) fn par_write_rows(dst: wgpu::WriteOnly<'_, [u8]>, row_bytes: usize, row: &RowSource<'_>) -> bool {
    pieces(dst, row_bytes)
        .into_par_iter()
        .map(|Piece { mut dst, first }| {
            let rows = dst.len() / row_bytes;
            let mut ok = true;
            for i in 0..rows {
                let start = i * row_bytes;
                let mut written = 0;
                row(first + i, &mut |bytes: &[u8]| {
                    if written + bytes.len() > row_bytes {
                        ok = false;
                        return;
                    }
                    let mut to = dst.slice(start + written..start + written + bytes.len());
                    // SAFETY: `to` is a mapped staging range of bytes.len() bytes valid for
                    // writes, not overlapping `bytes` (host memory).
                    unsafe { copy_streaming(bytes.as_ptr(), to.as_raw_element_ptr().as_ptr(), bytes.len()) };
                    written += bytes.len();
                });
                ok &= written == row_bytes;
            }
            ok
        })
        .reduce(|| true, |a, b| a && b)
}

/// Copies `src` into `dst` (same length) on all cores.
/// A raw pointer handed to rayon tasks that write disjoint parts of one allocation.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub(crate) *mut T);
// SAFETY: users write disjoint ranges only, while the allocation is borrowed mutably.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer (a method, so closures capture the whole Sync wrapper, not the field).
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

/// `par_read` into memory that may not be initialised yet (a Vec's spare capacity); with
/// `below`, also checks each 4-byte little-endian word of `src` is less than it while its piece
/// is in cache: the byte offset of the first word that is not, if any.
pub(crate) fn par_read_uninit(dst: &mut [std::mem::MaybeUninit<u8>], src: &[u8], below: Option<u32>) -> Option<usize> {
    debug_assert_eq!(dst.len(), src.len());
    debug_assert!(PIECE_BYTES.is_multiple_of(4));
    dst.par_chunks_mut(PIECE_BYTES)
        .zip(src.par_chunks(PIECE_BYTES))
        .enumerate()
        .filter_map(|(i, (d, s))| {
            // SAFETY: d and s have the same length and do not overlap (staging vs host memory).
            unsafe { copy_streaming(s.as_ptr(), d.as_mut_ptr().cast::<u8>(), s.len()) };
            let bound = below?;
            let at = s.chunks_exact(4).position(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) >= bound)?;
            Some(i * PIECE_BYTES + 4 * at)
        })
        .min()
}

pub(crate) fn par_read(dst: &mut [u8], src: &[u8]) {
    if dst.len() < STAGED_MIN_BYTES {
        dst.copy_from_slice(src);
        return;
    }
    // SAFETY: d and s have the same length and do not overlap.
    dst.par_chunks_mut(PIECE_BYTES).zip(src.par_chunks(PIECE_BYTES)).for_each(|(d, s)| unsafe { copy_streaming(s.as_ptr(), d.as_mut_ptr(), s.len()) });
}

/// Asks the kernel to back the fresh memory `bytes` from `ptr` with transparent huge pages
/// (Linux; a hint that does nothing where THP is off, and nothing on other systems). A result
/// read back into new memory otherwise takes a page fault per 4 KiB on first touch: ~170k
/// for the 690 MB a STARK trace's LDE grows by, which slowed its readback
/// (docs/benchmarks-history.md).
pub fn advise_huge_pages(ptr: *const u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (ptr as usize).div_ceil(HUGE) * HUGE;
        let end = (ptr as usize).saturating_add(bytes) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside memory the caller owns; MADV_HUGEPAGE changes how
            // it is backed, never its contents.
            let rc = unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
            if rc != 0 {
                tracing::debug!("madvise(MADV_HUGEPAGE) declined: {}", std::io::Error::last_os_error());
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

/// Touches every page of the `bytes` of fresh memory from `ptr` on `threads` threads of
/// `scope`, so that its page faults (the kernel zeroing each page) are taken while the caller
/// waits on other work: first writes into fresh memory ran far slower than writes into memory
/// already touched (docs/benchmarks-history.md). Join the handles before anything else writes
/// that memory.
pub(crate) fn prefault<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    ptr: SendPtr<u8>,
    bytes: usize,
    threads: usize,
) -> Vec<std::thread::ScopedJoinHandle<'scope, ()>> {
    const PAGE: usize = 4096;
    let per = bytes.div_ceil(threads.max(1)).next_multiple_of(PAGE);
    (0..threads)
        .map(|t| t * per)
        .filter(|&start| start < bytes)
        .map(|start| {
            let end = (start + per).min(bytes);
            scope.spawn(move || {
                // A byte a page apart, and the last byte (`ptr` need not be page-aligned).
                for offset in (start..end).step_by(PAGE).chain([end - 1]) {
                    // SAFETY: within the caller's fresh memory, which nothing else touches
                    // until these threads are joined.
                    unsafe { ptr.get().add(offset).write_volatile(0) };
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn streaming_copies_are_copies_at_every_alignment_and_length() {
        let src: Vec<u8> = (0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for len in [0, 1, 31, 4095, 4096, 4097, 4096 + 127, 4096 + 128, 65_536 + 33] {
            for (from, to) in [(0, 0), (1, 0), (0, 1), (5, 17), (31, 3), (32, 64)] {
                let mut dst = vec![0xA5u8; len + 200];
                // SAFETY: both ranges lie within their vectors and do not overlap.
                unsafe { super::copy_streaming(src.as_ptr().add(from), dst.as_mut_ptr().add(to), len) };
                assert_eq!(&dst[to..to + len], &src[from..from + len], "len {len}, offsets {from}/{to}");
                assert!(dst[..to].iter().chain(&dst[to + len..]).all(|&b| b == 0xA5), "len {len}, offsets {from}/{to}: wrote outside");
            }
        }
    }
}
