//! Merkle commitments on the GPU with Plonky3's hashing: leaves are rows hashed with
//! `PaddingFreeSponge<Poseidon2, 16, 8, 8>` (or, [`GpuMerkle::with_wide_leaves`], with
//! `PaddingFreeSponge<Poseidon2-24, 24, 16, 8>`), nodes `TruncatedPermutation<Poseidon2, 2, 8,
//! 16>`, arity 2, 8-word digests. Digest layers stay on the GPU; only the root is read back.
//!
//! One matrix of power-of-two height per tree (`record_commit`, fused leaf levels, the resident
//! prover's codewords), or a batch of matrices of several heights as Plonky3's `MerkleTree`
//! takes them (`commit_groups`).

mod columns;
mod groups;
mod open;

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::Matrix;

use crate::context::{Batch, Dispatch, GpuContext, InFlight, ReadSlot, Readback};
use crate::error::{GpuError, Result};
use crate::field::{as_words, matrix_bytes, words_to, GpuField};
use crate::poseidon2::{GpuPoseidon2, Poseidon2Field, WIDE};
use crate::shaders::Kernel;
use whir_verifier::hash::LeafSponge;

/// Words per digest.
pub const DIGEST_ELEMS: usize = 8;

/// Rust twin of `LeafParams` in wgsl/merkle/hash_leaves.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LeafParams {
    rows: u32,
    width: u32,
    fused_levels: u32,
    store_leaves: u32,
    row_bits: u32,
    row_offset: u32,
    _pad: [u32; 2],
}

impl LeafParams {
    /// Leaves of `rows` rows of `width` words, stored in order.
    fn new(rows: usize, width: usize, fused_levels: usize, store_leaves: bool) -> Self {
        Self {
            rows: rows as u32,
            width: width as u32,
            fused_levels: fused_levels as u32,
            store_leaves: u32::from(store_leaves),
            row_bits: 0,
            row_offset: 0,
            _pad: [0; 2],
        }
    }

    /// Leaf i read from row `order.physical(row_offset + i)` of a matrix of `height` rows
    /// (the kernel's `matrix` binding then starts at row 0).
    fn ordered(mut self, order: RowOrder, height: usize, row_offset: usize) -> Self {
        if order == RowOrder::BitReversed {
            self.row_bits = height.trailing_zeros();
            self.row_offset = row_offset as u32;
        }
        self
    }
}

/// How a committed matrix holds its rows: row i of the tree at row i, or (an NTT's own output
/// order, which saves the transform its reversal pass) at row bitrev(i) over log2(height) bits.
/// Leaves, openings and rebuilt subtrees read rows through it; everything else about the tree
/// (digests, proofs, positions) is in the tree's own order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RowOrder {
    /// Row i of the tree at row i.
    #[default]
    Natural,
    /// Row i of the tree at row bitrev(i) over log2(height) bits.
    BitReversed,
}

impl RowOrder {
    /// Where row `i` of a tree over `height` (a power of two) rows lies in the matrix.
    pub fn physical(self, i: usize, height: usize) -> usize {
        match self {
            RowOrder::Natural => i,
            RowOrder::BitReversed if height <= 1 => i,
            RowOrder::BitReversed => i.reverse_bits() >> (usize::BITS - height.trailing_zeros()),
        }
    }
}

/// Rust twin of `GatherParams` in wgsl/util/gather_params.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct GatherParams {
    count: u32,
    width: u32,
    idx_offset: u32,
    dst_offset: u32,
}

/// Rust twin of `InjectParams` in wgsl/merkle/compress_inject.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct InjectParams {
    nodes: u32,
    width: u32,
    inject_rows: u32,
    _pad: u32,
}

/// The matrices of one height in a batch, on the GPU with their rows concatenated (`width`
/// words per row, the matrices' widths summed in batch order): what Plonky3 hashes as one leaf.
/// The rows may be split over several buffers (`chunks`, in row order), each within one
/// binding; [`GpuMerkle::rows_per_chunk`] says how many rows a chunk may hold.
pub struct RowGroup<'a> {
    /// The chunks holding the rows, in row order.
    pub chunks: Vec<RowChunk<'a>>,
    /// Rows in the group (the matrices' common height).
    pub height: usize,
    /// Words per concatenated row.
    pub width: usize,
}

/// Rows `first..first + count` of a [`RowGroup`], in one buffer.
#[derive(Clone, Copy)]
pub struct RowChunk<'a> {
    /// The buffer holding the rows, the first of them at word 0.
    pub rows: &'a wgpu::Buffer,
    /// Index of the chunk's first row in the group.
    pub first: usize,
    /// Rows in the chunk.
    pub count: usize,
}

/// A binding range: (buffer, byte offset, bytes; None for the rest of the buffer).
type Range<'a> = (&'a wgpu::Buffer, u64, Option<u64>);
/// Rows in one binding: their range and two positions (first row and row count for a matrix's
/// segments; first and end item for a gather's spans).
type RowSegment<'a> = (Range<'a>, usize, usize);

/// Row and node ranges start at multiples of this (storage binding offsets must be multiples
/// of 256 bytes: 8 digests).
const RANGE_ALIGN: usize = 8;

/// Plonky3's padded length of a digest layer at arity 2: even, except a lone root.
pub fn padded_layer_len(raw: usize) -> usize {
    if raw <= 1 {
        raw
    } else {
        raw.div_ceil(2) * 2
    }
}

/// Trees of wide rows (two digests or more) that keep no leaves hash them in chunks from this
/// many rows (a whole transient leaf layer would take 32 MiB or more).
const WIDE_CHUNKED_MIN_ROWS: usize = 1 << 20;

/// Most tree levels the leaf kernel can build in workgroup memory (log2 of its 64 rows).
const FUSED_LEVELS: usize = 6;
/// Trees up to this height fuse all six levels; taller ones fuse none (one when they keep no
/// leaf digests). Level k inside a workgroup keeps 64 >> k threads busy, and even level 1 alone
/// costs the kernel occupancy (measured: see `record_commit_with`); small trees are bound by
/// dispatch overhead instead, where saving five dispatches should win (not measured).
const FUSE_ALL_MAX_LOG_HEIGHT: usize = 12;

/// Openings whose readback was submitted by [`GpuMerkle::start_reading`].
pub struct ReadingRows {
    read: InFlight,
    /// The openings, each with where its words come back.
    pending: Vec<(PendingRows, ReadSlot)>,
}

/// The matrix a tree is built over, and what the tree keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeSpec {
    /// Rows of the matrix (a power of two).
    pub height: usize,
    /// Words per row.
    pub width: usize,
    /// The lowest layer kept: 0 all, 1 all but the leaves (half a tree's memory), k the layers
    /// from k up (about 2^(6 - k) bytes a row; openings rebuild the 2^k-row subtrees they need
    /// from the matrix, [`GpuMerkle::open_rows_deferred`]). Layers below are built and handed
    /// back to the pool as the tree is recorded.
    pub lowest: usize,
    /// How the buffer holds its rows (bit-reversed: an NTT's output left in its own order); the
    /// tree, its root and its openings are those of the rows in order either way.
    pub order: RowOrder,
}

impl TreeSpec {
    /// A `height` x `width` matrix in natural row order, every layer kept.
    pub fn new(height: usize, width: usize) -> Self {
        Self { height, width, lowest: 0, order: RowOrder::Natural }
    }

    /// Keeps the layers from `lowest` up (see [`TreeSpec::lowest`]).
    pub fn keeping_from(self, lowest: usize) -> Self {
        Self { lowest, ..self }
    }

    /// Rows held in `order`.
    pub fn with_order(self, order: RowOrder) -> Self {
        Self { order, ..self }
    }
}

/// A tree recorded into a batch ([`GpuMerkle::record_tree`]), its root not read yet. Dropped,
/// it gives its layers back (the batch must then not run).
pub struct RecordedTree<F = BabyBear> {
    tree: GpuMerkleTree<F>,
    /// Where the root comes back; None for a tree already built (row chunks).
    root: Option<ReadSlot>,
}

impl<F: GpuField> RecordedTree<F> {
    /// The buffer whose first 8 words hold the root once the batch's work runs, for work
    /// recorded after the tree; None for a tree built at once over row chunks.
    pub fn root_buffer(&self) -> Option<&wgpu::Buffer> {
        self.root.and(self.tree.layers.last())
    }

    /// The tree, with the root its batch read back.
    pub fn finish(mut self, readback: &Readback) -> Result<GpuMerkleTree<F>> {
        if let Some(slot) = self.root {
            self.tree.root = words_to::<F>(readback.get(slot)?.to_vec())?
                .try_into()
                .map_err(|_| GpuError::Device("a Merkle root read back with the wrong length".into()))?;
        }
        Ok(self.tree)
    }
}

/// A committed matrix: every digest layer on the GPU (leaves first), and the root. Dropping it
/// hands the layers back to the context's buffer pool.
pub struct GpuMerkleTree<F = BabyBear> {
    /// Rows (leaves) of the committed matrix.
    pub height: usize,
    /// Words per row of the committed matrix.
    pub width: usize,
    /// Layer k holds height >> k digests of 8 words; layers below `lowest_kept` are empty
    /// stand-ins.
    pub layers: Vec<wgpu::Buffer>,
    /// The lowest layer kept (0: every layer, leaves included). Without the leaves (half the
    /// tree's memory) openings rehash the sibling rows they need from the matrix; without the
    /// layers below k they rebuild the 2^k-row subtrees holding the opened rows.
    pub lowest_kept: usize,
    /// The root digest.
    pub root: [F; DIGEST_ELEMS],
    /// How the matrix the tree was built over holds its rows (openings read them through it).
    pub row_order: RowOrder,
    ctx: Arc<GpuContext>,
}

impl<F> GpuMerkleTree<F> {
    /// Digests in layer `k` (0: the leaves), padding included. A layer not kept reads as 0.
    pub fn layer_len(&self, k: usize) -> usize {
        if k < self.lowest_kept {
            return 0;
        }
        self.layers.get(k).map_or(0, |l| (l.size() / (DIGEST_ELEMS as u64 * 4)) as usize)
    }
}

impl<F> GpuMerkleTree<F> {
    /// Whether layer 0 holds the leaf digests.
    pub fn leaves_kept(&self) -> bool {
        self.lowest_kept == 0
    }
}

/// Rust twin of `AbsorbParams` in wgsl/merkle/absorb_rows.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct AbsorbParams {
    rows: u32,
    width: u32,
    first: u32,
    last: u32,
}

/// The leaves of a tree over a matrix that exists a block of columns at a time (an NTT over
/// one binding, run by column blocks): each row's leaf sponge state, carried from block to
/// block ([`GpuMerkle::record_absorb`]), then the leaf digests
/// ([`GpuMerkle::submit_column_tree`]).
pub struct ColumnLeaves {
    height: usize,
    width: usize,
    /// Columns absorbed so far.
    absorbed: usize,
    states: wgpu::Buffer,
    leaves: wgpu::Buffer,
}

impl ColumnLeaves {
    /// Whether every column has been absorbed.
    pub fn complete(&self) -> bool {
        self.absorbed == self.width
    }
}

/// A tree submitted to the GPU whose root is still on its way back
/// ([`GpuMerkle::submit_tree`]); [`GpuMerkle::finish_tree`] waits for it. Dropped, its layers go
/// back to the pool.
pub struct PendingTree<F = BabyBear> {
    tree: GpuMerkleTree<F>,
    read: InFlight,
    root: ReadSlot,
}

impl<F> Drop for GpuMerkleTree<F> {
    fn drop(&mut self) {
        for layer in self.layers.drain(..) {
            self.ctx.recycle_storage(layer);
        }
    }
}

/// Levels of authentication path below a cap of `cap_height`.
pub(crate) fn proof_levels(log_height: usize, cap_height: usize) -> usize {
    log_height - cap_height.min(log_height)
}

/// Sibling positions (layer, index) Plonky3's pruned multi-proof lists for `indices`, in its
/// order: level by level, groups by ascending parent, missing children ascending.
pub(crate) fn pruned_positions(indices: &[usize], levels: usize) -> Vec<(usize, usize)> {
    let mut nodes: Vec<usize> = indices.to_vec();
    nodes.sort_unstable();
    nodes.dedup();
    let mut out = Vec::new();
    for level in 0..levels {
        let mut parents = Vec::with_capacity(nodes.len());
        let mut i = 0;
        while i < nodes.len() {
            let group = nodes[i] / 2;
            let mut member = i;
            for k in 0..2 {
                if member < nodes.len() && nodes[member] == 2 * group + k {
                    member += 1;
                } else {
                    out.push((level, 2 * group + k));
                }
            }
            parents.push(group);
            i = member;
        }
        nodes = parents;
    }
    out
}

/// Rows opened from a resident matrix with the sibling digests that authenticate them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedRows<F = BabyBear> {
    /// One row of `width` values per requested index, in request order (repeats included).
    pub rows: Vec<Vec<F>>,
    /// Plonky3's pruned multi-proof digests (`PrunedMerklePaths::sibling_hashes`) for the
    /// distinct indices, below a cap of the requested height.
    pub siblings: Vec<[F; DIGEST_ELEMS]>,
}

impl<F: GpuField> OpenedRows<F> {
    /// Splits what a gather wrote: `rows` rows of `width` words, then the sibling digests;
    /// gathered row k is request `order[k]` where an order is given.
    fn from_gathered(words: &[F], rows: usize, width: usize, order: Option<&[usize]>) -> Self {
        let (values, digests) = words.split_at(rows * width);
        let mut gathered: Vec<Vec<F>> = values.chunks_exact(width.max(1)).map(<[F]>::to_vec).collect();
        if width == 0 {
            gathered = vec![Vec::new(); rows];
        }
        if let Some(order) = order {
            let mut placed = vec![Vec::new(); rows];
            for (row, &at) in gathered.into_iter().zip(order) {
                placed[at] = row;
            }
            gathered = placed;
        }
        Self { rows: gathered, siblings: digests.chunks_exact(DIGEST_ELEMS).map(|c| c.try_into().expect("8 words")).collect() }
    }
}

/// An opening gathered on the GPU and not yet read back (see `GpuMerkle::open_rows_deferred`).
pub struct PendingRows {
    out: wgpu::Buffer,
    words: usize,
    rows: usize,
    width: usize,
    /// Rows gathered from row chunks come grouped by chunk: gathered row k answers request
    /// `order[k]`.
    order: Option<Vec<usize>>,
}

/// Where opened rows are read from: one matrix buffer, or a matrix split into row chunks (one
/// buffer each, in row order).
#[derive(Clone, Copy)]
pub enum RowSource<'a> {
    One(&'a wgpu::Buffer),
    Chunks(&'a [RowChunk<'a>]),
}

/// A recorded gather: the output buffer and its words, the pooled index buffer (recycled once
/// the encoder is submitted) and the row order (rows from chunks).
struct Gathered {
    out: wgpu::Buffer,
    words: usize,
    idx: Option<wgpu::Buffer>,
    order: Option<Vec<usize>>,
}

/// Builds Merkle trees with one Poseidon2 instance (and a width-24 one where leaves hash with it).
pub struct GpuMerkle<F: Poseidon2Field = BabyBear> {
    poseidon2: Arc<GpuPoseidon2<F>>,
    /// The width-24 permutation leaves hash with; None: leaves hash with `poseidon2`.
    wide_leaves: Option<Arc<GpuPoseidon2<F, WIDE>>>,
    /// Trees of wide rows that keep no leaves hash them in chunks from this many rows.
    chunked_leaves_from: usize,
    /// Bound for the fused levels a small tree does not have (writable bindings may not alias).
    placeholders: Vec<wgpu::Buffer>,
}

impl<F: Poseidon2Field> GpuMerkle<F> {
    /// A builder whose leaves and nodes hash with `poseidon2` (width 16).
    pub fn new(poseidon2: Arc<GpuPoseidon2<F>>) -> Self {
        let placeholders = (0..FUSED_LEVELS).map(|_| poseidon2.context().storage("merkle level placeholder", DIGEST_ELEMS)).collect();
        Self { poseidon2, wide_leaves: None, placeholders, chunked_leaves_from: WIDE_CHUNKED_MIN_ROWS }
    }

    /// Trees whose leaves hash with `leaves`, Poseidon2 of width 24 (`PaddingFreeSponge<_, 24,
    /// 16, 8>`); nodes still compress with the width-16 permutation. An error when `leaves` is
    /// on another context.
    pub fn with_wide_leaves(mut self, leaves: Arc<GpuPoseidon2<F, WIDE>>) -> Result<Self> {
        if !Arc::ptr_eq(leaves.context(), self.poseidon2.context()) {
            return Err(GpuError::InvalidInput("the leaf permutation of a GPU Merkle tree must be on the node permutation's context".into()));
        }
        self.wide_leaves = Some(leaves);
        Ok(self)
    }

    /// How this builder's trees hash leaves.
    pub fn leaf_sponge(&self) -> LeafSponge {
        if self.wide_leaves.is_some() {
            LeafSponge::Width24
        } else {
            LeafSponge::Width16
        }
    }

    /// The width-24 permutation leaves hash with, if they do.
    pub fn wide_leaves(&self) -> Option<&Arc<GpuPoseidon2<F, WIDE>>> {
        self.wide_leaves.as_ref()
    }

    /// The instance of `kernel` (one that hashes rows into leaves) for this builder's leaves,
    /// and its pipeline.
    fn leaf_pipeline(&self, kernel: Kernel) -> Result<(Kernel, Arc<wgpu::ComputePipeline>)> {
        let kernel = match self.wide_leaves {
            Some(_) => kernel.with_wide_leaves().expect("a kernel that hashes leaves"),
            None => kernel,
        };
        Ok((kernel, self.poseidon2.context().pipeline_for(F::ID, kernel, &[])?))
    }

    /// Binds a leaf kernel's instance (from [`leaf_pipeline`](Self::leaf_pipeline)): the node
    /// permutation's constants at 0 where the kernel compresses nodes, `ranges` at 1, 2, ..., and
    /// the width-24 leaf permutation's constants at its binding.
    fn bind_leaf(&self, kernel: Kernel, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        let Some(wide) = &self.wide_leaves else {
            return self.poseidon2.bind_ranges(pipeline, ranges);
        };
        let mut entries: Vec<(u32, &wgpu::Buffer, u64, Option<u64>)> = Vec::with_capacity(ranges.len() + 2);
        if kernel.binds_node_constants() {
            entries.push((0, self.poseidon2.uniform(), 0, None));
        }
        entries.extend(ranges.iter().enumerate().map(|(i, &(b, offset, size))| (i as u32 + 1, b, offset, size)));
        entries.push((<F as crate::poseidon2::Poseidon2Width<WIDE>>::CONSTANTS_BINDING, wide.uniform(), 0, None));
        self.poseidon2.context().bind_at(pipeline, &entries)
    }

    /// One dispatch of this builder's instance of the leaf kernel `kernel` over `threads`
    /// threads (64 a workgroup), `buffers` at bindings 1, 2, ...
    fn prepare_leaf(&self, kernel: Kernel, buffers: &[&wgpu::Buffer], threads: usize) -> Result<Dispatch> {
        let groups = crate::poseidon2::workgroups_of_64(threads)?;
        let (kernel, pipeline) = self.leaf_pipeline(kernel)?;
        let ranges: Vec<(&wgpu::Buffer, u64, Option<u64>)> = buffers.iter().map(|&b| (b, 0, None)).collect();
        let bind = self.bind_leaf(kernel, &pipeline, &ranges);
        Ok(Dispatch { pipeline: (*pipeline).clone(), bind, groups })
    }

    /// Words a leaf sponge absorbs per permutation (8 or 16): column blocks absorbed before the
    /// last hold a multiple of it.
    pub fn leaf_rate(&self) -> usize {
        self.leaf_sponge().rate()
    }

    /// Trees of wide rows (two digests or more) that keep no leaves hash them in chunks from
    /// `rows` rows (default 2^20; tests use small values).
    pub fn with_chunked_leaves_from(mut self, rows: usize) -> Self {
        self.chunked_leaves_from = rows;
        self
    }

    /// The width-16 permutation nodes compress with (and leaves hash with, unless wide).
    pub fn poseidon2(&self) -> &Arc<GpuPoseidon2<F>> {
        &self.poseidon2
    }

    /// Records the whole tree over a matrix already on the GPU (`height` x `width` words,
    /// row-major; e.g. an NTT's output buffer) into `encoder`: leaf hashing, then one dispatch
    /// per level. Returns the digest layers, leaves first, root last; they come from the
    /// context's buffer pool, and `GpuContext::recycle_storage` takes them back.
    pub fn record_commit(&self, encoder: &mut wgpu::CommandEncoder, matrix: &wgpu::Buffer, height: usize, width: usize) -> Result<Vec<wgpu::Buffer>> {
        self.record_commit_with(encoder, matrix, height, width, true, RowOrder::Natural)
    }

    /// [`record_commit`](Self::record_commit) of a matrix holding its rows in `order`; with
    /// `keep_leaves` false (and two or more rows) the leaf digests are hashed but not stored, and
    /// layer 0 is an empty stand-in.
    pub fn record_commit_with(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        matrix: &wgpu::Buffer,
        height: usize,
        width: usize,
        keep_leaves: bool,
        order: RowOrder,
    ) -> Result<Vec<wgpu::Buffer>> {
        if height == 0 || !height.is_power_of_two() {
            return Err(GpuError::InvalidInput(format!(
                "GPU Merkle trees take power-of-two heights for now; got {height} rows (use MerkleTreeMmcs for other heights)"
            )));
        }
        if width == 0 {
            return Err(GpuError::InvalidInput("cannot commit to a matrix of width 0".into()));
        }
        let ctx = self.poseidon2.context();
        let bytes = matrix_bytes(height, width)?;
        ctx.check_binding_size("Merkle matrix", bytes)?;
        if matrix.size() < bytes {
            return Err(GpuError::InvalidInput(format!("matrix buffer holds fewer than {height} x {width} words")));
        }
        // Leaves and the first levels in one dispatch (wgsl/merkle/hash_leaves.wgsl), then one
        // dispatch per remaining level.
        let log_h = height.trailing_zeros() as usize;
        // Tall trees hash leaves alone and build every level with the lane-dense level kernel
        // (measured on the H200, 2^22 x 16 resident: 5.45 ms u64 / 10.65 ms emulated unfused,
        // 6.53 / 16.98 with level 1 fused: the fused kernel's second permutation site costs
        // occupancy, the emulated multiply most). Trees that keep no leaf digests store them
        // for the level kernel and drop them once it is recorded where rows are wide (the
        // leaves are at most half the matrix: the transient costs little memory); narrow rows
        // fuse level 1 instead, so their leaves are never stored.
        let transient_leaves = !keep_leaves && width >= 2 * DIGEST_ELEMS;
        let fused = match ctx.tuning().merkle_fused_levels {
            Some(k) => log_h.min(k).min(FUSED_LEVELS),
            None if log_h <= FUSE_ALL_MAX_LOG_HEIGHT => log_h.min(FUSED_LEVELS),
            None if keep_leaves || transient_leaves => 0,
            None => 1,
        };
        // A one-row tree's root is its leaf: kept.
        let store_leaves = keep_leaves || fused == 0;
        let mut layers: Vec<wgpu::Buffer> = (0..=fused)
            .map(|k| {
                let digests = if k == 0 && !store_leaves { 1 } else { height >> k };
                ctx.pooled_storage("merkle layer", digests * DIGEST_ELEMS)
            })
            .collect();
        let params = ctx.uniform("leaf params", &LeafParams::new(height, width, fused, store_leaves).ordered(order, height, 0));
        let mut bindings: Vec<&wgpu::Buffer> = vec![&params, matrix];
        bindings.extend(layers.iter());
        bindings.extend(self.placeholders[fused..].iter());
        let mut dispatches = vec![self.prepare_leaf(Kernel::HashLeaves, &bindings, height)?];
        self.push_levels(&mut layers, height, &mut dispatches)?;
        ctx.record_dispatches(encoder, "merkle tree", &dispatches);
        if !keep_leaves && fused == 0 && height > 1 {
            // Recorded reads of the leaves run before anything recorded later reuses them.
            let leaves = std::mem::replace(&mut layers[0], ctx.pooled_storage("merkle layer", DIGEST_ELEMS));
            ctx.recycle_after_submit(leaves);
        }
        Ok(layers)
    }

    /// The tree of [`record_commit_with`](Self::record_commit_with) keeping only its layers
    /// from `lowest` (2..=log2 height, or 1 for rows of two digests or more, whose leaves are
    /// hashed alone) up, built without ever holding a lower layer whole: the
    /// rows go in up to four chunks, each chunk's leaves and levels below `lowest` in transient
    /// buffers of the chunk's size (reused chunk after chunk), its nodes of layer `lowest`
    /// written into the kept layer. Returns the layers (stand-ins below `lowest`) and the
    /// transient buffers, to go back to the pool once the encoder is submitted.
    fn record_commit_trimmed(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        matrix: &wgpu::Buffer,
        height: usize,
        width: usize,
        lowest: usize,
        order: RowOrder,
    ) -> Result<(Vec<wgpu::Buffer>, Vec<wgpu::Buffer>)> {
        let log_h = height.trailing_zeros() as usize;
        let wide = width >= 2 * DIGEST_ELEMS;
        if !height.is_power_of_two() || width == 0 || lowest < 2 - usize::from(wide) || lowest > log_h {
            return Err(GpuError::InvalidInput(format!("a tree over {height} rows of width {width} keeping layers from {lowest} up")));
        }
        let ctx = self.poseidon2.context();
        let bytes = matrix_bytes(height, width)?;
        ctx.check_binding_size("Merkle matrix", bytes)?;
        if matrix.size() < bytes {
            return Err(GpuError::InvalidInput(format!("matrix buffer holds fewer than {height} x {width} words")));
        }
        // Four chunks where each binds its rows and its part of the kept layer (8 nodes or
        // more) at 256-byte offsets; one otherwise.
        let aligned = ((height / 4) * width * 4).is_multiple_of(256);
        let chunks = if log_h >= lowest + 3 + 2 && aligned { 4 } else { 1 };
        let rows = height / chunks;
        let chunk_bytes = matrix_bytes(rows, width)?;
        // Wide rows hash leaves alone, narrow ones fuse level 1 (as `record_commit_with`).
        let fused = usize::from(width < 2 * DIGEST_ELEMS);
        let digest = (DIGEST_ELEMS * 4) as u64;
        // Transient chunk layers fused..lowest-1 (the leaf kernel writes the first), and the
        // leaf stand-in a fused kernel binds.
        let mut transient: Vec<wgpu::Buffer> = (fused..lowest).map(|k| ctx.pooled_storage("merkle chunk layer", (rows >> k) * DIGEST_ELEMS)).collect();
        let leaf_stand_in = ctx.pooled_storage("merkle layer", DIGEST_ELEMS);
        let kept = ctx.pooled_storage("merkle layer", (height >> lowest) * DIGEST_ELEMS);
        let (leaf_kernel, leaf_pipeline) = self.leaf_pipeline(Kernel::HashLeaves)?;
        let inject_pipeline = ctx.pipeline_for(F::ID, Kernel::CompressInject, &[])?;
        let groups_of = |n: usize| u32::try_from(n.div_ceil(64)).map_err(|_| GpuError::InvalidInput(format!("{n} threads exceed one dispatch")));
        let mut dispatches = Vec::new();
        for c in 0..chunks {
            // In order, a chunk binds its own rows; bit-reversed, its rows are spread over the
            // matrix, bound whole, and the chunk's leaves start at its first row. (In order the
            // parameters are the same for every chunk: one cached uniform.)
            let leaf_params = ctx.uniform("leaf params", &LeafParams::new(rows, width, fused, fused == 0).ordered(order, height, c * rows));
            let rows_range = match order {
                RowOrder::Natural => (matrix, c as u64 * chunk_bytes, Some(chunk_bytes)),
                RowOrder::BitReversed => (matrix, 0, Some(bytes)),
            };
            let mut ranges: Vec<(&wgpu::Buffer, u64, Option<u64>)> = vec![(&leaf_params, 0, None), rows_range];
            if fused == 0 {
                ranges.push((&transient[0], 0, None));
            } else {
                ranges.extend([(&leaf_stand_in, 0, None), (&transient[0], 0, None)]);
            }
            ranges.extend(self.placeholders[fused..].iter().map(|p| (p, 0, None)));
            let bind = self.bind_leaf(leaf_kernel, &leaf_pipeline, &ranges);
            dispatches.push(Dispatch { pipeline: (*leaf_pipeline).clone(), bind, groups: groups_of(rows)? });
            for k in fused + 1..=lowest {
                let nodes = rows >> k;
                let params = ctx.uniform("inject params", &InjectParams { nodes: nodes as u32, width: 0, inject_rows: 0, _pad: 0 });
                let parent = if k == lowest { (&kept, (c * nodes) as u64 * digest, Some(nodes as u64 * digest)) } else { (&transient[k - fused], 0, None) };
                let bind = self
                    .poseidon2
                    .bind_ranges(&inject_pipeline, &[(&params, 0, None), (&transient[k - 1 - fused], 0, None), (&self.placeholders[0], 0, None), parent]);
                dispatches.push(Dispatch { pipeline: (*inject_pipeline).clone(), bind, groups: groups_of(nodes)? });
            }
        }
        let mut layers: Vec<wgpu::Buffer> = (0..lowest).map(|_| ctx.pooled_storage("merkle layer", DIGEST_ELEMS)).collect();
        layers.push(kept);
        let mut nodes = height >> (lowest + 1);
        while nodes >= 1 {
            let parent = ctx.pooled_storage("merkle layer", nodes * DIGEST_ELEMS);
            let params = ctx.uniform("level params", &[nodes as u32, 0, 0, 0]);
            dispatches.push(self.poseidon2.prepare(Kernel::CompressLevel, &[&params, layers.last().expect("kept"), &parent], nodes)?);
            layers.push(parent);
            nodes /= 2;
        }
        ctx.record_dispatches(encoder, "merkle tree (upper layers kept)", &dispatches);
        transient.push(leaf_stand_in);
        Ok((layers, transient))
    }

    /// The layers 0..=`levels` of a tree over `height` x `width` rows in `matrix` (side by side
    /// subtrees of 2^levels rows, for openings): up to six levels in the leaf kernel's one
    /// dispatch, the whole tree by `record_commit_with` otherwise.
    fn record_subtrees(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        matrix: &wgpu::Buffer,
        height: usize,
        width: usize,
        levels: usize,
    ) -> Result<Vec<wgpu::Buffer>> {
        if levels > FUSED_LEVELS || !height.is_power_of_two() || height < 1 << levels || width == 0 {
            return self.record_commit_with(encoder, matrix, height, width, true, RowOrder::Natural);
        }
        let ctx = self.poseidon2.context();
        let bytes = matrix_bytes(height, width)?;
        ctx.check_binding_size("Merkle matrix", bytes)?;
        let layers: Vec<wgpu::Buffer> = (0..=levels).map(|k| ctx.pooled_storage("merkle layer", (height >> k) * DIGEST_ELEMS)).collect();
        let params = ctx.uniform("leaf params", &LeafParams::new(height, width, levels, true));
        let mut bindings: Vec<&wgpu::Buffer> = vec![&params, matrix];
        bindings.extend(layers.iter());
        bindings.extend(self.placeholders[levels..].iter());
        let dispatch = self.prepare_leaf(Kernel::HashLeaves, &bindings, height)?;
        ctx.record_dispatches(encoder, "merkle subtrees", &[dispatch]);
        Ok(layers)
    }

    /// Commits to a host matrix: upload, hash, build, read back the root.
    pub fn commit_matrix(&self, matrix: &RowMajorMatrix<F>) -> Result<GpuMerkleTree<F>> {
        self.commit_values(&matrix.values, matrix.height(), matrix.width())
    }

    /// Commits to `height` x `width` row-major values.
    pub fn commit_values(&self, values: &[F], height: usize, width: usize) -> Result<GpuMerkleTree<F>> {
        if height.checked_mul(width) != Some(values.len()) {
            return Err(GpuError::InvalidInput(format!("{} values given for {height} x {width}", values.len())));
        }
        let ctx = self.poseidon2.context().clone();
        ctx.scoped("Merkle commit", || {
            let input = ctx.upload("merkle matrix", as_words(values));
            let tree = self.commit_buffer(&input, TreeSpec::new(height, width));
            ctx.recycle_storage(input);
            tree
        })
    }

    /// Commits to the matrix `spec` describes, already in `input`: one wait, only the root read
    /// back.
    pub fn commit_buffer(&self, input: &wgpu::Buffer, spec: TreeSpec) -> Result<GpuMerkleTree<F>> {
        let ctx = self.poseidon2.context();
        let mut batch = ctx.batch("merkle commit");
        let recorded = self.record_tree(&mut batch, input, spec)?;
        let readback = ctx.run(batch)?;
        recorded.finish(&readback)
    }

    /// Records the tree over the matrix `spec` describes (in `input`) into `batch`, after the
    /// work already there (e.g. the NTT that fills `input`); the root is read when the batch
    /// runs ([`RecordedTree::finish`]). Work recorded after this call and before the run may
    /// read the root from [`RecordedTree::root_buffer`]. A matrix or a stored digest layer
    /// larger than one binding is copied into row chunks and committed with
    /// [`commit_groups_with`](Self::commit_groups_with) at once (the same tree, keeping layers
    /// from 1 up at most; the batch's earlier work is submitted first); its openings read the
    /// one buffer in windows.
    pub fn record_tree(&self, batch: &mut Batch<'_>, input: &wgpu::Buffer, spec: TreeSpec) -> Result<RecordedTree<F>> {
        let TreeSpec { height, width, lowest, order } = spec;
        let keep_leaves = lowest == 0;
        let ctx = self.poseidon2.context().clone();
        // The one-buffer tree stores leaf digests when kept or for rows of two digests or more
        // (transiently); otherwise level 1 is its largest layer.
        let layer_bytes = matrix_bytes(height, if keep_leaves || width >= 2 * DIGEST_ELEMS { DIGEST_ELEMS } else { DIGEST_ELEMS / 2 })?;
        if height.is_power_of_two() && width > 0 && matrix_bytes(height, width)?.max(layer_bytes) > ctx.max_binding_bytes() {
            if order != RowOrder::Natural {
                return Err(GpuError::InvalidInput(format!(
                    "a {height} x {width} matrix over one binding is committed in row chunks, which take rows in order"
                )));
            }
            batch.flush()?;
            let tree = self.commit_in_chunks(ctx.encoder("merkle row chunks"), input, height, width, keep_leaves)?;
            return Ok(RecordedTree { tree, root: None });
        }
        // The root is always kept.
        let lowest_kept = lowest.min(height.trailing_zeros() as usize);
        // Wide rows' transient leaf layer goes in chunks too once it would take 32 MiB.
        let chunked_leaves = lowest_kept == 1 && width >= 2 * DIGEST_ELEMS && height >= self.chunked_leaves_from;
        let (layers, trimmed) = if lowest_kept >= 2 || chunked_leaves {
            self.record_commit_trimmed(batch.encoder(), input, height, width, lowest_kept, order)?
        } else {
            (self.record_commit_with(batch.encoder(), input, height, width, keep_leaves, order)?, Vec::new())
        };
        for b in trimmed {
            batch.lend(b);
        }
        let root = batch.read(layers.last().expect("root"), 0, DIGEST_ELEMS);
        // The tree owns the layers from here, so they go back to the pool on any error.
        let tree = GpuMerkleTree { height, width, layers, lowest_kept, root: [F::default(); DIGEST_ELEMS], row_order: order, ctx };
        Ok(RecordedTree { tree, root: Some(root) })
    }

    /// The tree of a matrix over one binding ([`record_tree`](Self::record_tree)): its
    /// rows copied into chunks of one binding (after the work already in `encoder`), the tree
    /// built over the chunks, the chunks given back.
    fn commit_in_chunks(
        &self,
        encoder: wgpu::CommandEncoder,
        input: &wgpu::Buffer,
        height: usize,
        width: usize,
        keep_leaves: bool,
    ) -> Result<GpuMerkleTree<F>> {
        let ctx = self.poseidon2.context().clone();
        let bytes = matrix_bytes(height, width)?;
        if input.size() < bytes {
            return Err(GpuError::InvalidInput(format!("matrix buffer holds fewer than {height} x {width} words")));
        }
        let rows = (1usize << self.rows_per_chunk(width)?.ilog2()).min(height);
        let chunk_bytes = matrix_bytes(rows, width)?;
        let buffers: Vec<wgpu::Buffer> = (0..height / rows).map(|_| ctx.pooled_storage("merkle row chunk", rows * width)).collect();
        let copied = ctx.scoped("merkle row chunks", || {
            let mut encoder = encoder;
            for (c, b) in buffers.iter().enumerate() {
                encoder.copy_buffer_to_buffer(input, c as u64 * chunk_bytes, b, 0, chunk_bytes);
            }
            ctx.submit(encoder)
        });
        let tree = copied.and_then(|()| {
            let chunks: Vec<RowChunk<'_>> = buffers.iter().enumerate().map(|(c, b)| RowChunk { rows: b, first: c * rows, count: rows }).collect();
            self.commit_groups_with(&[RowGroup { chunks, height, width }], keep_leaves)
        });
        for b in buffers {
            ctx.recycle_storage(b);
        }
        tree
    }

    /// The levels above `layers` (of a tree over `height` rows; `layers` holds its lowest
    /// layers, 2^k digests fewer each), up to the root: each a layer appended to `layers` and a
    /// dispatch appended to `dispatches`.
    fn push_levels(&self, layers: &mut Vec<wgpu::Buffer>, height: usize, dispatches: &mut Vec<Dispatch>) -> Result<()> {
        let ctx = self.poseidon2.context();
        let mut nodes = height >> layers.len();
        while nodes >= 1 {
            let parent = ctx.pooled_storage("merkle layer", nodes * DIGEST_ELEMS);
            let params = ctx.uniform("level params", &[nodes as u32, 0, 0, 0]);
            let children = layers.last().expect("leaves");
            // Small levels are latency, not throughput: a node's permutation over 16 lanes.
            let dispatch = if nodes <= ctx.tuning().lane_level_max_nodes {
                self.poseidon2.prepare(Kernel::CompressLevelLanes, &[&params, children, &parent], nodes * 16)
            } else {
                self.poseidon2.prepare(Kernel::CompressLevel, &[&params, children, &parent], nodes)
            };
            layers.push(parent);
            dispatches.push(dispatch?);
            nodes /= 2;
        }
        Ok(())
    }
}

/// The WGSL twins of this file's parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] = &[
    crate::shaders::twin_layout!(LeafParams as "LeafParams" in "merkle/hash_leaves" { rows, width, fused_levels, store_leaves, row_bits, row_offset }),
    crate::shaders::twin_layout!(GatherParams as "GatherParams" in "util/gather_params" { count, width, idx_offset, dst_offset }),
    crate::shaders::twin_layout!(InjectParams as "InjectParams" in "merkle/compress_inject" { nodes, width, inject_rows }),
    crate::shaders::twin_layout!(AbsorbParams as "AbsorbParams" in "merkle/absorb_rows" { rows, width, first, last }),
];
