//! Slot weights not written into w: the host's side of
//! [`GpuSumcheck::set_lazy_slot_weights`](super::GpuSumcheck::set_lazy_slot_weights).
//!
//! In a stacked table (suffix layout) a slot's own variables are the low bits of the index, so
//! the rounds bind them first, and a slot of 2^k entries from offset o (o a multiple of 2^k)
//! folds into one of 2^(k−1) entries from o/2. Each term of w keeps its shape under a fold:
//! - an equality term c·eq(z, ·) becomes c·eq(ζ, r)·eq(z', ·), z = (z', ζ);
//! - a successor term, the weight under which Σ f·w is the successor view's value, is
//!   A·E(i − 1) + B·E(i) + C·[i = last] with E = eq(z, ·) (A = c, B = 0, C = c·Πz when set), and
//!   becomes A' = A(1 − r)ζ, B' = B·eq(ζ, r) + A·r(1 − ζ), C' = C·r over E' = eq(z', ·).
//!
//! So each round's h(0) and h(∞) are combinations of slot evaluations of the folded f: S_b =
//! Σ_p f(2p + b)·E'(p) (the slot at (z', b)), T_b = Σ_p f(min(2p + b + 2, end))·E'(p) (its view
//! shifted by two rows) and f's last two entries. Nothing of w's size is stored until the lazy
//! rounds are played; w is then written at the folded size from the terms.

use std::collections::HashMap;

use p3_field::PrimeCharacteristicRing;

use super::{Ext4, Slots};

/// What one round reads of f: the slots from `offsets` at `point`, each entry i replaced by
/// entry min(i + shift, size − 1).
pub(super) struct SlotRead {
    pub point: Vec<Ext4>,
    pub offsets: Vec<usize>,
    pub shift: u32,
}

/// A slot read's key: the shift and the point it is read at.
type SlotKey = (u32, Vec<Ext4>);

/// A round's slot reads, and where each slot's values are among them.
pub(super) struct RoundPlan {
    pub reads: Vec<SlotRead>,
    /// The read of each (shift, point), and each offset's place in it.
    sets: HashMap<SlotKey, (usize, HashMap<usize, usize>)>,
    /// Per group, per slot: (read, place) of S_0, S_1, T_0, T_1 and the last two entries.
    at: Vec<Vec<[(usize, usize); 6]>>,
}

impl RoundPlan {
    /// Where the slot from `offset` at `point`, shifted by `shift`, is read: added if new.
    fn slot(&mut self, point: &[Ext4], shift: u32, offset: usize) -> (usize, usize) {
        let reads = &mut self.reads;
        let (read, places) = self.sets.entry((shift, point.to_vec())).or_insert_with(|| {
            reads.push(SlotRead { point: point.to_vec(), offsets: Vec::new(), shift });
            (reads.len() - 1, HashMap::new())
        });
        let offsets = &mut reads[*read].offsets;
        let place = *places.entry(offset).or_insert_with(|| {
            offsets.push(offset);
            offsets.len() - 1
        });
        (*read, place)
    }
}

/// Coefficients of one group's slots.
enum Terms {
    Eq { c: Vec<Ext4> },
    Successor { a: Vec<Ext4>, b: Vec<Ext4>, c: Vec<Ext4> },
}

/// Slots of one set at one point, with their terms' coefficients.
struct Group {
    /// The point's coordinates not bound yet (coordinate 0 ↔ the slot's top index bit).
    point: Vec<Ext4>,
    offsets: Vec<usize>,
    terms: Terms,
}

/// One set of slot weights to write into w ([`LazySlots::weight_sets`]).
pub(super) struct WeightSet {
    pub point: Vec<Ext4>,
    pub offsets: Vec<usize>,
    pub successor: bool,
    pub scales: Vec<Ext4>,
}

pub(super) struct LazySlots {
    groups: Vec<Group>,
    /// Variables bound since set, and the rounds covered.
    pub bound: usize,
    pub rounds: usize,
}

fn eq1(z: Ext4, r: Ext4) -> Ext4 {
    (Ext4::ONE - z) * (Ext4::ONE - r) + z * r
}

fn with_last(point: &[Ext4], last: Ext4) -> Vec<Ext4> {
    let mut p = point.to_vec();
    p.push(last);
    p
}

impl LazySlots {
    /// The terms of `sets` for the next `rounds` rounds, capped at the smallest slot's variables;
    /// None where they cannot be kept lazy (no rounds, or a slot not aligned to its size).
    pub fn new(sets: &[(Slots<'_>, &[Ext4])], rounds: usize) -> Option<Self> {
        let used = sets.iter().filter(|(s, _)| !s.offsets.is_empty());
        let rounds = used.clone().map(|(s, _)| s.point.len()).min()?.min(rounds);
        let aligned = used.clone().all(|(s, _)| s.offsets.iter().all(|&o| o % (1usize << s.point.len()) == 0));
        if rounds == 0 || !aligned {
            return None;
        }
        let groups = used
            .map(|(s, scales)| Group {
                point: s.point.to_vec(),
                offsets: s.offsets.to_vec(),
                terms: if s.successor {
                    let last: Ext4 = s.point.iter().copied().product();
                    Terms::Successor { a: scales.to_vec(), b: vec![Ext4::ZERO; scales.len()], c: scales.iter().map(|&c| c * last).collect() }
                } else {
                    Terms::Eq { c: scales.to_vec() }
                },
            })
            .collect();
        Some(Self { groups, bound: 0, rounds })
    }

    /// The slot evaluations this round combines, each slot read once: a successor set's slots
    /// that a direct set at its point reads too share those reads, and every successor slot's
    /// last two entries come in two reads (two-entry slots at the points 0 and 1).
    pub fn plan(&self) -> RoundPlan {
        let mut plan = RoundPlan { reads: Vec::new(), sets: HashMap::new(), at: Vec::with_capacity(self.groups.len()) };
        for g in &self.groups {
            let m = g.point.len();
            let inner = &g.point[..m - 1];
            let (zero, one) = (with_last(inner, Ext4::ZERO), with_last(inner, Ext4::ONE));
            let at = g
                .offsets
                .iter()
                .map(|&o| {
                    let s = [plan.slot(&zero, 0, o), plan.slot(&one, 0, o)];
                    match g.terms {
                        Terms::Eq { .. } => [s[0], s[1], s[0], s[0], s[0], s[0]],
                        Terms::Successor { .. } => {
                            let end = o + (1 << m) - 2;
                            [s[0], s[1], plan.slot(&zero, 2, o), plan.slot(&one, 2, o), plan.slot(&[Ext4::ZERO], 0, end), plan.slot(&[Ext4::ONE], 0, end)]
                        }
                    }
                })
                .collect();
            plan.at.push(at);
        }
        plan
    }

    /// h(0) and h(∞) from the values of the plan's reads, in order.
    pub fn round(&self, plan: &RoundPlan, values: &[Vec<Ext4>]) -> (Ext4, Ext4) {
        let (mut h0, mut h_inf) = (Ext4::ZERO, Ext4::ZERO);
        let two = Ext4::TWO;
        for (g, at) in self.groups.iter().zip(&plan.at) {
            let m = g.point.len();
            let zeta = g.point[m - 1];
            // E'(last): the shifted reads repeat the last entry there once.
            let last: Ext4 = g.point[..m - 1].iter().copied().product();
            for (i, at) in at.iter().enumerate() {
                let [s0, s1, t0, t1, e0, e1] = at.map(|(read, pos)| values[read][pos]);
                match &g.terms {
                    Terms::Eq { c } => {
                        h0 += c[i] * (Ext4::ONE - zeta) * s0;
                        h_inf += c[i] * (two * zeta - Ext4::ONE) * (s1 - s0);
                    }
                    Terms::Successor { a, b, c } => {
                        let (v0, v1) = (t0 - last * e1, t1 - last * e1);
                        h0 += b[i] * (Ext4::ONE - zeta) * s0 + a[i] * zeta * v0;
                        h_inf += b[i] * (two * zeta - Ext4::ONE) * (s1 - s0) + a[i] * ((Ext4::ONE - zeta) * (s1 - s0) - zeta * (v1 - v0)) + c[i] * (e1 - e0);
                    }
                }
            }
        }
        (h0, h_inf)
    }

    /// Binds the slots' last variable to `r`.
    pub fn bind(&mut self, r: Ext4) {
        for g in &mut self.groups {
            let zeta = g.point.pop().expect("a lazy round leaves every slot a variable");
            let e = eq1(zeta, r);
            match &mut g.terms {
                Terms::Eq { c } => c.iter_mut().for_each(|c| *c *= e),
                Terms::Successor { a, b, c } => {
                    for i in 0..a.len() {
                        b[i] = b[i] * e + a[i] * r * (Ext4::ONE - zeta);
                        a[i] *= (Ext4::ONE - r) * zeta;
                        c[i] *= r;
                    }
                }
            }
            g.offsets.iter_mut().for_each(|o| *o >>= 1);
        }
        self.bound += 1;
    }

    /// The terms as slot weights of the folded size: equality and successor weights, and the
    /// last entries' corrections as equality weights at the all-ones point.
    pub fn weight_sets(&self) -> Vec<WeightSet> {
        let mut sets = Vec::new();
        for g in &self.groups {
            match &g.terms {
                Terms::Eq { c } => sets.push(WeightSet { point: g.point.clone(), offsets: g.offsets.clone(), successor: false, scales: c.clone() }),
                Terms::Successor { a, b, c } => {
                    // A·(successor weight) holds A·E(last) at the last entry besides A·E(i − 1).
                    let last: Ext4 = g.point.iter().copied().product();
                    sets.push(WeightSet { point: g.point.clone(), offsets: g.offsets.clone(), successor: true, scales: a.clone() });
                    sets.push(WeightSet { point: g.point.clone(), offsets: g.offsets.clone(), successor: false, scales: b.clone() });
                    let ones = vec![Ext4::ONE; g.point.len()];
                    let corrections = c.iter().zip(a).map(|(&c, &a)| c - a * last).collect();
                    sets.push(WeightSet { point: ones, offsets: g.offsets.clone(), successor: false, scales: corrections });
                }
            }
        }
        sets
    }
}
