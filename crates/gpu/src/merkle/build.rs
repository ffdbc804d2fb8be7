//! Building trees: [`GpuMerkle::record_tree`] records any tree into a batch — over one matrix
//! (whole, trimmed to the levels kept, or copied into row chunks past one binding), over row
//! groups of several heights, or over leaves absorbed by column blocks; `commit` and
//! `commit_matrix` run one with a single wait.

use super::*;

impl<F: Poseidon2Field> GpuMerkle<F> {
    /// The whole tree over a matrix already on the GPU (`height` x `width` words, holding its
    /// rows in `order`), recorded into `batch`: leaf hashing, then one dispatch per level. Returns
    /// the digest layers, leaves first, root last. With `keep_leaves` false (and two or more
    /// rows) the leaf digests are hashed but not stored, and layer 0 is an empty stand-in.
    pub(super) fn record_layers(
        &self,
        batch: &mut Batch<'_>,
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
        // (faster than fusing level 1, docs/benchmarks-history.md: the fused kernel's second
        // permutation site costs occupancy, the emulated multiply most). Trees that keep no
        // leaf digests store them for the level kernel and drop them once it is recorded where
        // rows are wide (the leaves are at most half the matrix: the transient costs little
        // memory); narrow rows fuse level 1 instead, so their leaves are never stored.
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
        batch.record_as("merkle tree", &dispatches);
        if !keep_leaves && fused == 0 && height > 1 {
            // Back to the pool with the batch, after the recorded reads of the leaves.
            let leaves = std::mem::replace(&mut layers[0], ctx.pooled_storage("merkle layer", DIGEST_ELEMS));
            batch.lend(leaves);
        }
        Ok(layers)
    }

    /// The tree of [`record_layers`](Self::record_layers) keeping only its layers
    /// from `lowest` (2..=log2 height, or 1 for rows of two digests or more, whose leaves are
    /// hashed alone) up, built without ever holding a lower layer whole: the
    /// rows go in up to four chunks, each chunk's leaves and levels below `lowest` in transient
    /// buffers of the chunk's size (reused chunk after chunk), its nodes of layer `lowest`
    /// written into the kept layer. Returns the layers (stand-ins below `lowest`) and the
    /// transient buffers, to go back to the pool once the encoder is submitted.
    pub(super) fn record_commit_trimmed(
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
        let (_, inject_pipeline) = self.node_pipeline(Kernel::CompressInject)?;
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
                let bind =
                    self.bind_node(&inject_pipeline, &[(&params, 0, None), (&transient[k - 1 - fused], 0, None), (&self.placeholders[0], 0, None), parent]);
                dispatches.push(Dispatch { pipeline: (*inject_pipeline).clone(), bind, groups: groups_of(nodes)? });
            }
        }
        let mut layers: Vec<wgpu::Buffer> = (0..lowest).map(|_| ctx.pooled_storage("merkle layer", DIGEST_ELEMS)).collect();
        layers.push(kept);
        let mut nodes = height >> (lowest + 1);
        while nodes >= 1 {
            let parent = ctx.pooled_storage("merkle layer", nodes * DIGEST_ELEMS);
            let params = ctx.uniform("level params", &[nodes as u32, 0, 0, 0]);
            dispatches.push(self.prepare_level(&[&params, layers.last().expect("kept"), &parent], nodes, false)?);
            layers.push(parent);
            nodes /= 2;
        }
        ctx.record_dispatches(encoder, "merkle tree (upper layers kept)", &dispatches);
        transient.push(leaf_stand_in);
        Ok((layers, transient))
    }

    /// The layers 0..=`levels` of a tree over `height` x `width` rows in `matrix` (side by side
    /// subtrees of 2^levels rows, for openings): up to six levels in the leaf kernel's one
    /// dispatch, the whole tree by `record_layers` otherwise.
    pub(super) fn record_subtrees(
        &self,
        batch: &mut Batch<'_>,
        matrix: &wgpu::Buffer,
        height: usize,
        width: usize,
        levels: usize,
    ) -> Result<Vec<wgpu::Buffer>> {
        if levels > FUSED_LEVELS || !height.is_power_of_two() || height < 1 << levels || width == 0 {
            return self.record_layers(batch, matrix, height, width, true, RowOrder::Natural);
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
        batch.record_as("merkle subtrees", &[dispatch]);
        Ok(layers)
    }

    /// Commits to a host matrix: upload, hash, build, read back the root (one wait).
    pub fn commit_matrix(&self, matrix: &RowMajorMatrix<F>) -> Result<GpuMerkleTree<F>> {
        let ctx = self.poseidon2.context();
        ctx.scoped("Merkle commit", || {
            let mut batch = ctx.batch("merkle commit");
            let input = batch.upload("merkle matrix", as_words(&matrix.values));
            let recorded = self.record_tree(&mut batch, TreeRows::Matrix(&input), TreeSpec::new(matrix.height(), matrix.width()))?;
            let readback = ctx.run(batch)?;
            recorded.finish(&readback)
        })
    }

    /// The tree over `rows` that `spec` describes, with one wait: only the root read back.
    pub fn commit(&self, rows: TreeRows<'_>, spec: TreeSpec) -> Result<GpuMerkleTree<F>> {
        let ctx = self.poseidon2.context();
        ctx.scoped("Merkle commit", || {
            let mut batch = ctx.batch("merkle commit");
            let recorded = self.record_tree(&mut batch, rows, spec)?;
            let readback = ctx.run(batch)?;
            recorded.finish(&readback)
        })
    }

    /// Records the tree over `rows` that `spec` describes into `batch`, after the work already
    /// there (e.g. the NTT that fills the matrix); the root is read when the batch runs
    /// ([`RecordedTree::finish`]), and work recorded after this call may read it from
    /// [`RecordedTree::root_buffer`]. The tree over one matrix is any [`TreeSpec`]; a matrix
    /// or a stored digest layer larger than one binding is copied into row chunks first (the
    /// same tree, keeping layers from 1 up at most; its openings read the one buffer in
    /// windows). Trees over row groups keep their layers from 0 or 1 (`spec.lowest`), rows in
    /// order; trees over column leaves keep every layer.
    pub fn record_tree(&self, batch: &mut Batch<'_>, rows: TreeRows<'_>, spec: TreeSpec) -> Result<RecordedTree<F>> {
        let TreeSpec { height, width, lowest, order } = spec;
        let (layers, lowest_kept) = match rows {
            TreeRows::Matrix(input) => self.record_matrix(batch, input, spec)?,
            TreeRows::Groups(groups) => {
                let tallest = groups.first().map(|g| (g.height, g.width));
                if tallest != Some((height, width)) || lowest > 1 || order != RowOrder::Natural {
                    return Err(GpuError::InvalidInput(format!(
                        "a tree over row groups (tallest {tallest:?}) for a {height} x {width} spec keeping layers from {lowest}, rows {order:?} (the tallest group's shape, layers from 0 or 1, rows in order)"
                    )));
                }
                self.record_groups(batch, groups, lowest == 0)?
            }
            TreeRows::Columns(leaves) => {
                if (leaves.height, leaves.width) != (height, width) || lowest != 0 || order != RowOrder::Natural {
                    return Err(GpuError::InvalidInput(format!(
                        "column leaves of a {} x {} matrix for a {height} x {width} spec keeping layers from {lowest}, rows {order:?}",
                        leaves.height, leaves.width
                    )));
                }
                (self.record_column_levels(batch, leaves)?, 0)
            }
        };
        let root = batch.read(layers.last().expect("root"), 0, DIGEST_ELEMS);
        // The tree owns the layers from here, so they go back to the pool on any error.
        let ctx = self.poseidon2.context().clone();
        let tree = GpuMerkleTree {
            height,
            width,
            layers,
            lowest_kept,
            root: [0; DIGEST_ELEMS],
            row_order: order,
            hash: self.tree_hash(),
            ctx,
            _field: std::marker::PhantomData,
        };
        Ok(RecordedTree { tree, root })
    }

    /// [`record_tree`](Self::record_tree) over one matrix: its layers and the lowest kept.
    fn record_matrix(&self, batch: &mut Batch<'_>, input: &wgpu::Buffer, spec: TreeSpec) -> Result<(Vec<wgpu::Buffer>, usize)> {
        let TreeSpec { height, width, lowest, order } = spec;
        let keep_leaves = lowest == 0;
        let ctx = self.poseidon2.context();
        // The one-buffer tree stores leaf digests when kept or for rows of two digests or more
        // (transiently); otherwise level 1 is its largest layer.
        let layer_bytes = matrix_bytes(height, if keep_leaves || width >= 2 * DIGEST_ELEMS { DIGEST_ELEMS } else { DIGEST_ELEMS / 2 })?;
        if height.is_power_of_two() && width > 0 && matrix_bytes(height, width)?.max(layer_bytes) > ctx.max_binding_bytes() {
            if order != RowOrder::Natural {
                return Err(GpuError::InvalidInput(format!(
                    "a {height} x {width} matrix over one binding is committed in row chunks, which take rows in order"
                )));
            }
            return self.record_in_chunks(batch, input, height, width, keep_leaves);
        }
        // The root is always kept.
        let lowest_kept = lowest.min(height.trailing_zeros() as usize);
        // Wide rows' transient leaf layer goes in chunks too once it would take 32 MiB.
        let chunked_leaves = lowest_kept == 1 && width >= 2 * DIGEST_ELEMS && height >= self.chunked_leaves_from;
        if lowest_kept >= 2 || chunked_leaves {
            let (layers, transient) = self.record_commit_trimmed(batch.encoder(), input, height, width, lowest_kept, order)?;
            transient.into_iter().for_each(|b| batch.lend(b));
            return Ok((layers, lowest_kept));
        }
        Ok((self.record_layers(batch, input, height, width, keep_leaves, order)?, lowest_kept))
    }

    /// The tree of a matrix over one binding ([`record_tree`](Self::record_tree)): its rows
    /// copied into chunks of one binding (after the work already in the batch; the chunks go
    /// back to the pool with it), the tree recorded over the chunks.
    fn record_in_chunks(
        &self,
        batch: &mut Batch<'_>,
        input: &wgpu::Buffer,
        height: usize,
        width: usize,
        keep_leaves: bool,
    ) -> Result<(Vec<wgpu::Buffer>, usize)> {
        let bytes = matrix_bytes(height, width)?;
        if input.size() < bytes {
            return Err(GpuError::InvalidInput(format!("matrix buffer holds fewer than {height} x {width} words")));
        }
        let rows = (1usize << self.rows_per_chunk(width)?.ilog2()).min(height);
        let chunk_bytes = matrix_bytes(rows, width)?;
        let buffers: Vec<wgpu::Buffer> = (0..height / rows).map(|_| batch.scratch("merkle row chunk", rows * width)).collect();
        for (c, b) in buffers.iter().enumerate() {
            batch.encoder().copy_buffer_to_buffer(input, c as u64 * chunk_bytes, b, 0, chunk_bytes);
        }
        let chunks: Vec<RowChunk<'_>> = buffers.iter().enumerate().map(|(c, b)| RowChunk { rows: b, first: c * rows, count: rows }).collect();
        self.record_groups(batch, &[RowGroup { chunks, height, width }], keep_leaves)
    }

    /// The levels of a tree over complete column `leaves` (their sponge states go back to the
    /// pool with the batch).
    fn record_column_levels(&self, batch: &mut Batch<'_>, leaves: ColumnLeaves) -> Result<Vec<wgpu::Buffer>> {
        if !leaves.complete() {
            let (absorbed, width) = (leaves.absorbed, leaves.width);
            batch.lend(leaves.states);
            batch.lend(leaves.leaves);
            return Err(GpuError::InvalidInput(format!("{absorbed} of {width} columns absorbed")));
        }
        let ColumnLeaves { height, states, leaves, .. } = leaves;
        batch.lend(states);
        let mut layers = vec![leaves];
        let mut dispatches = Vec::new();
        if let Err(e) = self.push_levels(&mut layers, height, &mut dispatches) {
            layers.into_iter().for_each(|b| batch.lend(b));
            return Err(e);
        }
        batch.record_as("merkle tree", &dispatches);
        Ok(layers)
    }

    /// The levels above `layers` (of a tree over `height` rows; `layers` holds its lowest
    /// layers, 2^k digests fewer each), up to the root: each a layer appended to `layers` and a
    /// dispatch appended to `dispatches`.
    pub(super) fn push_levels(&self, layers: &mut Vec<wgpu::Buffer>, height: usize, dispatches: &mut Vec<Dispatch>) -> Result<()> {
        let ctx = self.poseidon2.context();
        let mut nodes = height >> layers.len();
        while nodes >= 1 {
            let parent = ctx.pooled_storage("merkle layer", nodes * DIGEST_ELEMS);
            let params = ctx.uniform("level params", &[nodes as u32, 0, 0, 0]);
            let children = layers.last().expect("leaves");
            // Small levels are latency, not throughput: a node's permutation over 16 lanes.
            let dispatch = self.prepare_level(&[&params, children, &parent], nodes, nodes <= ctx.tuning().lane_level_max_nodes);
            layers.push(parent);
            dispatches.push(dispatch?);
            nodes /= 2;
        }
        Ok(())
    }
}
