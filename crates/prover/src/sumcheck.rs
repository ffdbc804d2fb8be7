//! The sumcheck state of the WHIR rounds after the initial fold: a polynomial f and a weight
//! polynomial w over the hypercube {0,1}^m (evaluation tables in big-endian index order, as
//! Plonky3's `Poly`), with the claim Σ_x f(x)·w(x). Rounds bind the last variable first
//! (Plonky3's suffix order: adjacent pairs (2i, 2i+1)), constraints add γ-weighted equality and
//! select weights to w. [`CpuSumcheck`] is the plain-Rust twin; the GPU implementation keeps f
//! and w on the device.

use p3_multilinear_util::point::Point;

use crate::error::ProverError;
use crate::lookahead::{Lookahead, MaskedWires, PlayedGrind, PlayedRound, TranscriptState};
use crate::{ProverField, WhirExtension, EF};

/// Slots of the tables at one point: slot c is the 2^k entries from entry `offsets[c]` (k the
/// point's coordinates), read as a multilinear polynomial over {0,1}^k — one column of a stacked
/// table — or, with `successor`, as its successor view (entry i replaced by entry
/// min(i + 1, 2^k − 1): the column shifted by one row, its last row repeated).
#[derive(Clone, Debug, PartialEq)]
pub struct SlotSet<E = EF> {
    /// The point each slot is read at.
    pub point: Point<E>,
    /// Where each slot starts in the stacked polynomial.
    pub offsets: Vec<usize>,
    /// Read each slot as its successor view.
    pub successor: bool,
}

impl<E: p3_field::Field> SlotSet<E> {
    /// Slot entry i's weight in the value of one slot: eq(point, i), or for the successor
    /// view eq(point, i − 1) (i ≥ 1) plus eq(point, 2^k − 1) at i = 2^k − 1.
    fn weight(&self, i: usize) -> E {
        let z = self.point.as_slice();
        if !self.successor {
            return eq_at(z, i);
        }
        let last = (1usize << z.len()) - 1;
        let before = if i >= 1 { eq_at(z, i - 1) } else { E::ZERO };
        if i == last {
            before + eq_at(z, last)
        } else {
            before
        }
    }

    fn check(&self, vars: usize) -> Result<(), ProverError> {
        let k = self.point.num_variables();
        if k > vars || self.offsets.iter().any(|&o| o.checked_add(1 << k).is_none_or(|end| end > 1 << vars)) {
            return Err(ProverError::Input(format!("slots of 2^{k} entries outside a table of 2^{vars}")));
        }
        Ok(())
    }
}

/// The sumcheck state a [`Backend`](crate::backend::Backend) keeps (its `Sumcheck`), and the
/// steps a WHIR round asks of it.
pub trait SumcheckState<F: ProverField = p3_baby_bear::BabyBear, E: WhirExtension<F> = EF<F>> {
    /// Variables m still free (f and w have 2^m entries).
    fn num_variables(&self) -> usize;

    /// A copy of the state with tables of its own (to open one committed f more than once).
    fn duplicate(&self) -> Result<Self, ProverError>
    where
        Self: Sized;

    /// The round polynomial's h(0) = Σ_i f(2i)·w(2i) and leading coefficient
    /// h(∞) = Σ_i (f(2i+1) − f(2i))·(w(2i+1) − w(2i)).
    fn round_coefficients(&mut self) -> Result<(E, E), ProverError>;

    /// Binds the last variable to `r`: g(i) = g(2i) + r·(g(2i+1) − g(2i)) for f and w.
    fn fold(&mut self, r: E) -> Result<(), ProverError>;

    /// `fold(r)`, then the next round's coefficients (one submission on the GPU).
    fn fold_then_round(&mut self, r: E) -> Result<(E, E), ProverError> {
        self.fold(r)?;
        self.round_coefficients()
    }

    /// `w(x) += Σ_j scales[j] · eq(points[j], x)`.
    fn add_eq_weights(&mut self, points: &[Point<E>], scales: &[E]) -> Result<(), ProverError>;

    /// `w(x) += Σ_j scales[j] · vars[j]^x` (the select weights of univariate points).
    fn add_select_weights(&mut self, vars: &[F], scales: &[E]) -> Result<(), ProverError>;

    /// `add_eq_weights` onto a w without weights yet, whose next `rounds` rounds may form w's
    /// entries where they use them instead of storing w (the GPU's: see
    /// `GpuSumcheck::set_lazy_eq_weights`).
    fn set_lazy_eq_weights(&mut self, points: &[Point<E>], scales: &[E], _rounds: usize) -> Result<(), ProverError> {
        self.add_eq_weights(points, scales)
    }

    /// f(point) = Σ_x f(x)·eq(point, x).
    fn eval(&mut self, point: &Point<E>) -> Result<E, ProverError>;

    /// `w(x) += Σ_j scales[j] · ω^(indices[j]·x)`, ω the 2^log_domain-th root of unity of
    /// Plonky3's two-adic domains: the select weights of the query points ω^index.
    fn add_select_weights_at(&mut self, log_domain: usize, indices: &[usize], scales: &[E]) -> Result<(), ProverError> {
        let omega = <F as p3_field::TwoAdicField>::two_adic_generator(log_domain);
        let vars: Vec<F> = indices.iter().map(|&i| omega.exp_u64(i as u64)).collect();
        self.add_select_weights(&vars, scales)
    }

    /// f at `Point::expand_from_univariate(y, m)` = (y^(2^(m-1)), ..., y^2, y).
    fn eval_univariate(&mut self, y: E) -> Result<E, ProverError> {
        let point = Point::expand_from_univariate(y, self.num_variables());
        self.eval(&point)
    }

    /// f's evaluation table.
    fn evals(&mut self) -> Result<Vec<E>, ProverError>;

    /// w's table, in the polynomial's order. This and the three below are the steps a hiding
    /// proof adds; every backend gives them.
    fn weights_table(&mut self) -> Result<Vec<E>, ProverError>;

    /// `w(x) *= s` (a hiding sumcheck batch scales its weights by its challenge ε).
    fn scale_weights(&mut self, s: E) -> Result<(), ProverError>;

    /// `w(x) += Σ_j scales[j]·vars[j]^x` with variables in the extension, x the index in the
    /// polynomial's order (a hiding round's out-of-domain constraints).
    fn add_power_weights(&mut self, vars: &[E], scales: &[E]) -> Result<(), ProverError>;

    /// `Σ_x f(x)·y^x`, x the index in the polynomial's order: f read as the coefficients of a
    /// univariate polynomial (a hiding round's out-of-domain answer).
    fn eval_powers(&mut self, y: E) -> Result<E, ProverError>;

    /// Each set's slots of f evaluated at its point ([`SlotSet`]): Σ_i f[offset + i]·eq(point,
    /// i), or the successor view's value.
    fn eval_slots(&mut self, sets: &[SlotSet<E>]) -> Result<Vec<Vec<E>>, ProverError>;

    /// `w[offset + i] += scale·weight(i)` over each slot of each set, one scale per slot: the
    /// weights under which Σ f·w is the slot's value ([`eval_slots`](Self::eval_slots)).
    fn add_slot_weights(&mut self, sets: &[(SlotSet<E>, Vec<E>)]) -> Result<(), ProverError>;

    /// `add_slot_weights` onto a w without weights yet, whose next `rounds` rounds may combine
    /// slot evaluations of f instead of storing w (the GPU's: see
    /// `GpuSumcheck::set_lazy_slot_weights`).
    fn set_lazy_slot_weights(&mut self, sets: &[(SlotSet<E>, Vec<E>)], _rounds: usize) -> Result<(), ProverError> {
        self.add_slot_weights(sets)
    }

    /// `evals`, and where the backend can, the grind of `bits` that follows observing them, run
    /// ahead of the transcript from `state` (the GPU's: in the same submission; see
    /// `GpuSumcheck::evals_then_grind`); what it found goes to the challenger, which checks it.
    /// None where the backend grinds nothing.
    #[allow(clippy::type_complexity)]
    fn evals_then_grind(&mut self, grind: Option<(&TranscriptState<F>, usize)>) -> Result<(Vec<E>, Option<PlayedGrind<F>>), ProverError> {
        let _ = grind;
        Ok((self.evals()?, None))
    }

    /// Grind ahead of the transcript after each round, where the backend can (the GPU's run the
    /// grind in the round's own submission, from the state `ahead` publishes); None stops it.
    fn set_grind_ahead(&mut self, ahead: Option<Lookahead<F>>) {
        let _ = ahead;
    }

    /// Plays `rounds` rounds with their transcript where the backend keeps the tables (the GPU: one
    /// submission; see `GpuSumcheck::play_chain`), from the transcript at `state`, grinding
    /// `bits` after each; the protocol replays the transcript and checks every challenge. With
    /// `wires`, each round observes its masked wire instead of its pair (a masked batch); the
    /// rounds played report the plain pairs. None where the backend cannot (the protocol plays
    /// round by round).
    fn play_chain(
        &mut self,
        rounds: usize,
        state: &TranscriptState<F>,
        bits: usize,
        wires: Option<&MaskedWires<E>>,
    ) -> Option<Result<Vec<PlayedRound<F, E>>, ProverError>> {
        let _ = (rounds, state, bits, wires);
        None
    }
}

/// eq(point, x) with point[0] paired with the most significant bit of x.
pub(crate) fn eq_at<E: p3_field::Field>(point: &[E], x: usize) -> E {
    let m = point.len();
    point.iter().enumerate().map(|(k, &p)| if (x >> (m - 1 - k)) & 1 == 1 { p } else { E::ONE - p }).product()
}

/// The plain-Rust twin: the reference every GPU step is tested against.
#[derive(Clone, Debug)]
pub struct CpuSumcheck<F: ProverField = p3_baby_bear::BabyBear, E: WhirExtension<F> = EF<F>> {
    f: Vec<E>,
    w: Vec<E>,
    field: std::marker::PhantomData<F>,
    /// The tables hold the polynomials at bit-reversed indices (as `GpuSumcheck`'s
    /// `with_reversed_indices`).
    reversed: bool,
}

/// The low `bits` bits of x reversed.
pub(crate) fn reverse_low_bits(x: usize, bits: usize) -> usize {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS as usize - bits)
    }
}

impl<F: ProverField, E: WhirExtension<F>> CpuSumcheck<F, E> {
    /// From f and w's tables (equal powers of two).
    pub fn new(f: Vec<E>, w: Vec<E>) -> Result<Self, ProverError> {
        if f.len() != w.len() || !f.len().is_power_of_two() {
            return Err(ProverError::Input(format!("sumcheck tables of {} and {} entries", f.len(), w.len())));
        }
        Ok(Self { f, w, reversed: false, field: std::marker::PhantomData })
    }

    /// The same tables read at bit-reversed indices: entry i is the polynomial's value at
    /// rev_m(i), so the rounds (which bind the table's last variable) bind the polynomial's
    /// first, as a prefix-order sumcheck does; every step keeps the polynomial's order at its
    /// seam (points, select variables, slots, the tables read back).
    pub fn with_reversed_indices(mut self) -> Self {
        self.reversed = true;
        self
    }

    /// w's table, in the polynomial's order.
    pub fn weights(&self) -> Vec<E> {
        self.polynomial_order(self.w.clone())
    }

    /// A codeword's message of f: rows of 2^fold entries, as laid out for the order the rounds
    /// bind (prefix order: the 2^fold blocks transposed).
    pub fn message(&self, fold: usize) -> Result<Vec<E>, ProverError> {
        if fold > self.num_variables() {
            return Err(ProverError::Input(format!("a fold of {fold} variables of a {}-variable polynomial", self.num_variables())));
        }
        Ok(if self.reversed { reverse_rows_and_columns(&self.f, fold) } else { self.f.clone() })
    }

    fn polynomial_order(&self, mut values: Vec<E>) -> Vec<E> {
        if self.reversed && values.len() > 1 {
            p3_util::reverse_slice_index_bits(&mut values);
        }
        values
    }

    /// `point` as the tables are indexed.
    fn table_point(&self, point: &Point<E>) -> Vec<E> {
        if self.reversed {
            point.as_slice().iter().rev().copied().collect()
        } else {
            point.as_slice().to_vec()
        }
    }

    /// A slot entry's index in the slot's polynomial (entry i of a 2^k-entry slot).
    fn slot_index(&self, i: usize, k: usize) -> usize {
        if self.reversed {
            reverse_low_bits(i, k)
        } else {
            i
        }
    }
}

fn fold_table<F: ProverField, E: WhirExtension<F>>(g: &mut Vec<E>, r: E) {
    let half = g.len() / 2;
    for i in 0..half {
        g[i] = g[2 * i] + r * (g[2 * i + 1] - g[2 * i]);
    }
    g.truncate(half);
}

impl<F: ProverField, E: WhirExtension<F>> SumcheckState<F, E> for CpuSumcheck<F, E> {
    fn num_variables(&self) -> usize {
        self.f.len().trailing_zeros() as usize
    }

    fn duplicate(&self) -> Result<Self, ProverError> {
        Ok(self.clone())
    }

    fn round_coefficients(&mut self) -> Result<(E, E), ProverError> {
        let (mut c0, mut c_inf) = (E::ZERO, E::ZERO);
        for (f, w) in self.f.chunks_exact(2).zip(self.w.chunks_exact(2)) {
            c0 += f[0] * w[0];
            c_inf += (f[1] - f[0]) * (w[1] - w[0]);
        }
        Ok((c0, c_inf))
    }

    fn fold(&mut self, r: E) -> Result<(), ProverError> {
        if self.f.len() < 2 {
            return Err(ProverError::Input("no variable left to fold".into()));
        }
        fold_table(&mut self.f, r);
        fold_table(&mut self.w, r);
        Ok(())
    }

    fn add_eq_weights(&mut self, points: &[Point<E>], scales: &[E]) -> Result<(), ProverError> {
        for (point, &s) in points.iter().zip(scales) {
            let point = self.table_point(point);
            for (x, w) in self.w.iter_mut().enumerate() {
                *w += s * eq_at(&point, x);
            }
        }
        Ok(())
    }

    fn add_select_weights(&mut self, vars: &[F], scales: &[E]) -> Result<(), ProverError> {
        let m = self.num_variables();
        for (&v, &s) in vars.iter().zip(scales) {
            let mut power = F::ONE;
            for x in 0..self.w.len() {
                let at = self.slot_index(x, m);
                self.w[at] += s * power;
                power *= v;
            }
        }
        Ok(())
    }

    fn eval(&mut self, point: &Point<E>) -> Result<E, ProverError> {
        let point = self.table_point(point);
        Ok(self.f.iter().enumerate().map(|(x, &f)| f * eq_at(&point, x)).sum())
    }

    fn evals(&mut self) -> Result<Vec<E>, ProverError> {
        Ok(self.polynomial_order(self.f.clone()))
    }

    fn weights_table(&mut self) -> Result<Vec<E>, ProverError> {
        Ok(self.weights())
    }

    fn scale_weights(&mut self, s: E) -> Result<(), ProverError> {
        self.w.iter_mut().for_each(|w| *w *= s);
        Ok(())
    }

    fn add_power_weights(&mut self, vars: &[E], scales: &[E]) -> Result<(), ProverError> {
        if vars.len() != scales.len() {
            return Err(ProverError::Input(format!("{} power variables with {} scales", vars.len(), scales.len())));
        }
        let m = self.num_variables();
        for (&v, &s) in vars.iter().zip(scales) {
            let mut power = s;
            for x in 0..self.w.len() {
                let at = self.slot_index(x, m);
                self.w[at] += power;
                power *= v;
            }
        }
        Ok(())
    }

    fn eval_powers(&mut self, y: E) -> Result<E, ProverError> {
        let m = self.num_variables();
        let mut power = E::ONE;
        let mut sum = E::ZERO;
        for x in 0..self.f.len() {
            sum += self.f[self.slot_index(x, m)] * power;
            power *= y;
        }
        Ok(sum)
    }

    fn eval_slots(&mut self, sets: &[SlotSet<E>]) -> Result<Vec<Vec<E>>, ProverError> {
        let vars = self.num_variables();
        sets.iter()
            .map(|set| {
                set.check(vars)?;
                let (k, size) = (set.point.num_variables(), 1usize << set.point.num_variables());
                let weights: Vec<E> = (0..size).map(|i| set.weight(self.slot_index(i, k))).collect();
                Ok(set.offsets.iter().map(|&o| self.f[o..o + size].iter().zip(&weights).map(|(&f, &w)| f * w).sum()).collect())
            })
            .collect()
    }

    fn add_slot_weights(&mut self, sets: &[(SlotSet<E>, Vec<E>)]) -> Result<(), ProverError> {
        let vars = self.num_variables();
        for (set, scales) in sets {
            set.check(vars)?;
            if scales.len() != set.offsets.len() {
                return Err(ProverError::Input(format!("{} slots with {} scales", set.offsets.len(), scales.len())));
            }
            let (k, size) = (set.point.num_variables(), 1usize << set.point.num_variables());
            let weights: Vec<E> = (0..size).map(|i| set.weight(self.slot_index(i, k))).collect();
            for (&o, &s) in set.offsets.iter().zip(scales) {
                for (w, &v) in self.w[o..o + size].iter_mut().zip(&weights) {
                    *w += s * v;
                }
            }
        }
        Ok(())
    }
}

/// γ^start, γ^(start+1), ...: the batching coefficients of `count` claims.
pub(crate) fn powers_from<F: ProverField, E: WhirExtension<F>>(gamma: E, start: usize, count: usize) -> Vec<E> {
    let first = gamma.exp_u64(start as u64);
    gamma.powers().take(count).map(|p| p * first).collect()
}

/// `table` (rows of 2^col_bits values) with its row index and its column index each
/// bit-reversed: out[(rev(r) << col_bits) | rev(c)] = table[(r << col_bits) | c]. A polynomial
/// held at bit-reversed indices so copied is its message in prefix order (2^fold blocks
/// transposed); the map is its own inverse.
pub fn reverse_rows_and_columns<T: Copy + Default>(table: &[T], col_bits: usize) -> Vec<T> {
    let bits = table.len().trailing_zeros() as usize;
    debug_assert!(table.len().is_power_of_two() && col_bits <= bits);
    let rev = |x: usize, b: usize| if b == 0 { 0 } else { x.reverse_bits() >> (usize::BITS as usize - b) };
    let mut out = vec![T::default(); table.len()];
    for (i, &v) in table.iter().enumerate() {
        let (r, c) = (i >> col_bits, i & ((1 << col_bits) - 1));
        out[(rev(r, bits - col_bits) << col_bits) | rev(c, col_bits)] = v;
    }
    out
}
