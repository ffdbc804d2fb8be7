//! Openings: rows and their pruned Merkle paths gathered on the GPU into a batch, read back in
//! one transfer (in that batch or a later one), from a kept tree or one rebuilt from its lowest
//! kept layer.

use super::*;

impl<F: Poseidon2Field> GpuMerkle<F> {
    /// An error unless `tree` hashes as this builder does (openings rehash leaves and rebuild
    /// subtrees with the builder's hash).
    fn check_built_here(&self, tree: &GpuMerkleTree<F>) -> Result<()> {
        if tree.hash != self.tree_hash() {
            return Err(GpuError::InvalidInput(format!(
                "a tree hashed with {:?} opened by a builder hashing with {:?}: open it with the builder that built it",
                tree.hash,
                self.tree_hash()
            )));
        }
        Ok(())
    }

    /// Reads the digests at (layer, index) positions of a Poseidon2 `tree` in one transfer.
    pub fn read_nodes(&self, tree: &GpuMerkleTree<F>, positions: &[(usize, usize)]) -> Result<Vec<[F; DIGEST_ELEMS]>> {
        self.read_nodes_as(tree, positions)
    }

    /// Reads the digests at (layer, index) positions of `tree` in one transfer, as `D` (an
    /// error unless the tree hashes with `D`'s hash).
    pub fn read_nodes_as<D: TreeDigest>(&self, tree: &GpuMerkleTree<F>, positions: &[(usize, usize)]) -> Result<Vec<D>> {
        check_digest::<D>(tree.hash)?;
        let ctx = self.poseidon2.context();
        let mut batch = ctx.batch("merkle nodes");
        let slot = self.record_gather(&mut batch, tree, None, &[], positions)?.read(&mut batch);
        let readback = ctx.run(batch)?;
        Ok(slot.finish_digests::<F, D>(&readback)?.siblings)
    }

    /// Opens rows `indices` of the matrix `tree` was built over (held as `rows` says) with
    /// Plonky3's pruned multi-proof below a cap of `cap_height`: one submission, one readback of
    /// just the rows and digests.
    pub fn open_rows(&self, tree: &GpuMerkleTree<F>, rows: RowSource<'_>, indices: &[usize], cap_height: usize) -> Result<OpenedRows<F>> {
        let ctx = self.poseidon2.context();
        let mut batch = ctx.batch("merkle openings");
        let slot = self.record_openings(&mut batch, tree, rows, indices, cap_height)?.read(&mut batch);
        let readback = ctx.run(batch)?;
        slot.finish(&readback)
    }

    /// Records the opening of rows `indices` of the matrix `tree` was built over (held as `rows`
    /// says: the one buffer, or the row chunks of a tree over one row group) with Plonky3's
    /// pruned multi-proof below a cap of `cap_height` into `batch`: the rows and sibling digests
    /// gathered into a buffer of the opening's own, read back with [`PendingRows::read`] in this
    /// batch or a later one (any number of openings in one transfer). Leaf digests the tree does
    /// not keep are rehashed from the rows; a tree keeping no layers below k >= 2 has the
    /// 2^k-row subtrees holding the opened rows rebuilt.
    pub fn record_openings(
        &self,
        batch: &mut Batch<'_>,
        tree: &GpuMerkleTree<F>,
        rows: RowSource<'_>,
        indices: &[usize],
        cap_height: usize,
    ) -> Result<PendingRows> {
        self.check_built_here(tree)?;
        if let Some(&bad) = indices.iter().find(|&&i| i >= tree.height) {
            return Err(GpuError::InvalidInput(format!("row {bad} opened in a tree of {} rows", tree.height)));
        }
        match rows {
            RowSource::One(matrix) => {
                if matrix.size() < matrix_bytes(tree.height, tree.width)? {
                    return Err(GpuError::InvalidInput("the matrix buffer is smaller than the committed matrix".into()));
                }
            }
            RowSource::Chunks(chunks) => {
                let mut next = 0;
                for c in chunks {
                    if c.first != next || c.rows.size() < matrix_bytes(c.count, tree.width)? {
                        return Err(GpuError::InvalidInput(format!("row chunk {}..{} is out of order or short", c.first, c.first + c.count)));
                    }
                    next += c.count;
                }
                if next != tree.height {
                    return Err(GpuError::InvalidInput(format!("row chunks cover {next} of {} rows", tree.height)));
                }
            }
        }
        let positions = pruned_positions(indices, proof_levels(tree.layers.len() - 1, cap_height));
        if tree.lowest_kept >= 2 {
            return self.record_rebuilt_gather(batch, tree, rows, indices, &positions);
        }
        self.record_gather(batch, tree, Some(rows), indices, &positions)
    }

    /// The openings of a tree that keeps no layers below `k = lowest_kept` >= 2: the 2^k-row
    /// subtrees holding the opened rows are gathered into a small matrix and a tree is built
    /// over it, every layer kept (its layers below k are the subtrees' own, side by side); the
    /// rows and the sibling digests below k are read there, those from k up from the tree.
    fn record_rebuilt_gather(
        &self,
        batch: &mut Batch<'_>,
        tree: &GpuMerkleTree<F>,
        rows: RowSource<'_>,
        indices: &[usize],
        positions: &[(usize, usize)],
    ) -> Result<PendingRows> {
        let ctx = self.poseidon2.context();
        let low = tree.lowest_kept;
        let mut subtrees: Vec<usize> = indices.iter().map(|&i| i >> low).collect();
        subtrees.sort_unstable();
        subtrees.dedup();
        let distinct = subtrees.len();
        if distinct == 0 {
            return Ok(PendingRows { out: ctx.storage("merkle openings", 0), words: 0, rows: 0, width: tree.width, order: None, hash: tree.hash });
        }
        // A power-of-two count (repeats of the last subtree fill it): at most the tree's own
        // subtrees, so the small matrix is never larger than the matrix.
        let padded = distinct.next_power_of_two();
        subtrees.resize(padded, subtrees[distinct - 1]);
        let sub_rows: Vec<usize> = subtrees.iter().flat_map(|&s| (s << low)..((s + 1) << low)).collect();
        // Node i of layer j < low, in the rebuilt tree.
        let local = |layer: usize, i: usize| {
            let span = low - layer;
            let rank = subtrees[..distinct].binary_search(&(i >> span)).expect("an opened subtree");
            (rank << span) | (i & ((1 << span) - 1))
        };
        let split = positions.iter().take_while(|(l, _)| *l < low).count();
        let near_positions: Vec<(usize, usize)> = positions[..split].iter().map(|&(l, i)| (l, local(l, i))).collect();
        let near_rows: Vec<usize> = indices.iter().map(|&i| local(0, i)).collect();

        let height = padded << low;
        // The subtrees' rows, gathered in ascending order (so in request order whatever the
        // segments), then the opened rows and digests below `low` from the tree over them and
        // those from `low` up from `tree`, into one output.
        let matrix = batch.scratch("merkle subtree rows", height * tree.width);
        let near_words = Self::gathered_words(tree, true, &near_rows, &near_positions);
        let words = near_words + Self::gathered_words(tree, false, &[], &positions[split..]);
        let out = ctx.storage("merkle openings", words);
        self.record_gather_into(batch, tree, Some(rows), &sub_rows, &[], &matrix, 0)?;
        let layers = self.record_subtrees(batch, &matrix, height, tree.width, low)?;
        let mut over = GpuMerkleTree {
            height,
            width: tree.width,
            layers,
            lowest_kept: 0,
            root: [0; DIGEST_ELEMS],
            row_order: RowOrder::Natural,
            hash: tree.hash,
            ctx: ctx.clone(),
            _field: std::marker::PhantomData,
        };
        let recorded = self
            .record_gather_into(batch, &over, Some(RowSource::One(&matrix)), &near_rows, &near_positions, &out, 0)
            .and_then(|_| self.record_gather_into(batch, tree, None, &[], &positions[split..], &out, near_words));
        // The rebuilt tree's layers go back to the pool with the batch.
        std::mem::take(&mut over.layers).into_iter().for_each(|b| batch.lend(b));
        recorded?;
        Ok(PendingRows { out, words, rows: indices.len(), width: tree.width, order: None, hash: tree.hash })
    }

    /// The matrix a tree was built over as segments of one binding each: its row chunks, or
    /// windows of a single buffer larger than one binding (a power of two of rows each).
    pub(super) fn row_segments<'a>(&self, rows: RowSource<'a>, height: usize, width: usize) -> Result<Vec<RowSegment<'a>>> {
        match rows {
            RowSource::Chunks(chunks) => Ok(chunks.iter().map(|c| ((c.rows, 0, None), c.first, c.count)).collect()),
            RowSource::One(m) => {
                let binding = self.poseidon2.context().max_binding_bytes();
                let row_bytes = (width.max(1) * 4) as u64;
                if m.size() <= binding || height <= 1 {
                    return Ok(vec![((m, 0, None), 0, height)]);
                }
                let window = 1usize << (binding / row_bytes).max(1).ilog2();
                let bytes = window as u64 * row_bytes;
                if !bytes.is_multiple_of(256) {
                    return Err(GpuError::TooLarge {
                        what: format!("a window of whole rows of {width} words at 256-byte offsets"),
                        needed: bytes.next_multiple_of(256),
                        limit: binding,
                    });
                }
                Ok((0..height.div_ceil(window))
                    .map(|w| {
                        let count = window.min(height - w * window);
                        ((m, w as u64 * bytes, Some(count as u64 * row_bytes)), w * window, count)
                    })
                    .collect())
            }
        }
    }

    /// Records into `batch` the gather of rows `indices` of `matrix`, then the digests at
    /// `positions`, into a fresh buffer: one dispatch for the rows (one per chunk holding some)
    /// and one per tree layer (positions come grouped by layer).
    pub(super) fn record_gather(
        &self,
        batch: &mut Batch<'_>,
        tree: &GpuMerkleTree<F>,
        matrix: Option<RowSource<'_>>,
        indices: &[usize],
        positions: &[(usize, usize)],
    ) -> Result<PendingRows> {
        self.check_built_here(tree)?;
        let words = Self::gathered_words(tree, matrix.is_some(), indices, positions);
        let out = self.poseidon2.context().storage("merkle openings", words);
        let order = self.record_gather_into(batch, tree, matrix, indices, positions, &out, 0)?;
        Ok(PendingRows { out, words, rows: if matrix.is_some() { indices.len() } else { 0 }, width: tree.width, order, hash: tree.hash })
    }

    /// Words a gather writes: the rows (with a matrix), then the digests.
    pub(super) fn gathered_words(tree: &GpuMerkleTree<F>, rows: bool, indices: &[usize], positions: &[(usize, usize)]) -> usize {
        let rows = if rows { indices.len() * tree.width } else { 0 };
        rows + positions.len() * DIGEST_ELEMS
    }

    /// [`record_gather`](Self::record_gather) into `out` from word `base` on; returns the rows'
    /// order (rows from several segments).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_gather_into(
        &self,
        batch: &mut Batch<'_>,
        tree: &GpuMerkleTree<F>,
        matrix: Option<RowSource<'_>>,
        indices: &[usize],
        positions: &[(usize, usize)],
        out: &wgpu::Buffer,
        base: usize,
    ) -> Result<Option<Vec<usize>>> {
        let ctx = self.poseidon2.context();
        let row_items = if matrix.is_some() { indices.len() } else { 0 };
        let words = Self::gathered_words(tree, matrix.is_some(), indices, positions);
        if words == 0 {
            return Ok(None);
        }
        let too_wide = || GpuError::InvalidInput("an opening larger than 32-bit indexing".into());
        let width = u32::try_from(tree.width).map_err(|_| too_wide())?;
        u32::try_from(base + words).map_err(|_| too_wide())?;
        // Where rows are read: segments of one binding each (chunks, or windows of one matrix
        // larger than a binding), as (range, first row, rows).
        let segments = match matrix {
            Some(m) => self.row_segments(m, tree.height, tree.width)?,
            None => Vec::new(),
        };
        if tree.row_order != RowOrder::Natural && segments.len() > 1 {
            // (Bit-reversed rows are committed in one binding only: a row's segment is its own.)
            return Err(GpuError::InvalidInput("rows in bit-reversed order are opened from one binding only".into()));
        }
        // Rows grouped by segment, at their index within it; `order` maps back (one segment
        // keeps the request order).
        let mut row_idx: Vec<u32> = Vec::with_capacity(row_items);
        let mut slots = Vec::with_capacity(row_items);
        let mut chunk_spans: Vec<RowSegment<'_>> = Vec::new();
        if row_items > 0 {
            for &(range, first, count) in &segments {
                let start = row_idx.len();
                for (t, &i) in indices.iter().enumerate().filter(|(_, &i)| (first..first + count).contains(&i)) {
                    row_idx.push((tree.row_order.physical(i, tree.height) - first) as u32);
                    slots.push(t);
                }
                if row_idx.len() > start {
                    chunk_spans.push((range, start, row_idx.len() - start));
                }
            }
        }
        let order = (segments.len() > 1).then_some(slots);
        // Every item index (< 2^32: the tree's rows are 32-bit indexed), rows first.
        let mut idx: Vec<u32> = row_idx.into_iter().chain(positions.iter().map(|&(_, i)| i as u32)).collect();
        let (digest_copies, rehash) = self.plan_digests(tree, &segments, positions, &mut idx[row_items..])?;
        let idx_buf = batch.upload("gather indices", &idx);
        let pipeline = ctx.pipeline_for(F::ID, Kernel::Gather, &[])?;
        let params = |count: usize, item_width: u32, idx_offset: usize, dst_offset: usize| {
            ctx.uniform(
                "gather params",
                &GatherParams { count: count as u32, width: item_width, idx_offset: idx_offset as u32, dst_offset: (base + dst_offset) as u32 },
            )
        };
        let copy = |src: (&wgpu::Buffer, u64, Option<u64>), count: usize, item_width: u32, idx_offset: usize, dst_offset: usize| {
            let params = params(count, item_width, idx_offset, dst_offset);
            let bind = ctx.bind_ranges(&pipeline, &[(&params, 0, None), (&idx_buf, 0, None), src, (out, 0, None)]);
            let groups = (count * item_width as usize).div_ceil(256) as u32;
            Dispatch { pipeline: (*pipeline).clone(), bind, groups }
        };
        let mut dispatches = Vec::new();
        for &(src, start, count) in &chunk_spans {
            dispatches.push(copy(src, count, width, start, start * tree.width));
        }
        let (hash_rows_kernel, hash_rows) = self.leaf_pipeline(Kernel::HashRows)?;
        for (rows, start, end) in rehash {
            let params = params(end - start, width, row_items + start, row_items * tree.width + start * DIGEST_ELEMS);
            let bind = self.bind_leaf(hash_rows_kernel, &hash_rows, &[(&params, 0, None), (&idx_buf, 0, None), rows, (out, 0, None)]);
            let groups = u32::try_from((end - start).div_ceil(64)).map_err(|_| too_wide())?;
            dispatches.push(Dispatch { pipeline: (*hash_rows).clone(), bind, groups });
        }
        for (layer, offset, size, start, end) in digest_copies {
            let dst = row_items * tree.width + start * DIGEST_ELEMS;
            dispatches.push(copy((&tree.layers[layer], offset, size), end - start, DIGEST_ELEMS as u32, row_items + start, dst));
        }
        batch.record_as("gather", &dispatches);
        Ok(order)
    }

    /// The digests a gather reads at `positions`: the copies of kept layers (layer, byte offset,
    /// byte size, first and end item) — a layer larger than one binding in windows of whole
    /// bindings, its indices in `idx` made relative to the window (positions ascend within a
    /// layer) — and the leaves rehashed from their rows where the tree keeps no leaf digests
    /// (segment by segment, their indices made relative to it). `idx` holds the positions'
    /// indices.
    #[allow(clippy::type_complexity)]
    fn plan_digests<'a>(
        &self,
        tree: &GpuMerkleTree<F>,
        segments: &[RowSegment<'a>],
        positions: &[(usize, usize)],
        idx: &mut [u32],
    ) -> Result<(Vec<(usize, u64, Option<u64>, usize, usize)>, Vec<RowSegment<'a>>)> {
        let ctx = self.poseidon2.context();
        let digest = (DIGEST_ELEMS * 4) as u64;
        let window = ((ctx.max_binding_bytes() / digest) as usize / RANGE_ALIGN * RANGE_ALIGN).max(RANGE_ALIGN);
        let mut digest_copies: Vec<(usize, u64, Option<u64>, usize, usize)> = Vec::new();
        let mut rehash: Vec<RowSegment<'a>> = Vec::new();
        let mut start = 0;
        while start < positions.len() {
            let layer = positions[start].0;
            let end = start + positions[start..].iter().take_while(|(l, _)| *l == layer).count();
            let buffer = &tree.layers[layer];
            if layer > 0 && layer < tree.lowest_kept {
                return Err(GpuError::InvalidInput(format!("this tree keeps no layers below {}; open rows (with the matrix) instead", tree.lowest_kept)));
            }
            if layer == 0 && tree.lowest_kept > 0 {
                // Leaves rehashed from their rows, segment by segment, at their index in it.
                if segments.is_empty() {
                    return Err(GpuError::InvalidInput("this tree keeps no leaf digests; open rows (with the matrix) instead".into()));
                }
                let mut first = start;
                for &(range, seg_first, count) in segments {
                    let last = first + positions[first..end].iter().take_while(|&&(_, i)| i < seg_first + count).count();
                    if last > first {
                        for t in &mut idx[first..last] {
                            *t = (tree.row_order.physical(*t as usize, tree.height) - seg_first) as u32;
                        }
                        rehash.push((range, first, last));
                    }
                    first = last;
                }
            } else if buffer.size() <= ctx.max_binding_bytes() {
                digest_copies.push((layer, 0, None, start, end));
            } else {
                let mut first = start;
                while first < end {
                    let w = positions[first].1 / window;
                    let last = first + positions[first..end].iter().take_while(|&&(_, i)| i / window == w).count();
                    for t in &mut idx[first..last] {
                        *t -= (w * window) as u32;
                    }
                    let offset = (w * window) as u64 * digest;
                    digest_copies.push((layer, offset, Some((buffer.size() - offset).min(window as u64 * digest)), first, last));
                    first = last;
                }
            }
            start = end;
        }
        Ok((digest_copies, rehash))
    }
}
