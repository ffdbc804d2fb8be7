//! Trees over groups of matrices of several heights (Plonky3's mixed-height batches), their rows given in chunks.

use super::*;

impl<F: Poseidon2Field> GpuMerkle<F> {
    /// Rows of `width` words one chunk of a [`RowGroup`] may hold on this adapter: the rows, their
    /// leaf digests, and (for shorter matrices) the child digests of the nodes they join, each
    /// within one binding; a multiple of 8 rows. An error when not even
    /// 8 rows fit (a row too wide for the adapter).
    pub fn rows_per_chunk(&self, width: usize) -> Result<usize> {
        let binding = self.poseidon2.context().max_binding_bytes() as usize;
        // A row's words, and the two child digests (64 bytes) of the node it is injected into.
        let per_row = (width.max(1) * 4).max(2 * DIGEST_ELEMS * 4);
        let rows = binding / per_row / RANGE_ALIGN * RANGE_ALIGN;
        if rows == 0 {
            return Err(GpuError::TooLarge {
                what: format!("{RANGE_ALIGN} Merkle rows of {width} words"),
                needed: (RANGE_ALIGN * per_row) as u64,
                limit: binding as u64,
            });
        }
        Ok(rows)
    }

    /// The dispatch that compresses a level range's children into their parents, hashing in
    /// the injected rows where the level has a group joining (`CompressInject`, in its leaves'
    /// instance then).
    fn compress_dispatch(
        &self,
        level: &LevelRange<'_>,
        inject_pipeline: &Arc<wgpu::ComputePipeline>,
        (joining_kernel, joining_pipeline): (Kernel, &Arc<wgpu::ComputePipeline>),
    ) -> Result<Dispatch> {
        let ctx = self.poseidon2.context();
        let digest = (DIGEST_ELEMS * 4) as u64;
        let (first, count) = (level.first, level.count);
        let (width, inject_rows) = match (level.injected, level.rows) {
            (Some(g), Some(c)) => (g.width, c.count),
            // Past the injected rows: compressed once more with the default digest.
            (Some(g), None) => (g.width, 0),
            (None, _) => (0, 0),
        };
        let params = InjectParams { nodes: count as u32, width: width as u32, inject_rows: inject_rows as u32, _pad: 0 };
        let params = ctx.uniform("inject params", &params);
        let matrix = level.rows.map_or(&self.placeholders[0], |c| c.rows);
        let ranges = [
            (&params, 0, None),
            (level.children, 2 * first as u64 * digest, Some(2 * count as u64 * digest)),
            (matrix, 0, None),
            (level.parents, first as u64 * digest, Some(count as u64 * digest)),
        ];
        let (pipeline, bind) = if width > 0 {
            (joining_pipeline, self.bind_leaf(joining_kernel, joining_pipeline, &ranges))
        } else {
            (inject_pipeline, self.bind_node(inject_pipeline, &ranges))
        };
        let groups = u32::try_from(count.div_ceil(64)).map_err(|_| GpuError::InvalidInput(format!("{count} threads exceed one dispatch")))?;
        Ok(Dispatch { pipeline: (**pipeline).clone(), bind, groups })
    }

    /// Checks a batch's row groups: each group's chunks in order, aligned, non-empty, each
    /// within one binding and its buffer, together covering the group's rows.
    fn check_groups(&self, groups: &[RowGroup<'_>]) -> Result<()> {
        let ctx = self.poseidon2.context();
        for g in groups {
            matrix_bytes(g.height, g.width)?;
            let mut next = 0;
            for c in &g.chunks {
                let bytes = matrix_bytes(c.count, g.width)?;
                ctx.check_binding_size("Merkle rows of one chunk", bytes)?;
                if c.first != next || c.count == 0 || c.rows.size() < bytes || (c.first % RANGE_ALIGN != 0) {
                    return Err(GpuError::InvalidInput(format!(
                        "row chunk {}..{} of a {}-row group is out of order, empty, misaligned or short",
                        c.first,
                        c.first + c.count,
                        g.height
                    )));
                }
                next += c.count;
            }
            if next != g.height || g.height == 0 {
                return Err(GpuError::InvalidInput(format!("row chunks cover {next} of {} rows", g.height)));
            }
        }
        Ok(())
    }

    /// The tree Plonky3's `MerkleTree::new` builds over a batch of matrices of several heights
    /// (arity 2), recorded into `batch` ([`TreeRows::Groups`]): `groups` holds the matrices of
    /// each height, tallest first, heights strictly decreasing and each on Plonky3's ladder (the
    /// height ceil(max / 2^k) joins at level k). Layers have Plonky3's lengths: an odd layer
    /// gets a default (zero) digest to pair with. Rows split over chunks and layers larger than
    /// one binding are hashed range by range (each dispatch binds its part). With `keep_leaves`
    /// false and one matrix of two or more rows, each row chunk's leaf digests are hashed into
    /// a transient buffer of the chunk's size and compressed into level 1 at once, so no leaf
    /// layer is ever allocated (a resident codeword's leaves can exceed the largest buffer an
    /// adapter allows); openings rehash the leaves they need from the rows. Returns the layers
    /// and the lowest kept.
    pub(super) fn record_groups(&self, batch: &mut Batch<'_>, groups: &[RowGroup<'_>], keep_leaves: bool) -> Result<(Vec<wgpu::Buffer>, usize)> {
        let ctx = self.poseidon2.context().clone();
        let Some(tallest) = groups.first() else {
            return Err(GpuError::InvalidInput("a Merkle batch needs at least one matrix".into()));
        };
        let binding = ctx.max_binding_bytes() as usize;
        self.check_groups(groups)?;
        let (leaf_kernel, leaf_pipeline) = self.leaf_pipeline(Kernel::HashLeaves)?;
        // Levels compress (the plain instance); levels that shorter matrices join hash their
        // rows too (the leaves' instance).
        let (_, inject_pipeline) = self.node_pipeline(Kernel::CompressInject)?;
        let (joining_kernel, joining_pipeline) = self.leaf_pipeline(Kernel::CompressInject)?;
        let digest = (DIGEST_ELEMS * 4) as u64;
        let mut dispatches = Vec::new();
        let mut layers: Vec<wgpu::Buffer> = Vec::new();
        // Padding to clear (buffer, first byte), recorded before every dispatch.
        let mut clears: Vec<(wgpu::Buffer, u64)> = Vec::new();
        // A fresh layer of `len` digests whose padding past `real` is the default digest.
        let mut layer = |real: usize, len: usize| {
            let buffer = ctx.pooled_storage("merkle layer", len * DIGEST_ELEMS);
            if len > real {
                clears.push((buffer.clone(), real as u64 * digest));
            }
            buffer
        };
        let groups_of = |n: usize| u32::try_from(n.div_ceil(64)).map_err(|_| GpuError::InvalidInput(format!("{n} threads exceed one dispatch")));
        let leaf_dispatch = |c: &RowChunk<'_>, out: (&wgpu::Buffer, u64, Option<u64>)| -> Result<Dispatch> {
            let params = ctx.uniform("leaf params", &LeafParams::new(c.count, tallest.width, 0, true));
            let mut ranges: Vec<(&wgpu::Buffer, u64, Option<u64>)> = vec![(&params, 0, None), (c.rows, 0, None), out];
            ranges.extend(self.placeholders.iter().map(|p| (p, 0, None)));
            let bind = self.bind_leaf(leaf_kernel, &leaf_pipeline, &ranges);
            Ok(Dispatch { pipeline: (*leaf_pipeline).clone(), bind, groups: groups_of(c.count)? })
        };
        // (Level-1 ranges start at first / 2 digests: 256-byte offsets need chunks at multiples
        // of 16 rows; otherwise the leaves are kept.)
        let transient =
            !keep_leaves && groups.len() == 1 && tallest.height >= 2 && tallest.chunks.iter().all(|c| c.count % 2 == 0 && c.first % (2 * RANGE_ALIGN) == 0);
        let mut chunk_leaves = Vec::new();
        let mut prev_len = padded_layer_len(tallest.height);
        if transient {
            // Level 1 straight from each chunk's leaves (a chunk's rows pair among themselves).
            let nodes = tallest.height / 2;
            let level1 = layer(nodes, padded_layer_len(nodes));
            for c in &tallest.chunks {
                let leaves = ctx.pooled_storage("merkle chunk leaves", c.count * DIGEST_ELEMS);
                dispatches.push(leaf_dispatch(c, (&leaves, 0, None))?);
                let count = c.count / 2;
                let params = ctx.uniform("inject params", &InjectParams { nodes: count as u32, width: 0, inject_rows: 0, _pad: 0 });
                let bind = self.bind_node(
                    &inject_pipeline,
                    &[
                        (&params, 0, None),
                        (&leaves, 0, None),
                        (&self.placeholders[0], 0, None),
                        (&level1, (c.first / 2) as u64 * digest, Some(count as u64 * digest)),
                    ],
                );
                dispatches.push(Dispatch { pipeline: (*inject_pipeline).clone(), bind, groups: groups_of(count)? });
                // Back to the pool with the batch.
                chunk_leaves.push(leaves);
            }
            layers.push(ctx.pooled_storage("merkle layer", DIGEST_ELEMS));
            layers.push(level1);
            prev_len = padded_layer_len(nodes);
        } else {
            let leaves = layer(tallest.height, padded_layer_len(tallest.height));
            for c in &tallest.chunks {
                dispatches.push(leaf_dispatch(c, (&leaves, c.first as u64 * digest, Some(c.count as u64 * digest)))?);
            }
            layers.push(leaves);
        }
        // Nodes per level dispatch: children and parents each within one binding.
        let max_nodes = (binding / (2 * digest as usize) / RANGE_ALIGN * RANGE_ALIGN).max(RANGE_ALIGN);
        let mut shorter = groups[1..].iter().peekable();
        while prev_len > 1 {
            let nodes = prev_len / 2;
            let injected = shorter.next_if(|g| g.height.next_power_of_two() == nodes.next_power_of_two());
            if let Some(g) = injected.filter(|g| g.height > nodes) {
                return Err(GpuError::InvalidInput(format!("matrices of height {} cannot join a tree level of {nodes} nodes", g.height)));
            }
            let len = padded_layer_len(nodes);
            let parents = layer(nodes, len);
            let ranges = level_ranges(injected, nodes, max_nodes);
            let children = layers.last().expect("leaves");
            for (first, end, rows) in ranges {
                let level = LevelRange { children, parents: &parents, first, count: end - first, injected, rows };
                dispatches.push(self.compress_dispatch(&level, &inject_pipeline, (joining_kernel, &joining_pipeline))?);
            }
            layers.push(parents);
            prev_len = len;
        }
        chunk_leaves.into_iter().for_each(|b| batch.lend(b));
        if let Some(g) = shorter.next() {
            layers.into_iter().for_each(|b| batch.lend(b));
            return Err(GpuError::InvalidInput(format!("matrices of height {} have no level in a tree of height {}", g.height, tallest.height)));
        }
        clears.iter().for_each(|(buffer, from)| batch.clear_from(buffer, *from));
        batch.record_as("merkle batch tree", &dispatches);
        Ok((layers, usize::from(transient)))
    }
}

/// A tree level's dispatch ranges of `nodes` parents: (first node, end node, the rows injected
/// into them), the `injected` group's chunks first (the last one's range running to an aligned
/// end: the rows past it take the default digest, as the nodes after the group do), then ranges
/// of at most `max_nodes`.
fn level_ranges<'g, 'a>(injected: Option<&'g RowGroup<'a>>, nodes: usize, max_nodes: usize) -> Vec<(usize, usize, Option<&'g RowChunk<'a>>)> {
    let mut ranges = Vec::new();
    let mut start = 0;
    if let Some(g) = injected {
        for c in &g.chunks {
            let end = if c.first + c.count == g.height { (c.first + c.count).next_multiple_of(8).min(nodes) } else { c.first + c.count };
            ranges.push((c.first, end, Some(c)));
            start = end;
        }
    }
    while start < nodes {
        let end = (start + max_nodes).min(nodes);
        ranges.push((start, end, None));
        start = end;
    }
    ranges
}

/// Nodes `first..first + count` of a tree level: the children layer, the parents layer, the
/// group joining the level and its rows for these nodes (None past its rows).
struct LevelRange<'a> {
    children: &'a wgpu::Buffer,
    parents: &'a wgpu::Buffer,
    first: usize,
    count: usize,
    injected: Option<&'a RowGroup<'a>>,
    rows: Option<&'a RowChunk<'a>>,
}
