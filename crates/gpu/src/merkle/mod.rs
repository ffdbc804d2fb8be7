//! Merkle commitments on the GPU with Plonky3's hashing: leaves are rows hashed with
//! `PaddingFreeSponge<Poseidon2, 16, 8, 8>` (or, [`GpuMerkle::with_wide_leaves`], with
//! `PaddingFreeSponge<Poseidon2-24, 24, 16, 8>`), nodes `TruncatedPermutation<Poseidon2, 2, 8,
//! 16>`; or, [`GpuMerkle::with_keccak`], Plonky3's Keccak configuration (leaves
//! `SerializingHasher<PaddingFreeSponge<KeccakF, 25, 17, 4>>`, nodes its compression). Arity 2,
//! 8-word digests ([`TreeDigest`]: `[F; 8]` or `[u64; 4]`). The hash is a parameter of the
//! kernels, not of this code: they hash leaves through the virtual import `merkle/leaf` and
//! compress nodes through `merkle/node`. Digest layers stay on the GPU; only the root is read back.
//!
//! One way to record a tree, [`GpuMerkle::record_tree`], over the rows as they lie
//! ([`TreeRows`]): one matrix of power-of-two height (fused leaf levels, the resident prover's
//! codewords), a batch of matrices of several heights as Plonky3's `MerkleTree` takes them, or
//! leaves absorbed by column blocks; and one way to record openings,
//! [`GpuMerkle::record_openings`], read back in that batch or a later one.

mod build;
mod columns;
mod groups;
mod open;

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::Matrix;

use crate::context::{Batch, Dispatch, GpuContext, ReadSlot, Readback};
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

/// The rows a tree is built over ([`GpuMerkle::record_tree`]).
pub enum TreeRows<'a> {
    /// One buffer of `height` x `width` words, row-major (e.g. an NTT's output); a matrix larger
    /// than one binding is copied into row chunks as the tree is recorded.
    Matrix(&'a wgpu::Buffer),
    /// Matrices of several heights, each in row chunks (Plonky3's mixed-height batches; see
    /// [`RowGroup`]): the tallest first, heights strictly decreasing, each on Plonky3's ladder.
    Groups(&'a [RowGroup<'a>]),
    /// Leaves absorbed a block of columns at a time ([`GpuMerkle::record_absorb`]), complete.
    Columns(ColumnLeaves),
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
    /// from the matrix, [`GpuMerkle::record_openings`]). Layers below are built and handed
    /// back to the pool as the tree is recorded. Trees over row groups keep layers from 0 or
    /// 1, trees over column leaves from 0.
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
    /// Where the root comes back.
    root: ReadSlot,
}

impl<F: GpuField> RecordedTree<F> {
    /// The buffer whose first 8 words hold the root once the batch's work runs, for work
    /// recorded after the tree.
    pub fn root_buffer(&self) -> &wgpu::Buffer {
        self.tree.layers.last().expect("a tree has a root layer")
    }

    /// The tree, with the root its batch read back (a Poseidon2 root checked canonical).
    pub fn finish(mut self, readback: &Readback) -> Result<GpuMerkleTree<F>> {
        let words = readback.get(self.root)?;
        self.tree.root = words.try_into().map_err(|_| GpuError::Device("a Merkle root read back with the wrong length".into()))?;
        if let TreeHash::Poseidon2(_) = self.tree.hash {
            <[F; DIGEST_ELEMS]>::from_words(words)?;
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
    /// The root's 8 words ([`root`](Self::root), [`root_digest`](Self::root_digest)).
    root: [u32; DIGEST_ELEMS],
    /// How the matrix the tree was built over holds its rows (openings read them through it).
    pub row_order: RowOrder,
    /// What the tree hashes with.
    hash: TreeHash,
    ctx: Arc<GpuContext>,
    _field: std::marker::PhantomData<F>,
}

impl<F: GpuField> GpuMerkleTree<F> {
    /// The root of a Poseidon2 tree; an error for a Keccak tree (its root is
    /// [`root_digest`](Self::root_digest)`::<KeccakDigest>()`).
    pub fn root(&self) -> Result<[F; DIGEST_ELEMS]> {
        self.root_digest()
    }

    /// The root as digests of type `D`; an error unless the tree hashes with `D`'s hash.
    pub fn root_digest<D: TreeDigest>(&self) -> Result<D> {
        check_digest::<D>(self.hash)?;
        D::from_words(&self.root)
    }

    /// What the tree hashes with.
    pub fn tree_hash(&self) -> TreeHash {
        self.hash
    }
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
/// block ([`GpuMerkle::record_absorb`]), then the leaf digests of the tree
/// ([`TreeRows::Columns`]).
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

/// Rows opened from a resident matrix with the sibling digests that authenticate them
/// (Poseidon2's `[F; 8]` by default, Keccak's [`KeccakDigest`](crate::KeccakDigest)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedRows<F = BabyBear, D = [F; DIGEST_ELEMS]> {
    /// One row of `width` values per requested index, in request order (repeats included).
    pub rows: Vec<Vec<F>>,
    /// Plonky3's pruned multi-proof digests (`PrunedMerklePaths::sibling_hashes`) for the
    /// distinct indices, below a cap of the requested height.
    pub siblings: Vec<D>,
}

impl<F: GpuField, D: TreeDigest> OpenedRows<F, D> {
    /// Splits what a gather wrote: `rows` rows of `width` words, then the sibling digests;
    /// gathered row k is request `order[k]` where an order is given.
    fn from_gathered(words: &[u32], rows: usize, width: usize, order: Option<&[usize]>) -> Result<Self> {
        let (values, digests) = words.split_at(rows * width);
        let values = words_to::<F>(values.to_vec())?;
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
        let siblings = digests.chunks_exact(DIGEST_ELEMS).map(D::from_words).collect::<Result<_>>()?;
        Ok(Self { rows: gathered, siblings })
    }
}

/// An opening recorded into a batch ([`GpuMerkle::record_openings`]): the rows and digests
/// gathered into a buffer of its own, which stays on the GPU until [`read`](Self::read) (in
/// that batch or a later one).
pub struct PendingRows {
    out: wgpu::Buffer,
    words: usize,
    rows: usize,
    width: usize,
    /// Rows gathered from row chunks come grouped by chunk: gathered row k answers request
    /// `order[k]`.
    order: Option<Vec<usize>>,
    /// What the tree hashes with (the digests' type).
    hash: TreeHash,
}

impl PendingRows {
    /// Reads the opening back with `batch` (after the batch's other work).
    pub fn read(self, batch: &mut Batch<'_>) -> RowsSlot {
        let slot = batch.read(&self.out, 0, self.words);
        RowsSlot { slot, rows: self.rows, width: self.width, order: self.order, hash: self.hash }
    }
}

/// Where an opening comes back in its batch's [`Readback`] ([`PendingRows::read`]).
pub struct RowsSlot {
    slot: ReadSlot,
    rows: usize,
    width: usize,
    order: Option<Vec<usize>>,
    hash: TreeHash,
}

impl RowsSlot {
    /// The opened rows and their sibling digests, from the batch's readback (a Poseidon2
    /// tree's; [`finish_digests`](Self::finish_digests) for any).
    pub fn finish<F: GpuField>(self, readback: &Readback) -> Result<OpenedRows<F>> {
        self.finish_digests(readback)
    }

    /// The opened rows and their sibling digests as `D`; an error unless the tree hashes with
    /// `D`'s hash.
    pub fn finish_digests<F: GpuField, D: TreeDigest>(self, readback: &Readback) -> Result<OpenedRows<F, D>> {
        check_digest::<D>(self.hash)?;
        OpenedRows::from_gathered(readback.get(self.slot)?, self.rows, self.width, self.order.as_deref())
    }
}

/// Where opened rows are read from: one matrix buffer, or a matrix split into row chunks (one
/// buffer each, in row order).
#[derive(Clone, Copy)]
pub enum RowSource<'a> {
    /// The matrix in one buffer (the `height` x `width` words the tree was built over; larger
    /// than one binding, read in windows).
    One(&'a wgpu::Buffer),
    /// The matrix in row chunks, in row order (the tree built over them as a
    /// [`TreeRows::Groups`] of one group).
    Chunks(&'a [RowChunk<'a>]),
}

/// What a tree's leaves and nodes hash with ([`GpuMerkle::tree_hash`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeHash {
    /// Poseidon2: leaves with this sponge, nodes with the width-16 permutation
    /// (`TruncatedPermutation<Poseidon2, 2, 8, 16>`); digests 8 field elements.
    Poseidon2(LeafSponge),
    /// Plonky3's Keccak configuration: leaves `SerializingHasher<PaddingFreeSponge<KeccakF, 25,
    /// 17, 4>>` (a row's Montgomery words two to a `u64`), nodes
    /// `CompressionFunctionFromHasher<that sponge, 2, 4>`; digests `[u64; 4]` (8 words, low
    /// word of each lane first).
    Keccak,
}

/// A Merkle digest as the host reads the 8 words a GPU tree holds per node: Poseidon2's
/// `[F; 8]` (Montgomery words, each checked canonical) or Keccak's `[u64; 4]`
/// ([`KeccakDigest`](crate::KeccakDigest), lanes low word first).
pub trait TreeDigest: sealed::Sealed + Copy + Send + Sync + std::fmt::Debug + PartialEq + 'static {
    /// Whether trees hashed with `hash` have digests of this type.
    fn hashed_by(hash: TreeHash) -> bool;
    /// The digest held in `words` (8 of them).
    fn from_words(words: &[u32]) -> Result<Self>;
}

impl<F: GpuField> TreeDigest for [F; DIGEST_ELEMS] {
    fn hashed_by(hash: TreeHash) -> bool {
        matches!(hash, TreeHash::Poseidon2(_))
    }
    fn from_words(words: &[u32]) -> Result<Self> {
        words_to::<F>(words.to_vec())?.try_into().map_err(|_| GpuError::Device("a Merkle digest read back with the wrong length".into()))
    }
}

impl TreeDigest for [u64; 4] {
    fn hashed_by(hash: TreeHash) -> bool {
        hash == TreeHash::Keccak
    }
    fn from_words(words: &[u32]) -> Result<Self> {
        if words.len() != DIGEST_ELEMS {
            return Err(GpuError::Device("a Keccak digest read back with the wrong length".into()));
        }
        Ok(std::array::from_fn(|i| u64::from(words[2 * i]) | (u64::from(words[2 * i + 1]) << 32)))
    }
}

/// An error unless trees hashed with `hash` have digests of type `D`.
fn check_digest<D: TreeDigest>(hash: TreeHash) -> Result<()> {
    if D::hashed_by(hash) {
        return Ok(());
    }
    Err(GpuError::InvalidInput(format!(
        "digests of a {hash:?} tree read as {} (Poseidon2 trees' are `[F; 8]`; read a Keccak tree's as `KeccakDigest`: \
         `root_digest::<KeccakDigest>`, `read_nodes_as`, `RowsSlot::finish_digests`)",
        std::any::type_name::<D>()
    )))
}

mod sealed {
    /// The digest types of the trees this crate builds (no others: `TreeDigest::hashed_by`
    /// guards every read).
    pub trait Sealed {}
    impl<F: crate::field::GpuField> Sealed for [F; super::DIGEST_ELEMS] {}
    impl Sealed for [u64; 4] {}
}

/// Builds Merkle trees with one Poseidon2 instance (and a width-24 one where leaves hash with
/// it), or with Keccak ([`GpuMerkle::with_keccak`]).
pub struct GpuMerkle<F: Poseidon2Field = BabyBear> {
    /// The width-16 permutation nodes compress with, and the context (a Keccak builder uses it
    /// for nothing else).
    poseidon2: Arc<GpuPoseidon2<F>>,
    /// The width-24 permutation leaves hash with; None: leaves hash with `poseidon2`.
    wide_leaves: Option<Arc<GpuPoseidon2<F, WIDE>>>,
    /// Leaves and nodes hash with Keccak instead.
    keccak: bool,
    /// Trees of wide rows that keep no leaves hash them in chunks from this many rows.
    chunked_leaves_from: usize,
    /// Bound for the fused levels a small tree does not have (writable bindings may not alias).
    placeholders: Vec<wgpu::Buffer>,
}

impl<F: Poseidon2Field> GpuMerkle<F> {
    /// A builder whose leaves and nodes hash with `poseidon2` (width 16).
    pub fn new(poseidon2: Arc<GpuPoseidon2<F>>) -> Self {
        let placeholders = (0..FUSED_LEVELS).map(|_| poseidon2.context().storage("merkle level placeholder", DIGEST_ELEMS)).collect();
        Self { poseidon2, wide_leaves: None, keccak: false, placeholders, chunked_leaves_from: WIDE_CHUNKED_MIN_ROWS }
    }

    /// Trees with Plonky3's Keccak hashing ([`TreeHash::Keccak`]) on `poseidon2`'s context:
    /// every tree this builder records, opening and root, is Plonky3's `MerkleTreeMmcs` over
    /// the Keccak sponge's (Poseidon2 is then not used). Trees over column leaves
    /// ([`GpuMerkle::column_leaves`]) are Poseidon2's only.
    pub fn with_keccak(mut self) -> Self {
        self.keccak = true;
        self.wide_leaves = None;
        self
    }

    /// What this builder's trees hash with.
    pub fn tree_hash(&self) -> TreeHash {
        if self.keccak {
            TreeHash::Keccak
        } else {
            TreeHash::Poseidon2(self.leaf_sponge())
        }
    }

    /// Trees whose leaves hash with `leaves`, Poseidon2 of width 24 (`PaddingFreeSponge<_, 24,
    /// 16, 8>`); nodes still compress with the width-16 permutation. An error when `leaves` is
    /// on another context.
    pub fn with_wide_leaves(mut self, leaves: Arc<GpuPoseidon2<F, WIDE>>) -> Result<Self> {
        if self.keccak {
            return Err(GpuError::InvalidInput("a Keccak tree builder takes no Poseidon2 leaf permutation (build a Poseidon2 one for wide leaves)".into()));
        }
        if !Arc::ptr_eq(leaves.context(), self.poseidon2.context()) {
            return Err(GpuError::InvalidInput("the leaf permutation of a GPU Merkle tree must be on the node permutation's context".into()));
        }
        self.wide_leaves = Some(leaves);
        Ok(self)
    }

    /// How this builder's trees hash leaves where they hash them with Poseidon2
    /// ([`tree_hash`](Self::tree_hash) says whether they do).
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
        let instance = match (self.keccak, &self.wide_leaves) {
            (true, _) => kernel.with_keccak(),
            (false, Some(_)) => kernel.with_wide_leaves(),
            (false, None) => Some(kernel),
        };
        let kernel = instance.ok_or_else(|| {
            GpuError::InvalidInput(format!(
                "no {:?} instance of the Merkle kernel {kernel:?} (Keccak trees take whole rows: commit the matrix, not column blocks)",
                self.tree_hash()
            ))
        })?;
        Ok((kernel, self.poseidon2.context().pipeline_for(F::ID, kernel, &[])?))
    }

    /// The instance of `kernel` (one that compresses nodes alone: `CompressInject` without
    /// joining rows, `CompressLevel`) for this builder's nodes, and its pipeline.
    fn node_pipeline(&self, kernel: Kernel) -> Result<(Kernel, Arc<wgpu::ComputePipeline>)> {
        let kernel = if self.keccak {
            kernel.with_keccak().ok_or_else(|| GpuError::InvalidInput(format!("no Keccak instance of the Merkle kernel {kernel:?}")))?
        } else {
            kernel
        };
        Ok((kernel, self.poseidon2.context().pipeline_for(F::ID, kernel, &[])?))
    }

    /// Binds a node kernel's instance (from [`node_pipeline`](Self::node_pipeline)): the
    /// width-16 permutation's constants at 0 where nodes are Poseidon2's, `ranges` at 1, 2, ...
    fn bind_node(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        if self.keccak {
            return self.bind_from_1(pipeline, ranges);
        }
        self.poseidon2.bind_ranges(pipeline, ranges)
    }

    /// `ranges` at bindings 1, 2, ... (kernels that bind no Poseidon2 constants).
    fn bind_from_1(&self, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        let entries: Vec<(u32, &wgpu::Buffer, u64, Option<u64>)> =
            ranges.iter().enumerate().map(|(i, &(b, offset, size))| (i as u32 + 1, b, offset, size)).collect();
        self.poseidon2.context().bind_at(pipeline, &entries)
    }

    /// One dispatch of a tree level over `nodes` nodes (`buffers`: its params, the children,
    /// the parents): Poseidon2's over 16 lanes a node where `lanes`, else a node a thread.
    fn prepare_level(&self, buffers: &[&wgpu::Buffer], nodes: usize, lanes: bool) -> Result<Dispatch> {
        if !self.keccak {
            return match lanes {
                true => self.poseidon2.prepare(Kernel::CompressLevelLanes, buffers, nodes * 16),
                false => self.poseidon2.prepare(Kernel::CompressLevel, buffers, nodes),
            };
        }
        let groups = crate::poseidon2::workgroups_of_64(nodes)?;
        let (_, pipeline) = self.node_pipeline(Kernel::CompressLevel)?;
        let ranges: Vec<(&wgpu::Buffer, u64, Option<u64>)> = buffers.iter().map(|&b| (b, 0, None)).collect();
        let bind = self.bind_from_1(&pipeline, &ranges);
        Ok(Dispatch { pipeline: (*pipeline).clone(), bind, groups })
    }

    /// Binds a leaf kernel's instance (from [`leaf_pipeline`](Self::leaf_pipeline)): the node
    /// permutation's constants at 0 where the kernel compresses nodes, `ranges` at 1, 2, ..., and
    /// the width-24 leaf permutation's constants at its binding.
    fn bind_leaf(&self, kernel: Kernel, pipeline: &wgpu::ComputePipeline, ranges: &[(&wgpu::Buffer, u64, Option<u64>)]) -> wgpu::BindGroup {
        if self.keccak {
            return self.bind_from_1(pipeline, ranges);
        }
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
}

/// The WGSL twins of this file's parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] = &[
    crate::shaders::twin_layout!(LeafParams as "LeafParams" in "merkle/hash_leaves" { rows, width, fused_levels, store_leaves, row_bits, row_offset }),
    crate::shaders::twin_layout!(GatherParams as "GatherParams" in "util/gather_params" { count, width, idx_offset, dst_offset }),
    crate::shaders::twin_layout!(InjectParams as "InjectParams" in "merkle/compress_inject" { nodes, width, inject_rows }),
    crate::shaders::twin_layout!(AbsorbParams as "AbsorbParams" in "merkle/absorb_rows" { rows, width, first, last }),
];
