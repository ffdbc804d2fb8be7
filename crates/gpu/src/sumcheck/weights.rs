//! The weights w: equality and select constraints added at points and domain indices, written by kernels from small uploaded tables.

use super::*;

impl<F: Poseidon2Field, E: GpuExtension<F>> GpuSumcheck<F, E> {
    pub(super) fn check_point(&self, point: &[E]) -> Result<()> {
        if point.len() != self.vars {
            return Err(GpuError::InvalidInput(format!("a point of {} coordinates for {} variables", point.len(), self.vars)));
        }
        Ok(())
    }

    /// `w[x] += Σ_j scales[j]·eq(points[j], x)`, coordinate 0 paired with the top bit of x.
    pub fn add_eq_weights(&mut self, points: &[Vec<E>], scales: &[E]) -> Result<()> {
        if points.len() != scales.len() {
            return Err(GpuError::InvalidInput(format!("{} points with {} scales", points.len(), scales.len())));
        }
        if points.is_empty() {
            return Ok(());
        }
        for p in points {
            self.check_point(p)?;
        }
        self.materialize_weights()?;
        self.ensure_weights()?;
        let points = self.table_points(points);
        self.write_eq_weights(&points, scales)
    }

    /// The body of [`add_eq_weights`](Self::add_eq_weights), onto w's table as it is.
    pub(super) fn write_eq_weights(&self, points: &[Vec<E>], scales: &[E]) -> Result<()> {
        // eq(p, x) = eq(p_hi, x_hi) · eq(p_lo, x_lo), split at the low `low` bits: the two
        // small tables per point are built here (2^(m-low) + 2^low entries), the kernel does
        // one product per entry and point. Split in half, the host builds ~2^(m/2 + 1) entries
        // per point (at m = 24 a fixed 8-bit low table left 2^16 for the high one, which showed
        // in round 0's weights step; docs/benchmarks-history.md).
        let low = self.vars.div_ceil(2);
        let (mut highs, mut lows) = (Vec::new(), Vec::new());
        for (p, &s) in points.iter().zip(scales) {
            let (hi, lo) = p.split_at(self.vars - low);
            highs.extend(eq_table(hi, E::ONE));
            lows.extend(eq_table(lo, s));
        }
        self.dispatch_weights(Kernel::AddEqWeights, &highs, &lows, points.len(), 1, low)
    }

    /// `w[x] += Σ_j scales[j]·vars[j]^x`.
    pub fn add_select_weights(&mut self, vars: &[F], scales: &[E]) -> Result<()> {
        if vars.len() != scales.len() {
            return Err(GpuError::InvalidInput(format!("{} select variables with {} scales", vars.len(), scales.len())));
        }
        if vars.is_empty() {
            return Ok(());
        }
        self.materialize_weights()?;
        self.ensure_weights()?;
        // At reversed indices always, otherwise for many variables over a large table: split
        // power tables (2^(m/2 + 1) entries per variable), four multiplications per entry and
        // variable.
        if self.reversed || (vars.len() >= SPLIT_SELECT_MIN_VARS && self.vars >= SPLIT_SELECT_MIN_LOG) {
            let (highs, lows, low) = self.split_power_tables(vars, scales);
            return self.dispatch_weights(Kernel::AddSplitSelectWeights, &highs, &lows, vars.len(), 1, low);
        }
        // Per variable, its squares v^(2^b) for b < m (at least one entry: v itself).
        let per_var = self.vars.max(1);
        let squares: Vec<E> = vars
            .iter()
            .flat_map(|&v| {
                let mut s = v;
                (0..per_var).map(move |_| {
                    let out = E::from(s);
                    s = s.square();
                    out
                })
            })
            .collect();
        self.dispatch_weights(Kernel::AddSelectWeights, &squares, scales, vars.len(), 4, per_var)
    }

    /// `w[x] += Σ_j scales[j]·vars[j]^x` for variables in the extension, x the index in the
    /// polynomial's order: split power tables (built here, 2^(m/2 + 1) entries per variable)
    /// and the split-product kernel.
    pub fn add_power_weights(&mut self, vars: &[E], scales: &[E]) -> Result<()> {
        if vars.len() != scales.len() {
            return Err(GpuError::InvalidInput(format!("{} power variables with {} scales", vars.len(), scales.len())));
        }
        if vars.is_empty() {
            return Ok(());
        }
        self.materialize_weights()?;
        self.ensure_weights()?;
        let (highs, lows, low) = self.split_power_tables(vars, scales);
        self.dispatch_weights(Kernel::AddEqWeights, &highs, &lows, vars.len(), 1, low)
    }

    /// The split power tables of `vars` (in F or in E) for the split kernels: per variable v
    /// with scale s, hi[x_hi] and lo[x_lo] whose product is s·v^x for the table's entry x =
    /// x_hi 2^L + x_lo (v^rev(x) at reversed indices, rev(x) = rev_L(x_lo) 2^(m-L) + rev(x_hi)),
    /// filled on all cores; and L.
    fn split_power_tables<V: Field + Send + Sync>(&self, vars: &[V], scales: &[E]) -> (Vec<E>, Vec<E>, usize)
    where
        E: From<V> + std::ops::Mul<V, Output = E>,
    {
        use rayon::prelude::*;
        let m = self.vars;
        let low = m.div_ceil(2);
        let (hi_len, lo_len) = (1usize << (m - low), 1usize << low);
        let mut highs = vec![E::ZERO; hi_len * vars.len()];
        let mut lows = vec![E::ZERO; lo_len * vars.len()];
        highs.par_chunks_mut(hi_len).zip(lows.par_chunks_mut(lo_len)).zip(vars.par_iter().zip(scales)).for_each(|((hi, lo), (&v, &s))| {
            if self.reversed {
                for (x, p) in v.powers().take(hi_len).enumerate() {
                    hi[reverse_low_bits(x, m - low)] = E::from(p);
                }
                for (x, p) in v.exp_power_of_2(m - low).powers().take(lo_len).enumerate() {
                    lo[reverse_low_bits(x, low)] = s * p;
                }
            } else {
                for (slot, p) in hi.iter_mut().zip(v.exp_power_of_2(low).powers()) {
                    *slot = E::from(p);
                }
                for (slot, p) in lo.iter_mut().zip(v.powers()) {
                    *slot = s * p;
                }
            }
        });
        (highs, lows, low)
    }

    /// `w[x] *= s` over the whole table.
    pub fn scale_weights(&mut self, s: E) -> Result<()> {
        self.materialize_weights()?;
        self.ensure_weights()?;
        self.dispatch_weights(Kernel::ScaleTable, &[E::ZERO], &[s], 1, 1, 0)
    }

    /// Whether f is still the base-field table it started as.
    pub fn is_base(&self) -> bool {
        self.f.words == 1
    }

    /// w's table (for tests and diagnostics).
    /// An error while the weights are lazy ([`set_lazy_eq_weights`](Self::set_lazy_eq_weights)).
    pub fn weights(&self) -> Result<Vec<E>> {
        if self.lazy.is_some() || self.lazy_slots.is_some() {
            return Err(GpuError::InvalidInput("the weights are not stored yet (lazy equality weights)".into()));
        }
        if self.w.buffers.is_empty() {
            return Ok(vec![E::ZERO; self.size()]);
        }
        Ok(self.polynomial_order(ext_from_words::<F, E>(self.read_table(&self.w)?)?))
    }

    /// One weights kernel over w, one dispatch per segment, with `count` points (their tables
    /// in `points` and `scales`, the same number of entries per point in each); each thread
    /// covers `per_thread` entries. Points whose tables exceed one binding go in batches.
    pub(super) fn dispatch_weights(&self, kernel: Kernel, points: &[E], scales: &[E], count: usize, per_thread: usize, vars: usize) -> Result<()> {
        let per_point = (points.len() / count.max(1)).max(scales.len() / count.max(1)).max(1);
        let batch = ((self.ctx.max_binding_bytes() / Self::BYTES) as usize / per_point).max(1);
        self.ctx.scoped("sumcheck weights", || {
            let mut recording = self.ctx.batch("sumcheck weights");
            let segment = self.w.segment_len();
            let groups = segment.div_ceil(per_thread).div_ceil(THREADS);
            let recorded = (0..count).step_by(batch).try_for_each(|first| {
                let n = batch.min(count - first);
                let cut = |t: &[E]| {
                    let per = t.len() / count;
                    self.upload_table("sumcheck points", &t[first * per..(first + n) * per])
                };
                let (points, scales) = (cut(points), cut(scales));
                let recorded = (0..self.segments()).try_for_each(|j| {
                    let at = WeightParams {
                        size: segment as u32,
                        vars: vars as u32,
                        count: n as u32,
                        groups: groups as u32,
                        offset: (j * segment) as u32,
                        total: self.size() as u32,
                        _pad: [0; 2],
                    };
                    self.record_kernel(recording.encoder(), kernel, &points, &scales, at, self.w.range(j))
                });
                recording.lend(points);
                recording.lend(scales);
                recorded
            });
            recorded.and_then(|()| self.ctx.send(recording))
        })
    }

    /// A pooled buffer holding `values` (one zero when empty: bindings hold at least one).
    pub(super) fn upload_table(&self, label: &str, values: &[E]) -> wgpu::Buffer {
        let values = if values.is_empty() { &[E::ZERO][..] } else { values };
        self.ctx.upload_pooled(label, ext_as_words::<F, E>(values))
    }

    /// Records one weights-family kernel (wgsl/sumcheck/weights.wgsl) over `table` (a range).
    pub(super) fn record_kernel(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        kernel: Kernel,
        points: &wgpu::Buffer,
        scales: &wgpu::Buffer,
        params: WeightParams,
        table: (&wgpu::Buffer, u64, Option<u64>),
    ) -> Result<()> {
        let pipeline = self.ctx.pipeline_over(F::ID, E::ID, kernel, &[])?;
        let groups = params.groups;
        let params = self.ctx.uniform("weight params", &params);
        let bind = self.ctx.bind_ranges(&pipeline, &[(&params, 0, None), (points, 0, None), (scales, 0, None), table, (&self.placeholder, 0, None)]);
        self.ctx.record_dispatch(encoder, kernel.entry_point(), &pipeline, &bind, groups, None);
        Ok(())
    }

    /// `w[x] += Σ_j scales[j]·ω^(indices[j]·x)`, ω the 2^log_domain-th root of unity Plonky3's
    /// two-adic domains use: the select weights of the points ω^index. For many points this is
    /// one NTT of the sparse vector of scales (2^log_domain x `E::WORDS` words), not one power per point
    /// and entry.
    pub fn add_select_weights_at(&mut self, log_domain: usize, indices: &[usize], scales: &[E]) -> Result<()> {
        if indices.len() != scales.len() {
            return Err(GpuError::InvalidInput(format!("{} indices with {} scales", indices.len(), scales.len())));
        }
        if log_domain > F::TWO_ADICITY {
            return Err(GpuError::InvalidInput(format!("a domain of 2^{log_domain} exceeds {}'s 2^{}", F::ID.name(), F::TWO_ADICITY)));
        }
        if let Some(&bad) = indices.iter().find(|&&i| i >> log_domain != 0) {
            return Err(GpuError::InvalidInput(format!("index {bad} outside a domain of 2^{log_domain}")));
        }
        if indices.is_empty() {
            return Ok(());
        }
        self.materialize_weights()?;
        self.ensure_weights()?;
        let omega = <F as p3_field::TwoAdicField>::two_adic_generator(log_domain);
        // Per entry and point the direct kernel spends ~7.5 multiplications (a power step and
        // a scale by an extension element); the transform ~2 per element and level over its 4
        // columns. Both ran at about the same multiplications a second
        // (docs/benchmarks-history.md), so weigh them 4 : 1. The transform's table must fit
        // one binding.
        let direct_cost = indices.len().saturating_mul(4) << self.vars;
        let transform_cost = (1usize << log_domain) * log_domain.max(1);
        if log_domain < self.vars || direct_cost <= transform_cost || (Self::BYTES << log_domain) > self.ctx.max_binding_bytes() {
            let vars: Vec<F> = indices.iter().map(|&i| omega.exp_u64(i as u64)).collect();
            return self.add_select_weights(&vars, scales);
        }
        // S: the scales summed per distinct index.
        let mut sparse: std::collections::BTreeMap<usize, E> = std::collections::BTreeMap::new();
        for (&i, &s) in indices.iter().zip(scales) {
            *sparse.entry(i).or_insert(E::ZERO) += s;
        }
        let index_words: Vec<u32> = sparse.keys().flat_map(|&i| std::iter::once(i as u32).chain(std::iter::repeat_n(0, E::WORDS - 1))).collect();
        let sums: Vec<E> = sparse.values().copied().collect();
        self.ctx.scoped("sumcheck select weights", || {
            let mut batch = self.ctx.batch("select weights");
            let table = self.ctx.pooled_storage("select table", E::WORDS << log_domain);
            let points = batch.upload("select indices", &index_words);
            let sums_buf = self.upload_table("select scales", &sums);
            let zero = self.upload_table("select scales", &[]);
            batch.lend(sums_buf.clone());
            batch.lend(zero.clone());
            batch.clear(&table);
            let scatter = WeightParams {
                size: 1 << log_domain,
                vars: 0,
                count: sums.len() as u32,
                groups: sums.len().div_ceil(THREADS) as u32,
                offset: 0,
                total: 1 << log_domain,
                _pad: [0; 2],
            };
            if let Err(e) = self.record_kernel(batch.encoder(), Kernel::ScatterScales, &points, &sums_buf, scatter, (&table, 0, None)) {
                batch.lend(table);
                return Err(e);
            }
            // The table is the transform's to reuse as work space (its result is the batch's).
            // At reversed indices entry i takes the transform's entry rev_m(i), which its
            // bit-reversed output holds at i·2^(log_domain - m): read at that stride.
            let spec = NttSpec { bit_reversed_output: self.reversed && log_domain > 0, ..NttSpec::<F>::forward(log_domain, E::WORDS) };
            let stride_log = if self.reversed { (log_domain - self.vars) as u32 } else { 0 };
            let transformed = self.ntt.record(&mut batch, NttSource::GivenUp(table), &spec)?;
            batch.lend(transformed.clone());
            let segment = self.w.segment_len();
            (0..self.segments()).try_for_each(|j| {
                let add = WeightParams {
                    size: segment as u32,
                    vars: stride_log,
                    count: 0,
                    groups: segment.div_ceil(THREADS) as u32,
                    offset: (j * segment) as u32,
                    total: self.size() as u32,
                    _pad: [0; 2],
                };
                self.record_kernel(batch.encoder(), Kernel::AddTablePrefix, &transformed, &zero, add, self.w.range(j))
            })?;
            self.ctx.send(batch)
        })
    }
}
