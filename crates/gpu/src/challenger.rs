//! `GpuChallenger<F>`: Plonky3's `DuplexChallenger<F, Poseidon2<F, 16>, 16, 8>` (F = BabyBear, the
//! default, or KoalaBear) for every observe and sample (it *is* one inside), with `grind`
//! searching on the GPU — or on all CPU cores below a difficulty where a GPU round trip costs
//! more — and returning the smallest witness.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use p3_baby_bear::BabyBear;
use p3_challenger::{CanObserve, CanSample, CanSampleBits, CanSampleUniformBits, DuplexChallenger, FieldChallenger, GrindingChallenger};
use p3_field::BasedVectorSpace;
use p3_symmetric::{Hash, MerkleCap};

use crate::error::{GpuError, Result};
use crate::grind::{cpu_grind, GpuGrinder, GrindOffer, GrindState, RATE, WIDTH};
use crate::poseidon2::Poseidon2Field;

/// Plonky3's challenger inside a [`GpuChallenger`] over `F`.
pub type InnerChallenger<F = BabyBear> = DuplexChallenger<F, <F as Poseidon2Field>::Permutation16, WIDTH, RATE>;

/// Below this many bits `grind` searches on the CPU (a GPU submission costs more than the
/// search). Measured against the host's cores (docs/benchmarks-history.md, `cargo bench --bench
/// grind`): at 12 bits our CPU grinder won, at 14 bits the GPU (13 bits not measured).
pub const DEFAULT_GPU_MIN_BITS: usize = 14;

/// Plonky3's duplex challenger over `F` (every observe and sample is [`InnerChallenger`]'s) whose
/// `grind` searches on the GPU from `gpu_min_bits` bits up (by default the context's tuning) and on
/// all CPU cores below, or when it has no GPU grinder. Clones share the grinder and the counters.
#[derive(Clone)]
pub struct GpuChallenger<F: Poseidon2Field = BabyBear> {
    inner: InnerChallenger<F>,
    grinder: Option<Arc<GpuGrinder<F>>>,
    gpu_min_bits: usize,
    /// Nanoseconds spent grinding, shared by clones (for phase breakdowns).
    pow_nanos: Arc<AtomicU64>,
    /// Grinds the GPU could not do (or did wrong) and the CPU redid, shared by clones.
    gpu_fallbacks: Arc<AtomicU64>,
    /// Shared with GPU steps that grind ahead of this challenger (see [`GrindAhead`]).
    ahead: GrindAhead<F>,
}

/// A challenger's link to GPU steps that grind ahead of it: the step computes the values the
/// transcript observes next and, in the same submission, the grind that follows them, from the
/// challenger's state published here; the challenger takes the result (an offer) at its next
/// grind if, and only if, its own state then is the one the GPU searched from. A mismatch (or no
/// offer) costs only the usual grind, never a different witness.
#[derive(Clone)]
pub struct GrindAhead<F: Poseidon2Field = BabyBear>(Arc<Mutex<AheadSlot<F>>>);

impl<F: Poseidon2Field> Default for GrindAhead<F> {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(AheadSlot::default())))
    }
}

struct AheadSlot<F: Poseidon2Field> {
    /// The GPU grinder and difficulty to grind ahead at (none: not grinding ahead).
    grind: Option<(Arc<GpuGrinder<F>>, usize)>,
    /// Set while GPU steps play transcript steps themselves (see
    /// [`GpuChallenger::track_state`]): the grinder whose Poseidon2 they use.
    tracking: Option<Arc<GpuGrinder<F>>>,
    /// The challenger's sponge state and pending inputs after its last operation.
    state: Option<([F; WIDTH], Vec<F>)>,
    /// Grinds done ahead, for the challenger's next grinds in order.
    offers: std::collections::VecDeque<GrindOffer<F>>,
    used: u64,
    /// Tracking outlives [`GpuChallenger::stop_grinding_ahead`] (see
    /// [`GpuChallenger::track_state_throughout`]).
    persistent: bool,
}

impl<F: Poseidon2Field> Default for AheadSlot<F> {
    fn default() -> Self {
        Self { grind: None, tracking: None, state: None, offers: Default::default(), used: 0, persistent: false }
    }
}

impl<F: Poseidon2Field> GrindAhead<F> {
    /// What to grind ahead with: the grinder, the difficulty and the challenger's current
    /// sponge state and pending inputs. None when not grinding ahead.
    #[allow(clippy::type_complexity)]
    pub fn target(&self) -> Option<(Arc<GpuGrinder<F>>, usize, [F; WIDTH], Vec<F>)> {
        let slot = self.0.lock().ok()?;
        let (grinder, bits) = slot.grind.clone()?;
        let (sponge, pending) = slot.state.clone()?;
        Some((grinder, bits, sponge, pending))
    }

    /// Leaves `offer` for the challenger's next grind.
    pub fn offer(&self, offer: GrindOffer<F>) {
        if let Ok(mut slot) = self.0.lock() {
            slot.offers.push_back(offer);
        }
    }

    /// Leaves `offers` for the challenger's next grinds, in order (each is taken only by a
    /// grind whose state it searched).
    pub fn queue(&self, offers: impl IntoIterator<Item = GrindOffer<F>>) {
        if let Ok(mut slot) = self.0.lock() {
            slot.offers.extend(offers);
        }
    }

    /// While tracking ([`GpuChallenger::track_state`]): the grinder, and the challenger's
    /// sponge state and pending inputs now — where GPU steps that play the transcript start.
    #[allow(clippy::type_complexity)]
    pub fn transcript_state(&self) -> Option<(Arc<GpuGrinder<F>>, [F; WIDTH], Vec<F>)> {
        let slot = self.0.lock().ok()?;
        let grinder = slot.tracking.clone()?;
        let (sponge, pending) = slot.state.clone()?;
        Some((grinder, sponge, pending))
    }

    /// Grinds that used an offer.
    pub fn used(&self) -> u64 {
        self.0.lock().map(|s| s.used).unwrap_or(0)
    }
}

impl<F: Poseidon2Field> std::fmt::Debug for GpuChallenger<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuChallenger")
            .field("sponge_state", &self.inner.sponge_state)
            .field("input_buffer", &self.inner.input_buffer)
            .field("gpu_grinder", &self.grinder.is_some())
            .field("gpu_min_bits", &self.gpu_min_bits)
            .finish()
    }
}

impl<F: Poseidon2Field> GpuChallenger<F> {
    /// A fresh challenger over `perm` (the same permutation the GPU grinder was built with).
    pub fn new(perm: F::Permutation16, grinder: Option<Arc<GpuGrinder<F>>>) -> Self {
        // The threshold and grinding ahead are the grinder's context's tuning.
        let gpu_min_bits = grinder.as_ref().map_or(DEFAULT_GPU_MIN_BITS, |g| g.poseidon2().context().tuning().gpu_min_bits);
        Self {
            inner: DuplexChallenger::new(perm),
            grinder,
            gpu_min_bits,
            pow_nanos: Arc::default(),
            gpu_fallbacks: Arc::default(),
            ahead: GrindAhead::default(),
        }
    }

    /// A challenger that continues `inner`'s transcript (its sponge state, pending inputs and
    /// outputs, over its permutation, which must be the grinder's), grinding with `grinder`.
    pub fn continuing(inner: InnerChallenger<F>, grinder: Option<Arc<GpuGrinder<F>>>) -> Self {
        let fresh = Self::new(inner.permutation.clone(), grinder);
        Self { inner, ..fresh }
    }

    /// Plonky3's challenger inside, as this one leaves it.
    pub fn into_inner(self) -> InnerChallenger<F> {
        self.inner
    }

    /// Starts grinding ahead at `bits` (see [`GrindAhead`]) and returns the link to hand to
    /// the GPU steps; None where this challenger would grind on the CPU anyway. Clones share
    /// the link; [`stop_grinding_ahead`](Self::stop_grinding_ahead) ends it.
    pub fn grind_ahead(&mut self, bits: usize) -> Option<GrindAhead<F>> {
        let grinder = self.grinder.clone().filter(|g| g.poseidon2().context().tuning().grind_ahead && bits > 0 && bits >= self.gpu_min_bits)?;
        {
            let mut slot = self.ahead.0.lock().ok()?;
            slot.grind = Some((grinder, bits));
            slot.offers.clear();
        }
        self.publish();
        Some(self.ahead.clone())
    }

    /// Starts publishing this challenger's state after every operation, for GPU steps that play
    /// transcript steps themselves and hand back what the challenger then replays (a chain of
    /// sumcheck rounds: `GpuSumcheck::play_chain`); their grinds come back as offers
    /// ([`GrindAhead::queue`]). None without a GPU grinder (its Poseidon2 instance is the
    /// GPU's sponge). [`stop_grinding_ahead`](Self::stop_grinding_ahead) ends it.
    pub fn track_state(&mut self) -> Option<GrindAhead<F>> {
        let grinder = self.grinder.clone()?;
        {
            let mut slot = self.ahead.0.lock().ok()?;
            slot.tracking = Some(grinder);
            slot.offers.clear();
        }
        self.publish();
        Some(self.ahead.clone())
    }

    /// [`track_state`](Self::track_state) until [`stop_tracking`](Self::stop_tracking): for a
    /// driver whose GPU steps play transcript steps between steps that grind ahead or track
    /// state for themselves (whose [`stop_grinding_ahead`](Self::stop_grinding_ahead) then
    /// leaves the tracking on).
    pub fn track_state_throughout(&mut self) -> Option<GrindAhead<F>> {
        let link = self.track_state()?;
        if let Ok(mut slot) = self.ahead.0.lock() {
            slot.persistent = true;
        }
        Some(link)
    }

    /// Ends grinding ahead and state tracking, but for tracking started with
    /// [`track_state_throughout`](Self::track_state_throughout); offers left are dropped.
    pub fn stop_grinding_ahead(&mut self) {
        if let Ok(mut slot) = self.ahead.0.lock() {
            let keep = slot.persistent;
            *slot = AheadSlot {
                used: slot.used,
                tracking: slot.tracking.take().filter(|_| keep),
                state: slot.state.take().filter(|_| keep),
                persistent: keep,
                ..AheadSlot::default()
            };
        }
    }

    /// Ends grinding ahead and state tracking of every kind; offers left are dropped.
    pub fn stop_tracking(&mut self) {
        if let Ok(mut slot) = self.ahead.0.lock() {
            *slot = AheadSlot { used: slot.used, ..AheadSlot::default() };
        }
    }

    /// Difficulties from which this challenger grinds on the GPU.
    pub fn gpu_min_bits(&self) -> usize {
        self.gpu_min_bits
    }

    /// Grinds that used a GPU offer made ahead of time (this challenger and its clones).
    pub fn grinds_ahead_used(&self) -> u64 {
        self.ahead.used()
    }

    /// Publishes the state after an operation, while grinding ahead.
    fn publish(&self) {
        if let Ok(mut slot) = self.ahead.0.lock() {
            if slot.grind.is_some() || slot.tracking.is_some() {
                // In place: a run that observes many values publishes after each one.
                match &mut slot.state {
                    Some((sponge, pending)) => {
                        *sponge = self.inner.sponge_state;
                        pending.clear();
                        pending.extend_from_slice(&self.inner.input_buffer);
                    }
                    None => slot.state = Some((self.inner.sponge_state, self.inner.input_buffer.clone())),
                }
            }
        }
    }

    /// Difficulties below `bits` grind on the CPU.
    pub fn with_gpu_min_bits(mut self, bits: usize) -> Self {
        self.gpu_min_bits = bits;
        self
    }

    /// Wall time spent in `grind` so far (this challenger and its clones).
    pub fn pow_time(&self) -> Duration {
        self.pow_clock().elapsed()
    }

    /// A handle on the grinding time this challenger (and its clones) accumulates, readable
    /// while the challenger itself is borrowed elsewhere.
    pub fn pow_clock(&self) -> PowClock {
        PowClock(self.pow_nanos.clone())
    }

    /// How many grinds fell back from the GPU to the CPU (this challenger and its clones).
    pub fn gpu_fallbacks(&self) -> u64 {
        self.gpu_fallbacks.load(Ordering::Relaxed)
    }

    /// The Plonky3 challenger inside, in its current state.
    pub fn inner(&self) -> &InnerChallenger<F> {
        &self.inner
    }

    /// The smallest witness for the current transcript, without absorbing it. A GPU failure,
    /// or a GPU witness that does not pass on the CPU, falls back to the CPU grinder with a
    /// warning; an error means no witness can exist (over 30 bits).
    pub fn find_witness(&self, bits: usize) -> Result<F> {
        let state = GrindState::new(&self.inner.sponge_state, &self.inner.input_buffer)?;
        // An offer searched from this very state: its witness, or the search goes on past it.
        let offer = self.ahead.0.lock().ok().and_then(|mut s| s.offers.pop_front()).filter(|o| o.state == state && o.bits == bits);
        let mut start = 0;
        if let Some(offer) = offer {
            match offer.witness {
                Some(w) if state.accepts(&self.inner.permutation, bits, w) => {
                    if let Ok(mut slot) = self.ahead.0.lock() {
                        slot.used += 1;
                    }
                    return Ok(w);
                }
                Some(w) => tracing::warn!("the GPU's grind ahead returned witness {w}, which fails the {bits}-bit check; grinding again"),
                None => start = offer.searched_end,
            }
        }
        if let Some(g) = self.grinder.as_ref().filter(|_| bits >= self.gpu_min_bits) {
            match g.grind_from(&state, bits, start) {
                Ok(w) if state.accepts(&self.inner.permutation, bits, w) => return Ok(w),
                Ok(w) => tracing::warn!("the GPU grinder returned witness {w}, which fails the {bits}-bit check; grinding on the CPU instead"),
                Err(e) => tracing::warn!("GPU grinding failed ({e}); grinding on the CPU instead"),
            }
            self.gpu_fallbacks.fetch_add(1, Ordering::Relaxed);
        }
        cpu_grind(&self.inner.permutation, &state, bits)
    }

    /// `grind` that reports an impossible difficulty as an error instead of panicking.
    pub fn try_grind(&mut self, bits: usize) -> Result<F> {
        let start = Instant::now();
        let witness = self.find_witness(bits);
        self.pow_nanos.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let witness = witness?;
        // Absorbs the witness, as `DuplexChallenger::grind` does; `find_witness` checked it.
        if !self.inner.check_witness(bits, witness) {
            return Err(GpuError::InvalidInput(format!(
                "the {bits}-bit witness {witness} passed the grinder's check but not the challenger's; the transcript is no longer usable"
            )));
        }
        self.publish();
        Ok(witness)
    }
}

/// Grinding time shared with a [`GpuChallenger`] (see [`GpuChallenger::pow_clock`]).
#[derive(Clone, Debug)]
pub struct PowClock(Arc<AtomicU64>);

impl PowClock {
    /// Wall time spent grinding so far.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }
}

impl<F: Poseidon2Field> GrindingChallenger for GpuChallenger<F> {
    type Witness = F;

    fn grind(&mut self, bits: usize) -> F {
        // The trait has no error path. Callers that can take one use `try_grind`; whir-prover
        // checks the PoW budget (at most 30 bits) before any proof starts.
        self.try_grind(bits).unwrap_or_else(|e| panic!("proof-of-work grind failed: {e}"))
    }

    fn check_witness(&mut self, bits: usize, witness: F) -> bool {
        let ok = self.inner.check_witness(bits, witness);
        self.publish();
        ok
    }
}

impl<F: Poseidon2Field> CanObserve<F> for GpuChallenger<F> {
    fn observe(&mut self, value: F) {
        self.inner.observe(value);
        self.publish();
    }
}

impl<F: Poseidon2Field, const N: usize> CanObserve<[F; N]> for GpuChallenger<F> {
    fn observe(&mut self, values: [F; N]) {
        self.inner.observe(values);
        self.publish();
    }
}

impl<F: Poseidon2Field, const N: usize> CanObserve<Hash<F, F, N>> for GpuChallenger<F> {
    fn observe(&mut self, values: Hash<F, F, N>) {
        self.inner.observe(values);
        self.publish();
    }
}

impl<F: Poseidon2Field, const N: usize> CanObserve<MerkleCap<F, [F; N]>> for GpuChallenger<F> {
    fn observe(&mut self, cap: MerkleCap<F, [F; N]>) {
        self.inner.observe(cap);
        self.publish();
    }
}

impl<F: Poseidon2Field, const N: usize> CanObserve<&MerkleCap<F, [F; N]>> for GpuChallenger<F> {
    fn observe(&mut self, cap: &MerkleCap<F, [F; N]>) {
        self.inner.observe(cap);
        self.publish();
    }
}

impl<F: Poseidon2Field> CanObserve<Vec<Vec<F>>> for GpuChallenger<F> {
    fn observe(&mut self, values: Vec<Vec<F>>) {
        self.inner.observe(values);
        self.publish();
    }
}

impl<F: Poseidon2Field, EF: BasedVectorSpace<F>> CanSample<EF> for GpuChallenger<F>
where
    InnerChallenger<F>: CanSample<EF>,
{
    fn sample(&mut self) -> EF {
        let v = self.inner.sample();
        self.publish();
        v
    }
}

impl<F: Poseidon2Field> CanSampleBits<usize> for GpuChallenger<F> {
    fn sample_bits(&mut self, bits: usize) -> usize {
        let v = self.inner.sample_bits(bits);
        self.publish();
        v
    }
}

impl<F: Poseidon2Field> CanSampleUniformBits<F> for GpuChallenger<F>
where
    InnerChallenger<F>: CanSampleUniformBits<F>,
{
    fn sample_uniform_bits<const RESAMPLE: bool>(&mut self, bits: usize) -> Result<usize, p3_challenger::ResamplingError> {
        let v = self.inner.sample_uniform_bits::<RESAMPLE>(bits);
        self.publish();
        v
    }
}

impl<F: Poseidon2Field> FieldChallenger<F> for GpuChallenger<F> where InnerChallenger<F>: CanSampleUniformBits<F> {}
