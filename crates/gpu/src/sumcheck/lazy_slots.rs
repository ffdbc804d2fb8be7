//! Slot weights not written into w: the host's side of
//! [`GpuSumcheck::set_lazy_slot_weights`](super::GpuSumcheck::set_lazy_slot_weights).
//!
//! In a stacked table (suffix layout) a slot's own variables are the low bits of the index, so
//! the rounds bind them first, and a slot of 2^k entries from offset o (o a multiple of 2^k)
//! folds into one of 2^(k−1) entries from o/2. Each term of w keeps its shape under a fold: a
//! slot's term is A·E(i − 1) + B·E(i) + C·[i = last] with E = eq(z, ·) — an equality term has
//! A = C = 0, B = c; a successor term (the weight under which Σ f·w is the successor view's
//! value) starts at A = c, B = 0, C = c·Πz — and with z = (z', ζ) binding ζ to r gives
//! A' = A(1 − r)ζ, B' = B·eq(ζ, r) + A·r(1 − ζ), C' = C·r over E' = eq(z', ·).
//!
//! So each round's h(0) and h(∞) are combinations of slot evaluations of the folded f: S_b =
//! Σ_p f(2p + b)·E'(p) (the slot at (z', b)), T_b = Σ_p f(min(2p + b + 2, end))·E'(p) (its view
//! shifted by two rows) and f's last two entries. Which slots a round reads depends on the
//! points and offsets alone, not on the challenges, so every round's reads are planned when
//! the weights are set; the coefficients follow the challenges (here, or on the GPU in a chain:
//! wgsl/sumcheck/lazy_slot_round.wgsl). Nothing of w's size is stored until the lazy rounds are
//! played; w is then written at the folded size from the terms.

use std::collections::HashMap;

use p3_field::Field;

use super::Slots;

/// What one round reads of f: the slots from `offsets` at `point`, each entry i replaced by
/// entry min(i + shift, size − 1).
pub(super) struct SlotRead<E: Field> {
    pub point: Vec<E>,
    pub offsets: Vec<usize>,
    pub shift: u32,
}

/// A round's slot reads, and where each term's values are among them.
pub(super) struct RoundPlan<E: Field> {
    pub reads: Vec<SlotRead<E>>,
    /// Per term (groups' slots in order): the indices, in the reads' values laid end to end, of
    /// S_0, S_1, T_0, T_1 and the last two entries.
    at: Vec<[u32; 6]>,
}

impl<E: Field> RoundPlan<E> {
    /// The GPU combination's term table: per term its six value indices and its group.
    pub fn term_words(&self, groups: &[u32]) -> Vec<u32> {
        self.at.iter().zip(groups).flat_map(|(at, &g)| [at[0], at[1], at[2], at[3], at[4], at[5], g, 0]).collect()
    }
}

/// Builds a [`RoundPlan`]: each (shift, point) read once, each slot once in it.
#[derive(Default)]
struct PlanBuilder<E: Field> {
    reads: Vec<SlotRead<E>>,
    by_key: HashMap<(u32, Vec<E>), usize>,
    places: Vec<HashMap<usize, usize>>,
}

impl<E: Field> PlanBuilder<E> {
    fn read(&mut self, point: Vec<E>, shift: u32) -> usize {
        let (reads, places) = (&mut self.reads, &mut self.places);
        *self.by_key.entry((shift, point)).or_insert_with_key(|(shift, point)| {
            reads.push(SlotRead { point: point.clone(), offsets: Vec::new(), shift: *shift });
            places.push(HashMap::new());
            reads.len() - 1
        })
    }

    /// Where the slot from `offset` is in `read`: added if new.
    fn place(&mut self, read: usize, offset: usize) -> (usize, usize) {
        let offsets = &mut self.reads[read].offsets;
        let place = *self.places[read].entry(offset).or_insert_with(|| {
            offsets.push(offset);
            offsets.len() - 1
        });
        (read, place)
    }

    fn finish(self, at: Vec<[(usize, usize); 6]>) -> RoundPlan<E> {
        let mut starts = Vec::with_capacity(self.reads.len());
        let mut next = 0usize;
        for r in &self.reads {
            starts.push(next);
            next += r.offsets.len();
        }
        let at = at.iter().map(|a| a.map(|(read, place)| (starts[read] + place) as u32)).collect();
        RoundPlan { reads: self.reads, at }
    }
}

/// Slots of one set at one point, with their terms' coefficients.
struct Group<E: Field> {
    /// The point as set (coordinate 0 ↔ the slot's top index bit); a round binds the last
    /// coordinate not bound yet.
    point: Vec<E>,
    /// The slots' offsets as set (each round halves them).
    offsets: Vec<usize>,
    successor: bool,
    /// Per slot: A, B, C (see the module docs).
    terms: Vec<[E; 3]>,
}

/// One set of slot weights to write into w ([`LazySlots::weight_sets`]).
pub(super) struct WeightSet<E: Field> {
    pub point: Vec<E>,
    pub offsets: Vec<usize>,
    pub successor: bool,
    pub scales: Vec<E>,
}

pub(super) struct LazySlots<E: Field> {
    groups: Vec<Group<E>>,
    /// Every round's reads, from the first.
    plans: Vec<RoundPlan<E>>,
    /// Each term's group (groups' slots in order).
    term_groups: Vec<u32>,
    /// Variables bound since set, and the rounds covered.
    pub bound: usize,
    pub rounds: usize,
}

fn eq1<E: Field>(z: E, r: E) -> E {
    (E::ONE - z) * (E::ONE - r) + z * r
}

fn with_last<E: Field>(point: &[E], last: E) -> Vec<E> {
    let mut p = point.to_vec();
    p.push(last);
    p
}

impl<E: Field> LazySlots<E> {
    /// The terms of `sets` for the next `rounds` rounds, capped at the smallest slot's variables;
    /// None where they cannot be kept lazy (no rounds, or a slot not aligned to its size).
    pub fn new(sets: &[(Slots<'_, E>, &[E])], rounds: usize) -> Option<Self> {
        let used = sets.iter().filter(|(s, _)| !s.offsets.is_empty());
        let rounds = used.clone().map(|(s, _)| s.point.len()).min()?.min(rounds);
        let aligned = used.clone().all(|(s, _)| s.offsets.iter().all(|&o| o % (1usize << s.point.len()) == 0));
        if rounds == 0 || !aligned {
            return None;
        }
        let groups: Vec<Group<E>> = used
            .map(|(s, scales)| {
                let last: E = s.point.iter().copied().product();
                let terms = scales.iter().map(|&c| if s.successor { [c, E::ZERO, c * last] } else { [E::ZERO, c, E::ZERO] }).collect();
                Group { point: s.point.to_vec(), offsets: s.offsets.to_vec(), successor: s.successor, terms }
            })
            .collect();
        let term_groups = groups.iter().enumerate().flat_map(|(g, group)| std::iter::repeat_n(g as u32, group.terms.len())).collect();
        let mut lazy = Self { groups, plans: Vec::with_capacity(rounds), term_groups, bound: 0, rounds };
        lazy.plans = (0..rounds).map(|t| lazy.plan(t)).collect();
        Some(lazy)
    }

    /// Terms, over all groups.
    pub fn terms(&self) -> usize {
        self.term_groups.len()
    }

    pub fn term_groups(&self) -> &[u32] {
        &self.term_groups
    }

    /// Round `t`'s reads (t from the first lazy round).
    pub fn plan_at(&self, t: usize) -> &RoundPlan<E> {
        &self.plans[t]
    }

    /// The slot evaluations round `t` combines, each slot read once: a successor set's slots
    /// that a direct set at its point reads too share those reads, and every successor slot's
    /// last two entries come in two reads (two-entry slots at the points 0 and 1).
    fn plan(&self, t: usize) -> RoundPlan<E> {
        let mut b = PlanBuilder::default();
        let ends = [b.read(vec![E::ZERO], 0), b.read(vec![E::ONE], 0)];
        let mut at = Vec::with_capacity(self.term_groups.len());
        for g in &self.groups {
            let m = g.point.len() - t;
            let inner = &g.point[..m - 1];
            let (zero, one) = (with_last(inner, E::ZERO), with_last(inner, E::ONE));
            let s = [b.read(zero.clone(), 0), b.read(one.clone(), 0)];
            let shifted = if g.successor { Some([b.read(zero, 2), b.read(one, 2)]) } else { None };
            for &o in &g.offsets {
                let o = o >> t;
                let (s0, s1) = (b.place(s[0], o), b.place(s[1], o));
                at.push(match shifted {
                    None => [s0, s1, s0, s0, s0, s0],
                    Some(shifted) => {
                        let end = o + (1 << m) - 2;
                        [s0, s1, b.place(shifted[0], o), b.place(shifted[1], o), b.place(ends[0], end), b.place(ends[1], end)]
                    }
                });
            }
        }
        b.finish(at)
    }

    /// Round `t`'s constants per group: ζ (the coordinate it binds), E'(last) (the product of
    /// the coordinates it keeps), and the previous round's ζ (zero at the first).
    pub fn round_constants(&self, t: usize) -> Vec<E> {
        self.groups
            .iter()
            .flat_map(|g| {
                let m = g.point.len() - t;
                let last: E = g.point[..m - 1].iter().copied().product();
                let previous = if t > 0 { g.point[m] } else { E::ZERO };
                [g.point[m - 1], last, previous]
            })
            .collect()
    }

    /// The coefficients A, B, C of every term, as they are now.
    pub fn coefficients(&self) -> Vec<E> {
        self.groups.iter().flat_map(|g| g.terms.iter().flatten().copied()).collect()
    }

    /// h(0) and h(∞) of the current round from the values of its plan's reads, in order.
    pub fn round(&self, values: &[Vec<E>]) -> (E, E) {
        let plan = &self.plans[self.bound];
        let flat: Vec<E> = values.concat();
        let (mut h0, mut h_inf) = (E::ZERO, E::ZERO);
        let two = E::TWO;
        let mut at = plan.at.iter();
        for g in &self.groups {
            let m = g.point.len() - self.bound;
            let zeta = g.point[m - 1];
            // E'(last): the shifted reads repeat the last entry there once.
            let last: E = g.point[..m - 1].iter().copied().product();
            for (&[a, b, c], at) in g.terms.iter().zip(at.by_ref()) {
                let [s0, s1, t0, t1, e0, e1] = at.map(|i| flat[i as usize]);
                let ds = s1 - s0;
                h0 += b * (E::ONE - zeta) * s0;
                h_inf += b * (two * zeta - E::ONE) * ds;
                if g.successor {
                    let (v0, v1) = (t0 - last * e1, t1 - last * e1);
                    h0 += a * zeta * v0;
                    h_inf += a * ((E::ONE - zeta) * ds - zeta * (v1 - v0)) + c * (e1 - e0);
                }
            }
        }
        (h0, h_inf)
    }

    /// Binds the slots' last variable not bound yet to `r`.
    pub fn bind(&mut self, r: E) {
        for g in &mut self.groups {
            let zeta = g.point[g.point.len() - 1 - self.bound];
            let e = eq1(zeta, r);
            for [a, b, c] in &mut g.terms {
                *b = *b * e + *a * r * (E::ONE - zeta);
                *a *= (E::ONE - r) * zeta;
                *c *= r;
            }
        }
        self.bound += 1;
    }

    /// The terms as slot weights of the folded size: equality and successor weights, and the
    /// last entries' corrections as equality weights at the all-ones point.
    pub fn weight_sets(&self) -> Vec<WeightSet<E>> {
        let mut sets = Vec::new();
        for g in &self.groups {
            let point = g.point[..g.point.len() - self.bound].to_vec();
            let offsets: Vec<usize> = g.offsets.iter().map(|o| o >> self.bound).collect();
            let column = |k: usize| g.terms.iter().map(|t| t[k]).collect::<Vec<_>>();
            if g.successor {
                // A·(successor weight) holds A·E(last) at the last entry besides A·E(i − 1).
                let last: E = point.iter().copied().product();
                let corrections = g.terms.iter().map(|&[a, _, c]| c - a * last).collect();
                let ones = vec![E::ONE; point.len()];
                sets.push(WeightSet { point: point.clone(), offsets: offsets.clone(), successor: true, scales: column(0) });
                sets.push(WeightSet { point: point.clone(), offsets: offsets.clone(), successor: false, scales: column(1) });
                sets.push(WeightSet { point: ones, offsets, successor: false, scales: corrections });
            } else {
                sets.push(WeightSet { point, offsets, successor: false, scales: column(1) });
            }
        }
        sets
    }
}
