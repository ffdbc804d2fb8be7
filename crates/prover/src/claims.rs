//! The claim phase of p3-whir's PCS `open` over p3-sumcheck's layouts (suffix, or prefix held at
//! bit-reversed indices) of any number of tables, played where the stacked polynomial lies: the commitment's out-of-domain claims, then
//! one claim per opening batch (its columns and their successor views at one point, drawn from
//! the transcript or given), and the initial weights they make once the batching challenge α is
//! drawn. The transcript is the layout's, played by its verifier-side registry
//! (`p3_sumcheck::layout::Verifier`) once it is given the values; each point drawn is read off a
//! trial run on a copy of the challenger, and the values are computed by the sumcheck steps.

use p3_challenger::{CanObserve, CanSample, CanSampleBits, FieldChallenger, GrindingChallenger};
use p3_multilinear_util::point::Point;
use p3_sumcheck::constraints::{Constraint, Statements};
use p3_sumcheck::layout::{plan_stacked_layout, Layout, LayoutStrategy, TablePlacement, Verifier};
use p3_sumcheck::strategy::VariableOrder;
use p3_sumcheck::{OpeningEvals, OpeningProtocol, OpeningRequest, TableShape};

use crate::error::ProverError;
use crate::sumcheck::{powers_from, SlotSet, SumcheckState};
use crate::{ProverField, ProverLayout, WhirExtension, EF};

/// p3-sumcheck's verifier-side claim registry, which the prover drives.
pub(crate) type ClaimRegistry<F, E> = Verifier<F, E>;

/// Where the tables of a committed witness lie in the stacked polynomial (p3-sumcheck's planner:
/// largest tables first, one slot of 2^arity entries per column, selectors before the local
/// variables).
#[derive(Clone, Debug)]
pub struct Stacking {
    shapes: Vec<TableShape>,
    placements: Vec<TablePlacement>,
    num_variables: usize,
    strategy: LayoutStrategy,
}

impl Stacking {
    /// The stacking of tables of `shapes` (after the witness's padding to the first fold), in
    /// the suffix layout.
    pub fn new(shapes: Vec<TableShape>) -> Self {
        Self::for_layout::<p3_baby_bear::BabyBear, EF, ProverLayout>(shapes)
    }

    /// The stacking of tables of `shapes` in layout `L`'s strategy. Slots are the planner's
    /// (the suffix layout's offsets): the prefix layout's stacked polynomial, whose columns are
    /// interleaved behind reversed selectors, is held at bit-reversed indices, where each
    /// column is again one slot, its entries bit-reversed within it.
    pub fn for_layout<F: ProverField, E: WhirExtension<F>, L: Layout<F, E>>(shapes: Vec<TableShape>) -> Self {
        let (num_variables, placements) = plan_stacked_layout(&shapes);
        Self { shapes, placements, num_variables, strategy: L::strategy() }
    }

    /// The variable order the layout's rounds bind.
    pub fn variable_order(&self) -> VariableOrder {
        self.strategy.variable_order
    }

    /// The tables' shapes, padded to the first fold.
    pub fn shapes(&self) -> &[TableShape] {
        &self.shapes
    }

    /// Variables of the stacked polynomial.
    pub fn num_variables(&self) -> usize {
        self.num_variables
    }

    /// One table of one column filling the whole polynomial (the single-polynomial proof).
    pub(crate) fn is_one_column(&self) -> bool {
        matches!(self.shapes.as_slice(), [s] if s.width() == 1 && s.num_variables() == self.num_variables)
    }

    /// The first entries of `columns`' slots in table `table`.
    pub(crate) fn offsets(&self, table: usize, columns: &[usize]) -> Result<Vec<usize>, ProverError> {
        let shape =
            self.shapes.get(table).ok_or_else(|| ProverError::Input(format!("the protocol opens table {table}; the witness has {}", self.shapes.len())))?;
        let placement = self.placements.iter().find(|p| p.idx() == table).expect("the planner places every table");
        columns
            .iter()
            .map(|&c| {
                let selector = placement
                    .selectors()
                    .get(c)
                    .ok_or_else(|| ProverError::Input(format!("the protocol opens column {c} of table {table}, which has {} columns", shape.width())))?;
                Ok(selector.index() << shape.num_variables())
            })
            .collect()
    }
}

/// One opening batch as recorded: its point and its columns' slots, direct and successor.
struct BatchClaim<E> {
    table: usize,
    point: Point<E>,
    current: Vec<usize>,
    next: Vec<usize>,
}

/// The claims of one `open`, in the registry and as slots of the stacked polynomial.
pub(crate) struct Claims<F: ProverField, E: WhirExtension<F>> {
    pub registry: ClaimRegistry<F, E>,
    stacking: Stacking,
    batches: Vec<BatchClaim<E>>,
    /// The commitment's out-of-domain points (over every stacked variable).
    virtual_points: Vec<Point<E>>,
    /// Their answers, for the proof.
    pub ood_answers: Vec<E>,
    /// Each batch's values, for the proof.
    pub evals: Vec<OpeningEvals<E>>,
}

/// Where each opening batch's point comes from.
#[derive(Clone, Copy)]
pub enum Points<'a, E = EF> {
    /// Drawn from the transcript (`MultilinearPcs::open`).
    Drawn,
    /// Given by the caller, one per batch in order (`PrescribedPointPcs::open_at`).
    Given(&'a [Point<E>]),
}

/// Checks `protocol` against the committed `stacking` and the configuration's claim budget, and
/// `points` against it: every problem is an error naming it (where the layout would panic).
pub(crate) fn check_protocol<F: ProverField, E: WhirExtension<F>>(
    stacking: &Stacking,
    protocol: &OpeningProtocol,
    points: Points<'_, E>,
) -> Result<(), ProverError> {
    if protocol.table_shapes() != stacking.shapes() {
        return Err(ProverError::Input(format!(
            "the opening protocol's tables {:?} are not the committed witness's {:?} (as (variables, columns), after padding to the first fold: use `OpeningProtocol::pad_to_min_num_variables`)",
            shape_pairs(&protocol.table_shapes()),
            shape_pairs(stacking.shapes())
        )));
    }
    for (i, (table, batch)) in protocol.iter_openings().enumerate() {
        if batch.is_empty() {
            return Err(ProverError::Input(format!("opening batch {i} (table {table}) names no column")));
        }
        stacking.offsets(table, batch.current())?;
        stacking.offsets(table, batch.next())?;
        if let Points::Given(points) = points {
            let k = stacking.shapes()[table].num_variables();
            match points.get(i) {
                Some(p) if p.num_variables() == k => {}
                Some(p) => {
                    return Err(ProverError::Input(format!(
                        "the point of opening batch {i} has {} coordinates; table {table} has {k} variables",
                        p.num_variables()
                    )))
                }
                None => return Err(ProverError::Input(format!("{} points given for {} opening batches", points.len(), protocol.num_openings()))),
            }
        }
    }
    if let Points::Given(points) = points {
        if points.len() != protocol.num_openings() {
            return Err(ProverError::Input(format!("{} points given for {} opening batches", points.len(), protocol.num_openings())));
        }
    }
    Ok(())
}

/// Every batch's slots at its prescribed point, in one evaluation: per batch its direct
/// columns' values, then its successor views'.
fn prescribed_values<F: ProverField, E: WhirExtension<F>, S: SumcheckState<F, E>>(
    sumcheck: &mut S,
    stacking: &Stacking,
    protocol: &OpeningProtocol,
    given: &[Point<E>],
) -> Result<Vec<Vec<E>>, ProverError> {
    let mut sets = Vec::with_capacity(2 * given.len());
    for ((table, batch), point) in protocol.iter_openings().zip(given.iter()) {
        sets.push(SlotSet { point: point.clone(), offsets: stacking.offsets(table, batch.current())?, successor: false });
        sets.push(SlotSet { point: point.clone(), offsets: stacking.offsets(table, batch.next())?, successor: true });
    }
    let values = sumcheck.eval_slots(&sets)?;
    if values.len() != sets.len() {
        return Err(ProverError::Input("slot evaluations of the wrong count".into()));
    }
    Ok(values)
}

/// The point a batch's claim draws, read off a trial run on copies of `registry` (as it is
/// before the first batch) and of the challenger's transcript.
fn trial_point<F: ProverField, E: WhirExtension<F>, C: crate::WhirChallenger<F>>(
    registry: &ClaimRegistry<F, E>,
    table: usize,
    batch: &OpeningRequest,
    challenger: &C,
) -> Result<E, ProverError> {
    let mut trial = SampleSpy { inner: challenger.trial(), samples: Vec::new() };
    let zeros = OpeningEvals::new(vec![E::ZERO; batch.current().len()], vec![E::ZERO; batch.next().len()]);
    registry.clone().add_claim(table, batch, &zeros, &mut trial).map_err(|e| ProverError::Params(e.to_string()))?;
    E::from_basis_coefficients_slice(&trial.samples).ok_or_else(|| {
        ProverError::Params(format!("a claim-phase step drew {} base elements (one extension element of {} expected)", trial.samples.len(), E::DIMENSION))
    })
}

fn shape_pairs(shapes: &[TableShape]) -> Vec<(usize, usize)> {
    shapes.iter().map(|s| (s.num_variables(), s.width())).collect()
}

/// The claim phase: `ood_samples` out-of-domain claims of the stacked f, then each batch of
/// `protocol` (checked by [`check_protocol`]) at its point, each value computed by `sumcheck`.
pub(crate) fn play_claims<F: ProverField, E: WhirExtension<F>, S: SumcheckState<F, E>, C: crate::WhirChallenger<F>>(
    sumcheck: &mut S,
    stacking: &Stacking,
    protocol: &OpeningProtocol,
    points: Points<'_, E>,
    ood_samples: usize,
    challenger: &mut C,
) -> Result<Claims<F, E>, ProverError> {
    let begun = std::time::Instant::now();
    let mut registry = ClaimRegistry::new(stacking.shapes(), stacking.strategy);
    let (mut virtual_points, mut ood_answers) = (Vec::with_capacity(ood_samples), Vec::with_capacity(ood_samples));
    for _ in 0..ood_samples {
        let point = new_virtual_point(&registry, challenger)?;
        let eval = sumcheck.eval(&point)?;
        registry.add_virtual_eval(eval, challenger);
        virtual_points.push(point);
        ood_answers.push(eval);
    }
    // Trials draw each batch's point on a copy of the registry as it is before the first batch:
    // the point depends on the transcript alone, and a copy of the registry with every batch
    // recorded before costs more with each batch (BENCHMARKS.md).
    let trial_registry = registry.clone();
    let mut batches = Vec::with_capacity(protocol.num_openings());
    let mut evals = Vec::with_capacity(protocol.num_openings());
    // Where the claim phase's time goes (debug log): drawing points, evaluating, the transcript.
    let (mut draw, mut evaluate, mut bind) = (std::time::Duration::ZERO, std::time::Duration::ZERO, std::time::Duration::ZERO);
    let started = std::time::Instant::now();
    // Prescribed points are known before any value: every batch's slots in one evaluation.
    let mut given_values = match points {
        Points::Given(given) if !stacking.is_one_column() => Some(prescribed_values(sumcheck, stacking, protocol, given)?.into_iter()),
        _ => None,
    };
    evaluate += started.elapsed();
    for (i, (table, batch)) in protocol.iter_openings().enumerate() {
        let at = std::time::Instant::now();
        let k = stacking.shapes()[table].num_variables();
        let point = match points {
            Points::Given(points) => points[i].clone(),
            // A trial run on a copy draws the point; the real run below draws it again.
            Points::Drawn => Point::expand_from_univariate(trial_point(&trial_registry, table, batch, challenger)?, k),
        };
        draw += at.elapsed();
        let at = std::time::Instant::now();
        let (current, next) = (stacking.offsets(table, batch.current())?, stacking.offsets(table, batch.next())?);
        let (now, after) = if let Some(values) = given_values.as_mut() {
            (values.next().unwrap_or_default(), values.next().unwrap_or_default())
        } else if stacking.is_one_column() && next.is_empty() {
            // The polynomial itself at the point: the plain evaluation.
            (vec![sumcheck.eval(&point)?], Vec::new())
        } else {
            let sets = [
                SlotSet { point: point.clone(), offsets: current.clone(), successor: false },
                SlotSet { point: point.clone(), offsets: next.clone(), successor: true },
            ];
            let [now, after]: [Vec<E>; 2] =
                sumcheck.eval_slots(&sets)?.try_into().map_err(|_| ProverError::Input("slot evaluations of the wrong count".into()))?;
            (now, after)
        };
        let values = OpeningEvals::new(now, after);
        evaluate += at.elapsed();
        let at = std::time::Instant::now();
        match points {
            Points::Drawn => registry.add_claim(table, batch, &values, challenger),
            Points::Given(_) => registry.add_claim_at(table, batch, &point, &values, challenger),
        }
        .map_err(|e| ProverError::Params(e.to_string()))?;
        bind += at.elapsed();
        batches.push(BatchClaim { table, point, current, next });
        evals.push(values);
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    tracing::debug!(
        batches = batches.len(),
        ood_ms = ms(started - begun),
        ms = ms(started.elapsed()),
        draw_ms = ms(draw),
        evaluate_ms = ms(evaluate),
        bind_ms = ms(bind),
        "claim phase's openings"
    );
    Ok(Claims { registry, stacking: stacking.clone(), batches, virtual_points, ood_answers, evals })
}

impl<F: ProverField, E: WhirExtension<F>> Claims<F, E> {
    /// w = Σ_i α^i·(claim i's weights), in the registry's order: tables in placement order, each
    /// table's batches in the order recorded, a batch's direct columns then its successor views;
    /// the out-of-domain claims after them. With `lazy_rounds`, the weights are formed where the
    /// next rounds use them instead of stored (where the backend can): a single-column
    /// polynomial's as equality weights, a stacked table's as slot weights.
    pub fn add_initial_weights<S: SumcheckState<F, E>>(&self, sumcheck: &mut S, alpha: E, lazy_rounds: Option<usize>) -> Result<(), ProverError> {
        if self.stacking.is_one_column() && self.batches.iter().all(|b| b.next.is_empty()) {
            // Every claim an equality of f itself: the registry's own batched constraint.
            let (points, scales) = eq_claims(&self.registry.constraint(alpha))?;
            return match lazy_rounds {
                Some(rounds) => sumcheck.set_lazy_eq_weights(&points, &scales, rounds),
                None => sumcheck.add_eq_weights(&points, &scales),
            };
        }
        let mut sets = Vec::with_capacity(2 * self.batches.len());
        let (mut used, mut sum) = (0, E::ZERO);
        for placement in placements_in_order(&self.stacking) {
            for (batch, evals) in self.batches.iter().zip(&self.evals).filter(|(b, _)| b.table == placement) {
                for (offsets, successor, found) in [(&batch.current, false, evals.current()), (&batch.next, true, evals.next())] {
                    let scales = powers_from(alpha, used, offsets.len());
                    used += offsets.len();
                    sum += found.iter().zip(&scales).map(|(&v, &s)| v * s).sum::<E>();
                    sets.push((SlotSet { point: batch.point.clone(), offsets: offsets.clone(), successor }, scales));
                }
            }
        }
        let virtual_scales = powers_from(alpha, used, self.virtual_points.len());
        sum += self.ood_answers.iter().zip(&virtual_scales).map(|(&v, &s)| v * s).sum::<E>();
        // The weights' order is checked against the registry's: the claimed sums agree.
        if sum != self.registry.sum(alpha) {
            return Err(ProverError::Params("the claims' weights do not follow the layout's batching order".into()));
        }
        match lazy_rounds {
            // The out-of-domain claims as slots too: the whole table, one point each.
            Some(rounds) => {
                for (point, &scale) in self.virtual_points.iter().zip(&virtual_scales) {
                    sets.push((SlotSet { point: point.clone(), offsets: vec![0], successor: false }, vec![scale]));
                }
                sumcheck.set_lazy_slot_weights(&sets, rounds)
            }
            None => {
                sumcheck.add_slot_weights(&sets)?;
                sumcheck.add_eq_weights(&self.virtual_points, &virtual_scales)
            }
        }
    }
}

/// Table indices in the planner's placement order.
fn placements_in_order(stacking: &Stacking) -> impl Iterator<Item = usize> + '_ {
    stacking.placements.iter().map(TablePlacement::idx)
}

/// The equality claims of a batched constraint and their coefficients (α powers in order).
/// Equality claims: their points and their coefficients.
pub(crate) type EqClaims<E> = (Vec<Point<E>>, Vec<E>);

pub(crate) fn eq_claims<F: ProverField, E: WhirExtension<F>>(constraint: &Constraint<F, E>) -> Result<EqClaims<E>, ProverError> {
    let (mut points, mut scales) = (Vec::new(), Vec::new());
    let mut shift = 0;
    for statement in constraint.statements() {
        let Statements::Eq(eq) = statement else {
            return Err(ProverError::Input("the claims hold a statement kind other than equality; the driver batches equality claims only".into()));
        };
        points.extend(eq.iter().map(|(p, _)| p.clone()));
        scales.extend(constraint.challenge_powers(shift).take(eq.len()));
        shift += eq.len();
    }
    Ok((points, scales))
}

/// The claim points in a registry's batched constraint, in its order.
fn claim_points<F: ProverField, E: WhirExtension<F>>(registry: &ClaimRegistry<F, E>) -> Vec<Point<E>> {
    registry
        .constraint(E::ONE)
        .statements()
        .iter()
        .flat_map(|s| match s {
            Statements::Eq(eq) => eq.iter().map(|(p, _)| p.clone()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The point the next out-of-domain claim will sample: the step is played on copies of the
/// registry and the challenger (with any value), and the point it added is read back.
fn new_virtual_point<F: ProverField, E: WhirExtension<F>, C: crate::WhirChallenger<F>>(
    registry: &ClaimRegistry<F, E>,
    challenger: &C,
) -> Result<Point<E>, ProverError> {
    let before = claim_points(registry);
    let (mut trial, mut ch) = (registry.clone(), challenger.trial());
    trial.add_virtual_eval(E::ZERO, &mut ch);
    let after = claim_points(&trial);
    let at = (0..after.len()).find(|&i| before.get(i) != Some(&after[i]));
    match at {
        Some(i) if after.len() == before.len() + 1 => Ok(after[i].clone()),
        _ => Err(ProverError::Params("an out-of-domain claim did not add exactly one equality claim".into())),
    }
}

/// A copy of the transcript that keeps what it samples (a trial run's point is read off it).
#[derive(Clone)]
struct SampleSpy<F: ProverField, C> {
    inner: C,
    samples: Vec<F>,
}

impl<F: ProverField, C: FieldChallenger<F>> CanObserve<F> for SampleSpy<F, C> {
    fn observe(&mut self, value: F) {
        self.inner.observe(value);
    }
}

impl<F: ProverField, C: FieldChallenger<F>> CanSample<F> for SampleSpy<F, C> {
    fn sample(&mut self) -> F {
        let v = self.inner.sample();
        self.samples.push(v);
        v
    }
}

impl<F: ProverField, C: FieldChallenger<F>> CanSampleBits<usize> for SampleSpy<F, C> {
    fn sample_bits(&mut self, bits: usize) -> usize {
        self.inner.sample_bits(bits)
    }
}

impl<F: ProverField, C: FieldChallenger<F> + Sync> FieldChallenger<F> for SampleSpy<F, C> {}

impl<F: ProverField, C: FieldChallenger<F> + GrindingChallenger<Witness = F>> GrindingChallenger for SampleSpy<F, C> {
    type Witness = F;

    fn grind(&mut self, bits: usize) -> F {
        self.inner.grind(bits)
    }
}
